/*
 * jsonlist_int.h - a Kubernetes List response split while it streams in.
 *
 * A LIST page of 100 pods is hundreds of KB of JSON and several times that
 * once parsed whole (docs/benchmarks-history.md, "streamed LIST pages"); the
 * informer needs one object at a time. The splitter
 * scans the body as transport chunks arrive (tracking nesting, strings and
 * escapes, so chunks may split anywhere) and hands over the raw bytes of
 * each element of the top-level "items" array as soon as it closes, and
 * the top-level "metadata" object parsed. Memory is bounded by the largest
 * single object (max_object), whatever the page size.
 *
 * It checks structure only (balanced brackets, one top-level object, items
 * an array of objects); each element's JSON is validated by whoever parses
 * it.
 */
#ifndef GPUOP_JSONLIST_INT_H
#define GPUOP_JSONLIST_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "gpuop/buf.h"
#include "gpuop/error.h"

/* One element of "items": raw JSON (borrowed, valid during the call).
 * Return 0 to go on, negative to stop (gpuop_jsonlist_feed returns it). */
typedef int (*gpuop_jsonlist_item_cb)(void *arg, const char *json, size_t len);

struct gpuop_jsonlist {
    gpuop_jsonlist_item_cb on_item;
    void *arg;
    json_t *metadata; /* owned: the List's metadata once it has closed, else NULL */
    size_t items;     /* elements delivered */
    bool saw_items;   /* the top-level object had an "items" array */
    /* scanner state */
    int depth;
    bool in_str, esc, done, started, expect_key, in_items, key_overflow;
    char key[16];
    size_t keylen;
    int capture_depth; /* depth the captured value closes back to; 0: none */
    bool capture_meta;
    struct gpuop_buf buf; /* the value being captured, at most max_object bytes */
};

void gpuop_jsonlist_init(struct gpuop_jsonlist *l, size_t max_object, gpuop_jsonlist_item_cb cb,
                         void *arg);

/* Feeds a chunk. Returns 0, the callback's negative value, GPUOP_EPARSE
 * (not a List: err says what), GPUOP_ETOOBIG (an object over max_object)
 * or GPUOP_ENOMEM. After an error the splitter must be reset. */
int gpuop_jsonlist_feed(struct gpuop_jsonlist *l, const char *chunk, size_t len,
                        struct gpuop_err *err);

/* The body has ended: 0 when it was one complete top-level object, else
 * GPUOP_EPARSE ("truncated"). */
int gpuop_jsonlist_finish(struct gpuop_jsonlist *l, struct gpuop_err *err);

/* Back to the initial state (a new response), keeping callback and limit. */
void gpuop_jsonlist_reset(struct gpuop_jsonlist *l);

void gpuop_jsonlist_free(struct gpuop_jsonlist *l);

#endif
