/*
 * cli.c - the table of commands and flags (cli_int.h), subcommand dispatch and
 * the top-level help. Everything that names a flag of check or completion
 * is drawn from here: their getopt_long options and --help, and the
 * completion scripts of every command; and run's whole argument parsing
 * (gpuop_cli_run_options), defaults and checks included. render parses by
 * hand; its row must list what it parses (test/unit/test_cli.c runs each
 * flag of every row through its command).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_int.h"
#include "cmd_int.h"
#include "gpuop/error.h"
#include "gpuop/kube.h"
#include "gpuop/leader.h"
#include "gpuop/log.h"

#define F       GPUOP_CLI_FILE
#define NUM_(x) #x
#define NUM(x)  NUM_(x) /* a limit's value, in a help text */

static const struct gpuop_cli_flag kubeconfig_flag = {
    "kubeconfig", 0, required_argument,
    "FILE",       F, "kubeconfig to use (default: $KUBECONFIG, in-cluster,\n~/.kube/config)"};

static const struct gpuop_cli_flag run_flags[] = {
    kubeconfig_flag,
    {"namespace", 'n', required_argument, "NS", GPUOP_CLI_NAMESPACE,
     "namespace of the operand DaemonSets (default: the pod's\nnamespace, else gpuop-system)"},
    {"log-level", 0, required_argument, "LEVEL", "debug info warn error",
     "debug | info | warn | error (default info)"},
    {"log-format", 0, required_argument, "FMT", "text json", "text | json (default text)"},
    {"metrics-addr", 0, required_argument, "ADDR", NULL,
     "host:port serving /metrics (default " GPUOP_RUN_METRICS_ADDR
     ",\nin-cluster " GPUOP_RUN_METRICS_ADDR_IN_CLUSTER "); \"0\" or \"\" disables"},
    {"health-addr", 0, required_argument, "ADDR", NULL,
     "host:port serving /healthz and /readyz (default\n" GPUOP_RUN_HEALTH_ADDR
     ", in-cluster " GPUOP_RUN_HEALTH_ADDR_IN_CLUSTER "); \"0\" or \"\"\ndisables"},
    {"leader-elect", 0, optional_argument, "BOOL", "true false",
     "elect a leader on a Lease; only the leader writes\n(default true)"},
    {"leader-elect-lease-duration", 0, required_argument, "D", NULL,
     "lease duration (default 15s)"},
    {"leader-elect-renew-deadline", 0, required_argument, "D", NULL,
     "renew deadline (default 10s)"},
    {"leader-elect-retry-period", 0, required_argument, "D", NULL, "retry period (default 2s)"},
    {"leader-elect-namespace", 0, required_argument, "NS", GPUOP_CLI_NAMESPACE,
     "namespace of the Lease (default --namespace)"},
    {"leader-elect-id", 0, required_argument, "NAME", NULL,
     "Lease name (default " GPUOP_RUN_LEASE_NAME ")"},
    {"help", 'h', no_argument, NULL, NULL, "this help"},
    {NULL, 0, 0, NULL, NULL, NULL}};

static const struct gpuop_cli_flag check_flags[] = {
    kubeconfig_flag,
    {"context", 0, required_argument, "NAME", GPUOP_CLI_CONTEXT,
     "kubeconfig context to use (default: its current-context)"},
    {"namespace", 'n', required_argument, "NS", GPUOP_CLI_NAMESPACE,
     "namespace of the operand DaemonSets (default: the pod's\nnamespace, else gpuop-system)"},
    {"request-timeout", 0, required_argument, "D", NULL,
     "give up when the cluster has sent nothing for D (\"30s\",\n\"2m\"; \"0\": never; default "
     "30s)"},
    {"policy", 0, required_argument, "FILE", F,
     "judge against this GpuPolicy file instead of the active\npolicy in the cluster"},
    {"nodes", 0, required_argument, "SUBSTRING", NULL,
     "show only nodes whose name contains SUBSTRING"},
    {"output", 'o', required_argument, "FMT", "text wide json yaml",
     "text | wide | json | yaml (default text; wide adds each\nnode's taints and operand pods)"},
    {"color", 0, required_argument, "WHEN", "auto always never",
     "auto | always | never (default auto: on a terminal)"},
    {"help", 'h', no_argument, NULL, NULL, "this help"},
    {NULL, 0, 0, NULL, NULL, NULL}};

static const struct gpuop_cli_flag render_flags[] = {
    {"filename", 'f', required_argument, "FILE", F, "the GpuPolicy file"},
    {"namespace", 'n', required_argument, "NS", GPUOP_CLI_NAMESPACE, "namespace of the DaemonSets"},
    {"strict", 0, no_argument, NULL, NULL, "fail on any problem in the policy"},
    {"help", 'h', no_argument, NULL, NULL, "this help"},
    {NULL, 0, 0, NULL, NULL, NULL}};

static const struct gpuop_cli_flag upgrade_crd_flags[] = {
    kubeconfig_flag,
    {"filename", 'f', required_argument, "FILE", F,
     "the CRDs to apply (YAML; - for stdin): the chart mounts\nits crds/gpupolicy.yaml"},
    {"timeout", 0, required_argument, "D", NULL,
     "give up after D (\"30s\", \"2m\"; default 2m), waiting\nfor Established included"},
    {"help", 'h', no_argument, NULL, NULL, "this help"},
    {NULL, 0, 0, NULL, NULL, NULL}};

static const struct gpuop_cli_flag release_policy_flags[] = {
    kubeconfig_flag,
    {"timeout", 0, required_argument, "D", NULL,
     "give up after D (\"30s\", \"5m\"; default 5m) with the nodes\nstill held named"},
    {"help", 'h', no_argument, NULL, NULL, "this help"},
    {NULL, 0, 0, NULL, NULL, NULL}};

static const struct gpuop_cli_flag completion_flags[] = {
    {"help", 'h', no_argument, NULL, NULL, "this help"}, {NULL, 0, 0, NULL, NULL, NULL}};

#undef F

static int cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    const char *curl, *tls;
    gpuop_kube_lib_versions(&curl, &tls);
    printf("gpuop %s\nlibcurl %s\nTLS %s\n", GPUOP_VERSION, curl, tls);
    return 0;
}

static const struct gpuop_cli_command commands[] = {
    {"run", "run the controller", gpuop_cmd_run, run_flags, NULL},
    {"check", "one-shot report of every GPU node", gpuop_cmd_check, check_flags, NULL},
    {"render", "print the DaemonSets a policy expands to", gpuop_cmd_render, render_flags, NULL},
    {"upgrade-crd", "create or replace the GpuPolicy CRD (the chart's hook)", gpuop_cmd_upgrade_crd,
     upgrade_crd_flags, NULL},
    {"release-policy", "delete a GpuPolicy, wait until its upgrade lets go (the chart's hook)",
     gpuop_cmd_release_policy, release_policy_flags, NULL},
    {"completion", "print a bash or zsh completion script", gpuop_cmd_completion, completion_flags,
     "bash zsh"},
    {"version", "print the version, and the libcurl and TLS library linked in", cmd_version, NULL,
     NULL},
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const char *program = "gpuop";

const struct gpuop_cli_command *gpuop_cli_commands(size_t *n)
{
    *n = NCOMMANDS;
    return commands;
}

const struct gpuop_cli_command *gpuop_cli_command(const char *name)
{
    for (size_t i = 0; name && i < NCOMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

const char *gpuop_cli_program(void)
{
    return program;
}

int gpuop_cli_getopt(const struct gpuop_cli_command *cmd, struct option *out, size_t cap,
                     char *shortopts, size_t scap)
{
    size_t n = 0, s = 0;
    for (const struct gpuop_cli_flag *fl = cmd->flags; fl && fl->name; fl++, n++) {
        if (n + 1 >= cap || s + 3 >= scap)
            return GPUOP_ETOOBIG;
        out[n] = (struct option){fl->name, fl->arg, NULL,
                                 fl->shrt ? fl->shrt : GPUOP_CLI_LONG + (int)(fl - cmd->flags)};
        if (fl->shrt) {
            shortopts[s++] = (char)fl->shrt;
            if (fl->arg == required_argument)
                shortopts[s++] = ':';
        }
    }
    if (!cap || !scap)
        return GPUOP_ETOOBIG;
    out[n] = (struct option){NULL, 0, NULL, 0};
    shortopts[s] = '\0';
    return 0;
}

const struct gpuop_cli_flag *gpuop_cli_flag_of(const struct gpuop_cli_command *cmd, int c)
{
    for (const struct gpuop_cli_flag *fl = cmd->flags; fl && fl->name; fl++)
        if ((fl->shrt && fl->shrt == c) ||
            (!fl->shrt && c == GPUOP_CLI_LONG + (int)(fl - cmd->flags)))
            return fl;
    return NULL;
}

void gpuop_cli_flags_help(FILE *out, const struct gpuop_cli_command *cmd)
{
    enum { COL = 22 };
    fputs("options:\n", out);
    for (const struct gpuop_cli_flag *fl = cmd->flags; fl && fl->name; fl++) {
        char head[64];
        char letter[2] = {(char)fl->shrt, 0};
        snprintf(head, sizeof(head), "  %s%s%s--%s%s%s", fl->shrt ? "-" : "", letter,
                 fl->shrt ? ", " : "", fl->name,
                 fl->meta ? (fl->arg == optional_argument ? "[=" : " ") : "",
                 fl->meta ? fl->meta : "");
        if (fl->meta && fl->arg == optional_argument)
            snprintf(head + strlen(head), sizeof(head) - strlen(head), "]");
        size_t w = strlen(head);
        fprintf(out, "%s", head);
        if (w + 2 > COL) {
            fputc('\n', out);
            w = 0;
        }
        for (const char *h = fl->help; *h;) {
            const char *nl = strchr(h, '\n');
            size_t len = nl ? (size_t)(nl - h) : strlen(h);
            fprintf(out, "%*s%.*s\n", (int)(COL - w), "", (int)len, h);
            w = 0;
            h += len + (nl ? 1 : 0);
        }
    }
}

int gpuop_cli_duration(const char *s, int allow_zero, uint64_t *ms)
{
    char *e;
    double v = s ? strtod(s, &e) : 0;
    if (!s || e == s || !(v >= 0) || v > 86400.0 * 1000 || (v == 0 && !allow_zero))
        return GPUOP_EINVAL;
    double mul = strcmp(e, "ms") == 0                  ? 1
                 : (strcmp(e, "s") == 0 || *e == '\0') ? 1000
                 : strcmp(e, "m") == 0                 ? 60000
                 : strcmp(e, "h") == 0                 ? 3600000
                                                       : -1;
    if (mul < 0)
        return GPUOP_EINVAL;
    *ms = (uint64_t)(v * mul + 0.5); /* v >= 0: rounds half up */
    return *ms > 0 || (allow_zero && v == 0) ? 0 : GPUOP_EINVAL;
}

/* ---- run's arguments ---- */

static void run_usage(FILE *f, const struct gpuop_cli_command *self)
{
    fprintf(f,
            "usage: %s run [options]\n\n"
            "Runs the controller: watches GpuPolicies, Nodes and the operand DaemonSets and\n"
            "Pods, keeps the DaemonSets in line with the active policy, and writes findings\n"
            "into its status.\n\n",
            program);
    gpuop_cli_flags_help(f, self);
    fputs("\nDurations: 15s, 1500ms, 1m or a number of seconds.\n", f);
}

/* Says what is wrong with run's arguments; returns the exit code, 2. */
static int run_bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int run_bad(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s run: ", program);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 2;
}

static int run_duration(const char *v, uint64_t *ms)
{
    return gpuop_cli_duration(v, 0, ms) < 0 ? run_bad("bad duration '%s'", v) : -1;
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

/* One flag of run (fl, its value v) into o: 0, or the exit code. */
static int run_flag(const struct gpuop_cli_command *self, const struct gpuop_cli_flag *fl,
                    const char *v, struct gpuop_run_options *o)
{
    const char *name = fl ? fl->name : "";
    if (!strcmp(name, "kubeconfig"))
        o->kubeconfig = v;
    else if (!strcmp(name, "namespace"))
        o->ns = v;
    else if (!strcmp(name, "log-level")) {
        if (gpuop_log_set_level(v) < 0)
            return run_bad("unknown log level '%s'", v);
    } else if (!strcmp(name, "log-format")) {
        if (gpuop_log_set_format(v) < 0)
            return run_bad("unknown log format '%s'", v);
    } else if (!strcmp(name, "metrics-addr"))
        o->metrics_addr = v;
    else if (!strcmp(name, "health-addr"))
        o->health_addr = v;
    else if (!strcmp(name, "leader-elect")) {
        if (parse_bool(v, &o->leader_elect) < 0)
            return run_bad("--leader-elect wants true or false");
    } else if (!strcmp(name, "leader-elect-lease-duration"))
        return run_duration(v, &o->lease_ms);
    else if (!strcmp(name, "leader-elect-renew-deadline"))
        return run_duration(v, &o->renew_ms);
    else if (!strcmp(name, "leader-elect-retry-period"))
        return run_duration(v, &o->retry_ms);
    else if (!strcmp(name, "leader-elect-namespace"))
        o->lease_ns = v;
    else if (!strcmp(name, "leader-elect-id"))
        o->lease_name = v;
    else if (!strcmp(name, "help")) {
        run_usage(stdout, self);
        return 0;
    } else {
        run_usage(stderr, self);
        return 2;
    }
    return -1;
}

int gpuop_cli_run_options(int argc, char **argv, struct gpuop_run_options *o)
{
    const struct gpuop_cli_command *self = gpuop_cli_command("run");
    struct option opts[24];
    char shortopts[24];
    if (gpuop_cli_getopt(self, opts, sizeof(opts) / sizeof(opts[0]), shortopts, sizeof(shortopts)) <
        0)
        return 2;
    *o = (struct gpuop_run_options){.leader_elect = true,
                                    .lease_ms = GPUOP_LEADER_LEASE_MS,
                                    .renew_ms = GPUOP_LEADER_RENEW_MS,
                                    .retry_ms = GPUOP_LEADER_RETRY_MS,
                                    .lease_name = GPUOP_RUN_LEASE_NAME};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, shortopts, opts, NULL)) != -1) {
        int rc = run_flag(self, gpuop_cli_flag_of(self, c), optarg, o);
        if (rc >= 0)
            return rc;
    }
    if (optind < argc)
        return run_bad("unexpected argument '%s'", argv[optind]);
    if (o->leader_elect && gpuop_leader_check_timing(o->lease_ms, o->renew_ms, o->retry_ms) < 0)
        return run_bad("leader election wants lease duration > renew deadline > 1.2 x retry "
                       "period");
    if (!o->ns)
        o->ns = gpuop_cmd_default_namespace();
    if (!o->lease_ns)
        o->lease_ns = o->ns;
    return -1;
}

/* ---- dispatch ---- */

static void usage(FILE *f)
{
    /* the summaries start two spaces after the longest name */
    int width = 0;
    for (size_t i = 0; i < NCOMMANDS; i++)
        if ((int)strlen(commands[i].name) > width)
            width = (int)strlen(commands[i].name);
    fprintf(f, "usage: %s <command> [options]\n\ncommands:\n", program);
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  %-*s  %s\n", width, commands[i].name, commands[i].summary);
    fprintf(f, "\nRun '%s <command> --help' for the options of a command.\n", program);
}

int gpuop_cli_main(int argc, char **argv)
{
    const char *base = argc > 0 && argv[0] ? strrchr(argv[0], '/') : NULL;
    base = base ? base + 1 : argc > 0 && argv[0] ? argv[0] : "";
    if (strcmp(base, "kubectl-gpuop") == 0)
        program = "kubectl gpuop";
    if (strcmp(base, "kubectl_complete-gpuop") == 0) {
        /* kubectl's completion of the plugin: the words after "gpuop" */
        argv[0] = "__complete";
        return gpuop_cmd_complete(argc, argv);
    }
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version"))
        cmd = "version";
    if (!strcmp(cmd, "__complete"))
        return gpuop_cmd_complete(argc - 1, argv + 1);
    const struct gpuop_cli_command *c = gpuop_cli_command(cmd);
    if (c)
        return c->run(argc - 1, argv + 1);
    fprintf(stderr, "%s: unknown command '%s'\n", program, cmd);
    usage(stderr);
    return 2;
}
