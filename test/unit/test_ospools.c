/*
 * test_ospools.c - the caches' count of the GPU nodes' OS pools
 * (cache/ospools.c) against what the apply stage collects
 * (gpuop_ospool_collect over the nodes in name order): random nodes come,
 * change OS, become GPU nodes or not, and go; whenever the collected pools
 * change, the move said the pools moved (gpuop_ospools_move's true).
 * With a few pools that share no tag it says so exactly when the set of
 * pools changes (a node within a pool there is moves nothing); with tags
 * two identities share and more pools than the stage keeps, it may say
 * so more often, never less.
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

#include "gpuop/ospool.h"

#include "ospools_int.h"

enum { NODES = 40, STEPS = 6000, EXTRA_OS = 20 };

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint32_t rnd(uint32_t n)
{
    return test_rnd(&rng, n);
}

/* An OS a node may carry: NFD's three labels (major NULL: absent), and
 * its kernel label (NULL: absent). */
struct os {
    const char *id, *version, *major, *kernel;
};

/* How the apply stage collects: per OS pool and kernel (a precompiled
 * driver) or per OS pool. */
static bool by_kernel;

static const struct os plain[] = {
    {"ubuntu", "24.04", NULL, NULL},
    {"ubuntu", "22.04", NULL, NULL},
    {"rhel", "9.4", "9", NULL},
    {"rhel", "9.6", "9", NULL}, /* the same pool as 9.4: rhel9 */
};
/* "ubuntu2" "4.04" makes the tag of ubuntu 24.04: two identities, one tag */
static const struct os clash = {"ubuntu2", "4.04", NULL, NULL};

struct tnode {
    struct gpuop_node n;
    char os[96];
};

/* Node t as name, GPU or not, with os (NULL: no OS labels). */
static void make(struct tnode *t, const char *name, bool gpu, const struct os *os)
{
    memset(t, 0, sizeof(*t));
    t->n.name = (char *)name;
    t->n.gpu = gpu;
    if (!os)
        return;
    size_t a = strlen(os->id) + 1, b = strlen(os->version) + 1;
    memcpy(t->os, os->id, a);
    memcpy(t->os + a, os->version, b);
    size_t c =
        (size_t)snprintf(t->os + a + b, sizeof(t->os) - a - b, "%s", os->major ? os->major : "") +
        1;
    snprintf(t->os + a + b + c, sizeof(t->os) - a - b - c, "%s", os->kernel ? os->kernel : "");
    t->n.os = t->os;
    t->n.os_labels = GPUOP_OS_HAS(GPUOP_OS_ID) | GPUOP_OS_HAS(GPUOP_OS_VERSION) |
                     (os->major ? GPUOP_OS_HAS(GPUOP_OS_MAJOR) : 0) |
                     (os->kernel ? GPUOP_OS_HAS(GPUOP_OS_KERNEL) : 0);
}

/* What the apply stage collects from the present nodes (name order). */
static size_t collect(struct tnode *cur[], struct gpuop_ospool *set)
{
    const struct gpuop_node *list[NODES];
    size_t n = 0;
    for (int i = 0; i < NODES; i++)
        if (cur[i])
            list[n++] = &cur[i]->n;
    return gpuop_ospool_collect(list, n, by_kernel, set, GPUOP_OSPOOL_MAX, NULL);
}

static bool same_set(const struct gpuop_ospool *a, size_t na, const struct gpuop_ospool *b,
                     size_t nb)
{
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++)
        if (strcmp(a[i].tag, b[i].tag) || strcmp(a[i].id, b[i].id) ||
            strcmp(a[i].version, b[i].version) || a[i].major_only != b[i].major_only ||
            strcmp(a[i].kernel, b[i].kernel))
            return false;
    return true;
}

/* Random steps over oses[0..nos); returns how often a move said the
 * pools moved while the collected set stayed. exact: it must never. */
static int walk(const struct os *const *oses, size_t nos, bool exact)
{
    static char names[NODES][8];
    static struct tnode slot[NODES][2]; /* two versions of each node */
    struct tnode *cur[NODES] = {0};
    struct gpuop_ospools p;
    gpuop_ospools_init(&p);
    for (int i = 0; i < NODES; i++)
        snprintf(names[i], sizeof(names[i]), "n%02d", i);
    int spare = 0;
    struct gpuop_ospool before[GPUOP_OSPOOL_MAX], after[GPUOP_OSPOOL_MAX];
    size_t nb = collect(cur, before);
    for (int s = 0; s < STEPS; s++) {
        int i = (int)rnd(NODES);
        struct tnode *old = cur[i], *nw = NULL;
        if (!old || rnd(4) != 0) { /* an add or an update; else a delete */
            nw = old == &slot[i][0] ? &slot[i][1] : &slot[i][0];
            uint32_t k = rnd((uint32_t)nos + 1); /* nos: no OS labels */
            make(nw, names[i], rnd(5) != 0, k < nos ? oses[k] : NULL);
        }
        bool moved = gpuop_ospools_move(&p, old ? &old->n : NULL, nw ? &nw->n : NULL);
        cur[i] = nw;
        size_t na = collect(cur, after);
        bool changed = !same_set(before, nb, after, na);
        if (changed)
            assert_true(moved); /* never less */
        else if (moved) {
            assert_false(exact);
            spare++;
        }
        memcpy(before, after, na * sizeof(*after));
        nb = na;
    }
    gpuop_ospools_free(&p);
    return spare;
}

static void test_ospools_exact(void **state)
{
    (void)state;
    const struct os *oses[] = {&plain[0], &plain[1], &plain[2], &plain[3]};
    assert_int_equal(walk(oses, 4, true), 0);
}

static void test_ospools_shared_and_many(void **state)
{
    (void)state;
    static char ids[EXTRA_OS][8];
    static struct os extra[EXTRA_OS];
    const struct os *oses[4 + 1 + EXTRA_OS];
    size_t n = 0;
    for (int i = 0; i < 4; i++)
        oses[n++] = &plain[i];
    oses[n++] = &clash;
    for (int i = 0; i < EXTRA_OS; i++) { /* more pools than the stage keeps */
        snprintf(ids[i], sizeof(ids[i]), "os%c", 'a' + i);
        extra[i] = (struct os){ids[i], "1", NULL, NULL};
        oses[n++] = &extra[i];
    }
    print_message("moved with the same pools: %d of %d steps\n", walk(oses, n, false), STEPS);
}

/* Precompiled drivers: the pools are OS pools and kernels (two rhel
 * versions of one pool on one kernel, a node without the kernel label in
 * none); collected by kernel the moves say so exactly when they change
 * while every node has the label, may move more when one has not;
 * collected without, it may move more (a kernel came or went), never
 * less. */
static void test_ospools_kernels(void **state)
{
    (void)state;
    static const struct os k[] = {
        {"ubuntu", "24.04", NULL, "6.8.0-1"}, {"ubuntu", "24.04", NULL, "6.8.0-2"},
        {"ubuntu", "24.04", NULL, "6.8.0-3"}, {"ubuntu", "24.04", NULL, NULL},
        {"rhel", "9.4", "9", "5.14.0-1"},     {"rhel", "9.6", "9", "5.14.0-1"},
        {"ubuntu", "22.04", NULL, "6.8.0-1"},
    };
    const struct os *labelled[] = {&k[0], &k[1], &k[2], &k[4], &k[5], &k[6]};
    const struct os *oses[] = {&k[0], &k[1], &k[2], &k[3], &k[4], &k[5], &k[6]};
    by_kernel = true;
    assert_int_equal(walk(labelled, 6, true), 0);
    /* a node without the kernel label is in a pool of the caches' (they do
       not know the driver is precompiled), in none of the stage's */
    print_message("without the label: moved with the same pools: %d of %d steps\n",
                  walk(oses, 7, false), STEPS);
    by_kernel = false;
    print_message("compiled: moved with the same pools: %d of %d steps\n", walk(oses, 7, false),
                  STEPS);
}

/* The benchmark's latency flip: a plain node of a pool there is becomes a
 * GPU node and back; its labels change otherwise. Nothing moves. */
static void test_ospools_flip(void **state)
{
    (void)state;
    struct tnode a, b, plain_node, gpu_node, labelled;
    struct gpuop_ospools p;
    gpuop_ospools_init(&p);
    make(&a, "a", true, &plain[0]);
    assert_true(gpuop_ospools_move(&p, NULL, &a.n)); /* the pool appeared */
    make(&plain_node, "f", false, &plain[0]);
    make(&gpu_node, "f", true, &plain[0]);
    assert_false(gpuop_ospools_move(&p, NULL, &plain_node.n));
    assert_false(gpuop_ospools_move(&p, &plain_node.n, &gpu_node.n));
    assert_false(gpuop_ospools_move(&p, &gpu_node.n, &plain_node.n));
    make(&labelled, "a", true, &plain[0]);
    assert_false(gpuop_ospools_move(&p, &a.n, &labelled.n));
    make(&b, "a", true, &plain[1]); /* its OS changes: its pool leaves, another comes */
    assert_true(gpuop_ospools_move(&p, &labelled.n, &b.n));
    gpuop_ospools_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ospools_exact),
        cmocka_unit_test(test_ospools_shared_and_many),
        cmocka_unit_test(test_ospools_flip),
        cmocka_unit_test(test_ospools_kernels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
