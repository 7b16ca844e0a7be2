/*
 * test_slice.c - a DRA ResourceSlice read (model/slice.c) and folded into
 * its node (cache/slicefold.c) through the slice table
 * (cache/slicetab.c): what is kept of NVIDIA's GPU kubelet plugin's
 * slice, what is refused (another driver, no node, a slice over the API's
 * device limit, a malformed one), the fold's count and sum as slices come
 * and go, saturated included, and the table's cases: moves, lists that
 * sweep, a slice before its Node, Nodes that go and come back, Nodes and
 * slices whose hashes collide (a hash injected), and its bytes a slice.
 * Every table test checks each cached Node's fold against a plain list of
 * the slices (the oracle).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpuop/model.h"

#include "gpuop/hash.h"
#include "gpuop/pool.h"

#include "slicefold_int.h"
#include "slicetab_int.h"

/* A slice as the plugin publishes it (resource.k8s.io/v1), with ndev
 * devices of a few attributes each; driver and node may be NULL. New. */
static json_t *slice_json(const char *driver, const char *node, int ndev)
{
    json_t *devs = json_array();
    for (int i = 0; i < ndev; i++)
        json_array_append_new(devs, json_pack("{s:s, s:{s:{s:s}, s:{s:s}}, s:{s:{s:s}}}", "name",
                                              "gpu-0", "attributes", "type", "string", "gpu",
                                              "productName", "string", "NVIDIA A100", "capacity",
                                              "memory", "value", "40Gi"));
    json_t *spec = json_pack("{s:{s:s, s:i, s:i}, s:o, s:{s:[]}}", "pool", "name",
                             node ? node : "pool", "generation", 3, "resourceSliceCount", 1,
                             "devices", devs, "sharedCounters", "counters");
    if (driver)
        json_object_set_new(spec, "driver", json_string(driver));
    if (node)
        json_object_set_new(spec, "nodeName", json_string(node));
    return json_pack("{s:s, s:s, s:{s:s}, s:o}", "apiVersion", "resource.k8s.io/v1", "kind",
                     "ResourceSlice", "metadata", "name", "n1-gpu.nvidia.com-abcde", "spec", spec);
}

static void test_parse(void **state)
{
    (void)state;
    json_t *o = slice_json(GPUOP_DRA_GPU_DRIVER, "node-1", 8);
    struct gpuop_err err = {0};
    struct gpuop_slice *s = gpuop_slice_new(o, &err);
    assert_non_null(s);
    assert_string_equal(s->node, "node-1");
    assert_int_equal(s->devices, 8);
    /* a pool of another name: the same slice to the fold */
    json_object_set_new(json_object_get(json_object_get(o, "spec"), "pool"), "name",
                        json_string("pool-a"));
    struct gpuop_slice *t = gpuop_slice_new(o, &err);
    assert_non_null(t);
    assert_string_equal(t->node, "node-1");
    assert_int_equal(t->devices, 8);
    gpuop_slice_free(t);
    json_decref(o);
    /* a slice of shared counters only (DynamicMIG): no device */
    o = slice_json(GPUOP_DRA_GPU_DRIVER, "node-1", 0);
    t = gpuop_slice_new(o, &err);
    assert_non_null(t);
    assert_int_equal(t->devices, 0);
    gpuop_slice_free(t);
    gpuop_slice_free(s);
    json_decref(o);
    /* the API's limit, and one over it */
    o = slice_json(GPUOP_DRA_GPU_DRIVER, "node-1", GPUOP_SLICE_DEVICES_MAX);
    s = gpuop_slice_new(o, &err);
    assert_non_null(s);
    assert_int_equal(s->devices, GPUOP_SLICE_DEVICES_MAX);
    gpuop_slice_free(s);
    json_decref(o);
    o = slice_json(GPUOP_DRA_GPU_DRIVER, "node-1", GPUOP_SLICE_DEVICES_MAX + 1);
    assert_null(gpuop_slice_new(o, &err));
    assert_int_equal(err.rc, GPUOP_EINVAL);
    assert_non_null(strstr(err.message, "more devices"));
    json_decref(o);
}

static void refused(json_t *o /* stolen */, const char *why)
{
    struct gpuop_err err = {0};
    assert_null(gpuop_slice_new(o, &err));
    assert_int_equal(err.rc, GPUOP_EINVAL);
    if (!strstr(err.message, why))
        fail_msg("\"%s\" does not say \"%s\"", err.message, why);
    json_decref(o);
}

static void test_refused(void **state)
{
    (void)state;
    refused(slice_json("compute-domain.nvidia.com", "node-1", 1), "spec.driver");
    refused(slice_json(NULL, "node-1", 1), "spec.driver");
    refused(slice_json(GPUOP_DRA_GPU_DRIVER, NULL, 1), "spec.nodeName");
    json_t *o = slice_json(GPUOP_DRA_GPU_DRIVER, "node-1", 1);
    json_object_set_new(json_object_get(o, "spec"), "devices", json_string("many"));
    refused(o, "not a list");
    o = slice_json(GPUOP_DRA_GPU_DRIVER, "node-1", 1);
    json_object_del(json_object_get(o, "spec"), "pool");
    refused(o, "spec.pool.name");
    refused(json_pack("{s:s}", "kind", "ResourceSlice"), "no spec");
    /* a node name no DNS subdomain has */
    char longname[300];
    memset(longname, 'a', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    refused(slice_json(GPUOP_DRA_GPU_DRIVER, longname, 1), "spec.nodeName");
}

static void test_unread(void **state)
{
    (void)state;
    const char *const *u = gpuop_slice_unread();
    size_t n = 0;
    for (; u[n]; n++)
        assert_null(strstr(u[n], "devices")); /* counted: never cut */
    assert_true(n > 0);
    /* a slice converts the same without them */
    json_t *o = slice_json(GPUOP_DRA_GPU_DRIVER, "node-1", 4);
    struct gpuop_err err = {0};
    struct gpuop_slice *a = gpuop_slice_new(o, &err);
    json_object_del(json_object_get(o, "spec"), "sharedCounters");
    json_object_del(json_object_get(o, "spec"), "nodeSelector");
    json_object_del(json_object_get(o, "metadata"), "ownerReferences");
    struct gpuop_slice *b = gpuop_slice_new(o, &err);
    assert_int_equal(a->devices, b->devices);
    assert_string_equal(a->node, b->node);
    gpuop_slice_free(a);
    gpuop_slice_free(b);
    json_decref(o);
}

static void test_fold(void **state)
{
    (void)state;
    struct gpuop_node_dra d = {.watched = 1};
    gpuop_slicefold_add(&d, 8);
    gpuop_slicefold_add(&d, 0);
    gpuop_slicefold_add(&d, 3);
    assert_int_equal(d.slices, 3);
    assert_int_equal(d.devices, 11);
    assert_true(gpuop_slicefold_del(&d, 8));
    assert_int_equal(d.slices, 2);
    assert_int_equal(d.devices, 3);
    assert_true(gpuop_slicefold_del(&d, 3));
    assert_true(gpuop_slicefold_del(&d, 0));
    assert_int_equal(d.slices, 0);
    assert_int_equal(d.devices, 0);
    assert_int_equal(d.watched, 1);
    /* taking back what was never added: recount */
    assert_false(gpuop_slicefold_del(&d, 8));
    assert_int_equal(d.watched, 1);
    /* saturated: still counts what it can, then asks for a recount */
    for (int i = 0; i < 300; i++)
        gpuop_slicefold_add(&d, GPUOP_SLICE_DEVICES_MAX);
    assert_int_equal(d.slices, UINT8_MAX);
    assert_int_equal(d.devices, UINT8_MAX * GPUOP_SLICE_DEVICES_MAX);
    assert_false(gpuop_slicefold_del(&d, GPUOP_SLICE_DEVICES_MAX));
    assert_int_equal(d.slices, 0);
    assert_int_equal(d.devices, 0);
    assert_int_equal(d.watched, 1);
}

/* A node's claims reserved by pods, counted as claims come and go: one
 * no pod reserves is not counted; saturated, a delete asks for a recount
 * and keeps the slices' fold. */
static void test_claim_fold(void **state)
{
    (void)state;
    struct gpuop_node_dra d = {.devices = 8, .slices = 1, .watched = 1};
    struct gpuop_claim held = {.node = "n", .devices = 1, .npods = 1};
    struct gpuop_claim unreserved = {.node = "n", .devices = 1, .npods = 0};
    gpuop_slicefold_claim_add(&d, &held);
    gpuop_slicefold_claim_add(&d, &unreserved);
    assert_int_equal(d.claims, 1);
    assert_true(gpuop_slicefold_claim_del(&d, &unreserved));
    assert_int_equal(d.claims, 1);
    assert_true(gpuop_slicefold_claim_del(&d, &held));
    assert_int_equal(d.claims, 0);
    for (int i = 0; i < GPUOP_DRA_CLAIMS_MAX + 5; i++)
        gpuop_slicefold_claim_add(&d, &held);
    assert_int_equal(d.claims, GPUOP_DRA_CLAIMS_MAX);
    assert_false(gpuop_slicefold_claim_del(&d, &held)); /* recount */
    assert_int_equal(d.claims, 0);
    assert_int_equal(d.devices, 8);
    assert_int_equal(d.slices, 1);
    assert_int_equal(d.watched, 1);
    /* a slice fold saturated keeps the claims */
    d.claims = 3;
    d.slices = UINT8_MAX;
    assert_false(gpuop_slicefold_del(&d, 8));
    assert_int_equal(d.claims, 3);
    assert_int_equal(d.watched, 1);
}

/* ---- the slice table ---- */

/* The injected hash: "=<hex>/<rest>" hashes to <hex>, so two names may
 * share a Node's 32-bit hash or a slice's 55 bits; others as in gpuop. */
static uint64_t thash(const char *s)
{
    if (s[0] == '=')
        return strtoull(s + 1, NULL, 16);
    return gpuop_hash_str(s);
}

#define TNODES  16
#define TSLICES 400

/* The cached Nodes (their folds), the slices as the API has them (the
 * oracle), and the Nodes named to moved. */
struct tnode {
    char name[32];
    struct gpuop_node_dra dra;
    bool cached;
};
static struct tnode tnodes[TNODES];
struct tslice {
    char name[40], node[32];
    unsigned devices;
    bool live;
};
static struct tslice tslices[TSLICES];
static char moved_log[4096];
static struct gpuop_slicetab tab;

static struct tnode *tnode(const char *name)
{
    for (size_t i = 0; i < TNODES; i++)
        if (tnodes[i].cached && !strcmp(tnodes[i].name, name))
            return &tnodes[i];
    return NULL;
}

static struct gpuop_node_dra *t_fold(void *arg, const char *name)
{
    assert_ptr_equal(arg, &tab);
    struct tnode *n = tnode(name);
    return n ? &n->dra : NULL;
}

static struct gpuop_node_dra *t_fold_h32(void *arg, uint32_t h, const char *skip, const char **name)
{
    (void)arg;
    struct tnode *found = NULL;
    for (size_t i = 0; i < TNODES; i++) {
        struct tnode *n = &tnodes[i];
        if (!n->cached || (uint32_t)thash(n->name) != h || (skip && !strcmp(skip, n->name)))
            continue;
        if (found)
            return NULL;
        found = n;
    }
    if (found)
        *name = found->name;
    return found ? &found->dra : NULL;
}

static void t_moved(void *arg, const char *name)
{
    (void)arg;
    size_t n = strlen(moved_log);
    snprintf(moved_log + n, sizeof(moved_log) - n, "%s ", name);
}

static int tab_setup(void **state)
{
    (void)state;
    memset(tnodes, 0, sizeof(tnodes));
    memset(tslices, 0, sizeof(tslices));
    moved_log[0] = '\0';
    struct gpuop_slicetab_ops ops = {
        .hash = thash, .fold = t_fold, .fold_h32 = t_fold_h32, .moved = t_moved, .arg = &tab};
    gpuop_slicetab_init(&tab, &ops);
    return 0;
}

static int tab_teardown(void **state)
{
    (void)state;
    gpuop_slicetab_free(&tab);
    struct gpuop_pool_stats ps;
    gpuop_pool_stats(&ps);
    assert_int_equal(ps.blocks, 0); /* every spill entry freed */
    return 0;
}

static void node_add(const char *name)
{
    for (size_t i = 0; i < TNODES; i++) {
        if (!tnodes[i].cached) {
            snprintf(tnodes[i].name, sizeof(tnodes[i].name), "%s", name);
            tnodes[i].cached = true;
            tnodes[i].dra = (struct gpuop_node_dra){.watched = 1, .claims = 2};
            gpuop_slicetab_node_added(&tab, name);
            return;
        }
    }
    fail_msg("too many nodes");
}

static void node_del(const char *name)
{
    struct tnode *n = tnode(name);
    assert_non_null(n);
    gpuop_slicetab_node_deleted(&tab, name); /* still cached during the call */
    n->cached = false;
}

static struct tslice *tslice(const char *name, bool add)
{
    struct tslice *free_one = NULL;
    for (size_t i = 0; i < TSLICES; i++) {
        if (tslices[i].live && !strcmp(tslices[i].name, name))
            return &tslices[i];
        if (!tslices[i].live && !free_one)
            free_one = &tslices[i];
    }
    assert_true(!add || free_one);
    return add ? free_one : NULL;
}

/* The API has slice name on node (the table not told). */
static void api_put(const char *name, const char *node, unsigned devices)
{
    struct tslice *s = tslice(name, true);
    snprintf(s->name, sizeof(s->name), "%s", name);
    snprintf(s->node, sizeof(s->node), "%s", node);
    s->devices = devices;
    s->live = true;
}

static void api_del(const char *name)
{
    struct tslice *s = tslice(name, false);
    assert_non_null(s);
    s->live = false;
}

static void put(const char *name, const char *node, unsigned devices)
{
    api_put(name, node, devices);
    assert_true(gpuop_slicetab_put(&tab, name, node, devices) >= 0);
}

static void del(const char *name)
{
    api_del(name);
    gpuop_slicetab_del(&tab, name);
}

/* Every cached Node's fold is what the API's slices sum to, and the table
 * keeps one entry a slice. */
static void check_folds(void)
{
    size_t live = 0;
    for (size_t i = 0; i < TSLICES; i++)
        live += tslices[i].live;
    assert_int_equal(gpuop_slicetab_len(&tab), live);
    for (size_t i = 0; i < TNODES; i++) {
        const struct tnode *n = &tnodes[i];
        if (!n->cached)
            continue;
        unsigned slices = 0, devices = 0;
        for (size_t j = 0; j < TSLICES; j++)
            if (tslices[j].live && !strcmp(tslices[j].node, n->name)) {
                slices++;
                devices += tslices[j].devices;
            }
        if (slices > UINT8_MAX) /* saturated: the count stops, the sum too */
            slices = UINT8_MAX;
        if (n->dra.slices != slices || (slices < UINT8_MAX && n->dra.devices != devices))
            fail_msg("node %s: fold %u slices %u devices, want %u and %u", n->name, n->dra.slices,
                     n->dra.devices, slices, devices);
        assert_int_equal(n->dra.watched, 1);
        assert_int_equal(n->dra.claims, 2); /* not the table's */
    }
}

/* Add, modify (devices), the same again (nobody named), move, delete. */
static void test_tab_changes(void **state)
{
    (void)state;
    node_add("n1");
    node_add("n2");
    put("s1", "n1", 8);
    put("s2", "n1", 0); /* DynamicMIG's counters slice: no device */
    put("s3", "n2", 4);
    check_folds();
    assert_string_equal(moved_log, "n1 n1 n2 ");
    assert_int_equal(tab.len, 3);
    assert_int_equal(tab.nspill, 0);
    moved_log[0] = '\0';
    assert_int_equal(gpuop_slicetab_put(&tab, "s1", "n1", 8), 0); /* a generation bump */
    assert_string_equal(moved_log, "");
    put("s1", "n1", 6);
    check_folds();
    assert_string_equal(moved_log, "n1 n1 ");
    moved_log[0] = '\0';
    put("s3", "n1", 4); /* seen after a relist: recreated on another node */
    check_folds();
    assert_string_equal(moved_log, "n2 n1 ");
    del("s1");
    del("s3");
    assert_int_equal(gpuop_slicetab_del(&tab, "never-seen"), 0); /* a refused slice */
    check_folds();
    assert_int_equal(tnode("n1")->dra.slices, 1);
    assert_int_equal(tnode("n2")->dra.slices, 0);
}

/* 300 slices on one node saturate its count; deletes recount. */
static void test_tab_saturation(void **state)
{
    (void)state;
    node_add("big");
    node_add("small");
    char name[32];
    for (int i = 0; i < 300; i++) {
        snprintf(name, sizeof(name), "s%d", i);
        put(name, "big", 1 + i % 3);
    }
    put("x", "small", 2);
    check_folds();
    assert_int_equal(tnode("big")->dra.slices, UINT8_MAX);
    for (int i = 0; i < 290; i++) {
        snprintf(name, sizeof(name), "s%d", i);
        del(name);
        check_folds();
    }
    assert_int_equal(tnode("big")->dra.slices, 10);
    snprintf(name, sizeof(name), "s%d", 295);
    put(name, "small", 3); /* a move out of a recounted node */
    check_folds();
}

/* A list: what it holds is seen; what it does not is deleted at its end,
 * moves included. A list that failed and began again sweeps nothing
 * early. */
static void test_tab_list_sweep(void **state)
{
    (void)state;
    node_add("n1");
    node_add("n2");
    put("a", "n1", 8);
    put("b", "n1", 8);
    put("c", "n2", 8);
    put("d", "absent", 8); /* spilled: its Node is not cached */
    gpuop_slicetab_list_begin(&tab);
    put("a", "n1", 8);
    gpuop_slicetab_list_begin(&tab); /* the list failed: a new one */
    put("a", "n1", 8);
    put("c", "n1", 2); /* recreated on n1 while disconnected */
    put("e", "n2", 1);
    check_folds(); /* nothing gone before the end */
    assert_int_equal(gpuop_slicetab_len(&tab), 5);
    api_del("b");
    api_del("d");
    assert_int_equal(gpuop_slicetab_list_end(&tab), 2);
    check_folds();
    assert_int_equal(gpuop_slicetab_len(&tab), 3);
    assert_int_equal(tab.nspill, 0);
    /* a list of nothing empties everything */
    gpuop_slicetab_list_begin(&tab);
    api_del("a");
    api_del("c");
    api_del("e");
    assert_int_equal(gpuop_slicetab_list_end(&tab), 3);
    check_folds();
    assert_int_equal(gpuop_slicetab_len(&tab), 0);
}

/* A slice before its Node waits in the spill, then moves into the table. */
static void test_tab_slice_before_node(void **state)
{
    (void)state;
    put("s1", "late", 8);
    put("s2", "late", 1);
    assert_int_equal(tab.nspill, 2);
    assert_string_equal(moved_log, ""); /* no Node to name */
    node_add("late");
    check_folds();
    assert_int_equal(tab.nspill, 0);
    assert_int_equal(tab.len, 2);
    del("s2");
    check_folds();
}

/* A Node deleted keeps its slices (spilled) for when it comes back; its
 * slices may change while it is away. */
static void test_tab_node_readded(void **state)
{
    (void)state;
    node_add("n1");
    node_add("n2");
    put("a", "n1", 8);
    put("b", "n1", 4);
    put("c", "n2", 4);
    node_del("n1");
    assert_int_equal(tab.nspill, 2);
    check_folds();
    del("b");
    put("d", "n1", 1);
    put("a", "n1", 7);
    node_add("n1");
    check_folds();
    assert_int_equal(tnode("n1")->dra.slices, 2);
    assert_int_equal(tnode("n1")->dra.devices, 8);
    assert_int_equal(tab.nspill, 0);
    node_del("n2");
    node_del("n1");
    gpuop_slicetab_list_begin(&tab);
    put("a", "n1", 7);
    api_del("c");
    api_del("d");
    gpuop_slicetab_list_end(&tab);
    node_add("n1");
    node_add("n2");
    check_folds();
}

/* Two Nodes of one 32-bit hash: neither keeps its slices in the table,
 * both folds stay exact, and the one left gets the table back for new
 * slices. */
static void test_tab_nodes_share_hash(void **state)
{
    (void)state;
    node_add("=5/a");
    put("s1", "=5/a", 8);
    put("s2", "=5/a", 2);
    assert_int_equal(tab.len, 2);
    node_add("=5/b"); /* a's slices go to the spill under its name */
    assert_int_equal(tab.len, 0);
    assert_int_equal(tab.nspill, 2);
    check_folds();
    put("s3", "=5/b", 4);
    put("s1", "=5/a", 6);
    check_folds();
    assert_int_equal(tab.len, 0);
    node_add("=105/c"); /* the same home slot, another hash: its own */
    put("s4", "=105/c", 1);
    assert_int_equal(tab.len, 1);
    check_folds();
    node_del("=5/a");
    check_folds();
    put("s5", "=5/b", 1); /* b alone has the hash now */
    del("s3");
    check_folds();
    node_add("=5/a"); /* back: b's table entry spills again */
    check_folds();
    assert_int_equal(tab.len, 1);
    del("s1");
    del("s5");
    check_folds();
}

/* Two slices of one 55-bit name hash, found when a list holds both: the
 * second is kept by name, both counted, each deleted on its own. */
static void test_tab_slice_names_collide(void **state)
{
    (void)state;
    node_add("n1");
    node_add("n2");
    gpuop_slicetab_list_begin(&tab);
    put("=9/x", "n1", 8);
    put("=9/y", "n2", 4);
    put("z", "n2", 1);
    gpuop_slicetab_list_end(&tab);
    check_folds();
    assert_int_equal(tab.nspill, 1);
    /* a relist holds both again: neither is lost, none doubled */
    gpuop_slicetab_list_begin(&tab);
    put("=9/y", "n2", 4);
    put("=9/x", "n1", 8);
    put("z", "n2", 1);
    gpuop_slicetab_list_end(&tab);
    check_folds();
    put("=9/y", "n2", 3);
    check_folds();
    del("=9/x");
    check_folds();
    put("=9/y", "n1", 3); /* alone with its hash now: into the table */
    check_folds();
    assert_int_equal(tab.nspill, 0);
    del("=9/y");
    check_folds();
}

/* ---- bytes a slice ---- */

static struct gpuop_node_dra many[5000];
static char many_name[16];

/* "n<i>" hashes to i + 1: 5,000 Nodes of their own 32-bit hashes. */
static uint64_t many_hash(const char *s)
{
    return s[0] == 'n' ? strtoull(s + 1, NULL, 10) + 1 : gpuop_hash_str(s);
}

static struct gpuop_node_dra *many_fold(void *arg, const char *name)
{
    (void)arg;
    return name[0] == 'n' ? &many[strtoul(name + 1, NULL, 10)] : NULL;
}

static struct gpuop_node_dra *many_fold_h32(void *arg, uint32_t h, const char *skip,
                                            const char **name)
{
    (void)arg;
    snprintf(many_name, sizeof(many_name), "n%u", h - 1);
    if (h == 0 || h > 5000 || (skip && !strcmp(skip, many_name)))
        return NULL;
    *name = many_name;
    return &many[h - 1];
}

/* One slice a GPU node (NVIDIA's plugin): at most 32 bytes a node, at
 * 1,000 and 5,000 nodes and just past a growth (1,537 > 2,048 × 3/4). */
static void test_tab_bytes(void **state)
{
    (void)state;
    static const size_t sizes[] = {1000, 1435, 1537, 5000};
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t n = sizes[k];
        struct gpuop_slicetab t;
        struct gpuop_slicetab_ops ops = {
            .hash = many_hash, .fold = many_fold, .fold_h32 = many_fold_h32};
        gpuop_slicetab_init(&t, &ops);
        memset(many, 0, sizeof(many));
        char slice[64], node[24];
        for (size_t i = 0; i < n; i++) {
            snprintf(slice, sizeof(slice), "n%zu-gpu.nvidia.com-%05zx", i, i * 7919);
            snprintf(node, sizeof(node), "n%zu", i);
            assert_int_equal(gpuop_slicetab_put(&t, slice, node, 8), 1);
        }
        assert_int_equal(t.len, n);
        assert_int_equal(t.nspill, 0);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(many[i].slices, 1);
        double per = (double)(t.cap * sizeof(struct gpuop_slicetab_slot)) / (double)n;
        print_message("%zu slices: %zu slots, %.1f bytes a node\n", n, t.cap, per);
        assert_true(per <= 32.0);
        gpuop_slicetab_free(&t);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_unread),
        cmocka_unit_test(test_fold),
        cmocka_unit_test(test_claim_fold),
#define TT(fn) cmocka_unit_test_setup_teardown(fn, tab_setup, tab_teardown)
        TT(test_tab_changes),
        TT(test_tab_saturation),
        TT(test_tab_list_sweep),
        TT(test_tab_slice_before_node),
        TT(test_tab_node_readded),
        TT(test_tab_nodes_share_hash),
        TT(test_tab_slice_names_collide),
        cmocka_unit_test(test_tab_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
