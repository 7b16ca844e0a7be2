/*
 * cmd_int.h - the gpuop subcommands, one function each, called by cli.c with
 * argv starting at the subcommand name (argv[0] == "render", ...). Each
 * returns the process exit code: 0 success, 1 failure or findings,
 * 2 usage error. Append new commands below.
 */
#ifndef GPUOP_CMD_INT_H
#define GPUOP_CMD_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>

#include <uv.h>

#include "gpuop/error.h"
#include "gpuop/kube.h"
#include "gpuop/kubeconfig.h"

struct gpuop_kube;

/* A one-shot command's API client (cmd_kube.c): its own loop, run by each
 * gpuop_cmd_call until the answer is in. */
struct gpuop_cmd_kube {
    uv_loop_t loop;
    struct gpuop_kubeconfig cfg;
    struct gpuop_kube *k;
};

/* Opens c: in a pod (a hook's Job) with no kubeconfig given, its
 * ServiceAccount, as run does; else the kubeconfig (KUBECONFIG, ~/.kube).
 * 0, or a negative rc with err saying why (c then needs no close). */
int gpuop_cmd_kube_open(struct gpuop_cmd_kube *c, const char *kubeconfig, struct gpuop_err *err);

/* Closes what gpuop_cmd_kube_open opened. */
void gpuop_cmd_kube_close(struct gpuop_cmd_kube *c);

/* One request of a one-shot command. */
struct gpuop_cmd_req {
    enum gpuop_kube_verb verb;
    const char *path;
    const char *ctype; /* the body's content type; NULL: JSON */
    json_t *doc;       /* the body (borrowed), or NULL */
};

/* Sends r, for at most GPUOP_CMD_REQUEST_MS and never past deadline
 * (gpuop_clock_ms); *out gets the new response body (may be NULL). 0, or
 * a negative rc with err (GPUOP_ETRANSPORT "timed out" past deadline). */
#define GPUOP_CMD_REQUEST_MS 30000
int gpuop_cmd_call(struct gpuop_kube *k, const struct gpuop_cmd_req *r, uint64_t deadline,
                   json_t **out, struct gpuop_err *err);

/* The options of a hook command (upgrade-crd, release-policy): each NULL
 * or default when not given. */
struct gpuop_cmd_hook_opts {
    const char *kubeconfig;
    const char *file;       /* --filename */
    const char *positional; /* the one positional argument, if the command takes one */
    uint64_t timeout_ms;    /* --timeout; the caller's default when absent */
};

/* Parses argv of command cmd (its flags in cli.c's table) into *o, whose
 * timeout_ms holds the default; positional: whether it takes one argument
 * (required), else none. usage prints the command's help. Returns 0, 2 on
 * a usage error (said), or GPUOP_CMD_HELP after --help was printed. */
#define GPUOP_CMD_HELP (-1)
int gpuop_cmd_hook_options(const char *cmd, int argc, char **argv, bool positional,
                           void (*usage)(FILE *), struct gpuop_cmd_hook_opts *o);

/* Sleeps ms milliseconds (a command's poll between two reads). */
void gpuop_cmd_sleep_ms(long ms);

/* gpuop render -f FILE [--namespace NS] [--strict]: prints the operand
 * DaemonSets a GpuPolicy file expands to (src/cmd/cmd_render.c). */
int gpuop_cmd_render(int argc, char **argv);

/* gpuop run [--kubeconfig F] [--namespace NS] [--log-level L] [--log-format F]:
 * the controller (src/cmd/cmd_run.c). */
int gpuop_cmd_run(int argc, char **argv);

/* gpuop check [--kubeconfig F] [--context C] [--namespace NS] [--request-timeout D]
 * [--policy FILE] [-o text|wide|json|yaml]: one-shot report; exit 0 clean,
 * 1 findings, 2 error (src/cmd/cmd_check.c). Flags: the table in cli.c. */
int gpuop_cmd_check(int argc, char **argv);

/* gpuop completion bash|zsh: prints a completion script written from the
 * command table (src/cmd/completion.c). */
int gpuop_cmd_completion(int argc, char **argv);

/* gpuop __complete WORDS... CURRENT (also run as kubectl_complete-gpuop):
 * cobra's completion answer for kubectl, from the command table
 * (src/cmd/completion.c). Hidden from the help. */
int gpuop_cmd_complete(int argc, char **argv);

/* Shared by run and check: the namespace to use when --namespace is not
 * given: $POD_NAMESPACE, else the in-cluster namespace file, else
 * "gpuop-system". Returns a static or borrowed string. */
const char *gpuop_cmd_default_namespace(void);

/* The service-account folder in-cluster commands read: $GPUOP_SA_DIR (for
 * tests), else the pod's. Static or borrowed string. */
const char *gpuop_cmd_sa_dir(void);

/* gpuop upgrade-crd -f FILE [--kubeconfig F] [--timeout D]: creates or
 * replaces the CRDs of FILE and waits until they are established; the
 * chart's upgrade hook (src/cmd/cmd_crd.c). */
int gpuop_cmd_upgrade_crd(int argc, char **argv);

/* What gpuop_crd_apply did. */
enum gpuop_crd_result {
    GPUOP_CRD_CREATED,   /* there was none: created by server-side apply */
    GPUOP_CRD_REPLACED,  /* replaced (PUT), and its spec changed */
    GPUOP_CRD_UNCHANGED, /* replaced, and the API server saw no change */
};

/* Puts crd (borrowed: a CustomResourceDefinition of apiextensions.k8s.io/v1
 * with a name) into the cluster as it is written: created when missing,
 * else replaced (the live labels and annotations crd lacks are kept),
 * retried on a conflict; then waits until it is Established and its names
 * accepted, all within timeout_ms. Runs k's loop (gpuop_kube_call).
 * Returns 0 with *result set, or a negative rc with err saying why. */
int gpuop_crd_apply(struct gpuop_kube *k, json_t *crd, uint64_t timeout_ms,
                    enum gpuop_crd_result *result, struct gpuop_err *err);

/* gpuop release-policy NAME [--kubeconfig F] [--timeout D]: deletes the
 * GpuPolicy NAME and waits until gpuop has released every node its driver
 * upgrade held; the chart's pre-delete hook (src/cmd/cmd_release.c). */
int gpuop_cmd_release_policy(int argc, char **argv);

/* What release-policy does on k: deletes GpuPolicy name (borrowed) and
 * waits, polling every poll_ms, until no node gpuop's upgrade holds, or
 * another GpuPolicy goes on with it, all within timeout_ms; says what it
 * did on stdout, why it failed on stderr. Runs k's loop. The exit code:
 * 0 released, 1 not. */
int gpuop_release_policy(struct gpuop_kube *k, const char *name, uint64_t timeout_ms, long poll_ms);

#endif
