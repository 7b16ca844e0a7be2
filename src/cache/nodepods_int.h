/*
 * nodepods_int.h - the operand pods of each node, by node name: what a
 * per-node update of the findings reads (caches.c keeps it while the
 * controller asks for it, gpuop_caches_index_pods).
 */
#ifndef GPUOP_NODEPODS_INT_H
#define GPUOP_NODEPODS_INT_H

#include <stddef.h>
#include <stdint.h>

#include "gpuop/model.h"

struct gpuop_nodepods {
    uint64_t *slots; /* cap slots (table.h), 0 when empty: a borrowed pod and its tag */
    size_t cap, len;
};

void gpuop_nodepods_init(struct gpuop_nodepods *ix);
/* Adds p (borrowed: it must stay until removed, with its node name) under
 * p->node; a pod without a node is not indexed. 0, or GPUOP_ENOMEM /
 * GPUOP_EINVAL (an address above 48 bits) (p is then not indexed: the
 * caller no longer trusts the index). */
int gpuop_nodepods_add(struct gpuop_nodepods *ix, const struct gpuop_pod *p);
/* Removes p (nothing if it is not there). */
void gpuop_nodepods_del(struct gpuop_nodepods *ix, const struct gpuop_pod *p);
/* The pods of node into out (at most max, borrowed pods, valid until
 * removed), *n of them. 0, or GPUOP_ETOOBIG when the node has more. */
int gpuop_nodepods_get(const struct gpuop_nodepods *ix, const char *node,
                       const struct gpuop_pod **out, size_t max, size_t *n);
void gpuop_nodepods_free(struct gpuop_nodepods *ix);

#endif
