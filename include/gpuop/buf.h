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
 *
 * The typed array at the end (GPUOP_ARRAY) is the same buffer holding
 * elements of one type: the one growable array of gpuop (the work queue's
 * FIFO and delay heap, the metrics' series, the pool's slab index, the
 * YAML loader's anchors), with its limit counted in elements.
 */
#ifndef GPUOP_BUF_H
#define GPUOP_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

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

/* ---- the typed array ---- */

/* No limit on the elements but the address space. */
#define GPUOP_ARRAY_UNLIMITED SIZE_MAX

/* The bytes n elements of size elem take, saturated at SIZE_MAX (for a
 * limit: GPUOP_ARRAY_UNLIMITED stays unlimited). A constant expression
 * for constant arguments (static initialisers). */
#define GPUOP_ARRAY_BYTES(n, elem)                                                                 \
    ((size_t)(n) > SIZE_MAX / (elem) ? SIZE_MAX : (size_t)(n) * (elem))

/*
 * GPUOP_ARRAY(name, type) defines struct name, an array of type on a
 * gpuop_buf, and static inline functions over it (all counts and indexes
 * in elements):
 *
 *   void name_init(struct name *a, size_t first, size_t max)
 *       empty; the first allocation holds `first` elements, never more
 *       than `max` are held (GPUOP_ARRAY_UNLIMITED: no limit). A zeroed
 *       struct name is not usable: init it (or GPUOP_ARRAY_INIT).
 *   size_t name_len(const struct name *a)
 *   type *name_items(const struct name *a)
 *       the elements, [0 .. len); NULL while nothing was ever allocated.
 *       Any push or insert may move them.
 *   int name_push(struct name *a, type v)
 *       appends a copy of v: 0, GPUOP_ETOOBIG (max reached) or
 *       GPUOP_ENOMEM; on an error the array is unchanged.
 *   int name_insert(struct name *a, size_t i, type v)
 *       the same at index i <= len, the elements from i moving up one.
 *   void name_remove(struct name *a, size_t i, size_t n)
 *       drops elements [i .. i + n) (i + n <= len), those after moving down.
 *   type name_pop(struct name *a)
 *       removes and returns the last element (len > 0).
 *   void name_clear(struct name *a)     empty, keeping the memory.
 *   void name_free(struct name *a)      empty, memory given back.
 *
 * An element held in the array is owned by it as far as its bytes go;
 * what an element points to is the user's to free before clear or free.
 */
#define GPUOP_ARRAY_INIT(type, first_, max_)                                                       \
    {                                                                                              \
        GPUOP_BUF_INIT(GPUOP_ARRAY_BYTES((first_), sizeof(type)),                                  \
                       GPUOP_ARRAY_BYTES((max_), sizeof(type)))                                    \
    }

#define GPUOP_ARRAY(name, type)                                                                    \
    struct name {                                                                                  \
        struct gpuop_buf buf; /* whole elements of type */                                         \
    };                                                                                             \
    static inline void name##_init(struct name *a, size_t first, size_t max)                       \
    {                                                                                              \
        gpuop_buf_init(&a->buf, GPUOP_ARRAY_BYTES(first, sizeof(type)),                            \
                       GPUOP_ARRAY_BYTES(max, sizeof(type)));                                      \
    }                                                                                              \
    static inline size_t name##_len(const struct name *a)                                          \
    {                                                                                              \
        return a->buf.len / sizeof(type);                                                          \
    }                                                                                              \
    static inline type *name##_items(const struct name *a)                                         \
    {                                                                                              \
        return (type *)(void *)a->buf.data;                                                        \
    }                                                                                              \
    static inline int name##_push(struct name *a, type v)                                          \
    {                                                                                              \
        return gpuop_buf_append(&a->buf, &v, sizeof(type));                                        \
    }                                                                                              \
    static inline int name##_insert(struct name *a, size_t i, type v)                              \
    {                                                                                              \
        int rc = gpuop_buf_reserve(&a->buf, sizeof(type));                                         \
        if (rc < 0)                                                                                \
            return rc;                                                                             \
        type *e = name##_items(a);                                                                 \
        memmove(e + i + 1, e + i, a->buf.len - i * sizeof(type));                                  \
        e[i] = v;                                                                                  \
        a->buf.len += sizeof(type);                                                                \
        return 0;                                                                                  \
    }                                                                                              \
    static inline void name##_remove(struct name *a, size_t i, size_t n)                           \
    {                                                                                              \
        type *e = name##_items(a);                                                                 \
        if (n)                                                                                     \
            memmove(e + i, e + i + n, a->buf.len - (i + n) * sizeof(type));                        \
        a->buf.len -= n * sizeof(type);                                                            \
    }                                                                                              \
    static inline type name##_pop(struct name *a)                                                  \
    {                                                                                              \
        a->buf.len -= sizeof(type);                                                                \
        return name##_items(a)[a->buf.len / sizeof(type)];                                         \
    }                                                                                              \
    static inline void name##_clear(struct name *a)                                                \
    {                                                                                              \
        gpuop_buf_clear(&a->buf);                                                                  \
    }                                                                                              \
    static inline void name##_free(struct name *a)                                                 \
    {                                                                                              \
        gpuop_buf_free(&a->buf);                                                                   \
    }                                                                                              \
    struct name /* so the use ends with a semicolon */

#endif
