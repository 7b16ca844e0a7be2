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
#include <unistd.h>

#include "gpuop/analysis.h"
#include "gpuop/clock.h"
#include "cli_int.h"
#include "cmd_int.h"
#include "gpuop/kube.h"
#include "gpuop/kubeconfig.h"
#include "gpuop/labeling.h"
#include "gpuop/log.h"
#include "gpuop/policy.h"
#include "gpuop/report.h"
#include "gpuop/caches.h"
#include "gpuop/yaml.h"

/* --request-timeout's default: reading the cluster gives up when nothing
 * has arrived for this long (a LIST page is one request: a cluster of any
 * size that keeps answering is read to the end, a dead one is left). */
#define CHECK_TIMEOUT_MS 30000
#define TIMEOUT_TICK_MS  250 /* how often the silence is measured */
#define PROGRESS_MS      250 /* how often the progress line is redrawn */

struct check {
    uv_loop_t loop;
    uv_timer_t timer;
    struct gpuop_kube *kube;
    struct gpuop_caches *caches;
    uv_timer_t progress;
    uv_timer_t slices_timer; /* list_slices' deadline */
    bool show_progress;
    size_t seen[GPUOP_CACHES_KINDS]; /* objects listed so far, by kind */
    uint64_t timeout_ms;             /* 0: none */
    uint64_t last_arrival;           /* gpuop_clock_ms of the last object listed, or of the start */
    int synced;
    int timed_out;
    bool fatal; /* a request failed in a way no retry can fix */
    struct gpuop_err fatal_err;
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: %s check [options]\n\n"
            "Reads the live cluster once and reports, for every GPU node, which operands\n"
            "should run there, which do, and where the operand chain is broken.\n"
            "Exit status: 0 no findings, 1 findings, 2 error.\n\n",
            gpuop_cli_program());
    gpuop_cli_flags_help(f, gpuop_cli_command("check"));
}

/* Progress on a terminal (stderr only, never when it is piped): what has
 * been listed so far, redrawn in place every PROGRESS_MS. */
static void progress_draw(struct check *ck, bool done)
{
    if (done) {
        fputs("\r\033[K", stderr); /* the report follows on a clean line */
    } else {
        /* The cursor goes back to the line's start: a warning logged
         * meanwhile writes over the line instead of after it. */
        fprintf(stderr,
                "\r\033[Klisting the cluster: %zu nodes, %zu operand pods, %zu DaemonSets\r",
                ck->seen[GPUOP_CACHES_NODE], ck->seen[GPUOP_CACHES_POD], ck->seen[GPUOP_CACHES_DS]);
    }
    fflush(stderr);
}

static void on_progress(uv_timer_t *t)
{
    progress_draw(t->data, false);
}

static void on_change(void *arg, enum gpuop_caches_kind kind, const char *key, unsigned what)
{
    struct check *ck = arg;
    (void)key;
    (void)what;
    if (kind >= 0 && kind < GPUOP_CACHES_KINDS)
        ck->seen[kind]++;
    ck->last_arrival = gpuop_clock_ms();
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
    if (gpuop_clock_ms() - ck->last_arrival < ck->timeout_ms)
        return;
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

/* The slice watch listed, or failed to. */
static void on_slices(void *arg)
{
    struct check *ck = arg;
    uv_stop(&ck->loop);
}

static void on_slices_timeout(uv_timer_t *t)
{
    struct check *ck = t->data;
    ck->timed_out = 1;
    uv_stop(&ck->loop);
}

static void closed_cb(void *arg)
{
    (void)arg;
}

static void caches_closed(void *arg)
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

/* What the command line asked for. */
struct check_opts {
    const char *kubeconfig, *context, *ns, *policy_file;
    const char *output, *color, *filter;
    uint64_t timeout_ms;
    bool wide;
};

/* Reads the options into *o: 0 go on, else the exit code (--help: 0 after
 * the usage is printed, so it comes back as CHECK_EXIT_HELP). */
#define CHECK_EXIT_HELP (-1)
static int parse_options(int argc, char **argv, struct check_opts *o)
{
    const struct gpuop_cli_command *self = gpuop_cli_command("check");
    struct option opts[24];
    char shortopts[24];
    if (gpuop_cli_getopt(self, opts, sizeof(opts) / sizeof(opts[0]), shortopts, sizeof(shortopts)) <
        0)
        return 2;
    *o = (struct check_opts){.output = "text", .color = "auto", .timeout_ms = CHECK_TIMEOUT_MS};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, shortopts, opts, NULL)) != -1) {
        const struct gpuop_cli_flag *fl = gpuop_cli_flag_of(self, c);
        const char *name = fl ? fl->name : "";
        if (!strcmp(name, "kubeconfig"))
            o->kubeconfig = optarg;
        else if (!strcmp(name, "context"))
            o->context = optarg;
        else if (!strcmp(name, "namespace"))
            o->ns = optarg;
        else if (!strcmp(name, "request-timeout")) {
            if (gpuop_cli_duration(optarg, 1, &o->timeout_ms) < 0) {
                fprintf(stderr, "%s check: bad --request-timeout '%s' (e.g. 30s, 2m, 0)\n",
                        gpuop_cli_program(), optarg);
                return 2;
            }
        } else if (!strcmp(name, "policy"))
            o->policy_file = optarg;
        else if (!strcmp(name, "nodes"))
            o->filter = optarg;
        else if (!strcmp(name, "output"))
            o->output = optarg;
        else if (!strcmp(name, "color"))
            o->color = optarg;
        else if (!strcmp(name, "help")) {
            usage(stdout);
            return CHECK_EXIT_HELP;
        } else {
            usage(stderr);
            return 2;
        }
    }
    o->wide = !strcmp(o->output, "wide");
    if (optind < argc || (strcmp(o->output, "text") && !o->wide && strcmp(o->output, "json") &&
                          strcmp(o->output, "yaml"))) {
        usage(stderr);
        return 2;
    }
    if (strcmp(o->color, "auto") && strcmp(o->color, "always") && strcmp(o->color, "never")) {
        usage(stderr);
        return 2;
    }
    if (!o->ns)
        o->ns = gpuop_cmd_default_namespace();
    return 0;
}

/* Lists the cluster into ck->caches (the loop runs until every cache has
 * listed, the silence passes the timeout, or a request fails for good):
 * 0 listed, else 2 after saying why on stderr. */
static int list_cluster(struct check *ck, const struct gpuop_kubeconfig *cfg,
                        const struct check_opts *o)
{
    struct gpuop_err err = {0};
    int rc = gpuop_kube_new(&ck->loop, cfg, &ck->kube, &err);
    if (rc == 0)
        gpuop_kube_set_fatal(ck->kube, on_fatal, ck);
    struct gpuop_caches_config wc = {.namespace = o->ns,
                                     .on_change = on_change,
                                     .on_synced = on_synced,
                                     .on_slices = on_slices,
                                     .arg = ck};
    if (rc == 0)
        rc = gpuop_caches_new(&ck->loop, ck->kube, &wc, &ck->caches);
    if (rc == 0)
        rc = gpuop_caches_start(ck->caches);
    if (rc < 0) {
        fprintf(stderr, "gpuop check: %s\n", err.message[0] ? err.message : gpuop_strerror(rc));
        return 2;
    }
    uv_timer_init(&ck->loop, &ck->timer);
    ck->timer.data = ck;
    ck->timeout_ms = o->timeout_ms;
    uv_update_time(&ck->loop);
    ck->last_arrival = gpuop_clock_ms();
    if (o->timeout_ms)
        uv_timer_start(&ck->timer, on_timeout, TIMEOUT_TICK_MS, TIMEOUT_TICK_MS);
    uv_timer_init(&ck->loop, &ck->progress);
    ck->progress.data = ck;
    ck->show_progress = isatty(STDERR_FILENO);
    if (ck->show_progress)
        uv_timer_start(&ck->progress, on_progress, PROGRESS_MS, PROGRESS_MS);
    uv_run(&ck->loop, UV_RUN_DEFAULT);
    uv_close((uv_handle_t *)&ck->timer, NULL);
    uv_close((uv_handle_t *)&ck->progress, NULL);
    if (ck->show_progress)
        progress_draw(ck, true);
    if (ck->fatal) {
        fprintf(stderr, "%s check: cannot talk to the API server at %s: %s\n", gpuop_cli_program(),
                cfg->server, ck->fatal_err.message);
        return 2;
    }
    if (!ck->synced) {
        fprintf(stderr,
                "%s check: the cluster at %s sent nothing for %.1f s (see the "
                "warnings above; --request-timeout sets the limit)\n",
                gpuop_cli_program(), cfg->server, (double)o->timeout_ms / 1000);
        return 2;
    }
    return 0;
}

/* DRA (issue 42): with the DRA driver enabled in policy (borrowed), the
 * ResourceSlices are listed too, so the report says which path advertises
 * each node's GPUs and the DRA findings are judged. A cluster that does
 * not serve them (404), or sends nothing within the timeout, leaves them
 * unread: said on stderr, and no DRA finding is judged. */
static void list_slices(struct check *ck, const struct gpuop_policy *policy,
                        const struct check_opts *o)
{
    int dra = gpuop_operand_by_name("dra-driver");
    if (dra < 0 || !policy->operands[dra].enabled ||
        gpuop_caches_watch_slices(ck->caches, true) < 0)
        return;
    uv_timer_init(&ck->loop, &ck->slices_timer);
    ck->slices_timer.data = ck;
    if (o->timeout_ms)
        uv_timer_start(&ck->slices_timer, on_slices_timeout, o->timeout_ms, 0);
    ck->timed_out = 0;
    while (!gpuop_caches_slices_synced(ck->caches) && !gpuop_caches_slices_error(ck->caches) &&
           !ck->fatal && !ck->timed_out)
        uv_run(&ck->loop, UV_RUN_DEFAULT);
    uv_close((uv_handle_t *)&ck->slices_timer, NULL);
    int err = gpuop_caches_slices_error(ck->caches);
    if (!gpuop_caches_slices_synced(ck->caches))
        fprintf(stderr, "%s check: ResourceSlices not read (%s): no DRA finding is judged\n",
                gpuop_cli_program(),
                err == GPUOP_ENOTFOUND ? "the API server does not serve resource.k8s.io/v1"
                : err                  ? gpuop_strerror(err)
                                       : "no answer within --request-timeout");
}

/* What the controller's apply stage reads of the device plugin's sharing
 * ConfigMap (sharing.h), read once into policy->plugin_cm: its keys judge
 * the nodes' config labels. A failed read is a warning and judges no node. */
static void read_sharing_cm(struct check *ck, struct gpuop_policy *policy, const char *ns)
{
    int dp = gpuop_operand_by_key("devicePlugin");
    const char *name =
        dp >= 0 && policy->operands[dp].enabled ? policy->operands[dp].config_name : NULL;
    if (!name || !*name)
        return;
    const struct gpuop_kube_ref ref = {
        .group_version = "v1", .ns = ns, .resource = "configmaps", .name = name};
    char *path = gpuop_kube_path(&ref, NULL, 0);
    json_t *cm = NULL;
    struct gpuop_err err = {0};
    int rc = path ? gpuop_kube_call(ck->kube,
                                    &(struct gpuop_kube_opts){.verb = GPUOP_KUBE_GET, .path = path},
                                    &cm, &err)
                  : GPUOP_ENOMEM;
    free(path);
    if (rc == 0 || rc == GPUOP_ENOTFOUND)
        rc = gpuop_sharing_cm_read(rc == 0 ? cm : NULL, name, &policy->plugin_cm);
    json_decref(cm);
    if (rc < 0)
        fprintf(stderr, "warning: cannot read the sharing ConfigMap %s/%s: %s\n", ns, name,
                err.message[0] ? err.message : gpuop_strerror(rc));
    else if (policy->plugin_cm.state == GPUOP_SHARING_CM_TOO_BIG)
        fprintf(stderr, "warning: the sharing ConfigMap %s/%s has more keys than gpuop reads\n", ns,
                name);
}

/* Judges the listed cluster against policy (borrowed; active names the
 * cluster's policy it came from, or NULL for --policy) and prints the
 * report: the exit code. */
static int judge_and_report(struct check *ck, struct gpuop_policy *policy, const char *active,
                            const struct check_opts *o)
{
    for (int i = 0; i < policy->nproblems && i < GPUOP_POLICY_PROBLEMS_MAX; i++)
        fprintf(stderr, "warning: %s: %s\n", policy->problems[i].field,
                policy->problems[i].message);
    struct gpuop_caches_view v = {0};
    struct gpuop_records *rec = NULL;
    struct gpuop_findings *f = NULL; /* the records' view */
    long long now = gpuop_clock_wall();
    int rc = gpuop_caches_view(ck->caches, &v);
    if (rc == 0)
        rc = gpuop_caches_view_pods(ck->caches, &v);
    if (rc == 0) /* removed driver pools whose nodes still run them, as the controller's */
        (void)gpuop_labeling_pools_draining(policy, v.nodes, v.nnodes, v.ds, v.nds);
    if (rc == 0)
        rc = gpuop_records_new(&rec);
    if (rc == 0)
        rc = gpuop_records_setup(rec, policy, v.ds, v.nds, NULL, NULL);
    if (rc >= 0)
        rc = gpuop_records_judge_all(rec, &(struct gpuop_analysis_in){.nodes = v.nodes,
                                                                      .nnodes = v.nnodes,
                                                                      .pods = v.pods,
                                                                      .npods = v.npods,
                                                                      .now = now});
    if (rc == 0)
        rc = gpuop_records_view(rec, NULL, 0, now, &f);
    if (rc < 0) {
        gpuop_caches_view_free(&v);
        gpuop_records_free(rec);
        fprintf(stderr, "%s check: %s\n", gpuop_cli_program(), gpuop_strerror(rc));
        return 2;
    }
    struct gpuop_report_opts ro = {
        .policy_name = o->policy_file ? o->policy_file : active,
        .namespace = o->ns,
        .color =
            !strcmp(o->color, "always") || (!strcmp(o->color, "auto") && isatty(STDOUT_FILENO)),
        .node_filter = o->filter,
        .wide = o->wide,
        .nodes = v.nodes,
        .nnodes = v.nnodes,
        .pods = v.pods,
        .npods = v.npods,
        .upgrade =
            json_object_get(/* the leader's status.upgrade, docs/upgrade.md */
                            json_object_get(gpuop_caches_policy(ck->caches, active), "status"),
                            "upgrade"),
    };
    if (!strcmp(o->output, "text") || o->wide)
        rc = gpuop_report_text(stdout, policy, f, &ro);
    else
        rc = gpuop_report_structured(stdout, policy, f, &ro, !strcmp(o->output, "yaml"));
    int exit_code = rc < 0 ? 2 : gpuop_report_exit_code(f);
    gpuop_records_free(rec);
    gpuop_caches_view_free(&v); /* after the report: wide reads the nodes and pods */
    return exit_code;
}

int gpuop_cmd_check(int argc, char **argv)
{
    struct check_opts o;
    int exit_code = parse_options(argc, argv, &o);
    if (exit_code)
        return exit_code == CHECK_EXIT_HELP ? 0 : exit_code;
    gpuop_log_set_level("warn");

    struct gpuop_err err = {0};
    struct gpuop_policy policy = {0};
    bool have_policy = false;
    if (o.policy_file) {
        if (load_policy_file(o.policy_file, &policy, &err) < 0) {
            fprintf(stderr, "gpuop check: %s\n", err.message);
            return 2;
        }
        have_policy = true;
    }
    struct gpuop_kubeconfig cfg = {0};
    /* A context is a kubeconfig's: with one, never in-cluster. */
    if ((o.context ? gpuop_kubeconfig_load(o.kubeconfig, o.context, &cfg, &err)
                   : gpuop_kubeconfig_auto(o.kubeconfig, &cfg, &err)) < 0) {
        fprintf(stderr, "gpuop check: %s\n", err.message);
        if (have_policy)
            gpuop_policy_free(&policy);
        return 2;
    }
    struct check ck = {0};
    uv_loop_init(&ck.loop);
    exit_code = list_cluster(&ck, &cfg, &o);
    const char *active = NULL;
    if (exit_code == 0 && !have_policy) {
        active = gpuop_caches_active(ck.caches);
        if (!active) {
            fprintf(stderr, "gpuop check: no GpuPolicy in the cluster; pass --policy FILE\n");
            exit_code = 2;
        } else if (gpuop_policy_parse(gpuop_caches_policy(ck.caches, active), &policy, &err) < 0) {
            fprintf(stderr, "gpuop check: %s\n", err.message);
            exit_code = 2;
        } else {
            have_policy = true;
        }
    }
    if (exit_code == 0)
        list_slices(&ck, &policy, &o);
    if (exit_code == 0)
        read_sharing_cm(&ck, &policy, o.ns);
    if (exit_code == 0)
        exit_code = judge_and_report(&ck, &policy, active, &o);
    if (have_policy)
        gpuop_policy_free(&policy);
    if (ck.caches)
        gpuop_caches_close(ck.caches, caches_closed, &ck);
    else if (ck.kube)
        gpuop_kube_close(ck.kube, closed_cb, NULL);
    uv_run(&ck.loop, UV_RUN_DEFAULT);
    uv_loop_close(&ck.loop);
    gpuop_kubeconfig_free(&cfg);
    return exit_code;
}
