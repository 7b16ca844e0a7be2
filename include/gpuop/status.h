/*
 * status.h - the GpuPolicy status object (SPEC section 6) built from the
 * findings.
 *
 * The output is deterministic: same inputs, same JSON, keys in a fixed
 * order, and lastTransitionTime carried over from the previous status when a
 * condition's status did not flip. The controller writes the status only
 * when it differs from what it last wrote (a hash), so a quiet cluster
 * costs no write.
 *
 * Conditions:
 *   Ready            True when there are GPU nodes and no finding at all;
 *                    False with reason NoGpuNodes when no node is a GPU node.
 *                    Never True while an enabled operand's DaemonSet is not on
 *                    the current spec (reason OperandsNotApplied).
 *   OperandsComplete no Missing and no NotScheduled finding.
 *   OrderingValid    no OrderingViolation finding.
 *   Reconciled       the DaemonSets were applied; False with reason
 *                    ApplyFailed listing every apply failure by operand, in
 *                    operand-table order, then the spec problems; else
 *                    InvalidSpec naming the first invalid field.
 *   ServiceMonitor   only while spec.dcgmExporter.serviceMonitor is enabled
 *                    (and the exporter is) and gpuop applies: False with
 *                    reason CRDNotInstalled while the API server has no
 *                    ServiceMonitor kind (the rest applied, Reconciled
 *                    unaffected), else True.
 *   DeviceClasses    only while spec.draDriver is enabled (not held by a
 *                    problem in it) and gpuop applies: False with reason
 *                    APINotServed while the API server does not serve
 *                    resource.k8s.io/v1 DeviceClasses (the DaemonSet
 *                    applied, Reconciled unaffected), else True.
 * An ignored policy (not the oldest) gets state "ignored", Ready=False with
 * reason Ignored naming the active policy, the other conditions Unknown, and
 * no operands, nodes or summary. Empty lists (nodes, a node's hostProvided)
 * are left out, so `kubectl describe` shows no dangling keys.
 */
#ifndef GPUOP_STATUS_H
#define GPUOP_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "gpuop/analysis.h"
#include "gpuop/policy.h"

/* Nodes listed in status.nodes at most; the rest are counted in nodesOmitted. */
#define GPUOP_STATUS_MAX_NODES 50
/* The words of what the DRA plugin's deletion waits for, at most. */
#define GPUOP_STATUS_DRA_WAITING_MAX 2048

/* What a reconcile did to one operand's DaemonSet (or the operands'
 * ServiceAccount): facts the controller passes; the text is status.c's. */
enum gpuop_apply_state {
    GPUOP_APPLY_NONE = 0,      /* nothing tried (gpuop check): nothing to report */
    GPUOP_APPLY_CURRENT,       /* enabled: on the current spec (in line, or applied now) */
    GPUOP_APPLY_FAILED,        /* enabled: the apply was refused or could not be sent */
    GPUOP_APPLY_BLOCKED,       /* enabled: not created or changed, because a prerequisite
                                  (direct or transitive) was not applied */
    GPUOP_APPLY_ABSENT,        /* disabled: no DaemonSet (deleted, or there was none) */
    GPUOP_APPLY_DELETE_FAILED, /* disabled: the delete was refused */
    GPUOP_APPLY_STATES
};

#define GPUOP_APPLY_MESSAGE_MAX 512

struct gpuop_apply_result {
    unsigned char state;    /* enum gpuop_apply_state */
    signed char blocked_by; /* BLOCKED: operand index whose apply failed; else -1 */
    char reason[64];        /* FAILED, DELETE_FAILED: Kubernetes Status reason ("Invalid") */
    char message[GPUOP_APPLY_MESSAGE_MAX]; /* FAILED, DELETE_FAILED: what the API server said */
};

/* "Current", "Failed", "Blocked", "Absent", "DeleteFailed" ("" for NONE). Static. */
const char *gpuop_apply_state_name(int state);

struct gpuop_status_input {
    const char *namespace;     /* the operand namespace */
    bool inactive;             /* this policy is not the active one (state "ignored") */
    const char *active_policy; /* name of the active policy (status.activePolicy) */
    size_t max_nodes;          /* 0: GPUOP_STATUS_MAX_NODES; SIZE_MAX: no cap */
    bool empty_lists;          /* keep empty lists (nodes, hostProvided): a fixed shape for
                                  gpuop check -o json; the cluster's status leaves them out */
    /* Facts of the reconcile, borrowed. apply: one entry per operand index,
     * or NULL when nothing was applied (gpuop check). sa: the operands'
     * ServiceAccount, or NULL. */
    const struct gpuop_apply_result *apply;
    const struct gpuop_apply_result *sa;
    /* The objects beside the DaemonSets whose kind's CRD the API server
     * lacked when gpuop applied them: a bit per gpuop_render_extra index
     * (its row names the CRD); 0 with apply NULL. */
    unsigned absent_crds;
    /* status.upgrade, the driver upgrade's (gpuop_upgrade_status_add of
     * its plan), borrowed; NULL: none (not the leader, gpuop check). */
    json_t *upgrade;
    /* Driver pools (SPEC 4f): gpuop_status_driver_pools of the GPU nodes,
     * borrowed, added to the driver's operands[] entry as "pools"; NULL:
     * none (no pools in the policy). */
    json_t *driver_pools;
    /* The DRA driver switched off: what its kubelet plugin's deletion waits
     * for, in words (borrowed; NULL or "": nothing), the condition
     * DraPluginDeletion. */
    const char *dra_waiting;
};

/* Longest pool's version kept ("580.95.05", a digest). */
#define GPUOP_STATUS_POOL_VERSION_MAX 128

/* Each driver pool of policy p (borrowed) and the default, as
 * [{"name": "a100", "version": "580.95.05", "nodes": 3[, "nodeNames":
 * [...]]}, ..., {"name": "default", ...}]: the GPU nodes among nodes
 * (borrowed) in each (a node's gpuop.dev/driver-pool label names its pool;
 * none, or a name no pool has: the default), with their names too when
 * names is true (gpuop check; the status counts only). The policy's
 * draining pools (p->draining_pools) come after its pools, as {"name":
 * "a100", "version": "", "draining": true, "nodes": 1, "nodeNames":
 * [...]}, their nodes named in the status too (the nodes left to move).
 * New; NULL when p has no pools, none draining, or on out-of-memory. */
json_t *gpuop_status_driver_pools(const struct gpuop_policy *p,
                                  const struct gpuop_node *const *nodes, size_t n, bool names);

/* GPU sharing (issue 41): the GPU nodes of f whose GFD label
 * nvidia.com/gpu.sharing-strategy is not "none", grouped by strategy and
 * replicas, sorted so, as [{"strategy": "time-slicing", "replicas": 4,
 * "nodes": 3, "nodeNames": [the first GPUOP_STATUS_SHARING_NAMES]}, ...]
 * ("replicas" left out when GFD's label is absent); at most
 * GPUOP_STATUS_SHARING_MAX groups (the nodes of others are not counted).
 * Only nodes whose name holds filter (borrowed; NULL or "": all). New
 * (an empty array when none), NULL on out-of-memory. */
#define GPUOP_STATUS_SHARING_MAX   16
#define GPUOP_STATUS_SHARING_NAMES 10
json_t *gpuop_status_sharing(const struct gpuop_findings *f, const char *filter);

/* New status object, or NULL on out-of-memory. p, f, prev_status (the
 * previous .status, may be NULL) and in are borrowed; f may be NULL only
 * when in->inactive. now is seconds since epoch (for lastTransitionTime). */
json_t *gpuop_status_build(const struct gpuop_policy *p, const struct gpuop_findings *f,
                           json_t *prev_status, const struct gpuop_status_input *in, long long now);

/* The parts shared with `gpuop check -o json`: new arrays/objects, NULL on
 * out-of-memory. gpuop_status_operands adds each operand's apply result
 * ("apply", and "applyMessage" when it was not applied) when apply is not
 * NULL. gpuop_status_nodes also stores the number of nodes left
 * out in *omitted (may be NULL). */
json_t *gpuop_status_operands(const struct gpuop_findings *f,
                              const struct gpuop_apply_result *apply /* may be NULL */);
json_t *gpuop_status_nodes(const struct gpuop_findings *f, size_t max_nodes, size_t *omitted);
json_t *gpuop_status_summary(const struct gpuop_findings *f, bool truncated);

#endif
