/*
 * slicetab.c - the DRA ResourceSlices as 12-byte slots and a spill, and
 * the folds they move (slicetab_int.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuop/error.h"
#include "gpuop/hash.h"
#include "gpuop/log.h"
#include "gpuop/pool.h"
#include "gpuop/table.h"

#include "slicefold_int.h"
#include "slicetab_int.h"

#define MAX_LOAD_PCT 75
/* The 64-bit word of a slot. */
#define NAME_TOP      (1ull << 54) /* always set: a slot in use is never 0 */
#define NAME_MASK     ((1ull << 55) - 1)
#define SEEN_BIT      (1ull << 55)
#define DEV_SHIFT     56
#define NODE_NAME_MAX 253

_Static_assert(GPUOP_SLICE_DEVICES_MAX <= UINT8_MAX, "a slot's device count is 8 bits");
_Static_assert(sizeof(struct gpuop_slicetab_slot) == 12, "a slot is 12 bytes");

struct gpuop_slicetab_spill {
    uint64_t hash; /* the slice name's, as in a slot */
    uint16_t devices;
    bool seen;
    char *slice; /* the slice's name, after the node's; NULL: came from the table */
    char node[]; /* its node's name */
};

/* ---- slots ---- */

static uint64_t word(const struct gpuop_slicetab_slot *s)
{
    uint64_t w;
    memcpy(&w, s->w, sizeof(w));
    return w;
}

static void set_word(struct gpuop_slicetab_slot *s, uint64_t w)
{
    memcpy(s->w, &w, sizeof(w));
}

static unsigned slot_devices(const struct gpuop_slicetab_slot *s)
{
    return (unsigned)(word(s) >> DEV_SHIFT);
}

static uint64_t slot_hash(const void *slot)
{
    return word(slot) & NAME_MASK;
}

static bool slot_match(const void *slot, uint64_t hash, const void *key)
{
    (void)key;
    return slot_hash(slot) == hash;
}

static uint64_t hash_of(const struct gpuop_slicetab *t, const char *s)
{
    return t->ops.hash ? t->ops.hash(s) : gpuop_hash_str(s);
}

static uint64_t name_hash(const struct gpuop_slicetab *t, const char *slice)
{
    return (hash_of(t, slice) & (NAME_TOP - 1)) | NAME_TOP;
}

static uint32_t node_hash(const struct gpuop_slicetab *t, const char *node)
{
    return (uint32_t)hash_of(t, node);
}

/* The slot of hash h, or the empty one where it would go (cap > 0). */
static size_t slot_find(const struct gpuop_slicetab *t, uint64_t h)
{
    return gpuop_table_find(t->slots, sizeof(*t->slots), t->cap, h, slot_match, NULL);
}

static bool table_has(const struct gpuop_slicetab *t, uint64_t h)
{
    return t->cap && !gpuop_table_empty(&t->slots[slot_find(t, h)]);
}

static int resize(struct gpuop_slicetab *t, size_t ncap)
{
    struct gpuop_slicetab_slot *ns = calloc(ncap, sizeof(*ns));
    if (!ns)
        return GPUOP_ENOMEM;
    gpuop_table_rehash(ns, ncap, t->slots, t->cap,
                       &(struct gpuop_table_move){.size = sizeof(*ns), .hash_of = slot_hash});
    free(t->slots);
    t->slots = ns;
    t->cap = ncap;
    return 0;
}

static int table_add(struct gpuop_slicetab *t, uint64_t h, uint32_t node, unsigned devices,
                     bool seen)
{
    if (gpuop_table_over(t->len + 1, t->cap, MAX_LOAD_PCT) &&
        resize(t, gpuop_table_cap(t->len + 1, MAX_LOAD_PCT)) < 0)
        return GPUOP_ENOMEM;
    struct gpuop_slicetab_slot *s = &t->slots[slot_find(t, h)];
    set_word(s, h | (seen ? SEEN_BIT : 0) | (uint64_t)devices << DEV_SHIFT);
    s->w[2] = node;
    t->len++;
    return 0;
}

static void table_remove(struct gpuop_slicetab *t, size_t i)
{
    gpuop_table_remove(t->slots, sizeof(*t->slots), t->cap, i, slot_hash);
    t->len--;
}

/* ---- the spill ---- */

/* slice NULL: an entry moved from the table (found by hash). */
static int spill_add(struct gpuop_slicetab *t, uint64_t h, const char *slice, const char *node,
                     unsigned devices, bool seen)
{
    if (t->nspill == t->spill_cap) {
        size_t ncap = t->spill_cap ? 2 * t->spill_cap : 4;
        struct gpuop_slicetab_spill **ns = realloc(t->spill, ncap * sizeof(*ns));
        if (!ns)
            return GPUOP_ENOMEM;
        t->spill = ns;
        t->spill_cap = ncap;
    }
    size_t nn = strlen(node) + 1, sn = slice ? strlen(slice) + 1 : 0;
    struct gpuop_slicetab_spill *e = gpuop_pool_alloc(sizeof(*e) + nn + sn);
    if (!e)
        return GPUOP_ENOMEM;
    e->hash = h;
    e->devices = (uint16_t)devices;
    e->seen = seen;
    memcpy(e->node, node, nn);
    e->slice = slice ? memcpy(e->node + nn, slice, sn) : NULL;
    t->spill[t->nspill++] = e;
    return 0;
}

static void spill_remove(struct gpuop_slicetab *t, size_t i)
{
    gpuop_pool_free(t->spill[i]);
    t->spill[i] = t->spill[--t->nspill];
}

/* Whether an entry of the spill that came from the table has hash h. */
static bool spill_has_hash(const struct gpuop_slicetab *t, uint64_t h)
{
    for (size_t i = 0; i < t->nspill; i++)
        if (!t->spill[i]->slice && t->spill[i]->hash == h)
            return true;
    return false;
}

/* ---- folds ---- */

static void named(struct gpuop_slicetab *t, const char *node)
{
    if (t->ops.moved)
        t->ops.moved(t->ops.arg, node);
}

/* d, the fold of node (cached), recounted from its entries: the table's
 * of its hash while no other Node has it (the invariant), and the
 * spill's of its name. */
static void recount(struct gpuop_slicetab *t, const char *node, struct gpuop_node_dra *d)
{
    d->slices = 0;
    d->devices = 0;
    uint32_t h = node_hash(t, node);
    const char *unique;
    if (t->ops.fold_h32(t->ops.arg, h, NULL, &unique) == d)
        for (size_t i = 0; i < t->cap; i++)
            if (!gpuop_table_empty(&t->slots[i]) && t->slots[i].w[2] == h)
                gpuop_slicefold_add(d, slot_devices(&t->slots[i]));
    for (size_t i = 0; i < t->nspill; i++)
        if (strcmp(t->spill[i]->node, node) == 0)
            gpuop_slicefold_add(d, t->spill[i]->devices);
}

/* A slice of devices left node (NULL: a Node not cached), its entry
 * already gone. */
static void fold_take(struct gpuop_slicetab *t, const char *node, unsigned devices)
{
    struct gpuop_node_dra *d = node ? t->ops.fold(t->ops.arg, node) : NULL;
    if (!d)
        return;
    if (!gpuop_slicefold_del(d, devices))
        recount(t, node, d);
    named(t, node);
}

/* ---- entries ---- */

/* Where a slice is: in the spill by name, in the table by hash, in the
 * spill by hash. */
struct where {
    bool found, spill;
    size_t i;
};

static struct where find(const struct gpuop_slicetab *t, const char *slice, uint64_t h)
{
    for (size_t i = 0; i < t->nspill; i++)
        if (t->spill[i]->slice && t->spill[i]->hash == h && !strcmp(t->spill[i]->slice, slice))
            return (struct where){true, true, i};
    if (t->cap) {
        size_t i = slot_find(t, h);
        if (!gpuop_table_empty(&t->slots[i]))
            return (struct where){true, false, i};
    }
    for (size_t i = 0; i < t->nspill; i++)
        if (!t->spill[i]->slice && t->spill[i]->hash == h)
            return (struct where){true, true, i};
    return (struct where){0};
}

/* Entry w's node into node (NODE_NAME_MAX + 1 bytes; "" when a table
 * entry's Node cannot be found, which the invariant rules out), its
 * devices and whether it was seen. */
static void entry_info(const struct gpuop_slicetab *t, struct where w, char *node,
                       unsigned *devices, bool *seen)
{
    if (w.spill) {
        const struct gpuop_slicetab_spill *e = t->spill[w.i];
        snprintf(node, NODE_NAME_MAX + 1, "%s", e->node);
        *devices = e->devices;
        *seen = e->seen;
        return;
    }
    const struct gpuop_slicetab_slot *s = &t->slots[w.i];
    const char *name = NULL;
    node[0] = '\0';
    if (t->ops.fold_h32(t->ops.arg, s->w[2], NULL, &name) && name)
        snprintf(node, NODE_NAME_MAX + 1, "%s", name);
    *devices = slot_devices(s);
    *seen = (word(s) & SEEN_BIT) != 0;
}

static void entry_remove(struct gpuop_slicetab *t, struct where w)
{
    if (w.spill)
        spill_remove(t, w.i);
    else
        table_remove(t, w.i);
}

/* Whether node is cached with a 32-bit hash of its own: its slices may
 * go into the table. */
static bool node_unique(const struct gpuop_slicetab *t, const char *node)
{
    struct gpuop_node_dra *d = t->ops.fold(t->ops.arg, node);
    const char *name;
    return d && t->ops.fold_h32(t->ops.arg, node_hash(t, node), NULL, &name) == d;
}

int gpuop_slicetab_put(struct gpuop_slicetab *t, const char *slice, const char *node,
                       unsigned devices)
{
    uint64_t h = name_hash(t, slice);
    struct where w = find(t, slice, h);
    bool collision = false;
    if (w.found) {
        char was[NODE_NAME_MAX + 1];
        unsigned dev;
        bool seen;
        entry_info(t, w, was, &dev, &seen);
        if (t->listing && seen && !(w.spill && t->spill[w.i]->slice)) {
            /* listed twice in one list: another slice of the same hash */
            gpuop_warn(slice, "ResourceSlice name hash shared with another slice; kept by name");
            collision = true;
        } else if (dev == devices && !strcmp(was, node)) {
            if (w.spill)
                t->spill[w.i]->seen = true;
            else
                set_word(&t->slots[w.i], word(&t->slots[w.i]) | SEEN_BIT);
            return 0; /* the same: a generation moved, or a relist */
        } else {
            entry_remove(t, w);
            fold_take(t, was[0] ? was : NULL, dev);
        }
    }
    int rc;
    if (!collision && node_unique(t, node) && !table_has(t, h) && !spill_has_hash(t, h))
        rc = table_add(t, h, node_hash(t, node), devices, true);
    else
        rc = spill_add(t, h, slice, node, devices, true);
    if (rc < 0) {
        gpuop_error(slice, "out of memory keeping a ResourceSlice");
        return rc;
    }
    struct gpuop_node_dra *d = t->ops.fold(t->ops.arg, node);
    if (d) {
        gpuop_slicefold_add(d, devices);
        named(t, node);
    }
    return 1;
}

int gpuop_slicetab_del(struct gpuop_slicetab *t, const char *slice)
{
    struct where w = find(t, slice, name_hash(t, slice));
    if (!w.found)
        return 0;
    char was[NODE_NAME_MAX + 1];
    unsigned dev;
    bool seen;
    entry_info(t, w, was, &dev, &seen);
    entry_remove(t, w);
    fold_take(t, was[0] ? was : NULL, dev);
    return 1;
}

void gpuop_slicetab_list_begin(struct gpuop_slicetab *t)
{
    t->listing = true;
    for (size_t i = 0; i < t->cap; i++)
        set_word(&t->slots[i], word(&t->slots[i]) & ~SEEN_BIT);
    for (size_t i = 0; i < t->nspill; i++)
        t->spill[i]->seen = false;
}

size_t gpuop_slicetab_list_end(struct gpuop_slicetab *t)
{
    size_t gone = 0;
    t->listing = false;
    char was[NODE_NAME_MAX + 1];
    unsigned dev;
    bool seen;
    /* A removal may shift a later entry into slot i (never one not yet
     * visited before it): i is looked at again. */
    for (size_t i = 0; i < t->cap;) {
        struct where w = {true, false, i};
        if (gpuop_table_empty(&t->slots[i]) || (word(&t->slots[i]) & SEEN_BIT)) {
            i++;
            continue;
        }
        entry_info(t, w, was, &dev, &seen);
        entry_remove(t, w);
        fold_take(t, was[0] ? was : NULL, dev);
        gone++;
    }
    for (size_t i = t->nspill; i-- > 0;) {
        if (t->spill[i]->seen)
            continue;
        struct where w = {true, true, i};
        entry_info(t, w, was, &dev, &seen);
        entry_remove(t, w);
        fold_take(t, was, dev);
        gone++;
    }
    return gone;
}

/* The table's entries of node hash h into the spill, under node's name
 * (their Node loses its hash of its own, or goes). */
static void table_to_spill(struct gpuop_slicetab *t, uint32_t h, const char *node)
{
    for (size_t i = 0; i < t->cap;) {
        const struct gpuop_slicetab_slot *s = &t->slots[i];
        if (gpuop_table_empty(s) || s->w[2] != h) {
            i++;
            continue;
        }
        uint64_t w = word(s);
        if (spill_add(t, w & NAME_MASK, NULL, node, slot_devices(s), (w & SEEN_BIT) != 0) < 0) {
            /* kept in the table: counted for the wrong Node at worst */
            gpuop_error(node, "out of memory moving its ResourceSlices");
            i++;
            continue;
        }
        table_remove(t, i);
    }
}

void gpuop_slicetab_node_added(struct gpuop_slicetab *t, const char *name)
{
    struct gpuop_node_dra *d = t->ops.fold(t->ops.arg, name);
    if (!d)
        return;
    uint32_t h = node_hash(t, name);
    const char *other = NULL;
    if (t->ops.fold_h32(t->ops.arg, h, name, &other) && other)
        table_to_spill(t, h, other); /* the one Node that had h to itself */
    if (node_unique(t, name)) {
        for (size_t i = t->nspill; i-- > 0;) {
            const struct gpuop_slicetab_spill *e = t->spill[i];
            if (strcmp(e->node, name) != 0 || table_has(t, e->hash))
                continue;
            /* a named entry's hash may be a moved one's: then it keeps its name */
            if (e->slice && spill_has_hash(t, e->hash))
                continue;
            if (table_add(t, e->hash, h, e->devices, e->seen) == 0)
                spill_remove(t, i);
        }
    }
    recount(t, name, d);
}

void gpuop_slicetab_node_deleted(struct gpuop_slicetab *t, const char *name)
{
    struct gpuop_node_dra *d = t->ops.fold(t->ops.arg, name);
    if (d && d->slices && node_unique(t, name))
        table_to_spill(t, node_hash(t, name), name);
}

void gpuop_slicetab_init(struct gpuop_slicetab *t, const struct gpuop_slicetab_ops *ops)
{
    memset(t, 0, sizeof(*t));
    t->ops = *ops;
}

int gpuop_slicetab_reserve(struct gpuop_slicetab *t, size_t n)
{
    size_t cap = gpuop_table_cap(n, MAX_LOAD_PCT);
    return cap > t->cap ? resize(t, cap) : 0;
}

void gpuop_slicetab_free(struct gpuop_slicetab *t)
{
    for (size_t i = 0; i < t->nspill; i++)
        gpuop_pool_free(t->spill[i]);
    free(t->spill);
    free(t->slots);
    struct gpuop_slicetab_ops ops = t->ops;
    gpuop_slicetab_init(t, &ops);
}

size_t gpuop_slicetab_len(const struct gpuop_slicetab *t)
{
    return t->len + t->nspill;
}
