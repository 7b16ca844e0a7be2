/*
 * test_nodelist.c - the caches' nodes in name order (cache/nodelist.c)
 * against a reference set: random adds, replacements and removals, and
 * after each the list holds exactly the present nodes, in strcmp order,
 * each replacement's newest pointer. And gpuop_sort (base/sort.c): sorts
 * what is out of order, and leaves what is in order as it is; and
 * gpuop_sort_find against a walk.
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

#include "gpuop/sort.h"

#include "nodelist_int.h"

enum { NODES = 300, STEPS = 20000 };

static uint64_t rng = 0x2545f4914f6cdd1dULL;

static uint32_t rnd(uint32_t n)
{
    return test_rnd(&rng, n);
}

static void test_nodelist_random(void **state)
{
    (void)state;
    static char names[NODES][16];
    static struct gpuop_node a[NODES], b[NODES]; /* two versions of each node */
    const struct gpuop_node *cur[NODES] = {0};
    for (int i = 0; i < NODES; i++) {
        snprintf(names[i], sizeof(names[i]), "n%u", rnd(1000000) * NODES + i); /* unique */
        a[i].name = b[i].name = names[i];
    }
    struct gpuop_nodelist l;
    gpuop_nodelist_init(&l);
    size_t present = 0;
    for (int s = 0; s < STEPS; s++) {
        int i = (int)rnd(NODES);
        if (cur[i] && rnd(3) == 0) {
            gpuop_nodelist_del(&l, names[i]);
            cur[i] = NULL, present--;
        } else {
            present += !cur[i];
            cur[i] = cur[i] == &a[i] ? &b[i] : &a[i]; /* an add, or an update */
            assert_int_equal(gpuop_nodelist_put(&l, cur[i]), 0);
        }
        assert_int_equal(l.n, present);
        for (size_t k = 1; k < l.n; k++)
            assert_true(strcmp(l.a[k - 1]->name, l.a[k]->name) < 0);
        if (s % 50 == 0)
            for (size_t k = 0; k < l.n; k++) {
                int j = atoi(l.a[k]->name + 1) % NODES;
                assert_ptr_equal(l.a[k], cur[j]);
            }
    }
    gpuop_nodelist_del(&l, "absent");
    assert_int_equal(l.n, present);
    assert_true(l.whole);
    gpuop_nodelist_free(&l);
}

static int cmp_int(const void *x, const void *y)
{
    int a = *(const int *)x, b = *(const int *)y;
    return (a > b) - (a < b);
}

/* Equal keys, told apart by their second field: qsort may reorder them,
 * gpuop_sort leaves an array in order as it is. */
struct pair {
    int key, tag;
};

static int cmp_pair(const void *x, const void *y)
{
    return cmp_int(&((const struct pair *)x)->key, &((const struct pair *)y)->key);
}

static void test_sort(void **state)
{
    (void)state;
    int v[200];
    for (int i = 0; i < 200; i++)
        v[i] = (int)rnd(50);
    gpuop_sort(v, 200, sizeof(*v), cmp_int);
    for (int i = 1; i < 200; i++)
        assert_true(v[i - 1] <= v[i]);
    struct pair p[64];
    for (int i = 0; i < 64; i++)
        p[i] = (struct pair){i / 8, 63 - i};
    gpuop_sort(p, 64, sizeof(*p), cmp_pair);
    for (int i = 0; i < 64; i++)
        assert_int_equal(p[i].tag, 63 - i);
    gpuop_sort(NULL, 0, sizeof(int), cmp_int);
    /* the binary search: every key from below the first to above the
     * last, against a walk */
    int u[100];
    for (int i = 0; i < 100; i++)
        u[i] = 3 * i; /* distinct, sorted */
    for (int n = 0; n <= 100; n += 33)
        for (int key = -2; key <= 3 * n + 2; key++) {
            size_t pos, want = 0;
            while (want < (size_t)n && u[want] < key)
                want++;
            bool found = gpuop_sort_find(u, (size_t)n, sizeof(*u), &key, cmp_int, &pos);
            assert_int_equal(pos, want);
            assert_int_equal(found, want < (size_t)n && u[want] == key);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nodelist_random),
        cmocka_unit_test(test_sort),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
