/*
 * fuzz_model.c - libFuzzer target for the converters of Kubernetes JSON
 * into the compact model (src/model/model.c): node, pod and DaemonSet. The
 * input is parsed with jansson and handed to each converter; none may
 * crash or leak, an error must come with a terminated message, and the two
 * forms of the node and pod converters (*_from_json into a struct, *_new as
 * one pooled block) must agree: both succeed with equal results, or both
 * fail.
 *
 * Built by CMake with clang (test/fuzz/CMakeLists.txt) and run briefly by
 * ctest (fuzz/fuzz_model); by hand:
 *   build/test/fuzz/fuzz_model -max_total_time=60 test/data/analysis
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuop/model.h"
#include "gpuop/pool.h"

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

    struct gpuop_node n;
    memset(&n, 0, sizeof(n));
    int rc = gpuop_node_from_json(obj, &n, &err);
    check_err(rc, &err);
    struct gpuop_node *nn = gpuop_node_new(obj, NULL, &err);
    if ((rc == 0) != (nn != NULL) || (nn && !gpuop_node_equal(&n, nn)))
        abort();
    if (rc == 0)
        gpuop_node_free(&n);
    gpuop_pool_free(nn);

    struct gpuop_pod p;
    memset(&p, 0, sizeof(p));
    rc = gpuop_pod_from_json(obj, &p, &err);
    check_err(rc, &err);
    struct gpuop_pod *pn = gpuop_pod_new(obj, NULL, &err);
    if ((rc == 0) != (pn != NULL) || (pn && !gpuop_pod_equal(&p, pn)))
        abort();
    if (rc == 0)
        gpuop_pod_free(&p);
    gpuop_pool_free(pn);

    struct gpuop_ds d;
    memset(&d, 0, sizeof(d));
    rc = gpuop_ds_from_json(obj, &d, &err);
    check_err(rc, &err);
    if (rc == 0) {
        if (!gpuop_ds_equal(&d, &d))
            abort();
        gpuop_ds_free(&d);
    }
    json_decref(obj);
    return 0;
}
