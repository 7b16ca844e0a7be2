/*
 * test_arena.c - string arenas: copies are equal and stable while the arena
 * grows (earlier strings never move), a string larger than any chunk fits,
 * and free leaves the arena empty and usable.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpuop/arena.h"

static void test_copies_stay_put(void **state)
{
    (void)state;
    struct gpuop_arena a = GPUOP_ARENA_INIT;
    enum { N = 20000 };
    char **p = calloc(N, sizeof(*p));
    assert_non_null(p);
    char buf[64];
    for (int i = 0; i < N; i++) {
        snprintf(buf, sizeof(buf), "gpu-node-%05d", i);
        p[i] = gpuop_arena_strdup(&a, buf);
        assert_non_null(p[i]);
        assert_ptr_not_equal(p[i], buf);
    }
    for (int i = 0; i < N; i++) {
        snprintf(buf, sizeof(buf), "gpu-node-%05d", i);
        assert_string_equal(p[i], buf);
    }
    /* 20,000 strings of 15 bytes: a few chunks, not one block each */
    assert_true(a.total >= (size_t)N * 15);
    assert_true(a.total < (size_t)N * 15 * 2);
    gpuop_arena_free(&a);
    assert_null(a.head);
    assert_int_equal(a.total, 0);
    assert_string_equal(gpuop_arena_strdup(&a, "again"), "again");
    gpuop_arena_free(&a);
    free(p);
}

static void test_large_string(void **state)
{
    (void)state;
    struct gpuop_arena a = GPUOP_ARENA_INIT;
    size_t n = 600 * 1024;
    char *big = malloc(n + 1);
    assert_non_null(big);
    memset(big, 'x', n);
    big[n] = 0;
    char *small = gpuop_arena_strdup(&a, "before");
    char *copy = gpuop_arena_strdup(&a, big);
    assert_non_null(copy);
    assert_int_equal(strlen(copy), n);
    assert_string_equal(small, "before");
    assert_string_equal(gpuop_arena_strdup(&a, ""), "");
    gpuop_arena_free(&a);
    free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_copies_stay_put),
        cmocka_unit_test(test_large_string),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
