/*
 * cli.c - subcommand dispatch and --help for every command.
 */
#include <stdio.h>
#include <string.h>

#include "gpuop/cli.h"
#include "gpuop/cmd.h"
#include "gpuop/kube.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: gpuop <command> [options]\n\n"
               "commands:\n"
               "  run      run the controller\n"
               "  check    one-shot report of every GPU node\n"
               "  render   print the DaemonSets a policy expands to\n"
               "  version  print the version, and the libcurl and TLS library linked in\n\n"
               "Run 'gpuop <command> --help' for the options of a command.\n");
}

int gpuop_cli_main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        const char *curl, *tls;
        gpuop_kube_lib_versions(&curl, &tls);
        printf("gpuop %s\nlibcurl %s\nTLS %s\n", GPUOP_VERSION, curl, tls);
        return 0;
    }
    if (!strcmp(cmd, "run"))
        return gpuop_cmd_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "check"))
        return gpuop_cmd_check(argc - 1, argv + 1);
    if (!strcmp(cmd, "render"))
        return gpuop_cmd_render(argc - 1, argv + 1);
    fprintf(stderr, "gpuop: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
