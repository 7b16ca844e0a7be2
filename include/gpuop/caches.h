/*
 * caches.h - gpuop's view of the cluster: four informers (GpuPolicies,
 * Nodes, and the operand DaemonSets and Pods in the operator namespace,
 * selected by app.kubernetes.io/managed-by=gpuop) whose stores hold the
 * compact structs of model.h, and two small ones in the operator
 * namespace: the operands' ServiceAccount (by name, so the controller sees
 * it go) and the Warning Events of DaemonSets (field selector
 * involvedObject.kind=DaemonSet,type=Warning: what the DaemonSet
 * controller says when it cannot create a pod). Shared by the controller
 * and `gpuop check`.
 *
 * Synced means the four main informers have listed once: the two small
 * ones are not waited for (an RBAC without them must not stop gpuop).
 */
#ifndef GPUOP_CACHES_H
#define GPUOP_CACHES_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>
#include <uv.h>

#include "gpuop/informer.h"
#include "gpuop/kube.h"
#include "gpuop/model.h"
#include "gpuop/sharing.h"

enum gpuop_caches_kind {
    GPUOP_CACHES_POLICY,
    GPUOP_CACHES_NODE,
    GPUOP_CACHES_DS,
    GPUOP_CACHES_POD,
    GPUOP_CACHES_MAIN, /* the kinds above are waited for (synced) */
    GPUOP_CACHES_SA = GPUOP_CACHES_MAIN,
    GPUOP_CACHES_EVENT,
    GPUOP_CACHES_SLICE,     /* DRA ResourceSlices, only while asked (gpuop_caches_watch_slices) */
    GPUOP_CACHES_CLAIM,     /* DRA ResourceClaims, with the slices */
    GPUOP_CACHES_PLUGIN_CM, /* the device plugin's sharing ConfigMap, only while asked
                               (gpuop_caches_watch_plugin_cm) */
    GPUOP_CACHES_KINDS
};

/* Longest "<reason>: <message>" kept of a DaemonSet's Warning Event. */
#define GPUOP_CACHES_EVENT_TEXT_MAX 512

/* A cached operand DaemonSet: the model struct plus what drift detection
 * needs (a hash of the metadata fields gpuop applies). */
struct gpuop_caches_ds {
    struct gpuop_ds ds;
    uint64_t meta_hash;
};

/* What one change moved: on_change's what, a set of these bits. */
enum gpuop_caches_change {
    /* the object is going (it is still in the cache during the call) */
    GPUOP_CACHES_GONE = 1u << 0,
    /* more than the findings: a GpuPolicy (a change its same op does not
     * filter), a Node, a DaemonSet added, deleted, or with another
     * generation, metadata hash or deletion, the operands' ServiceAccount;
     * never a pod, an Event or a DaemonSet's status alone */
    GPUOP_CACHES_SPEC = 1u << 1,
    /* what the apply stage's render reads: the same, where a Node counts
     * only when the OS pools of the GPU nodes may have moved (a pool
     * appears or its last node leaves; ospools_int.h), not for every
     * change of a node */
    GPUOP_CACHES_RENDER = 1u << 2,
};

struct gpuop_caches_config {
    const char *namespace; /* operator namespace, where operands live */
    /* Something changed (key of the object); borrowed strings. what: the
     * enum gpuop_caches_change bits of the change. A relist that found
     * ResourceSlices gone tells it once, key "" (the caches keep no slice
     * names), its folds already moved. */
    void (*on_change)(void *arg, enum gpuop_caches_kind kind, const char *key, unsigned what);
    /* Optional: node's object, or one of the pods on it (gpuop_pod.node),
     * changed; called before on_change. node borrowed, for the call. */
    void (*on_node)(void *arg, const char *node);
    /* All four informers have listed once. */
    void (*on_synced)(void *arg);
    /* Optional: the slice watch (gpuop_caches_watch_slices) listed once,
     * or its list failed (gpuop_caches_slices_state says which). */
    void (*on_slices)(void *arg);
    void *arg;
};

/* Arrays of borrowed pointers into the caches, valid until the loop runs
 * again; the nodes in name order (strcmp), their array lent by the caches
 * (or, after a failed allocation there, new and in no order), the others
 * new (gpuop_caches_view_free). Each
 * DaemonSet's controller_says is set when the view is made: the newest
 * Warning Event of that DaemonSet, while it has fewer pods scheduled than
 * desired. */
struct gpuop_caches_view {
    const struct gpuop_node **nodes;
    size_t nnodes;
    const struct gpuop_ds **ds;
    size_t nds;
    const struct gpuop_pod **pods;
    size_t npods;
    const struct gpuop_caches *from; /* the caches (borrowed): gpuop_caches_node_pods */
    bool nodes_lent;                 /* nodes is the caches' array: not freed */
};

struct gpuop_caches;

int gpuop_caches_new(uv_loop_t *loop, struct gpuop_kube *kube,
                     const struct gpuop_caches_config *cfg, struct gpuop_caches **out);
int gpuop_caches_start(struct gpuop_caches *caches);
bool gpuop_caches_synced(const struct gpuop_caches *caches);

/* The GpuPolicy object named name (borrowed), or NULL. Its status.nodes
 * (a hundred KB with the cap's 50 nodes, read by no one here) is held as
 * a digest of its bytes (informer.h, digested), as the members
 * gpuop_caches_policy_digested names. */
json_t *gpuop_caches_policy(const struct gpuop_caches *caches, const char *name);
/* Those members ("status.nodes"), NULL-terminated, static: a status
 * write's answer is parsed with the same (kube.h, digested), so the
 * status it shows compares with the cached one's. */
const char *const *gpuop_caches_policy_digested(void);
/* The active policy's name (borrowed): the oldest by creationTimestamp,
 * ties broken by name; NULL when there is none. */
const char *gpuop_caches_active(const struct gpuop_caches *caches);
/* Iterates the GpuPolicies: for (size_t i = 0; gpuop_caches_next_policy(caches, &i, &n, &o);)
 * name and obj are borrowed. */
int gpuop_caches_next_policy(const struct gpuop_caches *caches, size_t *iter, const char **name,
                             json_t **obj);
/* The operands' ServiceAccount is in the cache. */
bool gpuop_caches_sa_present(const struct gpuop_caches *caches);
/* The cached DaemonSet of that name in the operator namespace, or NULL. */
const struct gpuop_caches_ds *gpuop_caches_ds(const struct gpuop_caches *caches, const char *name);

/* The cached Node of that name (borrowed: valid until on_node names it),
 * or NULL. */
const struct gpuop_node *gpuop_caches_node(const struct gpuop_caches *caches, const char *name);
/* Keeps (on) or drops the index of pods by node that gpuop_caches_node_pods
 * reads; building it walks the pods once. 0, or GPUOP_ENOMEM / GPUOP_ETOOBIG
 * when a pod could not be indexed (node_pods then refuses until it is
 * built again). */
int gpuop_caches_index_pods(struct gpuop_caches *caches, bool on);
/* Most operand pods of one node gpuop_caches_node_pods gives: an
 * operand's pod and its replacement while the old one terminates, per
 * DaemonSet (per-OS ones and a rollback one included), with room. */
#define GPUOP_CACHES_NODE_PODS_MAX 64

/* The operand pods whose node (gpuop_pod.node) is node, into buf (max
 * borrowed pods, valid until on_node names the node): *n of them. 0,
 * GPUOP_ETOOBIG when the node has more than max, or GPUOP_EINVAL when the
 * index is not kept or not whole (a full view is needed). */
int gpuop_caches_node_pods(const struct gpuop_caches *caches, const char *node,
                           const struct gpuop_pod **buf, size_t max, size_t *n);

/* The nodes and DaemonSets (nodes lent, DaemonSets new, items borrowed; pods NULL: ask
 * gpuop_caches_view_pods, a walk over every pod, only where nothing
 * cheaper serves). 0 or GPUOP_ENOMEM. */
int gpuop_caches_view(const struct gpuop_caches *caches, struct gpuop_caches_view *v);
/* Adds the pods to a view (once; later calls do nothing). 0 or
 * GPUOP_ENOMEM. */
int gpuop_caches_view_pods(const struct gpuop_caches *caches, struct gpuop_caches_view *v);
/* gpuop_caches_node_pods answers (the index is kept and whole). */
bool gpuop_caches_pods_indexed(const struct gpuop_caches *caches);
void gpuop_caches_view_free(struct gpuop_caches_view *v);

/* ---- DRA ResourceSlices ----
 *
 * The ResourceSlices of NVIDIA's DRA driver (field selector spec.driver=
 * GPUOP_DRA_GPU_DRIVER), resource.k8s.io/v1: watched only while asked,
 * which the controller does while the apply stage finds the API server
 * serving resource.k8s.io/v1 (its DeviceClasses applied): an API that is
 * not served is then never listed, and its 404 never logged. Each slice
 * (at most GPUOP_SLICE_MAX_BYTES of JSON, its devices counted, not kept)
 * is kept as 12 bytes of the caches' slice table (cache/slicetab_int.h:
 * no key, no item) and folded into its node's gpuop_node.dra
 * (slicefold_int.h), whose watched is set once the slices have listed
 * and cleared when the watch stops; every node whose fold moves is named
 * to on_node. */

/* Starts (on) or stops the slice watch; nothing when it is already so.
 * 0 or a negative code (the informer could not be made). */
int gpuop_caches_watch_slices(struct gpuop_caches *caches, bool on);
/* The slice watch runs and has listed once. */
bool gpuop_caches_slices_synced(const struct gpuop_caches *caches);

/* The DRA ResourceClaims (resource.k8s.io/v1, every namespace), watched
 * with the slices (the same gpuop_caches_watch_slices starts and stops
 * both): each a struct gpuop_claim (model.h; at most GPUOP_CLAIM_MAX_BYTES
 * of JSON), the claims of no GPUOP_DRA_GPU_DRIVER device one shared
 * GPUOP_CLAIM_NONE. Each claim that comes, changes or goes names its
 * allocated node (old and new) to on_node. */

/* The claim watch runs and has listed once. */
bool gpuop_caches_claims_synced(const struct gpuop_caches *caches);
/* The next claim holding a GPUOP_DRA_GPU_DRIVER device (GPUOP_CLAIM_NONE
 * skipped) into *out (borrowed, valid until the caches change); *iter
 * starts at 0. False at the end, or while claims are not watched. */
bool gpuop_caches_next_claim(const struct gpuop_caches *caches, size_t *iter,
                             const struct gpuop_claim **out);
/* The slice watch runs and its last list failed with this code
 * (GPUOP_ENOTFOUND: resource.k8s.io/v1 ResourceSlices are not served);
 * 0 otherwise. The informer keeps trying (backoff). */
int gpuop_caches_slices_error(const struct gpuop_caches *caches);

/* ---- the device plugin's sharing ConfigMap (sharing.h) ----
 *
 * The ConfigMap spec.devicePlugin.config.name names, in the operator
 * namespace: watched by name (field selector metadata.name=<name>) while
 * asked, so an edit is judged at once; each is kept as a struct
 * gpuop_sharing_cm (its keys and their configs' sharing, bounded: an
 * object over GPUOP_SHARING_CM_MAX_BYTES is not read, as every watch
 * bounds its events). Its changes, and its first list (which may find it
 * absent), come to on_change as a GPUOP_CACHES_SPEC change of kind
 * GPUOP_CACHES_PLUGIN_CM: they move the findings, not the render. */

/* Largest ConfigMap read (the API server keeps them under 1 MiB). */
#define GPUOP_SHARING_CM_MAX_BYTES (1u << 20)

/* Watches the ConfigMap name (borrowed; NULL or "": none): nothing when
 * it is already watched, else the watch of another is stopped and this
 * one started. 0 or a negative code (the informer could not be made). */
int gpuop_caches_watch_plugin_cm(struct gpuop_caches *caches, const char *name);
/* What the watch knows of the ConfigMap into *out: UNKNOWN while not
 * watched or not listed yet (or its list fails: RBAC), ABSENT when the
 * list found none, READ (or TOO_BIG) as sharing.h reads it. */
void gpuop_caches_plugin_cm(const struct gpuop_caches *caches, struct gpuop_sharing_cm *out);

void gpuop_caches_stats(const struct gpuop_caches *caches, enum gpuop_caches_kind kind,
                        struct gpuop_informer_stats *out);

/* Hash of the metadata gpuop applies to a DaemonSet (labels, annotations,
 * ownerReferences) of obj (borrowed). */
uint64_t gpuop_caches_meta_hash(json_t *obj);

void gpuop_caches_close(struct gpuop_caches *caches, void (*cb)(void *arg), void *arg);

#endif
