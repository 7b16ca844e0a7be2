/*
 * test_jsonlist.c - the streaming List splitter: every chunking of a body
 * yields the same items and metadata as parsing it whole; malformed or
 * oversized bodies are errors, never crashes or unbounded buffers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "jsonlist_int.h"

struct got {
    json_t *items; /* array of parsed items */
    int stop_at;   /* return -5 at this item (1-based); 0 never */
};

static int on_item(void *arg, const char *json, size_t len)
{
    struct got *g = arg;
    json_t *o = json_loadb(json, len, 0, NULL);
    assert_non_null(o); /* exactly one complete object, nothing around it */
    json_array_append_new(g->items, o);
    if (g->stop_at && (int)json_array_size(g->items) == g->stop_at)
        return -5;
    return 0;
}

/* Feeds body in chunks of size step; returns feed's or finish's rc. */
static int split(const char *body, size_t step, size_t max, struct got *g, json_t **meta,
                 struct gpuop_jsonlist *out_state)
{
    struct gpuop_jsonlist l;
    struct gpuop_err err = {0};
    gpuop_jsonlist_init(&l, max, on_item, g);
    size_t n = strlen(body);
    int rc = 0;
    for (size_t off = 0; off < n && rc == 0; off += step)
        rc = gpuop_jsonlist_feed(&l, body + off, off + step > n ? n - off : step, &err);
    if (rc == 0)
        rc = gpuop_jsonlist_finish(&l, &err);
    if (rc < 0)
        assert_true(err.message[0] != '\0');
    if (meta)
        *meta = json_incref(l.metadata);
    if (out_state)
        *out_state = l;
    else
        gpuop_jsonlist_free(&l);
    return rc;
}

static json_t *tricky_list(int n)
{
    json_t *items = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(
            items, json_pack("{s:{s:s, s:{s:s}}, s:[s, s, {s:[i, b, n]}], s:f}", "metadata", "name",
                             i % 2 ? "a}b]c{d[" : "quote\"back\\slash", "labels", "x", "\"}]",
                             "spec", "\\", "héllo \xe2\x9c\x93", "nested", i, 1, "ratio", i / 3.0));
    return json_pack("{s:s, s:s, s:{s:s, s:s}, s:o}", "kind", "PodList", "apiVersion", "{[v1",
                     "metadata", "resourceVersion", "12345", "continue", "abc\"}", "items", items);
}

static void test_every_chunking(void **state)
{
    (void)state;
    json_t *list = tricky_list(40);
    char *body = json_dumps(list, JSON_INDENT(1)); /* whitespace everywhere too */
    size_t steps[] = {1, 2, 3, 7, 64, 1000, strlen(body)};
    for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
        struct got g = {json_array(), 0};
        json_t *meta = NULL;
        assert_int_equal(split(body, steps[s], 1 << 20, &g, &meta, NULL), 0);
        assert_true(json_equal(g.items, json_object_get(list, "items")));
        assert_true(json_equal(meta, json_object_get(list, "metadata")));
        json_decref(meta);
        json_decref(g.items);
    }
    free(body);
    json_decref(list);
}

static void test_shapes(void **state)
{
    (void)state;
    struct got g = {json_array(), 0};
    json_t *meta = NULL;
    struct gpuop_jsonlist l;
    /* metadata after items; an "items" inside metadata is not the list's */
    assert_int_equal(split("{\"items\":[{\"a\":1},{\"b\":[{}]}],\"metadata\":{\"items\":[1],"
                           "\"resourceVersion\":\"7\"}}",
                           5, 1024, &g, &meta, &l),
                     0);
    assert_int_equal(json_array_size(g.items), 2);
    assert_string_equal(json_string_value(json_object_get(meta, "resourceVersion")), "7");
    assert_true(l.saw_items);
    assert_int_equal(l.items, 2);
    /* reset: ready for the next page, state and metadata gone */
    gpuop_jsonlist_reset(&l);
    assert_null(l.metadata);
    assert_int_equal(gpuop_jsonlist_feed(&l, "{\"items\":[]}", 12, NULL), 0);
    assert_int_equal(gpuop_jsonlist_finish(&l, NULL), 0);
    assert_true(l.saw_items);
    assert_int_equal(l.items, 0);
    gpuop_jsonlist_free(&l);
    json_decref(meta);
    json_decref(g.items);

    /* no items at all: not an error for the splitter, saw_items tells */
    g.items = json_array();
    assert_int_equal(
        split("{\"kind\":\"Status\",\"itemsX\":[1],\"items\":null}", 3, 1024, &g, NULL, &l), 0);
    assert_false(l.saw_items);
    gpuop_jsonlist_free(&l);
    json_decref(g.items);
}

static void test_errors(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "[{\"a\":1}]",                             /* not an object */
        "{\"items\":[1,2]}",                       /* elements must be objects */
        "{\"items\":[\"x\"]}",                     /* ... also strings */
        "{\"items\":[{\"a\":1}]}}",                /* unbalanced */
        "{\"items\":[]} x",                        /* data after the object */
        "{\"items\":[{\"a\":1}",                   /* truncated */
        "{\"items\":[{\"a\":\"}]}\"}]",            /* truncated inside a string */
        "   ",                                     /* empty */
        "{\"metadata\":{\"x\":1 2},\"items\":[]}", /* metadata that is not JSON */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct got g = {json_array(), 0};
        int rc = split(bad[i], 2, 1024, &g, NULL, NULL);
        if (rc != GPUOP_EPARSE)
            fail_msg("case %zu (%s): rc %d", i, bad[i], rc);
        json_decref(g.items);
    }

    /* one object over the limit: ETOOBIG, the objects before it delivered */
    struct got g = {json_array(), 0};
    char body[300];
    snprintf(body, sizeof(body), "{\"items\":[{\"a\":1},{\"b\":\"%0100d\"}]}", 0);
    assert_int_equal(split(body, 7, 64, &g, NULL, NULL), GPUOP_ETOOBIG);
    assert_int_equal(json_array_size(g.items), 1);
    json_decref(g.items);

    /* the callback stops the feed with its own code */
    json_t *list = tricky_list(10);
    char *s = json_dumps(list, JSON_COMPACT);
    g = (struct got){json_array(), 3};
    assert_int_equal(split(s, 11, 1 << 20, &g, NULL, NULL), -5);
    assert_int_equal(json_array_size(g.items), 3);
    json_decref(g.items);
    free(s);
    json_decref(list);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_chunking),
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
