/*
 * ospools.c - the OS pools of the cached GPU nodes, counted (see
 * ospools_int.h).
 */
#include <stdio.h>
#include <string.h>

#include "gpuop/ospool.h"

#include "ospools_int.h"

/* "<tag>/<id>/<version>/<major>" */
#define IDENTITY_MAX (3 * (GPUOP_OSPOOL_TAG_MAX + 1) + 2)

void gpuop_ospools_init(struct gpuop_ospools *p)
{
    gpuop_map_init(&p->ids);
    gpuop_map_init(&p->tags);
    p->changes = 0;
    p->lost = false;
}

static long count_of(const struct gpuop_map *m, const char *key)
{
    return (long)(uintptr_t)gpuop_map_get(m, key);
}

/* Adds d (+1 or -1) to key's count in m. Returns the count after it, or
 * -1 when it could not be stored. */
static long add(struct gpuop_map *m, const char *key, long d)
{
    long n = count_of(m, key) + d;
    if (n <= 0) {
        gpuop_map_del(m, key);
        return 0;
    }
    return gpuop_map_put(m, key, (void *)(uintptr_t)n, NULL) < 0 ? -1 : n;
}

/* n's pool, as its identity into id and its tag into tag; false when n is
 * in none (not a GPU node, or no OS labels: the stage skips it). */
static bool pool_of(const struct gpuop_node *n, char *id, char *tag)
{
    struct gpuop_ospool pool;
    if (!n || !n->gpu || gpuop_ospool_of_node(n, &pool, NULL) < 0)
        return false;
    snprintf(id, IDENTITY_MAX, "%s/%s/%s/%d", pool.tag, pool.id, pool.version, pool.major_only);
    snprintf(tag, GPUOP_OSPOOL_TAG_MAX + 1, "%s", pool.tag);
    return true;
}

/* Counts one node of pool (id, tag) d times (+1 or -1). True when the
 * pools the stage collects may have changed. */
static bool count(struct gpuop_ospools *p, const char *id, const char *tag, long d)
{
    bool order = count_of(&p->tags, tag) > 1 || p->ids.len > GPUOP_OSPOOL_MAX;
    long ids = add(&p->ids, id, d);
    bool edge = ids == (d > 0 ? 1 : 0); /* the identity appeared or left */
    if (ids < 0 || (edge && add(&p->tags, tag, d) < 0))
        p->lost = true;
    /* a tag two identities share, or more pools than the stage keeps,
     * before or after: which it keeps depends on the nodes' order */
    order |= count_of(&p->tags, tag) > 1 || p->ids.len > GPUOP_OSPOOL_MAX;
    return edge || order;
}

void gpuop_ospools_move(struct gpuop_ospools *p, const struct gpuop_node *old,
                        const struct gpuop_node *nw)
{
    char oid[IDENTITY_MAX], nid[IDENTITY_MAX];
    char otag[GPUOP_OSPOOL_TAG_MAX + 1], ntag[GPUOP_OSPOOL_TAG_MAX + 1];
    bool in_old = pool_of(old, oid, otag), in_new = pool_of(nw, nid, ntag);
    bool moved = false;
    if (in_old != in_new || (in_old && strcmp(oid, nid) != 0)) {
        if (in_old)
            moved |= count(p, oid, otag, -1);
        if (in_new)
            moved |= count(p, nid, ntag, +1);
    }
    if (moved || p->lost)
        p->changes++;
}

void gpuop_ospools_free(struct gpuop_ospools *p)
{
    gpuop_map_free(&p->ids, NULL);
    gpuop_map_free(&p->tags, NULL);
}
