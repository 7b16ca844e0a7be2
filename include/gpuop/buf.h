/*
 * buf.h - the one growable byte buffer of gpuop: bytes appended at the end,
 * capacity doubling from a first size, never beyond a hard limit.
 *
 * Every buffer fed from the network or a file has a size limit, so the
 * limit is part of the buffer: an append past it returns GPUOP_ETOOBIG and
 * changes nothing, and the capacity is clamped to it (a buffer never holds
 * more memory than its limit). Users: the API client's response body
 * (kube.c), the line framer's carry-over (lines.c), the LIST splitter's
 * capture (jsonlist.c), the YAML file reader and dumper (yaml.c).
 *
 * Ownership: the buffer owns data (malloc'd); gpuop_buf_free gives it back
 * and gpuop_buf_steal hands it to the caller, who frees it with free().
 * Bytes are not NUL-terminated: append a '\0' when a string is wanted.
 */
#ifndef GPUOP_BUF_H
#define GPUOP_BUF_H

#include <stddef.h>
#include <stdint.h>

#include "gpuop/error.h"

struct gpuop_buf {
    char *data;   /* owned: NULL until the first byte, else cap bytes */
    size_t len;   /* bytes held: data[0 .. len) */
    size_t cap;   /* bytes allocated; never above max */
    size_t max;   /* the most bytes the buffer may hold */
    size_t first; /* the first allocation's size (clamped to max) */
};

/* No limit but the address space (a buffer not fed from outside). */
#define GPUOP_BUF_UNLIMITED SIZE_MAX

/* An empty buffer whose first allocation is `first` bytes and that never
 * holds more than `max`. Allocates nothing. */
#define GPUOP_BUF_INIT(first_, max_)                                                               \
    {                                                                                              \
        NULL, 0, 0, (max_), (first_)                                                               \
    }

void gpuop_buf_init(struct gpuop_buf *b, size_t first, size_t max);

/* Makes room for n more bytes (data[len .. len + n) may then be written,
 * and len advanced over them). Grows by doubling from `first`, clamped to
 * max. Returns 0, GPUOP_ETOOBIG when len + n > max, or GPUOP_ENOMEM; on an
 * error the buffer is unchanged. */
int gpuop_buf_reserve(struct gpuop_buf *b, size_t n);

/* Appends n bytes of p (borrowed). Returns 0, GPUOP_ETOOBIG (len + n >
 * max) or GPUOP_ENOMEM; on an error nothing was appended. */
int gpuop_buf_append(struct gpuop_buf *b, const void *p, size_t n);

/* Appends one byte: gpuop_buf_append, with the common case inline (the
 * LIST splitter appends byte by byte). */
static inline int gpuop_buf_push(struct gpuop_buf *b, char c)
{
    if (b->len < b->cap) { /* cap <= max, so within the limit */
        b->data[b->len++] = c;
        return 0;
    }
    return gpuop_buf_append(b, &c, 1);
}

/* Empties the buffer, keeping its memory for what comes next. */
static inline void gpuop_buf_clear(struct gpuop_buf *b)
{
    b->len = 0;
}

/* Frees the memory; the buffer is empty and usable again, same limits. */
void gpuop_buf_free(struct gpuop_buf *b);

/* Hands the bytes over: returns data (new, the caller frees it; NULL when
 * nothing was ever allocated) and leaves the buffer empty, as after
 * gpuop_buf_free. */
char *gpuop_buf_steal(struct gpuop_buf *b);

#endif
