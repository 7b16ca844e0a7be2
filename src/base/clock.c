/*
 * clock.c - the clock and the time formatter (see clock.h).
 *
 * The system's readings are CLOCK_REALTIME and CLOCK_MONOTONIC. A set
 * clock is two numbers that move only when a test says so.
 */
#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#include "gpuop/clock.h"

static struct {
    bool set;      /* both readings are set */
    bool wall_set; /* the wall reading is set (both, or gpuop_clock_set_wall) */
    int64_t wall_us;
    uint64_t mono_ms;
} fake;

int64_t gpuop_clock_wall_us(void)
{
    if (fake.wall_set)
        return fake.wall_us;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * GPUOP_US_PER_S + ts.tv_nsec / 1000;
}

long long gpuop_clock_wall(void)
{
    return (long long)(gpuop_clock_wall_us() / GPUOP_US_PER_S);
}

uint64_t gpuop_clock_ms(void)
{
    if (fake.set)
        return fake.mono_ms;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void gpuop_clock_set(int64_t wall_us, uint64_t mono_ms)
{
    fake.wall_us = wall_us;
    fake.mono_ms = mono_ms;
    fake.set = true;
    fake.wall_set = true;
}

void gpuop_clock_set_wall(int64_t wall_us)
{
    fake.wall_us = wall_us;
    fake.wall_set = true;
}

void gpuop_clock_advance(uint64_t ms)
{
    if (!fake.set)
        gpuop_clock_set(gpuop_clock_wall_us(), gpuop_clock_ms());
    fake.wall_us += (int64_t)ms * GPUOP_US_PER_MS;
    fake.mono_ms += ms;
}

void gpuop_clock_real(void)
{
    fake.set = false;
    fake.wall_set = false;
}

char *gpuop_time_format(char *buf, size_t size, int64_t wall_us, enum gpuop_time_digits digits)
{
    if (!size)
        return buf;
    if (wall_us < 0)
        wall_us = 0;
    time_t t = (time_t)(wall_us / GPUOP_US_PER_S);
    long us = (long)(wall_us % GPUOP_US_PER_S);
    struct tm tm;
    if (!gmtime_r(&t, &tm)) { /* beyond what struct tm holds */
        t = 0;
        us = 0;
        gmtime_r(&t, &tm);
    }
    char whole[GPUOP_TIME_MAX];
    if (!strftime(whole, sizeof(whole), "%Y-%m-%dT%H:%M:%S", &tm))
        whole[0] = '\0'; /* not reached: a year has at most 11 digits */
    if (digits == GPUOP_TIME_MS)
        snprintf(buf, size, "%s.%03ldZ", whole, us / 1000);
    else if (digits == GPUOP_TIME_US)
        snprintf(buf, size, "%s.%06ldZ", whole, us);
    else
        snprintf(buf, size, "%sZ", whole);
    return buf;
}
