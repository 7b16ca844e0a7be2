/*
 * fuzz_policy.c - libFuzzer target for the GpuPolicy parser and renderer.
 * The input is loaded as YAML (JSON is YAML); every document is parsed as a
 * policy and, when it is an object, rendered. Parsing must not fail on any
 * object (problems, not errors), every problem must be a terminated string,
 * and what is rendered must pass gpuop's own checks of what the API server
 * accepts: image references, env names, quantities, the annotations' total
 * size. Rendering twice gives equal objects, and rendering one operand
 * gives the element of the full rendering.
 *
 * Built by CMake with clang (test/fuzz/CMakeLists.txt) and run briefly by
 * ctest (fuzz/fuzz_policy); by hand:
 *   build/test/fuzz/fuzz_policy -max_total_time=60 test/data/policy
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuop/policy.h"
#include "gpuop/render.h"
#include "gpuop/yaml.h"
#include "validate.h"

#define DOCS_MAX        4
#define ANNOTATIONS_MAX 262144

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_quantities(json_t *map)
{
    const char *k;
    json_t *q;
    json_object_foreach(map, k, q)
    {
        unsigned __int128 v;
        if (json_is_string(q) && gpuop_validate_quantity(json_string_value(q), &v) != GPUOP_QTY_OK)
            abort();
        if (!json_is_string(q) && !json_is_number(q))
            abort();
    }
}

static size_t annotations_size(json_t *a)
{
    const char *k;
    json_t *v;
    size_t n = 0;
    json_object_foreach(a, k, v)
    {
        n += strlen(k) + json_string_length(v);
    }
    return n;
}

static void check_daemonset(json_t *ds)
{
    const char *why;
    size_t i;
    json_t *e;
    json_t *tmpl = json_object_get(json_object_get(ds, "spec"), "template");
    json_t *c = json_array_get(json_object_get(json_object_get(tmpl, "spec"), "containers"), 0);
    const char *image = json_string_value(json_object_get(c, "image"));
    if (!c || !image || !gpuop_validate_image(image, &why))
        abort();
    json_array_foreach(json_object_get(c, "env"), i, e)
    {
        json_t *name = json_object_get(e, "name");
        if (!json_is_string(name) ||
            !gpuop_validate_env_name(json_string_value(name), json_string_length(name)))
            abort();
    }
    json_t *res = json_object_get(c, "resources");
    check_quantities(json_object_get(res, "limits"));
    check_quantities(json_object_get(res, "requests"));
    if (annotations_size(json_object_get(json_object_get(ds, "metadata"), "annotations")) >
            ANNOTATIONS_MAX ||
        annotations_size(json_object_get(json_object_get(tmpl, "metadata"), "annotations")) >
            ANNOTATIONS_MAX)
        abort();
}

static void one(json_t *doc)
{
    struct gpuop_policy p;
    struct gpuop_err err = {0};
    int rc = gpuop_policy_parse(doc, &p, &err);
    if (!json_is_object(doc)) {
        if (rc != GPUOP_EINVAL)
            abort();
        return;
    }
    if (rc != 0)
        abort();
    for (int i = 0; i < p.nproblems && i < GPUOP_POLICY_PROBLEMS_MAX; i++)
        if (!memchr(p.problems[i].field, '\0', sizeof(p.problems[i].field)) ||
            !memchr(p.problems[i].message, '\0', sizeof(p.problems[i].message)))
            abort();
    struct gpuop_ospool pool;
    /* with a kernel: a precompiled driver renders none for a pool without one */
    if (gpuop_ospool_parse("ubuntu24.04/6.8.0-45-generic", &pool) < 0)
        abort();
    json_t *all = gpuop_render_all(&p, "gpuop-system", &pool, 1);
    json_t *again = gpuop_render_all(&p, "gpuop-system", &pool, 1);
    if (!all || !again || !json_equal(all, again))
        abort();
    size_t at = 0;
    for (int i = 0; i < gpuop_operand_count(); i++) {
        json_t *ds = gpuop_render_daemonset_os(&p, i, &pool, "gpuop-system");
        if (!ds)
            abort();
        check_daemonset(ds);
        if (p.operands[i].enabled && !json_equal(ds, json_array_get(all, at++)))
            abort();
        json_decref(ds);
    }
    if (at != json_array_size(all))
        abort();
    json_decref(all);
    json_decref(again);
    gpuop_policy_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gpuop_err err = {0};
    json_t *docs = NULL, *doc;
    size_t i;
    if (gpuop_yaml_load((const char *)data, size, &docs, &err) != 0)
        return 0;
    json_array_foreach(docs, i, doc)
    {
        if (i >= DOCS_MAX)
            break;
        one(doc);
        /* and as the "spec" of a policy, the shape the API server sends */
        json_t *wrapped =
            json_pack("{s:{s:s, s:s}, s:O}", "metadata", "name", "fuzz", "uid", "u", "spec", doc);
        if (!wrapped)
            abort();
        one(wrapped);
        json_decref(wrapped);
    }
    json_decref(docs);
    return 0;
}
