/*
 * nodepods_int.h - the operand pods of each node, by node name: what a
 * per-node update of the findings reads (caches.c keeps it while the
 * controller asks for it, gpuop_caches_index_pods).
 */
#ifndef GPUOP_NODEPODS_INT_H
#define GPUOP_NODEPODS_INT_H

#include <stddef.h>

#include "gpuop/map.h"
#include "gpuop/model.h"

/* Most pods kept for one node: an operand's pod and its replacement while
 * the old one terminates, per DaemonSet (per-OS ones and a rollback one
 * included), with room; more are not indexed (and the node is then
 * judged from a full pass, see gpuop_caches_node_pods). */
#define GPUOP_NODEPODS_MAX 64

struct gpuop_nodepods {
    struct gpuop_map by_node; /* node name -> struct podlist (nodepods.c), new */
};

void gpuop_nodepods_init(struct gpuop_nodepods *ix);
/* Adds p (borrowed: it must stay until removed) under p->node; a pod
 * without a node is not indexed. 0, or GPUOP_ENOMEM / GPUOP_ETOOBIG (p is
 * then not indexed: the caller no longer trusts the index). */
int gpuop_nodepods_add(struct gpuop_nodepods *ix, const struct gpuop_pod *p);
/* Removes p from its node's list (nothing if it is not there). */
void gpuop_nodepods_del(struct gpuop_nodepods *ix, const struct gpuop_pod *p);
/* The pods of node (borrowed array, valid until the next add or del);
 * *n = 0 and NULL for a node without pods. */
const struct gpuop_pod *const *gpuop_nodepods_get(const struct gpuop_nodepods *ix, const char *node,
                                                  size_t *n);
void gpuop_nodepods_free(struct gpuop_nodepods *ix);

#endif
