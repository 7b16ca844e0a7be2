/*
 * incremental.c - one node judged again (gpuop_analysis_update): the cost
 * of an event is the cost of its node.
 *
 * A set from gpuop_analyze keeps, beside its public arrays, what the pass
 * chose (inc: DaemonSets, the policy's switches) and per listed node what
 * it added to the counters (a tally). An update takes the node's old
 * contribution back (its findings per kind and reason, its tally), judges
 * it with the pass's own judge_node into the end of the items, and moves
 * the result into the node's place: items after it shift only when its
 * number of findings changes, nodes after it only when it enters or leaves
 * the list (a GPU node, or one with findings). next_change stays the
 * earliest of the nodes' (a rescan of the tallies only when the node held
 * it). The full pass is the reference: test_incremental compares the two
 * after every one of thousands of random events, with gpuop_findings_same
 * (below), which the controller's verify oracle (a test build's) runs after each
 * reconcile's updates.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuop/analysis.h"
#include "gpuop/sort.h"

#include "findings_int.h"

/* Most findings one node can have: per operand one of each table that
 * finds (not running, advertises, unexpected, ordering). */
#define NODE_FINDINGS_MAX (4 * GPUOP_OPERAND_MAX)

/* Updates leave names unused in the arena; past this share of what is
 * in use (and this floor), a full pass is worth its cost. */
#define WASTE_FLOOR_BYTES (64 * 1024)

/* gpuop_sort_find's order of a name against a node's result. */
static int name_vs_result(const void *key, const void *item)
{
    return strcmp(key, ((const struct gpuop_node_result *)item)->name);
}

/* Position of name among f's nodes (sorted): found, or where it goes. */
static bool node_pos(const struct gpuop_findings *f, const char *name, size_t *pos)
{
    return gpuop_sort_find(f->nodes, f->nnodes, sizeof(*f->nodes), name, name_vs_result, pos);
}

/* Room for one more node (result and tally). */
static int grow_nodes(struct gpuop_findings *f)
{
    struct gpuop_analysis_state *s = &f->inc;
    if (f->nnodes < s->nodes_cap)
        return 0;
    size_t cap = s->nodes_cap ? 2 * s->nodes_cap : 16;
    struct gpuop_node_result *nodes = realloc(f->nodes, cap * sizeof(*nodes));
    if (!nodes)
        return GPUOP_ENOMEM;
    f->nodes = nodes;
    struct gpuop_node_tally *tally = realloc(s->tally, cap * sizeof(*tally));
    if (!tally)
        return GPUOP_ENOMEM;
    s->tally = tally;
    s->nodes_cap = cap;
    return 0;
}

/* The earliest next_change of the listed nodes. */
static long long earliest_change(const struct gpuop_findings *f)
{
    long long t = 0;
    for (size_t i = 0; i < f->nnodes; i++) {
        long long c = f->inc.tally[i].next_change;
        if (c && (!t || c < t))
            t = c;
    }
    return t;
}

/* Items [first, first + old_n) of f become mine[0, new_n). */
static void splice_items(struct gpuop_findings *f, size_t first, size_t old_n,
                         const struct gpuop_finding *mine, size_t new_n)
{
    if (new_n != old_n)
        memmove(f->items + first + new_n, f->items + first + old_n,
                (f->nitems - first - old_n) * sizeof(*f->items));
    if (new_n) /* items may be NULL while the set has none */
        memcpy(f->items + first, mine, new_n * sizeof(*mine));
    f->nitems = f->nitems + new_n - old_n;
}

/* Node `name` at pos of f (found: it was listed; list: it is now, as *r
 * and *t, its items from first) is replaced, removed or inserted; what
 * follows it moves: its items' first by dn, and their node index when a
 * node came or went. */
static int place_node(struct gpuop_findings *f, const char *name, size_t pos, bool found, bool list,
                      size_t first, long long dn, struct gpuop_node_result *r,
                      const struct gpuop_node_tally *t)
{
    struct gpuop_analysis_state *s = &f->inc;
    if (found && list) {
        r->name = f->nodes[pos].name;
    } else if (found) {
        s->waste += strlen(name) + 1;
        memmove(f->nodes + pos, f->nodes + pos + 1, (f->nnodes - pos - 1) * sizeof(*f->nodes));
        memmove(s->tally + pos, s->tally + pos + 1, (f->nnodes - pos - 1) * sizeof(*s->tally));
        f->nnodes--;
    } else if (list) {
        int rc = grow_nodes(f);
        if (rc < 0 || !(r->name = gpuop_arena_strdup(&f->names, name)))
            return rc < 0 ? rc : GPUOP_ENOMEM;
        memmove(f->nodes + pos + 1, f->nodes + pos, (f->nnodes - pos) * sizeof(*f->nodes));
        memmove(s->tally + pos + 1, s->tally + pos, (f->nnodes - pos) * sizeof(*s->tally));
        f->nnodes++;
    }
    size_t new_n = list ? r->nfindings : 0; /* judge_node counted them */
    if (list) {
        r->first = (uint32_t)first;
        f->nodes[pos] = *r;
        s->tally[pos] = *t;
    }
    int di = found == list ? 0 : list ? 1 : -1;
    if (dn || di)
        for (size_t i = pos + (list ? 1 : 0); i < f->nnodes; i++)
            f->nodes[i].first = (uint32_t)((long long)f->nodes[i].first + dn);
    if (di)
        for (size_t k = first + new_n; k < f->nitems; k++)
            f->items[k].node = (uint32_t)((int)f->items[k].node + di);
    return 0;
}

int gpuop_analysis_update(struct gpuop_findings *f, const char *name, const struct gpuop_node *node,
                          const struct gpuop_pod *const *pods, size_t npods, long long now)
{
    struct gpuop_analysis_state *s = &f->inc;
    const int nops = f->noperands;
    if (!s->tally || !name || (node && (!node->name || strcmp(node->name, name))))
        return GPUOP_EINVAL;

    size_t pos;
    bool found = node_pos(f, name, &pos);
    size_t first = pos < f->nnodes ? f->nodes[pos].first : f->nitems;
    size_t old_n = found ? f->nodes[pos].nfindings : 0;
    long long old_change = found ? s->tally[pos].next_change : 0;
    if (found)
        gpuop_findings_count_node(f, pos, -1, true);
    for (size_t k = first; k < first + old_n; k++) { /* texts in the arena, made again */
        const struct gpuop_finding *x = &f->items[k];
        if ((x->reason == GPUOP_REASON_OS_LABELS_MISSING ||
             x->reason == GPUOP_REASON_DAEMONSET_ABSENT) &&
            x->ref)
            s->waste += strlen(x->ref) + 1;
    }

    /* its best pod per operand */
    const struct gpuop_pod *bp[GPUOP_OPERAND_MAX] = {0};
    if (node)
        gpuop_findings_best_pods(name, pods, npods, nops, bp);

    /* judged at the end of the items, then moved into its place */
    struct gpuop_node_result r = {0};
    struct gpuop_node_tally t = {0};
    struct gpuop_finding mine[NODE_FINDINGS_MAX];
    size_t tail = f->nitems, new_n = 0;
    long long keep_change = f->next_change;
    int rc = node ? gpuop_findings_judge_node(f, (uint32_t)pos, node, bp, now, &r, &t) : 0;
    new_n = f->nitems - tail;
    if (rc < 0 || new_n > NODE_FINDINGS_MAX)
        return rc < 0 ? rc : GPUOP_EINVAL;
    if (new_n) /* items may be NULL while the set has none */
        memcpy(mine, f->items + tail, new_n * sizeof(*mine));
    f->nitems = tail;
    f->next_change = keep_change;
    bool list = node && gpuop_findings_listed(&r);
    if (!list) {
        for (size_t k = 0; k < new_n; k++) /* push counted them */
            f->by_kind[mine[k].kind]--, f->by_reason[mine[k].reason]--;
        new_n = 0;
    }

    splice_items(f, first, old_n, mine, new_n);
    if ((rc = place_node(f, name, pos, found, list, first, (long long)new_n - (long long)old_n, &r,
                         &t)) < 0)
        return rc;
    if (list)
        gpuop_findings_count_node(f, pos, 1, false);

    if (old_change && old_change == f->next_change && (!list || t.next_change != old_change))
        f->next_change = earliest_change(f);
    else if (list && t.next_change)
        gpuop_findings_change_at(f, t.next_change);
    return 0;
}

void gpuop_analysis_age(struct gpuop_findings *f, long long now)
{
    for (size_t i = 0; f->inc.tally && i < f->nnodes; i++)
        f->nodes[i].idle_s = gpuop_findings_idle_since(f->inc.tally[i].idle_from, now);
}

bool gpuop_analysis_wants_full(const struct gpuop_findings *f)
{
    return f->inc.waste > WASTE_FLOOR_BYTES && f->inc.waste > f->names.total / 2;
}

/* ---- the comparison: an updated set against a full pass ---- */

#define SAME(what, x, y)                                                                           \
    do {                                                                                           \
        if ((long long)(x) != (long long)(y)) {                                                    \
            snprintf(why, size, "%s: %lld != %lld", what, (long long)(x), (long long)(y));         \
            return false;                                                                          \
        }                                                                                          \
    } while (0)

static const char *str(const char *s)
{
    return s ? s : "(null)";
}

#define SAME_STR(what, x, y)                                                                       \
    do {                                                                                           \
        if (strcmp(str(x), str(y))) {                                                              \
            snprintf(why, size, "%s: \"%s\" != \"%s\"", what, str(x), str(y));                     \
            return false;                                                                          \
        }                                                                                          \
    } while (0)

bool gpuop_findings_same(const struct gpuop_findings *a, const struct gpuop_findings *b, char *why,
                         size_t size)
{
    char ma[GPUOP_FINDING_MESSAGE_MAX], mb[GPUOP_FINDING_MESSAGE_MAX], what[96];
    SAME("nnodes", a->nnodes, b->nnodes);
    SAME("nitems", a->nitems, b->nitems);
    SAME("noperands", a->noperands, b->noperands);
    SAME("gpu_nodes", a->gpu_nodes, b->gpu_nodes);
    SAME("complete_nodes", a->complete_nodes, b->complete_nodes);
    SAME("violations", a->violations, b->violations);
    SAME("finding_nodes", a->finding_nodes, b->finding_nodes);
    SAME("progressing_nodes", a->progressing_nodes, b->progressing_nodes);
    SAME("advertised_gpus", a->advertised_gpus, b->advertised_gpus);
    SAME("stranded_pods", a->stranded_pods, b->stranded_pods);
    SAME("next_change", a->next_change, b->next_change);
    SAME("terminating_grace_s", a->terminating_grace_s, b->terminating_grace_s);
    for (int k = 0; k < GPUOP_KIND_COUNT; k++)
        SAME(gpuop_kind_name(k), a->by_kind[k], b->by_kind[k]);
    for (int k = 0; k < GPUOP_REASON_COUNT; k++)
        SAME(gpuop_reason_get(k)->name, a->by_reason[k], b->by_reason[k]);
    for (int o = 0; o < a->noperands; o++) {
        const struct gpuop_operand_result *x = &a->operands[o], *y = &b->operands[o];
        snprintf(what, sizeof(what), "operand %s", gpuop_operand_get(o)->name);
        SAME(what, x->enabled, y->enabled);
        SAME(what, x->ds_present, y->ds_present);
        SAME(what, x->expected_nodes, y->expected_nodes);
        SAME(what, x->running_nodes, y->running_nodes);
        SAME(what, x->desired, y->desired);
        SAME(what, x->ready, y->ready);
        SAME_STR(what, x->controller_says, y->controller_says);
        SAME_STR(what, x->daemonsets, y->daemonsets);
    }
    for (size_t i = 0; i < a->nnodes; i++) {
        const struct gpuop_node_result *x = &a->nodes[i], *y = &b->nodes[i];
        SAME_STR("node name", x->name, y->name);
        snprintf(what, sizeof(what), "node %s", y->name);
        SAME(what, x->gpu, y->gpu);
        SAME(what, x->progressing, y->progressing);
        SAME(what, x->idle_s, y->idle_s);
        SAME(what, x->upgrade, y->upgrade);
        SAME(what, x->host_provided, y->host_provided);
        SAME(what, x->preinstalled, y->preinstalled);
        SAME(what, x->first, y->first);
        SAME(what, x->nfindings, y->nfindings);
        SAME(what, memcmp(x->cell, y->cell, sizeof(x->cell)), 0);
        SAME(what, memcmp(&x->gpus, &y->gpus, sizeof(x->gpus)), 0);
    }
    for (size_t i = 0; i < a->nitems; i++) {
        const struct gpuop_finding *x = &a->items[i], *y = &b->items[i];
        snprintf(what, sizeof(what), "finding %zu (%s %s)", i, gpuop_finding_node(b, y),
                 gpuop_reason_get(y->reason)->name);
        SAME(what, x->node, y->node);
        SAME(what, x->operand, y->operand);
        SAME(what, x->kind, y->kind);
        SAME(what, x->reason, y->reason);
        SAME(what, x->prereq, y->prereq);
        SAME(what, gpuop_finding_since(x), gpuop_finding_since(y));
        gpuop_finding_detail(x, ma, sizeof(ma));
        gpuop_finding_detail(y, mb, sizeof(mb));
        SAME_STR(what, ma, mb);
        gpuop_finding_message(a, x, ma, sizeof(ma));
        gpuop_finding_message(b, y, mb, sizeof(mb));
        SAME_STR(what, ma, mb);
    }
    return true;
}
