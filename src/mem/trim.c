/*
 * trim.c - allocator tuning (see trim.h). With glibc: an mmap threshold and
 * a trim threshold fixed at 256 KiB (setting them turns off glibc's dynamic
 * raising of both after a large free), and malloc_trim() on demand.
 */
#include "gpuop/trim.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

void gpuop_trim_tune(void)
{
#ifdef __GLIBC__
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
    mallopt(M_TRIM_THRESHOLD, 256 * 1024);
#endif
}

void gpuop_trim_now(void)
{
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

bool gpuop_trim_maybe(uint64_t now_ms)
{
    static bool ever;
    static uint64_t last;
    if (ever && now_ms - last < GPUOP_MEM_TRIM_EVERY_MS)
        return false;
    ever = true;
    last = now_ms;
    gpuop_trim_now();
    return true;
}
