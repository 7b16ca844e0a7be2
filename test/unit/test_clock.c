/*
 * test_clock.c - the one clock and the one time formatter: a set clock
 * reads what was set and moves only when advanced (wall and monotonic
 * together), the real clock comes back; RFC 3339 with 0, 3 and 6 digits,
 * the epoch for a negative time, truncation in a short buffer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpuop/clock.h"

#define T0 1764450400LL /* 2025-11-29T21:06:40Z */

static void test_set_advance(void **state)
{
    (void)state;
    long long real = gpuop_clock_wall();
    assert_true(real > T0); /* the system's clock, after 2025 */
    gpuop_clock_set(T0 * GPUOP_US_PER_S + 250000, 5000);
    assert_int_equal(gpuop_clock_wall(), T0);
    assert_int_equal(gpuop_clock_wall_us(), T0 * GPUOP_US_PER_S + 250000);
    assert_int_equal(gpuop_clock_ms(), 5000);
    assert_int_equal(gpuop_clock_ms(), 5000); /* frozen */
    gpuop_clock_advance(1750);
    assert_int_equal(gpuop_clock_ms(), 6750);
    assert_int_equal(gpuop_clock_wall(), T0 + 2);
    gpuop_clock_real();
    assert_true(gpuop_clock_wall() >= real);

    uint64_t m = gpuop_clock_ms();
    gpuop_clock_advance(60000); /* from the real readings */
    assert_true(gpuop_clock_ms() >= m + 60000);
    gpuop_clock_real();
}

static void test_format(void **state)
{
    (void)state;
    char buf[GPUOP_TIME_MAX];
    int64_t t = T0 * GPUOP_US_PER_S + 123456;
    assert_string_equal(gpuop_time_format(buf, sizeof(buf), t, GPUOP_TIME_S),
                        "2025-11-29T21:06:40Z");
    assert_string_equal(gpuop_time_format(buf, sizeof(buf), t, GPUOP_TIME_MS),
                        "2025-11-29T21:06:40.123Z");
    assert_string_equal(gpuop_time_format(buf, sizeof(buf), t, GPUOP_TIME_US),
                        "2025-11-29T21:06:40.123456Z");
    assert_string_equal(gpuop_time_format(buf, sizeof(buf), 0, GPUOP_TIME_S),
                        "1970-01-01T00:00:00Z");
    assert_string_equal(gpuop_time_format(buf, sizeof(buf), -5, GPUOP_TIME_MS),
                        "1970-01-01T00:00:00.000Z");
    char small[11];
    assert_string_equal(gpuop_time_format(small, sizeof(small), t, GPUOP_TIME_S), "2025-11-29");
    gpuop_time_format(buf, 0, t, GPUOP_TIME_S); /* writes nothing */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_advance),
        cmocka_unit_test(test_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
