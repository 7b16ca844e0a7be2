/* Temporary: the real `gpuop check` (cmd_check.c.wip) waits for report.h. */
#include <stdio.h>

#include "gpuop/cmd.h"

int gpuop_cmd_check(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "gpuop check: not available in this build\n");
    return 2;
}
