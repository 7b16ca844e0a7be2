/*
 * cli_int.h - the gpuop command line: run, check, render, completion, version.
 *
 * One table (src/cmd/cli.c) lists every command and its flags: dispatch,
 * the top-level help, the getopt_long options and --help of the commands
 * that parse through it, and the bash and zsh completion scripts
 * (`gpuop completion bash|zsh`, completion.c) are all drawn from it, so a
 * flag added there is parsed, documented and completed at once.
 *
 * Installed as `kubectl-gpuop` (a link or a copy), the same binary is a
 * kubectl plugin: `kubectl gpuop check --context prod` runs `check`, and
 * the help says "kubectl gpuop".
 *
 * Layer: cmd
 */
#ifndef GPUOP_CLI_INT_H
#define GPUOP_CLI_INT_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gpuop/controller.h"

/* Parses argv and runs the chosen command; returns the process exit code. */
int gpuop_cli_main(int argc, char **argv);

/* What a flag's value completes to: */
#define GPUOP_CLI_FILE      "@file"      /* a file name */
#define GPUOP_CLI_CONTEXT   "@context"   /* a kubeconfig context (kubectl config get-contexts) */
#define GPUOP_CLI_NAMESPACE "@namespace" /* a namespace of the cluster */

struct gpuop_cli_flag {
    const char *name;   /* long name without "--"; NULL ends a list */
    int shrt;           /* short letter, 0 for none */
    int arg;            /* no_argument, required_argument, optional_argument */
    const char *meta;   /* the value's name in the help ("FILE"), NULL without a value */
    const char *values; /* completion: space-separated words, one of the GPUOP_CLI_*
                           above, or NULL (anything) */
    const char *help;   /* one line; "\n" continues it on the next */
};

struct gpuop_cli_command {
    const char *name;
    const char *summary; /* one line, for the command list */
    int (*run)(int argc, char **argv);
    const struct gpuop_cli_flag *flags; /* ends with {NULL}; NULL: parses no flags */
    const char *args;                   /* positional arguments completed (words), or NULL */
};

/* The commands, in help order (static); *n gets their number. */
const struct gpuop_cli_command *gpuop_cli_commands(size_t *n);

/* The command of that name (static), or NULL. */
const struct gpuop_cli_command *gpuop_cli_command(const char *name);

/* "gpuop", or "kubectl gpuop" when run as the plugin (static). */
const char *gpuop_cli_program(void);

/* Fills out (cap entries, the terminator included) with the getopt_long
 * options of cmd's flags and shortopts (scap bytes) with their letters. A
 * flag's val is its letter, else GPUOP_CLI_LONG + its index. Returns 0, or
 * GPUOP_ETOOBIG when out or shortopts is too small. */
#define GPUOP_CLI_LONG 0x100
int gpuop_cli_getopt(const struct gpuop_cli_command *cmd, struct option *out, size_t cap,
                     char *shortopts, size_t scap);

/* The flag a getopt_long return value c stands for (static), or NULL ('?'). */
const struct gpuop_cli_flag *gpuop_cli_flag_of(const struct gpuop_cli_command *cmd, int c);

/* Writes "options:" and one aligned entry per flag of cmd. */
void gpuop_cli_flags_help(FILE *out, const struct gpuop_cli_command *cmd);

/* Durations as run and check take them: "1500ms", "15s", "2m", "1h", or a
 * number of seconds ("2.5"); with allow_zero, "0" (of any unit) gives 0
 * (kubectl's "no timeout"). Returns 0 or GPUOP_EINVAL. */
int gpuop_cli_duration(const char *s, int allow_zero, uint64_t *ms);

/* ---- run's arguments (the table's "run" row) ---- */

/* Where run serves when --metrics-addr / --health-addr are not given: out
 * of a cluster on loopback only, in a cluster on every address (the
 * probes and the scraper come from the node). */
#define GPUOP_RUN_METRICS_ADDR            "127.0.0.1:8080"
#define GPUOP_RUN_HEALTH_ADDR             "127.0.0.1:8081"
#define GPUOP_RUN_METRICS_ADDR_IN_CLUSTER ":8080"
#define GPUOP_RUN_HEALTH_ADDR_IN_CLUSTER  ":8081"
#define GPUOP_RUN_LEASE_NAME              "gpuop-leader"

struct gpuop_run_options {
    const char *kubeconfig;   /* NULL: $KUBECONFIG, in-cluster, ~/.kube/config */
    const char *ns;           /* the operands' namespace (defaulted) */
    const char *metrics_addr; /* NULL: the default for where it runs */
    const char *health_addr;  /* NULL: likewise */
    bool leader_elect;
    uint64_t lease_ms, renew_ms, retry_ms; /* checked together */
    const char *lease_ns;                  /* defaulted to ns */
    const char *lease_name;
};

/* Parses run's argv (argv[0] is "run"; strings borrowed from argv) into o,
 * with every default filled in, and sets the log level and format as it
 * goes. Returns -1 to go on, else the exit code: 0 after --help, 2 after a
 * usage error (said on stderr). */
int gpuop_cli_run_options(int argc, char **argv, struct gpuop_run_options *o);

#endif
