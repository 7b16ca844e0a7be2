/*
 * world.h - gpuop's view of the cluster: four informers (GpuPolicies,
 * Nodes, and the operand DaemonSets and Pods in the operator namespace,
 * selected by app.kubernetes.io/managed-by=gpuop) whose stores hold the
 * compact structs of model.h. Shared by the controller and `gpuop check`.
 */
#ifndef GPUOP_WORLD_H
#define GPUOP_WORLD_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>
#include <uv.h>

#include "gpuop/informer.h"
#include "gpuop/kube.h"
#include "gpuop/model.h"

enum gpuop_world_kind {
    GPUOP_WORLD_POLICY,
    GPUOP_WORLD_NODE,
    GPUOP_WORLD_DS,
    GPUOP_WORLD_POD,
    GPUOP_WORLD_KINDS
};

/* A cached operand DaemonSet: the model struct plus what drift detection
 * needs (a hash of the metadata fields gpuop applies). */
struct gpuop_world_ds {
    struct gpuop_ds ds;
    uint64_t meta_hash;
};

struct gpuop_world_config {
    const char *namespace; /* operator namespace, where operands live */
    /* Something changed (key of the object); borrowed strings. */
    void (*on_change)(void *arg, enum gpuop_world_kind kind, const char *key);
    /* All four informers have listed once. */
    void (*on_synced)(void *arg);
    void *arg;
};

/* Arrays of borrowed pointers into the caches, valid until the loop runs
 * again; the arrays themselves are new (gpuop_world_view_free). */
struct gpuop_world_view {
    const struct gpuop_node **nodes;
    size_t nnodes;
    const struct gpuop_ds **ds;
    size_t nds;
    const struct gpuop_pod **pods;
    size_t npods;
};

struct gpuop_world;

int gpuop_world_new(uv_loop_t *loop, struct gpuop_kube *kube, const struct gpuop_world_config *cfg,
                    struct gpuop_world **out);
int gpuop_world_start(struct gpuop_world *w);
bool gpuop_world_synced(const struct gpuop_world *w);

/* The GpuPolicy object named name (borrowed), or NULL. */
json_t *gpuop_world_policy(const struct gpuop_world *w, const char *name);
/* The active policy's name (borrowed): the oldest by creationTimestamp,
 * ties broken by name; NULL when there is none. */
const char *gpuop_world_active(const struct gpuop_world *w);
/* Iterates the GpuPolicies: for (size_t i = 0; gpuop_world_next_policy(w, &i, &n, &o);)
 * name and obj are borrowed. */
int gpuop_world_next_policy(const struct gpuop_world *w, size_t *iter, const char **name,
                            json_t **obj);
/* The cached DaemonSet of that name in the operator namespace, or NULL. */
const struct gpuop_world_ds *gpuop_world_ds(const struct gpuop_world *w, const char *name);

int gpuop_world_view(const struct gpuop_world *w, struct gpuop_world_view *v);
void gpuop_world_view_free(struct gpuop_world_view *v);

void gpuop_world_stats(const struct gpuop_world *w, enum gpuop_world_kind kind,
                       struct gpuop_informer_stats *out);

/* Hash of the metadata gpuop applies to a DaemonSet (labels, annotations,
 * ownerReferences) of obj (borrowed). */
uint64_t gpuop_world_meta_hash(json_t *obj);

void gpuop_world_close(struct gpuop_world *w, void (*cb)(void *arg), void *arg);

#endif
