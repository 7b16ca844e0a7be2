/*
 * test_trim.c - the allocator helpers: trimming after work is rate-limited
 * by the clock it is given, and a trim leaves live blocks intact.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "gpuop/trim.h"

static void test_trim_sometimes(void **state)
{
    (void)state;
    assert_true(gpuop_trim_maybe(1000000));
    assert_false(gpuop_trim_maybe(1000000 + GPUOP_MEM_TRIM_EVERY_MS - 1));
    assert_true(gpuop_trim_maybe(1000000 + GPUOP_MEM_TRIM_EVERY_MS));
    assert_false(gpuop_trim_maybe(1000000 + GPUOP_MEM_TRIM_EVERY_MS + 1));
}

static void test_trim_keeps_live_blocks(void **state)
{
    (void)state;
    gpuop_trim_tune();
    /* many small blocks, every other one kept: freed holes between live
     * ones, which only a trim gives back; it must not break the live ones */
    enum { N = 20000 };
    char **p = calloc(N, sizeof(*p));
    assert_non_null(p);
    for (int i = 0; i < N; i++) {
        p[i] = malloc(200);
        assert_non_null(p[i]);
        p[i][0] = (char)i;
    }
    for (int i = 0; i < N; i += 2) {
        free(p[i]);
        p[i] = NULL;
    }
    gpuop_trim_now();
    for (int i = 1; i < N; i += 2) {
        assert_int_equal(p[i][0], (char)i);
        free(p[i]);
    }
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trim_sometimes),
        cmocka_unit_test(test_trim_keeps_live_blocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
