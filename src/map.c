/*
 * map.c - open-addressing string hash map (FNV-1a hash, linear probing,
 * backward-shift deletion so there are no tombstones). Small and fast
 * enough for the caches: 5,000 nodes and 30,000 pods.
 */
#include <stdlib.h>
#include <string.h>

#include "gpuop/error.h"
#include "gpuop/map.h"

static unsigned long hash_str(const char *s)
{
    unsigned long h = 1469598103934665603UL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211UL;
    }
    return h;
}

void gpuop_map_init(struct gpuop_map *m)
{
    memset(m, 0, sizeof(*m));
}

static size_t find(const struct gpuop_map *m, const char *key, unsigned long h)
{
    size_t mask = m->cap - 1;
    size_t i = h & mask;
    while (m->slots[i].key) {
        if (m->slots[i].hash == h && strcmp(m->slots[i].key, key) == 0)
            return i;
        i = (i + 1) & mask;
    }
    return i; /* empty slot */
}

void *gpuop_map_get(const struct gpuop_map *m, const char *key)
{
    if (!m->cap)
        return NULL;
    size_t i = find(m, key, hash_str(key));
    return m->slots[i].key ? m->slots[i].value : NULL;
}

static int grow(struct gpuop_map *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 16;
    struct gpuop_map_slot *ns = calloc(ncap, sizeof(*ns));
    if (!ns)
        return GPUOP_ENOMEM;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].key)
            continue;
        size_t j = m->slots[i].hash & (ncap - 1);
        while (ns[j].key)
            j = (j + 1) & (ncap - 1);
        ns[j] = m->slots[i];
    }
    free(m->slots);
    m->slots = ns;
    m->cap = ncap;
    return 0;
}

int gpuop_map_put(struct gpuop_map *m, const char *key, void *value, void **old)
{
    if (old)
        *old = NULL;
    if ((m->len + 1) * 10 > m->cap * 7 && grow(m) < 0)
        return GPUOP_ENOMEM;
    unsigned long h = hash_str(key);
    size_t i = find(m, key, h);
    if (m->slots[i].key) {
        if (old)
            *old = m->slots[i].value;
        m->slots[i].value = value;
        return 0;
    }
    char *k = strdup(key);
    if (!k)
        return GPUOP_ENOMEM;
    m->slots[i] = (struct gpuop_map_slot){k, value, h};
    m->len++;
    return 0;
}

void *gpuop_map_del(struct gpuop_map *m, const char *key)
{
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1;
    size_t i = find(m, key, hash_str(key));
    if (!m->slots[i].key)
        return NULL;
    void *v = m->slots[i].value;
    free(m->slots[i].key);
    m->slots[i].key = NULL;
    m->len--;
    /* Backward-shift: pull later members of the probe run into the hole. */
    size_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!m->slots[j].key)
            break;
        size_t home = m->slots[j].hash & mask;
        /* Move j to i when its home is not in the cyclic range (i, j]. */
        if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
            m->slots[i] = m->slots[j];
            m->slots[j].key = NULL;
            i = j;
        }
    }
    return v;
}

int gpuop_map_next(const struct gpuop_map *m, size_t *iter, const char **key, void **value)
{
    while (*iter < m->cap) {
        size_t i = (*iter)++;
        if (m->slots[i].key) {
            if (key)
                *key = m->slots[i].key;
            if (value)
                *value = m->slots[i].value;
            return 1;
        }
    }
    return 0;
}

void gpuop_map_free(struct gpuop_map *m, void (*free_value)(void *))
{
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].key)
            continue;
        if (free_value)
            free_value(m->slots[i].value);
        free(m->slots[i].key);
    }
    free(m->slots);
    gpuop_map_init(m);
}
