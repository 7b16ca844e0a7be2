/*
 * upgrade.h - the driver upgrade's planner (docs/upgrade.md), pure. Layer: findings
 *
 * From the policy's upgradePolicy, the GPU nodes (their state label,
 * gpuop's annotations, unschedulable), each node's driver pod (its
 * template generation) and validator pod, the template generation of the
 * driver DaemonSet that covers the node, and the workload pods of the
 * nodes whose step needs them (listed by the controller, with what their
 * last eviction was answered), gpuop_upgrade_plan() says for every GPU
 * node whose driver gpuop manages: its state, the state to write, the one
 * action to take now, and in words what it waits for. The controller
 * (src/controller/upgrade_actor.c) takes the actions; every fact the plan reads
 * lives in the cluster, so a restart plans the same.
 *
 * Invariants the plan keeps (unit tests: test/unit/test_upgrade.c):
 * at most maxParallelUpgrades nodes between cordon-required and
 * uncordon-required; a node starts only while the GPU nodes unavailable
 * (cordoned, NotReady, or driver not Ready, plus those about to be
 * cordoned) stay within maxUnavailable; no driver pod is deleted while a
 * GPU pod runs on its node (unless gpuPodDeletion.force); a node someone
 * else cordoned is not started; a node moving to another driver pool
 * (annotation GPUOP_ANNOTATION_DRIVER_POOL_WANTED, which the labeler
 * writes instead of changing the pool label of a node that runs a driver)
 * is upgrade-required and takes the same steps, its pool label changed
 * where its driver pod would be deleted; deploy.driver=false and
 * deploy.operands=false nodes are not managed; a live failure (a node upgrade-failed at the
 * generation being rolled out) starts no further node.
 */
#ifndef GPUOP_UPGRADE_H
#define GPUOP_UPGRADE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "gpuop/model.h"
#include "gpuop/policy.h"

/* Most nodes named in status.upgrade.next. */
#define GPUOP_UPGRADE_NEXT_MAX 5
/* Most driver generations counted in status.upgrade.versions. */
#define GPUOP_UPGRADE_GENS_MAX 8
/* Longest "what it waits for" text. */
#define GPUOP_UPGRADE_WAIT_MAX 512
/* Pods named in one waiting text at most ("and 3 more"). */
#define GPUOP_UPGRADE_NAMED_MAX 5
/* A new driver pod not Ready with more restarts than this has failed (the
 * GPU Operator's rule, docs/upgrade.md); fewer: it fails only past
 * driverReadyTimeoutSeconds. */
#define GPUOP_UPGRADE_FAIL_RESTARTS 10

/* One pod on a node, as the controller listed it; strings borrowed. */
struct gpuop_upgrade_pod {
    const char *ns, *name;
    bool gpu;                /* a GPU pod: nvidia.com/gpu* or nvidia.com/mig-* in a container's
                                requests or limits (gpuop_upgrade_pod_uses_gpu) */
    bool job;                /* selected by waitForCompletion.podSelector */
    bool drain;              /* drain would evict it: selected by drain.podSelector (or none set),
                                not a DaemonSet's, not a mirror pod */
    bool unmanaged;          /* no controller owns it */
    bool daemonset;          /* a DaemonSet owns it: evicted, it would come straight back */
    bool mirror;             /* a static pod's mirror (annotation kubernetes.io/config.mirror) */
    bool empty_dir;          /* has an emptyDir volume */
    bool terminal;           /* Succeeded or Failed */
    bool deleting;           /* metadata.deletionTimestamp set */
    bool blocked;            /* its last eviction was answered 429: a PodDisruptionBudget */
    const char *blocked_why; /* what that 429 said, or NULL */
};

/* Most pods one node's LIST may hold for the planner (npods below); a
 * longer list is refused. */
#define GPUOP_UPGRADE_PODS_MAX UINT32_MAX

/* 72 bytes: one per node, made at every status reconcile of the active
 * policy (the pointers first, then the counts: no padding). */
struct gpuop_upgrade_node_in {
    const struct gpuop_node *node;        /* borrowed */
    const struct gpuop_pod *driver;       /* its driver pod (the newest), or NULL */
    const struct gpuop_pod *validator;    /* its validator pod, or NULL */
    const char *dependent;                /* the first dependent's name, or NULL */
    const char *failed_why;               /* why it failed, from gpuop's failure annotation
                                             (the controller reads it); borrowed, or NULL */
    const struct gpuop_upgrade_pod *pods; /* borrowed */
    uint32_t target_gen;                  /* template generation of the driver DaemonSet
                                             covering it; 0: none does (not managed) */
    uint32_t target_digest;               /* that DaemonSet's install configuration digest
                                             (GPUOP_LABEL_DRIVER_DIGEST); 0 none */
    uint32_t target_rev;                  /* gpuop_revision_hash of that DaemonSet's newest
                                             ControllerRevision; 0 unknown */
    uint32_t dependents;                  /* operand pods on it other than the driver's
                                             (the cache) */
    uint32_t npods;                       /* pods[]'s, at most GPUOP_UPGRADE_PODS_MAX */
    bool driver_elsewhere;                /* its driver pod is not of the DaemonSet covering
                                             it (another pool's or OS's, whose pod goes):
                                             not on the target, whatever its generation */
    bool pods_known;                      /* pods[] was listed for it */
};

struct gpuop_upgrade_in {
    const struct gpuop_upgrade_policy *policy; /* borrowed */
    bool driver_enabled;                       /* spec.driver.enabled */
    bool validator_enabled; /* spec.validator.enabled: wait for it to validate again */
    const char *version;    /* what the target generation runs (spec.driver.version or
                               image), for words; may be NULL */
    long long now;          /* seconds since epoch */
    const struct gpuop_upgrade_node_in *nodes; /* borrowed, any order */
    size_t n;
};

/* What the controller does for a node now; every action that ends a step
 * writes the state label `next` (and the since annotation) in its PATCH. */
enum gpuop_upgrade_action {
    GPUOP_UA_NONE = 0,          /* nothing: it waits (waiting says for what), or is done */
    GPUOP_UA_LABEL,             /* write the state label next */
    GPUOP_UA_CORDON,            /* spec.unschedulable true + the cordoned annotation; next */
    GPUOP_UA_LIST,              /* list the node's pods (the step needs them) */
    GPUOP_UA_EVICT,             /* evict the pods gpuop_upgrade_evicts() selects, through the
                                   Eviction API (never a DELETE: PodDisruptionBudgets hold) */
    GPUOP_UA_PAUSE,             /* dependents' deploy labels (every operand's but the
                                   driver's) paused-for-driver-upgrade; the old driver pod
                                   is deleted once their pods left;
                                   their old values in the paused annotation */
    GPUOP_UA_DELETE_DRIVER,     /* delete the old driver pod */
    GPUOP_UA_DELETE_VALIDATOR,  /* delete the validator pod older than the new driver */
    GPUOP_UA_RESTORE,           /* deploy labels back from the paused annotation; next */
    GPUOP_UA_RESTORE_VALIDATOR, /* the validator's deploy label only, back from it */
    GPUOP_UA_UNCORDON,          /* spec.unschedulable false, annotation removed; next */
    GPUOP_UA_FAIL,              /* next upgrade-failed + the failed annotation (reason) */
    GPUOP_UA_ROLLBACK,          /* onFailure rollback: the previous driver back here
                                   (label GPUOP_LABEL_DRIVER_ROLLBACK = its DaemonSet) */
    GPUOP_UA_ROLLBACK_END,      /* a rolled-back node upgrades again: the label
                                   GPUOP_DRIVER_ROLLBACK_ENDING (the old pod leaves) */
    GPUOP_UA_ROLLBACK_CLEAR,    /* ... the label removed (the new pod comes); the
                                   rollback DaemonSet deleted when no node uses it */
    GPUOP_UA_FORGET_CORDON,     /* someone uncordoned the node mid-upgrade: gpuop's
                                   cordoned annotation removed (gpuop never uncordons
                                   a cordon it did not make) */
    GPUOP_UA_MOVE_POOL,         /* a node moving between driver pools (annotation
                                   GPUOP_ANNOTATION_DRIVER_POOL_WANTED): instead of
                                   deleting its driver pod, its pool label set to the
                                   wanted pool (removed for the default), the annotation
                                   removed: the old pool's DaemonSet takes its pod off,
                                   the new pool's brings its driver */
    GPUOP_UA_COUNT
};

/* "cordon", "evict" ... for logs; static. */
const char *gpuop_upgrade_action_name(int a);

struct gpuop_upgrade_node_out {
    size_t in;         /* index into gpuop_upgrade_in.nodes */
    uint8_t state;     /* enum gpuop_upgrade_state, as recomputed */
    uint8_t next;      /* the state to write; == state: none to write */
    uint8_t action;    /* enum gpuop_upgrade_action */
    bool unavailable;  /* counted against maxUnavailable */
    uint32_t since;    /* when it entered state (0: unknown) */
    char *waiting;     /* new: what it waits for in words; NULL when nothing (done) */
    char *fail_reason; /* new: action FAIL, or a live failure: why; else NULL */
};

/* How many nodes at a generation. */
struct gpuop_upgrade_gen_count {
    uint32_t gen;
    size_t n;
};

struct gpuop_upgrade_plan {
    struct gpuop_upgrade_node_out *nodes; /* new: one per managed GPU node, by name */
    size_t n;
    size_t counts[GPUOP_US_COUNT];                               /* nodes per state (next) */
    struct gpuop_upgrade_gen_count gens[GPUOP_UPGRADE_GENS_MAX]; /* nodes per driver pod
                                                                     generation, by gen */
    size_t ngens;
    uint32_t target_gen; /* the highest target generation */
    size_t in_progress;  /* nodes cordon-required..uncordon-required (after the plan) */
    size_t unavailable;  /* GPU nodes unavailable (after the plan) */
    int max_unavailable; /* maxUnavailable as a count of n */
    size_t failed;       /* index into nodes of the live failure that stops the
                            upgrade; SIZE_MAX none */
    size_t next[GPUOP_UPGRADE_NEXT_MAX]; /* indexes into nodes: next to start, in order */
    size_t nnext;
    size_t skipped; /* upgrade-required nodes the skip label keeps out */
    long long wake; /* the earliest time a wait times out (plan again then); 0 none */
};

/* Plans into a zeroed *out (release with gpuop_upgrade_plan_free).
 * Returns 0 or GPUOP_ENOMEM. */
int gpuop_upgrade_plan(const struct gpuop_upgrade_in *in, struct gpuop_upgrade_plan *out);
void gpuop_upgrade_plan_free(struct gpuop_upgrade_plan *p);

/* Quiet: no node in progress, failed, to label or waiting to start; every
 * managed node done, or waiting for its first driver pod (a rollout, not an
 * upgrade), and no wait that times out: nothing to do. */
bool gpuop_upgrade_plan_quiet(const struct gpuop_upgrade_plan *p);

/* Whether the action EVICT (or DELETE_PODS) of a node in state takes pod. */
bool gpuop_upgrade_evicts(const struct gpuop_upgrade_policy *u, int state,
                          const struct gpuop_upgrade_pod *pod);

/* True when a pod (borrowed JSON) asks for a GPU: nvidia.com/gpu or
 * nvidia.com/mig-* in a container's (or init container's) requests or limits. */
bool gpuop_upgrade_pod_uses_gpu(json_t *pod);

/* Adds "upgrade" (status.upgrade, docs/upgrade.md) to status (borrowed)
 * from plan and in (borrowed); nothing when plan is NULL or has no node.
 * Returns 0 or GPUOP_ENOMEM. */
int gpuop_upgrade_status_add(json_t *status, const struct gpuop_upgrade_plan *plan,
                             const struct gpuop_upgrade_in *in);

#endif
