/*
 * clock.h - the one clock of gpuop, and the one time formatter.
 *
 * Two readings: wall time (seconds or microseconds since the epoch: what
 * goes into a status, a label, a Lease, a log line) and monotonic
 * milliseconds from an arbitrary start (how long since, when is due: never
 * jumps with the wall clock). Every "what time is it" outside the libuv
 * timers' own scheduling reads one of these, so a test can set the time
 * once (gpuop_clock_set) and move it (gpuop_clock_advance) for all of them.
 *
 * A libuv timer still fires on libuv's clock; code that arms one computes
 * the delay from this clock, and a timer that finds its work not yet due
 * on this clock arms again for what is left (the work queue, the leader).
 *
 * Formatting: RFC 3339 in UTC, "2026-11-29T21:06:40Z", with 0, 3 or 6
 * fractional digits (conditions and labels, log lines, metav1.MicroTime).
 *
 * Layer: base
 */
#ifndef GPUOP_CLOCK_H
#define GPUOP_CLOCK_H

#include <stddef.h>
#include <stdint.h>

#define GPUOP_US_PER_S  1000000LL
#define GPUOP_US_PER_MS 1000LL

/* Wall time in seconds since the epoch. */
long long gpuop_clock_wall(void);

/* Wall time in microseconds since the epoch. */
int64_t gpuop_clock_wall_us(void);

/* Monotonic milliseconds from an arbitrary start. */
uint64_t gpuop_clock_ms(void);

/* Test hook: from now on the clock reads wall_us and mono_ms, moving only
 * with gpuop_clock_advance, until gpuop_clock_real. */
void gpuop_clock_set(int64_t wall_us, uint64_t mono_ms);

/* Test hook: from now on the wall reading is wall_us (until the next set
 * or gpuop_clock_real); the monotonic one stays the system's, so timers and
 * the work queue keep running (tests of what a time is said as). */
void gpuop_clock_set_wall(int64_t wall_us);

/* Test hook: moves a set clock (both readings) on by ms; a real clock is
 * first set to its current readings. */
void gpuop_clock_advance(uint64_t ms);

/* Back to the system's clocks. */
void gpuop_clock_real(void);

/* Fractional digits of a formatted time. */
enum gpuop_time_digits {
    GPUOP_TIME_S = 0,  /* 2026-11-29T21:06:40Z */
    GPUOP_TIME_MS = 3, /* 2026-11-29T21:06:40.123Z */
    GPUOP_TIME_US = 6, /* 2026-11-29T21:06:40.123456Z (metav1.MicroTime) */
};

/* Bytes a formatted time needs, its NUL included. */
#define GPUOP_TIME_MAX 32

/* Writes wall_us (microseconds since the epoch; below 0 counts as 0) as
 * RFC 3339 UTC with the given digits into buf (size bytes, GPUOP_TIME_MAX
 * is always enough; a shorter buf gets a truncated, NUL-terminated time).
 * Returns buf. */
char *gpuop_time_format(char *buf, size_t size, int64_t wall_us, enum gpuop_time_digits digits);

#endif
