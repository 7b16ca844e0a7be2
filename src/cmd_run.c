/*
 * cmd_run.c - `gpuop run`: the controller process. Wires the kube client,
 * the controller and signal handling on one libuv loop; shutdown closes
 * everything in order (controller, then client) so every handle is freed
 * in its close callback and valgrind sees no leak.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuop/cmd.h"
#include "gpuop/controller.h"
#include "gpuop/kube.h"
#include "gpuop/kubeconfig.h"
#include "gpuop/log.h"

struct run {
    uv_loop_t loop;
    uv_signal_t sigterm, sigint;
    struct gpuop_kube *kube;
    struct gpuop_controller *ctrl;
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
               "  -h, --help          this help\n");
}

const char *gpuop_cmd_default_namespace(void)
{
    static char ns[254];
    const char *env = getenv("POD_NAMESPACE");
    if (env && *env)
        return env;
    FILE *f = fopen(GPUOP_SA_DIR "/namespace", "r");
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

static void kube_closed(void *arg)
{
    (void)arg;
}

static void ctrl_closed(void *arg)
{
    struct run *r = arg;
    r->ctrl = NULL;
    gpuop_kube_close(r->kube, kube_closed, r);
    r->kube = NULL;
}

static void on_signal(uv_signal_t *h, int signum)
{
    struct run *r = h->data;
    if (r->stopping++) {
        gpuop_warn(NULL, "second signal: exiting at once");
        exit(1);
    }
    gpuop_info(NULL, "signal %d: shutting down", signum);
    uv_close((uv_handle_t *)&r->sigterm, NULL);
    uv_close((uv_handle_t *)&r->sigint, NULL);
    gpuop_controller_close(r->ctrl, ctrl_closed, r);
}

int gpuop_cmd_run(int argc, char **argv)
{
    static const struct option opts[] = {{"kubeconfig", required_argument, NULL, 'k'},
                                         {"namespace", required_argument, NULL, 'n'},
                                         {"log-level", required_argument, NULL, 'l'},
                                         {"log-format", required_argument, NULL, 'f'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *kubeconfig = NULL, *ns = NULL;
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
    if (!ns)
        ns = gpuop_cmd_default_namespace();

    struct gpuop_kubeconfig cfg = {0};
    struct gpuop_err err = {0};
    if (gpuop_kubeconfig_auto(kubeconfig, &cfg, &err) < 0) {
        gpuop_error(NULL, "%s", err.message);
        return 2;
    }
    struct run r = {0};
    uv_loop_init(&r.loop);
    int rc = gpuop_kube_new(&r.loop, &cfg, &r.kube, &err);
    if (rc == 0) {
        struct gpuop_controller_config cc = {.namespace = ns, .write = true};
        rc = gpuop_controller_new(&r.loop, r.kube, &cc, &r.ctrl);
        if (rc < 0)
            gpuop_err_set(&err, rc, NULL, "cannot create the controller: %s", gpuop_strerror(rc));
    }
    if (rc == 0)
        rc = gpuop_controller_start(r.ctrl);
    if (rc < 0) {
        gpuop_error(NULL, "%s", err.message[0] ? err.message : gpuop_strerror(rc));
        if (r.ctrl)
            gpuop_controller_close(r.ctrl, ctrl_closed, &r);
        else if (r.kube)
            gpuop_kube_close(r.kube, kube_closed, &r);
        uv_run(&r.loop, UV_RUN_DEFAULT);
        uv_loop_close(&r.loop);
        gpuop_kubeconfig_free(&cfg);
        return 1;
    }
    gpuop_info(NULL, "gpuop %s started: server %s, namespace %s", GPUOP_VERSION, cfg.server, ns);
    uv_signal_init(&r.loop, &r.sigterm);
    uv_signal_init(&r.loop, &r.sigint);
    r.sigterm.data = r.sigint.data = &r;
    uv_signal_start(&r.sigterm, on_signal, SIGTERM);
    uv_signal_start(&r.sigint, on_signal, SIGINT);

    uv_run(&r.loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&r.loop) != 0)
        gpuop_warn(NULL, "event loop closed with handles still open");
    gpuop_kubeconfig_free(&cfg);
    gpuop_info(NULL, "stopped");
    return r.exit_code;
}
