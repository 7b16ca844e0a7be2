/*
 * judge.c - the node records between reconciles: the cost of a pod or
 * node event is the cost of its node.
 *
 * The records (findings/records.c) hold each node's judgement with owned
 * copies of what its findings name, and the sums. The caches name every
 * node whose object or pods changed (on_node); the names wait here, in
 * the dirty set, until the next status reconcile, which judges each of
 * them (gpuop_records_judge, the node and its pods from the caches'
 * index). The same reconcile first reads the policy and DaemonSets again
 * (gpuop_records_setup), which says when every node is dirty (what a
 * node's judgement reads of them changed) or names the few a DaemonSet's
 * status makes dirty, and adds the nodes whose judgement the clock moves
 * (gpuop_records_due). Every node dirty is the same judgement for each
 * node in the caches, then the records of nodes gone swept: also when
 * the records are new (another policy, a failure), when the dirty set
 * grew past a share of the records (one walk of the nodes costs less
 * than the set), and, reading each node's pods from every pod, when the
 * pod index is not whole.
 *
 * The records never borrow from the caches, so nothing here depends on
 * how the caches keep their items. The verify oracle (a test build's,
 * GPUOP_VERIFY) compares the records' view with a full gpuop_analyze over
 * every pod after each reconcile (the index is checked too): a difference
 * is logged as an error, counted, and the records are made again from
 * scratch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuop/log.h"

#include "controller_int.h"

/* Past this share of the records dirty (in percent), and this floor,
 * every node is judged: one walk of the nodes, no larger set. */
#define DIRTY_ALL_SHARE_PCT 25
#define DIRTY_ALL_FLOOR     64

void gpuop_ctl_judge_init(struct ctl_judge *j, bool verify)
{
    memset(j, 0, sizeof(*j));
    j->verify = verify;
    gpuop_map_init(&j->dirty);
}

static void clear_dirty(struct ctl_judge *j)
{
    gpuop_map_free(&j->dirty, NULL);
    gpuop_map_init(&j->dirty);
}

void gpuop_ctl_judge_touch(struct ctl_judge *j, const char *node)
{
    if (!j->rec || j->all_due || gpuop_map_get(&j->dirty, node))
        return; /* without records, or all due, every node is judged anyway */
    size_t limit = gpuop_records_count(j->rec) * DIRTY_ALL_SHARE_PCT / 100;
    if (limit < DIRTY_ALL_FLOOR)
        limit = DIRTY_ALL_FLOOR;
    if (j->dirty.len >= limit || gpuop_map_put(&j->dirty, node, j, NULL) < 0) {
        j->all_due = true;
        clear_dirty(j);
    }
}

/* gpuop_analysis_rejudge_fn of the setup and the clock. */
static void touch(const char *node, void *arg)
{
    gpuop_ctl_judge_touch(arg, node);
}

/* gpuop_analysis_pods_fn over the caches' index of pods by node. */
static int index_pods(void *arg, const char *node, const struct gpuop_pod **buf, size_t max,
                      size_t *n)
{
    return gpuop_caches_node_pods(arg, node, buf, max, n);
}

/* Every node of the view judged, each node's pods from the index (index)
 * or from every pod; the records of nodes gone swept. */
static int judge_all(struct ctl_judge *j, const struct ctl_judge_in *in, bool index)
{
    struct gpuop_caches_view *v = in->view;
    int rc = index ? 0 : gpuop_caches_view_pods(in->caches, v);
    j->stats.fulls++;
    return rc < 0 ? rc
                  : gpuop_records_judge_all(
                        j->rec, &(struct gpuop_analysis_in){.nodes = v->nodes,
                                                            .nnodes = v->nnodes,
                                                            .pods = v->pods,
                                                            .npods = v->npods,
                                                            .pods_of = index ? index_pods : NULL,
                                                            .pods_arg = in->caches,
                                                            .now = in->now});
}

/* The dirty nodes judged again: 0, or negative (then every node). */
static int judge_dirty(struct ctl_judge *j, const struct ctl_judge_in *in)
{
    size_t it = 0;
    const char *name;
    while (gpuop_map_next(&j->dirty, &it, &name, NULL)) {
        const struct gpuop_pod *pods[GPUOP_CACHES_NODE_PODS_MAX];
        size_t n;
        int rc = gpuop_caches_node_pods(in->caches, name, pods, GPUOP_CACHES_NODE_PODS_MAX, &n);
        if (rc == 0)
            rc = gpuop_records_judge(j->rec, name, gpuop_caches_node(in->caches, name), pods, n,
                                     in->now);
        if (rc < 0)
            return rc;
        j->stats.updates++;
    }
    return 0;
}

/* New records, judged from scratch (every node, every pod). */
static int from_scratch(struct ctl_judge *j, const struct ctl_judge_in *in)
{
    gpuop_records_free(j->rec);
    j->rec = NULL;
    int rc = gpuop_records_new(&j->rec);
    if (rc == 0)
        rc = gpuop_records_setup(j->rec, in->policy, in->view->ds, in->view->nds, touch, j);
    return rc < 0 ? rc : judge_all(j, in, false);
}

/* The verify oracle: the records' view against a full pass over every
 * pod; on a difference the records are made again from scratch. */
static int verify(struct ctl_judge *j, const struct ctl_judge_in *in, struct gpuop_findings **out)
{
    struct gpuop_caches_view *v = in->view;
    struct gpuop_findings ref = {0};
    int rc = gpuop_caches_view_pods(in->caches, v);
    if (rc == 0)
        rc = gpuop_analyze(&(struct gpuop_analysis_in){.policy = in->policy,
                                                       .nodes = v->nodes,
                                                       .nnodes = v->nnodes,
                                                       .ds = v->ds,
                                                       .nds = v->nds,
                                                       .pods = v->pods,
                                                       .npods = v->npods,
                                                       .now = in->now},
                           &ref);
    char why[2 * GPUOP_FINDING_MESSAGE_MAX + 128]; /* both texts of a difference */
    if (rc == 0) {
        gpuop_findings_set_stranded(&ref, in->st, in->nst);
        if (!gpuop_findings_same(*out, &ref, why, sizeof(why))) {
            j->stats.mismatches++;
            gpuop_error("controller", "gpupolicy/%s: the node records differ from a full pass: %s",
                        in->key, why);
            rc = from_scratch(j, in);
            if (rc == 0)
                rc = gpuop_records_view(j->rec, in->st, in->nst, in->now, out);
        }
    }
    gpuop_findings_free(&ref);
    return rc;
}

int gpuop_ctl_judge_run(struct ctl_judge *j, const struct ctl_judge_in *in,
                        struct gpuop_findings **out)
{
    /* the index serves the dirty nodes: kept on (building it walks the
     * pods once; then the caches keep it) */
    bool index =
        gpuop_caches_index_pods(in->caches, true) == 0 && gpuop_caches_pods_indexed(in->caches);
    if (j->rec && strcmp(j->key, in->key) != 0)
        gpuop_ctl_judge_drop(j);
    int rc = 0, all = !j->rec;
    if (!j->rec)
        rc = gpuop_records_new(&j->rec);
    snprintf(j->key, sizeof(j->key), "%s", in->key);
    if (rc == 0 &&
        (rc = gpuop_records_setup(j->rec, in->policy, in->view->ds, in->view->nds, touch, j)) > 0)
        all = 1;
    if (rc >= 0) {
        gpuop_records_due(j->rec, in->now, touch, j);
        all |= j->all_due;
        rc = all ? -1 : judge_dirty(j, in);
        if (rc < 0) /* every node: through the index, else (or when it refuses) every pod */
            rc = index && (rc = judge_all(j, in, true)) == 0 ? 0 : judge_all(j, in, false);
    }
    clear_dirty(j);
    j->all_due = false;
    if (rc == 0)
        rc = gpuop_records_view(j->rec, in->st, in->nst, in->now, out);
    if (rc == 0 && j->verify)
        rc = verify(j, in, out);
    if (rc < 0) /* the sums may be off: start again next time */
        gpuop_ctl_judge_drop(j);
    return rc;
}

void gpuop_ctl_judge_drop(struct ctl_judge *j)
{
    gpuop_records_free(j->rec);
    j->rec = NULL;
    clear_dirty(j);
}

void gpuop_ctl_judge_free(struct ctl_judge *j)
{
    gpuop_ctl_judge_drop(j);
    gpuop_map_free(&j->dirty, NULL);
}
