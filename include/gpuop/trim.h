/*
 * trim.h - keeping the resident set small with glibc's allocator.
 *
 * Parsing leaves freed blocks between the long-lived cache entries made
 * meanwhile; glibc keeps such memory in the process unless told otherwise,
 * so the resident set would keep the size of the largest burst ever
 * parsed. gpuop fixes the allocator's thresholds at start (no dynamic
 * growth of the trim and mmap thresholds: gpuop_trim_tune, from the run
 * command) and gives freed pages back when its work is done.
 *
 * The one rule: the controller alone trims. Every change the informers
 * see ends in its work queue, so every burst of parsing and writing ends
 * when that queue runs dry; then it trims, at most every
 * GPUOP_MEM_TRIM_EVERY_MS (a rollout parses one watch event after another,
 * and their freed trees leave holes; how much, docs/benchmarks-history.md, "How
 * the memory came down"), or once that long after the last burst. The informers parse watch events
 * and list items of the kinds they convert in the JSON scratch arena
 * (jsonarena.h), which makes no heap garbage at all. All no-ops on other C
 * libraries.
 */
#ifndef GPUOP_TRIM_H
#define GPUOP_TRIM_H

#include <stdbool.h>
#include <stdint.h>

/* Call once at start, before the first allocation of note. */
void gpuop_trim_tune(void);

/* Returns freed heap pages to the kernel (after a burst of parsing). */
void gpuop_trim_now(void);

#define GPUOP_MEM_TRIM_EVERY_MS 10000

/* gpuop_trim_now() unless the last one ran less than GPUOP_MEM_TRIM_EVERY_MS
 * before now_ms (gpuop_clock_ms). True when it trimmed. */
bool gpuop_trim_maybe(uint64_t now_ms);

#endif
