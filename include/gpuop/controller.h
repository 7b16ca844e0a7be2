/*
 * controller.h - the level-triggered reconcile loop of `gpuop run`.
 *
 * Every change seen by the caches' informers enqueues the GpuPolicies; one
 * reconcile at a time recomputes everything from the caches: which policy
 * is active, the operands' ServiceAccount, the DaemonSet of every operand
 * (server-side apply in prerequisite order, none while a prerequisite
 * could not be applied; delete when disabled), the findings, and the
 * status (written through /status, only when it differs from what gpuop
 * last wrote). Internals: src/controller/controller_int.h.
 */
#ifndef GPUOP_CONTROLLER_H
#define GPUOP_CONTROLLER_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "gpuop/kube.h"
#include "gpuop/operand.h"
#include "gpuop/reasons.h"
#include "gpuop/caches.h"

/* One finished reconcile, for metrics. ok: no error. seconds: its
 * duration. latency: seconds from the first informer event that dirtied
 * the key (since the last successful reconcile of it) to the end of this
 * reconcile, status write included; negative when no event is pending (a
 * resync, a retry after a failure still carries the original event). */
typedef void (*gpuop_controller_reconciled_cb)(void *arg, const char *key, bool ok, double seconds,
                                               double latency);

struct gpuop_controller_config {
    const char *namespace; /* where the operand DaemonSets live */
    bool leader;           /* false while not the leader: observe only */
    /* The test oracle (GPUOP_VERIFY_ORACLE in `run`, a build option of the
     * test builds): the findings are kept at any size, and after each
     * reconcile's node-by-node update a full pass over every pod is
     * compared with them, a difference logged as an error, counted
     * (analysis_mismatches) and the full pass's set kept. */
    bool verify;
    gpuop_controller_reconciled_cb on_reconciled; /* optional */
    void *arg;
};

/* The numbers of the last analysis of the active policy (followers
 * analyse too; they only do not write). */
struct gpuop_controller_summary {
    bool valid;       /* an active policy was analysed since it became active */
    char policy[254]; /* its name */
    size_t gpu_nodes, complete_nodes, violations;
    size_t stranded_pods; /* GPU pods bound to nodes with an ordering violation */
    size_t by_kind[GPUOP_KIND_COUNT];
    size_t by_reason[GPUOP_REASON_COUNT];
    int noperands;
    struct {
        bool enabled;
        size_t expected, running;
    } operands[GPUOP_OPERAND_MAX];
};

struct gpuop_controller_stats {
    uint64_t reconciles;
    uint64_t reconcile_errors;
    uint64_t applies;             /* DaemonSet server-side applies sent */
    uint64_t apply_stages;        /* apply stages run in full (every body rendered and hashed);
                                     the other reconciles of the active policy reused the
                                     last one's verdicts, nothing having changed */
    uint64_t deletes;             /* DaemonSet deletes sent */
    uint64_t status_writes;       /* status patches sent */
    uint64_t events;              /* Events posted (queued to be posted) */
    uint64_t events_dropped;      /* Events dropped: too many waiting to be posted */
    uint64_t stranded_lists;      /* pod LISTs of violating nodes sent (stranded.c) */
    uint64_t analysis_fulls;      /* every node judged (judge.c) */
    uint64_t analysis_updates;    /* dirty nodes judged one by one instead */
    uint64_t analysis_mismatches; /* the verify oracle: records that differed */
    double last_reconcile_ms;
};

struct gpuop_controller;

int gpuop_controller_new(uv_loop_t *loop, struct gpuop_kube *kube,
                         const struct gpuop_controller_config *cfg, struct gpuop_controller **out);
int gpuop_controller_start(struct gpuop_controller *c);
/* Caches have listed once (readiness). */
bool gpuop_controller_synced(const struct gpuop_controller *c);
/* This replica leads (it writes) or not (leader election); leading
 * enqueues everything. */
void gpuop_controller_set_leader(struct gpuop_controller *c, bool leader);
void gpuop_controller_stats(const struct gpuop_controller *c, struct gpuop_controller_stats *out);
/* Borrowed; valid until the controller is closed. */
const struct gpuop_controller_summary *gpuop_controller_summary(const struct gpuop_controller *c);
/* The caches (borrowed), e.g. for informer statistics. */
const struct gpuop_caches *gpuop_controller_caches(const struct gpuop_controller *c);
/* Stops everything; cb(arg) runs when all is closed and freed. While
 * writes are allowed, a status the write pacing holds is written first
 * (at most CTL_STATUS_FLUSH_MAX_MS); writes stop with the close. */
void gpuop_controller_close(struct gpuop_controller *c, void (*cb)(void *arg), void *arg);

#endif
