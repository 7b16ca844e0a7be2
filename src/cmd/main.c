/*
 * main.c - command-line entry: dispatches to the subcommands. Only wiring
 * lives here; each command is implemented in its own module.
 */
#include <stdio.h>
#include <string.h>

#include "cli_int.h"

int main(int argc, char **argv)
{
    return gpuop_cli_main(argc, argv);
}
