/*
 * pool.h - a size-class allocator for long-lived small blocks: the watch
 * caches' entries, the stranded tracker's nodes (controller/stranded.c).
 *
 * Why: glibc's malloc hands out the cached Nodes and Pods (and their store
 * keys) from the same pages as everything short-lived: a watch event's
 * jansson tree, a reconcile's findings, a status document. During a
 * 5,000-node rollout 90,000 events and hundreds of reconciles interleave
 * with 35,000 cache entries, and when the short-lived memory is freed it
 * leaves holes smaller than a page between live entries, which
 * malloc_trim() cannot give back (measured in docs/benchmarks-history.md, "How the
 * memory came down"). Blocks from
 * this pool live in slabs of their own, one size class per slab, so the
 * general heap empties into whole free pages and the caches stay packed.
 *
 * Blocks are rounded up to 16 bytes (at most 15 bytes lost, where glibc
 * adds 8 to 24 bytes of header and rounding to every block); blocks larger
 * than GPUOP_POOL_MAX come from malloc(). A slab whose blocks are all free
 * goes back to the kernel.
 *
 * Not thread-safe: call it from the loop thread only (gpuop is single-
 * threaded). Under AddressSanitizer free blocks are poisoned, under
 * valgrind blocks are announced as heap blocks, so use-after-free and
 * leaks of pool blocks are reported as they are for malloc's.
 */
#ifndef GPUOP_POOL_H
#define GPUOP_POOL_H

#include <stddef.h>

/* Largest block served from slabs (bytes). */
#define GPUOP_POOL_MAX 1024

/* New block of at least size bytes (16-byte aligned), or NULL when out of
 * memory. Release it with gpuop_pool_free(), never free(). */
void *gpuop_pool_alloc(size_t size);

/* Releases a block from gpuop_pool_alloc (steals it). NULL is a no-op. */
void gpuop_pool_free(void *p);

/* Unmaps every slab with no live block (a class otherwise keeps its last
 * one), and frees the pool's own bookkeeping when nothing is left: for when
 * the caches have been freed. */
void gpuop_pool_trim(void);

struct gpuop_pool_stats {
    size_t blocks; /* live blocks (slab and large) */
    size_t bytes;  /* their rounded sizes */
    size_t slabs;  /* slabs mapped */
};

void gpuop_pool_stats(struct gpuop_pool_stats *out);

#endif
