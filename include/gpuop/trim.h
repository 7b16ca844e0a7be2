/*
 * trim.h - keeping the resident set small with glibc's allocator.
 *
 * A LIST page is parsed into a large, short-lived jansson tree; glibc keeps
 * such freed memory in the process unless told otherwise, so the resident
 * set would stay at the size of the largest page ever parsed. gpuop fixes
 * the allocator's thresholds at start (no dynamic growth of the trim and
 * mmap thresholds) and gives freed pages back after each complete list,
 * and when the controller's queue runs dry after work, at most every
 * GPUOP_MEM_TRIM_EVERY_MS: a rollout parses one watch event after another,
 * and their freed trees leave holes between the cache entries made
 * meanwhile (1.2 MB of them at 5,000 nodes). All no-ops on other C
 * libraries.
 */
#ifndef GPUOP_TRIM_H
#define GPUOP_TRIM_H

#include <stdbool.h>
#include <stdint.h>

/* Call once at start, before the first allocation of note. */
void gpuop_trim_tune(void);

/* Returns freed heap pages to the kernel (after a burst of parsing). */
void gpuop_trim_trim(void);

#define GPUOP_MEM_TRIM_EVERY_MS 10000

/* gpuop_trim_trim() unless the last one ran less than GPUOP_MEM_TRIM_EVERY_MS
 * before now_ms (a monotonic clock, e.g. uv_now). True when it trimmed. */
bool gpuop_trim_trim_sometimes(uint64_t now_ms);

#endif
