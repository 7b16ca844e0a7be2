/*
 * cmd_int.h - the gpuop subcommands, one function each, called by cli.c with
 * argv starting at the subcommand name (argv[0] == "render", ...). Each
 * returns the process exit code: 0 success, 1 failure or findings,
 * 2 usage error. Append new commands below.
 */
#ifndef GPUOP_CMD_INT_H
#define GPUOP_CMD_INT_H

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

#endif
