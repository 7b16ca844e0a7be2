/*
 * arena.h - strings that live and die together (a findings set's node names
 * and details): copied into chunks that grow from 1 KiB to 256 KiB and are
 * freed at once. Fewer, larger blocks than one malloc per string: no
 * per-string header, and a large set's strings, once freed, leave whole
 * free pages behind instead of holes between longer-lived blocks.
 *
 * Strings never move: a returned pointer stays valid until
 * gpuop_arena_free().
 */
#ifndef GPUOP_ARENA_H
#define GPUOP_ARENA_H

#include <stddef.h>

struct gpuop_arena_chunk; /* arena.c */

struct gpuop_arena {
    struct gpuop_arena_chunk *head; /* newest chunk first */
    size_t used;                    /* bytes used in head */
    size_t total;                   /* bytes of all chunks (for tests and stats) */
};

#define GPUOP_ARENA_INIT                                                                           \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }

/* Copy of s in a (borrowed from a: lives until gpuop_arena_free), or NULL
 * when out of memory. */
char *gpuop_arena_strdup(struct gpuop_arena *a, const char *s);

/* Frees every chunk; a is left empty and usable. */
void gpuop_arena_free(struct gpuop_arena *a);

#endif
