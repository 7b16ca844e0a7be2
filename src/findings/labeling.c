/*
 * labeling.c - which labels gpuop writes on a node and which of those it
 * set someone changed (SPEC 4a; the rules are in labeling.h). Pure: the
 * compact node and the policy in, a plan or a yes/no out, so the same
 * decision is unit-tested without a cluster, taken by the controller's
 * labeler from its cache and taken again from a fresh GET before the PATCH.
 */
#include <stdio.h>
#include <string.h>

#include "gpuop/error.h"
#include "gpuop/labeling.h"
#include "gpuop/names.h"
#include "gpuop/operand.h"
#include "gpuop/ospool.h"
#include "gpuop/render.h"

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

/* ---- driver pools ---- */

int gpuop_labeling_pools_of(const struct gpuop_policy *p, struct gpuop_pool_facts *out)
{
    memset(out, 0, sizeof(*out));
    int d = gpuop_operand_by_key("driver");
    if (!p || d < 0 || !p->operands[d].enabled || p->operands[d].held)
        return 0;
    bool any = false;
    for (int k = 0; k < p->ndriver_pools && k < GPUOP_DRIVER_POOLS_MAX; k++) {
        const struct gpuop_driver_pool *dp = &p->driver_pools[k];
        snprintf(out->name[k], sizeof(out->name[k]), "%s", dp->name);
        if (json_object_size(dp->node_selector)) {
            if (!(out->selector[k] = json_deep_copy(dp->node_selector))) {
                out->n = k + 1;
                gpuop_labeling_pools_free(out);
                return GPUOP_ENOMEM;
            }
            any = true;
        }
        out->n = k + 1;
    }
    for (int k = 0; k < p->ndraining_pools && k < GPUOP_DRIVER_POOLS_MAX; k++)
        memcpy(out->draining[out->ndraining++], p->draining_pools[k], sizeof(out->draining[k]));
    out->on = any || out->ndraining > 0;
    return 0;
}

void gpuop_labeling_pools_free(struct gpuop_pool_facts *f)
{
    for (int k = 0; k < f->n; k++)
        json_decref(f->selector[k]);
    memset(f, 0, sizeof(*f));
}

bool gpuop_labeling_pools_same(const struct gpuop_pool_facts *a, const struct gpuop_pool_facts *b)
{
    if (a->on != b->on || a->n != b->n || a->ndraining != b->ndraining ||
        memcmp(a->draining, b->draining, sizeof(a->draining)))
        return false;
    for (int k = 0; k < a->n; k++)
        if (strcmp(a->name[k], b->name[k]) || !a->selector[k] != !b->selector[k] ||
            (a->selector[k] && !json_equal(a->selector[k], b->selector[k])))
            return false;
    return true;
}

unsigned gpuop_labeling_pool_match(const struct gpuop_pool_facts *f, json_t *labels)
{
    unsigned m = 0;
    for (int k = 0; f && f->on && k < f->n; k++) {
        const char *key;
        json_t *v;
        bool all = f->selector[k] != NULL;
        json_object_foreach(f->selector[k], key, v)
        {
            const char *have = json_string_value(json_object_get(labels, key));
            all = all && have && json_string_value(v) && !strcmp(have, json_string_value(v));
        }
        m |= all ? 1u << k : 0;
    }
    return m;
}

/* Pool k of f by name; -1 when none. */
static int pool_named(const struct gpuop_pool_facts *f, const char *name)
{
    for (int k = 0; name && k < f->n; k++)
        if (!strcmp(f->name[k], name))
            return k;
    return -1;
}

/* True when name is one of f's draining pools. */
static bool draining_named(const struct gpuop_pool_facts *f, const char *name)
{
    for (int k = 0; name && k < f->ndraining; k++)
        if (!strcmp(f->draining[k], name))
            return true;
    return false;
}

static bool same_str(const char *a, const char *b)
{
    return !strcmp(a ? a : "", b ? b : "");
}

/* The label change of out is held back while a driver pod runs on the
 * node: the wanted annotation names where it goes instead. Not for a label
 * naming no pool (stale): no DaemonSet selects its value, so removing it
 * moves nothing. */
static void hold_move(const struct gpuop_pool_node *now, bool stale, struct gpuop_pool_plan *out)
{
    const char *to = out->label ? (out->pool ? out->pool : GPUOP_DRIVER_POOL_DEFAULT) : NULL;
    if (to && now->driver && !stale) {
        out->label = false;
        out->wanted = to;
        out->want = !same_str(now->wanted, to);
    } else {
        out->want = now->wanted != NULL; /* where it is to be, or relabelled at once */
    }
}

/* The names of the pools of match in f into out->conflict; how many. */
static int matched(const struct gpuop_pool_facts *f, unsigned match, int *one,
                   struct gpuop_pool_plan *out)
{
    int count = 0;
    size_t len = 0;
    for (int k = 0; k < f->n; k++) {
        if (!((match >> k) & 1u))
            continue;
        int w = snprintf(out->conflict + len, sizeof(out->conflict) - len, "%s%s", count ? "," : "",
                         f->name[k]);
        len += w > 0 && (size_t)w < sizeof(out->conflict) - len ? (size_t)w : 0;
        count++;
        *one = k;
    }
    return count;
}

bool gpuop_labeling_pool_plan(const struct gpuop_pool_facts *f, unsigned match,
                              const struct gpuop_pool_node *now, struct gpuop_pool_plan *out)
{
    memset(out, 0, sizeof(*out));
    if (!f || !f->on)
        return false;
    const char *label_now = now->label, *conflict_now = now->conflict;
    int at = pool_named(f, label_now), one = -1;
    if (at >= 0 && !f->selector[at])
        match |= 1u << at; /* a pool labelled by hand: a person's choice */
    bool stale = label_now && *label_now && at < 0 && !draining_named(f, label_now);
    int count = matched(f, match, &one, out);
    if (count >= 2) { /* fails closed: the label stays, no move */
        out->note = !same_str(conflict_now, out->conflict);
        out->want = now->wanted != NULL;
        return out->note || out->want;
    }
    out->conflict[0] = '\0';
    out->note = conflict_now != NULL;
    if (count == 1) {
        out->pool = f->name[one];
        out->label = !same_str(label_now, out->pool);
        /* gpuop's selection already: recorded once (labels from before the record) */
        out->record = !out->label && f->selector[one] && !now->ours;
    } else {
        /* gpuop's label of a selector pool, or the label gpuop wrote of a
         * pool gone (draining or not): the default pool's now; a person's
         * is left (a draining pool's then keeps its DaemonSet) */
        bool gone = stale || draining_named(f, label_now);
        out->label = (at >= 0 && f->selector[at]) || (gone && now->ours);
        out->persons = gone && !now->ours;
    }
    hold_move(now, stale, out);
    out->record |= out->label;
    return out->label || out->note || out->want || out->record;
}

/* ---- draining pools ---- */

/* Node n's (borrowed) driver pool, when it names no pool of p but the
 * pool's DaemonSet for n's OS pool is among ds and not being deleted; else
 * NULL. *precompiled: that DaemonSet is the one for n's kernel (the pool
 * ran a precompiled driver), else the one for every kernel. */
static const char *draining_of(const struct gpuop_policy *p, const struct gpuop_node *n, int d,
                               const struct gpuop_ds *const *ds, size_t nds, bool *precompiled)
{
    const char *dp = n && n->gpu ? gpuop_node_os(n, GPUOP_OS_DRIVER_POOL) : NULL;
    struct gpuop_ospool pool;
    char name[2][GPUOP_RENDER_NAME_MAX];
    if (!dp || !*dp || strlen(dp) > GPUOP_DRIVER_POOL_NAME_MAX ||
        gpuop_policy_driver_pool(p, dp) >= 0 || gpuop_policy_pool_draining(p, dp) ||
        gpuop_ospool_of_node(n, &pool, NULL) < 0)
        return NULL;
    for (int k = 0; k < 2; k++) /* [0] compiled, [1] precompiled */
        if (gpuop_ospool_ds_name(gpuop_operand_get(d)->ds_name, &pool, k, name[k],
                                 sizeof(name[k])) < 0)
            return NULL;
    for (size_t i = 0; i < nds; i++)
        for (int k = 0; k < 2; k++)
            if (ds[i] && !ds[i]->deleting && !strcmp(ds[i]->name, name[k])) {
                *precompiled = k;
                return dp;
            }
    return NULL;
}

int gpuop_labeling_pools_draining(struct gpuop_policy *p, const struct gpuop_node *const *nodes,
                                  size_t n, const struct gpuop_ds *const *ds, size_t nds)
{
    int d = gpuop_operand_by_key("driver"), over = 0;
    p->ndraining_pools = 0;
    if (d < 0 || !p->operands[d].enabled || !gpuop_render_per_os(p, d))
        return 0;
    for (size_t i = 0; i < n; i++) {
        bool pre = false;
        const char *dp = draining_of(p, nodes[i], d, ds, nds, &pre);
        if (dp && p->ndraining_pools < GPUOP_DRIVER_POOLS_MAX) {
            p->draining_precompiled[p->ndraining_pools] = pre;
            memcpy(p->draining_pools[p->ndraining_pools++], dp, strlen(dp) + 1);
        } else
            over += dp != NULL;
    }
    return over;
}
