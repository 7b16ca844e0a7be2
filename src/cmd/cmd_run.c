/*
 * cmd_run.c - `gpuop run`: the controller process. Wires, on one libuv
 * loop: the kube client (its observer counts API requests), the
 * controller (caches run on every replica), the leader elector (only the
 * leader writes), the metrics registry and the two HTTP listeners
 * (/metrics; /healthz and /readyz), a heartbeat timer and the signals.
 *
 * Metrics are either updated as things happen (API requests, reconcile
 * durations, event->status latency) or copied at scrape time from the
 * modules that own the numbers (informer statistics, the controller's
 * counters and the summary of its last analysis), so no module but this
 * one knows about the registry.
 *
 * Shutdown is one chain of close callbacks: controller (cancels writes in
 * flight) -> leader elector (the leader releases the Lease so a successor
 * takes over at once) -> HTTP servers -> kube client. Every handle is freed
 * in its close callback, so valgrind sees no leak. Losing the lease runs
 * the same chain (without the release) and exits 1.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_int.h"
#include "cmd_int.h"
#include "gpuop/controller.h"
#include "gpuop/httpd.h"
#include "gpuop/kube.h"
#include "gpuop/kubeconfig.h"
#include "gpuop/leader.h"
#include "gpuop/log.h"
#include "gpuop/trim.h"
#include "gpuop/metrics.h"

#define HEARTBEAT_MS     1000
#define HEALTHY_AGE_MS   10000 /* /healthz fails when the loop missed this long */
#define DEFAULT_METRICS  "127.0.0.1:8080"
#define DEFAULT_HEALTH   "127.0.0.1:8081"
#define INCLUSTER_METRIC ":8080"
#define INCLUSTER_HEALTH ":8081"

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

struct metrics {
    struct gpuop_metrics *reg;
    struct gpuop_metric *h[M_COUNT]; /* borrowed from reg */
};

struct run {
    uv_loop_t loop;
    uv_signal_t sigterm, sigint;
    uv_timer_t heartbeat;
    uint64_t beat_ns;
    struct gpuop_kube *kube;
    struct gpuop_controller *ctrl;
    struct gpuop_leader *leader;
    struct gpuop_httpd *http[2];
    struct metrics m;
    bool leader_elect;
    int stopping;
    int exit_code;
};

static void usage(FILE *f)
{
    fprintf(f, "usage: gpuop run [options]\n\n"
               "Runs the controller: watches GpuPolicies, Nodes and the operand DaemonSets and\n"
               "Pods, keeps the DaemonSets in line with the active policy, and writes findings\n"
               "into its status.\n\n"
               "options:\n"
               "  --kubeconfig FILE   kubeconfig to use (default: $KUBECONFIG, in-cluster,\n"
               "                      ~/.kube/config)\n"
               "  --namespace NS      namespace of the operand DaemonSets (default: the pod's\n"
               "                      namespace, else gpuop-system)\n"
               "  --log-level LEVEL   debug | info | warn | error (default info)\n"
               "  --log-format FMT    text | json (default text)\n"
               "  --metrics-addr A    host:port serving /metrics (default " DEFAULT_METRICS ",\n"
               "                      in-cluster " INCLUSTER_METRIC "); \"0\" or \"\" disables\n"
               "  --health-addr A     host:port serving /healthz and /readyz (default\n"
               "                      " DEFAULT_HEALTH ", in-cluster " INCLUSTER_HEALTH
               "); \"0\" or \"\" disables\n"
               "  --leader-elect[=BOOL]             elect a leader on a Lease; only the\n"
               "                                    leader writes (default true)\n"
               "  --leader-elect-lease-duration D   default 15s\n"
               "  --leader-elect-renew-deadline D   default 10s\n"
               "  --leader-elect-retry-period D     default 2s\n"
               "  --leader-elect-namespace NS       namespace of the Lease (default --namespace)\n"
               "  --leader-elect-id NAME            Lease name (default gpuop-leader)\n"
               "  -h, --help          this help\n\n"
               "Durations: 15s, 1500ms, 1m or a number of seconds.\n");
}

/* The service-account folder: GPUOP_SA_DIR (for tests) or the pod's. */
static const char *sa_dir(void)
{
    const char *d = getenv("GPUOP_SA_DIR");
    return d && *d ? d : GPUOP_SA_DIR;
}

const char *gpuop_cmd_default_namespace(void)
{
    static char ns[254];
    const char *env = getenv("POD_NAMESPACE");
    if (env && *env)
        return env;
    char path[4096];
    snprintf(path, sizeof(path), "%s/namespace", sa_dir());
    FILE *f = fopen(path, "r");
    if (f) {
        size_t n = fread(ns, 1, sizeof(ns) - 1, f);
        fclose(f);
        ns[n] = 0;
        ns[strcspn(ns, " \t\r\n")] = 0;
        if (ns[0])
            return ns;
    }
    return "gpuop-system";
}

static int parse_bool(const char *s, bool *out)
{
    if (!s || strcmp(s, "true") == 0 || strcmp(s, "1") == 0)
        *out = true;
    else if (strcmp(s, "false") == 0 || strcmp(s, "0") == 0)
        *out = false;
    else
        return GPUOP_EINVAL;
    return 0;
}

/* ---- metrics ---- */

static const char *const L_OPERAND[] = {"operand"};
static const char *const L_FINDING[] = {"kind", "reason"};
static const char *const L_API[] = {"verb", "code"};
static const char *const L_RESOURCE[] = {"resource"};
static const char *const L_VERSION[] = {"version"};
static const char *const L_POLICY[] = {"policy"};
static const char *const RESOURCES[GPUOP_CACHES_KINDS] = {
    "gpupolicies", "nodes", "daemonsets", "pods", "serviceaccounts", "events"};

/* Every metric, in the order /metrics lists them; a handle is indexed by
 * its enum metric_id. */
struct metric_def {
    enum gpuop_metric_type type;
    const char *name, *help;
    int nlabels;
    const char *const *labels;
    const double *buckets;
    int nbuckets;
};

static const double reconcile_b[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                     0.25,  0.5,    1,     2.5,  5,     10};
static const double latency_b[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
static const struct metric_def METRICS[M_COUNT] = {
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

static int metrics_init(struct metrics *m)
{
    if (gpuop_metrics_new(&m->reg) < 0)
        return GPUOP_ENOMEM;
    for (int i = 0; i < M_COUNT; i++) {
        const struct metric_def *d = &METRICS[i];
        m->h[i] = gpuop_metrics_add(m->reg, d->type, d->name, d->help, d->nlabels, d->labels,
                                    d->buckets, d->nbuckets);
        if (!m->h[i])
            return GPUOP_ENOMEM;
    }
    const char *v[] = {GPUOP_VERSION};
    gpuop_metric_set(m->h[M_BUILD], v, 1);
    return 0;
}

/* Copies the numbers owned by other modules into the registry. */
static void metrics_refresh(struct run *r)
{
    struct metrics *m = &r->m;
    gpuop_metric_set(m->h[M_LEADER], NULL,
                     !r->leader_elect || (r->leader && gpuop_leader_is_leader(r->leader)));
    if (!r->ctrl)
        return;
    gpuop_metric_set(m->h[M_SYNCED], NULL, gpuop_controller_synced(r->ctrl));
    struct gpuop_controller_stats st;
    gpuop_controller_stats(r->ctrl, &st);
    gpuop_metric_set(m->h[M_RECONCILES], NULL, (double)st.reconciles);
    gpuop_metric_set(m->h[M_RECONCILE_ERRORS], NULL, (double)st.reconcile_errors);
    gpuop_metric_set(m->h[M_STATUS_WRITES], NULL, (double)st.status_writes);
    gpuop_metric_set(m->h[M_APPLIES], NULL, (double)st.applies);
    gpuop_metric_set(m->h[M_DELETES], NULL, (double)st.deletes);
    gpuop_metric_set(m->h[M_EVENTS], NULL, (double)st.events);
    gpuop_metric_set(m->h[M_EVENTS_DROPPED], NULL, (double)st.events_dropped);
    gpuop_metric_set(m->h[M_STRANDED_LISTS], NULL, (double)st.stranded_lists);

    const struct gpuop_caches *w = gpuop_controller_world(r->ctrl);
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

    const struct gpuop_controller_summary *s = gpuop_controller_summary(r->ctrl);
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

static void on_api_request(void *arg, const char *verb, long code)
{
    struct run *r = arg;
    char c[16];
    snprintf(c, sizeof(c), "%ld", code);
    const char *l[] = {verb ? verb : "", c};
    gpuop_metric_add(r->m.h[M_API], l, 1);
}

static void on_reconciled(void *arg, const char *key, bool ok, double seconds, double latency)
{
    struct run *r = arg;
    gpuop_metric_observe(r->m.h[M_RECONCILE_SECONDS], NULL, seconds);
    if (ok && latency >= 0)
        gpuop_metric_observe(r->m.h[M_LATENCY], NULL, latency);
}

/* ---- HTTP ---- */

static void on_http(void *arg, const struct gpuop_http_request *req,
                    struct gpuop_httpd_response *resp)
{
    struct run *r = arg;
    char *text = NULL;
    if (strcmp(req->path, "/metrics") == 0) {
        metrics_refresh(r);
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (!f || gpuop_metrics_render(r->m.reg, f) < 0) {
            if (f)
                fclose(f);
            free(text);
            resp->code = 500;
            return;
        }
        fclose(f);
        resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
        resp->body = text;
        resp->len = len;
        return;
    }
    const char *msg;
    if (strcmp(req->path, "/healthz") == 0 || strcmp(req->path, "/livez") == 0) {
        uint64_t age_ms = (uv_hrtime() - r->beat_ns) / 1000000;
        bool ok = age_ms < HEALTHY_AGE_MS;
        resp->code = ok ? 200 : 503;
        msg = ok ? "ok\n" : "event loop stalled\n";
    } else if (strcmp(req->path, "/readyz") == 0) {
        bool ok = r->ctrl && gpuop_controller_synced(r->ctrl) && !r->stopping;
        resp->code = ok ? 200 : 503;
        msg = ok ? "ok\n" : r->stopping ? "shutting down\n" : "caches not synced\n";
    } else {
        resp->code = 404;
        msg = "not found\n";
    }
    resp->body = strdup(msg);
    resp->len = resp->body ? strlen(resp->body) : 0;
}

static void on_heartbeat(uv_timer_t *t)
{
    struct run *r = t->data;
    r->beat_ns = uv_hrtime();
}

/* ---- shutdown chain ---- */

static void kube_closed(void *arg)
{
    (void)arg;
}

static void http_closed(void *arg)
{
    struct run *r = arg;
    for (int i = 0; i < 2; i++)
        if (r->http[i]) {
            struct gpuop_httpd *h = r->http[i];
            r->http[i] = NULL;
            gpuop_httpd_close(h, http_closed, r);
            return;
        }
    if (r->kube) {
        struct gpuop_kube *k = r->kube;
        r->kube = NULL;
        gpuop_kube_close(k, kube_closed, r);
    }
}

static void leader_closed(void *arg)
{
    struct run *r = arg;
    r->leader = NULL;
    http_closed(r);
}

static void ctrl_closed(void *arg)
{
    struct run *r = arg;
    r->ctrl = NULL;
    if (r->leader)
        gpuop_leader_close(r->leader, leader_closed, r);
    else
        leader_closed(r);
}

static void shutdown_all(struct run *r)
{
    if (r->stopping++)
        return;
    uv_close((uv_handle_t *)&r->sigterm, NULL);
    uv_close((uv_handle_t *)&r->sigint, NULL);
    uv_close((uv_handle_t *)&r->heartbeat, NULL);
    if (r->ctrl) {
        /* The close writes a status still held by the write pacing (while
         * leading), then stops writes itself. */
        gpuop_controller_close(r->ctrl, ctrl_closed, r);
    } else {
        ctrl_closed(r);
    }
}

static void on_signal(uv_signal_t *h, int signum)
{
    struct run *r = h->data;
    if (r->stopping) {
        gpuop_warn("controller", "second signal: exiting at once");
        exit(1);
    }
    gpuop_info("controller", "signal %d: shutting down", signum);
    shutdown_all(r);
}

static void on_leading(void *arg)
{
    struct run *r = arg;
    gpuop_info("controller", "leading: writes enabled");
    if (r->ctrl)
        gpuop_controller_set_write(r->ctrl, true);
}

static void on_lost(void *arg)
{
    struct run *r = arg;
    if (r->ctrl)
        gpuop_controller_set_write(r->ctrl, false);
    gpuop_error("controller", "leadership lost: writes stopped; exiting");
    r->exit_code = 1;
    shutdown_all(r);
}

static int start_http(struct run *r, int slot, const char *addr, const char *name,
                      struct gpuop_err *err)
{
    struct gpuop_httpd_config hc = {.addr = addr, .name = name, .handler = on_http, .arg = r};
    int rc = gpuop_httpd_new(&r->loop, &hc, &r->http[slot], err);
    if (rc == 0)
        gpuop_info(name, "serving on %s (port %d)", addr, gpuop_httpd_port(r->http[slot]));
    return rc;
}

static bool disabled(const char *addr)
{
    return !addr || !*addr || strcmp(addr, "0") == 0;
}

int gpuop_cmd_run(int argc, char **argv)
{
    enum { O_METRICS = 256, O_HEALTH, O_LE, O_LE_LEASE, O_LE_RENEW, O_LE_RETRY, O_LE_NS, O_LE_ID };
    gpuop_trim_tune();
    static const struct option opts[] = {
        {"kubeconfig", required_argument, NULL, 'k'},
        {"namespace", required_argument, NULL, 'n'},
        {"log-level", required_argument, NULL, 'l'},
        {"log-format", required_argument, NULL, 'f'},
        {"metrics-addr", required_argument, NULL, O_METRICS},
        {"health-addr", required_argument, NULL, O_HEALTH},
        {"leader-elect", optional_argument, NULL, O_LE},
        {"leader-elect-lease-duration", required_argument, NULL, O_LE_LEASE},
        {"leader-elect-renew-deadline", required_argument, NULL, O_LE_RENEW},
        {"leader-elect-retry-period", required_argument, NULL, O_LE_RETRY},
        {"leader-elect-namespace", required_argument, NULL, O_LE_NS},
        {"leader-elect-id", required_argument, NULL, O_LE_ID},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *kubeconfig = NULL, *ns = NULL, *metrics_addr = NULL, *health_addr = NULL;
    const char *le_ns = NULL, *le_id = "gpuop-leader";
    bool le = true;
    uint64_t lease_ms = GPUOP_LEADER_LEASE_MS, renew_ms = GPUOP_LEADER_RENEW_MS,
             retry_ms = GPUOP_LEADER_RETRY_MS;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "hn:", opts, NULL)) != -1) {
        switch (c) {
        case 'k':
            kubeconfig = optarg;
            break;
        case 'n':
            ns = optarg;
            break;
        case 'l':
            if (gpuop_log_set_level(optarg) < 0) {
                fprintf(stderr, "gpuop run: unknown log level '%s'\n", optarg);
                return 2;
            }
            break;
        case 'f':
            if (gpuop_log_set_format(optarg) < 0) {
                fprintf(stderr, "gpuop run: unknown log format '%s'\n", optarg);
                return 2;
            }
            break;
        case O_METRICS:
            metrics_addr = optarg;
            break;
        case O_HEALTH:
            health_addr = optarg;
            break;
        case O_LE:
            if (parse_bool(optarg, &le) < 0) {
                fprintf(stderr, "gpuop run: --leader-elect wants true or false\n");
                return 2;
            }
            break;
        case O_LE_LEASE:
        case O_LE_RENEW:
        case O_LE_RETRY:
            if (gpuop_cli_duration(optarg, 0,
                                   c == O_LE_LEASE   ? &lease_ms
                                   : c == O_LE_RENEW ? &renew_ms
                                                     : &retry_ms) < 0) {
                fprintf(stderr, "gpuop run: bad duration '%s'\n", optarg);
                return 2;
            }
            break;
        case O_LE_NS:
            le_ns = optarg;
            break;
        case O_LE_ID:
            le_id = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "gpuop run: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (le && gpuop_leader_check_timing(lease_ms, renew_ms, retry_ms) < 0) {
        fprintf(stderr, "gpuop run: leader election wants lease duration > renew deadline > "
                        "1.2 x retry period\n");
        return 2;
    }
    if (!ns)
        ns = gpuop_cmd_default_namespace();
    if (!le_ns)
        le_ns = ns;

    struct gpuop_kubeconfig cfg = {0};
    struct gpuop_err err = {0};
    bool in_cluster = !kubeconfig && getenv("KUBERNETES_SERVICE_HOST");
    int rc = in_cluster ? gpuop_kubeconfig_in_cluster(sa_dir(), &cfg, &err)
                        : gpuop_kubeconfig_auto(kubeconfig, &cfg, &err);
    if (rc < 0) {
        gpuop_error("controller", "%s", err.message);
        return 2;
    }
    if (!metrics_addr)
        metrics_addr = in_cluster ? INCLUSTER_METRIC : DEFAULT_METRICS;
    if (!health_addr)
        health_addr = in_cluster ? INCLUSTER_HEALTH : DEFAULT_HEALTH;

    struct run r = {0};
    r.leader_elect = le;
    uv_loop_init(&r.loop);
    uv_signal_init(&r.loop, &r.sigterm);
    uv_signal_init(&r.loop, &r.sigint);
    uv_timer_init(&r.loop, &r.heartbeat);
    r.sigterm.data = r.sigint.data = r.heartbeat.data = &r;
    r.beat_ns = uv_hrtime();

    rc = metrics_init(&r.m);
    if (rc < 0)
        gpuop_err_set(&err, rc, NULL, "cannot set up the metrics");
    if (rc == 0)
        rc = gpuop_kube_new(&r.loop, &cfg, &r.kube, &err);
    if (rc == 0) {
        gpuop_kube_set_observer(r.kube, on_api_request, &r);
        struct gpuop_controller_config cc = {
            .namespace = ns, .write = !le, .on_reconciled = on_reconciled, .arg = &r};
        rc = gpuop_controller_new(&r.loop, r.kube, &cc, &r.ctrl);
        if (rc < 0)
            gpuop_err_set(&err, rc, NULL, "cannot create the controller: %s", gpuop_strerror(rc));
    }
    if (rc == 0 && le) {
        struct gpuop_leader_config lc = {.namespace = le_ns,
                                         .name = le_id,
                                         .lease_ms = lease_ms,
                                         .renew_ms = renew_ms,
                                         .retry_ms = retry_ms,
                                         .on_started = on_leading,
                                         .on_stopped = on_lost,
                                         .arg = &r};
        rc = gpuop_leader_new(&r.loop, r.kube, &lc, &r.leader);
        if (rc < 0)
            gpuop_err_set(&err, rc, NULL, "cannot set up leader election on lease %s/%s", le_ns,
                          le_id);
    }
    if (rc == 0 && !disabled(metrics_addr))
        rc = start_http(&r, 0, metrics_addr, "metrics", &err);
    if (rc == 0 && !disabled(health_addr)) {
        if (!disabled(metrics_addr) && strcmp(metrics_addr, health_addr) == 0)
            gpuop_info("health", "sharing the metrics listener");
        else
            rc = start_http(&r, 1, health_addr, "health", &err);
    }
    if (rc == 0)
        rc = gpuop_controller_start(r.ctrl);
    if (rc == 0 && r.leader)
        rc = gpuop_leader_start(r.leader);
    if (rc < 0) {
        gpuop_error("controller", "%s", err.message[0] ? err.message : gpuop_strerror(rc));
        r.exit_code = err.rc == GPUOP_EINVAL || err.rc == GPUOP_EIO ? 2 : 1;
        shutdown_all(&r);
    } else {
        gpuop_info("controller", "gpuop %s started: server %s, namespace %s, leader election %s",
                   GPUOP_VERSION, cfg.server, ns, le ? "on" : "off");
        uv_signal_start(&r.sigterm, on_signal, SIGTERM);
        uv_signal_start(&r.sigint, on_signal, SIGINT);
        uv_timer_start(&r.heartbeat, on_heartbeat, HEARTBEAT_MS, HEARTBEAT_MS);
    }

    uv_run(&r.loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&r.loop) != 0)
        gpuop_warn("controller", "event loop closed with handles still open");
    gpuop_metrics_free(r.m.reg);
    gpuop_kubeconfig_free(&cfg);
    gpuop_info("controller", "stopped (exit %d)", r.exit_code);
    return r.exit_code;
}
