/*
 * map.h - a string-keyed hash map of void * values (open addressing with
 * linear probing and backward-shift deletion, power-of-two capacity, load
 * factor <= 0.7). Keys are copied; values are borrowed: the map never frees
 * a value, the owner does (see gpuop_map_free's callback).
 */
#ifndef GPUOP_MAP_H
#define GPUOP_MAP_H

#include <stddef.h>

struct gpuop_map_slot {
    char *key; /* owned copy; NULL = empty slot */
    void *value;
    unsigned long hash;
};

struct gpuop_map {
    struct gpuop_map_slot *slots;
    size_t cap; /* 0 or a power of two */
    size_t len;
};

void gpuop_map_init(struct gpuop_map *m);

/* Borrowed value, or NULL. */
void *gpuop_map_get(const struct gpuop_map *m, const char *key);

/* Inserts or replaces. When a value was replaced, *old gets it (may be NULL
 * arg when the caller knows the key is new). Returns 0 or GPUOP_ENOMEM. */
int gpuop_map_put(struct gpuop_map *m, const char *key, void *value, void **old);

/* Removes key; returns its value (the caller now owns it) or NULL. */
void *gpuop_map_del(struct gpuop_map *m, const char *key);

/* Iteration: for (size_t i = 0; gpuop_map_next(m, &i, &k, &v);) ...
 * The map must not be modified during iteration. */
int gpuop_map_next(const struct gpuop_map *m, size_t *iter, const char **key, void **value);

/* Frees the table; calls free_value(value) on each value if not NULL. */
void gpuop_map_free(struct gpuop_map *m, void (*free_value)(void *));

#endif
