/*
 * nodelist_int.h - the cached nodes in name order, kept as the node cache
 * changes: the view lends it instead of walking the store into a new
 * array each reconcile, and what sorts nodes by name (the analysis's full
 * pass, the driver upgrade's plan) finds them sorted.
 */
#ifndef GPUOP_NODELIST_INT_H
#define GPUOP_NODELIST_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "gpuop/model.h"

struct gpuop_nodelist {
    const struct gpuop_node **a; /* n borrowed nodes in strcmp order of name, cap room */
    size_t n, cap;
    bool whole; /* no insert failed since it was emptied */
};

void gpuop_nodelist_init(struct gpuop_nodelist *l);
/* Node nd (borrowed: it must stay until replaced or removed) is added, or
 * replaces the one of its name. O(log n) to replace, O(n) moves to add. A
 * failed add (GPUOP_ENOMEM) leaves the list not whole. */
int gpuop_nodelist_put(struct gpuop_nodelist *l, const struct gpuop_node *nd);
/* The node called name leaves (nothing if absent). */
void gpuop_nodelist_del(struct gpuop_nodelist *l, const char *name);
void gpuop_nodelist_free(struct gpuop_nodelist *l);

#endif
