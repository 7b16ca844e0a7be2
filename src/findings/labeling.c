/*
 * labeling.c - which labels gpuop writes on a node and which of those it
 * set someone changed (SPEC 4a; the rules are in labeling.h). Pure: the
 * compact node and the policy in, a plan or a yes/no out, so the same
 * decision is unit-tested without a cluster, taken by the controller's
 * labeler from its cache and taken again from a fresh GET before the PATCH.
 */
#include <string.h>

#include "gpuop/labeling.h"
#include "gpuop/operand.h"

/* MIG Manager is labelled only on MIG-capable GPU nodes, as the GPU
 * Operator does (NVIDIA/gpu-operator v26.7.0, controllers/state_manager.go,
 * addGPUStateLabels and hasMIGCapableGPU): on a node gpuop labelled, the
 * label follows once GFD says nvidia.com/mig.capable=true. */
#define MIG_MANAGER "mig-manager"

struct gpuop_labeling gpuop_labeling_of(const struct gpuop_policy *p)
{
    struct gpuop_labeling l = {0};
    if (!p || !p->node_labeling)
        return l;
    l.on = true;
    for (int i = 0; i < gpuop_operand_count(); i++)
        if (p->operands[i].enabled && !gpuop_operand_follow(i)) /* no label of its own */
            l.enabled |= 1u << i;
    return l;
}

bool gpuop_labeling_plan(const struct gpuop_labeling *l, const struct gpuop_node *n,
                         struct gpuop_label_plan *out)
{
    memset(out, 0, sizeof(*out));
    if (!l || !l->on || !n || !n->gpu || n->operands_label == GPUOP_LABEL_FALSE ||
        n->label_note == GPUOP_NOTE_BAD)
        return false;
    bool fresh = n->label_note == GPUOP_NOTE_NONE;
    if (fresh && n->any_deploy)
        return false; /* a person's node */
    const int mig = gpuop_operand_by_name(MIG_MANAGER);
    for (int i = 0; i < gpuop_operand_count(); i++)
        if (((l->enabled >> i) & 1u) && n->deploy[i] == GPUOP_LABEL_ABSENT &&
            !((n->labelled >> i) & 1u) && (i != mig || n->mig_capable))
            out->deploy |= 1u << i;
    out->present = fresh && n->present_label != GPUOP_LABEL_TRUE;
    /* gpu.present alone is no reason to write to a node gpuop labelled
     * before: it is never put back. */
    return out->deploy != 0 || out->present;
}

bool gpuop_labeling_changed(const struct gpuop_node *n, int i)
{
    if (!n || n->label_note != GPUOP_NOTE_OK || i < 0 || i >= GPUOP_OPERAND_MAX ||
        !((n->labelled >> i) & 1u) || n->deploy[i] == GPUOP_LABEL_TRUE)
        return false;
    if (n->deploy[i] == GPUOP_LABEL_PREINSTALLED)
        return false; /* NVIDIA's driver container wrote it, not a person */
    const char *v = gpuop_node_deploy_value(n, i);
    return !(n->deploy[i] == GPUOP_LABEL_OTHER && v && strncmp(v, "paused", 6) == 0);
}
