/*
 * test_claim.c - a DRA ResourceClaim read (model/claim.c): the node its
 * GPUs were allocated on (the allocation's nodeSelector, else the
 * driver's pool), the GPUs it holds (adminAccess apart), the pods that
 * reserve it; the claims of no GPU shared as GPUOP_CLAIM_NONE; the claims
 * refused (over the API's limits, malformed, on no node gpuop can tell);
 * the biggest claim the API allows.
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

#define KEY "ml/train-0-gpu-x7k2p"

/* An allocation result of driver on pool (new). */
static json_t *result(const char *driver, const char *pool, int i, int admin)
{
    char dev[32];
    snprintf(dev, sizeof(dev), "gpu-%d", i);
    json_t *r = json_pack("{s:s, s:s, s:s, s:s}", "request", "gpu", "driver", driver, "pool", pool,
                          "device", dev);
    if (admin)
        json_object_set_new(r, "adminAccess", json_true());
    return r;
}

/* A claim as the scheduler allocates it (resource.k8s.io/v1): ngpu
 * devices of gpu.nvidia.com on node's pool, the nodeSelector naming node
 * when sel, reserved by pods pod-0 .. pod-(npods-1). New. */
static json_t *claim_json(const char *node, int ngpu, int sel, int npods)
{
    json_t *results = json_array();
    for (int i = 0; i < ngpu; i++)
        json_array_append_new(results, result(GPUOP_DRA_GPU_DRIVER, node, i, 0));
    json_t *alloc = json_pack("{s:{s:o, s:[]}, s:s}", "devices", "results", results, "config",
                              "allocationTimestamp", "2026-12-07T06:00:00Z");
    if (sel)
        json_object_set_new(alloc, "nodeSelector",
                            json_pack("{s:[{s:[{s:s, s:s, s:[s]}]}]}", "nodeSelectorTerms",
                                      "matchFields", "key", "metadata.name", "operator", "In",
                                      "values", node));
    json_t *reserved = json_array();
    for (int i = 0; i < npods; i++) {
        char name[32], uid[40];
        snprintf(name, sizeof(name), "pod-%d", i);
        snprintf(uid, sizeof(uid), "0000-%d", i);
        json_array_append_new(reserved, json_pack("{s:s, s:s, s:s, s:s}", "resource", "pods",
                                                  "apiGroup", "", "name", name, "uid", uid));
    }
    return json_pack("{s:s, s:{s:s, s:s}, s:{s:{s:[]}}, s:{s:o, s:o, s:[]}}", "kind",
                     "ResourceClaim", "metadata", "name", "train-0-gpu-x7k2p", "namespace", "ml",
                     "spec", "devices", "requests", "status", "allocation", alloc, "reservedFor",
                     reserved, "devices");
}

static json_t *alloc_of(json_t *o)
{
    return json_object_get(json_object_get(o, "status"), "allocation");
}

static json_t *results_of(json_t *o)
{
    return json_object_get(json_object_get(alloc_of(o), "devices"), "results");
}

static void test_parse(void **state)
{
    (void)state;
    json_t *o = claim_json("node-1", 2, 1, 2);
    struct gpuop_err err = {0};
    struct gpuop_claim *c = gpuop_claim_new(o, KEY, &err);
    assert_non_null(c);
    assert_ptr_not_equal(c, &GPUOP_CLAIM_NONE);
    assert_string_equal(c->key, KEY);
    assert_string_equal(c->node, "node-1");
    assert_int_equal(c->devices, 2);
    assert_int_equal(c->admin, 0);
    assert_int_equal(c->npods, 2);
    const char *uid;
    assert_string_equal(gpuop_claim_pod(c, 1, &uid), "pod-1");
    assert_string_equal(uid, "0000-1");
    assert_true(gpuop_claim_reserved_by(c, "pod-0", "0000-0"));
    assert_true(gpuop_claim_reserved_by(c, "pod-1", NULL));
    assert_false(gpuop_claim_reserved_by(c, "pod-1", "0000-0")); /* another pod of that name */
    assert_false(gpuop_claim_reserved_by(c, "pod-2", NULL));
    struct gpuop_claim *d = gpuop_claim_new(o, KEY, &err);
    assert_true(gpuop_claim_equal(c, d));
    gpuop_claim_free(d);
    /* the selector names the node, whatever the pool is called */
    json_object_set_new(json_array_get(results_of(o), 0), "pool", json_string("pool-a"));
    json_object_set_new(json_array_get(results_of(o), 1), "pool", json_string("pool-b"));
    d = gpuop_claim_new(o, KEY, &err);
    assert_non_null(d);
    assert_string_equal(d->node, "node-1");
    assert_true(gpuop_claim_equal(c, d));
    gpuop_claim_free(d);
    /* one pod released */
    json_array_remove(json_object_get(json_object_get(o, "status"), "reservedFor"), 1);
    d = gpuop_claim_new(o, KEY, &err);
    assert_int_equal(d->npods, 1);
    assert_false(gpuop_claim_equal(c, d));
    gpuop_claim_free(d);
    gpuop_claim_free(c);
    json_decref(o);
    /* no selector: the driver's pool (NVIDIA's: the node's name) */
    o = claim_json("node-2", 1, 0, 0);
    c = gpuop_claim_new(o, KEY, &err);
    assert_non_null(c);
    assert_string_equal(c->node, "node-2");
    assert_int_equal(c->npods, 0);
    assert_null(c->pods);
    gpuop_claim_free(c);
    json_decref(o);
}

static void test_none(void **state)
{
    (void)state;
    struct gpuop_err err = {0};
    /* not allocated yet */
    json_t *o = claim_json("node-1", 1, 1, 0);
    json_object_del(json_object_get(o, "status"), "allocation");
    assert_ptr_equal(gpuop_claim_new(o, KEY, &err), &GPUOP_CLAIM_NONE);
    json_object_del(o, "status");
    assert_ptr_equal(gpuop_claim_new(o, KEY, &err), &GPUOP_CLAIM_NONE);
    json_decref(o);
    /* another driver's devices only */
    o = claim_json("node-1", 0, 1, 1);
    json_array_append_new(results_of(o), result("net.example.com", "node-1", 0, 0));
    struct gpuop_claim *c = gpuop_claim_new(o, KEY, &err);
    assert_ptr_equal(c, &GPUOP_CLAIM_NONE);
    gpuop_claim_free(c); /* the shared one: nothing freed */
    assert_true(gpuop_claim_equal(c, &GPUOP_CLAIM_NONE));
    /* ... and one GPU beside it, with adminAccess (the DRA validator's) */
    json_array_append_new(results_of(o), result(GPUOP_DRA_GPU_DRIVER, "node-1", 0, 1));
    c = gpuop_claim_new(o, KEY, &err);
    assert_ptr_not_equal(c, &GPUOP_CLAIM_NONE);
    assert_int_equal(c->devices, 0);
    assert_int_equal(c->admin, 1);
    assert_false(gpuop_claim_equal(c, &GPUOP_CLAIM_NONE));
    gpuop_claim_free(c);
    json_decref(o);
}

/* o (steals) is refused, err naming why. */
static void refused(json_t *o, const char *why)
{
    struct gpuop_err err = {0};
    assert_null(gpuop_claim_new(o, KEY, &err));
    assert_int_equal(err.rc, GPUOP_EINVAL);
    assert_non_null(strstr(err.message, why));
    json_decref(o);
}

static void test_refused(void **state)
{
    (void)state;
    json_t *o = claim_json("node-1", 1, 1, 1);
    json_object_set_new(json_object_get(alloc_of(o), "devices"), "results", json_string("x"));
    refused(o, "is not a list");
    o = claim_json("node-1", GPUOP_CLAIM_RESULTS_MAX + 1, 1, 1);
    refused(o, "more allocation results");
    o = claim_json("node-1", 1, 1, 1);
    json_array_append_new(results_of(o), json_integer(3));
    refused(o, "not an object");
    o = claim_json("node-1", 1, 1, GPUOP_CLAIM_RESERVED_MAX + 1);
    refused(o, "more reservations");
    o = claim_json("node-1", 1, 1, 1);
    json_object_del(json_array_get(json_object_get(json_object_get(o, "status"), "reservedFor"), 0),
                    "name");
    refused(o, "no name");
    o = claim_json("node-1", 1, 1, 1);
    json_object_set_new(json_object_get(o, "status"), "reservedFor", json_object());
    refused(o, "reservedFor is not a list");
    /* no selector and the driver's devices in two pools: no node to tell */
    o = claim_json("node-1", 2, 0, 1);
    json_object_set_new(json_array_get(results_of(o), 1), "pool", json_string("node-2"));
    refused(o, "no node");
    o = claim_json("node-1", 1, 1, 1);
    json_object_set_new(o, "status", json_string("allocated"));
    refused(o, "status is not an object");
}

/* The biggest claim the API allows: every result a GPU, 256 pods of
 * 253-character names; and a pod name over that refused. */
static void test_big(void **state)
{
    (void)state;
    json_t *o = claim_json("node-1", GPUOP_CLAIM_RESULTS_MAX, 1, 0);
    json_t *reserved = json_object_get(json_object_get(o, "status"), "reservedFor");
    char name[254];
    for (int i = 0; i < GPUOP_CLAIM_RESERVED_MAX; i++) {
        memset(name, 'a' + i % 26, 253);
        snprintf(name + 240, 14, "%013d", i);
        json_array_append_new(reserved,
                              json_pack("{s:s, s:s, s:s}", "resource", "pods", "name", name, "uid",
                                        "6b1d2c2e-0000-4000-8000-000000000000"));
    }
    struct gpuop_err err = {0};
    struct gpuop_claim *c = gpuop_claim_new(o, KEY, &err);
    assert_non_null(c);
    assert_int_equal(c->devices, GPUOP_CLAIM_RESULTS_MAX);
    assert_int_equal(c->npods, GPUOP_CLAIM_RESERVED_MAX);
    const char *uid;
    const char *last = gpuop_claim_pod(c, GPUOP_CLAIM_RESERVED_MAX - 1, &uid);
    assert_int_equal(strlen(last), 253);
    assert_string_equal(last + 240, "0000000000255");
    assert_true(gpuop_claim_reserved_by(c, last, uid));
    gpuop_claim_free(c);
    char *dump = json_dumps(o, JSON_COMPACT);
    assert_true(strlen(dump) < GPUOP_CLAIM_MAX_BYTES); /* the informer takes it */
    free(dump);
    /* a pod name longer than a DNS subdomain */
    char longer[300];
    memset(longer, 'z', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = 0;
    json_object_set_new(json_array_get(reserved, 0), "name", json_string(longer));
    refused(o, "too long");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_none),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_big),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
