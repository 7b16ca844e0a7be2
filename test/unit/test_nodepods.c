/*
 * test_nodepods.c - the caches' index of pods by node (cache/nodepods.c)
 * against a plain array: random adds and removes of pods on a few nodes
 * (so that nodes' runs meet and wrap), and after every step each node's
 * pods from the index are exactly the reference's; more pods than asked
 * for is GPUOP_ETOOBIG, never a short answer; two nodes whose names share
 * the bits a slot keeps and their home, so that each one's walk meets the
 * other's pods as candidates, still get exactly their own.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rnd.h"

#include "gpuop/error.h"
#include "gpuop/hash.h"

#include "nodepods_int.h"

enum { NODES = 40, PODS = 600, STEPS = 20000, MAX = 16 };

static uint64_t rng = 88172645463325252ULL;

static uint32_t rnd(uint32_t n)
{
    return test_rnd(&rng, n);
}

static char names[NODES][16];

/* The reference: which pods are in, each on its node. */
struct ref {
    struct gpuop_pod pods[PODS];
    bool in[PODS];
};

static int cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (const void *const *)a, y = (uintptr_t) * (const void *const *)b;
    return x < y ? -1 : x > y;
}

static void check(const struct gpuop_nodepods *ix, const struct ref *r)
{
    for (int k = 0; k < NODES; k++) {
        const struct gpuop_pod *want[PODS], *got[PODS];
        size_t nwant = 0, ngot = 0;
        for (int i = 0; i < PODS; i++)
            if (r->in[i] && strcmp(r->pods[i].node, names[k]) == 0)
                want[nwant++] = &r->pods[i];
        int rc = gpuop_nodepods_get(ix, names[k], got, MAX, &ngot);
        if (nwant > MAX) {
            assert_int_equal(rc, GPUOP_ETOOBIG);
            assert_int_equal(gpuop_nodepods_get(ix, names[k], got, PODS, &ngot), 0);
        } else {
            assert_int_equal(rc, 0);
        }
        assert_int_equal(ngot, nwant);
        qsort(want, nwant, sizeof(*want), cmp_ptr);
        qsort(got, ngot, sizeof(*got), cmp_ptr);
        assert_memory_equal(want, got, nwant * sizeof(*want));
    }
    size_t none;
    const struct gpuop_pod *buf[1];
    assert_int_equal(gpuop_nodepods_get(ix, "no-such-node", buf, 1, &none), 0);
    assert_int_equal(none, 0);
}

static void test_nodepods_random(void **state)
{
    (void)state;
    static struct ref r;
    memset(&r, 0, sizeof(r));
    for (int k = 0; k < NODES; k++)
        snprintf(names[k], sizeof(names[k]), "node-%d", k);
    for (int i = 0; i < PODS; i++)
        r.pods[i].node = names[rnd(NODES)];
    struct gpuop_nodepods ix;
    gpuop_nodepods_init(&ix);
    check(&ix, &r);
    size_t adds = 0, dels = 0;
    for (int s = 0; s < STEPS; s++) {
        int i = (int)rnd(PODS);
        if (r.in[i]) {
            gpuop_nodepods_del(&ix, &r.pods[i]);
            r.in[i] = false, dels++;
        } else {
            assert_int_equal(gpuop_nodepods_add(&ix, &r.pods[i]), 0);
            r.in[i] = true, adds++;
        }
        if (s % 7 == 0 || s > STEPS - 50)
            check(&ix, &r);
    }
    /* a pod not in it, and one without a node, change nothing */
    struct gpuop_pod stray = {.node = names[0]}, unbound = {0};
    gpuop_nodepods_del(&ix, &stray);
    assert_int_equal(gpuop_nodepods_add(&ix, &unbound), 0);
    check(&ix, &r);
    print_message("%zu adds, %zu removes, %zu pods in %zu slots\n", adds, dels, ix.len, ix.cap);
    gpuop_nodepods_free(&ix);
}

/* Two names of equal tag (the hash's top 16 bits) and equal low bits (the
 * home in a small table): a birthday search among generated names. */
static void tag_twins(char a[16], char b[16])
{
    enum { TRIES = 8192 };
    static uint64_t h[TRIES];
    const uint64_t same = UINT64_C(0xffff000000000000) | 0xff;
    for (int i = 0; i < TRIES; i++) {
        char n[16];
        snprintf(n, sizeof(n), "twin-%d", i);
        h[i] = gpuop_hash_str(n);
        for (int j = 0; j < i; j++)
            if ((h[i] & same) == (h[j] & same)) {
                snprintf(a, 16, "twin-%d", j);
                snprintf(b, 16, "twin-%d", i);
                return;
            }
    }
    fail_msg("no two names share a tag and a home");
}

static void test_nodepods_tag_twins(void **state)
{
    (void)state;
    static char a[16], b[16];
    static struct gpuop_pod pods[2 * MAX + 1];
    tag_twins(a, b);
    struct gpuop_nodepods ix;
    gpuop_nodepods_init(&ix);
    for (int i = 0; i < 2 * MAX; i++) { /* interleaved: a, b, a, b ... */
        pods[i].node = i % 2 ? b : a;
        assert_int_equal(gpuop_nodepods_add(&ix, &pods[i]), 0);
    }
    const struct gpuop_pod *got[2 * MAX + 1];
    size_t n = 0;
    for (int k = 0; k < 2; k++) { /* MAX of each: just room, the twin's pods met as candidates */
        assert_int_equal(gpuop_nodepods_get(&ix, k ? b : a, got, MAX, &n), 0);
        assert_int_equal(n, MAX);
        for (size_t i = 0; i < n; i++)
            assert_string_equal(got[i]->node, k ? b : a);
    }
    pods[2 * MAX].node = a; /* one more on a: more than asked for */
    assert_int_equal(gpuop_nodepods_add(&ix, &pods[2 * MAX]), 0);
    assert_int_equal(gpuop_nodepods_get(&ix, a, got, MAX, &n), GPUOP_ETOOBIG);
    assert_int_equal(gpuop_nodepods_get(&ix, b, got, MAX, &n), 0);
    assert_int_equal(n, MAX);
    assert_int_equal(gpuop_nodepods_get(&ix, a, got, MAX + 1, &n), 0);
    assert_int_equal(n, MAX + 1);
    gpuop_nodepods_free(&ix);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nodepods_random),
        cmocka_unit_test(test_nodepods_tag_twins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
