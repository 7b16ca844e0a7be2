/*
 * test_hash.c - the one hash: FNV-1a 64 against the published test
 * vectors, chaining, and the finaliser's never-0 promise.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "gpuop/hash.h"

static void test_fnv1a_vectors(void **state)
{
    (void)state;
    /* FNV-1a 64-bit of "", "a" and "foobar" (the reference test suite) */
    assert_true(gpuop_hash_bytes(GPUOP_HASH_INIT, "", 0) == 0xcbf29ce484222325ULL);
    assert_true(gpuop_hash_bytes(GPUOP_HASH_INIT, "a", 1) == 0xaf63dc4c8601ec8cULL);
    assert_true(gpuop_hash_bytes(GPUOP_HASH_INIT, "foobar", 6) == 0x85944171f73967e8ULL);
}

static void test_chains(void **state)
{
    (void)state;
    uint64_t h = gpuop_hash_bytes(GPUOP_HASH_INIT, "foo", 3);
    assert_true(gpuop_hash_bytes(h, "bar", 3) == gpuop_hash_bytes(GPUOP_HASH_INIT, "foobar", 6));
    assert_true(gpuop_hash_str("foobar") ==
                gpuop_hash_mix(gpuop_hash_bytes(GPUOP_HASH_INIT, "foobar", 6)));
}

static void test_low_bits_spread(void **state)
{
    (void)state;
    /* 4,096 node names that differ only at their end fill a 4,096-slot
     * table's low 12 bits nearly as random keys would. */
    enum { N = 4096 };
    static unsigned char seen[N];
    char name[32];
    size_t used = 0;
    memset(seen, 0, sizeof(seen));
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof(name), "gpu-node-%04d", i);
        uint64_t h = gpuop_hash_str(name);
        assert_true(h != 0);
        if (!seen[h & (N - 1)]++)
            used++;
    }
    /* random keys occupy 1 - 1/e of the slots, about 2,589; demand 2,400 */
    assert_true(used > 2400);
}

/* The JSON content hash: key order does not matter, content does; NULL is
 * 0; it is the chain of its canonical text, finalised. */
static void test_json(void **state)
{
    (void)state;
    json_t *a = json_loads("{\"b\":[1,2],\"a\":\"x\"}", 0, NULL);
    json_t *b = json_loads("{\"a\":\"x\",\"b\":[1,2]}", 0, NULL);
    json_t *c = json_loads("{\"a\":\"x\",\"b\":[2,1]}", 0, NULL);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    assert_int_equal(gpuop_hash_json(a), gpuop_hash_json(b));
    assert_int_not_equal(gpuop_hash_json(a), gpuop_hash_json(c));
    assert_int_equal(gpuop_hash_json(NULL), 0);
    const char *text = "{\"a\":\"x\",\"b\":[1,2]}";
    assert_int_equal(gpuop_hash_json(a),
                     gpuop_hash_mix(gpuop_hash_bytes(GPUOP_HASH_INIT, text, strlen(text))));
    assert_int_equal(gpuop_hash_json_bytes(7, NULL), 7); /* NULL adds nothing */
    json_t *s = json_string("x");                        /* not a container: still hashed */
    assert_int_equal(gpuop_hash_json(s),
                     gpuop_hash_mix(gpuop_hash_bytes(GPUOP_HASH_INIT, "\"x\"", 3)));
    json_decref(s);
    json_decref(a);
    json_decref(b);
    json_decref(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fnv1a_vectors),
        cmocka_unit_test(test_chains),
        cmocka_unit_test(test_low_bits_spread),
        cmocka_unit_test(test_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
