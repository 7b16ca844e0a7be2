/*
 * fuzz_jsonlist.c - libFuzzer target for the LIST streamer
 * (src/kube/jsonlist.c), differential against jansson on whole bodies.
 *
 * The first input byte picks the transport chunk sizes, the rest is the
 * body, fed in those chunks. Whenever jansson parses the whole body
 * (duplicate keys refused, so both sides read one meaning) as a List
 * (an object whose "items" is an array of objects and whose "metadata", if
 * any, is an object), the streamer must accept it too and hand over exactly
 * those items, in order, each parsing to the equal value, and the equal
 * metadata. Whatever the body, the streamer must not crash, leak, or read
 * outside its chunks (ASan: every chunk is copied into an exact buffer),
 * and must deliver only items that close within the body.
 *
 * Built by CMake with clang (test/fuzz/CMakeLists.txt) and run briefly by
 * ctest (fuzz/fuzz_jsonlist); by hand:
 *   build/test/fuzz/fuzz_jsonlist -max_total_time=60 test/fuzz/corpus/jsonlist
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jsonlist_int.h"

#define MAX_OBJECT (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_item(void *arg, const char *json, size_t len)
{
    json_t *items = arg;
    /* the raw bytes as they are: parsed strictly, or kept as a string */
    json_t *v = json_loadb(json, len, JSON_REJECT_DUPLICATES, NULL);
    if (!v)
        v = json_stringn_nocheck(json, len);
    if (!v || json_array_append_new(items, v))
        abort();
    return 0;
}

/* A List as the informer reads one; else false. */
static bool is_list(json_t *body)
{
    json_t *items = json_object_get(body, "items"), *md = json_object_get(body, "metadata"), *e;
    size_t i;
    if (!json_is_object(body) || !json_is_array(items) || (md && !json_is_object(md)))
        return false;
    json_array_foreach(items, i, e)
    {
        if (!json_is_object(e))
            return false;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t step = (size_t)data[0] % 37 + 1; /* 1..37 bytes a chunk, or ... */
    bool whole = data[0] >= 0xf0;           /* ... the body in one chunk */
    const char *body = (const char *)data + 1;
    size_t blen = size - 1;

    json_t *got = json_array();
    struct gpuop_jsonlist l;
    struct gpuop_err err = {0};
    gpuop_jsonlist_init(&l, MAX_OBJECT, on_item, got);
    int rc = 0;
    for (size_t off = 0; rc == 0 && off < blen;) {
        size_t n = whole ? blen : (blen - off < step ? blen - off : step);
        char *chunk = malloc(n ? n : 1);
        if (!chunk)
            abort();
        memcpy(chunk, body + off, n);
        rc = gpuop_jsonlist_feed(&l, chunk, n, &err);
        free(chunk);
        off += n;
    }
    if (rc == 0)
        rc = gpuop_jsonlist_finish(&l, &err);
    if (rc < 0 && !memchr(err.message, '\0', sizeof(err.message)))
        abort();

    json_t *ref = json_loadb(body, blen, JSON_REJECT_DUPLICATES, NULL);
    if (ref && is_list(ref)) {
        json_t *items = json_object_get(ref, "items"), *md = json_object_get(ref, "metadata");
        if (rc != 0 || !json_equal(items, got) || json_array_size(got) != l.items)
            abort();
        if (md && !json_equal(md, l.metadata))
            abort();
    }
    json_decref(ref);
    json_decref(got);
    gpuop_jsonlist_free(&l);
    return 0;
}
