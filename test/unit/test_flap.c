/*
 * test_flap.c - the hash -> time set behind flap suppression: what is put
 * is got back through growth, a put replaces, prune drops exactly the old
 * entries and shrinks the table, a delete keeps every other entry
 * reachable (also in long probe runs), hashes of similar keys differ, and the
 * memory per key stays far below a string map's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpuop/hash.h"
#include "gpuop/flap.h"

static uint64_t key_hash(int i)
{
    char key[96];
    snprintf(key, sizeof(key), "A|gpu-node-%05d|device-plugin|PodPending", i);
    return gpuop_hash_str(key);
}

static void test_put_get_through_growth(void **state)
{
    (void)state;
    struct gpuop_flap s = GPUOP_FLAP_INIT;
    enum { N = 6000 };
    assert_int_equal(gpuop_flap_get(&s, key_hash(0)), 0);
    for (int i = 0; i < N; i++)
        assert_int_equal(gpuop_flap_put(&s, key_hash(i), 1000 + i), 0);
    assert_int_equal(s.len, N);
    for (int i = 0; i < N; i++)
        assert_int_equal(gpuop_flap_get(&s, key_hash(i)), 1000 + i);
    assert_int_equal(gpuop_flap_get(&s, key_hash(N)), 0);
    /* at most 3/4 full: 8,192 slots of 16 bytes for 6,000 */
    assert_int_equal(s.cap, 8192);
    assert_true(s.cap * sizeof(*s.slots) / N < 24);
    /* replace: same length, new time */
    assert_int_equal(gpuop_flap_put(&s, key_hash(7), 5), 0);
    assert_int_equal(s.len, N);
    assert_int_equal(gpuop_flap_get(&s, key_hash(7)), 5);
    gpuop_flap_free(&s);
    assert_null(s.slots);
    assert_int_equal(s.len, 0);
}

static void test_prune_drops_the_old_and_shrinks(void **state)
{
    (void)state;
    struct gpuop_flap s = GPUOP_FLAP_INIT;
    for (int i = 0; i < 1000; i++)
        assert_int_equal(gpuop_flap_put(&s, key_hash(i), i < 900 ? 100 : 200), 0);
    size_t cap = s.cap;
    assert_int_equal(gpuop_flap_prune(&s, 100), 0); /* nothing before 100 */
    assert_int_equal(s.len, 1000);
    assert_int_equal(gpuop_flap_prune(&s, 150), 900);
    assert_int_equal(s.len, 100);
    assert_true(s.cap < cap);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(gpuop_flap_get(&s, key_hash(i)), i < 900 ? 0 : 200);
    /* still usable after the rebuild, and empty frees the table */
    assert_int_equal(gpuop_flap_put(&s, key_hash(1), 300), 0);
    assert_int_equal(gpuop_flap_get(&s, key_hash(1)), 300);
    assert_int_equal(gpuop_flap_prune(&s, 1000), 101);
    assert_int_equal(s.len, 0);
    assert_null(s.slots);
    assert_int_equal(gpuop_flap_get(&s, key_hash(1)), 0);
    gpuop_flap_free(&s);
}

static void test_del_keeps_the_rest_reachable(void **state)
{
    (void)state;
    struct gpuop_flap s = GPUOP_FLAP_INIT;
    enum { N = 3000 };
    for (int i = 0; i < N; i++)
        assert_int_equal(gpuop_flap_put(&s, key_hash(i), 10 + i), 0);
    assert_int_equal(gpuop_flap_min(&s), 10);
    assert_false(gpuop_flap_del(&s, key_hash(N))); /* never put */
    /* every third one, in an order unrelated to the slots */
    for (int i = 0; i < N; i += 3)
        assert_true(gpuop_flap_del(&s, key_hash(i)));
    assert_int_equal(s.len, N - N / 3);
    for (int i = 0; i < N; i++)
        assert_int_equal(gpuop_flap_get(&s, key_hash(i)), i % 3 ? 10 + i : 0);
    assert_int_equal(gpuop_flap_min(&s), 11);
    assert_false(gpuop_flap_del(&s, key_hash(0)));
    /* deleting most of them gives the memory back: the table shrinks to
     * what the rest needs, and is freed when empty */
    size_t big = s.cap;
    for (int i = 0; i < N - 10; i++)
        if (i % 3)
            assert_true(gpuop_flap_del(&s, key_hash(i)));
    assert_int_equal(s.len, 7);
    assert_true(s.cap <= 24 && s.cap < big); /* a small table: 16 or 24 slots */
    for (int i = N - 10; i < N; i++)
        assert_int_equal(gpuop_flap_get(&s, key_hash(i)), i % 3 ? 10 + i : 0);
    for (int i = N - 10; i < N; i++)
        if (i % 3)
            assert_true(gpuop_flap_del(&s, key_hash(i)));
    assert_int_equal(s.len, 0);
    assert_null(s.slots);
    assert_int_equal(gpuop_flap_min(&s), 0);
    assert_int_equal(gpuop_flap_put(&s, key_hash(1), 5), 0); /* usable again */
    assert_int_equal(gpuop_flap_get(&s, key_hash(1)), 5);
    /* hashes sharing one home slot (a long run that wraps the table's
     * end): delete from its middle, the rest stays reachable */
    struct gpuop_flap r = GPUOP_FLAP_INIT;
    for (uint64_t i = 1; i <= 10; i++)
        assert_int_equal(gpuop_flap_put(&r, 15 | (i << 32), (long long)i), 0);
    assert_int_equal(r.cap, 16);
    assert_true(gpuop_flap_del(&r, 15 | (4ull << 32)));
    assert_true(gpuop_flap_del(&r, 15 | (1ull << 32)));
    for (uint64_t i = 1; i <= 10; i++)
        assert_int_equal(gpuop_flap_get(&r, 15 | (i << 32)), i == 1 || i == 4 ? 0 : (long long)i);
    for (uint64_t i = 1; i <= 10; i++)
        gpuop_flap_del(&r, 15 | (i << 32));
    assert_int_equal(r.len, 0);
    assert_int_equal(gpuop_flap_min(&r), 0);
    gpuop_flap_free(&r);
    gpuop_flap_free(&s);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void test_hashes_of_similar_keys_differ(void **state)
{
    (void)state;
    /* 20,000 keys differing in a digit or the direction letter: no two
     * hashes equal, none 0, and the low bits (the probe start) spread */
    enum { N = 10000 };
    uint64_t *h = calloc(2 * N, sizeof(*h));
    assert_non_null(h);
    char key[96];
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof(key), "A|gpu-node-%05d|container-toolkit|PodNotCreated", i);
        h[i] = gpuop_hash_str(key);
        key[0] = 'C';
        h[N + i] = gpuop_hash_str(key);
    }
    int buckets[64] = {0};
    for (int i = 0; i < 2 * N; i++) {
        assert_true(h[i] != 0);
        buckets[h[i] & 63]++;
    }
    for (int b = 0; b < 64; b++) /* 312 expected in each */
        assert_true(buckets[b] > 200 && buckets[b] < 450);
    qsort(h, 2 * N, sizeof(*h), cmp_u64);
    for (int i = 1; i < 2 * N; i++)
        assert_true(h[i] != h[i - 1]);
    free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_get_through_growth),
        cmocka_unit_test(test_prune_drops_the_old_and_shrinks),
        cmocka_unit_test(test_del_keeps_the_rest_reachable),
        cmocka_unit_test(test_hashes_of_similar_keys_differ),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
