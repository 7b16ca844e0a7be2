/*
 * ospools_int.h - the OS pools of the cached GPU nodes, counted as nodes
 * come, change and go, so the apply stage knows whether its per-OS driver
 * DaemonSets can have changed without walking the nodes.
 *
 * A pool is counted by its whole identity (tag, ID, the version selected
 * on, the kernel: precompiled drivers have a DaemonSet per OS pool and
 * kernel): a move says so when one appears or its last GPU node leaves. The
 * apply stage collects the pools in node order and keeps the first of a
 * tag (and kernel) and the first GPUOP_OSPOOL_MAX, so while two OS
 * identities share a tag or there are more pools than that, which pools it
 * keeps may move with any node of a pool: then every change of a node with a pool says
 * so. A count that could not be stored (out of memory) makes every node
 * change say so from then on.
 */
#ifndef GPUOP_OSPOOLS_INT_H
#define GPUOP_OSPOOLS_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "gpuop/map.h"
#include "gpuop/model.h"

struct gpuop_ospools {
    struct gpuop_map ids;  /* identity, kernel included -> GPU nodes in it (a count in the
                              pointer) */
    struct gpuop_map oses; /* identity without the kernel -> identities with it (a count) */
    struct gpuop_map tags; /* tag -> OS identities with it (a count in the pointer) */
    bool lost;             /* a count was not stored: every node change may move the pools */
};

void gpuop_ospools_init(struct gpuop_ospools *p);
/* A node changed from old to nw (borrowed; either NULL: an add or a
 * delete). True when the pools the apply stage collects may have moved. */
bool gpuop_ospools_move(struct gpuop_ospools *p, const struct gpuop_node *old,
                        const struct gpuop_node *nw);
void gpuop_ospools_free(struct gpuop_ospools *p);

#endif
