/*
 * compat_int.h - ClusterPolicy fields a GpuPolicy accepts but does not
 * implement (compat.c); used by policy.c only.
 */
#ifndef GPUOP_COMPAT_INT_H
#define GPUOP_COMPAT_INT_H

#include <jansson.h>

/* Returned for a ClusterPolicy field that switches a component gpuop does
 * not run, given as off: nothing to say. */
#define GPUOP_COMPAT_ACCEPTED ""

/* For key under path ("spec", "spec.driver", "spec.driver.pools[]" for
 * any pool) with value v (borrowed): NULL
 * when it is no ClusterPolicy field gpuop knows of (the caller reports an
 * unknown field); GPUOP_COMPAT_ACCEPTED when it is off; else why gpuop
 * refuses it, a static sentence for the problem's message. */
const char *gpuop_compat_refused(const char *path, const char *key, json_t *v);

#endif
