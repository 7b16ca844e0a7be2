/*
 * cmd_kube.c - the API client of the one-shot commands that write to the
 * cluster (upgrade-crd, release-policy: the chart's hooks): opened from
 * the pod's ServiceAccount or a kubeconfig, one request at a time on a
 * loop of its own, each bounded by the command's deadline.
 */
#include <stdlib.h>
#include <time.h>

#include "cmd_int.h"
#include "gpuop/clock.h"
#include "gpuop/jsonarena.h"

#define NS_PER_MS 1000000L

int gpuop_cmd_kube_open(struct gpuop_cmd_kube *c, const char *kubeconfig, struct gpuop_err *err)
{
    *c = (struct gpuop_cmd_kube){0};
    bool in_cluster = !kubeconfig && getenv("KUBERNETES_SERVICE_HOST");
    int rc = in_cluster ? gpuop_kubeconfig_in_cluster(gpuop_cmd_sa_dir(), &c->cfg, err)
                        : gpuop_kubeconfig_auto(kubeconfig, &c->cfg, err);
    if (rc < 0)
        return rc;
    uv_loop_init(&c->loop);
    rc = gpuop_kube_new(&c->loop, &c->cfg, &c->k, err);
    if (rc < 0) {
        uv_run(&c->loop, UV_RUN_DEFAULT);
        uv_loop_close(&c->loop);
        gpuop_kubeconfig_free(&c->cfg);
    }
    return rc;
}

static void closed_cb(void *arg)
{
    (void)arg;
}

void gpuop_cmd_kube_close(struct gpuop_cmd_kube *c)
{
    gpuop_kube_close(c->k, closed_cb, NULL);
    uv_run(&c->loop, UV_RUN_DEFAULT);
    uv_loop_close(&c->loop);
    gpuop_kubeconfig_free(&c->cfg);
}

int gpuop_cmd_call(struct gpuop_kube *k, const struct gpuop_cmd_req *r, uint64_t deadline,
                   json_t **out, struct gpuop_err *err)
{
    uint64_t now = gpuop_clock_ms();
    if (now >= deadline)
        return gpuop_err_set(err, GPUOP_ETRANSPORT, NULL, "timed out");
    uint64_t left = deadline - now;
    long ms = (long)(left < GPUOP_CMD_REQUEST_MS ? left : GPUOP_CMD_REQUEST_MS);
    char *body = r->doc ? json_dumps(r->doc, JSON_COMPACT) : NULL;
    if (r->doc && !body)
        return gpuop_err_set(err, GPUOP_ENOMEM, NULL, "out of memory");
    struct gpuop_kube_opts o = {
        .verb = r->verb, .path = r->path, .content_type = r->ctype, .body = body, .timeout_ms = ms};
    int rc = gpuop_kube_call(k, &o, out, err);
    gpuop_json_free(body);
    return rc;
}

void gpuop_cmd_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * NS_PER_MS};
    nanosleep(&ts, NULL);
}
