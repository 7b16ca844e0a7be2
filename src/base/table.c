/*
 * table.c - the open-addressing core's capacity rule, rehash and
 * backward-shift deletion (see table.h); the probe loop is inline there.
 */
#include "gpuop/table.h"

size_t gpuop_table_cap(size_t n, unsigned load_pct)
{
    size_t pow2 = GPUOP_TABLE_MIN_CAP;
    for (;;) {
        if (!gpuop_table_over(n, pow2, load_pct))
            return pow2;
        if (!gpuop_table_over(n, pow2 + pow2 / 2, load_pct))
            return pow2 + pow2 / 2;
        pow2 *= 2;
    }
}

void gpuop_table_remove(void *slots, size_t size, size_t cap, size_t i, gpuop_table_hash_fn hash_of)
{
    char *s = slots;
    /* i is the hole. An entry at j may stay only when its home is
     * cyclically within (i, j]: otherwise a probe from its home would stop
     * at the hole before reaching it, so it moves into the hole and its
     * slot becomes the hole. */
    for (size_t j = gpuop_table_next(i, cap); !gpuop_table_empty(s + j * size);
         j = gpuop_table_next(j, cap)) {
        size_t home = gpuop_table_home(hash_of(s + j * size), cap);
        bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
        if (!stays) {
            memcpy(s + i * size, s + j * size, size);
            i = j;
        }
    }
    memset(s + i * size, 0, size);
}

size_t gpuop_table_rehash(void *to, size_t to_cap, const void *from, size_t from_cap,
                          const struct gpuop_table_move *how)
{
    const char *f = from;
    size_t moved = 0, size = how->size;
    for (size_t i = 0; i < from_cap; i++) {
        const char *slot = f + i * size;
        if (gpuop_table_empty(slot) || (how->keep && !how->keep(slot, how->arg)))
            continue;
        size_t j = gpuop_table_find(to, size, to_cap, how->hash_of(slot), NULL, NULL);
        memcpy((char *)to + j * size, slot, size);
        moved++;
    }
    return moved;
}
