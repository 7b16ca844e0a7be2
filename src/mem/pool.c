/*
 * pool.c - size-class slabs for the caches' long-lived blocks (see pool.h).
 *
 * A slab is SLAB bytes of anonymous memory aligned to SLAB, so the slab of
 * a block is its address rounded down. Its header says the block size;
 * blocks are carved from the slab in order (pages never touched are never
 * resident) and freed blocks go on the slab's own free list. Each class
 * keeps a list (list.h) of the slabs that have room; allocation takes from
 * the first.
 * A slab with no live block is unmapped, unless it is its class's only one.
 *
 * Whether a pointer is a slab block or a large malloc() block is decided by
 * looking its slab address up in a sorted array (buf.h's typed array) of
 * the slabs mapped (a few hundred at most: 10 MB of cache is 160 slabs).
 */
#define _DEFAULT_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "gpuop/buf.h"
#include "gpuop/list.h"
#include "gpuop/pool.h"

#include "memcheck_int.h"

#define SLAB   ((size_t)64 * 1024)
#define STEP   16
#define NCLASS (GPUOP_POOL_MAX / STEP)

struct slab {
    struct gpuop_list_node room; /* on the class's slabs with room, or unlinked */
    void *free;                  /* freed blocks, linked through their first word */
    uint32_t size;               /* block size */
    uint32_t carved;             /* offset of the first block never handed out */
    uint32_t live;               /* blocks handed out and not freed */
};

/* The slab index's first size, in slabs (4 MB of cache). */
#define INDEX_FIRST 64

GPUOP_ARRAY(slab_index, struct slab *);

#define FIRST (((sizeof(struct slab) + STEP - 1) / STEP) * STEP)

static struct {
    struct gpuop_list room[NCLASS]; /* per class: slabs with a free or uncarved block */
    size_t nslabs[NCLASS];
    struct slab_index all; /* sorted by address */
    size_t blocks, bytes;
} pool = {.all = GPUOP_ARRAY_INIT(struct slab *, INDEX_FIRST, GPUOP_ARRAY_UNLIMITED)};

static size_t find(const struct slab *s)
{
    struct slab **all = slab_index_items(&pool.all);
    size_t lo = 0, hi = slab_index_len(&pool.all);
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if ((uintptr_t)all[mid] < (uintptr_t)s)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static bool is_slab(const struct slab *s)
{
    size_t i = find(s);
    return i < slab_index_len(&pool.all) && slab_index_items(&pool.all)[i] == s;
}

static void list_add(struct slab *s)
{
    gpuop_list_push(&pool.room[s->size / STEP - 1], &s->room);
}

static struct slab *slab_new(uint32_t size)
{
    /* Map twice the size and cut it down to one aligned slab. */
    char *m = mmap(NULL, 2 * SLAB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    char *a = (char *)(((uintptr_t)m + SLAB - 1) & ~(uintptr_t)(SLAB - 1));
    if (a > m)
        munmap(m, (size_t)(a - m));
    if (a + SLAB < m + 2 * SLAB)
        munmap(a + SLAB, (size_t)(m + 2 * SLAB - (a + SLAB)));
    struct slab *s = (struct slab *)(void *)a;
    memset(s, 0, sizeof(*s));
    s->size = size;
    s->carved = FIRST;
    if (slab_index_insert(&pool.all, find(s), s) < 0) {
        munmap(a, SLAB);
        return NULL;
    }
    HIDE(a + FIRST, SLAB - FIRST);
    VALGRIND_MAKE_MEM_NOACCESS(a + FIRST, SLAB - FIRST);
    pool.nslabs[size / STEP - 1]++;
    list_add(s);
    return s;
}

static void slab_drop(struct slab *s)
{
    gpuop_list_remove(&s->room);
    slab_index_remove(&pool.all, find(s), 1);
    pool.nslabs[s->size / STEP - 1]--;
    SHOW(s, SLAB);
    munmap(s, SLAB);
}

void *gpuop_pool_alloc(size_t size)
{
    if (size > GPUOP_POOL_MAX) {
        void *p = malloc(size);
        if (p)
            pool.blocks++;
        return p;
    }
    uint32_t bsize = size ? (uint32_t)((size + STEP - 1) / STEP * STEP) : STEP;
    struct slab *s = GPUOP_LIST_FIRST(&pool.room[bsize / STEP - 1], struct slab, room);
    if (!s && !(s = slab_new(bsize)))
        return NULL;
    void *p;
    if (s->free) {
        p = s->free;
        SHOW(p, sizeof(void *));
        VALGRIND_MAKE_MEM_DEFINED(p, sizeof(void *));
        memcpy(&s->free, p, sizeof(void *));
    } else {
        p = (char *)s + s->carved;
        s->carved += bsize;
    }
    s->live++;
    if (!s->free && s->carved + bsize > SLAB)
        gpuop_list_remove(&s->room); /* full */
    SHOW(p, bsize);
    VALGRIND_MALLOCLIKE_BLOCK(p, bsize, 0, 0);
    pool.blocks++;
    pool.bytes += bsize;
    return p;
}

void gpuop_pool_free(void *p)
{
    if (!p)
        return;
    struct slab *s = (struct slab *)((uintptr_t)p & ~(uintptr_t)(SLAB - 1));
    pool.blocks--;
    if (!is_slab(s)) {
        free(p);
        return;
    }
    pool.bytes -= s->size;
    VALGRIND_FREELIKE_BLOCK(p, 0);
    VALGRIND_MAKE_MEM_DEFINED(p, sizeof(void *));
    memcpy(p, &s->free, sizeof(void *));
    VALGRIND_MAKE_MEM_NOACCESS(p, s->size);
    HIDE(p, s->size);
    s->free = p;
    s->live--;
    if (s->live == 0 && pool.nslabs[s->size / STEP - 1] > 1) {
        slab_drop(s);
        return;
    }
    if (!gpuop_list_linked(&s->room))
        list_add(s);
}

void gpuop_pool_trim(void)
{
    for (size_t i = slab_index_len(&pool.all); i-- > 0;)
        if (slab_index_items(&pool.all)[i]->live == 0)
            slab_drop(slab_index_items(&pool.all)[i]);
    if (slab_index_len(&pool.all) == 0)
        slab_index_free(&pool.all);
}

void gpuop_pool_stats(struct gpuop_pool_stats *out)
{
    out->blocks = pool.blocks;
    out->bytes = pool.bytes;
    out->slabs = slab_index_len(&pool.all);
}
