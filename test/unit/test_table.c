/*
 * test_table.c - the open-addressing core (base/table.h): the capacity rule
 * of each table, and insert / find / delete / rehash with collisions
 * forced (every key hashed to one of three slots at the table's end, so
 * the runs wrap around) checked against a plain array after every step:
 * each key present is found, each key absent is not, and every entry lies
 * in an unbroken run from its home. And the string map on it, against a
 * reference.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpuop/map.h"
#include "gpuop/table.h"

/* A test slot: key + 1 (0: empty) and a value. */
struct slot {
    uint64_t key1;
    uint64_t value;
};

enum { CAP = 64, KEYS = 200 };

/* A hash whose home in a table of cap slots is slot. */
static uint64_t hash_at(uint64_t slot, uint64_t cap)
{
    return ((slot << 32) + cap - 1) / cap;
}

/* Three homes at the end of the table (of CAP slots; at the end of one of
 * 48 too), and now and then one elsewhere. */
static uint64_t key_hash(uint64_t key)
{
    return key % 11 == 0 ? key * 0x9e3779b97f4a7c15ULL : hash_at(CAP - 3 + key % 3, CAP);
}

static uint64_t slot_hash(const void *s)
{
    return key_hash(((const struct slot *)s)->key1 - 1);
}

static bool slot_match(const void *s, uint64_t hash, const void *key)
{
    return ((const struct slot *)s)->key1 == *(const uint64_t *)key + 1;
}

static bool even_value(const void *s, const void *arg)
{
    (void)arg;
    return ((const struct slot *)s)->value % 2 == 0;
}

static size_t find(const struct slot *t, size_t cap, uint64_t key)
{
    return gpuop_table_find(t, sizeof(*t), cap, key_hash(key), slot_match, &key);
}

/* Everything the reference says is there, is found with its value, and
 * nothing else; every entry is reachable from its home. */
static void check(const struct slot *t, size_t cap, const uint64_t *ref, size_t n)
{
    size_t held = 0;
    for (uint64_t k = 0; k < KEYS; k++) {
        size_t i = find(t, cap, k);
        if (ref[k]) {
            assert_int_equal(t[i].key1, k + 1);
            assert_int_equal(t[i].value, ref[k]);
            held++;
        } else {
            assert_int_equal(t[i].key1, 0);
        }
    }
    assert_int_equal(held, n);
    size_t occupied = 0;
    for (size_t i = 0; i < cap; i++) {
        if (!t[i].key1)
            continue;
        occupied++;
        for (size_t j = gpuop_table_home(slot_hash(&t[i]), cap); j != i;
             j = gpuop_table_next(j, cap))
            assert_int_not_equal(t[j].key1, 0); /* no hole between home and slot */
    }
    assert_int_equal(occupied, n);
}

/* Each table's rule: the map at 7/10, the flap memory at 3/4, the
 * analysis's index at 1/2; never below 16; powers of two and 1.5 times
 * them. */
static void test_capacity_rule(void **state)
{
    (void)state;
    assert_int_equal(gpuop_table_cap(0, 70), 16);
    assert_int_equal(gpuop_table_cap(11, 70), 16);
    assert_int_equal(gpuop_table_cap(12, 70), 24);
    assert_int_equal(gpuop_table_cap(17, 70), 32);
    assert_int_equal(gpuop_table_cap(23, 70), 48);
    assert_int_equal(gpuop_table_cap(12, 75), 16);
    assert_int_equal(gpuop_table_cap(13, 75), 24);
    assert_int_equal(gpuop_table_cap(8, 50), 16);
    assert_int_equal(gpuop_table_cap(9, 50), 24);
    assert_int_equal(gpuop_table_cap(6000, 75), 8192);  /* flap.h's 128 KB */
    assert_int_equal(gpuop_table_cap(6000, 70), 12288); /* what 7/10 would cost */
    assert_int_equal(gpuop_table_cap(5000, 50), 12288);
    assert_int_equal(gpuop_table_cap(30000, 70), 49152); /* 65,536 by doubling */
    assert_true(gpuop_table_over(1, 0, 70));             /* an empty table grows first */
    assert_false(gpuop_table_over(11, 16, 70));
    assert_true(gpuop_table_over(12, 16, 70));
    assert_false(gpuop_table_over(12, 16, 75));
}

/* A delete in the middle of a wrapped run pulls back exactly the entries
 * that would otherwise be lost. */
static void test_delete_wrapped_run(void **state)
{
    (void)state;
    struct slot t[CAP] = {{0}};
    uint64_t ref[KEYS] = {0};
    size_t n = 0;
    /* keys 1..12 but 11 have homes 61..63: the run wraps to 0 and beyond */
    for (uint64_t k = 1; k <= 12; k++) {
        size_t i = find(t, CAP, k);
        assert_int_equal(t[i].key1, 0);
        t[i] = (struct slot){k + 1, k * 10};
        ref[k] = k * 10;
        n++;
    }
    assert_int_not_equal(t[0].key1, 0); /* it wrapped */
    check(t, CAP, ref, n);
    for (uint64_t k = 1; k <= 12; k += 2) {
        gpuop_table_remove(t, sizeof(*t), CAP, find(t, CAP, k), slot_hash);
        ref[k] = 0;
        n--;
        check(t, CAP, ref, n);
    }
}

/* Random inserts, replaces and deletes against the reference, checked
 * after every step; then rehash, all and filtered. */
static void random_steps(struct slot *t, size_t cap, uint64_t *ref, size_t *np)
{
    size_t n = *np;
    for (int step = 0; step < 20000; step++) {
        uint64_t k = (uint64_t)rand() % KEYS;
        size_t i = find(t, cap, k);
        if (rand() % 2 && (t[i].key1 || !gpuop_table_over(n + 1, cap, 75))) {
            uint64_t v = (uint64_t)rand() + 1;
            if (!t[i].key1)
                n++;
            t[i] = (struct slot){k + 1, v};
            ref[k] = v;
        } else if (t[i].key1) {
            gpuop_table_remove(t, sizeof(*t), cap, i, slot_hash);
            ref[k] = 0;
            n--;
        } else {
            assert_int_equal(ref[k], 0);
        }
        if (step % 7 == 0 || step > 19900)
            check(t, cap, ref, n);
    }
    check(t, cap, ref, n);
    assert_true(n > 10);
    *np = n;
}

static void test_random_against_reference(void **state)
{
    (void)state;
    /* a table of 1.5 times a power of two first (its runs wrap too) */
    enum { CAP48 = 48 };
    struct slot t48[CAP48] = {{0}};
    uint64_t ref48[KEYS] = {0};
    size_t n48 = 0;
    srand(41);
    random_steps(t48, CAP48, ref48, &n48);
    assert_int_not_equal(t48[0].key1, 0); /* it wrapped */

    struct slot t[CAP] = {{0}};
    uint64_t ref[KEYS] = {0};
    size_t n = 0;
    srand(14);
    random_steps(t, CAP, ref, &n);

    /* rehash into a larger table: the same entries, found there */
    enum { BIG = 256 };
    struct slot *big = calloc(BIG, sizeof(*big));
    assert_non_null(big);
    assert_int_equal(
        gpuop_table_rehash(big, BIG, t, CAP,
                           &(struct gpuop_table_move){.size = sizeof(*t), .hash_of = slot_hash}),
        n);
    check(big, BIG, ref, n);
    /* and filtered: only even values move */
    struct slot evens[CAP] = {{0}};
    size_t keep = 0;
    for (uint64_t k = 0; k < KEYS; k++) {
        if (ref[k] % 2)
            ref[k] = 0;
        else if (ref[k])
            keep++;
    }
    assert_int_equal(gpuop_table_rehash(evens, CAP, big, BIG,
                                        &(struct gpuop_table_move){.size = sizeof(*big),
                                                                   .hash_of = slot_hash,
                                                                   .keep = even_value}),
                     keep);
    check(evens, CAP, ref, keep);
    free(big);

    /* an empty source moves nothing */
    assert_int_equal(
        gpuop_table_rehash(evens, CAP, NULL, 0,
                           &(struct gpuop_table_move){.size = sizeof(*t), .hash_of = slot_hash}),
        0);
}

/* Pointer slots, as the map and the name index use: NULL is empty. */
static bool str_match(const void *slot, uint64_t hash, const void *key)
{
    return strcmp(*(const char *const *)slot, key) == 0;
}

static void test_pointer_slots(void **state)
{
    (void)state;
    const char *slots[16] = {0};
    static const char *const names[] = {"a", "b", "c", "d"};
    for (size_t k = 0; k < 4; k++) {
        size_t i = gpuop_table_find(slots, sizeof(*slots), 16, hash_at(5, 16), str_match, names[k]);
        assert_null(slots[i]);
        slots[i] = names[k];
    }
    /* all share home 5: they sit at 5..8 */
    for (size_t k = 0; k < 4; k++)
        assert_ptr_equal(slots[5 + k], names[k]);
    assert_int_equal(gpuop_table_find(slots, sizeof(*slots), 16, hash_at(5, 16), str_match, "c"),
                     7);
    assert_int_equal(gpuop_table_find(slots, sizeof(*slots), 16, hash_at(5, 16), str_match, "e"),
                     9);
    assert_int_equal(gpuop_table_find(slots, sizeof(*slots), 16, hash_at(5, 16), NULL, NULL), 9);
}

/* The string map on the core: random puts, replaces and deletes against
 * a reference array, every key checked as it goes; its capacity stays what
 * map.h promises (load <= 0.7, never shrinking). */
static void test_map_against_reference(void **state)
{
    (void)state;
    enum { MAP_KEYS = 3000 };
    static intptr_t ref[MAP_KEYS];
    struct gpuop_map m;
    char key[32];
    size_t n = 0;
    gpuop_map_init(&m);
    srand(1414);
    for (int step = 0; step < 60000; step++) {
        int k = rand() % MAP_KEYS;
        snprintf(key, sizeof(key), "gpu-%04d", k);
        if (rand() % 3) {
            void *old = (void *)1;
            intptr_t v = step + 1;
            assert_int_equal(gpuop_map_put(&m, key, (void *)v, &old), 0);
            assert_ptr_equal(old, (void *)ref[k]);
            n += !ref[k];
            ref[k] = v;
        } else {
            assert_ptr_equal(gpuop_map_del(&m, key), (void *)ref[k]);
            n -= !!ref[k];
            ref[k] = 0;
        }
        assert_int_equal(m.len, n);
        assert_false(gpuop_table_over(m.len, m.cap, 70));
        if (step % 1000 == 0 || step == 59999) {
            for (int j = 0; j < MAP_KEYS; j++) {
                snprintf(key, sizeof(key), "gpu-%04d", j);
                assert_ptr_equal(gpuop_map_get(&m, key), (void *)ref[j]);
            }
        }
    }
    gpuop_map_free(&m, NULL);
    for (int i = 0; i < 5000; i++) {
        snprintf(key, sizeof(key), "node-%d", i);
        assert_int_equal(gpuop_map_put(&m, key, (void *)1, NULL), 0);
    }
    assert_int_equal(m.cap, 8192); /* 5,000 keys: 64 KB of slots */
    gpuop_map_free(&m, NULL);
}

/* A key found by its 32-bit hash alone: exactly one key of that hash (a
 * skipped one aside), or none. gpu-node-14614 and gpu-node-98438 share
 * their 32-bit hash. */
static void test_map_get_h32(void **state)
{
    (void)state;
    struct gpuop_map m;
    gpuop_map_init(&m);
    uint32_t h = gpuop_map_h32("gpu-node-14614");
    assert_int_equal(h, gpuop_map_h32("gpu-node-98438"));
    const char *key = NULL;
    assert_null(gpuop_map_get_h32(&m, h, NULL, &key)); /* empty */
    char name[32];
    for (int i = 0; i < 100; i++) { /* neighbours in the probe runs */
        snprintf(name, sizeof(name), "n%d", i);
        assert_int_equal(gpuop_map_put(&m, name, (void *)(uintptr_t)(i + 1), NULL), 0);
    }
    assert_null(gpuop_map_get_h32(&m, h, NULL, &key));
    assert_int_equal(gpuop_map_put(&m, "gpu-node-14614", (void *)1000, NULL), 0);
    assert_ptr_equal(gpuop_map_get_h32(&m, h, NULL, &key), (void *)1000);
    assert_string_equal(key, "gpu-node-14614");
    assert_null(gpuop_map_get_h32(&m, h, "gpu-node-14614", &key));
    assert_int_equal(gpuop_map_put(&m, "gpu-node-98438", (void *)2000, NULL), 0);
    assert_null(gpuop_map_get_h32(&m, h, NULL, &key)); /* two: none */
    assert_ptr_equal(gpuop_map_get_h32(&m, h, "gpu-node-14614", &key), (void *)2000);
    assert_string_equal(key, "gpu-node-98438");
    assert_ptr_equal(gpuop_map_get_h32(&m, h, "gpu-node-98438", NULL), (void *)1000);
    assert_ptr_equal(gpuop_map_get_h32(&m, gpuop_map_h32("n7"), NULL, &key), (void *)8);
    assert_string_equal(key, "n7");
    gpuop_map_del(&m, "gpu-node-14614");
    assert_ptr_equal(gpuop_map_get_h32(&m, h, NULL, &key), (void *)2000);
    gpuop_map_free(&m, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_capacity_rule),
        cmocka_unit_test(test_delete_wrapped_run),
        cmocka_unit_test(test_random_against_reference),
        cmocka_unit_test(test_pointer_slots),
        cmocka_unit_test(test_map_against_reference),
        cmocka_unit_test(test_map_get_h32),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
