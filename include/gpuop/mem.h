/*
 * mem.h - keeping the resident set small with glibc's allocator.
 *
 * A LIST page is parsed into a large, short-lived jansson tree; glibc keeps
 * such freed memory in the process unless told otherwise, so the resident
 * set would stay at the size of the largest page ever parsed. gpuop fixes
 * the allocator's thresholds at start (no dynamic growth of the trim and
 * mmap thresholds) and gives freed pages back after each complete list.
 * Both are no-ops on other C libraries.
 */
#ifndef GPUOP_MEM_H
#define GPUOP_MEM_H

/* Call once at start, before the first allocation of note. */
void gpuop_mem_tune(void);

/* Returns freed heap pages to the kernel (after a burst of parsing). */
void gpuop_mem_trim(void);

#endif
