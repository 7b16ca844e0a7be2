/*
 * labeling.h - node labelling (SPEC 4a) as a pure decision: what gpuop
 * writes on a node, and which of the labels it set someone changed since.
 * The controller (src/controller/labeler.c) sends what gpuop_labeling_plan
 * says; the analysis reports what gpuop_labeling_changed says (finding
 * NotScheduled/LabelChanged). Neither reads anything but the compact node
 * (model.h: its deploy labels and gpuop's annotation) and the policy.
 *
 * The rules:
 *   - a GPU node with no nvidia.com/gpu.deploy.* label at all and no gpuop
 *     annotation is new: gpuop sets nvidia.com/gpu.present=true (unless it
 *     is already) and nvidia.com/gpu.deploy.<operand>=true for each
 *     enabled operand (mig-manager only on a MIG-capable node, as the GPU
 *     Operator does);
 *   - a node with any deploy label and no gpuop annotation is a person's:
 *     nothing is written, ever;
 *   - a node gpuop labelled (annotation readable) gets the deploy label of
 *     an operand enabled since, when that label is absent and gpuop never
 *     set it before (a label gpuop set and someone removed is not put back);
 *   - nvidia.com/gpu.deploy.operands=false excludes the node; an unreadable
 *     annotation too (gpuop does not know what it set there).
 *
 * Layer: findings
 */
#ifndef GPUOP_LABELING_H
#define GPUOP_LABELING_H

#include <stdbool.h>
#include <stdint.h>

#include "gpuop/model.h"
#include "gpuop/policy.h"

/* What gpuop writes on one node: labels, all "true". */
struct gpuop_label_plan {
    bool present;    /* nvidia.com/gpu.present */
    uint32_t deploy; /* bit per operand index: nvidia.com/gpu.deploy.<operand> */
};

/* What of the policy the decision reads (a copy the labeler keeps while
 * its requests are in flight). */
struct gpuop_labeling {
    bool on;          /* spec.nodeLabeling.enabled */
    uint32_t enabled; /* bit per operand index: enabled in the policy */
};

/* The labelling facts of policy p (borrowed; NULL: labelling off). */
struct gpuop_labeling gpuop_labeling_of(const struct gpuop_policy *p);

/* The labels gpuop would write on n (borrowed) under l (borrowed) into
 * *out; true when there is one. */
bool gpuop_labeling_plan(const struct gpuop_labeling *l, const struct gpuop_node *n,
                         struct gpuop_label_plan *out);

/* Operand i's deploy label was set "true" by gpuop (its annotation says
 * so) and is not "true" now: removed, "false" or another value. A
 * "paused..." value is not a change (an upgrade pauses operands that way:
 * LabelPaused), nor "pre-installed" (NVIDIA's driver container, which
 * gpuop runs, writes it when it finds a driver on the host: host-provided,
 * no person's decision). Does not depend on the policy: what gpuop set and
 * someone changed is reported even with labelling turned off since. */
bool gpuop_labeling_changed(const struct gpuop_node *n, int i);

#endif
