/*
 * map.h - a string-keyed hash map of void * values (on the open-addressing
 * core of table.h: linear probing and backward-shift deletion,
 * load factor <= 0.7).
 *
 * Memory: a slot is one pointer; each key lives in one allocation with its
 * value, hash and a 32-bit tag the owner may use (the informer keeps its
 * list mark there). At 30,000 keys of 40 bytes that is about 80 bytes a
 * key, where a separate key copy and a 24-byte slot cost 100.
 *
 * Keys are copied (malloc, or gpuop_pool for a pooled map); values are
 * borrowed: the map never frees a value, the
 * owner does (see gpuop_map_free's callback).
 */
#ifndef GPUOP_MAP_H
#define GPUOP_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gpuop_map_node; /* map.c */

struct gpuop_map {
    struct gpuop_map_node **slots;
    size_t cap; /* 0 or gpuop_table_cap(...) */
    size_t len;
    bool pooled; /* keys live in gpuop_pool (see gpuop_map_init_pooled) */
};

void gpuop_map_init(struct gpuop_map *m);

/* The same for a map that lives as long as the process and holds many keys
 * (a watch cache): its keys come from gpuop_pool, away from short-lived
 * heap blocks (see pool.h). Not for maps whose keys come and go quickly. */
void gpuop_map_init_pooled(struct gpuop_map *m);

/* Borrowed value, or NULL. */
void *gpuop_map_get(const struct gpuop_map *m, const char *key);

/* The 32-bit hash of key, the one the map keeps (for gpuop_map_get_h32). */
uint32_t gpuop_map_h32(const char *key);

/* The value of the one key other than skip (NULL: none skipped) whose
 * 32-bit hash is h, its key in *key (borrowed, may be NULL), or NULL when
 * there is none or more than one: a walk of one probe run. Lets a table
 * name a key by its hash alone (cache/slicetab_int.h). */
void *gpuop_map_get_h32(const struct gpuop_map *m, uint32_t h, const char *skip, const char **key);

/* Inserts or replaces. When a value was replaced, *old gets it (may be NULL
 * arg when the caller knows the key is new). A new key's tag is 0; a
 * replaced key keeps its tag. Returns 0 or GPUOP_ENOMEM (never when
 * replacing: a replace allocates nothing). */
int gpuop_map_put(struct gpuop_map *m, const char *key, void *value, void **old);

/* The tag of key (borrowed pointer, valid as long as key stays in the map),
 * or NULL when key is absent. */
uint32_t *gpuop_map_tag(const struct gpuop_map *m, const char *key);

/* The map's own copy of key (borrowed: valid as long as key stays in the
 * map, replaces included, so a value may point at it), or NULL. */
const char *gpuop_map_key(const struct gpuop_map *m, const char *key);

/* Removes key; returns its value (the caller now owns it) or NULL. */
void *gpuop_map_del(struct gpuop_map *m, const char *key);

/* Iteration: for (size_t i = 0; gpuop_map_next(m, &i, &k, &v);) ...
 * key, value and tag (each may be NULL) are borrowed. The map must not be
 * modified during iteration. */
int gpuop_map_next(const struct gpuop_map *m, size_t *iter, const char **key, void **value);
int gpuop_map_next_tag(const struct gpuop_map *m, size_t *iter, const char **key, void **value,
                       uint32_t *tag);

/* Frees the table; calls free_value(value) on each value if not NULL. The
 * map is left empty, pooled if it was, ready for reuse. */
void gpuop_map_free(struct gpuop_map *m, void (*free_value)(void *));

#endif
