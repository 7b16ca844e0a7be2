/*
 * test_pool.c - the cache block pool: blocks are aligned, distinct and keep
 * their contents; freed blocks are reused before new memory is touched;
 * empty slabs go back; large blocks and NULL are handled; the counters
 * return to zero (so a leak of pool blocks fails here and in test_world).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpuop/pool.h"

static void test_blocks_are_distinct_and_kept(void **state)
{
    (void)state;
    struct gpuop_pool_stats st0, st;
    gpuop_pool_stats(&st0);
    enum { N = 5000 };
    unsigned char **p = calloc(N, sizeof(*p));
    assert_non_null(p);
    for (int i = 0; i < N; i++) {
        size_t size = 1 + (size_t)(i * 37) % GPUOP_POOL_MAX;
        p[i] = gpuop_pool_alloc(size);
        assert_non_null(p[i]);
        assert_int_equal((uintptr_t)p[i] % 16, 0);
        memset(p[i], i & 0xff, size);
    }
    gpuop_pool_stats(&st);
    assert_int_equal(st.blocks, st0.blocks + N);
    for (int i = 0; i < N; i++) {
        size_t size = 1 + (size_t)(i * 37) % GPUOP_POOL_MAX;
        for (size_t j = 0; j < size; j++)
            assert_int_equal(p[i][j], i & 0xff);
    }
    for (int i = 0; i < N; i++)
        gpuop_pool_free(p[i]);
    gpuop_pool_stats(&st);
    assert_int_equal(st.blocks, st0.blocks);
    assert_int_equal(st.bytes, st0.bytes);
    free(p);
}

static void test_freed_blocks_are_reused(void **state)
{
    (void)state;
    enum { N = 2000 };
    void *p[N];
    for (int i = 0; i < N; i++)
        assert_non_null(p[i] = gpuop_pool_alloc(96));
    struct gpuop_pool_stats full;
    gpuop_pool_stats(&full);
    /* free every other block, allocate as many again: no new slab */
    for (int i = 0; i < N; i += 2)
        gpuop_pool_free(p[i]);
    for (int i = 0; i < N; i += 2)
        assert_non_null(p[i] = gpuop_pool_alloc(90)); /* same 96-byte class */
    struct gpuop_pool_stats again;
    gpuop_pool_stats(&again);
    assert_int_equal(again.slabs, full.slabs);
    for (int i = 0; i < N; i++)
        gpuop_pool_free(p[i]);
}

static void test_empty_slabs_are_returned(void **state)
{
    (void)state;
    struct gpuop_pool_stats st0, st1, st2;
    gpuop_pool_stats(&st0);
    /* 64 KiB slabs: 4,000 blocks of 256 bytes need about 16 */
    enum { N = 4000 };
    void **p = calloc(N, sizeof(*p));
    assert_non_null(p);
    for (int i = 0; i < N; i++)
        assert_non_null(p[i] = gpuop_pool_alloc(256));
    gpuop_pool_stats(&st1);
    assert_true(st1.slabs >= st0.slabs + 15);
    for (int i = 0; i < N; i++)
        gpuop_pool_free(p[i]);
    gpuop_pool_stats(&st2);
    assert_true(st2.slabs <= st0.slabs + 1); /* a class keeps one slab */
    free(p);
    gpuop_pool_trim(); /* nothing live: nothing kept */
    gpuop_pool_stats(&st2);
    assert_int_equal(st2.slabs, 0);
    void *q = gpuop_pool_alloc(16); /* and it still works */
    assert_non_null(q);
    gpuop_pool_free(q);
    gpuop_pool_trim();
}

static void test_large_and_null(void **state)
{
    (void)state;
    struct gpuop_pool_stats st0, st;
    gpuop_pool_stats(&st0);
    char *big = gpuop_pool_alloc(GPUOP_POOL_MAX + 1);
    assert_non_null(big);
    memset(big, 7, GPUOP_POOL_MAX + 1);
    char *zero = gpuop_pool_alloc(0);
    assert_non_null(zero);
    gpuop_pool_stats(&st);
    assert_int_equal(st.blocks, st0.blocks + 2);
    gpuop_pool_free(big);
    gpuop_pool_free(zero);
    gpuop_pool_free(NULL);
    gpuop_pool_stats(&st);
    assert_int_equal(st.blocks, st0.blocks);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocks_are_distinct_and_kept),
        cmocka_unit_test(test_freed_blocks_are_reused),
        cmocka_unit_test(test_empty_slabs_are_returned),
        cmocka_unit_test(test_large_and_null),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
