/*
 * ospools.c - the OS pools of the cached GPU nodes, counted (see
 * ospools_int.h).
 */
#include <stdio.h>
#include <string.h>

#include "gpuop/ospool.h"

#include "ospools_int.h"

/* "<tag>/<id>/<version>/<major>", then "/<kernel>/<driver pool>" */
#define OS_IDENTITY_MAX (3 * (GPUOP_OSPOOL_TAG_MAX + 1) + 4)
#define IDENTITY_MAX    (OS_IDENTITY_MAX + GPUOP_OSPOOL_KERNEL_MAX + GPUOP_OSPOOL_DPOOL_MAX + 3)

void gpuop_ospools_init(struct gpuop_ospools *p)
{
    gpuop_map_init(&p->ids);
    gpuop_map_init(&p->oses);
    gpuop_map_init(&p->tags);
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

/* A pool's keys: its identity with and without the kernel, and its tag. */
struct keys {
    char id[IDENTITY_MAX], os[OS_IDENTITY_MAX], tag[GPUOP_OSPOOL_TAG_MAX + 1];
};

/* n's pool's keys into k; false when n is in none (not a GPU node, or no
 * OS labels: the stage skips it). The kernel is always in the identity
 * (the caches do not know whether the driver is precompiled): without,
 * one OS's nodes on two kernels are two identities of one DaemonSet,
 * which only makes the stage render when a kernel appears or goes. The
 * driver pool label is in it too: a node moved to another pool may need a
 * DaemonSet that is not there yet. */
static bool pool_of(const struct gpuop_node *n, struct keys *k)
{
    struct gpuop_ospool pool;
    if (!n || !n->gpu || gpuop_ospool_of_node(n, &pool, NULL) < 0)
        return false;
    snprintf(k->os, sizeof(k->os), "%s/%s/%s/%d", pool.tag, pool.id, pool.version, pool.major_only);
    snprintf(k->id, sizeof(k->id), "%s/%s/%s", k->os, pool.kernel, pool.dpool);
    snprintf(k->tag, sizeof(k->tag), "%s", pool.tag);
    return true;
}

/* Counts one node of pool k d times (+1 or -1). True when the pools the
 * stage collects may have changed. */
static bool count(struct gpuop_ospools *p, const struct keys *k, long d)
{
    bool order = count_of(&p->tags, k->tag) > 1 || p->ids.len > GPUOP_OSPOOL_MAX;
    long ids = add(&p->ids, k->id, d);
    bool edge = ids == (d > 0 ? 1 : 0); /* the identity appeared or left */
    long oses = edge ? add(&p->oses, k->os, d) : 1;
    if (ids < 0 || oses < 0 || (edge && oses == (d > 0 ? 1 : 0) && add(&p->tags, k->tag, d) < 0))
        p->lost = true;
    /* a tag two OS identities share, or more pools than the stage keeps,
     * before or after: which it keeps depends on the nodes' order */
    order |= count_of(&p->tags, k->tag) > 1 || p->ids.len > GPUOP_OSPOOL_MAX;
    return edge || order;
}

bool gpuop_ospools_move(struct gpuop_ospools *p, const struct gpuop_node *old,
                        const struct gpuop_node *nw)
{
    struct keys o, n;
    bool in_old = pool_of(old, &o), in_new = pool_of(nw, &n);
    bool moved = false;
    if (in_old != in_new || (in_old && strcmp(o.id, n.id) != 0)) {
        if (in_old)
            moved |= count(p, &o, -1);
        if (in_new)
            moved |= count(p, &n, +1);
    }
    return moved || p->lost;
}

void gpuop_ospools_free(struct gpuop_ospools *p)
{
    gpuop_map_free(&p->ids, NULL);
    gpuop_map_free(&p->oses, NULL);
    gpuop_map_free(&p->tags, NULL);
}
