/*
 * ospool.h - OS pools of GPU nodes, for the driver's per-OS image (SPEC 4b).
 *
 * The NVIDIA driver image is built per OS: its tag is
 * "<version>-<ID><VERSION_ID>" from the node's NFD labels
 * feature.node.kubernetes.io/system-os_release.ID and .VERSION_ID, with
 * only the major version for rhel, rocky and ol (the GPU Operator v26.7.0's
 * rule: NVIDIA/gpu-operator internal/state/nodepool.go getOSTag, and
 * controllers/state_manager.go getGPUNodeOSInfo). A pool is the set of GPU
 * nodes with one OS tag; its DaemonSet selects them as NVIDIA's
 * NVIDIADriver pools do (getNodePools): ID and VERSION_ID exactly, or ID
 * and VERSION_ID.major where the tag keeps only the major version, so
 * RHEL 9.4 and 9.6 nodes are the one pool rhel9.
 *
 * Precompiled drivers (spec.driver.usePrecompiled) split each OS pool by
 * kernel, as NVIDIA's getNodePools does with UsePrecompiledDrivers: the
 * node label feature.node.kubernetes.io/kernel-version.full joins the
 * pool's selector, the image tag is "<version>-<kernel>-<tag>"
 * (api/nvidia/v1alpha1/nvidiadriver_types.go GetPrecompiledImagePath;
 * controllers/object_controls.go resolveDriverTag for the ClusterPolicy),
 * and the DaemonSet's name adds the kernel sanitized as NVIDIA's
 * getSanitizedKernelVersion does (gpuop_ospool_ds_name). A pool always
 * carries its node's kernel (kernel, "" when the node has no label); only
 * a collect by kernel tells pools apart by it.
 *
 * Driver pools (spec.driver.pools) split each pool again by the node's
 * label gpuop.dev/driver-pool (dpool: its value, "" without it), the
 * GPU Operator's NVIDIADriver pools split by nvidia.com/gpu-operator.
 * driver.owner (internal/state/nodepool.go getNodePools adds the owner
 * label to each pool's selector). A pool always carries the label's value
 * as the node has it; which values name a pool is the policy's to say
 * (render.h: a value naming none is the default pool, ""), and the
 * DaemonSet name adds the pool's name ("<prefix>-<dpool>-...").
 *
 * Pure: no I/O; model layer.
 */
#ifndef GPUOP_OSPOOL_H
#define GPUOP_OSPOOL_H

#include <stdbool.h>
#include <stddef.h>

#include "gpuop/model.h"

/* Most OS pools handled (distinct OS tags among GPU nodes, or OS tags and
 * kernels with precompiled drivers); more are left without a driver
 * DaemonSet and say so in the log. */
#define GPUOP_OSPOOL_MAX 32
/* Longest OS tag: "gpuop-driver-<tag>" stays a DNS label (63), and the
 * image tag "<version>-<tag>" stays within 128. */
#define GPUOP_OSPOOL_TAG_MAX 40
/* Longest kernel: a label value's limit. */
#define GPUOP_OSPOOL_KERNEL_MAX 63
/* Longest DaemonSet name a pool makes: a DNS label, as NVIDIA's
 * getDriverAppName keeps its names (it is also a label value: the
 * rollback label names the pool's DaemonSet). */
#define GPUOP_OSPOOL_NAME_MAX 63
/* Longest driver pool label value kept: a label value's limit. */
#define GPUOP_OSPOOL_DPOOL_MAX 63

struct gpuop_ospool {
    char tag[GPUOP_OSPOOL_TAG_MAX + 1];       /* "ubuntu24.04", "rhel9" */
    char id[GPUOP_OSPOOL_TAG_MAX + 1];        /* the ID label's value: "rhel" */
    char version[GPUOP_OSPOOL_TAG_MAX + 1];   /* the value selected on: VERSION_ID
                                                 ("24.04"), or the major version ("9") */
    bool major_only;                          /* select on VERSION_ID.major (rhel, rocky, ol) */
    char kernel[GPUOP_OSPOOL_KERNEL_MAX + 1]; /* kernel-version.full, "" without the label */
    char dpool[GPUOP_OSPOOL_DPOOL_MAX + 1];   /* gpuop.dev/driver-pool, "" without it */
};

/* The pool of an OS: NVIDIA's tag rule on id and version_id (borrowed).
 * Returns 0, or GPUOP_EINVAL when either is empty or the tag would not make
 * a DaemonSet name (a character outside [a-z0-9.-], too long). */
int gpuop_ospool_make(const char *id, const char *version_id, struct gpuop_ospool *out);

/* The pool of node n. Returns 0, or GPUOP_ENOTFOUND with *missing the
 * GPUOP_OS_HAS_* bits of the labels it lacks (VERSION_ID.major counts only
 * for rhel, rocky and ol), or GPUOP_EINVAL when the values make no tag. */
int gpuop_ospool_of_node(const struct gpuop_node *n, struct gpuop_ospool *out, unsigned *missing);

/* What gpuop_ospool_of_node made of the last node's OS labels, whose
 * strings it borrows: a memo lives only as long as the nodes it saw (one
 * loop over them). A loop over many nodes of few OSes then compares three
 * labels a node instead of making its pool again. Zeroed before use. */
struct gpuop_ospool_memo {
    bool valid;
    const char *os[GPUOP_OS_FIELDS];
    int rc;
    unsigned missing;
    struct gpuop_ospool pool;
};

/* gpuop_ospool_of_node, through memo m; *hit says whether n's labels were
 * the last node's (hit may be NULL). */
int gpuop_ospool_of_node_memo(const struct gpuop_node *n, struct gpuop_ospool_memo *m,
                              struct gpuop_ospool *out, unsigned *missing, bool *hit);

/* "<label>[, <label> and <label>]" of the missing bits, into buf. */
int gpuop_ospool_missing_text(unsigned missing, char *buf, size_t size);

/* A pool named on the command line: "ubuntu24.04", "rhel9.4" (ID up to
 * the first digit) or "ID=VERSION_ID", each optionally followed by
 * "/KERNEL" (a precompiled driver's kernel). Returns 0 or GPUOP_EINVAL. */
int gpuop_ospool_parse(const char *s, struct gpuop_ospool *out);

/* Adds p to set (n entries, room for max), kept sorted by tag, kernel and
 * driver pool, without duplicates. Returns 1 added, 0 already there, GPUOP_ETOOBIG full. */
int gpuop_ospool_add(struct gpuop_ospool *set, size_t *n, size_t max, const struct gpuop_ospool *p);

/* The pools of the GPU nodes among nodes (borrowed), sorted by tag (and
 * kernel), into set (room for max); returns how many. by_kernel: one pool
 * per OS tag and kernel, nodes without the kernel label skipped; else the
 * pools' kernel is "". *dropped (may be NULL): the GPU nodes whose pool
 * found no room. Nodes without a pool are skipped. */
size_t gpuop_ospool_collect(const struct gpuop_node *const *nodes, size_t nnodes, bool by_kernel,
                            struct gpuop_ospool *set, size_t max, size_t *dropped);

/* Whether a node's pool p (borrowed) is split by kernel; arg is the
 * caller's (borrowed). */
typedef bool gpuop_ospool_kernel_fn(const struct gpuop_ospool *p, const void *arg);

/* gpuop_ospool_collect with by_kernel asked of each node's pool (its
 * driver pool label among what it is given): precompiled driver pools
 * beside compiled ones. */
size_t gpuop_ospool_collect_by(const struct gpuop_node *const *nodes, size_t nnodes,
                               gpuop_ospool_kernel_fn *by_kernel, const void *arg,
                               struct gpuop_ospool *set, size_t max, size_t *dropped);

/* Kernel k as NVIDIA's getSanitizedKernelVersion makes it fit a name:
 * x86_64, x86_64_64k, aarch64 and aarch64_64k removed, '_' made '.', one
 * trailing '.' dropped, lower case. Returns its length (truncated to
 * size). */
int gpuop_ospool_kernel_sanitized(const char *k, char *buf, size_t size);

/* The DaemonSet name of prefix's pool p: "<prefix>-<tag>", or with
 * by_kernel and a kernel "<prefix>-<sanitized kernel>-<tag>" (the
 * ClusterPolicy's precompiled name, transformPrecompiledDriverDaemonset);
 * with a driver pool (dpool) "<prefix>-<dpool>-" and the rest.
 * A name longer than GPUOP_OSPOOL_NAME_MAX, or not a DNS subdomain, is
 * cut and ends in "-<hash>" of the kernel and tag (the driver pool, the
 * kernel and the tag with a driver pool), as NVIDIA's
 * getDriverAppName cuts its prefix before utils.GetStringHash (FNV-1a 32,
 * its decimal digits encoded by rand.SafeEncodeString). Returns the
 * length written (as snprintf). */
int gpuop_ospool_ds_name(const char *prefix, const struct gpuop_ospool *p, bool by_kernel,
                         char *buf, size_t size);

#endif
