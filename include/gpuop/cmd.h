/*
 * cmd.h - the gpuop subcommands, one function each, called by cli.c with
 * argv starting at the subcommand name (argv[0] == "render", ...). Each
 * returns the process exit code: 0 success, 1 failure or findings,
 * 2 usage error. Append new commands below.
 */
#ifndef GPUOP_CMD_H
#define GPUOP_CMD_H

/* gpuop render -f FILE [--namespace NS] [--strict]: prints the operand
 * DaemonSets a GpuPolicy file expands to (src/cmd_render.c). */
int gpuop_cmd_render(int argc, char **argv);

#endif
