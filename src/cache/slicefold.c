/*
 * slicefold.c - a node's DRA ResourceSlices summed (slicefold_int.h).
 */
#include <stdint.h>
#include <string.h>

#include "slicefold_int.h"

_Static_assert((uint32_t)UINT8_MAX *GPUOP_SLICE_DEVICES_MAX <= UINT16_MAX,
               "the devices of UINT8_MAX slices fit their sum");

void gpuop_slicefold_add(struct gpuop_node_dra *d, const struct gpuop_slice *s)
{
    if (d->slices == UINT8_MAX)
        return; /* saturated: recounted when one goes */
    d->slices++;
    d->devices = (uint16_t)(d->devices + s->devices);
}

bool gpuop_slicefold_del(struct gpuop_node_dra *d, const struct gpuop_slice *s)
{
    if (d->slices == UINT8_MAX || d->slices == 0 || d->devices < s->devices) {
        uint8_t watched = d->watched;
        memset(d, 0, sizeof(*d));
        d->watched = watched;
        return false;
    }
    d->slices--;
    d->devices = (uint16_t)(d->devices - s->devices);
    return true;
}
