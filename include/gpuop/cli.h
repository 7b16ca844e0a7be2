/*
 * cli.h - the gpuop command line: run, check, render, version.
 */
#ifndef GPUOP_CLI_H
#define GPUOP_CLI_H

/* Parses argv and runs the chosen command; returns the process exit code. */
int gpuop_cli_main(int argc, char **argv);

#endif
