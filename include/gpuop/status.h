/*
 * status.h - the GpuPolicy status object (SPEC section 6) built from the
 * findings.
 *
 * The output is deterministic: same inputs, same JSON, keys in a fixed
 * order, and lastTransitionTime carried over from the previous status when a
 * condition's status did not flip. The controller writes the status only
 * when !json_equal(previous, new), so a quiet cluster costs no write.
 *
 * Conditions:
 *   Ready            True when there are GPU nodes and no finding at all;
 *                    False with reason NoGpuNodes when no node is a GPU node.
 *   OperandsComplete no Missing and no NotScheduled finding.
 *   OrderingValid    no OrderingViolation finding.
 *   Reconciled       the DaemonSets were applied; False with the caller's
 *                    reason/message (API error), else with InvalidSpec naming
 *                    the first invalid field when the policy has problems.
 * An ignored policy (not the oldest) gets state "ignored", Ready=False with
 * reason Ignored naming the active policy, the other conditions Unknown, and
 * no operands, nodes or summary.
 */
#ifndef GPUOP_STATUS_H
#define GPUOP_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "gpuop/analysis.h"
#include "gpuop/policy.h"

/* Nodes listed in status.nodes at most; the rest are counted in nodesOmitted. */
#define GPUOP_STATUS_MAX_NODES 50

struct gpuop_status_input {
    const char *namespace;         /* the operand namespace */
    bool reconciled;               /* DaemonSets applied */
    const char *reconcile_reason;  /* when !reconciled: CamelCase, e.g. "ApplyFailed" */
    const char *reconcile_message; /* when !reconciled: the API error / field */
    bool ignored;                  /* this policy is not the active one */
    const char *active_policy;     /* when ignored: name of the active policy */
    size_t max_nodes;              /* 0: GPUOP_STATUS_MAX_NODES; SIZE_MAX: no cap */
};

/* New status object, or NULL on out-of-memory. p, f, prev_status (the
 * previous .status, may be NULL) and in are borrowed; f may be NULL only
 * when in->ignored. now is seconds since epoch (for lastTransitionTime). */
json_t *gpuop_status_build(const struct gpuop_policy *p, const struct gpuop_findings *f,
                           json_t *prev_status, const struct gpuop_status_input *in, long long now);

/* The parts shared with `gpuop check -o json`: new arrays/objects, NULL on
 * out-of-memory. gpuop_status_nodes also stores the number of nodes left
 * out in *omitted (may be NULL). */
json_t *gpuop_status_operands(const struct gpuop_findings *f);
json_t *gpuop_status_nodes(const struct gpuop_findings *f, size_t max_nodes, size_t *omitted);
json_t *gpuop_status_summary(const struct gpuop_findings *f, bool truncated);

/* Formats t (seconds since epoch) as RFC 3339 UTC ("2026-11-29T21:06:40Z")
 * into buf (at least 21 bytes). */
void gpuop_status_time(long long t, char *buf, size_t size);

#endif
