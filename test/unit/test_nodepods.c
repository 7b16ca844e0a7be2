/*
 * test_nodepods.c - the caches' index of pods by node (cache/nodepods.c)
 * against a plain array: random adds and removes of pods on a few nodes
 * (so that nodes' runs meet and wrap), and after every step each node's
 * pods from the index are exactly the reference's; more pods than asked
 * for is GPUOP_ETOOBIG, never a short answer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpuop/error.h"

#include "nodepods_int.h"

enum { NODES = 40, PODS = 600, STEPS = 20000, MAX = 16 };

static uint64_t rng = 88172645463325252ULL;

static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nodepods_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
