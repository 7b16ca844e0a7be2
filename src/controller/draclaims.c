/*
 * draclaims.c - the DRA kubelet plugin outlives the pods whose claims it
 * must unprepare (issue 42, docs/operations.md "DRA driver").
 *
 * NVIDIA's order: the GPUCluster's finalizer deletes its claim-consuming
 * DaemonSets in the foreground before the kubelet plugin may go
 * (gpu-operator v26.7.0 controllers/gpucluster_controller.go,
 * reconcileDelete), and its node labeller removes a node's
 * nvidia.com/gpu.deploy.dra-driver only once no pod there holds a GPU
 * claim (controllers/nodelabeling_controller.go, nodeHasDRAClaimPods: a
 * pod that is terminal and not being deleted holds none). Without the
 * plugin the kubelet cannot unprepare a claim, and its pod hangs in
 * Terminating.
 *
 * When spec.draDriver is switched off, or the policy is being deleted
 * (gpuop's finalizer keeps it meanwhile: finalizer.c), the apply stage
 * asks gpuop_ctl_draclaims_clear() before it deletes the plugin's
 * DaemonSet.
 * It answers true only once a round of pod LISTs, started after the
 * switch, found no claim holder on any node where a plugin pod runs. A
 * round lists those nodes one after the other, one LIST in flight:
 *   GET /api/v1/pods?fieldSelector=spec.nodeName=NODE&limit=..&resourceVersion=0
 * (the API server's watch cache, indexed by node) and counts the pods
 * with spec.resourceClaims that hold them as NVIDIA counts them. gpuop
 * reads no ResourceClaim here: a claim of another DRA driver counts too,
 * which only keeps the plugin longer. Each round's end requeues the
 * policy, at once when clear, else after DRACLAIMS_RECHECK_MS.
 *
 * Memory: nothing per pod or per node is kept beyond a round: the
 * round's node names (copied when it starts), the holders' count and the
 * first DRACLAIMS_NAMES_MAX names; nothing at all while the DRA driver is
 * not being switched off.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuop/clock.h"
#include "gpuop/log.h"
#include "gpuop/names.h"
#include "gpuop/operand.h"

#include "controller_int.h"

/* A round that found holders is followed by another this long after it. */
#define DRACLAIMS_RECHECK_MS 5000
/* A clear round is trusted this long (a delete refused and tried again
 * later starts a new round). */
#define DRACLAIMS_FRESH_MS 10000
/* Pods of one LIST page (a node holds at most a few hundred). */
#define DRACLAIMS_LIST_LIMIT "1000"
#define DRACLAIMS_LIST_RV    "0"
/* "namespace/name on node", at most. */
#define DRACLAIMS_NAME_MAX (63 + 1 + 253 + 4 + 253 + 1)

struct ctl_draclaims {
    struct gpuop_kube *kube;
    struct gpuop_queue *queue;
    char *policy;               /* requeued at a round's end (new) */
    char **nodes;               /* the round's nodes (new copies), NULL between rounds */
    size_t nnodes, next;        /* next: the node to list next */
    struct gpuop_kube_req *req; /* the LIST in flight, or NULL */
    /* the round in progress */
    uint32_t holders, nnames;
    bool failed;
    /* the last finished round */
    bool done, clear;
    uint64_t done_ms;
    uint32_t last_holders, last_nnames, last_nodes;
    bool last_failed;
    char names[DRACLAIMS_NAMES_MAX][DRACLAIMS_NAME_MAX];
    char last[DRACLAIMS_NAMES_MAX][DRACLAIMS_NAME_MAX];
    bool active;   /* the DRA driver is being switched off */
    bool deleting; /* ... because the policy is being deleted (the words say so) */
};

int gpuop_ctl_draclaims_new(struct gpuop_kube *kube, struct gpuop_queue *queue,
                            struct ctl_draclaims **out)
{
    struct ctl_draclaims *d = calloc(1, sizeof(*d));
    if (!d)
        return GPUOP_ENOMEM;
    d->kube = kube;
    d->queue = queue;
    *out = d;
    return 0;
}

static void round_free(struct ctl_draclaims *d)
{
    for (size_t i = 0; d->nodes && i < d->nnodes; i++)
        free(d->nodes[i]);
    free(d->nodes);
    d->nodes = NULL;
    d->nnodes = d->next = 0;
}

/* Does pod (borrowed) hold a resource claim the plugin must unprepare? */
static bool holds_claims(json_t *pod)
{
    json_t *meta = json_object_get(pod, "metadata");
    const char *phase = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
    bool terminal = phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"));
    json_t *del = json_object_get(meta, "deletionTimestamp");
    if (terminal && (!del || json_is_null(del)))
        return false;
    return json_array_size(json_object_get(json_object_get(pod, "spec"), "resourceClaims")) > 0;
}

static void list_next(struct ctl_draclaims *d);

/* The round is over: its result kept, the policy requeued. */
static void round_end(struct ctl_draclaims *d)
{
    d->done = true;
    d->done_ms = gpuop_clock_ms();
    d->last_holders = d->holders;
    d->last_nnames = d->nnames;
    d->last_nodes = (uint32_t)d->nnodes;
    d->last_failed = d->failed;
    d->clear = !d->holders && !d->failed;
    memcpy(d->last, d->names, sizeof(d->last));
    gpuop_debug("draclaims", "%u pod(s) holding resource claims on %zu node(s)%s", d->holders,
                d->nnodes, d->failed ? " (a LIST failed)" : "");
    round_free(d);
    if (d->policy)
        (void)(d->clear ? gpuop_queue_add(d->queue, d->policy)
                        : gpuop_queue_add_after(d->queue, d->policy, DRACLAIMS_RECHECK_MS));
}

static void list_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct ctl_draclaims *d = arg;
    const char *node = d->nodes ? d->nodes[d->next] : "";
    d->req = NULL;
    if (rc == GPUOP_ECANCELED)
        return;
    if (rc < 0) {
        gpuop_debug("draclaims", "LIST of the pods on node %s failed: %s", node,
                    err && err->message[0] ? err->message : gpuop_strerror(rc));
        d->failed = true;
    }
    size_t i;
    json_t *pod;
    json_array_foreach(json_object_get(body, "items"), i, pod)
    {
        if (!holds_claims(pod))
            continue;
        if (d->nnames < DRACLAIMS_NAMES_MAX) {
            json_t *meta = json_object_get(pod, "metadata");
            const char *ns = json_string_value(json_object_get(meta, "namespace"));
            const char *name = json_string_value(json_object_get(meta, "name"));
            snprintf(d->names[d->nnames++], DRACLAIMS_NAME_MAX, "%.63s/%.253s on %.253s",
                     ns ? ns : "", name ? name : "", node);
        }
        d->holders++;
    }
    d->next++;
    list_next(d);
}

/* Lists the round's next node, or ends the round. */
static void list_next(struct ctl_draclaims *d)
{
    while (d->next < d->nnodes) {
        size_t n = strlen(d->nodes[d->next]) + 32;
        char *sel = malloc(n);
        if (sel)
            snprintf(sel, n, "spec.nodeName=%s", d->nodes[d->next]);
        struct gpuop_kube_ref ref = {"v1", NULL, "pods", NULL, NULL};
        struct gpuop_kube_param params[] = {{"fieldSelector", sel},
                                            {"limit", DRACLAIMS_LIST_LIMIT},
                                            {"resourceVersion", DRACLAIMS_LIST_RV}};
        char *path = sel ? gpuop_kube_path(&ref, params, 3) : NULL;
        free(sel);
        int rc = path
                     ? gpuop_kube_request(
                           d->kube, &(struct gpuop_kube_opts){.verb = GPUOP_KUBE_GET, .path = path},
                           list_done, d, &d->req)
                     : GPUOP_ENOMEM;
        free(path);
        if (rc == 0)
            return; /* list_done goes on */
        d->req = NULL;
        d->failed = true; /* not listed: not clear */
        d->next++;
    }
    round_end(d);
}

/* Starts a round over nodes (borrowed, copied). */
static void round_start(struct ctl_draclaims *d, const char *const *nodes, size_t n)
{
    d->holders = d->nnames = 0;
    d->failed = false;
    d->nodes = n ? calloc(n, sizeof(*d->nodes)) : NULL;
    for (size_t i = 0; d->nodes && i < n; i++)
        if (!(d->nodes[d->nnodes++] = strdup(nodes[i])))
            d->failed = true;
    if (n && !d->nodes)
        d->failed = true;
    list_next(d);
}

bool gpuop_ctl_draclaims_clear(struct ctl_draclaims *d, const char *policy, bool deleting,
                               const char *const *nodes, size_t n)
{
    d->deleting = deleting;
    if (!d->active) { /* switched off just now: nothing known yet */
        d->active = true;
        d->done = false;
    }
    if (policy && (!d->policy || strcmp(d->policy, policy))) {
        free(d->policy);
        d->policy = strdup(policy);
    }
    if (d->nodes) /* a round in progress */
        return false;
    uint64_t now = gpuop_clock_ms();
    if (d->done && d->clear && now - d->done_ms < DRACLAIMS_FRESH_MS)
        return true;
    if (!n) { /* no plugin pod left: nothing to unprepare for */
        d->done = d->clear = true;
        d->done_ms = now;
        d->last_holders = d->last_nnames = d->last_nodes = 0;
        d->last_failed = false;
        return true;
    }
    if (!d->done || d->clear || now - d->done_ms >= DRACLAIMS_RECHECK_MS)
        round_start(d, nodes, n);
    return d->done && d->clear && !d->nodes;
}

void gpuop_ctl_draclaims_reset(struct ctl_draclaims *d)
{
    if (!d || !d->active)
        return;
    if (d->req)
        gpuop_kube_cancel(d->req);
    d->req = NULL;
    round_free(d);
    d->active = d->done = d->clear = false;
}

int gpuop_ctl_draclaims_waiting(const struct ctl_draclaims *d, char *buf, size_t size)
{
    const struct gpuop_operand *od = gpuop_operand_get(gpuop_operand_by_name("dra-driver"));
    const char *ds = od ? od->ds_name : "?";
    if (size)
        buf[0] = '\0';
    if (!d || !d->active || (d->done && d->clear))
        return 0;
    /* the policy deleted: it stays as long, by gpuop's finalizer (finalizer.c) */
    const char *why = d->deleting ? "The GpuPolicy is being deleted" : "spec.draDriver is disabled";
    const char *also =
        d->deleting ? " (and the GpuPolicy, by its finalizer " GPUOP_FINALIZER_DRA ")" : "";
    if (!d->done)
        return snprintf(buf, size,
                        "%s: the kubelet plugin's DaemonSet %s is kept%s "
                        "until no pod on its nodes holds a resource claim it must unprepare; "
                        "listing the pods of its nodes.",
                        why, ds, also);
    int len = snprintf(buf, size,
                       "%s: the kubelet plugin's DaemonSet %s is kept%s "
                       "until no pod on its nodes holds a resource claim it must unprepare: %u "
                       "pod(s) on its %u node(s) still do%s",
                       why, ds, also, d->last_holders, d->last_nodes,
                       d->last_failed ? " (and a node's pods could not be listed)" : "");
    for (uint32_t k = 0; k < d->last_nnames && len > 0 && (size_t)len < size; k++)
        len += snprintf(buf + len, size - (size_t)len, "%s%s", k ? ", " : ": ", d->last[k]);
    if (len > 0 && (size_t)len < size && d->last_holders > d->last_nnames)
        len += snprintf(buf + len, size - (size_t)len, " and %u more",
                        d->last_holders - d->last_nnames);
    if (len > 0 && (size_t)len < size)
        len += snprintf(buf + len, size - (size_t)len, ".");
    return len;
}

void gpuop_ctl_draclaims_free(struct ctl_draclaims *d)
{
    if (!d)
        return;
    gpuop_ctl_draclaims_reset(d);
    free(d->policy);
    free(d);
}
