/*
 * nodepods.c - the operand pods of each node (nodepods_int.h): one
 * open-addressing table (table.h) of borrowed pod pointers whose home is
 * the hash of the pod's node name, changed as the pod cache changes. A
 * node's pods all sit in the probe run from their home to the next empty
 * slot (linear probing, backward-shift deletion keep that true), so one
 * node's pods cost a walk over that run, not over every pod.
 *
 * A slot is one 64-bit word: the pod's address (user-space addresses fit
 * in the low 48 bits) and, above it, 16 bits of its node name's hash, so
 * that a walk compares those bits and reads a pod (strcmp of its node)
 * only when they match: the run's other nodes' pods cost nothing but the
 * word. A pod whose address does not fit is refused (GPUOP_EINVAL: the
 * index is then not whole, and the findings come from full passes).
 *
 * Memory: 8 bytes a slot (load <= 0.7), nothing per node: 0.375 MiB at
 * 30,000 pods (49,152 slots), where a map of per-node arrays cost about
 * 300 bytes a node (1.5 MiB at 5,000 nodes).
 */
#include <stdlib.h>
#include <string.h>

#include "gpuop/error.h"
#include "gpuop/hash.h"
#include "gpuop/table.h"

#include "nodepods_int.h"

#define NODEPODS_LOAD_PCT 70
#define ADDR_BITS         48
#define ADDR_MASK         ((UINT64_C(1) << ADDR_BITS) - 1)

static uint64_t tag_of(uint64_t hash)
{
    return hash >> ADDR_BITS; /* the bits a home (the low 32) does not use */
}

static const struct gpuop_pod *pod_at(uint64_t slot)
{
    return (const struct gpuop_pod *)(uintptr_t)(slot & ADDR_MASK);
}

static uint64_t pod_hash(const void *slot)
{
    return gpuop_hash_str(pod_at(*(const uint64_t *)slot)->node);
}

void gpuop_nodepods_init(struct gpuop_nodepods *ix)
{
    memset(ix, 0, sizeof(*ix));
}

static int grow(struct gpuop_nodepods *ix)
{
    size_t cap = gpuop_table_cap(ix->len + 1, NODEPODS_LOAD_PCT);
    uint64_t *slots = calloc(cap, sizeof(*slots));
    if (!slots)
        return GPUOP_ENOMEM;
    gpuop_table_rehash(slots, cap, ix->slots, ix->cap,
                       &(struct gpuop_table_move){.size = sizeof(*slots), .hash_of = pod_hash});
    free(ix->slots);
    ix->slots = slots;
    ix->cap = cap;
    return 0;
}

int gpuop_nodepods_add(struct gpuop_nodepods *ix, const struct gpuop_pod *p)
{
    if (!p->node)
        return 0;
    if ((uintptr_t)p > ADDR_MASK)
        return GPUOP_EINVAL;
    if (gpuop_table_over(ix->len + 1, ix->cap, NODEPODS_LOAD_PCT) && grow(ix) < 0)
        return GPUOP_ENOMEM;
    /* no match: the first empty slot of the run */
    uint64_t h = gpuop_hash_str(p->node);
    size_t i = gpuop_table_find(ix->slots, sizeof(*ix->slots), ix->cap, h, NULL, NULL);
    ix->slots[i] = (uint64_t)(uintptr_t)p | tag_of(h) << ADDR_BITS;
    ix->len++;
    return 0;
}

static bool same_pod(const void *slot, uint64_t hash, const void *key)
{
    (void)hash;
    return pod_at(*(const uint64_t *)slot) == key;
}

void gpuop_nodepods_del(struct gpuop_nodepods *ix, const struct gpuop_pod *p)
{
    if (!p->node || !ix->cap)
        return;
    size_t i = gpuop_table_find(ix->slots, sizeof(*ix->slots), ix->cap, gpuop_hash_str(p->node),
                                same_pod, p);
    if (!ix->slots[i])
        return; /* not indexed */
    gpuop_table_remove(ix->slots, sizeof(*ix->slots), ix->cap, i, pod_hash);
    ix->len--;
}

int gpuop_nodepods_get(const struct gpuop_nodepods *ix, const char *node,
                       const struct gpuop_pod **out, size_t max, size_t *n)
{
    *n = 0;
    if (!ix->cap)
        return 0;
    /* Two walks: the first collects the pods whose tag matches and asks
     * for their memory (prefetch) without waiting for it; the second
     * reads their node names, which have then been on their way
     * together rather than one after the other. */
    uint64_t h = gpuop_hash_str(node), tag = tag_of(h);
    size_t cand = 0;
    for (size_t i = gpuop_table_home(h, ix->cap); ix->slots[i]; i = gpuop_table_next(i, ix->cap)) {
        if (ix->slots[i] >> ADDR_BITS != tag)
            continue;
        const struct gpuop_pod *p = pod_at(ix->slots[i]);
        if (cand == max) { /* a full out: the rest is judged as before */
            if (strcmp(p->node, node) != 0)
                continue;
            size_t kept = 0; /* out[] may still hold tag-only matches */
            for (size_t j = 0; j < cand; j++)
                if (strcmp(out[j]->node, node) == 0)
                    out[kept++] = out[j];
            if (kept == max)
                return GPUOP_ETOOBIG;
            cand = kept;
        }
        __builtin_prefetch(p);
        out[cand++] = p;
    }
    for (size_t j = 0; j < cand; j++)
        if (strcmp(out[j]->node, node) == 0)
            out[(*n)++] = out[j];
    return 0;
}

void gpuop_nodepods_free(struct gpuop_nodepods *ix)
{
    free(ix->slots);
    gpuop_nodepods_init(ix);
}
