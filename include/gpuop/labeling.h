/*
 * labeling.h - node labelling (SPEC 4a) as a pure decision: what gpuop
 * writes on a node, and which of the labels it set someone changed since.
 * The controller (src/controller/labeler.c) sends what gpuop_labeling_plan
 * says; the analysis reports what gpuop_labeling_changed says (finding
 * NotScheduled/LabelChanged). Neither reads anything but the compact node
 * (model.h: its deploy labels and gpuop's annotation) and the policy.
 *
 * The rules:
 *   - a GPU node with no nvidia.com/gpu.deploy.* label at all and no gpuop
 *     annotation is new: gpuop sets nvidia.com/gpu.present=true (unless it
 *     is already) and nvidia.com/gpu.deploy.<operand>=true for each
 *     enabled operand (mig-manager only on a MIG-capable node, as the GPU
 *     Operator does);
 *   - a node with any deploy label and no gpuop annotation is a person's:
 *     nothing is written, ever;
 *   - a node gpuop labelled (annotation readable) gets the deploy label of
 *     an operand enabled since, when that label is absent and gpuop never
 *     set it before (a label gpuop set and someone removed is not put back);
 *   - nvidia.com/gpu.deploy.operands=false excludes the node; an unreadable
 *     annotation too (gpuop does not know what it set there).
 *
 * Layer: findings
 */
#ifndef GPUOP_LABELING_H
#define GPUOP_LABELING_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "gpuop/model.h"
#include "gpuop/policy.h"

/* What gpuop writes on one node: labels, all "true". */
struct gpuop_label_plan {
    bool present;    /* nvidia.com/gpu.present */
    uint32_t deploy; /* bit per operand index: nvidia.com/gpu.deploy.<operand> */
};

/* What of the policy the decision reads (a copy the labeler keeps while
 * its requests are in flight). */
struct gpuop_labeling {
    bool on;          /* spec.nodeLabeling.enabled */
    uint32_t enabled; /* bit per operand index: enabled in the policy */
};

/* The labelling facts of policy p (borrowed; NULL: labelling off). */
struct gpuop_labeling gpuop_labeling_of(const struct gpuop_policy *p);

/* The labels gpuop would write on n (borrowed) under l (borrowed) into
 * *out; true when there is one. */
bool gpuop_labeling_plan(const struct gpuop_labeling *l, const struct gpuop_node *n,
                         struct gpuop_label_plan *out);

/* Operand i's deploy label was set "true" by gpuop (its annotation says
 * so) and is not "true" now: removed, "false" or another value. A
 * "paused..." value is not a change (an upgrade pauses operands that way:
 * LabelPaused), nor "pre-installed" (NVIDIA's driver container, which
 * gpuop runs, writes it when it finds a driver on the host: host-provided,
 * no person's decision). Does not depend on the policy: what gpuop set and
 * someone changed is reported even with labelling turned off since. */
bool gpuop_labeling_changed(const struct gpuop_node *n, int i);

/* Driver pools (spec.driver.pools, SPEC 4f): gpuop writes
 * GPUOP_LABEL_DRIVER_POOL on the GPU nodes a pool's nodeSelector selects,
 * as NVIDIA's AssignOwners writes nvidia.com/gpu-operator.driver.owner
 * (gpu-operator internal/nvidiadriver/nvidiadriver.go). The rules:
 *   - the pools that select a node are the pools whose nodeSelector its
 *     labels match, and the pool without a nodeSelector its label names
 *     (a pool people label by hand: its label is a person's choice);
 *   - one pool selects it: the label names that pool;
 *   - none: a label naming a pool with a nodeSelector is removed (the node
 *     is the default pool's); any other label is a person's and stays;
 *   - two or more: fails closed. The label stays as it is (never moved,
 *     never removed) and GPUOP_ANNOTATION_DRIVER_POOL_CONFLICT names them
 *     (the analysis reports DriverPoolConflict); the annotation goes once
 *     the conflict does;
 *   - a node whose label is to change (another pool selects it, or none
 *     now and it goes to the default pool) while it runs a driver pod is
 *     not relabelled: GPUOP_ANNOTATION_DRIVER_POOL_WANTED names where it
 *     goes (GPUOP_DRIVER_POOL_DEFAULT for the default pool), and the
 *     driver upgrade moves it (upgrade.h: cordon, its GPU jobs, then the
 *     label), as it would change its driver's version: a label changed at
 *     once would take the old pool's driver pod off under its GPU jobs. A
 *     node without a driver pod is relabelled at once. The annotation goes
 *     once the label is where the pools put it, and in a conflict. (The
 *     labeler counts a driver pod that may serve a job: Ready, restarted
 *     or terminating, not one starting for the first time.)
 *   - nothing is written while the policy holds the driver (a pool that
 *     cannot be used is left out, and a conflict with it would go unseen)
 *     or while no pool has a nodeSelector. */
struct gpuop_pool_facts {
    bool on; /* some pool has a nodeSelector, or one drains, and the driver is not held */
    int n;
    char name[GPUOP_DRIVER_POOLS_MAX][GPUOP_DRIVER_POOL_NAME_MAX + 1];
    json_t *selector[GPUOP_DRIVER_POOLS_MAX]; /* owned; NULL: a pool labelled by hand */
    /* the policy's draining pools (gpuop_policy.draining_pools): gone from
     * it, their nodes move where the selectors now put them */
    int ndraining;
    char draining[GPUOP_DRIVER_POOLS_MAX][GPUOP_DRIVER_POOL_NAME_MAX + 1];
};

/* Longest conflict annotation: every pool's name and a comma. */
#define GPUOP_POOL_CONFLICT_MAX (GPUOP_DRIVER_POOLS_MAX * (GPUOP_DRIVER_POOL_NAME_MAX + 1))

/* What gpuop writes on one node for its driver pool. */
struct gpuop_pool_plan {
    bool label;       /* change GPUOP_LABEL_DRIVER_POOL */
    const char *pool; /* ... to this pool (borrowed from the facts); NULL: remove it */
    bool note;        /* change GPUOP_ANNOTATION_DRIVER_POOL_CONFLICT */
    char conflict[GPUOP_POOL_CONFLICT_MAX + 1]; /* ... to this; "": remove it */
    bool want;                                  /* change GPUOP_ANNOTATION_DRIVER_POOL_WANTED */
    const char *wanted;                         /* ... to this (borrowed from the facts, or
                                                   GPUOP_DRIVER_POOL_DEFAULT); NULL: remove it */
    /* record GPUOP_ANNOTATION_DRIVER_POOL_SET: the value gpuop writes in the
     * label (pool; NULL removes it), with every label change, and on a node
     * a selector puts in the pool its label already names (recorded once) */
    bool record;
    /* nothing written: the label names no pool (none of the policy's, none
     * draining) and is not the value gpuop wrote: a person's, left as it
     * is (gpuop check names it) */
    bool persons;
};

/* What a node carries of its driver pool (each borrowed, NULL when absent)
 * and whether a driver pod runs on it (the pods' cache). */
struct gpuop_pool_node {
    const char *label;    /* GPUOP_LABEL_DRIVER_POOL */
    const char *conflict; /* GPUOP_ANNOTATION_DRIVER_POOL_CONFLICT */
    const char *wanted;   /* GPUOP_ANNOTATION_DRIVER_POOL_WANTED */
    bool driver;          /* a driver pod is on it (or gpuop cannot tell) */
    bool ours;            /* label is the value gpuop wrote (gpuop_node_upgrade.pool_ours) */
};

/* The pool facts of policy p (borrowed) into *out (its selectors new:
 * gpuop_labeling_pools_free). Returns 0 or GPUOP_ENOMEM (then *out is
 * off). */
int gpuop_labeling_pools_of(const struct gpuop_policy *p, struct gpuop_pool_facts *out);
void gpuop_labeling_pools_free(struct gpuop_pool_facts *f);
/* The same pools, names and selectors. */
bool gpuop_labeling_pools_same(const struct gpuop_pool_facts *a, const struct gpuop_pool_facts *b);

/* Bit k: pool k's nodeSelector matches labels (a node's metadata.labels,
 * borrowed; every key of the selector with its value). */
unsigned gpuop_labeling_pool_match(const struct gpuop_pool_facts *f, json_t *labels);

/* The plan for a GPU node whose labels match the pools of `match`
 * (gpuop_labeling_pool_match) and that carries now (borrowed); true when
 * something is to be written. A label naming a pool gone (none of f's, or
 * a draining one) goes only when it is gpuop's (now->ours): at once when
 * no DaemonSet selects its value, through the wanted annotation when a
 * draining pool's driver runs there; a person's is left (out->persons).
 * Every label written is recorded (out->record). */
bool gpuop_labeling_pool_plan(const struct gpuop_pool_facts *f, unsigned match,
                              const struct gpuop_pool_node *now, struct gpuop_pool_plan *out);

/* The draining pools of p (p->draining_pools, replaced): driver pools
 * gone from spec.driver.pools (issue 38; docs/operations.md, "Driver
 * pools"). A pool drains while a GPU node of nodes (borrowed) carries its
 * name in GPUOP_LABEL_DRIVER_POOL and the pool's driver DaemonSet for that
 * node's OS pool (and kernel) is among ds (borrowed), not being deleted:
 * its DaemonSets are kept as they run, neither applied from a spec that is
 * gone nor deleted; the default pool's keep off its nodes; its nodes are
 * judged against its DaemonSets and moved by the labeller through the
 * driver upgrade. Once no node carries its name, it is gone and its
 * DaemonSets are deleted as any with no node left. The controller sets
 * them at each parse of the policy, `gpuop check` at its own. Returns how
 * many nodes named a pool beyond GPUOP_DRIVER_POOLS_MAX (not kept). */
int gpuop_labeling_pools_draining(struct gpuop_policy *p, const struct gpuop_node *const *nodes,
                                  size_t n, const struct gpuop_ds *const *ds, size_t nds);

#endif
