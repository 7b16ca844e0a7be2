/*
 * fuzz_jsonstrip.c - libFuzzer target for the members cut out before
 * parsing (src/kube/jsonstrip.c). The first byte picks the paths (bits:
 * managedFields; metadata.managedFields; object.metadata.managedFields;
 * spec.a; spec.b; a; spec.d, digested), the rest is the document.
 * Whenever jansson can parse the document as it is, the cut one must parse
 * too and equal it once the members at the paths are deleted from both
 * (a digested member is back as its digest, deleted with them); the cuts must lie in order,
 * apart, within the document; when nothing is cut, the load is
 * json_loadb's.
 *
 * Built by CMake with clang (test/fuzz/CMakeLists.txt) and run briefly by
 * ctest (fuzz/fuzz_jsonstrip); by hand:
 * build/test/fuzz/fuzz_jsonstrip -max_total_time=60 test/fuzz/corpus/jsonstrip
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jsonstrip_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct gpuop_jsonstrip_path ALL[] = {
    {.key = {"managedFields"}, .n = 1},
    {.key = {"metadata", "managedFields"}, .n = 2},
    {.key = {"object", "metadata", "managedFields"}, .n = 3},
    {.key = {"spec", "a"}, .n = 2},
    {.key = {"spec", "b"}, .n = 2},
    {.key = {"a"}, .n = 1},
    {.key = {"spec", "d"}, .n = 2, .digest = true},
};
#define NALL (sizeof(ALL) / sizeof(ALL[0]))

/* Deletes the member at path from tree (borrowed), if it is there. */
static void del_path(json_t *tree, const struct gpuop_jsonstrip_path *p)
{
    for (size_t i = 0; i + 1 < p->n && tree; i++)
        tree = json_object_get(tree, p->key[i]);
    if (json_is_object(tree))
        json_object_del(tree, p->key[p->n - 1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 65536)
        return 0;
    struct gpuop_jsonstrip_path paths[NALL];
    size_t np = 0;
    for (size_t i = 0; i < NALL; i++)
        if (data[0] & (1u << i))
            paths[np++] = ALL[i];
    if (np == 0)
        paths[np++] = ALL[2];
    const char *doc = (const char *)data + 1;
    size_t n = size - 1;
    json_error_t e1, e2;
    struct gpuop_jsonstrip_cut c[GPUOP_JSONSTRIP_PATHS_MAX];
    size_t nc = 0;
    int rc = gpuop_jsonstrip_find(doc, n, paths, np, c, &nc);
    if (rc != 0 && rc != GPUOP_ENOTFOUND && rc != GPUOP_EPARSE && rc != GPUOP_ETOOBIG)
        abort();
    if ((rc == 0) != (nc > 0) || nc > np)
        abort();
    for (size_t k = 0, pos = 0; k < nc; k++) {
        if (c[k].len == 0 || c[k].off < pos || c[k].off + c[k].len > n)
            abort();
        pos = c[k].off + c[k].len;
    }
    json_t *orig = json_loadb(doc, n, 0, &e1);
    json_t *got = gpuop_jsonstrip_load(doc, n, paths, np, 0, &e2);
    if (rc != 0) { /* nothing cut: json_loadb's answer */
        if (!orig != !got || (orig && !json_equal(orig, got)))
            abort();
    } else if (orig) {
        if (!got)
            abort();
        for (size_t i = 0; i < np; i++) {
            del_path(orig, &paths[i]);
            del_path(got, &paths[i]);
        }
        if (!json_equal(orig, got))
            abort();
    }
    json_decref(orig);
    json_decref(got);
    return 0;
}
