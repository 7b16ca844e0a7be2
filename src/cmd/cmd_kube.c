/*
 * cmd_kube.c - the API client of the one-shot commands that write to the
 * cluster (upgrade-crd, release-policy: the chart's hooks): their options,
 * the client opened from the pod's ServiceAccount or a kubeconfig, one
 * request at a time on a loop of its own, each bounded by the command's
 * deadline.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_int.h"
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

int gpuop_cmd_hook_options(const char *cmd, int argc, char **argv, bool positional,
                           void (*usage)(FILE *), struct gpuop_cmd_hook_opts *o)
{
    const struct gpuop_cli_command *self = gpuop_cli_command(cmd);
    struct option opts[8];
    char shortopts[8];
    if (gpuop_cli_getopt(self, opts, sizeof(opts) / sizeof(opts[0]), shortopts, sizeof(shortopts)) <
        0)
        return 2;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, shortopts, opts, NULL)) != -1) {
        const struct gpuop_cli_flag *fl = gpuop_cli_flag_of(self, c);
        const char *name = fl ? fl->name : "";
        if (!strcmp(name, "kubeconfig")) {
            o->kubeconfig = optarg;
        } else if (!strcmp(name, "filename")) {
            o->file = optarg;
        } else if (!strcmp(name, "timeout")) {
            if (gpuop_cli_duration(optarg, 0, &o->timeout_ms) < 0) {
                fprintf(stderr, "%s %s: bad --timeout '%s' (e.g. 30s, 5m)\n", gpuop_cli_program(),
                        cmd, optarg);
                return 2;
            }
        } else if (!strcmp(name, "help")) {
            usage(stdout);
            return GPUOP_CMD_HELP;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (positional && optind == argc - 1 && *argv[optind])
        o->positional = argv[optind++];
    if (optind < argc || (positional && !o->positional)) {
        usage(stderr);
        return 2;
    }
    return 0;
}
