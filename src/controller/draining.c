/*
 * draining.c - the controller's draining driver pools: the policy's
 * gpuop_policy.draining_pools worked out from the caches at each parse of
 * the policy (the rule is gpuop_labeling_pools_draining's, labeling.h), so
 * the apply and the status reconciles, the labeller and the upgrade read
 * the same (issue 38; docs/operations.md, "Driver pools").
 */
#include "controller_int.h"
#include "gpuop/labeling.h"
#include "gpuop/log.h"

void gpuop_ctl_pools_draining(struct gpuop_controller *c)
{
    struct gpuop_caches_view v = {0};
    c->policy.ndraining_pools = 0;
    if (gpuop_caches_view(c->caches, &v) < 0)
        return;
    int over = gpuop_labeling_pools_draining(&c->policy, v.nodes, v.nnodes, v.ds, v.nds);
    if (over)
        gpuop_warn(c->kobj,
                   "%d GPU node(s) run the driver of a removed pool beyond the first %d draining "
                   "ones: those pools' DaemonSets are not kept",
                   over, GPUOP_DRIVER_POOLS_MAX);
    gpuop_caches_view_free(&v);
}
