/*
 * table.h - the one open-addressing core under gpuop's hash tables: linear
 * probing over an array of slots, the capacity rule, find,
 * rehash, and backward-shift deletion (Knuth's algorithm R: no tombstones,
 * so a lookup never skips dead slots), each written once.
 *
 * The core knows no slot type. A table is cap slots of `size` bytes each
 * whose first 8 bytes (a pointer, or a 64-bit hash) are all zero exactly
 * when the slot is empty; an entry's home slot is its hash's low 32 bits
 * scaled to cap (gpuop_table_home: a multiply and a shift, for any cap).
 * Capacities are powers of two and 1.5 times them (16, 24, 32, 48, ...):
 * with doubling alone 30,000 pods at load <= 0.7 took 65,536 slots (0.5
 * MiB for each of two tables), in this sequence 49,152.
 * Each table keeps its own slot, so memory per entry stays its own:
 *   - the string map (mem/map.c): a pointer to a node that carries its
 *     32-bit hash and the key (8 bytes a slot, load <= 0.7);
 *   - the flap memory (findings/flap.c): {64-bit hash, time} (16 bytes,
 *     load <= 3/4);
 *   - the caches' pods by node (cache/nodepods.c): a borrowed pod pointer
 *     whose home is its node name's hash, many entries a key (8 bytes a
 *     slot, load <= 0.7);
 *   - the analysis's node-name index (findings/analysis.c): a borrowed
 *     name pointer, beside an array of positions (8 + 4 bytes, load
 *     <= 1/2, built once per pass and never deleted from).
 *
 * gpuop_table_find is static inline and takes its match function as an
 * argument: called with a constant function, the compiler inlines both, so
 * a lookup costs what a hand-written probe loop does (this is the hot path
 * of the caches at 30,000 pods). Rehash and delete are not on it and live
 * in table.c.
 *
 * Nothing here allocates: each table owns its slot array.
 */
#ifndef GPUOP_TABLE_H
#define GPUOP_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The smallest table: a table that holds anything has at least this many
 * slots. */
#define GPUOP_TABLE_MIN_CAP 16

/* The home slot of an entry of hash hash in a table of cap slots (cap <
 * 2^32). */
static inline size_t gpuop_table_home(uint64_t hash, size_t cap)
{
    return (size_t)(((hash & UINT32_MAX) * (uint64_t)cap) >> 32);
}

/* The slot after i, cyclically. */
static inline size_t gpuop_table_next(size_t i, size_t cap)
{
    return ++i == cap ? 0 : i;
}

/* Whether a slot's entry is the one looked for: slot is borrowed, hash and
 * key are what gpuop_table_find was given. */
typedef bool (*gpuop_table_match_fn)(const void *slot, uint64_t hash, const void *key);

/* The hash of a slot's entry (its home: gpuop_table_home). */
typedef uint64_t (*gpuop_table_hash_fn)(const void *slot);

/* Whether gpuop_table_rehash keeps a slot's entry; arg is its argument. */
typedef bool (*gpuop_table_keep_fn)(const void *slot, const void *arg);

/* The capacity rule: the smallest of GPUOP_TABLE_MIN_CAP, 1.5 times it,
 * twice it, 3 times, 4 times, 6 times, ... (a power of two or 1.5 times
 * one) in which n entries fill at most load_pct percent of the slots. */
size_t gpuop_table_cap(size_t n, unsigned load_pct);

/* Whether n entries would fill more than load_pct percent of cap slots
 * (true for any n when cap is 0): time to grow to gpuop_table_cap(n). */
static inline bool gpuop_table_over(size_t n, size_t cap, unsigned load_pct)
{
    return n * 100 > cap * load_pct;
}

static inline bool gpuop_table_empty(const void *slot)
{
    uint64_t w;
    memcpy(&w, slot, sizeof(w));
    return w == 0;
}

/* The slot holding the entry match accepts (match may be NULL: none is),
 * or the empty slot where an entry of this hash would go. The table has an
 * empty slot (its load is below 1). */
static inline size_t gpuop_table_find(const void *slots, size_t size, size_t cap, uint64_t hash,
                                      gpuop_table_match_fn match, const void *key)
{
    size_t i = gpuop_table_home(hash, cap);
    for (;;) {
        const void *slot = (const char *)slots + i * size;
        if (gpuop_table_empty(slot) || (match && match(slot, hash, key)))
            return i;
        i = gpuop_table_next(i, cap);
    }
}

/* Empties slot i (an occupied slot; its entry is not read, so it may
 * already be freed), moving back every later entry of its probe run whose
 * home is not cyclically within (hole, its slot]: afterwards every entry
 * left is found from its home as before. */
void gpuop_table_remove(void *slots, size_t size, size_t cap, size_t i,
                        gpuop_table_hash_fn hash_of);

/* How gpuop_table_rehash moves a table's entries: its slot size, the hash
 * of a slot's entry, and which entries it keeps (keep NULL: all; arg is
 * keep's argument, borrowed). */
struct gpuop_table_move {
    size_t size;
    gpuop_table_hash_fn hash_of;
    gpuop_table_keep_fn keep;
    const void *arg;
};

/* Moves the entries of from (from_cap slots, may be NULL when 0) that
 * how->keep accepts into to, to_cap empty slots with room for them below
 * load 1. from is left as it was (the caller frees it). Returns how many
 * were moved. */
size_t gpuop_table_rehash(void *to, size_t to_cap, const void *from, size_t from_cap,
                          const struct gpuop_table_move *how);

#endif
