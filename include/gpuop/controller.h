/*
 * controller.h - the level-triggered reconcile loop of `gpuop run`.
 *
 * Every change seen by the world's informers enqueues the GpuPolicies; one
 * reconcile at a time recomputes everything from the caches: which policy
 * is active, the DaemonSet of every operand (server-side apply, or delete
 * when disabled), the findings, and the status (written through /status,
 * only when it differs from what the cache holds).
 */
#ifndef GPUOP_CONTROLLER_H
#define GPUOP_CONTROLLER_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "gpuop/kube.h"

struct gpuop_controller_config {
    const char *namespace; /* where the operand DaemonSets live */
    bool write;            /* false while not the leader: observe only */
};

struct gpuop_controller_stats {
    uint64_t reconciles;
    uint64_t reconcile_errors;
    uint64_t applies;       /* DaemonSet server-side applies sent */
    uint64_t deletes;       /* DaemonSet deletes sent */
    uint64_t status_writes; /* status patches sent */
    uint64_t events;        /* Events posted */
    double last_reconcile_ms;
};

struct gpuop_controller;

int gpuop_controller_new(uv_loop_t *loop, struct gpuop_kube *kube,
                         const struct gpuop_controller_config *cfg, struct gpuop_controller **out);
int gpuop_controller_start(struct gpuop_controller *c);
/* Caches have listed once (readiness). */
bool gpuop_controller_synced(const struct gpuop_controller *c);
/* Allows or stops writes (leader election); enabling enqueues everything. */
void gpuop_controller_set_write(struct gpuop_controller *c, bool write);
void gpuop_controller_stats(const struct gpuop_controller *c, struct gpuop_controller_stats *out);
/* Stops everything; cb(arg) runs when all is closed and freed. */
void gpuop_controller_close(struct gpuop_controller *c, void (*cb)(void *arg), void *arg);

#endif
