/*
 * world_fixture.h - a small cluster "world" for the findings-based unit tests
 * (report, status): one GpuPolicy named "main" with every operand enabled,
 * one DaemonSet per operand, GPU nodes and Running/Ready operand pods, all
 * built from Kubernetes-shaped JSON through the model parsers, then
 * analysed at FX_T0.
 *
 * Everything lives inside struct fx_world (fixed arrays); the nodes and
 * pods are the model's own blocks, which fx_world_free releases.
 * The helpers assert with cmocka, so only cmocka programs may call them
 * (the archive member is linked only into the tests that do).
 */
#ifndef GPUOP_TEST_WORLD_FIXTURE_H
#define GPUOP_TEST_WORLD_FIXTURE_H

#include <stddef.h>

#include "gpuop/analysis.h"

#define FX_T0           1795986400LL /* 2026-11-29T21:06:40Z, the analysis time */
#define FX_MAX_NODES    128
#define FX_MAX_PODS     800
#define FX_NO_DS_STATUS (-1) /* fx_world_init: DaemonSets without a status */

/* Every operand name, for the name lists fx_add_node and fx_run take. */
#define FX_ALL                                                                                     \
    "driver container-toolkit device-plugin gpu-feature-discovery dcgm dcgm-exporter "             \
    "operator-validator mig-manager dra-driver mps-control-daemon"

struct fx_world {
    struct gpuop_policy pol;
    struct gpuop_node *nodes[FX_MAX_NODES]; /* gpuop_node_new */
    const struct gpuop_node *np[FX_MAX_NODES];
    size_t nn;
    struct gpuop_ds ds[GPUOP_OPERAND_MAX];
    const struct gpuop_ds *dp[GPUOP_OPERAND_MAX];
    size_t nds;
    struct gpuop_pod *pods[FX_MAX_PODS]; /* gpuop_pod_new */
    const struct gpuop_pod *pp[FX_MAX_PODS];
    size_t npods;
    struct gpuop_findings f; /* of the last fx_analyze */
};

/* Empties w, names the policy "main", enables every operand and adds one
 * DaemonSet per operand. With desired >= 0 each DaemonSet carries a status
 * {desiredNumberScheduled: desired, numberReady: ready}; with desired < 0
 * (FX_NO_DS_STATUS) it has no status at all. */
void fx_world_init(struct fx_world *w, int desired, int ready);

/* A GPU node (nvidia.com/gpu.present=true) with the deploy label "true" for
 * every operand whose name occurs in `ops` (space separated, e.g. FX_ALL)
 * and no deploy label for the others. Names are borrowed. */
void fx_add_node(struct fx_world *w, const char *name, const char *ops);

/* A GPU node with every deploy label "true", except the one of operand
 * `except` (NULL: none), which is set to `value`, or left out when value
 * is NULL. Names are borrowed. */
void fx_add_node_except(struct fx_world *w, const char *name, const char *except,
                        const char *value);

/* A GPU node with every deploy label "true" but those `values` names
 * ("driver=pre-installed container-toolkit=false": space separated
 * operand=value pairs), set to their value. Names are borrowed. */
void fx_add_node_values(struct fx_world *w, const char *name, const char *values);

/* A Running, Ready pod "<operand>-<node>" on node for every operand whose
 * name occurs in `ops`. */
void fx_run(struct fx_world *w, const char *node, const char *ops);

/* The same for every operand NOT named in `skip` (NULL: all of them). */
void fx_run_all(struct fx_world *w, const char *node, const char *skip);

/* Replaces w->f with the findings of the world at FX_T0; asserts success. */
void fx_analyze(struct fx_world *w);
/* fx_analyze at now (seconds since the epoch) instead of FX_T0. */
void fx_analyze_at(struct fx_world *w, long long now);

/* Frees the findings and everything the parsers allocated; reuse w only
 * through fx_world_init. */
void fx_world_free(struct fx_world *w);

#endif
