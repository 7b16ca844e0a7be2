/*
 * slicefold.c - a node's DRA ResourceSlices summed, and its claims held by
 * pods counted (slicefold_int.h).
 */
#include <stdint.h>
#include <string.h>

#include "slicefold_int.h"

_Static_assert((uint32_t)UINT8_MAX *GPUOP_SLICE_DEVICES_MAX <= UINT16_MAX,
               "the devices of UINT8_MAX slices fit their sum");

void gpuop_slicefold_add(struct gpuop_node_dra *d, unsigned devices)
{
    if (d->slices == UINT8_MAX)
        return; /* saturated: recounted when one goes */
    d->slices++;
    d->devices = (uint16_t)(d->devices + devices);
}

bool gpuop_slicefold_del(struct gpuop_node_dra *d, unsigned devices)
{
    if (d->slices == UINT8_MAX || d->slices == 0 || d->devices < devices) {
        *d = (struct gpuop_node_dra){.watched = d->watched, .claims = d->claims};
        return false;
    }
    d->slices--;
    d->devices = (uint16_t)(d->devices - devices);
    return true;
}

void gpuop_slicefold_claim_add(struct gpuop_node_dra *d, const struct gpuop_claim *c)
{
    if (c->npods && d->claims < GPUOP_DRA_CLAIMS_MAX)
        d->claims++;
}

bool gpuop_slicefold_claim_del(struct gpuop_node_dra *d, const struct gpuop_claim *c)
{
    if (!c->npods)
        return true;
    if (d->claims == GPUOP_DRA_CLAIMS_MAX || d->claims == 0) {
        d->claims = 0;
        return false;
    }
    d->claims--;
    return true;
}
