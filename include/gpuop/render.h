/*
 * render.h - a parsed GpuPolicy expanded into the operand DaemonSets.
 *
 * Rendering is a pure function of the policy: the same policy gives the same
 * objects, key order included, so the output can be golden-tested, sent by
 * server-side apply (only the fields gpuop owns), and printed by
 * `gpuop render` for review. Owner references are added only when the
 * policy has a uid (it came from the cluster, not from a file).
 */
#ifndef GPUOP_RENDER_H
#define GPUOP_RENDER_H

#include <jansson.h>

#include "gpuop/names.h"
#include "gpuop/policy.h"

/* The DaemonSet of operand index `operand` in namespace ns: new reference,
 * NULL on out-of-memory or a bad operand index. p and ns are borrowed.
 * Rendered whether or not the operand is enabled. */
json_t *gpuop_render_daemonset(const struct gpuop_policy *p, int operand, const char *ns);

/* New array of the DaemonSets of the enabled operands, in operand-table
 * order; NULL on out-of-memory. */
json_t *gpuop_render_all(const struct gpuop_policy *p, const char *ns);

#endif
