/*
 * flap.c - hash -> time set, the Events' flap memory (see flap.h), on the
 * open-addressing core (base/table.h): linear probing without tombstones,
 * gpuop_flap_del shifts the entries after the hole back into it, and
 * gpuop_flap_prune rebuilds the table from the survivors, so a lookup never
 * skips dead slots.
 */
#include <limits.h>
#include <stdlib.h>

#include "gpuop/error.h"
#include "gpuop/flap.h"
#include "gpuop/table.h"

#define MAX_LOAD_PCT 75 /* see flap.h */

static bool match(const void *slot, uint64_t hash, const void *key)
{
    return ((const struct gpuop_stamp *)slot)->hash == hash;
}

static uint64_t slot_hash(const void *slot)
{
    return ((const struct gpuop_stamp *)slot)->hash;
}

static bool not_before(const void *slot, const void *before)
{
    return ((const struct gpuop_stamp *)slot)->time >= *(const long long *)before;
}

/* The slot holding hash, or the empty slot where it would go. cap > 0 and
 * the table is never full (load <= 3/4). */
static size_t find(const struct gpuop_stamp *slots, size_t cap, uint64_t hash)
{
    return gpuop_table_find(slots, sizeof(*slots), cap, hash, match, NULL);
}

long long gpuop_flap_get(const struct gpuop_flap *s, uint64_t hash)
{
    if (!s->cap)
        return 0;
    const struct gpuop_stamp *e = &s->slots[find(s->slots, s->cap, hash)];
    return e->hash ? e->time : 0;
}

/* Moves the entries of s whose time is not before `before` into a new
 * table of cap slots (0, or a gpuop_table_cap large enough for them at a load
 * of at most 3/4), freeing the old one. */
static int rebuild(struct gpuop_flap *s, size_t cap, long long before)
{
    struct gpuop_stamp *slots = NULL;
    if (cap) {
        slots = calloc(cap, sizeof(*slots));
        if (!slots)
            return GPUOP_ENOMEM;
    }
    struct gpuop_table_move how = {
        .size = sizeof(*slots), .hash_of = slot_hash, .keep = not_before, .arg = &before};
    size_t len = gpuop_table_rehash(slots, cap, s->slots, s->cap, &how);
    free(s->slots);
    s->slots = slots;
    s->cap = cap;
    s->len = len;
    return 0;
}

/* The capacity for n entries at a load of at most 3/4; 0 for none. */
static size_t cap_for(size_t n)
{
    return n ? gpuop_table_cap(n, MAX_LOAD_PCT) : 0;
}

int gpuop_flap_put(struct gpuop_flap *s, uint64_t hash, long long time)
{
    if (!hash)
        hash = 1; /* as gpuop_hash_str would have it */
    if (s->cap) {
        struct gpuop_stamp *e = &s->slots[find(s->slots, s->cap, hash)];
        if (e->hash) {
            e->time = time;
            return 0;
        }
    }
    if (gpuop_table_over(s->len + 1, s->cap, MAX_LOAD_PCT)) {
        int rc = rebuild(s, cap_for(s->len + 1), LLONG_MIN);
        if (rc < 0)
            return rc;
    }
    struct gpuop_stamp *e = &s->slots[find(s->slots, s->cap, hash)];
    e->hash = hash;
    e->time = time;
    s->len++;
    return 0;
}

size_t gpuop_flap_prune(struct gpuop_flap *s, long long before)
{
    size_t keep = 0;
    for (size_t i = 0; i < s->cap; i++)
        if (s->slots[i].hash && s->slots[i].time >= before)
            keep++;
    size_t dropped = s->len - keep;
    if (!dropped || rebuild(s, cap_for(keep), before) < 0)
        return 0;
    return dropped;
}

bool gpuop_flap_del(struct gpuop_flap *s, uint64_t hash)
{
    if (!hash)
        hash = 1;
    if (!s->cap)
        return false;
    size_t i = find(s->slots, s->cap, hash);
    if (!s->slots[i].hash)
        return false;
    gpuop_table_remove(s->slots, sizeof(*s->slots), s->cap, i, slot_hash);
    s->len--;
    /* Give the memory back as the set empties (after a rollout, 30,000
     * findings leave their grace one by one): freed when empty, rebuilt
     * smaller when at most 1/8 full (a failed rebuild keeps the table). */
    if (!s->len) {
        free(s->slots);
        s->slots = NULL;
        s->cap = 0;
    } else if (s->cap > GPUOP_TABLE_MIN_CAP && s->len <= s->cap / 8) {
        (void)rebuild(s, cap_for(s->len), LLONG_MIN);
    }
    return true;
}

long long gpuop_flap_min(const struct gpuop_flap *s)
{
    long long min = 0;
    for (size_t i = 0; i < s->cap; i++)
        if (s->slots[i].hash && (!min || s->slots[i].time < min))
            min = s->slots[i].time;
    return min;
}

void gpuop_flap_free(struct gpuop_flap *s)
{
    free(s->slots);
    s->slots = NULL;
    s->cap = s->len = 0;
}
