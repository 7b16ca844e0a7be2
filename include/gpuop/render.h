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

#include "gpuop/policy.h"

/* Labels every operand DaemonSet and pod carries. The selector uses only
 * GPUOP_LABEL_NAME and GPUOP_LABEL_MANAGED_BY (selectors are immutable, so
 * they hold nothing that depends on the policy); the controller watches pods
 * by GPUOP_LABEL_MANAGED_BY=GPUOP_MANAGER and maps them to operands by
 * GPUOP_LABEL_COMPONENT (the operand name). */
#define GPUOP_LABEL_NAME       "app.kubernetes.io/name"
#define GPUOP_LABEL_INSTANCE   "app.kubernetes.io/instance"
#define GPUOP_LABEL_COMPONENT  "app.kubernetes.io/component"
#define GPUOP_LABEL_MANAGED_BY "app.kubernetes.io/managed-by"
#define GPUOP_LABEL_PART_OF    "app.kubernetes.io/part-of"
#define GPUOP_MANAGER          "gpuop"

/* Service account every operand pod runs as (created by deploy/). */
#define GPUOP_OPERAND_SA "gpuop-operand"

/* The DaemonSet of operand index `operand` in namespace ns: new reference,
 * NULL on out-of-memory or a bad operand index. p and ns are borrowed.
 * Rendered whether or not the operand is enabled. */
json_t *gpuop_render_daemonset(const struct gpuop_policy *p, int operand, const char *ns);

/* New array of the DaemonSets of the enabled operands, in operand-table
 * order; NULL on out-of-memory. */
json_t *gpuop_render_all(const struct gpuop_policy *p, const char *ns);

#endif
