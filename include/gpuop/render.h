/*
 * render.h - a parsed GpuPolicy expanded into the operand DaemonSets.
 *
 * Rendering is a pure function of the policy: the same policy gives the same
 * objects, key order included, so the output can be golden-tested, sent by
 * server-side apply (only the fields gpuop owns), and printed by
 * `gpuop render` for review. Owner references are added only when the
 * policy has a uid (it came from the cluster, not from a file).
 */
#ifndef GPUOP_RENDER_H
#define GPUOP_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "gpuop/names.h"
#include "gpuop/ospool.h"
#include "gpuop/policy.h"

/* Longest DaemonSet name and image reference rendered. */
#define GPUOP_RENDER_NAME_MAX  128
#define GPUOP_RENDER_IMAGE_MAX 600

/* True when operand's DaemonSets are per OS pool (SPEC 4b): the driver,
 * its image a tag from repository/image/version (not a full reference,
 * not a digest). */
bool gpuop_render_per_os(const struct gpuop_policy *p, int operand);

/* True when some of operand's per-OS DaemonSets are per OS pool and
 * kernel: the driver with spec.driver.usePrecompiled or a driver pool's
 * usePrecompiled (ospool.h). */
bool gpuop_render_by_kernel(const struct gpuop_policy *p, int operand);

/* True when operand's DaemonSet for pool (borrowed, a node's: its dpool
 * as the node's label says) is per OS pool and kernel: the driver, and
 * the driver pool pool->dpool names (else spec.driver's) precompiled. */
bool gpuop_render_pool_by_kernel(const struct gpuop_policy *p, int operand,
                                 const struct gpuop_ospool *pool);

/* gpuop_render_pool_by_kernel of the driver, policy a struct gpuop_policy
 * (borrowed): gpuop_ospool_collect_by's by_kernel. */
bool gpuop_render_kernel_wanted(const struct gpuop_ospool *pool, const void *policy);

/* *out: pool with its driver pool (dpool) kept when it names one of p's
 * spec.driver.pools or draining pools, else "" (the default pool:
 * spec.driver), and its kernel kept only when that driver pool is
 * precompiled. A draining pool's DaemonSet is named so, and never
 * rendered to be applied (its spec is gone: it is kept as it runs). */
void gpuop_render_pool_norm(const struct gpuop_policy *p, const struct gpuop_ospool *pool,
                            struct gpuop_ospool *out);

/* The pools of set (n, as gpuop_ospool_collect gives them) made p's:
 * each normalised (gpuop_render_pool_norm) and the duplicates that leaves
 * dropped, in place, in their order. Returns how many are left. */
size_t gpuop_render_pools(const struct gpuop_policy *p, struct gpuop_ospool *set, size_t n);

/* The DaemonSet name of operand for pool (NULL: none): "<ds_name>-<tag>"
 * when the operand is per OS, "<ds_name>-<sanitized kernel>-<tag>" (or
 * cut with a hash, gpuop_ospool_ds_name) when it is per kernel and the
 * pool has one, each with "-<dpool>" after ds_name when the pool is one
 * of p's driver pools, else the table's; snprintf's return. */
int gpuop_render_ds_name(const struct gpuop_policy *p, int operand, const struct gpuop_ospool *pool,
                         char *buf, size_t size);

/* The DaemonSet of operand index `operand` for OS pool `pool` in namespace
 * ns: new reference, NULL on out-of-memory or a bad operand index. p, pool
 * and ns are borrowed. A per-OS operand's DaemonSet for a pool is named
 * "<ds_name>-<tag>", its image tag gets "-<tag>", it selects the pool's OS
 * labels and carries the pool label; per kernel (a precompiled driver and
 * a pool with a kernel) the name and tag get the kernel too
 * ("-<kernel>-<tag>"), and the kernel label joins the nodeSelector and
 * the pool labels; pool is ignored for other operands. A pool in one of
 * p's driver pools (spec.driver.pools) renders the pool's driver spec
 * (gpuop_policy_pool_view), selects and carries GPUOP_LABEL_DRIVER_POOL;
 * with driver pools, the default's keeps off their nodes (node affinity
 * NotIn their names).
 * Rendered whether or not the operand is enabled. */
json_t *gpuop_render_daemonset_os(const struct gpuop_policy *p, int operand,
                                  const struct gpuop_ospool *pool, const char *ns);

/* The driver's install configuration digest (policy/digest.c) of the
 * container named container in pod_spec (borrowed): what NVIDIA's
 * DRIVER_CONFIG_DIGEST covers; 0 when there is no such container. */
uint32_t gpuop_render_driver_digest(json_t *pod_spec, const char *container);
/* Adds env GPUOP_DRIVER_DIGEST_ENV with that digest to the container of
 * the DaemonSet ds (modified in place) and the label
 * GPUOP_LABEL_DRIVER_DIGEST to it and its pod template. Returns 0,
 * GPUOP_EINVAL (no container) or GPUOP_ENOMEM. */
int gpuop_render_driver_digest_set(json_t *ds, const char *container);

/* gpuop_render_daemonset_os without a pool: the table's name and the image
 * as the policy has it (for a per-OS operand an image without the OS tag,
 * which only a pool's DaemonSet completes). */
json_t *gpuop_render_daemonset(const struct gpuop_policy *p, int operand, const char *ns);

/* New array of the DaemonSets of the enabled operands, in operand-table
 * order; a per-OS operand gives one per pool of pools (npools, borrowed,
 * in their order; per kernel, one per pool with a kernel), none when there
 * is none. NULL on out-of-memory. */
json_t *gpuop_render_all(const struct gpuop_policy *p, const char *ns,
                         const struct gpuop_ospool *pools, size_t npools);

/* Objects beside the DaemonSets that the operands need: the nvidia,
 * nvidia-cdi and nvidia-legacy RuntimeClasses, the default MIG config ConfigMap, the DCGM
 * exporter's Service, the DRA driver's DeviceClasses. A fixed table; each is wanted or not by the
 * policy, and the controller applies the wanted ones and deletes the others. */
struct gpuop_render_extra {
    const char *kind;          /* "RuntimeClass" */
    const char *group_version; /* "node.k8s.io/v1" */
    const char *resource;      /* "runtimeclasses" */
    bool namespaced;           /* in the operands' namespace, else cluster-scoped */
    const char *name;          /* its default name; the rendered object's metadata.name is
                                  the one applied (the RuntimeClass's is the policy's
                                  spec.operator.runtimeClass) */
    const char *crd;           /* the API of its kind when a cluster may lack it: the CRD
                                  ("servicemonitors.monitoring.coreos.com") or a built-in
                                  group version ("resource.k8s.io/v1 DeviceClasses"), else
                                  NULL: the API server's 404 then means "not served",
                                  said by a condition, not an apply failure */
};
#define GPUOP_RENDER_EXTRA_MAX 16

int gpuop_render_extra_count(void);
/* Row i of the table (borrowed, static), NULL out of range. */
const struct gpuop_render_extra *gpuop_render_extra_get(int i);
/* *out: new object of extra i for policy p in namespace ns, or NULL when
 * the policy does not want it. Returns 0, GPUOP_ENOMEM, or GPUOP_EINVAL
 * for a bad index. p and ns are borrowed. */
int gpuop_render_extra(const struct gpuop_policy *p, const char *ns, int i, json_t **out);
/* True when p holds extra i as it is, neither applied nor deleted: the
 * DRA driver's DeviceClasses while a problem in spec.draDriver holds it
 * (gpuop_operand_spec.hold_absent). */
bool gpuop_render_extra_held(const struct gpuop_policy *p, int i);
/* New array of the extras p wants, in table order; NULL on out-of-memory. */
json_t *gpuop_render_extras(const struct gpuop_policy *p, const char *ns);

#endif
