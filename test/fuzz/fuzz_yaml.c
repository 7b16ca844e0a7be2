/*
 * fuzz_yaml.c - libFuzzer target for gpuop_yaml_load, and for the dumper on
 * whatever loads: every loaded document must dump, load back, and be equal
 * (json_equal; keys with a NUL byte are skipped, json_equal cannot see them).
 *
 * Built by CMake with clang (test/fuzz/CMakeLists.txt) and run briefly by
 * ctest (fuzz/fuzz_yaml); by hand: build/test/fuzz/fuzz_yaml -max_total_time=60
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuop/yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int has_nul_key(json_t *v)
{
    const char *key;
    size_t len, i;
    json_t *item;
    if (json_is_object(v)) {
        json_object_keylen_foreach(v, key, len, item)
        {
            if (strlen(key) != len || has_nul_key(item))
                return 1;
        }
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, item)
        {
            if (has_nul_key(item))
                return 1;
        }
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gpuop_err err = {0};
    json_t *docs = NULL, *doc;
    size_t i;

    if (gpuop_yaml_load((const char *)data, size, &docs, &err) != 0) {
        if (docs || err.rc == 0 || !memchr(err.message, '\0', sizeof(err.message)))
            abort();
        return 0;
    }
    json_array_foreach(docs, i, doc)
    {
        char *text = gpuop_yaml_dump(doc);
        json_t *back = NULL;
        int rc;
        if (!text)
            abort();
        rc = gpuop_yaml_load(text, strlen(text), &back, &err);
        /* a value at the depth limit inside a document is fine; a dump of
         * it is the same depth, so it must load back */
        if (rc != 0 || json_array_size(back) != 1)
            abort();
        if (!has_nul_key(doc) && !json_equal(json_array_get(back, 0), doc))
            abort();
        json_decref(back);
        free(text);
    }
    json_decref(docs);
    return 0;
}
