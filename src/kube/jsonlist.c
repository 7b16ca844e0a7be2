/*
 * jsonlist.c - the List splitter of jsonlist_int.h: one pass over the bytes, a
 * few flags of state, and a capture buffer that holds only the object being
 * read (grown by doubling up to max_object).
 */
#include <stdlib.h>
#include <string.h>

#include "jsonlist_int.h"

#define MAX_DEPTH     1000 /* jansson refuses deeper documents anyway */
#define CAPTURE_FIRST 4096 /* the capture buffer's first size; doubles up to max_object */

void gpuop_jsonlist_init(struct gpuop_jsonlist *l, size_t max_object, gpuop_jsonlist_item_cb cb,
                         void *arg)
{
    memset(l, 0, sizeof(*l));
    l->on_item = cb;
    l->arg = arg;
    gpuop_buf_init(&l->buf, CAPTURE_FIRST, max_object);
}

void gpuop_jsonlist_reset(struct gpuop_jsonlist *l)
{
    struct gpuop_buf buf = l->buf;
    json_decref(l->metadata);
    gpuop_jsonlist_init(l, buf.max, l->on_item, l->arg);
    gpuop_buf_clear(&buf);
    l->buf = buf; /* keep the capture buffer for the next page */
}

void gpuop_jsonlist_free(struct gpuop_jsonlist *l)
{
    json_decref(l->metadata);
    gpuop_buf_free(&l->buf);
    memset(l, 0, sizeof(*l));
}

static int append(struct gpuop_jsonlist *l, char c, struct gpuop_err *err)
{
    int rc = gpuop_buf_push(&l->buf, c);
    if (rc == GPUOP_ETOOBIG)
        return gpuop_err_set(err, rc, NULL, "an object of the list exceeds %zu bytes", l->buf.max);
    if (rc < 0)
        return gpuop_err_set(err, rc, NULL, "out of memory reading a list");
    return 0;
}

/* A captured value has closed: deliver it. */
static int emit(struct gpuop_jsonlist *l, struct gpuop_err *err)
{
    int rc = 0;
    l->capture_depth = 0;
    if (l->capture_meta) {
        json_error_t je;
        json_decref(l->metadata);
        l->metadata = json_loadb(l->buf.data, l->buf.len, 0, &je);
        if (!l->metadata)
            rc = gpuop_err_set(err, GPUOP_EPARSE, "metadata", "list metadata: %s", je.text);
    } else {
        l->items++;
        rc = l->on_item(l->arg, l->buf.data, l->buf.len);
        if (rc < 0)
            gpuop_err_set(err, rc, NULL, "stopped by the item callback");
    }
    l->capture_meta = false;
    gpuop_buf_clear(&l->buf);
    return rc;
}

static int bad(struct gpuop_err *err, const char *what)
{
    return gpuop_err_set(err, GPUOP_EPARSE, NULL, "not a Kubernetes list: %s", what);
}

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* A byte outside any string. */
static int structural(struct gpuop_jsonlist *l, char c, struct gpuop_err *err)
{
    if (l->done)
        return is_ws(c) ? 0 : bad(err, "data after the top-level object");
    if (!l->started) {
        if (is_ws(c))
            return 0;
        if (c != '{')
            return bad(err, "the body is not a JSON object");
        l->started = true;
    }
    if (c == '{' || c == '[') {
        if (l->depth == 1 && !l->expect_key) {
            bool items = !l->key_overflow && strcmp(l->key, "items") == 0;
            bool meta = !l->key_overflow && strcmp(l->key, "metadata") == 0;
            if (items && c == '[') {
                l->in_items = true;
                l->saw_items = true;
            } else if (meta && c == '{') {
                l->capture_depth = 1;
                l->capture_meta = true;
            }
        } else if (l->depth == 2 && l->in_items && !l->capture_depth) {
            if (c != '{')
                return bad(err, "an element of items is not an object");
            l->capture_depth = 2;
        }
        if (++l->depth > MAX_DEPTH)
            return gpuop_err_set(err, GPUOP_ETOOBIG, NULL, "list nested too deeply");
        if (l->depth == 1)
            l->expect_key = true;
        return 0;
    }
    if (c == '}' || c == ']') {
        if (l->depth == 0)
            return bad(err, "unbalanced brackets");
        l->depth--;
        if (l->depth == 1 && l->in_items)
            l->in_items = false; /* the items array closed */
        if (l->depth == 0)
            l->done = true;
        return 0;
    }
    if (l->depth == 1) {
        if (c == ':')
            l->expect_key = false;
        else if (c == ',') {
            l->expect_key = true;
            l->keylen = 0;
            l->key[0] = '\0';
            l->key_overflow = false;
        }
    } else if (l->depth == 2 && l->in_items && !is_ws(c) && c != ',') {
        return bad(err, "an element of items is not an object");
    }
    return 0;
}

int gpuop_jsonlist_feed(struct gpuop_jsonlist *l, const char *chunk, size_t len,
                        struct gpuop_err *err)
{
    for (size_t i = 0; i < len; i++) {
        char c = chunk[i];
        int rc;
        if (l->in_str) {
            if (l->esc)
                l->esc = false;
            else if (c == '\\')
                l->esc = true;
            else if (c == '"')
                l->in_str = false;
            if (l->in_str && l->depth == 1 && l->expect_key) {
                if (l->keylen + 1 < sizeof(l->key)) {
                    l->key[l->keylen++] = c;
                    l->key[l->keylen] = '\0';
                } else {
                    l->key_overflow = true;
                }
            }
        } else if (c == '"') {
            if (!l->started || l->done)
                return bad(err, "a string outside the top-level object");
            if (l->depth == 2 && l->in_items && !l->capture_depth)
                return bad(err, "an element of items is not an object");
            l->in_str = true;
            if (l->depth == 1 && l->expect_key) {
                l->keylen = 0;
                l->key[0] = '\0';
                l->key_overflow = false;
            }
        } else if ((rc = structural(l, c, err)) < 0) {
            return rc;
        }
        if (l->capture_depth) {
            if ((rc = append(l, c, err)) < 0)
                return rc;
            if (!l->in_str && (c == '}' || c == ']') && l->depth == l->capture_depth &&
                (rc = emit(l, err)) < 0)
                return rc;
        }
    }
    return 0;
}

int gpuop_jsonlist_finish(struct gpuop_jsonlist *l, struct gpuop_err *err)
{
    if (!l->done)
        return gpuop_err_set(err, GPUOP_EPARSE, NULL, "list truncated after %zu objects", l->items);
    return 0;
}
