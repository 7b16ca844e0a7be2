/*
 * run_metrics_int.h - the metrics of `gpuop run` (run_metrics.c): one
 * registry with every metric gpuop exports, filled from the callbacks of
 * the kube client and the controller and, at each scrape, from the
 * numbers the controller and its caches own.
 *
 * Layer: cmd
 */
#ifndef GPUOP_RUN_METRICS_INT_H
#define GPUOP_RUN_METRICS_INT_H

#include <stdbool.h>
#include <stdio.h>

#include "gpuop/controller.h"

struct gpuop_run_metrics;

/* Every metric registered, gpuop_build_info set; *out is new (free it with
 * gpuop_run_metrics_free). Returns 0 or GPUOP_ENOMEM. */
int gpuop_run_metrics_new(struct gpuop_run_metrics **out);
void gpuop_run_metrics_free(struct gpuop_run_metrics *m);

/* One finished API request (the kube client's observer). */
void gpuop_run_metrics_api(struct gpuop_run_metrics *m, const char *verb, long code);

/* One reconcile of `seconds`; latency (event to status, negative: none)
 * counts only for a successful one. */
void gpuop_run_metrics_reconciled(struct gpuop_run_metrics *m, bool ok, double seconds,
                                  double latency);

/* Copies the numbers of ctrl (borrowed; NULL while there is none) and
 * whether this replica leads, then writes the text exposition to out.
 * Returns 0 or a negative code. */
int gpuop_run_metrics_render(struct gpuop_run_metrics *m, struct gpuop_controller *ctrl,
                             bool leader, FILE *out);

#endif
