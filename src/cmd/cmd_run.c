/*
 * cmd_run.c - `gpuop run`: the controller process. Wires, on one libuv
 * loop: the kube client (its observer counts API requests), the
 * controller (caches run on every replica), the leader elector (only the
 * leader writes), the metrics (run_metrics.c) and the two HTTP listeners
 * (/metrics; /healthz and /readyz), a heartbeat timer and the signals.
 * Its flags are parsed in cli.c (gpuop_cli_run_options).
 *
 * Shutdown is one sequence (shutdown_steps): controller (cancels writes in
 * flight) -> leader elector (the leader releases the Lease so a successor
 * takes over at once) -> HTTP servers -> kube client, each step started
 * when the one before has closed. Every handle is freed in its close
 * callback, so valgrind sees no leak. Losing the lease runs the same
 * sequence (without the release) and exits 1.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_int.h"
#include "cmd_int.h"
#include "gpuop/clock.h"
#include "gpuop/controller.h"
#include "gpuop/httpd.h"
#include "gpuop/kube.h"
#include "gpuop/kubeconfig.h"
#include "gpuop/leader.h"
#include "gpuop/log.h"
#include "gpuop/trim.h"
#include "run_metrics_int.h"

#define HEARTBEAT_MS   1000
#define HEALTHY_AGE_MS 10000 /* /healthz fails when the loop missed this long */

enum { HTTP_METRICS, HTTP_HEALTH, HTTP_COUNT };

struct run {
    uv_loop_t loop;
    uv_signal_t sigterm, sigint;
    uv_timer_t heartbeat;
    uint64_t beat_ms; /* gpuop_clock_ms of the last heartbeat */
    struct gpuop_kube *kube;
    struct gpuop_controller *ctrl;
    struct gpuop_leader *leader;
    struct gpuop_httpd *http[HTTP_COUNT];
    struct gpuop_run_metrics *metrics;
    bool leader_elect;
    int stopping;
    size_t step; /* the next shutdown step */
    int exit_code;
};

const char *gpuop_cmd_sa_dir(void)
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
    snprintf(path, sizeof(path), "%s/namespace", gpuop_cmd_sa_dir());
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

static bool leading(const struct run *r)
{
    return !r->leader_elect || (r->leader && gpuop_leader_is_leader(r->leader));
}

static void on_api_request(void *arg, const char *verb, long code)
{
    struct run *r = arg;
    gpuop_run_metrics_api(r->metrics, verb, code);
}

static void on_reconciled(void *arg, const char *key, bool ok, double seconds, double latency)
{
    struct run *r = arg;
    (void)key;
    gpuop_run_metrics_reconciled(r->metrics, ok, seconds, latency);
}

/* ---- HTTP ---- */

static void on_http(void *arg, const struct gpuop_http_request *req,
                    struct gpuop_httpd_response *resp)
{
    struct run *r = arg;
    char *text = NULL;
    if (strcmp(req->path, "/metrics") == 0) {
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (!f || gpuop_run_metrics_render(r->metrics, r->ctrl, leading(r), f) < 0) {
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
        bool ok = gpuop_clock_ms() - r->beat_ms < HEALTHY_AGE_MS;
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
    r->beat_ms = gpuop_clock_ms();
}

/* ---- shutdown: one step at a time ---- */

static void shutdown_next(void *arg);

/* Each step starts closing one part, with shutdown_next as its close
 * callback, and returns true; or returns false when there is nothing to
 * close (the next step then runs at once). */
static bool close_controller(struct run *r)
{
    struct gpuop_controller *c = r->ctrl;
    if (!c)
        return false;
    r->ctrl = NULL;
    /* The close writes a status still held by the write pacing (while
     * leading), then stops writes itself. */
    gpuop_controller_close(c, shutdown_next, r);
    return true;
}

static bool close_leader(struct run *r)
{
    struct gpuop_leader *l = r->leader;
    if (!l)
        return false;
    r->leader = NULL;
    gpuop_leader_close(l, shutdown_next, r);
    return true;
}

static bool close_http(struct run *r, int slot)
{
    struct gpuop_httpd *h = r->http[slot];
    if (!h)
        return false;
    r->http[slot] = NULL;
    gpuop_httpd_close(h, shutdown_next, r);
    return true;
}

static bool close_metrics_http(struct run *r)
{
    return close_http(r, HTTP_METRICS);
}

static bool close_health_http(struct run *r)
{
    return close_http(r, HTTP_HEALTH);
}

static bool close_kube(struct run *r)
{
    struct gpuop_kube *k = r->kube;
    if (!k)
        return false;
    r->kube = NULL;
    gpuop_kube_close(k, shutdown_next, r);
    return true;
}

static bool (*const shutdown_steps[])(struct run *r) = {
    close_controller, close_leader, close_metrics_http, close_health_http, close_kube,
};

static void shutdown_next(void *arg)
{
    struct run *r = arg;
    while (r->step < sizeof(shutdown_steps) / sizeof(shutdown_steps[0]))
        if (shutdown_steps[r->step++](r))
            return; /* its close callback goes on */
}

static void shutdown_all(struct run *r)
{
    if (r->stopping++)
        return;
    uv_close((uv_handle_t *)&r->sigterm, NULL);
    uv_close((uv_handle_t *)&r->sigint, NULL);
    uv_close((uv_handle_t *)&r->heartbeat, NULL);
    shutdown_next(r);
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
        gpuop_controller_set_leader(r->ctrl, true);
}

static void on_lost(void *arg)
{
    struct run *r = arg;
    if (r->ctrl)
        gpuop_controller_set_leader(r->ctrl, false);
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

/* Creates and starts every part; 0, or a negative code with err said. */
static int start(struct run *r, const struct gpuop_run_options *o,
                 const struct gpuop_kubeconfig *cfg, const char *metrics_addr,
                 const char *health_addr, struct gpuop_err *err)
{
    int rc = gpuop_run_metrics_new(&r->metrics);
    if (rc < 0)
        return gpuop_err_set(err, rc, NULL, "cannot set up the metrics");
    rc = gpuop_kube_new(&r->loop, cfg, &r->kube, err);
    if (rc < 0)
        return rc;
    gpuop_kube_set_observer(r->kube, on_api_request, r);
    struct gpuop_controller_config cc = {.namespace = o->ns,
                                         .leader = !o->leader_elect,
                                         .verify = GPUOP_VERIFY_ORACLE,
                                         .on_reconciled = on_reconciled,
                                         .arg = r};
    rc = gpuop_controller_new(&r->loop, r->kube, &cc, &r->ctrl);
    if (rc < 0)
        return gpuop_err_set(err, rc, NULL, "cannot create the controller: %s", gpuop_strerror(rc));
    if (o->leader_elect) {
        struct gpuop_leader_config lc = {.namespace = o->lease_ns,
                                         .name = o->lease_name,
                                         .lease_ms = o->lease_ms,
                                         .renew_ms = o->renew_ms,
                                         .retry_ms = o->retry_ms,
                                         .on_started = on_leading,
                                         .on_stopped = on_lost,
                                         .arg = r};
        rc = gpuop_leader_new(&r->loop, r->kube, &lc, &r->leader);
        if (rc < 0)
            return gpuop_err_set(err, rc, NULL, "cannot set up leader election on lease %s/%s",
                                 o->lease_ns, o->lease_name);
    }
    if (!disabled(metrics_addr) &&
        (rc = start_http(r, HTTP_METRICS, metrics_addr, "metrics", err)) < 0)
        return rc;
    if (!disabled(health_addr)) {
        if (!disabled(metrics_addr) && strcmp(metrics_addr, health_addr) == 0)
            gpuop_info("health", "sharing the metrics listener");
        else if ((rc = start_http(r, HTTP_HEALTH, health_addr, "health", err)) < 0)
            return rc;
    }
    rc = gpuop_controller_start(r->ctrl);
    if (rc == 0 && r->leader)
        rc = gpuop_leader_start(r->leader);
    return rc;
}

int gpuop_cmd_run(int argc, char **argv)
{
    gpuop_trim_tune();
    struct gpuop_run_options o;
    int rc = gpuop_cli_run_options(argc, argv, &o);
    if (rc >= 0)
        return rc;

    struct gpuop_kubeconfig cfg = {0};
    struct gpuop_err err = {0};
    bool in_cluster = !o.kubeconfig && getenv("KUBERNETES_SERVICE_HOST");
    rc = in_cluster ? gpuop_kubeconfig_in_cluster(gpuop_cmd_sa_dir(), &cfg, &err)
                    : gpuop_kubeconfig_auto(o.kubeconfig, &cfg, &err);
    if (rc < 0) {
        gpuop_error("controller", "%s", err.message);
        return 2;
    }
    const char *metrics_addr = o.metrics_addr ? o.metrics_addr
                               : in_cluster   ? GPUOP_RUN_METRICS_ADDR_IN_CLUSTER
                                              : GPUOP_RUN_METRICS_ADDR;
    const char *health_addr = o.health_addr ? o.health_addr
                              : in_cluster  ? GPUOP_RUN_HEALTH_ADDR_IN_CLUSTER
                                            : GPUOP_RUN_HEALTH_ADDR;

    struct run r = {0};
    r.leader_elect = o.leader_elect;
    uv_loop_init(&r.loop);
    uv_signal_init(&r.loop, &r.sigterm);
    uv_signal_init(&r.loop, &r.sigint);
    uv_timer_init(&r.loop, &r.heartbeat);
    r.sigterm.data = r.sigint.data = r.heartbeat.data = &r;
    r.beat_ms = gpuop_clock_ms();

    rc = start(&r, &o, &cfg, metrics_addr, health_addr, &err);
    if (rc < 0) {
        gpuop_error("controller", "%s", err.message[0] ? err.message : gpuop_strerror(rc));
        r.exit_code = err.rc == GPUOP_EINVAL || err.rc == GPUOP_EIO ? 2 : 1;
        shutdown_all(&r);
    } else {
        gpuop_info("controller", "gpuop %s started: server %s, namespace %s, leader election %s",
                   GPUOP_VERSION, cfg.server, o.ns, o.leader_elect ? "on" : "off");
        uv_signal_start(&r.sigterm, on_signal, SIGTERM);
        uv_signal_start(&r.sigint, on_signal, SIGINT);
        uv_timer_start(&r.heartbeat, on_heartbeat, HEARTBEAT_MS, HEARTBEAT_MS);
    }

    uv_run(&r.loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&r.loop) != 0)
        gpuop_warn("controller", "event loop closed with handles still open");
    gpuop_run_metrics_free(r.metrics);
    gpuop_kubeconfig_free(&cfg);
    gpuop_info("controller", "stopped (exit %d)", r.exit_code);
    return r.exit_code;
}
