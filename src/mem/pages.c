/*
 * pages.c - blocks of whole pages from the kernel (see pages.h): an
 * anonymous private mapping each, the page size read once.
 */
#define _DEFAULT_SOURCE
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gpuop/pages.h"

#include "memcheck_int.h"

/* The page size when the system does not say. */
#define PAGE_FALLBACK 4096

static size_t page_size(void)
{
    static size_t page;
    if (!page) {
        long p = sysconf(_SC_PAGESIZE);
        page = p > 0 ? (size_t)p : PAGE_FALLBACK;
    }
    return page;
}

void *gpuop_pages_alloc(size_t size, size_t *got)
{
    size_t page = page_size();
    if (!size || size > SIZE_MAX - page)
        return NULL;
    size_t bytes = (size + page - 1) / page * page;
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    VALGRIND_MALLOCLIKE_BLOCK(p, bytes, 0, 1);
    *got = bytes;
    return p;
}

void gpuop_pages_free(void *p, size_t size)
{
    if (!p)
        return;
    VALGRIND_FREELIKE_BLOCK(p, 0);
    munmap(p, size);
}
