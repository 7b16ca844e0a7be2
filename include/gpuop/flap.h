/*
 * flap.h - a set of keys, each with a time, kept as 64-bit hashes: what
 * the events module remembers having posted, for flap suppression.
 *
 * Memory: 16 bytes a slot, open addressing with linear probing (the core
 * of table.h) at a load factor of at most 3/4: about 22 bytes a key, where a string map costs
 * about 100 (the key's copy, its node and slot). After a 5,000-node rollout
 * the events module remembers about 6,000 keys for ten minutes: 128 KB
 * instead of 0.6 MB.
 *
 * The events module keeps two: what it posted (for flap suppression), and
 * since when each node with a waiting rollout step has stalled. What it
 * knows of each present finding is not here but in its records, one per
 * finding in the findings' order (events.c).
 *
 * A key is its hash (gpuop_hash_str, base/hash.c): two keys of equal 64-bit hash are
 * one. At 10,000 keys the chance of any such pair is about 3 in 10^12;
 * the cost of one would be an Event not posted.
 */
#ifndef GPUOP_FLAP_H
#define GPUOP_FLAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gpuop_stamp {
    uint64_t hash; /* 0: empty slot */
    long long time;
};

struct gpuop_flap {
    struct gpuop_stamp *slots; /* new memory, owned */
    size_t cap;                /* 0 or gpuop_table_cap(...) */
    size_t len;
};

#define GPUOP_FLAP_INIT                                                                            \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }

/* The time stored for hash, or 0 when there is none. */
long long gpuop_flap_get(const struct gpuop_flap *s, uint64_t hash);

/* Stores time for hash (inserting or replacing). Returns 0 or GPUOP_ENOMEM
 * (the set is unchanged then). */
int gpuop_flap_put(struct gpuop_flap *s, uint64_t hash, long long time);

/* Drops every entry whose time is before `before`; the table is rebuilt at
 * the size the rest needs (freed when nothing is left). Returns how many
 * were dropped. On allocation failure nothing is dropped (tried again at
 * the next prune) and it returns 0. */
size_t gpuop_flap_prune(struct gpuop_flap *s, long long before);

/* Removes hash; returns whether it was there. The table shrinks as the set
 * empties: freed when empty, rebuilt at the size the rest needs when at
 * most 1/8 full (if that allocation fails, the table stays as it is). */
bool gpuop_flap_del(struct gpuop_flap *s, uint64_t hash);

/* The smallest time stored, 0 when the set is empty. O(capacity). */
long long gpuop_flap_min(const struct gpuop_flap *s);

void gpuop_flap_free(struct gpuop_flap *s);

#endif
