/*
 * jsonarena.c - jansson's allocator hooks with a scratch region (see
 * jsonarena.h). The region is mapped on first use; inside a window blocks
 * are carved from it 16-byte aligned; freeing a region block is a no-op and
 * the outermost end rewinds to the start. Pages the region never reached
 * are never resident; the ones it did stay so (at most 256 KiB).
 */
#define _DEFAULT_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include <jansson.h>

#include "gpuop/jsonarena.h"

#include "memcheck_int.h"

static struct {
    char *base; /* NULL until the first window, or when the mapping failed */
    size_t used;
    int depth;
    bool installed;
} ja;

static void *ja_malloc(size_t size)
{
    size_t need = (size + 15) & ~(size_t)15;
    if (ja.depth > 0 && ja.base && need >= size && GPUOP_JSONARENA_SIZE - ja.used >= need) {
        void *p = ja.base + ja.used;
        ja.used += need;
        SHOW(p, size);
        VALGRIND_MAKE_MEM_UNDEFINED(p, size);
        return p;
    }
    return malloc(size);
}

bool gpuop_jsonarena_owns(const void *p)
{
    return ja.base && (uintptr_t)p >= (uintptr_t)ja.base &&
           (uintptr_t)p < (uintptr_t)ja.base + GPUOP_JSONARENA_SIZE;
}

static void ja_free(void *p)
{
    if (!gpuop_jsonarena_owns(p))
        free(p);
}

void gpuop_json_free(void *p)
{
    ja_free(p);
}

void gpuop_jsonarena_begin(void)
{
    if (!ja.installed) {
        ja.installed = true;
        void *m = mmap(NULL, GPUOP_JSONARENA_SIZE, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        ja.base = m == MAP_FAILED ? NULL : m;
        if (ja.base) {
            HIDE(ja.base, GPUOP_JSONARENA_SIZE);
            VALGRIND_MAKE_MEM_NOACCESS(ja.base, GPUOP_JSONARENA_SIZE);
        }
        json_set_alloc_funcs(ja_malloc, ja_free);
    }
    ja.depth++;
}

void gpuop_jsonarena_end(void)
{
    if (ja.depth > 0 && --ja.depth == 0 && ja.used) {
        HIDE(ja.base, ja.used);
        VALGRIND_MAKE_MEM_NOACCESS(ja.base, ja.used);
        ja.used = 0;
    }
}

bool gpuop_jsonarena_active(void)
{
    return ja.depth > 0;
}
