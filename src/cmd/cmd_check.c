/*
 * cmd_check.c - `gpuop check`: a one-shot report. Lists the cluster with
 * the same informers the controller uses (no watch is kept: the loop stops
 * once every cache has listed), judges it against the active GpuPolicy or
 * a policy file, and prints the report. Exit 0 clean, 1 findings, 2 error;
 * a TLS verification failure is an error at once (no retry can fix it),
 * anything else is retried by the informers until CHECK_TIMEOUT_MS.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpuop/analysis.h"
#include "gpuop/cmd.h"
#include "gpuop/kube.h"
#include "gpuop/kubeconfig.h"
#include "gpuop/log.h"
#include "gpuop/policy.h"
#include "gpuop/report.h"
#include "gpuop/caches.h"
#include "gpuop/yaml.h"

#define CHECK_TIMEOUT_MS 30000

struct check {
    uv_loop_t loop;
    uv_timer_t timer;
    struct gpuop_kube *kube;
    struct gpuop_caches *world;
    int synced;
    int timed_out;
    bool fatal; /* a request failed in a way no retry can fix */
    struct gpuop_err fatal_err;
};

static void usage(FILE *f)
{
    fprintf(f, "usage: gpuop check [options]\n\n"
               "Reads the live cluster once and reports, for every GPU node, which operands\n"
               "should run there, which do, and where the operand chain is broken.\n"
               "Exit status: 0 no findings, 1 findings, 2 error.\n\n"
               "options:\n"
               "  --kubeconfig FILE   kubeconfig to use (default: $KUBECONFIG, in-cluster,\n"
               "                      ~/.kube/config)\n"
               "  --namespace NS      namespace of the operand DaemonSets (default: the pod's\n"
               "                      namespace, else gpuop-system)\n"
               "  --policy FILE       judge against this GpuPolicy file instead of the active\n"
               "                      policy in the cluster\n"
               "  --nodes SUBSTRING   show only nodes whose name contains SUBSTRING\n"
               "  -o, --output FMT    text | json | yaml (default text)\n"
               "  --color WHEN        auto | always | never (default auto: on a terminal)\n"
               "  -h, --help          this help\n");
}

static void on_synced(void *arg)
{
    struct check *ck = arg;
    ck->synced = 1;
    uv_stop(&ck->loop);
}

static void on_timeout(uv_timer_t *t)
{
    struct check *ck = t->data;
    ck->timed_out = 1;
    uv_stop(&ck->loop);
}

/* A wrong CA or an unusable certificate: waiting for the informers' retries
 * cannot help, so the check stops at the first one. */
static void on_fatal(void *arg, const struct gpuop_err *err)
{
    struct check *ck = arg;
    if (!ck->fatal)
        ck->fatal_err = *err;
    ck->fatal = true;
    uv_stop(&ck->loop);
}

static void closed_cb(void *arg)
{
    (void)arg;
}

static void world_closed(void *arg)
{
    struct check *ck = arg;
    gpuop_kube_close(ck->kube, closed_cb, NULL);
}

/* Loads the first GpuPolicy document of path into p. */
static int load_policy_file(const char *path, struct gpuop_policy *p, struct gpuop_err *err)
{
    json_t *docs = NULL;
    int rc = gpuop_yaml_load_file(path, &docs, err);
    if (rc < 0)
        return rc;
    size_t i;
    json_t *d;
    json_t *found = NULL;
    json_array_foreach(docs, i, d)
    {
        const char *kind = json_string_value(json_object_get(d, "kind"));
        if (kind && strcmp(kind, GPUOP_KIND) == 0) {
            found = d;
            break;
        }
    }
    if (!found) {
        json_decref(docs);
        return gpuop_err_set(err, GPUOP_EINVAL, NULL, "%s: no GpuPolicy document", path);
    }
    rc = gpuop_policy_parse(found, p, err);
    json_decref(docs);
    return rc;
}

int gpuop_cmd_check(int argc, char **argv)
{
    static const struct option opts[] = {{"kubeconfig", required_argument, NULL, 'k'},
                                         {"namespace", required_argument, NULL, 'n'},
                                         {"policy", required_argument, NULL, 'p'},
                                         {"nodes", required_argument, NULL, 'N'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"color", required_argument, NULL, 'c'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *kubeconfig = NULL, *ns = NULL, *policy_file = NULL, *output = "text";
    const char *color = "auto", *filter = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "ho:n:", opts, NULL)) != -1) {
        switch (c) {
        case 'k':
            kubeconfig = optarg;
            break;
        case 'n':
            ns = optarg;
            break;
        case 'p':
            policy_file = optarg;
            break;
        case 'N':
            filter = optarg;
            break;
        case 'o':
            output = optarg;
            break;
        case 'c':
            color = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc ||
        (strcmp(output, "text") && strcmp(output, "json") && strcmp(output, "yaml"))) {
        usage(stderr);
        return 2;
    }
    if (strcmp(color, "auto") && strcmp(color, "always") && strcmp(color, "never")) {
        usage(stderr);
        return 2;
    }
    if (!ns)
        ns = gpuop_cmd_default_namespace();
    gpuop_log_set_level("warn");

    struct gpuop_err err = {0};
    struct gpuop_policy policy = {0};
    bool have_policy = false;
    if (policy_file) {
        if (load_policy_file(policy_file, &policy, &err) < 0) {
            fprintf(stderr, "gpuop check: %s\n", err.message);
            return 2;
        }
        have_policy = true;
    }

    struct gpuop_kubeconfig cfg = {0};
    if (gpuop_kubeconfig_auto(kubeconfig, &cfg, &err) < 0) {
        fprintf(stderr, "gpuop check: %s\n", err.message);
        if (have_policy)
            gpuop_policy_free(&policy);
        return 2;
    }
    struct check ck = {0};
    uv_loop_init(&ck.loop);
    int rc = gpuop_kube_new(&ck.loop, &cfg, &ck.kube, &err);
    if (rc == 0)
        gpuop_kube_set_fatal(ck.kube, on_fatal, &ck);
    struct gpuop_caches_config wc = {.namespace = ns, .on_synced = on_synced, .arg = &ck};
    if (rc == 0)
        rc = gpuop_caches_new(&ck.loop, ck.kube, &wc, &ck.world);
    if (rc == 0)
        rc = gpuop_caches_start(ck.world);
    int exit_code = 2;
    if (rc < 0) {
        fprintf(stderr, "gpuop check: %s\n", err.message[0] ? err.message : gpuop_strerror(rc));
        goto out;
    }
    uv_timer_init(&ck.loop, &ck.timer);
    ck.timer.data = &ck;
    uv_timer_start(&ck.timer, on_timeout, CHECK_TIMEOUT_MS, 0);
    uv_run(&ck.loop, UV_RUN_DEFAULT);
    uv_close((uv_handle_t *)&ck.timer, NULL);
    if (ck.fatal) {
        fprintf(stderr, "gpuop check: cannot talk to the API server at %s: %s\n", cfg.server,
                ck.fatal_err.message);
        goto out;
    }
    if (!ck.synced) {
        fprintf(stderr,
                "gpuop check: could not read the cluster at %s within %d s (see the "
                "warnings above)\n",
                cfg.server, CHECK_TIMEOUT_MS / 1000);
        goto out;
    }
    const char *active = NULL;
    if (!have_policy) {
        active = gpuop_caches_active(ck.world);
        if (!active) {
            fprintf(stderr, "gpuop check: no GpuPolicy in the cluster; pass --policy FILE\n");
            goto out;
        }
        if (gpuop_policy_parse(gpuop_caches_policy(ck.world, active), &policy, &err) < 0) {
            fprintf(stderr, "gpuop check: %s\n", err.message);
            goto out;
        }
        have_policy = true;
    }
    for (int i = 0; i < policy.nproblems && i < GPUOP_POLICY_PROBLEMS_MAX; i++)
        fprintf(stderr, "warning: %s: %s\n", policy.problems[i].field, policy.problems[i].message);

    struct gpuop_caches_view v;
    struct gpuop_findings f = {0};
    rc = gpuop_caches_view(ck.world, &v);
    if (rc == 0) {
        rc = gpuop_analyze(&policy, v.nodes, v.nnodes, v.ds, v.nds, v.pods, v.npods,
                           (long long)time(NULL), &f);
        gpuop_caches_view_free(&v);
    }
    if (rc < 0) {
        fprintf(stderr, "gpuop check: %s\n", gpuop_strerror(rc));
        goto out;
    }
    struct gpuop_report_opts ro = {
        .policy_name = policy_file ? policy_file : active,
        .namespace = ns,
        .color = !strcmp(color, "always") || (!strcmp(color, "auto") && isatty(STDOUT_FILENO)),
        .node_filter = filter,
    };
    if (!strcmp(output, "text"))
        rc = gpuop_report_text(stdout, &policy, &f, &ro);
    else
        rc = gpuop_report_structured(stdout, &policy, &f, &ro, !strcmp(output, "yaml"));
    exit_code = rc < 0 ? 2 : gpuop_report_exit_code(&f);
    gpuop_findings_free(&f);
out:
    if (have_policy)
        gpuop_policy_free(&policy);
    if (ck.world)
        gpuop_caches_close(ck.world, world_closed, &ck);
    else if (ck.kube)
        gpuop_kube_close(ck.kube, closed_cb, NULL);
    uv_run(&ck.loop, UV_RUN_DEFAULT);
    uv_loop_close(&ck.loop);
    gpuop_kubeconfig_free(&cfg);
    return exit_code;
}
