/*
 * flap.c - hash -> time set, the Events' flap memory (see flap.h). Linear
 * probing without tombstones: gpuop_flap_del shifts the entries after the
 * hole back into it (Knuth's algorithm R), and gpuop_flap_prune rebuilds
 * the table from the survivors, so a lookup never skips dead slots.
 */
#include <limits.h>
#include <stdlib.h>

#include "gpuop/error.h"
#include "gpuop/flap.h"

#define MIN_CAP 16

/* The slot holding hash, or the empty slot where it would go. cap > 0 and
 * the table is never full (load <= 3/4). */
static size_t find(const struct gpuop_stamp *slots, size_t cap, uint64_t hash)
{
    size_t i = (size_t)hash & (cap - 1);
    while (slots[i].hash && slots[i].hash != hash)
        i = (i + 1) & (cap - 1);
    return i;
}

long long gpuop_flap_get(const struct gpuop_flap *s, uint64_t hash)
{
    if (!s->cap)
        return 0;
    const struct gpuop_stamp *e = &s->slots[find(s->slots, s->cap, hash)];
    return e->hash ? e->time : 0;
}

/* Moves the entries of s whose time is not before `before` into a new
 * table of cap slots (0, or a power of two large enough for them at a load
 * of at most 3/4), freeing the old one. */
static int rebuild(struct gpuop_flap *s, size_t cap, long long before)
{
    struct gpuop_stamp *slots = NULL;
    if (cap) {
        slots = calloc(cap, sizeof(*slots));
        if (!slots)
            return GPUOP_ENOMEM;
    }
    size_t len = 0;
    for (size_t i = 0; i < s->cap; i++) {
        const struct gpuop_stamp *e = &s->slots[i];
        if (!e->hash || e->time < before)
            continue;
        slots[find(slots, cap, e->hash)] = *e;
        len++;
    }
    free(s->slots);
    s->slots = slots;
    s->cap = cap;
    s->len = len;
    return 0;
}

/* The capacity for n entries at a load of at most 3/4; 0 for none. */
static size_t cap_for(size_t n)
{
    if (!n)
        return 0;
    size_t cap = MIN_CAP;
    while (n > cap / 4 * 3)
        cap *= 2;
    return cap;
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
    if (s->len + 1 > s->cap / 4 * 3) {
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
    size_t mask = s->cap - 1, i = find(s->slots, s->cap, hash);
    if (!s->slots[i].hash)
        return false;
    /* Move back every later entry of the run that may not live past the
     * hole: one whose home slot is not cyclically within (hole, j]. */
    for (size_t j = (i + 1) & mask; s->slots[j].hash; j = (j + 1) & mask) {
        size_t home = (size_t)s->slots[j].hash & mask;
        bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
        if (!stays) {
            s->slots[i] = s->slots[j];
            i = j;
        }
    }
    s->slots[i] = (struct gpuop_stamp){0, 0};
    s->len--;
    /* Give the memory back as the set empties (after a rollout, 30,000
     * findings leave their grace one by one): freed when empty, rebuilt
     * smaller when at most 1/8 full (a failed rebuild keeps the table). */
    if (!s->len) {
        free(s->slots);
        s->slots = NULL;
        s->cap = 0;
    } else if (s->cap > MIN_CAP && s->len <= s->cap / 8) {
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
