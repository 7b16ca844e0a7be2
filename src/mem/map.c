/*
 * map.c - string hash map on the open-addressing core (base/table.h:
 * linear probing, backward-shift deletion, no tombstones) with the one
 * hash (base/hash.h). A slot is a pointer to a node holding value, hash,
 * tag and the key itself, so a key costs one allocation. Small and fast
 * enough for the caches: 5,000 nodes and 30,000 pods.
 */
#include <stdlib.h>
#include <string.h>

#include "gpuop/hash.h"
#include "gpuop/error.h"
#include "gpuop/map.h"
#include "gpuop/pool.h"
#include "gpuop/table.h"

struct gpuop_map_node {
    void *value;
    uint32_t hash;
    uint32_t tag;
    char key[];
};

static uint32_t hash_str(const char *s)
{
    return (uint32_t)gpuop_hash_str(s);
}

void gpuop_map_init(struct gpuop_map *m)
{
    memset(m, 0, sizeof(*m));
}

void gpuop_map_init_pooled(struct gpuop_map *m)
{
    gpuop_map_init(m);
    m->pooled = true;
}

static struct gpuop_map_node *node_alloc(const struct gpuop_map *m, size_t size)
{
    return m->pooled ? gpuop_pool_alloc(size) : malloc(size);
}

static void node_free(const struct gpuop_map *m, struct gpuop_map_node *n)
{
    if (m->pooled)
        gpuop_pool_free(n);
    else
        free(n);
}

#define MAX_LOAD_PCT 70 /* see map.h */

static bool match(const void *slot, uint64_t hash, const void *key)
{
    const struct gpuop_map_node *n = *(struct gpuop_map_node *const *)slot;
    return n->hash == hash && strcmp(n->key, key) == 0;
}

static uint64_t slot_hash(const void *slot)
{
    return (*(struct gpuop_map_node *const *)slot)->hash;
}

/* The slot holding key, or the empty slot where it would go. */
static size_t find(const struct gpuop_map *m, const char *key, uint32_t h)
{
    return gpuop_table_find(m->slots, sizeof(*m->slots), m->cap, h, match, key);
}

static struct gpuop_map_node *lookup(const struct gpuop_map *m, const char *key)
{
    return m->len ? m->slots[find(m, key, hash_str(key))] : NULL; /* empty: no hash */
}

const char *gpuop_map_key(const struct gpuop_map *m, const char *key)
{
    struct gpuop_map_node *n = lookup(m, key);
    return n ? n->key : NULL;
}

void *gpuop_map_get(const struct gpuop_map *m, const char *key)
{
    struct gpuop_map_node *n = lookup(m, key);
    return n ? n->value : NULL;
}

uint32_t gpuop_map_h32(const char *key)
{
    return hash_str(key);
}

void *gpuop_map_get_h32(const struct gpuop_map *m, uint32_t h, const char *skip, const char **key)
{
    const struct gpuop_map_node *found = NULL;
    /* every key of hash h sits in the probe run from its home */
    for (size_t i = m->cap ? gpuop_table_home(h, m->cap) : 0; m->cap && m->slots[i];
         i = gpuop_table_next(i, m->cap)) {
        const struct gpuop_map_node *n = m->slots[i];
        if (n->hash != h || (skip && strcmp(n->key, skip) == 0))
            continue;
        if (found)
            return NULL;
        found = n;
    }
    if (found && key)
        *key = found->key;
    return found ? found->value : NULL;
}

uint32_t *gpuop_map_tag(const struct gpuop_map *m, const char *key)
{
    struct gpuop_map_node *n = lookup(m, key);
    return n ? &n->tag : NULL;
}

static int grow(struct gpuop_map *m)
{
    size_t ncap = gpuop_table_cap(m->len + 1, MAX_LOAD_PCT);
    struct gpuop_map_node **ns = calloc(ncap, sizeof(*ns));
    if (!ns)
        return GPUOP_ENOMEM;
    gpuop_table_rehash(ns, ncap, m->slots, m->cap,
                       &(struct gpuop_table_move){.size = sizeof(*ns), .hash_of = slot_hash});
    free(m->slots);
    m->slots = ns;
    m->cap = ncap;
    return 0;
}

int gpuop_map_put(struct gpuop_map *m, const char *key, void *value, void **old)
{
    if (old)
        *old = NULL;
    uint32_t h = hash_str(key);
    size_t i = m->cap ? find(m, key, h) : 0;
    if (m->cap && m->slots[i]) { /* a replace never allocates */
        if (old)
            *old = m->slots[i]->value;
        m->slots[i]->value = value;
        return 0;
    }
    if (gpuop_table_over(m->len + 1, m->cap, MAX_LOAD_PCT)) {
        if (grow(m) < 0)
            return GPUOP_ENOMEM;
        i = find(m, key, h);
    }
    size_t klen = strlen(key);
    struct gpuop_map_node *n = node_alloc(m, sizeof(*n) + klen + 1);
    if (!n)
        return GPUOP_ENOMEM;
    n->value = value;
    n->hash = h;
    n->tag = 0;
    memcpy(n->key, key, klen + 1);
    m->slots[i] = n;
    m->len++;
    return 0;
}

void *gpuop_map_del(struct gpuop_map *m, const char *key)
{
    if (!m->cap)
        return NULL;
    size_t i = find(m, key, hash_str(key));
    if (!m->slots[i])
        return NULL;
    void *v = m->slots[i]->value;
    node_free(m, m->slots[i]);
    gpuop_table_remove(m->slots, sizeof(*m->slots), m->cap, i, slot_hash);
    m->len--;
    return v;
}

int gpuop_map_next_tag(const struct gpuop_map *m, size_t *iter, const char **key, void **value,
                       uint32_t *tag)
{
    while (*iter < m->cap) {
        const struct gpuop_map_node *n = m->slots[(*iter)++];
        if (n) {
            if (key)
                *key = n->key;
            if (value)
                *value = n->value;
            if (tag)
                *tag = n->tag;
            return 1;
        }
    }
    return 0;
}

int gpuop_map_next(const struct gpuop_map *m, size_t *iter, const char **key, void **value)
{
    return gpuop_map_next_tag(m, iter, key, value, NULL);
}

void gpuop_map_free(struct gpuop_map *m, void (*free_value)(void *))
{
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slots[i])
            continue;
        if (free_value)
            free_value(m->slots[i]->value);
        node_free(m, m->slots[i]);
    }
    free(m->slots);
    bool pooled = m->pooled;
    gpuop_map_init(m);
    m->pooled = pooled;
}
