/*
 * analysis.c - findings from (policy, nodes, DaemonSets, pods), SPEC section 5.
 *
 * One pass:
 *   1. sort the nodes by name (pointer array, qsort);
 *   2. index node names in a small open-addressing hash (borrowed keys) and
 *      keep, per (node, operand), the most telling pod: running beats
 *      running-but-terminating beats alive beats terminating, newer beats
 *      older;
 *   3. walk the nodes once and, per operand in table order, derive expected /
 *      running / host-provided, the findings and the matrix cell.
 * Cost is O(nodes log nodes + nodes x operands + pods); nothing is
 * O(nodes x pods). Messages are built on demand by gpuop_finding_message()
 * (message.c) from the reasons table's templates; details, since and the
 * stranded view are detail.c's, the diff of two sets diff.c's. No reason
 * is worded here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuop/hash.h"
#include "gpuop/analysis.h"
#include "gpuop/labeling.h"
#include "gpuop/ospool.h"
#include "gpuop/render.h"
#include "gpuop/table.h"

#include "findings_int.h"

/* The tolerations the DaemonSet controller adds to every daemon pod
 * (AddOrUpdateDaemonPodTolerations); network-unavailable only with
 * hostNetwork. */
static const struct gpuop_toleration auto_tolerations[] = {
    {"node.kubernetes.io/not-ready", "Exists", NULL, "NoExecute"},
    {"node.kubernetes.io/unreachable", "Exists", NULL, "NoExecute"},
    {"node.kubernetes.io/disk-pressure", "Exists", NULL, "NoSchedule"},
    {"node.kubernetes.io/memory-pressure", "Exists", NULL, "NoSchedule"},
    {"node.kubernetes.io/pid-pressure", "Exists", NULL, "NoSchedule"},
    {"node.kubernetes.io/unschedulable", "Exists", NULL, "NoSchedule"},
};
static const struct gpuop_toleration hostnet_toleration = {"node.kubernetes.io/network-unavailable",
                                                           "Exists", NULL, "NoSchedule"};

/* ---- node name index ---- */

/* On the open-addressing core (base/table.h): keys[] are the slots,
 * pos[i] the position in the sorted array of the node at keys[i]. Built
 * once per pass at a load of at most 1/2, never deleted from. */
struct nindex {
    const char **keys; /* borrowed */
    uint32_t *pos;
    size_t cap;
};

#define NINDEX_LOAD_PCT 50

static bool name_match(const void *slot, uint64_t h, const void *name)
{
    return strcmp(*(const char *const *)slot, name) == 0;
}

static size_t nindex_find(const struct nindex *ix, const char *name)
{
    return gpuop_table_find(ix->keys, sizeof(*ix->keys), ix->cap, gpuop_hash_str(name), name_match,
                            name);
}

static int nindex_init(struct nindex *ix, const struct gpuop_node *const *sorted, size_t n)
{
    ix->cap = gpuop_table_cap(n, NINDEX_LOAD_PCT);
    ix->keys = calloc(ix->cap, sizeof(*ix->keys));
    ix->pos = calloc(ix->cap, sizeof(*ix->pos));
    if (!ix->keys || !ix->pos)
        return GPUOP_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        size_t h = nindex_find(ix, sorted[i]->name);
        if (!ix->keys[h]) { /* duplicate names: the first wins */
            ix->keys[h] = sorted[i]->name;
            ix->pos[h] = (uint32_t)i;
        }
    }
    return 0;
}

static long nindex_get(const struct nindex *ix, const char *name)
{
    size_t h = nindex_find(ix, name);
    return ix->keys[h] ? (long)ix->pos[h] : -1;
}

static void nindex_free(struct nindex *ix)
{
    free(ix->keys);
    free(ix->pos);
}

/* ---- small predicates ---- */

static bool streq(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

/* running(N,O) of SPEC 5: bound, Running, Ready. A pod being deleted that
 * still reports Running and Ready still runs: it serves, and a device
 * plugin in it still advertises GPUs. */
bool gpuop_pod_running(const struct gpuop_pod *p)
{
    return p && p->bound && p->gate == GPUOP_GATE_NONE && p->ready_since &&
           p->phase == GPUOP_PHASE_RUNNING;
}

/* 4 running, 3 running but being deleted, 2 alive, 1 terminating. */
static int pod_rank(const struct gpuop_pod *p)
{
    return gpuop_pod_running(p) ? (p->deleted ? 3 : 4) : p->deleted ? 1 : 2;
}

static bool pod_better(const struct gpuop_pod *a, const struct gpuop_pod *b)
{
    int ra = pod_rank(a), rb = pod_rank(b);
    if (ra != rb)
        return ra > rb;
    if (a->created != b->created)
        return a->created > b->created;
    return strcmp(a->name ? a->name : "", b->name ? b->name : "") < 0;
}

/* The policy's grace periods (SPEC 5), or their defaults without a policy. */
static long terminating_grace(const struct gpuop_policy *p)
{
    return p ? p->terminating_grace_s : GPUOP_TERMINATING_GRACE_DEFAULT;
}

static long advertise_grace(const struct gpuop_policy *p)
{
    return p ? p->advertise_grace_s : GPUOP_ADVERTISE_GRACE_DEFAULT;
}

static long event_grace(const struct gpuop_policy *p)
{
    return p ? p->event_grace_s : GPUOP_EVENT_GRACE_DEFAULT;
}

/* Remembers t as the next time a judgement made with `now` changes. */
static void change_at(struct gpuop_findings *f, long long t)
{
    if (!f->next_change || t < f->next_change)
        f->next_change = t;
}

/* A pod being deleted for longer than the grace period (a finalizer nobody
 * removes, a kubelet that stopped answering); else notes when it will be. */
static bool stuck_terminating(struct gpuop_findings *f, const struct gpuop_pod *p, long long now)
{
    if (!p || !p->deleted || p->deleted == GPUOP_TIME_UNREADABLE)
        return false;
    long long at = (long long)p->deleted + f->terminating_grace_s;
    if (now > at)
        return true;
    change_at(f, at + 1);
    return false;
}

/* A device plugin Running and Ready for longer than the advertise grace
 * (else notes when it will be); a Ready time that is unknown is never
 * judged. */
static bool ready_longer_than(struct gpuop_findings *f, const struct gpuop_pod *p, long grace,
                              long long now)
{
    if (!p || p->deleted || p->ready_since <= GPUOP_TIME_UNREADABLE)
        return false;
    long long at = (long long)p->ready_since + grace;
    if (now > at)
        return true;
    change_at(f, at + 1);
    return false;
}

/* Devices the scheduler can hand out on the node: nvidia.com/gpu and MIG slices. */
static unsigned advertised(const struct gpuop_node *n)
{
    return (unsigned)n->gpus.allocatable + n->gpus.mig_allocatable;
}

static bool excluding(const struct gpuop_taint *t)
{
    return streq(t->effect, "NoSchedule") || streq(t->effect, "NoExecute");
}

/* First NoSchedule/NoExecute taint of n that ds's pods do not tolerate. */
static const struct gpuop_taint *untolerated(const struct gpuop_node *n, const struct gpuop_ds *ds)
{
    for (size_t i = 0; i < n->ntaints; i++) {
        const struct gpuop_taint *t = &n->taints[i];
        bool ok = !excluding(t);
        for (size_t k = 0; !ok && k < sizeof(auto_tolerations) / sizeof(auto_tolerations[0]); k++)
            ok = gpuop_toleration_matches(&auto_tolerations[k], t);
        if (!ok && ds->host_network)
            ok = gpuop_toleration_matches(&hostnet_toleration, t);
        for (size_t k = 0; !ok && k < ds->ntolerations; k++)
            ok = gpuop_toleration_matches(&ds->tolerations[k], t);
        if (!ok)
            return t;
    }
    return NULL;
}

static int by_name(const void *a, const void *b)
{
    const struct gpuop_node *x = *(const struct gpuop_node *const *)a;
    const struct gpuop_node *y = *(const struct gpuop_node *const *)b;
    return strcmp(x->name, y->name);
}

/* ---- building the result ---- */

_Static_assert(sizeof(struct gpuop_finding) <= 16, "a finding is 16 bytes: a set holds 6 a node");
_Static_assert(sizeof(struct gpuop_node_result) <= 48,
               "a node's result is 48 bytes: one per GPU node");

static int push(struct gpuop_findings *f, size_t *cap, uint32_t node, int op, int reason,
                int prereq, long long since, const void *ref /* borrowed from the inputs */)
{
    if (f->nitems == *cap) {
        size_t ncap = *cap ? *cap * 2 : 64;
        struct gpuop_finding *n = realloc(f->items, ncap * sizeof(*n));
        if (!n)
            return GPUOP_ENOMEM;
        f->items = n;
        *cap = ncap;
    }
    const struct gpuop_reason_info *ri = gpuop_reason_get(reason);
    struct gpuop_finding *x = &f->items[f->nitems++];
    x->node = node;
    x->operand = (uint8_t)op;
    x->kind = (uint8_t)ri->kind;
    x->reason = (uint8_t)reason;
    x->prereq = (int8_t)prereq;
    if (reason == GPUOP_REASON_POD_NOT_CREATED)
        x->since = since;
    else
        x->ref = ref;
    f->by_kind[ri->kind]++;
    f->by_reason[reason]++;
    return 0;
}

static bool image_pull_reason(const char *r)
{
    static const char *const pulls[] = {"ImagePullBackOff",    "ErrImagePull",
                                        "InvalidImageName",    "ErrImageNeverPull",
                                        "RegistryUnavailable", "ErrImageInspect"};
    for (size_t i = 0; r && i < sizeof(pulls) / sizeof(pulls[0]); i++)
        if (strcmp(r, pulls[i]) == 0)
            return true;
    return false;
}

/* With spec.ordering: enforce, operand o's DaemonSet requires every enabled
 * prerequisite up its chain to be labelled "true" or "false" on the node:
 * the nearest one that is not, or -1. */
static int held_by(const struct gpuop_node *n, const struct gpuop_findings *f, int o)
{
    int q = gpuop_operand_prereq(o);
    for (int hops = 0; q >= 0 && hops < GPUOP_OPERAND_MAX; hops++, q = gpuop_operand_prereq(q))
        if (f->operands[q].enabled && n->deploy[q] != GPUOP_LABEL_TRUE &&
            n->deploy[q] != GPUOP_LABEL_FALSE)
            return q;
    return -1;
}

/* Diagnosis of an expected-but-not-running operand (SPEC 5, in order). */
static int missing(struct gpuop_findings *f, size_t *cap, uint32_t ni, int op,
                   const struct gpuop_node *n, const struct gpuop_ds *ds,
                   const struct gpuop_pod *pod, const char *ds_name /* in f->names, or NULL */,
                   int pool_ds /* ds's index among a per-OS operand's, else -1 */)
{
    if (!ds)
        return push(f, cap, ni, op, GPUOP_REASON_DAEMONSET_ABSENT, -1, 0, ds_name);
    const struct gpuop_taint *t = untolerated(n, ds);
    if (t)
        return push(f, cap, ni, op, GPUOP_REASON_TAINT_NOT_TOLERATED, pool_ds, 0, t);
    if (!pod) {
        long long since = ds->created > n->created ? ds->created : n->created;
        return push(f, cap, ni, op, GPUOP_REASON_POD_NOT_CREATED, pool_ds, since, NULL);
    }

    const char *wr = pod->waiting_reason;
    int reason;
    if (pod->deleted)
        reason = GPUOP_REASON_POD_TERMINATING;
    else if (streq(wr, "Unschedulable"))
        reason = GPUOP_REASON_POD_UNSCHEDULABLE;
    else if (image_pull_reason(wr))
        reason = GPUOP_REASON_IMAGE_PULL_FAILED;
    else if (streq(wr, "CrashLoopBackOff"))
        reason = GPUOP_REASON_CRASH_LOOP;
    else if (pod->gate != GPUOP_GATE_NONE) /* its init container waits, it does not fail */
        reason = GPUOP_REASON_WAITING_FOR_GATE;
    else if (!pod->bound || pod->phase == GPUOP_PHASE_NONE || pod->phase == GPUOP_PHASE_PENDING)
        reason = GPUOP_REASON_POD_PENDING;
    else if (pod->phase == GPUOP_PHASE_RUNNING)
        reason = GPUOP_REASON_POD_NOT_READY;
    else
        reason = GPUOP_REASON_POD_FAILED;

    return push(f, cap, ni, op, reason, -1, 0, pod);
}

/* ---- progress (a node mid-rollout: events.h, stranded.c) ---- */

/* A GPU Operator driver upgrade pause with no upgrade in progress on the
 * node (its upgrade-state label absent, done or failed). */
static bool paused_left_over(const struct gpuop_node *n, const char *v)
{
    return streq(v, GPUOP_LABEL_PAUSED_FOR_UPGRADE) &&
           (n->upgrade == GPUOP_UPGRADE_ABSENT || n->upgrade == GPUOP_UPGRADE_DONE ||
            n->upgrade == GPUOP_UPGRADE_FAILED);
}

/* The waiting reasons of containers on their way up; any other one of a
 * pod still Pending is a failure (CreateContainerConfigError ...). */
static bool starting_reason(const char *r)
{
    return !r || streq(r, "ContainerCreating") || streq(r, "PodInitializing");
}

/* What finding x (of a node whose best pods are bp) says of its node's
 * progress (reasons.h): the table's column, a step judged on its pod.
 * prog holds, per operand, what its Missing finding said (the findings
 * come in operand-table order, prerequisites first), -1 for none. Notes
 * when a step's judgement changes with time. */
static int finding_progress(struct gpuop_findings *f, const struct gpuop_finding *x,
                            const struct gpuop_pod *const *bp, const bool *running,
                            const bool *host, const int8_t *prog, long grace, long long now)
{
    int progress = gpuop_reason_get(x->reason)->progress;
    if (progress != GPUOP_PROGRESS_STEP)
        return progress;
    const struct gpuop_pod *pod = gpuop_findings_ref_pod(x);
    long long since = gpuop_finding_since(x); /* created, or the later of DaemonSet and node */
    if (x->reason == GPUOP_REASON_POD_NOT_CREATED && f->operands[x->operand].controller_says)
        return GPUOP_PROGRESS_NONE; /* the DaemonSet controller says why it creates none */
    if (pod && pod->restarts)
        return GPUOP_PROGRESS_FAILED; /* a container exited */
    if (x->reason == GPUOP_REASON_POD_PENDING && !starting_reason(pod->waiting_reason))
        return GPUOP_PROGRESS_FAILED;
    if (x->reason == GPUOP_REASON_POD_TERMINATING)
        since = pod->deleted;
    if (x->reason == GPUOP_REASON_WAITING_FOR_GATE) {
        /* Once what the gate waits for runs (or the host provides it), the
         * file follows within moments: a gate still shut a grace later is
         * stuck. Until then the prerequisite's own finding tells. */
        const struct gpuop_gate_info *g = gpuop_gate_get(pod->gate);
        int q = g ? gpuop_operand_by_name(g->operand) : -1;
        if (q >= 0 && !running[q] && !host[q] && prog[q] != GPUOP_PROGRESS_STEP)
            return GPUOP_PROGRESS_NONE; /* what would open it is not on its way */
        if (q >= 0 && (running[q] || host[q])) {
            long long open = pod->gate_since > GPUOP_TIME_UNREADABLE ? pod->gate_since : now;
            if (running[q] && bp[q]->ready_since > GPUOP_TIME_UNREADABLE &&
                bp[q]->ready_since > open)
                open = bp[q]->ready_since;
            if (now > open + grace)
                return GPUOP_PROGRESS_NONE;
            change_at(f, open + grace + 1);
        }
    }
    if (since > GPUOP_TIME_UNREADABLE) {
        if (now > since + GPUOP_PROGRESS_DEADLINE_S)
            return GPUOP_PROGRESS_NONE;
        change_at(f, since + GPUOP_PROGRESS_DEADLINE_S + 1);
    }
    return GPUOP_PROGRESS_STEP;
}

/* Judges node result r (its findings pushed): progressing when a finding
 * is a step and none a failure, or when one of its pods became Ready less
 * than the grace ago (the operands after it are arriving); else how long
 * ago one last did (idle_s). */
static void judge_progress(struct gpuop_findings *f, struct gpuop_node_result *r,
                           const struct gpuop_pod *const *bp, const bool *running, const bool *host,
                           long grace, long long now)
{
    bool step = false;
    int8_t prog[GPUOP_OPERAND_MAX];
    memset(prog, -1, sizeof(prog));
    for (uint32_t k = 0; k < r->nfindings; k++) {
        const struct gpuop_finding *x = &f->items[r->first + k];
        int pr = finding_progress(f, x, bp, running, host, prog, grace, now);
        if (pr == GPUOP_PROGRESS_FAILED)
            return; /* stalled now: idle 0 */
        if (x->kind == GPUOP_KIND_MISSING)
            prog[x->operand] = (int8_t)pr;
        step |= pr == GPUOP_PROGRESS_STEP;
    }
    long long last = 0; /* the latest Ready among its pods */
    for (int o = 0; o < f->noperands; o++)
        if (running[o] && bp[o]->ready_since > GPUOP_TIME_UNREADABLE && bp[o]->ready_since > last)
            last = bp[o]->ready_since;
    if (!step && last && now <= last + grace) {
        step = true; /* just became Ready: what follows it is on its way */
        change_at(f, last + grace + 1);
    }
    r->progressing = step;
    if (!step && last && now > last)
        r->idle_s = now - last >= UINT8_MAX ? UINT8_MAX : (uint8_t)(now - last);
}

/* Most per-OS DaemonSets the analysis looks at. */
#define OS_DS_MAX (2 * GPUOP_OSPOOL_MAX)

static int ds_by_name(const void *a, const void *b)
{
    return strcmp((*(const struct gpuop_ds *const *)a)->name,
                  (*(const struct gpuop_ds *const *)b)->name);
}

/* Operand o's per-OS DaemonSets (sorted by name) as the one operand:
 * present when any is, desired and ready summed, their names listed. */
static int pool_sums(struct gpuop_findings *f, int o, const struct gpuop_ds *const *osds, size_t n)
{
    struct gpuop_operand_result *r = &f->operands[o];
    char list[OS_DS_MAX * (GPUOP_RENDER_NAME_MAX + 1) + 1];
    size_t len = 0;
    list[0] = '\0';
    for (size_t k = 0; k < n; k++) {
        if (osds[k]->operand >= 0 ? osds[k]->operand != o : gpuop_operand_by_ds(osds[k]->name) != o)
            continue;
        r->ds_present = true;
        r->desired += osds[k]->desired;
        r->ready += osds[k]->ready;
        if (!r->controller_says)
            r->controller_says = osds[k]->controller_says;
        int w = snprintf(list + len, sizeof(list) - len, "%s%s", len ? "," : "", osds[k]->name);
        if (w > 0 && (size_t)w < sizeof(list) - len)
            len += (size_t)w;
    }
    r->daemonsets = gpuop_arena_strdup(&f->names, list);
    return r->daemonsets ? 0 : GPUOP_ENOMEM;
}

/* Missing of a per-OS operand on node n: the node's OS labels make no pool
 * (OsLabelsMissing, naming them), or its pool's DaemonSet is absent (named),
 * or the usual diagnosis against that DaemonSet. */
static int missing_per_os(struct gpuop_findings *f, size_t *cap, uint32_t ni, int o,
                          const struct gpuop_node *n, const struct gpuop_ds *const *osds,
                          size_t nosds, const struct gpuop_pod *pod)
{
    struct gpuop_ospool pool;
    unsigned lack = 0;
    char text[GPUOP_FINDING_MESSAGE_MAX], name[GPUOP_RENDER_NAME_MAX];
    int rc = gpuop_ospool_of_node(n, &pool, &lack);
    if (rc < 0) {
        if (lack)
            gpuop_ospool_missing_text(lack, text, sizeof(text));
        else
            snprintf(text, sizeof(text),
                     "OS label values that make an OS tag (%s=\"%.63s\", %s=\"%.63s\")",
                     GPUOP_LABEL_OS_ID, gpuop_node_os(n, GPUOP_OS_ID), GPUOP_LABEL_OS_VERSION,
                     gpuop_node_os(n, GPUOP_OS_VERSION));
        const char *d = gpuop_arena_strdup(&f->names, text);
        return d ? push(f, cap, ni, o, GPUOP_REASON_OS_LABELS_MISSING, -1, 0, d) : GPUOP_ENOMEM;
    }
    snprintf(name, sizeof(name), "%s-%s", gpuop_operand_get(o)->ds_name, pool.tag);
    for (size_t k = 0, at = 0; k < nosds; k++) {
        bool mine =
            (osds[k]->operand >= 0 ? osds[k]->operand : gpuop_operand_by_ds(osds[k]->name)) == o;
        if (mine && !strcmp(osds[k]->name, name)) /* at: its place in operands[o].daemonsets */
            return missing(f, cap, ni, o, n, osds[k], pod, NULL, at < INT8_MAX ? (int)at : -1);
        at += mine;
    }
    const char *d = gpuop_arena_strdup(&f->names, name);
    return d ? missing(f, cap, ni, o, n, NULL, pod, d, -1) : GPUOP_ENOMEM;
}

static void set_cell(uint8_t *cell, int v)
{
    *cell = (uint8_t)v;
}

int gpuop_analyze(const struct gpuop_policy *p, const struct gpuop_node *const *nodes,
                  size_t nnodes, const struct gpuop_ds *const *ds, size_t nds,
                  const struct gpuop_pod *const *pods, size_t npods, long long now,
                  struct gpuop_findings *out)
{
    const int nops = gpuop_operand_count();
    const struct gpuop_ds *dsof[GPUOP_OPERAND_MAX] = {0};
    const struct gpuop_node **sorted = NULL;
    const struct gpuop_pod **best = NULL;
    struct nindex ix = {0};
    size_t n = 0, cap = 0;
    int rc = GPUOP_ENOMEM;

    memset(out, 0, sizeof(*out));
    out->noperands = nops;
    out->terminating_grace_s = terminating_grace(p);
    const long adv_grace = advertise_grace(p);
    const long ev_grace = event_grace(p);
    const bool enforce = p && p->ordering == GPUOP_ORDERING_ENFORCE;
    /* the operands the scheduler's view is judged on, from the reasons table */
    const struct gpuop_reason_info *adv =
        gpuop_reason_get(GPUOP_REASON_GPUS_ADVERTISED_WITHOUT_TOOLKIT);
    const int dp = gpuop_operand_by_name(adv->operand), tk = gpuop_operand_by_name(adv->prereq);

    /* a per-OS operand's DaemonSets, one per OS pool (SPEC 4b) */
    bool per_os[GPUOP_OPERAND_MAX] = {0};
    const struct gpuop_ds *osds[OS_DS_MAX];
    size_t nosds = 0;
    for (int o = 0; o < nops; o++)
        per_os[o] = p && p->operands[o].enabled && gpuop_render_per_os(p, o);
    for (size_t i = 0; i < nds; i++) {
        if (!ds || !ds[i])
            continue;
        int op = ds[i]->operand >= 0 ? ds[i]->operand : gpuop_operand_by_ds(ds[i]->name);
        if (op < 0 || op >= nops)
            continue;
        if (per_os[op]) {
            if (strcmp(ds[i]->name, gpuop_operand_get(op)->ds_name) && nosds < OS_DS_MAX)
                osds[nosds++] = ds[i];
        } else if (!dsof[op] && (!gpuop_operand_get(op)->per_os ||
                                 !strcmp(ds[i]->name, gpuop_operand_get(op)->ds_name))) {
            dsof[op] = ds[i]; /* a per-OS row without pools: its one DaemonSet */
        }
    }
    qsort(osds, nosds, sizeof(*osds), ds_by_name);
    for (int o = 0; o < nops; o++) {
        out->operands[o].enabled = p ? p->operands[o].enabled : true;
        out->operands[o].ds_present = dsof[o] != NULL;
        out->operands[o].desired = dsof[o] ? dsof[o]->desired : 0;
        out->operands[o].ready = dsof[o] ? dsof[o]->ready : 0;
        out->operands[o].controller_says = dsof[o] ? dsof[o]->controller_says : NULL;
        if (per_os[o] && (rc = pool_sums(out, o, osds, nosds)) < 0)
            goto done;
    }
    rc = GPUOP_ENOMEM;

    sorted = malloc((nnodes ? nnodes : 1) * sizeof(*sorted));
    if (!sorted)
        goto done;
    for (size_t i = 0; i < nnodes; i++)
        if (nodes && nodes[i] && nodes[i]->name)
            sorted[n++] = nodes[i];
    qsort(sorted, n, sizeof(*sorted), by_name);
    if (nindex_init(&ix, sorted, n) < 0)
        goto done;
    best = calloc(n * (size_t)nops + 1, sizeof(*best));
    if (!best)
        goto done;
    for (size_t i = 0; i < npods; i++) {
        const struct gpuop_pod *pod = pods ? pods[i] : NULL;
        if (!pod || !pod->node || pod->operand < 0 || pod->operand >= nops)
            continue;
        long pos = nindex_get(&ix, pod->node);
        if (pos < 0)
            continue; /* node gone: nothing to say about it */
        const struct gpuop_pod **slot = &best[(size_t)pos * nops + pod->operand];
        if (!*slot || pod_better(pod, *slot))
            *slot = pod;
    }

    out->nodes = calloc(n ? n : 1, sizeof(*out->nodes));
    if (!out->nodes)
        goto done;
    for (size_t i = 0; i < n; i++) {
        const struct gpuop_node *nd = sorted[i];
        const struct gpuop_pod **bp = &best[i * nops];
        struct gpuop_node_result *r = &out->nodes[out->nnodes];
        uint32_t ni = (uint32_t)out->nnodes;
        bool optout = nd->operands_label == GPUOP_LABEL_FALSE;
        bool running[GPUOP_OPERAND_MAX], host[GPUOP_OPERAND_MAX];
        size_t first = out->nitems, nviol = 0;

        memset(r, 0, sizeof(*r));
        r->gpu = nd->gpu;
        r->gpus = nd->gpus;
        r->upgrade = nd->upgrade;
        for (int o = 0; o < nops; o++) {
            running[o] = gpuop_pod_running(bp[o]);
            host[o] = nd->gpu && (!out->operands[o].enabled || nd->deploy[o] == GPUOP_LABEL_FALSE);
            if (host[o])
                r->host_provided |= 1u << o;
            if (running[o])
                out->operands[o].running_nodes++;
        }
        for (int o = 0; o < nops; o++) {
            bool enabled = out->operands[o].enabled;
            int label = nd->deploy[o];
            bool expected = nd->gpu && enabled && label == GPUOP_LABEL_TRUE && !optout;
            int cell = !enabled && nd->gpu                     ? GPUOP_CELL_DISABLED
                       : label == GPUOP_LABEL_FALSE && nd->gpu ? GPUOP_CELL_HOST_PROVIDED
                                                               : GPUOP_CELL_NA;
            if (expected)
                out->operands[o].expected_nodes++;

            int blocker = enforce && dsof[o] ? held_by(nd, out, o) : -1;
            if (expected && !running[o] && blocker >= 0) {
                if ((rc = push(out, &cap, ni, o, GPUOP_REASON_HELD_BY_PREREQUISITE, blocker, 0,
                               gpuop_node_deploy_value(nd, blocker))) < 0)
                    goto done;
                cell = GPUOP_CELL_HELD;
            } else if (expected && !running[o] && per_os[o]) {
                if ((rc = missing_per_os(out, &cap, ni, o, nd, osds, nosds, bp[o])) < 0)
                    goto done;
                cell = GPUOP_CELL_MISSING;
            } else if (expected && !running[o]) {
                if ((rc = missing(out, &cap, ni, o, nd, dsof[o], bp[o], NULL, -1)) < 0)
                    goto done;
                cell = GPUOP_CELL_MISSING;
            } else if (nd->gpu && gpuop_labeling_changed(nd, o)) {
                /* a label gpuop set, changed by someone: said as such (SPEC 4a) */
                const char *now_v = label == GPUOP_LABEL_FALSE   ? "false"
                                    : label == GPUOP_LABEL_OTHER ? gpuop_node_deploy_value(nd, o)
                                                                 : NULL;
                if ((rc = push(out, &cap, ni, o, GPUOP_REASON_LABEL_CHANGED, -1, 0, now_v)) < 0)
                    goto done;
                if (cell == GPUOP_CELL_NA)
                    cell = GPUOP_CELL_NOT_SCHEDULED;
            } else if (nd->gpu && enabled && !optout && !running[o] &&
                       (label == GPUOP_LABEL_ABSENT || label == GPUOP_LABEL_OTHER)) {
                const char *v = gpuop_node_deploy_value(nd, o);
                int reason = label == GPUOP_LABEL_ABSENT    ? GPUOP_REASON_LABEL_ABSENT
                             : !v || !*v                    ? GPUOP_REASON_LABEL_EMPTY
                             : strncmp(v, "paused", 6) == 0 ? GPUOP_REASON_LABEL_PAUSED
                                                            : GPUOP_REASON_LABEL_INVALID;
                if (reason == GPUOP_REASON_LABEL_PAUSED && paused_left_over(nd, v))
                    reason = GPUOP_REASON_LABEL_PAUSED_LEFT_OVER;
                const char *d = label == GPUOP_LABEL_OTHER ? v : NULL;
                if ((rc = push(out, &cap, ni, o, reason, -1, 0, d)) < 0)
                    goto done;
                cell = GPUOP_CELL_NOT_SCHEDULED;
            }
            if (running[o]) {
                cell = GPUOP_CELL_RUNNING;
                if (o == dp && nd->gpu && !advertised(nd) &&
                    ready_longer_than(out, bp[o], adv_grace, now)) {
                    if ((rc = push(out, &cap, ni, o, GPUOP_REASON_DEVICE_PLUGIN_ADVERTISES_NOTHING,
                                   -1, 0, bp[o])) < 0)
                        goto done;
                    cell = GPUOP_CELL_MISSING;
                }
                bool stuck = stuck_terminating(out, bp[o], now);
                if (!expected || stuck) {
                    int reason = stuck      ? GPUOP_REASON_POD_STUCK_TERMINATING
                                 : !nd->gpu ? GPUOP_REASON_NOT_GPU_NODE
                                 : !enabled ? GPUOP_REASON_OPERAND_DISABLED
                                 : optout && label == GPUOP_LABEL_TRUE
                                     ? GPUOP_REASON_NODE_OPTED_OUT
                                     : GPUOP_REASON_LABEL_NOT_TRUE;
                    if ((rc = push(out, &cap, ni, o, reason, -1, 0, bp[o])) < 0)
                        goto done;
                    cell = GPUOP_CELL_UNEXPECTED;
                }
                /* Walk up past every satisfied prerequisite. */
                int q = gpuop_operand_prereq(o);
                for (int hops = 0; nd->gpu && q >= 0 && hops < nops; hops++) {
                    if (!running[q] && !host[q]) {
                        int reason = gpuop_reason_ordering(gpuop_operand_get(o)->name,
                                                           gpuop_operand_get(q)->name);
                        if ((rc = push(out, &cap, ni, o, reason, q, 0, bp[o])) < 0)
                            goto done;
                        cell = GPUOP_CELL_VIOLATION;
                        nviol++;
                        break;
                    }
                    q = gpuop_operand_prereq(q);
                }
            } else if (o == dp && tk >= 0 && nd->gpu && advertised(nd) && !running[tk] &&
                       !host[tk]) {
                /* no device plugin runs, but the scheduler still sees its GPUs */
                if ((rc = push(out, &cap, ni, o, GPUOP_REASON_GPUS_ADVERTISED_WITHOUT_TOOLKIT, tk,
                               0, NULL)) < 0)
                    goto done;
                cell = GPUOP_CELL_VIOLATION;
                nviol++;
            }
            set_cell(&r->cell[o], cell);
        }
        r->first = (uint32_t)first;
        r->nfindings = (uint32_t)(out->nitems - first);
        if (r->nfindings)
            judge_progress(out, r, bp, running, host, ev_grace, now);
        out->progressing_nodes += r->progressing;
        if (!nd->gpu && r->nfindings == 0)
            continue; /* non-GPU node with nothing to say: not listed */
        if (!(r->name = gpuop_arena_strdup(&out->names, nd->name)))
            goto done;
        out->nnodes++;
        if (r->nfindings)
            out->finding_nodes++;
        if (nd->gpu) {
            out->gpu_nodes++;
            out->advertised_gpus += nd->gpus.allocatable;
            if (!r->nfindings)
                out->complete_nodes++;
            if (nviol)
                out->violations++;
        }
    }
    rc = 0;
done:
    free(sorted);
    free(best);
    nindex_free(&ix);
    return rc;
}

void gpuop_findings_free(struct gpuop_findings *f)
{
    if (!f)
        return;
    gpuop_arena_free(&f->names);
    free(f->nodes);
    free(f->items);
    memset(f, 0, sizeof(*f));
}

int gpuop_findings_keep_keys(struct gpuop_findings *f)
{
    f->stranded = NULL; /* borrowed from the controller */
    f->nstranded = 0;
    for (size_t i = 0; i < f->nitems; i++)
        f->items[i].ref = NULL;
    for (int o = 0; o < f->noperands; o++)
        f->operands[o].controller_says = NULL; /* borrowed from the inputs */
    if (f->nitems) { /* exactly the findings' size (a set is built by growing) */
        struct gpuop_finding *items = realloc(f->items, f->nitems * sizeof(*items));
        if (items)
            f->items = items;
    }
    /* the nodes with findings, their names in a new arena, in name order */
    size_t n = 0;
    for (size_t i = 0; i < f->nnodes; i++)
        if (f->nodes[i].nfindings)
            n++;
    if (n == f->nnodes)
        return 0;
    struct gpuop_node_result *nodes = n ? malloc(n * sizeof(*nodes)) : NULL;
    if (n && !nodes)
        return GPUOP_ENOMEM;
    struct gpuop_arena names = GPUOP_ARENA_INIT;
    size_t k = 0;
    for (size_t i = 0; i < f->nnodes; i++) {
        const struct gpuop_node_result *r = &f->nodes[i];
        if (!r->nfindings)
            continue;
        nodes[k] = *r;
        if (!(nodes[k].name = gpuop_arena_strdup(&names, r->name))) {
            gpuop_arena_free(&names);
            free(nodes);
            return GPUOP_ENOMEM;
        }
        for (size_t j = r->first; j < r->first + r->nfindings; j++)
            f->items[j].node = (uint32_t)k;
        k++;
    }
    const char *dsl[GPUOP_OPERAND_MAX] = {0};
    for (int o = 0; o < f->noperands && o < GPUOP_OPERAND_MAX; o++)
        if (f->operands[o].daemonsets &&
            !(dsl[o] = gpuop_arena_strdup(&names, f->operands[o].daemonsets))) {
            gpuop_arena_free(&names);
            free(nodes);
            return GPUOP_ENOMEM;
        }
    for (int o = 0; o < f->noperands && o < GPUOP_OPERAND_MAX; o++)
        f->operands[o].daemonsets = dsl[o];
    gpuop_arena_free(&f->names);
    free(f->nodes);
    f->names = names;
    f->nodes = nodes;
    f->nnodes = n;
    return 0;
}
