/*
 * test_slice.c - a DRA ResourceSlice read (model/slice.c) and folded into
 * its node (cache/slicefold.c): what is kept of NVIDIA's GPU kubelet
 * plugin's slice, what is refused (another driver, no node, a slice over
 * the API's device limit, a malformed one), and the fold's count and sum
 * as slices come and go, saturated included.
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

#include "slicefold_int.h"

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
    assert_string_equal(s->pool, "node-1");
    assert_int_equal(s->generation, 3);
    assert_int_equal(s->devices, 8);
    assert_ptr_equal(s->pool, s->node); /* the plugin's pool is named after its node: one copy */
    struct gpuop_slice *t = gpuop_slice_new(o, &err);
    assert_true(gpuop_slice_equal(s, t));
    gpuop_slice_free(t);
    /* a pool of another name */
    json_object_set_new(json_object_get(json_object_get(o, "spec"), "pool"), "name",
                        json_string("pool-a"));
    t = gpuop_slice_new(o, &err);
    assert_non_null(t);
    assert_string_equal(t->pool, "pool-a");
    assert_string_equal(t->node, "node-1");
    assert_false(gpuop_slice_equal(s, t));
    gpuop_slice_free(t);
    json_decref(o);
    /* a slice of shared counters only (DynamicMIG): no device */
    o = slice_json(GPUOP_DRA_GPU_DRIVER, "node-1", 0);
    t = gpuop_slice_new(o, &err);
    assert_non_null(t);
    assert_int_equal(t->devices, 0);
    assert_false(gpuop_slice_equal(s, t));
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
    assert_true(gpuop_slice_equal(a, b));
    gpuop_slice_free(a);
    gpuop_slice_free(b);
    json_decref(o);
}

static void test_fold(void **state)
{
    (void)state;
    struct gpuop_slice a = {.node = "n", .pool = "n", .devices = 8};
    struct gpuop_slice b = {.node = "n", .pool = "n", .devices = 0};
    struct gpuop_slice c = {.node = "n", .pool = "n", .devices = 3};
    struct gpuop_node_dra d = {.watched = 1};
    gpuop_slicefold_add(&d, &a);
    gpuop_slicefold_add(&d, &b);
    gpuop_slicefold_add(&d, &c);
    assert_int_equal(d.slices, 3);
    assert_int_equal(d.devices, 11);
    assert_true(gpuop_slicefold_del(&d, &a));
    assert_int_equal(d.slices, 2);
    assert_int_equal(d.devices, 3);
    assert_true(gpuop_slicefold_del(&d, &c));
    assert_true(gpuop_slicefold_del(&d, &b));
    assert_int_equal(d.slices, 0);
    assert_int_equal(d.devices, 0);
    assert_int_equal(d.watched, 1);
    /* taking back what was never added: recount */
    assert_false(gpuop_slicefold_del(&d, &a));
    assert_int_equal(d.watched, 1);
    /* saturated: still counts what it can, then asks for a recount */
    struct gpuop_slice big = {.node = "n", .pool = "n", .devices = GPUOP_SLICE_DEVICES_MAX};
    for (int i = 0; i < 300; i++)
        gpuop_slicefold_add(&d, &big);
    assert_int_equal(d.slices, UINT8_MAX);
    assert_int_equal(d.devices, UINT8_MAX * GPUOP_SLICE_DEVICES_MAX);
    assert_false(gpuop_slicefold_del(&d, &big));
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
    struct gpuop_slice sl = {.node = "n", .pool = "n", .devices = 8};
    assert_false(gpuop_slicefold_del(&d, &sl));
    assert_int_equal(d.claims, 3);
    assert_int_equal(d.watched, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),      cmocka_unit_test(test_refused),
        cmocka_unit_test(test_unread),     cmocka_unit_test(test_fold),
        cmocka_unit_test(test_claim_fold),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
