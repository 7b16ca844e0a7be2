/*
 * cmd_int.h - the gpuop subcommands, one function each, called by cli.c with
 * argv starting at the subcommand name (argv[0] == "render", ...). Each
 * returns the process exit code: 0 success, 1 failure or findings,
 * 2 usage error. Append new commands below.
 */
#ifndef GPUOP_CMD_INT_H
#define GPUOP_CMD_INT_H

#include <stdint.h>
#include <jansson.h>

#include "gpuop/error.h"

struct gpuop_kube;

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

#endif
