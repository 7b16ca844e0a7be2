/*
 * fuzz_model.c - libFuzzer target for the converters of Kubernetes JSON
 * into the compact model (src/model/model.c, slice.c, claim.c): node, pod,
 * DaemonSet, ResourceSlice and ResourceClaim. The
 * input is parsed with jansson and handed to each converter; none may
 * crash or leak, an error must come with a terminated message, and a node
 * or pod read twice (gpuop_*_new, one pooled block each) must be equal to
 * itself: both reads succeed with equal results, or both fail.
 *
 * Built by CMake with clang (test/fuzz/CMakeLists.txt) and run briefly by
 * ctest (fuzz/fuzz_model); by hand:
 *   build/test/fuzz/fuzz_model -max_total_time=60 test/data/analysis
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuop/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_err(int rc, const struct gpuop_err *err)
{
    if (rc > 0 || (rc < 0 && !memchr(err->message, '\0', sizeof(err->message))))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *obj = json_loadb((const char *)data, size, 0, NULL);
    struct gpuop_err err = {0};
    if (!obj)
        return 0;

    struct gpuop_node *n1 = gpuop_node_new(obj, NULL, &err);
    check_err(n1 ? 0 : err.rc ? err.rc : -1, &err);
    struct gpuop_node *n2 = gpuop_node_new(obj, NULL, &err);
    if (!n1 != !n2 || (n1 && !gpuop_node_equal(n1, n2)))
        abort();
    gpuop_node_free(n1);
    gpuop_node_free(n2);

    struct gpuop_pod *p1 = gpuop_pod_new(obj, NULL, &err);
    check_err(p1 ? 0 : err.rc ? err.rc : -1, &err);
    struct gpuop_pod *p2 = gpuop_pod_new(obj, NULL, &err);
    if (!p1 != !p2 || (p1 && !gpuop_pod_equal(p1, p2)))
        abort();
    gpuop_pod_free(p1);
    gpuop_pod_free(p2);

    int rc;
    struct gpuop_ds d;
    memset(&d, 0, sizeof(d));
    rc = gpuop_ds_from_json(obj, &d, &err);
    check_err(rc, &err);
    if (rc == 0) {
        if (!gpuop_ds_equal(&d, &d))
            abort();
        gpuop_ds_free(&d);
    }

    /* DRA: a ResourceSlice, and a ResourceClaim (its key borrowed) */
    struct gpuop_slice *s1 = gpuop_slice_new(obj, &err);
    check_err(s1 ? 0 : err.rc ? err.rc : -1, &err);
    struct gpuop_slice *s2 = gpuop_slice_new(obj, &err);
    if (!s1 != !s2 || (s1 && (s1->devices != s2->devices || strcmp(s1->node, s2->node) != 0)))
        abort();
    gpuop_slice_free(s1);
    gpuop_slice_free(s2);
    struct gpuop_claim *c1 = gpuop_claim_new(obj, "ns/claim", &err);
    check_err(c1 ? 0 : err.rc ? err.rc : -1, &err);
    struct gpuop_claim *c2 = gpuop_claim_new(obj, "ns/claim", &err);
    if (!c1 != !c2 || (c1 && !gpuop_claim_equal(c1, c2)))
        abort();
    for (size_t k = 0; c1 && k < c1->npods; k++) {
        const char *uid, *name = gpuop_claim_pod(c1, k, &uid);
        if (!gpuop_claim_reserved_by(c1, name, uid))
            abort();
    }
    gpuop_claim_free(c1);
    gpuop_claim_free(c2);
    json_decref(obj);
    return 0;
}
