/*
 * arena.c - string chunks freed together (see arena.h). A chunk is a small
 * header and its bytes; a string that does not fit the newest chunk starts
 * a new one twice as large (from 1 KiB up to 256 KiB, or as large as the
 * string). The rest of the old chunk is left unused: at most one string's
 * worth per chunk.
 */
#include <stdlib.h>
#include <string.h>

#include "gpuop/arena.h"

#define CHUNK_MIN 1024
#define CHUNK_MAX (256 * 1024)

struct gpuop_arena_chunk {
    struct gpuop_arena_chunk *next;
    size_t size; /* bytes in data */
    char data[];
};

char *gpuop_arena_strdup(struct gpuop_arena *a, const char *s)
{
    size_t n = strlen(s) + 1;
    if (!a->head || a->head->size - a->used < n) {
        size_t size = a->head ? a->head->size * 2 : CHUNK_MIN;
        if (size > CHUNK_MAX)
            size = CHUNK_MAX;
        if (size < n)
            size = n;
        struct gpuop_arena_chunk *c = malloc(sizeof(*c) + size);
        if (!c)
            return NULL;
        c->next = a->head;
        c->size = size;
        a->head = c;
        a->used = 0;
        a->total += size;
    }
    char *p = a->head->data + a->used;
    memcpy(p, s, n);
    a->used += n;
    return p;
}

void gpuop_arena_free(struct gpuop_arena *a)
{
    struct gpuop_arena_chunk *c = a->head;
    while (c) {
        struct gpuop_arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
    a->used = 0;
    a->total = 0;
}
