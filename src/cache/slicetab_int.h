/*
 * slicetab_int.h - the DRA ResourceSlices the caches fold into their
 * nodes (struct gpuop_node_dra), kept in 12 bytes a slice with no key and
 * no item (issue 42; docs/internals/caches.md), and what each slice event,
 * list and Node event does to the folds. Kept apart from caches.c so it
 * is tested without an API server, with a hash that collides at will.
 *
 * A slot of the open-addressing table (base/table.h, load <= 3/4) is
 * three 32-bit words: a 64-bit word of the slice name's hash (55 bits,
 * the top one always set so a slot in use is never 0), a seen bit and the
 * slice's device count (8 bits: a slice has at most
 * GPUOP_SLICE_DEVICES_MAX), then the 32-bit hash of its node's name, the
 * very value the Node store's map keeps (mem/map.c). The node is found
 * from that hash (ops.fold_h32: exactly one cached Node, or none).
 *
 * Invariant: a table entry names a cached Node whose 32-bit hash no other
 * cached Node has. Every other slice waits in the spill, a short array of
 * pooled entries that carry the node's name (and the slice's, when it
 * came that way): a slice whose Node is not cached, a slice of one of two
 * Nodes sharing a 32-bit hash (about 0.3 % of 5,000-node clusters have
 * such a pair), a slice whose name hash collides with another's (found
 * in a list, where the same hash is seen twice). The spill is empty in a
 * steady cluster.
 *
 * A slice is found by its name in the spill, else by its hash in the
 * table, else by its hash among the spill's entries that came from the
 * table (a Node deleted, or sharing its hash with a newcomer): the hashes
 * of the table and of those entries are unique together.
 *
 * The folds move by one slice at a time (slicefold_int.h); a saturated
 * one is recounted from the table's entries of its node's hash and the
 * spill's of its name. Each node whose fold moved is named to ops.moved.
 * Slices carry no generation and no pool: the findings read neither.
 */
#ifndef GPUOP_SLICETAB_INT_H
#define GPUOP_SLICETAB_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpuop/model.h"

/* How the table reaches the cached Nodes (all borrowed, arg passed back). */
struct gpuop_slicetab_ops {
    /* The hash of a slice's or a node's name: NULL for gpuop_hash_str, the
     * node store's (a node's is its low 32 bits); a test's may collide. */
    uint64_t (*hash)(const char *s);
    /* The fold of the cached Node of that name, or NULL. */
    struct gpuop_node_dra *(*fold)(void *arg, const char *name);
    /* The fold of the one cached Node other than skip (NULL: none skipped)
     * whose name's 32-bit hash is h, its name in *name (borrowed); NULL
     * when there is none, or more than one. */
    struct gpuop_node_dra *(*fold_h32)(void *arg, uint32_t h, const char *skip, const char **name);
    /* Optional: the fold of that Node moved. */
    void (*moved)(void *arg, const char *name);
    void *arg;
};

struct gpuop_slicetab_slot {
    uint32_t w[3]; /* name hash | seen << 55 | devices << 56; node hash */
};

struct gpuop_slicetab_spill; /* slicetab.c */

struct gpuop_slicetab {
    struct gpuop_slicetab_slot *slots;
    size_t cap, len; /* cap: 0 or gpuop_table_cap(...) */
    struct gpuop_slicetab_spill **spill;
    size_t nspill, spill_cap;
    bool listing; /* between a list's BEGIN and END */
    struct gpuop_slicetab_ops ops;
};

void gpuop_slicetab_init(struct gpuop_slicetab *t, const struct gpuop_slicetab_ops *ops);
/* Frees the table and the spill; t is left empty (init again to reuse). */
void gpuop_slicetab_free(struct gpuop_slicetab *t);
/* Sizes the table for n slices at once (before a first list: no rehash
 * while it comes). 0 or GPUOP_ENOMEM. */
int gpuop_slicetab_reserve(struct gpuop_slicetab *t, size_t n);

/* Slice slice (borrowed name) is on node with devices devices (at most
 * GPUOP_SLICE_DEVICES_MAX): added, or moved. 1 when that changed
 * anything, 0 when the table had it so (a generation bump), or
 * GPUOP_ENOMEM (the slice is then not counted; a relist tries again). */
int gpuop_slicetab_put(struct gpuop_slicetab *t, const char *slice, const char *node,
                       unsigned devices);
/* Slice slice went: 1, or 0 when it is unknown (a slice refused). */
int gpuop_slicetab_del(struct gpuop_slicetab *t, const char *slice);
/* A list begins: every entry unseen until it is listed again. */
void gpuop_slicetab_list_begin(struct gpuop_slicetab *t);
/* The list ended: the entries it did not hold are deleted; returns how
 * many. */
size_t gpuop_slicetab_list_end(struct gpuop_slicetab *t);

/* Node name came: cached now (ops see it). Its fold's slices and devices
 * become those of the slices naming it (watched and claims kept). */
void gpuop_slicetab_node_added(struct gpuop_slicetab *t, const char *name);
/* Node name goes: still cached (ops see it), not after the call. Its
 * slices stay (in the spill) for when it comes back. */
void gpuop_slicetab_node_deleted(struct gpuop_slicetab *t, const char *name);

/* Slices kept (table and spill). */
size_t gpuop_slicetab_len(const struct gpuop_slicetab *t);

#endif
