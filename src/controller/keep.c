/*
 * keep.c - the findings kept between reconciles: the cost of a pod or
 * node event is the cost of its node.
 *
 * The caches name every node whose object or pods changed (on_node); the
 * names wait here until the next reconcile, which judges only those nodes
 * again (gpuop_analysis_update, with the node and its pods from the
 * caches' index) in the set the last reconcile left. A full pass
 * (gpuop_analyze over the caches' view, each node's pods from the
 * same index) is the reference, and runs instead when the set cannot be
 * trusted or would cost more to update:
 *
 *   - nothing kept yet, or kept for another policy;
 *   - a change beyond nodes, pods and DaemonSets (the policy, the
 *     ServiceAccount), or a resync touching more than a share of nodes;
 *   - a DaemonSet changed in what a node's judgement reads (which one an
 *     operand has, its tolerations ...); a change of its status counters
 *     or Warning Events, which a rollout makes with every pod, only makes
 *     the operands' results again (gpuop_analysis_set_ds) and touches the
 *     nodes whose PodNotCreated steps read whether its controller says
 *     why it creates no pod;
 *   - a judgement that moves with the clock is due (next_change);
 *   - the updates left too much of the set's names unused;
 *   - the pod index is incomplete, or an update failed.
 *
 * Pointers the set borrows from the caches stay valid while their node is
 * not named: the caches keep an item whose update is the same
 * (keep_same) and say every other change. The verify oracle also runs a
 * full pass over every pod (gpuop_analyze: the index is checked too) after
 * the updates and compares (gpuop_findings_same): a
 * difference is logged as an error, counted, and the full pass's set kept.
 * The set is kept only from GPUOP_ANALYSIS_KEEP_MIN_NODES nodes (below, a
 * full pass costs less than the memory the set and the index hold), and at
 * any size with the verify oracle (a test build's, GPUOP_VERIFY).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuop/log.h"

#include "controller_int.h"

/* Past this share of the listed nodes touched (in percent), and this
 * floor, a full pass is cheaper than the updates. */
#define KEEP_UPDATE_SHARE_PCT 25
#define KEEP_UPDATE_FLOOR     64

void gpuop_ctl_keep_init(struct ctl_keep *k, bool verify)
{
    memset(k, 0, sizeof(*k));
    k->verify = verify;
    gpuop_map_init(&k->touched);
}

/* Forgets the touched names (a full pass comes). */
static void clear_touched(struct ctl_keep *k)
{
    gpuop_map_free(&k->touched, NULL);
    gpuop_map_init(&k->touched);
}

void gpuop_ctl_keep_touch(struct ctl_keep *k, const char *node)
{
    if (!k->valid || k->full_due)
        return; /* the next reconcile runs a full pass anyway */
    if (gpuop_map_get(&k->touched, node))
        return;
    size_t limit = k->f.nnodes * KEEP_UPDATE_SHARE_PCT / 100;
    if (limit < KEEP_UPDATE_FLOOR)
        limit = KEEP_UPDATE_FLOOR;
    if (k->touched.len >= limit || gpuop_map_put(&k->touched, node, k, NULL) < 0) {
        k->full_due = true;
        clear_touched(k);
    }
}

/* gpuop_analysis_set_ds's rejudge: the node is judged again below. */
static void rejudge(const char *node, void *arg)
{
    gpuop_ctl_keep_touch(arg, node);
}

void gpuop_ctl_keep_ds(struct ctl_keep *k)
{
    k->ds_due = true;
}

void gpuop_ctl_keep_stale(struct ctl_keep *k)
{
    k->full_due = true;
    clear_touched(k);
}

/* Judges the touched nodes again in k->f: 0, or negative (then a full
 * pass). */
static int update_touched(struct ctl_keep *k, const struct gpuop_caches *caches, long long now)
{
    size_t it = 0;
    const char *name;
    while (gpuop_map_next(&k->touched, &it, &name, NULL)) {
        const struct gpuop_pod *pods[GPUOP_CACHES_NODE_PODS_MAX];
        size_t n;
        int rc = gpuop_caches_node_pods(caches, name, pods, GPUOP_CACHES_NODE_PODS_MAX, &n);
        if (rc == 0)
            rc = gpuop_analysis_update(&k->f, name, gpuop_caches_node(caches, name), pods, n, now);
        if (rc < 0)
            return rc;
        k->stats.updates++;
    }
    gpuop_analysis_age(&k->f, now);
    return 0;
}

/* gpuop_analysis_pods_fn over the caches' index of pods by node. */
static int pods_of(void *arg, const char *node, const struct gpuop_pod **buf, size_t max, size_t *n)
{
    return gpuop_caches_node_pods(arg, node, buf, max, n);
}

/* The full pass into *out (zeroed first): each node's pods from the
 * caches' index while it is whole (no array of every pod, no index of
 * them made again), else, or with every_pod (verify's reference, which
 * then checks the index too), from every pod; a node with more pods than
 * the index gives also falls back to every pod. */
static int full_pass(const struct gpuop_caches *caches, const struct gpuop_policy *p,
                     struct gpuop_caches_view *v, const struct gpuop_stranded *st, size_t nst,
                     long long now, bool every_pod, struct gpuop_findings *out)
{
    int rc = GPUOP_EINVAL;
    struct gpuop_analysis_in in = {.policy = p,
                                   .nodes = v->nodes,
                                   .nnodes = v->nnodes,
                                   .ds = v->ds,
                                   .nds = v->nds,
                                   .now = now};
    if (!every_pod && gpuop_caches_pods_indexed(caches)) {
        in.pods_of = pods_of;
        in.pods_arg = (void *)caches;
        rc = gpuop_analyze(&in, out);
        if (rc < 0)
            gpuop_findings_free(out);
    }
    if (rc < 0) {
        memset(out, 0, sizeof(*out));
        rc = gpuop_caches_view_pods(caches, v); /* then every pod is read */
        in.pods_of = NULL;
        in.pods = v->pods;
        in.npods = v->npods;
        if (rc == 0)
            rc = gpuop_analyze(&in, out);
    }
    if (rc == 0)
        gpuop_findings_set_stranded(out, st, nst);
    return rc;
}

/* The verify oracle: the updated set against a full pass; the full one
 * wins. */
static int verify(struct ctl_keep *k, const struct gpuop_caches *caches, const char *key,
                  const struct gpuop_policy *p, struct gpuop_caches_view *v,
                  const struct gpuop_stranded *st, size_t nst, long long now)
{
    struct gpuop_findings ref;
    int rc = full_pass(caches, p, v, st, nst, now, true, &ref);
    if (rc < 0) {
        gpuop_findings_free(&ref);
        return rc;
    }
    char why[2 * GPUOP_FINDING_MESSAGE_MAX + 128]; /* both texts of a difference */
    if (gpuop_findings_same(&k->f, &ref, why, sizeof(why))) {
        gpuop_findings_free(&ref);
        return 0;
    }
    k->stats.mismatches++;
    gpuop_error("controller", "gpupolicy/%s: the incremental analysis differs from a full pass: %s",
                key, why);
    gpuop_findings_free(&k->f);
    k->f = ref;
    return 0;
}

int gpuop_ctl_keep_analyze(struct ctl_keep *k, struct gpuop_caches *caches, const char *key,
                           const struct gpuop_policy *p, struct gpuop_caches_view *v,
                           const struct gpuop_stranded *st, size_t nst, long long now,
                           struct gpuop_findings **out)
{
    bool keep = k->verify || v->nnodes >= GPUOP_ANALYSIS_KEEP_MIN_NODES;
    /* The index follows: kept while the set is, so below the threshold
     * neither costs anything. */
    bool indexed = keep && gpuop_caches_index_pods(caches, true) == 0;
    if (!keep)
        (void)gpuop_caches_index_pods(caches, false);
    const char *why = !keep                                         ? NULL
                      : !indexed                                    ? "no pod index"
                      : !k->valid                                   ? "nothing kept"
                      : k->full_due                                 ? "a change all nodes read"
                      : strcmp(k->key, key) != 0                    ? "another policy"
                      : k->f.next_change && k->f.next_change <= now ? "a judgement is due"
                      : gpuop_analysis_wants_full(&k->f)            ? "names to give back"
                                                                    : NULL;
    bool full = !keep || why;
    if (why)
        gpuop_debug("controller", "gpupolicy/%s: a full analysis: %s", key, why);
    int rc = 0;
    /* A DaemonSet's status or Warning Events: the operands' results again,
     * and the nodes whose steps read what its controller says are touched */
    if (!full && k->ds_due && gpuop_analysis_set_ds(&k->f, v->ds, v->nds, rejudge, k) < 0) {
        full = true;
        gpuop_debug("controller",
                    "gpupolicy/%s: a full analysis: a DaemonSet changed what nodes read", key);
    }
    if (!full && k->full_due) {
        full = true;
        gpuop_debug("controller", "gpupolicy/%s: a full analysis: too many nodes to judge again",
                    key);
    }
    if (!full) {
        gpuop_findings_set_stranded(&k->f, st, nst); /* the last one may be gone; the
                                                        updates keep its count */
        full = update_touched(k, caches, now) < 0;
        if (!full && k->verify)
            rc = verify(k, caches, key, p, v, st, nst, now);
    }
    clear_touched(k);
    k->full_due = k->ds_due = false;
    if (full) {
        gpuop_findings_free(&k->f);
        rc = full_pass(caches, p, v, st, nst, now, false, &k->f);
        k->stats.fulls++;
    }
    k->valid = rc == 0 && keep;
    snprintf(k->key, sizeof(k->key), "%s", key);
    *out = &k->f;
    return rc;
}

void gpuop_ctl_keep_release(struct ctl_keep *k)
{
    if (k->valid)
        return;
    gpuop_findings_free(&k->f);
    memset(&k->f, 0, sizeof(k->f));
}

void gpuop_ctl_keep_drop(struct ctl_keep *k)
{
    k->valid = false;
    gpuop_ctl_keep_release(k);
    clear_touched(k);
}

void gpuop_ctl_keep_free(struct ctl_keep *k)
{
    gpuop_ctl_keep_drop(k);
    gpuop_map_free(&k->touched, NULL);
}
