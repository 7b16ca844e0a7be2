/*
 * run_metrics.c - what `gpuop run` exports on /metrics: the table of every
 * metric (name, type, help, labels, buckets) as data, and how each is
 * filled (see run_metrics_int.h).
 *
 * Metrics are either updated as things happen (API requests, reconcile
 * durations, event->status latency: gpuop_run_metrics_api and
 * _reconciled, called from cmd_run.c's callbacks) or copied at scrape time
 * from the modules that own the numbers (informer statistics, the
 * controller's counters and the summary of its last analysis), so no
 * module but this one knows about the registry.
 */
#include <stdio.h>
#include <stdlib.h>

#include "gpuop/metrics.h"
#include "run_metrics_int.h"

enum metric_id {
    M_BUILD,
    M_LEADER,
    M_SYNCED,
    M_ACTIVE,
    M_GPU_NODES,
    M_COMPLETE,
    M_VIOLATIONS,
    M_STRANDED,
    M_STRANDED_LISTS,
    M_OP_ENABLED,
    M_OP_EXPECTED,
    M_OP_RUNNING,
    M_FINDINGS,
    M_RECONCILES,
    M_RECONCILE_ERRORS,
    M_RECONCILE_SECONDS,
    M_LATENCY,
    M_STATUS_WRITES,
    M_ANALYSES,
    M_ANALYSIS_MISMATCHES,
    M_APPLIES,
    M_DELETES,
    M_EVENTS,
    M_EVENTS_DROPPED,
    M_API,
    M_LISTS,
    M_RELISTS,
    M_WATCHES,
    M_RESTARTS,
    M_WATCH_EVENTS,
    M_COUNT
};

struct gpuop_run_metrics {
    struct gpuop_metrics *reg;
    struct gpuop_metric *h[M_COUNT]; /* borrowed from reg */
};

static const char *const L_OPERAND[] = {"operand"};
static const char *const L_FINDING[] = {"kind", "reason"};
static const char *const L_API[] = {"verb", "code"};
static const char *const L_RESOURCE[] = {"resource"};
static const char *const L_VERSION[] = {"version"};
static const char *const L_PASS[] = {"pass"};
static const char *const L_POLICY[] = {"policy"};
static const char *const RESOURCES[GPUOP_CACHES_KINDS] = {
    "gpupolicies", "nodes",          "daemonsets",     "pods",      "serviceaccounts",
    "events",      "resourceslices", "resourceclaims", "configmaps"};

/* Every metric, in the order /metrics lists them; a handle is indexed by
 * its enum metric_id. */
static const double reconcile_b[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                     0.25,  0.5,    1,     2.5,  5,     10};
static const double latency_b[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
static const struct gpuop_metric_def METRICS[M_COUNT] = {
    [M_BUILD] = {GPUOP_GAUGE, "gpuop_build_info",
                 "Always 1; the version label says which gpuop runs.", 1, L_VERSION},
    [M_LEADER] = {GPUOP_GAUGE, "gpuop_leader_is_leader",
                  "1 while this replica holds the leader Lease (or leader election is off), "
                  "else 0. Only the leader writes.",
                  0, NULL},
    [M_SYNCED] = {GPUOP_GAUGE, "gpuop_caches_synced", "1 once every informer has listed once.", 0,
                  NULL},
    [M_ACTIVE] = {GPUOP_GAUGE, "gpuop_active_policy",
                  "1 for the active GpuPolicy the numbers below come from; absent when none.", 1,
                  L_POLICY},
    [M_GPU_NODES] = {GPUOP_GAUGE, "gpuop_gpu_nodes",
                     "GPU nodes in the last analysis of the active policy.", 0, NULL},
    [M_COMPLETE] = {GPUOP_GAUGE, "gpuop_complete_nodes", "GPU nodes without any finding.", 0, NULL},
    [M_VIOLATIONS] = {GPUOP_GAUGE, "gpuop_ordering_violation_nodes",
                      "GPU nodes with at least one OrderingViolation finding.", 0, NULL},
    [M_STRANDED] = {GPUOP_GAUGE, "gpuop_stranded_gpu_pods",
                    "Pods requesting nvidia.com/gpu bound to nodes with an OrderingViolation "
                    "(listed at most once a minute per node).",
                    0, NULL},
    [M_STRANDED_LISTS] = {GPUOP_COUNTER, "gpuop_stranded_pod_lists_total",
                          "Pod LISTs sent for the nodes with an OrderingViolation.", 0, NULL},
    [M_OP_ENABLED] = {GPUOP_GAUGE, "gpuop_operand_enabled",
                      "1 when the operand is enabled in the policy.", 1, L_OPERAND},
    [M_OP_EXPECTED] =
        {GPUOP_GAUGE, "gpuop_operand_expected_nodes",
         "GPU nodes where the operand is expected (enabled, deploy label true, node not "
         "opted out).",
         1, L_OPERAND},
    [M_OP_RUNNING] = {GPUOP_GAUGE, "gpuop_operand_running_nodes",
                      "Nodes where a pod of the operand is Running and Ready.", 1, L_OPERAND},
    [M_FINDINGS] = {GPUOP_GAUGE, "gpuop_findings",
                    "Findings of the last analysis of the active policy, by kind and reason.", 2,
                    L_FINDING},
    [M_RECONCILES] = {GPUOP_COUNTER, "gpuop_reconciles_total", "Reconciles run (any policy).", 0,
                      NULL},
    [M_RECONCILE_ERRORS] = {GPUOP_COUNTER, "gpuop_reconcile_errors_total",
                            "Reconciles that failed and were requeued.", 0, NULL},
    [M_RECONCILE_SECONDS] = {GPUOP_HISTOGRAM, "gpuop_reconcile_duration_seconds",
                             "Duration of a reconcile, from taking the key to its last API answer.",
                             0, NULL, reconcile_b,
                             (int)(sizeof(reconcile_b) / sizeof(reconcile_b[0]))},
    [M_LATENCY] = {GPUOP_HISTOGRAM, "gpuop_event_to_status_seconds",
                   "From the first watch event that dirtied a policy (since its last successful "
                   "reconcile) to the end of the successful reconcile that handled it, status "
                   "write included.",
                   0, NULL, latency_b, (int)(sizeof(latency_b) / sizeof(latency_b[0]))},
    [M_STATUS_WRITES] = {GPUOP_COUNTER, "gpuop_status_writes_total",
                         "GpuPolicy status writes sent (leader only).", 0, NULL},
    [M_ANALYSES] = {GPUOP_COUNTER, "gpuop_analyses_total",
                    "Findings computed: full passes over every node (pass=\"full\") and nodes "
                    "judged again one by one in the kept findings (pass=\"node\").",
                    1, L_PASS},
    [M_ANALYSIS_MISMATCHES] =
        {GPUOP_COUNTER, "gpuop_analysis_mismatches_total",
         "With the verify oracle (a test build): node-by-node findings that differed "
         "from a full pass (a bug; the full pass's are used).",
         0, NULL},
    [M_APPLIES] = {GPUOP_COUNTER, "gpuop_daemonset_applies_total",
                   "Operand DaemonSet server-side applies sent.", 0, NULL},
    [M_DELETES] = {GPUOP_COUNTER, "gpuop_daemonset_deletes_total",
                   "Operand DaemonSet deletes sent.", 0, NULL},
    [M_EVENTS] = {GPUOP_COUNTER, "gpuop_events_posted_total", "Kubernetes Events posted.", 0, NULL},
    [M_EVENTS_DROPPED] = {GPUOP_COUNTER, "gpuop_events_dropped_total",
                          "Kubernetes Events dropped because too many were waiting to be posted.",
                          0, NULL},
    [M_API] = {GPUOP_COUNTER, "gpuop_api_requests_total",
               "Finished API server requests by verb (WATCH for streams) and HTTP code (0: no "
               "response: connection error or timeout).",
               2, L_API},
    [M_LISTS] = {GPUOP_COUNTER, "gpuop_informer_lists_total", "Complete LISTs per resource.", 1,
                 L_RESOURCE},
    [M_RELISTS] = {GPUOP_COUNTER, "gpuop_informer_relists_total",
                   "LISTs forced by 410 Gone per resource.", 1, L_RESOURCE},
    [M_WATCHES] = {GPUOP_COUNTER, "gpuop_informer_watches_total",
                   "Watch streams opened per resource.", 1, L_RESOURCE},
    [M_RESTARTS] = {GPUOP_COUNTER, "gpuop_informer_watch_restarts_total",
                    "Watch streams that ended in an error per resource.", 1, L_RESOURCE},
    [M_WATCH_EVENTS] = {GPUOP_COUNTER, "gpuop_informer_events_total",
                        "Watch events applied per resource.", 1, L_RESOURCE},
};

int gpuop_run_metrics_new(struct gpuop_run_metrics **out)
{
    struct gpuop_run_metrics *m = calloc(1, sizeof(*m));
    if (!m || gpuop_metrics_new(&m->reg) < 0) {
        free(m);
        return GPUOP_ENOMEM;
    }
    for (int i = 0; i < M_COUNT; i++) {
        m->h[i] = gpuop_metrics_add(m->reg, &METRICS[i]);
        if (!m->h[i]) {
            gpuop_run_metrics_free(m);
            return GPUOP_ENOMEM;
        }
    }
    const char *v[] = {GPUOP_VERSION};
    gpuop_metric_set(m->h[M_BUILD], v, 1);
    *out = m;
    return 0;
}

void gpuop_run_metrics_free(struct gpuop_run_metrics *m)
{
    if (!m)
        return;
    gpuop_metrics_free(m->reg);
    free(m);
}

/* Copies the numbers owned by other modules into the registry. */
static void refresh(struct gpuop_run_metrics *m, struct gpuop_controller *ctrl, bool leader)
{
    gpuop_metric_set(m->h[M_LEADER], NULL, leader);
    if (!ctrl)
        return;
    gpuop_metric_set(m->h[M_SYNCED], NULL, gpuop_controller_synced(ctrl));
    struct gpuop_controller_stats st;
    gpuop_controller_stats(ctrl, &st);
    gpuop_metric_set(m->h[M_RECONCILES], NULL, (double)st.reconciles);
    gpuop_metric_set(m->h[M_RECONCILE_ERRORS], NULL, (double)st.reconcile_errors);
    gpuop_metric_set(m->h[M_STATUS_WRITES], NULL, (double)st.status_writes);
    gpuop_metric_set(m->h[M_APPLIES], NULL, (double)st.applies);
    gpuop_metric_set(m->h[M_DELETES], NULL, (double)st.deletes);
    gpuop_metric_set(m->h[M_EVENTS], NULL, (double)st.events);
    gpuop_metric_set(m->h[M_EVENTS_DROPPED], NULL, (double)st.events_dropped);
    gpuop_metric_set(m->h[M_STRANDED_LISTS], NULL, (double)st.stranded_lists);
    const char *full[] = {"full"}, *node[] = {"node"};
    gpuop_metric_set(m->h[M_ANALYSES], full, (double)st.analysis_fulls);
    gpuop_metric_set(m->h[M_ANALYSES], node, (double)st.analysis_updates);
    gpuop_metric_set(m->h[M_ANALYSIS_MISMATCHES], NULL, (double)st.analysis_mismatches);

    const struct gpuop_caches *w = gpuop_controller_caches(ctrl);
    for (int k = 0; k < GPUOP_CACHES_KINDS; k++) {
        struct gpuop_informer_stats is;
        gpuop_caches_stats(w, (enum gpuop_caches_kind)k, &is);
        const char *l[] = {RESOURCES[k]};
        gpuop_metric_set(m->h[M_LISTS], l, (double)is.lists);
        gpuop_metric_set(m->h[M_RELISTS], l, (double)is.relists);
        gpuop_metric_set(m->h[M_WATCHES], l, (double)is.watches);
        gpuop_metric_set(m->h[M_RESTARTS], l, (double)is.restarts);
        gpuop_metric_set(m->h[M_WATCH_EVENTS], l, (double)is.events);
    }

    const struct gpuop_controller_summary *s = gpuop_controller_summary(ctrl);
    gpuop_metric_clear(m->h[M_ACTIVE]);
    if (s->valid) {
        const char *l[] = {s->policy};
        gpuop_metric_set(m->h[M_ACTIVE], l, 1);
    }
    gpuop_metric_set(m->h[M_GPU_NODES], NULL, s->valid ? (double)s->gpu_nodes : 0);
    gpuop_metric_set(m->h[M_COMPLETE], NULL, s->valid ? (double)s->complete_nodes : 0);
    gpuop_metric_set(m->h[M_VIOLATIONS], NULL, s->valid ? (double)s->violations : 0);
    gpuop_metric_set(m->h[M_STRANDED], NULL, s->valid ? (double)s->stranded_pods : 0);
    for (int i = 0; i < gpuop_operand_count(); i++) {
        const char *l[] = {gpuop_operand_get(i)->name};
        bool have = s->valid && i < s->noperands;
        gpuop_metric_set(m->h[M_OP_ENABLED], l, have && s->operands[i].enabled);
        gpuop_metric_set(m->h[M_OP_EXPECTED], l, have ? (double)s->operands[i].expected : 0);
        gpuop_metric_set(m->h[M_OP_RUNNING], l, have ? (double)s->operands[i].running : 0);
    }
    for (int i = 0; i < GPUOP_REASON_COUNT; i++) {
        const struct gpuop_reason_info *ri = gpuop_reason_get(i);
        const char *l[] = {gpuop_kind_name(ri->kind), ri->name};
        gpuop_metric_set(m->h[M_FINDINGS], l, s->valid ? (double)s->by_reason[i] : 0);
    }
}

int gpuop_run_metrics_render(struct gpuop_run_metrics *m, struct gpuop_controller *ctrl,
                             bool leader, FILE *out)
{
    refresh(m, ctrl, leader);
    return gpuop_metrics_render(m->reg, out);
}

void gpuop_run_metrics_api(struct gpuop_run_metrics *m, const char *verb, long code)
{
    char c[16];
    snprintf(c, sizeof(c), "%ld", code);
    const char *l[] = {verb ? verb : "", c};
    gpuop_metric_add(m->h[M_API], l, 1);
}

void gpuop_run_metrics_reconciled(struct gpuop_run_metrics *m, bool ok, double seconds,
                                  double latency)
{
    gpuop_metric_observe(m->h[M_RECONCILE_SECONDS], NULL, seconds);
    if (ok && latency >= 0)
        gpuop_metric_observe(m->h[M_LATENCY], NULL, latency);
}
