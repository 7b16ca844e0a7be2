/*
 * pages.h - blocks of whole pages from the kernel, apart from malloc's
 * heap, for long-lived blocks that are replaced whole: the node records'
 * chunks (findings/records.c).
 *
 * Why: during a rollout the records' chunks come and go among the heap's
 * short-lived blocks (watch events, status documents, a reconcile's
 * arrays); a chunk left between freed blocks pins their pages, which
 * malloc_trim() cannot give back (pool.h says the same of the caches'
 * entries). A block of its own pages is given back whole when freed.
 *
 * Under valgrind a block is announced as a heap block (leaks are
 * reported); its bytes are zero, as the kernel's pages are.
 */
#ifndef GPUOP_PAGES_H
#define GPUOP_PAGES_H

#include <stddef.h>

/* New: at least size bytes (size > 0), page-aligned and zeroed, or NULL
 * when out of memory. *got is set to the bytes usable: size rounded up
 * to whole pages. Release it with gpuop_pages_free(p, *got). */
void *gpuop_pages_alloc(size_t size, size_t *got);

/* Releases (steals) a block of gpuop_pages_alloc, size its *got. NULL is
 * a no-op. */
void gpuop_pages_free(void *p, size_t size);

#endif
