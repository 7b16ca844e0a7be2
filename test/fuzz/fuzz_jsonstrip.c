/*
 * fuzz_jsonstrip.c - libFuzzer target for the member cut out before
 * parsing (src/kube/jsonstrip.c). The first byte picks the path
 * (managedFields; metadata.managedFields; object.metadata.managedFields),
 * the rest is the document. Whenever jansson can parse the document as it
 * is, the cut one must parse too and equal it once the member at the path
 * is deleted from both, and a cut must be exactly one member of the path's
 * last name; when nothing is cut, the load is json_loadb's.
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

static const char *const PATH[] = {"object", "metadata", "managedFields"};
#define NPATH 3

/* Deletes the member at path from tree (borrowed), if it is there. */
static void del_path(json_t *tree, const char *const *path, size_t npath)
{
    for (size_t i = 0; i + 1 < npath && tree; i++)
        tree = json_object_get(tree, path[i]);
    if (json_is_object(tree))
        json_object_del(tree, path[npath - 1]);
}

/* The cut bytes are one member named last, with at most a comma and
 * whitespace on one side. */
static void check_member(const char *doc, const struct gpuop_jsonstrip_cut *c, const char *last)
{
    char *buf = malloc(c->len + 3);
    if (!buf)
        abort();
    size_t a = c->off, b = c->off + c->len;
    if (doc[a] == ',')
        a++;
    else {
        while (b > a && (doc[b - 1] == ' ' || doc[b - 1] == '\t' || doc[b - 1] == '\n' ||
                         doc[b - 1] == '\r'))
            b--;
        if (b > a && doc[b - 1] == ',')
            b--;
    }
    buf[0] = '{';
    memcpy(buf + 1, doc + a, b - a);
    buf[1 + b - a] = '}';
    json_error_t je;
    json_t *m = json_loadb(buf, b - a + 2, 0, &je);
    if (!m || json_object_size(m) != 1 || !json_object_get(m, last))
        abort();
    json_decref(m);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 65536)
        return 0;
    size_t npath = 1 + data[0] % NPATH;
    const char *const *path = PATH + (NPATH - npath);
    const char *doc = (const char *)data + 1;
    size_t n = size - 1;
    json_error_t e1, e2;
    struct gpuop_jsonstrip_cut c;
    int rc = gpuop_jsonstrip_find(doc, n, path, npath, &c);
    if (rc != 0 && rc != GPUOP_ENOTFOUND && rc != GPUOP_EPARSE && rc != GPUOP_ETOOBIG)
        abort();
    if (rc == 0 && (c.off + c.len > n || c.len == 0))
        abort();
    json_t *orig = json_loadb(doc, n, 0, &e1);
    json_t *got = gpuop_jsonstrip_load(doc, n, path, npath, 0, &e2);
    if (rc != 0) { /* nothing cut: json_loadb's answer */
        if (!orig != !got || (orig && !json_equal(orig, got)))
            abort();
    } else if (orig) {
        if (!got)
            abort();
        check_member(doc, &c, path[npath - 1]);
        del_path(orig, path, npath);
        del_path(got, path, npath);
        if (!json_equal(orig, got))
            abort();
    }
    json_decref(orig);
    json_decref(got);
    return 0;
}
