/*
 * slicefold_int.h - a node's DRA ResourceSlices summed into its struct
 * (model.h, struct gpuop_node_dra): what the caches do with each slice
 * event (caches.c), kept apart so it is tested without an API server.
 *
 * The fold is a count and a sum, moved by each slice that comes or goes
 * (O(1) an event, whatever the cluster's size). The count saturates at
 * UINT8_MAX; taking a slice back from a saturated fold cannot know what
 * is left, so it asks the caller to recount the node's slices (a walk
 * of the slice table, slicetab_int.h; no real node has 255 slices:
 * NVIDIA's plugin publishes one, or one a GPU and one of shared
 * counters).
 */
#ifndef GPUOP_SLICEFOLD_INT_H
#define GPUOP_SLICEFOLD_INT_H

#include <stdbool.h>

#include "gpuop/model.h"

/* Adds a slice of devices devices (at most GPUOP_SLICE_DEVICES_MAX) to d. */
void gpuop_slicefold_add(struct gpuop_node_dra *d, unsigned devices);
/* Takes a slice of devices devices, once added, back from d; false when d
 * was saturated: then d is zeroed (watched and claims kept) and the
 * caller recounts. */
bool gpuop_slicefold_del(struct gpuop_node_dra *d, unsigned devices);

/* Claim c (borrowed) allocated on d's node comes (add) or goes (del):
 * counted when a pod reserves it. del returns false when d's count was
 * saturated (GPUOP_DRA_CLAIMS_MAX): then it is zeroed and the caller
 * recounts. */
void gpuop_slicefold_claim_add(struct gpuop_node_dra *d, const struct gpuop_claim *c);
bool gpuop_slicefold_claim_del(struct gpuop_node_dra *d, const struct gpuop_claim *c);

#endif
