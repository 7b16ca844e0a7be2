/*
 * buf.c - the growable byte buffer (see buf.h): doubling from a first size,
 * clamped to a hard limit, so n bytes appended in any pieces cost O(n)
 * copying and at most one allocation of the limit's size.
 */
#include <stdlib.h>
#include <string.h>

#include "gpuop/buf.h"

void gpuop_buf_init(struct gpuop_buf *b, size_t first, size_t max)
{
    *b = (struct gpuop_buf)GPUOP_BUF_INIT(first, max);
}

int gpuop_buf_reserve(struct gpuop_buf *b, size_t n)
{
    if (n > b->max - b->len)
        return GPUOP_ETOOBIG;
    size_t need = b->len + n;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : b->first ? b->first : 1;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? SIZE_MAX : cap * 2;
    if (cap > b->max)
        cap = b->max; /* still >= need: need <= max */
    char *data = realloc(b->data, cap);
    if (!data)
        return GPUOP_ENOMEM;
    b->data = data;
    b->cap = cap;
    return 0;
}

int gpuop_buf_append(struct gpuop_buf *b, const void *p, size_t n)
{
    int rc = gpuop_buf_reserve(b, n);
    if (rc < 0)
        return rc;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

void gpuop_buf_free(struct gpuop_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

char *gpuop_buf_steal(struct gpuop_buf *b)
{
    char *data = b->data;
    b->data = NULL;
    b->len = b->cap = 0;
    return data;
}
