/*
 * lines.c - carry-over line framer for watch streams.
 *
 * Lines that lie wholly inside a chunk are handed to the callback straight
 * from the chunk's bytes: no copy, no allocation. Only the partial line at
 * the end of a chunk is copied into the carry-over buffer, which grows
 * geometrically (so a long line arriving in many small chunks costs O(n),
 * not O(n^2)) and never beyond max_line + 1 bytes (the extra byte is room
 * for a '\r' that the '\n' of the next chunk will show to be a CRLF); one
 * grown past KEEP_CAP for a long line is freed once that line is out.
 *
 * Limits: a line is at most max_line bytes without its "\n" / "\r\n".
 * A longer line returns GPUOP_ETOOBIG and discards the carry-over; the rest
 * of that chunk is dropped too, and the caller is expected to restart the
 * stream (a new connection calls gpuop_lines_reset). When the callback stops
 * the feed, the rest of the chunk and the carry-over are dropped as well.
 */
#include <stdlib.h>
#include <string.h>

#include "lines_int.h"

#define MIN_CAP 256

/* A carry-over grown past this for a long line (a GpuPolicy with its
 * status: about 200 KB at 5,000 nodes, once a write) is given back once
 * that line is delivered, not kept at its largest for the stream's life. */
#define KEEP_CAP (64 * 1024)

void gpuop_lines_init(struct gpuop_lines *l, size_t max_line)
{
    /* room for a '\r' past the limit (see the top comment) */
    gpuop_buf_init(&l->buf, MIN_CAP, max_line + 1);
    l->max_line = max_line;
}

void gpuop_lines_reset(struct gpuop_lines *l)
{
    gpuop_buf_clear(&l->buf); /* keep the buffer for the next connection */
}

size_t gpuop_lines_pending(const struct gpuop_lines *l)
{
    return l->buf.len;
}

void gpuop_lines_free(struct gpuop_lines *l)
{
    gpuop_buf_free(&l->buf);
}

/* The carry-over may hold max_line bytes, plus one when that last byte is a
 * '\r' (the line may turn out to end in "\r\n"). */
static int over_limit(const struct gpuop_lines *l, const char *tail, size_t total)
{
    if (total <= l->max_line)
        return 0;
    return !(total == l->max_line + 1 && tail[0] == '\r');
}

/* Appends n bytes to the carry-over (callers have checked the limit); on
 * failure the carry-over is dropped. */
static int carry(struct gpuop_lines *l, const char *p, size_t n)
{
    int rc = gpuop_buf_append(&l->buf, p, n);
    if (rc < 0)
        gpuop_buf_clear(&l->buf);
    return rc;
}

/* Delivers one line (without its '\n'); strips a trailing '\r'. */
static int deliver(const char *line, size_t len, gpuop_lines_cb cb, void *arg)
{
    if (len > 0 && line[len - 1] == '\r')
        len--;
    if (len == 0)
        return 0;
    return cb(arg, line, len);
}

int gpuop_lines_feed(struct gpuop_lines *l, const char *chunk, size_t len, gpuop_lines_cb cb,
                     void *arg)
{
    const char *p = chunk, *end = chunk + len;
    const char *nl;
    int rc;

    if (len == 0)
        return 0;

    /* Finish the carried-over line first. */
    if (l->buf.len > 0) {
        size_t n;
        nl = memchr(p, '\n', len);
        n = nl ? (size_t)(nl - p) : len;
        if (n > 0 && over_limit(l, nl ? nl - 1 : end - 1, l->buf.len + n)) {
            gpuop_buf_clear(&l->buf);
            return GPUOP_ETOOBIG;
        }
        if (n > 0 && (rc = carry(l, p, n)) != 0)
            return rc;
        if (!nl)
            return 0;
        /* a line may be one byte too long when that byte was not a '\r' */
        if (l->buf.len > l->max_line && l->buf.data[l->buf.len - 1] != '\r') {
            gpuop_buf_clear(&l->buf);
            return GPUOP_ETOOBIG;
        }
        n = l->buf.len;
        gpuop_buf_clear(&l->buf);
        rc = deliver(l->buf.data, n, cb, arg);
        if (l->buf.cap > KEEP_CAP)
            gpuop_buf_free(&l->buf); /* its limits stay */
        if (rc != 0)
            return rc;
        p = nl + 1;
    }

    /* Whole lines inside the chunk: straight from its bytes. */
    while (p < end && (nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
        size_t n = (size_t)(nl - p);
        if (n > l->max_line && !(n == l->max_line + 1 && nl[-1] == '\r'))
            return GPUOP_ETOOBIG;
        if ((rc = deliver(p, n, cb, arg)) != 0)
            return rc;
        p = nl + 1;
    }

    /* The partial line at the end. */
    if (p < end) {
        size_t n = (size_t)(end - p);
        if (over_limit(l, end - 1, n))
            return GPUOP_ETOOBIG;
        return carry(l, p, n);
    }
    return 0;
}
