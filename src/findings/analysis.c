/*
 * analysis.c - findings from (policy, nodes, DaemonSets, pods), SPEC section 5.
 *
 * One pass:
 *   1. sort the nodes by name (pointer array, qsort);
 *   2. index node names in a small open-addressing hash (borrowed keys) and
 *      keep, per (node, operand), the most telling pod: running beats
 *      running-but-terminating beats alive beats terminating, newer beats
 *      older;
 *   3. walk the nodes once (judge_node) and, per operand in table order,
 *      gather the cell's facts (bits) and read the decision tables: each
 *      table gives at most one finding, its first row whose facts hold,
 *      and may set the matrix cell (see "the decision per (node, operand)").
 * Cost is O(nodes log nodes + nodes x operands + pods); nothing is
 * O(nodes x pods). judge_node is also what records.c calls to judge
 * one node into its record. Messages are built on demand by gpuop_finding_message()
 * (message.c) from the reasons table's templates; details, since and the
 * stranded view are detail.c's. No reason is worded here.
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
#include "gpuop/sort.h"

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

bool gpuop_findings_pod_better(const struct gpuop_pod *a, const struct gpuop_pod *b)
{
    int ra = pod_rank(a), rb = pod_rank(b);
    if (ra != rb)
        return ra > rb;
    if (a->created != b->created)
        return a->created > b->created;
    return strcmp(a->name ? a->name : "", b->name ? b->name : "") < 0;
}

void gpuop_findings_best_pods(const char *name, const struct gpuop_pod *const *pods, size_t npods,
                              int nops, const struct gpuop_pod **bp)
{
    memset(bp, 0, (size_t)nops * sizeof(*bp));
    for (size_t i = 0; i < npods; i++) {
        const struct gpuop_pod *pod = pods ? pods[i] : NULL;
        if (!pod || !pod->node || pod->operand < 0 || pod->operand >= nops ||
            (name && strcmp(pod->node, name)))
            continue;
        if (!bp[pod->operand] || gpuop_findings_pod_better(pod, bp[pod->operand]))
            bp[pod->operand] = pod;
    }
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
void gpuop_findings_change_at(struct gpuop_findings *f, long long t)
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
    gpuop_findings_change_at(f, at + 1);
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
    gpuop_findings_change_at(f, at + 1);
    return false;
}

/* Devices the scheduler can hand out on the node: nvidia.com/gpu (or
 * nvidia.com/gpu.shared) and MIG slices. */
static unsigned advertised(const struct gpuop_node *n)
{
    return (unsigned)n->gpus.allocatable + n->gpus.mig_allocatable + n->shared.allocatable;
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
_Static_assert(GPUOP_KIND_COUNT <= 128, "a finding's kind is 7 bits");
_Static_assert(GPUOP_OPERAND_MAX <= 16, "host_provided and preinstalled: a bit per operand");
_Static_assert(sizeof(struct gpuop_node_result) <= 56,
               "a node's result is 56 bytes: one per GPU node");

/* The items grow by a third of what they hold: a pass over 5,000 nodes
 * mid-rollout holds about 33,000 findings (16 bytes each), where doubling
 * left up to half of 1 MiB unused, and a realloc that moves holds both. */
#define ITEMS_MIN        64
#define ITEMS_GROWTH_DIV 3

/* A full pass gives back what growth left unused beyond this share
 * (1/16) of its findings: room for the updates that follow. */
#define ITEMS_SLACK_DIV 16

static int push(struct gpuop_findings *f, uint32_t node, int op, int reason, int prereq,
                long long since, const void *ref /* borrowed from the inputs */)
{
    size_t *cap = &f->inc.items_cap;
    if (f->nitems == *cap) {
        size_t ncap = *cap ? *cap + *cap / ITEMS_GROWTH_DIV : ITEMS_MIN;
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
    x->owned = false; /* borrowed from the inputs until a record copies it */
    if (gpuop_reason_holds_since(reason))
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

/* o's direct prerequisite on node nd: an operand without a deploy label
 * of its own that comes before o where it is for the node (operand.h
 * follow rows: the MPS control daemon before the device plugin on a node
 * whose config is MPS), else the policy's. */
static int node_prereq(const struct gpuop_findings *f, const struct gpuop_node *nd, int o)
{
    for (int i = 0; i < f->noperands; i++) {
        if (nd->deploy[i] != GPUOP_LABEL_TRUE || !f->operands[i].enabled)
            continue;
        const struct gpuop_operand_follow *fw = gpuop_operand_follow(i);
        if (fw && gpuop_operand_by_name(fw->before) == o)
            return i;
    }
    return f->inc.prereq[o];
}

/* With spec.ordering: enforce, operand o's DaemonSet requires every enabled
 * prerequisite up its chain to be labelled "true" or host-provided
 * ("false", "pre-installed") on the node: the nearest one that is not, or
 * -1. */
static int held_by(const struct gpuop_node *n, const struct gpuop_findings *f, int o)
{
    int q = f->inc.prereq[o];
    for (int hops = 0; q >= 0 && hops < GPUOP_OPERAND_MAX; hops++, q = f->inc.prereq[q])
        if (f->operands[q].enabled && n->deploy[q] != GPUOP_LABEL_TRUE &&
            !gpuop_label_host_provided(n->deploy[q]))
            return q;
    return -1;
}

/* ---- progress (a node mid-rollout: events_int.h, stranded.c) ---- */

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

/* One node being judged: its node, best pod per operand, what runs and
 * what the host provides there. */
struct judge {
    const struct gpuop_node *nd;
    const struct gpuop_pod *const *bp;
    bool running[GPUOP_OPERAND_MAX], host[GPUOP_OPERAND_MAX];
};

/* What finding x (of a node whose best pods are bp) says of its node's
 * progress (reasons.h): the table's column, a step judged on its pod.
 * prog holds, per operand, what its Missing finding said (the findings
 * come in operand-table order, prerequisites first), -1 for none. Notes
 * when a step's judgement changes with time. */
static int finding_progress(struct gpuop_findings *f, const struct judge *j,
                            const struct gpuop_finding *x, const int8_t *prog, long grace,
                            long long now)
{
    const struct gpuop_node *nd = j->nd;
    const struct gpuop_pod *const *bp = j->bp;
    const bool *running = j->running, *host = j->host;
    int progress = gpuop_reason_get(x->reason)->progress;
    if (progress != GPUOP_PROGRESS_STEP)
        return progress;
    struct gpuop_pod_copy copy;
    const struct gpuop_pod *pod = gpuop_findings_ref_pod(x, &copy);
    long long since = gpuop_finding_since(x); /* created, or the later of DaemonSet and node */
    if (x->reason == GPUOP_REASON_POD_NOT_CREATED && f->operands[x->operand].controller_says)
        return GPUOP_PROGRESS_NONE; /* the DaemonSet controller says why it creates none */
    if (pod && pod->restarts)
        return GPUOP_PROGRESS_FAILED; /* a container exited */
    if (x->reason == GPUOP_REASON_POD_PENDING && !starting_reason(pod->waiting_reason))
        return GPUOP_PROGRESS_FAILED;
    if (x->reason == GPUOP_REASON_POD_TERMINATING)
        since = pod->deleted;
    /* a driver upgrade's pause is a step while gpuop's upgrade dates it
       (the since annotation of the node's state); another's pause is not */
    if (x->reason == GPUOP_REASON_LABEL_PAUSED) {
        if (nd->up.since <= GPUOP_TIME_UNREADABLE)
            return GPUOP_PROGRESS_NONE;
        since = nd->up.since;
    }
    if (x->reason == GPUOP_REASON_WAITING_FOR_GATE) {
        /* Once what the gate waits for runs (or the host provides it), the
         * file follows within moments: a gate still shut a grace later is
         * stuck. Until then the prerequisite's own finding tells. */
        const struct gpuop_gate_info *g = gpuop_gate_get(pod->gate);
        int q = g ? gpuop_operand_by_name(g->operand) : -1;
        if (q >= 0 && !running[q] && !host[q] && prog[q] != GPUOP_PROGRESS_STEP)
            return GPUOP_PROGRESS_NONE; /* what would open it is not on its way */
        if (q >= 0 && (running[q] || host[q])) {
            /* an unknown gate start counts as now: never stuck, and no
             * moment at which that changes (next_change stays) */
            bool known = pod->gate_since > GPUOP_TIME_UNREADABLE;
            long long open = known ? pod->gate_since : now;
            if (running[q] && bp[q]->ready_since > GPUOP_TIME_UNREADABLE &&
                bp[q]->ready_since > open) {
                open = bp[q]->ready_since;
                known = true;
            }
            if (now > open + grace)
                return GPUOP_PROGRESS_NONE;
            if (known)
                gpuop_findings_change_at(f, open + grace + 1);
        }
    }
    if (since > GPUOP_TIME_UNREADABLE) {
        if (now > since + GPUOP_PROGRESS_DEADLINE_S)
            return GPUOP_PROGRESS_NONE;
        gpuop_findings_change_at(f, since + GPUOP_PROGRESS_DEADLINE_S + 1);
    }
    return GPUOP_PROGRESS_STEP;
}

/* idle_s of a node idle since `last` (0: it is not), at now. */
uint8_t gpuop_findings_idle_since(long long last, long long now)
{
    if (!last || now <= last)
        return 0;
    return now - last >= UINT8_MAX ? UINT8_MAX : (uint8_t)(now - last);
}

/* Judges node result r (its findings pushed): progressing when a finding
 * is a step and none a failure, or when one of its pods became Ready less
 * than the grace ago (the operands after it are arriving); else how long
 * ago one last did (idle_s). Returns since when it is idle (0: it is
 * not), which gpuop_analysis_age reads. */
static long long judge_progress(struct gpuop_findings *f, struct gpuop_node_result *r,
                                const struct judge *j, long grace, long long now)
{
    const struct gpuop_pod *const *bp = j->bp;
    bool step = false;
    int8_t prog[GPUOP_OPERAND_MAX];
    memset(prog, -1, sizeof(prog));
    for (uint32_t k = 0; k < r->nfindings; k++) {
        const struct gpuop_finding *x = &r->findings[k];
        int pr = finding_progress(f, j, x, prog, grace, now);
        if (pr == GPUOP_PROGRESS_FAILED)
            return 0; /* stalled now: idle 0 */
        if (x->kind == GPUOP_KIND_MISSING)
            prog[x->operand] = (int8_t)pr;
        step |= pr == GPUOP_PROGRESS_STEP;
    }
    long long last = 0; /* the latest Ready among its pods */
    for (int o = 0; o < f->noperands; o++)
        if (j->running[o] && bp[o]->ready_since > GPUOP_TIME_UNREADABLE &&
            bp[o]->ready_since > last)
            last = bp[o]->ready_since;
    if (!step && last && now <= last + grace) {
        step = true; /* just became Ready: what follows it is on its way */
        gpuop_findings_change_at(f, last + grace + 1);
    }
    r->progressing = step;
    r->idle_s = gpuop_findings_idle_since(step ? 0 : last, now);
    return step ? 0 : last;
}

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
    char list[GPUOP_ANALYSIS_OS_DS_MAX * (GPUOP_RENDER_NAME_MAX + 1) + 1];
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
    /* none yet: no list, as an operand without pools has none (the kept
       and the full findings then agree whichever way the operand was
       judged) */
    r->daemonsets = len ? gpuop_arena_strdup(&f->names, list) : NULL;
    return len && !r->daemonsets ? GPUOP_ENOMEM : 0;
}

/* ---- the decision per (node, operand) ----
 *
 * First the facts of the cell (what holds of the node, its label, its
 * best pod, its DaemonSet), a bit each; then the tables below, read in
 * order: each gives at most one finding (its first row whose `need` facts
 * all hold and whose `deny` facts all do not) and may set the matrix cell.
 * A reader checks them against SPEC 5 row by row; nothing decides a
 * finding outside them. */

enum fact {
    F_GPU = 1u << 0,            /* a GPU node */
    F_ENABLED = 1u << 1,        /* the operand is enabled in the policy */
    F_OPTOUT = 1u << 2,         /* nvidia.com/gpu.deploy.operands=false */
    F_LABEL_TRUE = 1u << 3,     /* the operand's deploy label is "true" */
    F_LABEL_HOST = 1u << 4,     /* ... "false" or "pre-installed": host-provided */
    F_LABEL_ABSENT = 1u << 5,   /* ... absent */
    F_LABEL_OTHER = 1u << 6,    /* ... another value */
    F_LABEL_EMPTY = 1u << 7,    /* ... "" */
    F_LABEL_PAUSED = 1u << 8,   /* ... paused* */
    F_PAUSE_LEFT = 1u << 9,     /* ... the upgrade pause with no upgrade in progress */
    F_LABEL_CHANGED = 1u << 10, /* a label gpuop set, changed by someone (SPEC 4a) */
    F_EXPECTED = 1u << 11,      /* expected(N,O) */
    F_RUNNING = 1u << 12,       /* running(N,O) */
    F_HELD = 1u << 13,          /* ordering: enforce, a prerequisite's label keeps it off */
    /* Missing: why (only judged when expected, not running, not held) */
    F_OS_UNKNOWN = 1u << 14,     /* per-OS operand: the node's OS labels make no pool */
    F_KERNEL_UNKNOWN = 1u << 29, /* per-kernel operand: the node lacks the kernel label */
    F_DS_ABSENT = 1u << 15,      /* its DaemonSet (its pool's) is absent */
    F_TAINTED = 1u << 16,        /* a NoSchedule/NoExecute taint its pods do not tolerate */
    F_NO_POD = 1u << 17,         /* no pod of it on the node yet */
    F_DELETED = 1u << 18,        /* its pod is being deleted */
    F_UNSCHED = 1u << 19,        /* its pod waits: Unschedulable */
    F_PULL = 1u << 20,           /* ... an image pull failure */
    F_CRASH = 1u << 21,          /* ... CrashLoopBackOff */
    F_GATED = 1u << 22,          /* ... held in an init-container gate */
    F_PENDING = 1u << 23,        /* ... not bound, no phase or Pending */
    F_PHASE_RUN = 1u << 24,      /* ... phase Running (so not Ready) */
    /* only judged while it runs */
    F_ADV_NOTHING = 1u << 25, /* device plugin Ready past the grace, the node advertises none */
    F_STUCK = 1u << 26,       /* its pod terminating past the grace */
    F_PREREQ_OFF = 1u << 27,  /* a prerequisite up the chain neither runs nor is host-provided */
    /* only judged while it does not run */
    F_ADV_NO_TK = 1u << 28, /* device plugin: the node advertises GPUs, the toolkit is off */
    /* judged whatever runs */
    F_POOL_CONFLICT = 1u << 30, /* driver: two driver pools select the node (SPEC 4f) */
    /* judged whatever runs, for the device plugin (sharing.h) */
    F_CONFIG_MISSING = 1u << 31, /* the node's config label names no key of the ConfigMap */
};
/* DRA (the DRA driver's cell, judged whatever runs, while the caches watch
 * the node's ResourceSlices: gpuop_node.dra.watched); past an enum's int. */
#define F_DRA_TWICE (1ull << 32) /* slices with devices, and nvidia.com/gpu allocatable */
#define F_DRA_NO_DRIVER                                                                            \
    (1ull << 33) /* slices with devices, the driver neither runs nor                               \
                    is host-provided */
#define F_DRA_NONE_LATE                                                                            \
    (1ull << 34) /* its plugin Ready past the advertise grace, no slice                            \
                    has a device */
/* only judged while it runs, for the device plugin (sharing.h): Ready past
 * the advertise grace, GFD labels the node shared, and allocatable is not
 * GFD's count x replicas */
#define F_ALLOC_DIFFERS (1ull << 35)
/* DRA (the DRA driver's cell, whatever the slices): its running pod has
 * been Ready since before the node's driver pod was created, and that
 * driver pod has been Ready longer than DRA_STALE_GRACE_S (a driver reload
 * the plugin did not follow). The plugin's Ready time, not its creation:
 * on a fresh node its pod may be created first and wait for the driver in
 * its driver-validation init container, becoming Ready only once the
 * driver pod runs (not stale); a container restarted in place becomes
 * Ready again too. (On kwok nodes no init container waits: a plugin pod
 * made Ready before its node's driver pod was created is stale there.) */
#define F_DRA_STALE (1ull << 36)
/* How long the driver pod is Ready before a plugin older than it is
 * stale: the GPU Operator's driver manager and gpuop's upgrade pause the
 * plugin before the reload, so a plugin that is still older than a
 * driver Ready this long was not restarted with it. */
#define DRA_STALE_GRACE_S 30
/* DRA (the DRA driver's cell, while watched): a claim holding a GPU is
 * allocated here and reserved by a pod, and no DRA kubelet plugin runs
 * Ready (nor is host-provided), or none published a slice: the DRA form
 * of a stranded pod. Bit 40, apart from the bits the other DRA and sharing
 * work takes after 35. */
#define F_DRA_CLAIM_NO_PLUGIN (1ull << 40)
/* only judged while it runs, for the device plugin (sharing.h): the
 * node's config says another strategy or replicas than GFD's labels, for
 * longer than the advertise grace since the caches saw the key's config
 * or the node's sharing labels come (not_applied_since). Bit 44, apart
 * from the bits other work may take after 40. */
#define F_NOT_APPLIED (1ull << 44)

/* What a row's finding borrows (its ref) and holds in prereq. */
enum row_ref {
    R_NONE,
    R_POD,
    R_TAINT,
    R_LABEL,
    R_LABEL_NOW,
    R_BLOCKER_LABEL,
    R_DS_NAME,
    R_OS,
    R_POOLS,
    R_DRA,    /* the node's DRA fold, held in the finding (gpuop_finding_dra) */
    R_CONFIG, /* the node's device plugin config label's value */
    R_APPLIED /* since when its config is not applied, and the key (findings_int.h) */
};
enum row_pre { P_NONE, P_BLOCKER, P_POOL_DS, P_UNSATISFIED, P_TOOLKIT, P_DRIVER };

/* A row's reason: a reason, none (the row only sets the cell), the pair's
 * ordering reason, or the diagnosis table's. */
#define WHY_NONE     (-1)
#define WHY_ORDER    (-2)
#define WHY_DIAGNOSE (-3)
/* A row's cell: unchanged, or set only when it is still NA. */
#define CELL_KEEP  0xff
#define CELL_IF_NA 0xfe

struct row {
    uint64_t need, deny; /* enum fact, and the F_DRA_* and F_ALLOC_DIFFERS beyond its 32 bits */
    int why;             /* enum gpuop_reason, or WHY_* */
    uint8_t cell;        /* enum gpuop_cell, or CELL_* */
    uint8_t ref, pre;    /* enum row_ref, enum row_pre */
};

/* The matrix cell to start from. */
static const struct row start_cell[] = {
    {F_GPU, F_ENABLED, WHY_NONE, GPUOP_CELL_DISABLED, R_NONE, P_NONE},
    {F_GPU | F_LABEL_HOST, 0, WHY_NONE, GPUOP_CELL_HOST_PROVIDED, R_NONE, P_NONE},
    {0, 0, WHY_NONE, GPUOP_CELL_NA, R_NONE, P_NONE},
};

/* It does not run: held, missing, or its label says nothing (NotScheduled). */
static const struct row not_running[] = {
    {F_EXPECTED | F_HELD, F_RUNNING, GPUOP_REASON_HELD_BY_PREREQUISITE, GPUOP_CELL_HELD,
     R_BLOCKER_LABEL, P_BLOCKER},
    {F_EXPECTED, F_RUNNING, WHY_DIAGNOSE, GPUOP_CELL_MISSING, R_NONE, P_NONE},
    {F_GPU | F_LABEL_CHANGED, 0, GPUOP_REASON_LABEL_CHANGED, CELL_IF_NA, R_LABEL_NOW, P_NONE},
    {F_GPU | F_ENABLED | F_LABEL_ABSENT, F_OPTOUT | F_RUNNING, GPUOP_REASON_LABEL_ABSENT,
     GPUOP_CELL_NOT_SCHEDULED, R_NONE, P_NONE},
    {F_GPU | F_ENABLED | F_LABEL_EMPTY, F_OPTOUT | F_RUNNING, GPUOP_REASON_LABEL_EMPTY,
     GPUOP_CELL_NOT_SCHEDULED, R_LABEL, P_NONE},
    {F_GPU | F_ENABLED | F_PAUSE_LEFT, F_OPTOUT | F_RUNNING, GPUOP_REASON_LABEL_PAUSED_LEFT_OVER,
     GPUOP_CELL_NOT_SCHEDULED, R_LABEL, P_NONE},
    {F_GPU | F_ENABLED | F_LABEL_PAUSED, F_OPTOUT | F_RUNNING, GPUOP_REASON_LABEL_PAUSED,
     GPUOP_CELL_NOT_SCHEDULED, R_LABEL, P_NONE},
    {F_GPU | F_ENABLED | F_LABEL_OTHER, F_OPTOUT | F_RUNNING, GPUOP_REASON_LABEL_INVALID,
     GPUOP_CELL_NOT_SCHEDULED, R_LABEL, P_NONE},
};

/* Why an expected operand is missing, in the order an engineer checks
 * (SPEC 5): DaemonSet absent -> taint -> no pod yet -> pod not running. */
static const struct row diagnosis[] = {
    {F_OS_UNKNOWN, 0, GPUOP_REASON_OS_LABELS_MISSING, CELL_KEEP, R_OS, P_NONE},
    {F_KERNEL_UNKNOWN, 0, GPUOP_REASON_KERNEL_LABEL_MISSING, CELL_KEEP, R_NONE, P_NONE},
    {F_DS_ABSENT, 0, GPUOP_REASON_DAEMONSET_ABSENT, CELL_KEEP, R_DS_NAME, P_NONE},
    {F_TAINTED, 0, GPUOP_REASON_TAINT_NOT_TOLERATED, CELL_KEEP, R_TAINT, P_POOL_DS},
    {F_NO_POD, 0, GPUOP_REASON_POD_NOT_CREATED, CELL_KEEP, R_NONE, P_POOL_DS},
    {F_DELETED, 0, GPUOP_REASON_POD_TERMINATING, CELL_KEEP, R_POD, P_NONE},
    {F_UNSCHED, 0, GPUOP_REASON_POD_UNSCHEDULABLE, CELL_KEEP, R_POD, P_NONE},
    {F_PULL, 0, GPUOP_REASON_IMAGE_PULL_FAILED, CELL_KEEP, R_POD, P_NONE},
    /* its pod is there: config-manager-init fails on the key (sharing.h) */
    {F_CONFIG_MISSING, 0, GPUOP_REASON_SHARING_CONFIG_KEY_MISSING, CELL_KEEP, R_CONFIG, P_NONE},
    {F_CRASH, 0, GPUOP_REASON_CRASH_LOOP, CELL_KEEP, R_POD, P_NONE},
    {F_GATED, 0, GPUOP_REASON_WAITING_FOR_GATE, CELL_KEEP, R_POD, P_NONE},
    {F_PENDING, 0, GPUOP_REASON_POD_PENDING, CELL_KEEP, R_POD, P_NONE},
    {F_PHASE_RUN, 0, GPUOP_REASON_POD_NOT_READY, CELL_KEEP, R_POD, P_NONE},
    {0, 0, GPUOP_REASON_POD_FAILED, CELL_KEEP, R_POD, P_NONE},
};

static const struct row runs[] = {
    {F_RUNNING, 0, WHY_NONE, GPUOP_CELL_RUNNING, R_NONE, P_NONE},
};

/* What the scheduler sees of a running device plugin. */
static const struct row advertises[] = {
    /* it runs on a config it had (its config-manager sidecar fails on the new key):
       the key is also why it may advertise nothing */
    {F_RUNNING | F_CONFIG_MISSING, 0, GPUOP_REASON_SHARING_CONFIG_KEY_MISSING, GPUOP_CELL_MISSING,
     R_CONFIG, P_NONE},
    {F_RUNNING | F_ADV_NOTHING, 0, GPUOP_REASON_DEVICE_PLUGIN_ADVERTISES_NOTHING,
     GPUOP_CELL_MISSING, R_POD, P_NONE},
    {F_RUNNING | F_ALLOC_DIFFERS, 0, GPUOP_REASON_SHARED_ALLOCATABLE_DIFFERS, GPUOP_CELL_MISSING,
     R_POD, P_NONE},
    {F_RUNNING | F_DRA_NONE_LATE, 0, GPUOP_REASON_NO_SLICES_PUBLISHED, GPUOP_CELL_MISSING, R_POD,
     P_NONE},
};

/* It runs where it is not expected (or will not stop). */
static const struct row unexpected[] = {
    {F_RUNNING | F_STUCK, 0, GPUOP_REASON_POD_STUCK_TERMINATING, GPUOP_CELL_UNEXPECTED, R_POD,
     P_NONE},
    {F_RUNNING, F_EXPECTED | F_GPU, GPUOP_REASON_NOT_GPU_NODE, GPUOP_CELL_UNEXPECTED, R_POD,
     P_NONE},
    {F_RUNNING, F_EXPECTED | F_ENABLED, GPUOP_REASON_OPERAND_DISABLED, GPUOP_CELL_UNEXPECTED, R_POD,
     P_NONE},
    {F_RUNNING | F_OPTOUT | F_LABEL_TRUE, F_EXPECTED, GPUOP_REASON_NODE_OPTED_OUT,
     GPUOP_CELL_UNEXPECTED, R_POD, P_NONE},
    {F_RUNNING, F_EXPECTED, GPUOP_REASON_LABEL_NOT_TRUE, GPUOP_CELL_UNEXPECTED, R_POD, P_NONE},
    {F_DRA_TWICE, 0, GPUOP_REASON_GPUS_ADVERTISED_TWICE, CELL_KEEP, R_DRA, P_NONE},
};

/* Its prerequisites (walked up past every satisfied one). */
static const struct row ordering[] = {
    {F_DRA_NO_DRIVER, 0, GPUOP_REASON_SLICES_WITHOUT_DRIVER, GPUOP_CELL_VIOLATION, R_DRA, P_DRIVER},
    {F_RUNNING | F_GPU | F_PREREQ_OFF, 0, WHY_ORDER, GPUOP_CELL_VIOLATION, R_POD, P_UNSATISFIED},
    {F_ADV_NO_TK, F_RUNNING, GPUOP_REASON_GPUS_ADVERTISED_WITHOUT_TOOLKIT, GPUOP_CELL_VIOLATION,
     R_NONE, P_TOOLKIT},
    /* it runs, on the driver it found at start: the cell stays running */
    {F_RUNNING | F_DRA_STALE, 0, GPUOP_REASON_DRA_PLUGIN_STALE, CELL_KEEP, R_POD, P_DRIVER},
};

/* The driver pools that select the node when more than one does: it keeps
 * its pool label (labeling.h), so whatever runs is judged as above too. */
static const struct row pools[] = {
    {F_GPU | F_ENABLED | F_POOL_CONFLICT, 0, GPUOP_REASON_DRIVER_POOL_CONFLICT, CELL_KEEP, R_POOLS,
     P_NONE},
};

/* Claims allocated here that no DRA kubelet plugin can prepare. */
static const struct row claims[] = {
    {F_DRA_CLAIM_NO_PLUGIN, 0, GPUOP_REASON_CLAIM_WITHOUT_PLUGIN, GPUOP_CELL_VIOLATION, R_DRA,
     P_NONE},
};

/* A running device plugin that did not apply its node's config: it runs
 * (the cell stays), on the config it had. */
static const struct row applied[] = {
    {F_RUNNING | F_NOT_APPLIED, 0, GPUOP_REASON_SHARING_CONFIG_NOT_APPLIED, CELL_KEEP, R_APPLIED,
     P_NONE},
};

#define ROWS(t)                                                                                    \
    {                                                                                              \
        t, sizeof(t) / sizeof(t[0])                                                                \
    }
static const struct table {
    const struct row *rows;
    size_t n;
} tables[] = {ROWS(start_cell), ROWS(not_running), ROWS(runs),   ROWS(advertises), ROWS(unexpected),
              ROWS(ordering),   ROWS(pools),       ROWS(claims), ROWS(applied)};

static const struct row *first_match(const struct row *rows, size_t n, uint64_t facts)
{
    for (size_t i = 0; i < n; i++)
        if ((facts & rows[i].need) == rows[i].need && !(facts & rows[i].deny))
            return &rows[i];
    return NULL;
}

/* What a fact names beside its bit. */
struct facts {
    uint64_t has;
    int blocker, unsatisfied, pool_ds;
    const struct gpuop_taint *taint;
    const char *text; /* F_OS_UNKNOWN: the labels; F_DS_ABSENT: a pool's DaemonSet, or NULL */
    const struct gpuop_ds *ds;
};

/* Facts of the DaemonSet an expected operand needs: its one, or for a
 * per-OS operand its pool's (SPEC 4b); the text they name is in f's
 * arena. */
static int ds_facts(struct gpuop_findings *f, const struct gpuop_node *n, int o, struct facts *k)
{
    const struct gpuop_analysis_state *s = &f->inc;
    k->pool_ds = -1;
    if (!s->per_os[o]) {
        k->ds = s->dsof[o];
        k->has |= k->ds ? 0 : F_DS_ABSENT;
        return 0;
    }
    struct gpuop_ospool pool;
    unsigned lack = 0;
    char text[GPUOP_FINDING_MESSAGE_MAX], name[GPUOP_RENDER_NAME_MAX];
    if (gpuop_ospool_of_node(n, &pool, &lack) < 0) {
        if (lack)
            gpuop_ospool_missing_text(lack, text, sizeof(text));
        else
            snprintf(text, sizeof(text),
                     "OS label values that make an OS tag (%s=\"%.63s\", %s=\"%.63s\")",
                     GPUOP_LABEL_OS_ID, gpuop_node_os(n, GPUOP_OS_ID), GPUOP_LABEL_OS_VERSION,
                     gpuop_node_os(n, GPUOP_OS_VERSION));
        k->has |= F_OS_UNKNOWN;
        k->text = gpuop_arena_strdup(&f->names, text);
        return k->text ? 0 : GPUOP_ENOMEM;
    }
    int in_pool = -1; /* the pool the node's driver pool label names (else the default) */
    for (int j = 0; j < s->ndpools && in_pool < 0; j++)
        in_pool = !strcmp(s->dpools[j], pool.dpool) ? j : -1;
    if (in_pool < 0)
        pool.dpool[0] = '\0';
    bool by_kernel = in_pool < 0 ? s->by_kernel[o] : o == s->driver && s->dpool_by_kernel[in_pool];
    if (by_kernel && !pool.kernel[0]) {
        k->has |= F_KERNEL_UNKNOWN; /* the label is the message's own: no text */
        return 0;
    }
    gpuop_ospool_ds_name(gpuop_operand_get(o)->ds_name, &pool, by_kernel, name, sizeof(name));
    for (size_t i = 0, at = 0; i < s->nosds; i++) {
        const struct gpuop_ds *d = s->osds[i];
        bool mine = (d->operand >= 0 ? d->operand : gpuop_operand_by_ds(d->name)) == o;
        if (mine && !strcmp(d->name, name)) { /* at: its place in operands[o].daemonsets */
            k->ds = d;
            k->pool_ds = at < INT8_MAX ? (int)at : -1;
            return 0;
        }
        at += mine;
    }
    k->has |= F_DS_ABSENT;
    k->text = gpuop_arena_strdup(&f->names, name);
    return k->text ? 0 : GPUOP_ENOMEM;
}

/* Facts of the pod of an expected operand that does not run. */
static uint32_t pod_facts(const struct gpuop_pod *pod)
{
    const char *wr = pod->waiting_reason;
    return (pod->deleted ? F_DELETED : 0) | (streq(wr, "Unschedulable") ? F_UNSCHED : 0) |
           (image_pull_reason(wr) ? F_PULL : 0) | (streq(wr, "CrashLoopBackOff") ? F_CRASH : 0) |
           (pod->gate != GPUOP_GATE_NONE ? F_GATED : 0) |
           (!pod->bound || pod->phase == GPUOP_PHASE_NONE || pod->phase == GPUOP_PHASE_PENDING
                ? F_PENDING
                : 0) |
           (pod->phase == GPUOP_PHASE_RUNNING ? F_PHASE_RUN : 0);
}

/* The DRA facts of the DRA driver's cell (j's node): what its ResourceSlices
 * say, once the caches watch them (gpuop_node.dra.watched). */
static uint64_t dra_facts(struct gpuop_findings *f, const struct judge *j, long long now)
{
    const struct gpuop_analysis_state *s = &f->inc;
    const struct gpuop_node *nd = j->nd;
    const int o = s->dra, drv = s->driver;
    uint64_t h = 0;
    const struct gpuop_pod *plugin = j->bp[o], *driver = drv >= 0 ? j->bp[drv] : NULL;
    if (j->running[o] && drv >= 0 && j->running[drv] && plugin && driver &&
        plugin->gate == GPUOP_GATE_NONE && plugin->ready_since > GPUOP_TIME_UNREADABLE &&
        driver->created && plugin->ready_since < driver->created &&
        ready_longer_than(f, driver, DRA_STALE_GRACE_S, now))
        h |= F_DRA_STALE; /* whether or not the slices are watched */
    if (!nd->dra.watched)
        return h;
    if (nd->dra.devices && nd->gpus.allocatable)
        h |= F_DRA_TWICE;
    if (nd->dra.devices && drv >= 0 && !j->running[drv] && !j->host[drv])
        h |= F_DRA_NO_DRIVER;
    if (!nd->dra.devices && j->running[o] && nd->gpu &&
        ready_longer_than(f, j->bp[o], s->advertise_grace_s, now))
        h |= F_DRA_NONE_LATE;
    if (nd->dra.claims && (!(j->running[o] || j->host[o]) || !nd->dra.slices))
        h |= F_DRA_CLAIM_NO_PLUGIN;
    return h;
}

/* GPU node nd's config label names a key the device plugin's ConfigMap
 * lacks, as the setup read it (sharing.h): never while it was not read. */
static bool config_key_missing(const struct gpuop_analysis_state *s, const struct gpuop_node *nd)
{
    const char *cfg = gpuop_node_plugin_config(nd);
    return nd->gpu && cfg && gpuop_sharing_cm_known(&s->plugin_cm) &&
           (nd->config_long || !gpuop_sharing_cm_has(&s->plugin_cm, cfg));
}

/* The config GPU node nd picks (its label's key, else the policy's
 * default) as the ConfigMap says it, or NULL when not known (sharing.h). */
static const struct gpuop_sharing_conf *node_conf(const struct gpuop_analysis_state *s,
                                                  const struct gpuop_node *nd)
{
    const char *key = gpuop_node_plugin_config(nd);
    return nd->config_long ? NULL
                           : gpuop_sharing_cm_conf(&s->plugin_cm, key ? key : s->plugin_default);
}

/* Since when GPU node nd's config (its label's key, else the policy's
 * default) says another strategy or replicas than GFD's labels
 * (sharing.h; "none" with replicas 1 for a config without sharing): the
 * later of the caches' stamps of the key's config and of the node's
 * sharing labels, seconds since the epoch, *key the key's index. 0 when
 * they agree, or when something is not known: GFD's replicas label (no
 * GFD), the config, either stamp (gpuop check has none). */
static long long not_applied_since(const struct gpuop_analysis_state *s,
                                   const struct gpuop_node *nd, int *key)
{
    const char *cfg = gpuop_node_plugin_config(nd);
    int i = nd->gpu && !nd->config_long && nd->replicas && nd->sharing_since
                ? gpuop_sharing_cm_index(&s->plugin_cm, cfg ? cfg : s->plugin_default)
                : -1;
    if (i < 0 || i >= s->plugin_cm.nkeys || !s->plugin_cm.since[i])
        return 0;
    const struct gpuop_sharing_conf *c = &s->plugin_cm.conf[i];
    if (!(c->flags & GPUOP_SHARING_CONF_READ) ||
        (c->strategy == nd->sharing && c->replicas == nd->replicas))
        return 0;
    *key = i;
    return nd->sharing_since > s->plugin_cm.since[i] ? nd->sharing_since : s->plugin_cm.since[i];
}

/* Has the mismatch of not_applied_since lasted past grace? Else notes
 * when it will have. */
static bool not_applied(struct gpuop_findings *f, const struct gpuop_node *nd, long grace,
                        long long now)
{
    int key;
    long long from = not_applied_since(&f->inc, nd, &key);
    if (!from)
        return false;
    if (now > from + grace)
        return true;
    gpuop_findings_change_at(f, from + grace + 1);
    return false;
}

/* Does nd's config rename nvidia.com/gpu to nvidia.com/gpu.shared? Its
 * config says, when it is known; else what the node advertises does
 * (only nvidia.com/gpu.shared). *other: a known config's name is not
 * what the node advertises (none of it, some of the other). */
static bool renamed(const struct gpuop_analysis_state *s, const struct gpuop_node *nd, bool *other)
{
    const struct gpuop_sharing_conf *c = node_conf(s, nd);
    bool ren = c ? (c->flags & GPUOP_SHARING_CONF_RENAME) != 0
                 : !nd->gpus.allocatable && nd->shared.allocatable;
    unsigned want = ren ? nd->shared.allocatable : nd->gpus.allocatable;
    unsigned not_want = ren ? nd->gpus.allocatable : nd->shared.allocatable;
    *other = c && !(c->flags & GPUOP_SHARING_CONF_RENAME_OTHER) && !want && not_want;
    return ren;
}

/* GFD labels GPU node nd shared (time-slicing or MPS, its count and
 * replicas known) and what it advertises is not count x replicas of the
 * resource its config names: above 0 and another number, or none of it
 * and some of the other name (nvidia.com/gpu where renameByDefault says
 * nvidia.com/gpu.shared, or the reverse). 0 of both is
 * DevicePluginAdvertisesNothing's; a config renaming it to another name
 * is not judged. */
static bool shared_differs(const struct gpuop_analysis_state *s, const struct gpuop_node *nd)
{
    bool shared = nd->sharing == GPUOP_SHARING_TIME_SLICING || nd->sharing == GPUOP_SHARING_MPS;
    const struct gpuop_sharing_conf *c = node_conf(s, nd);
    bool other, ren = renamed(s, nd, &other);
    unsigned want = ren ? nd->shared.allocatable : nd->gpus.allocatable;
    if (!nd->gpu || !shared || !nd->gpu_count || nd->gpu_count >= GPUOP_SHARING_COUNT_MAX ||
        !nd->replicas || nd->replicas >= GPUOP_SHARING_REPLICAS_MAX ||
        (c && (c->flags & GPUOP_SHARING_CONF_RENAME_OTHER)))
        return false;
    return other || (want && want != (unsigned)nd->gpu_count * nd->replicas);
}

/* The facts of cell (j's node, o). Facts with a deadline (grace periods)
 * are judged only where a table reads them, so that next_change notes
 * only what could change a finding. */
static int cell_facts(struct gpuop_findings *f, const struct judge *j, int o, long long now,
                      struct facts *k)
{
    const struct gpuop_analysis_state *s = &f->inc;
    const struct gpuop_node *nd = j->nd;
    const struct gpuop_pod *pod = j->bp[o];
    const int label = nd->deploy[o];
    const char *v = label == GPUOP_LABEL_OTHER ? gpuop_node_deploy_value(nd, o) : NULL;
    uint64_t h = 0;

    *k = (struct facts){.blocker = -1, .unsatisfied = -1, .pool_ds = -1};
    h |= nd->gpu ? F_GPU : 0;
    h |= f->operands[o].enabled ? F_ENABLED : 0;
    h |= nd->operands_label == GPUOP_LABEL_FALSE ? F_OPTOUT : 0;
    h |= label == GPUOP_LABEL_TRUE          ? F_LABEL_TRUE
         : gpuop_label_host_provided(label) ? F_LABEL_HOST
         : label == GPUOP_LABEL_ABSENT      ? F_LABEL_ABSENT
         : label == GPUOP_LABEL_NOT_HERE    ? 0 /* not for this node: no label fact */
                                            : F_LABEL_OTHER;
    if (label == GPUOP_LABEL_OTHER)
        h |= !v || !*v                 ? F_LABEL_EMPTY
             : strncmp(v, "paused", 6) ? 0
             : paused_left_over(nd, v) ? F_PAUSE_LEFT | F_LABEL_PAUSED
                                       : F_LABEL_PAUSED;
    h |= nd->gpu && gpuop_labeling_changed(nd, o) ? F_LABEL_CHANGED : 0;
    h |= (h & (F_GPU | F_ENABLED | F_LABEL_TRUE | F_OPTOUT)) == (F_GPU | F_ENABLED | F_LABEL_TRUE)
             ? F_EXPECTED
             : 0;
    h |= j->running[o] ? F_RUNNING : 0;
    h |= o == s->dra ? dra_facts(f, j, now) : 0;
    if (s->ndpools && gpuop_node_os(nd, GPUOP_OS_POOL_CONFLICT) && o == s->driver)
        h |= F_POOL_CONFLICT; /* the labeller's annotation (labeling.h) */
    if (o == s->device_plugin && config_key_missing(s, nd))
        h |= F_CONFIG_MISSING;
    /* no device plugin runs, but the scheduler still sees its GPUs */
    if (!(h & F_RUNNING) && o == s->device_plugin && s->toolkit >= 0 && nd->gpu && advertised(nd) &&
        !j->running[s->toolkit] && !j->host[s->toolkit])
        h |= F_ADV_NO_TK;
    k->has = h;

    if ((h & (F_EXPECTED | F_RUNNING)) == F_EXPECTED) {
        k->blocker = s->enforce && s->dsof[o] ? held_by(nd, f, o) : -1;
        if (k->blocker >= 0) {
            k->has |= F_HELD;
            return 0;
        }
        int rc = ds_facts(f, nd, o, k);
        if (rc < 0 || (k->has & (F_OS_UNKNOWN | F_KERNEL_UNKNOWN | F_DS_ABSENT)))
            return rc;
        k->taint = untolerated(nd, k->ds);
        k->has |= k->taint ? F_TAINTED : !pod ? F_NO_POD : pod_facts(pod);
    } else if (h & F_RUNNING) {
        if (o == s->device_plugin && nd->gpu && !advertised(nd) &&
            ready_longer_than(f, pod, s->advertise_grace_s, now))
            k->has |= F_ADV_NOTHING;
        if (o == s->device_plugin && shared_differs(s, nd) &&
            ready_longer_than(f, pod, s->advertise_grace_s, now))
            k->has |= F_ALLOC_DIFFERS;
        if (o == s->device_plugin && not_applied(f, nd, s->advertise_grace_s, now))
            k->has |= F_NOT_APPLIED;
        if (stuck_terminating(f, pod, now))
            k->has |= F_STUCK;
        int q = node_prereq(f, nd, o);
        for (int hops = 0; nd->gpu && q >= 0 && hops < f->noperands; hops++) {
            if (!j->running[q] && !j->host[q]) {
                k->has |= F_PREREQ_OFF;
                k->unsatisfied = q;
                break;
            }
            q = s->prereq[q];
        }
    }
    return 0;
}

/* Pushes what row `why` finds of cell (j's node, o). */
static int find(struct gpuop_findings *f, uint32_t ni, int o, const struct judge *j,
                const struct facts *k, const struct row *why)
{
    const struct gpuop_node *nd = j->nd;
    const struct gpuop_ds *ds = k->ds;
    int reason = why->why == WHY_ORDER
                     ? gpuop_reason_ordering(gpuop_operand_get(o)->name,
                                             gpuop_operand_get(k->unsatisfied)->name)
                     : why->why;
    int pre = why->pre == P_BLOCKER       ? k->blocker
              : why->pre == P_POOL_DS     ? k->pool_ds
              : why->pre == P_UNSATISFIED ? k->unsatisfied
              : why->pre == P_TOOLKIT     ? f->inc.toolkit
              : why->pre == P_DRIVER      ? f->inc.driver
                                          : -1;
    const void *ref = NULL;
    long long since = 0;
    switch (why->ref) {
    case R_POD:
        ref = j->bp[o];
        break;
    case R_TAINT:
        ref = k->taint;
        break;
    case R_LABEL:
        ref = gpuop_node_deploy_value(nd, o);
        break;
    case R_LABEL_NOW:
        ref = nd->deploy[o] == GPUOP_LABEL_FALSE ? "false" : gpuop_node_deploy_value(nd, o);
        break;
    case R_BLOCKER_LABEL:
        ref = gpuop_node_deploy_value(nd, k->blocker);
        break;
    case R_DS_NAME:
    case R_OS:
        ref = k->text;
        break;
    case R_POOLS:
        ref = gpuop_node_os(nd, GPUOP_OS_POOL_CONFLICT);
        break;
    case R_CONFIG:
        ref = gpuop_node_plugin_config(nd);
        break;
    default:
        break;
    }
    if (reason == GPUOP_REASON_POD_NOT_CREATED)
        since = ds->created > nd->created ? ds->created : nd->created;
    if (why->ref == R_DRA)
        since = gpuop_finding_dra_pack(nd->dra.devices, nd->dra.slices);
    if (why->ref == R_APPLIED) {
        int key = -1;
        long long from = not_applied_since(&f->inc, nd, &key);
        since = gpuop_finding_applied_pack(from, key);
    }
    return push(f, ni, o, reason, pre, since, ref);
}

/* Judges cell (j's node, o): reads the tables in order. Returns the cell,
 * or a negative code. */
static int judge_cell(struct gpuop_findings *f, uint32_t ni, int o, const struct judge *j,
                      long long now, bool *violation)
{
    struct facts k;
    int rc = cell_facts(f, j, o, now, &k);
    int cell = GPUOP_CELL_NA;
    if (rc < 0)
        return rc;
    for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++) {
        const struct row *r = first_match(tables[t].rows, tables[t].n, k.has);
        if (!r)
            continue;
        const struct row *why =
            r->why == WHY_DIAGNOSE
                ? first_match(diagnosis, sizeof(diagnosis) / sizeof(*diagnosis), k.has)
                : r;
        if (why->why != WHY_NONE && (rc = find(f, ni, o, j, &k, why)) < 0)
            return rc;
        if (r->cell == CELL_IF_NA)
            cell = cell == GPUOP_CELL_NA ? GPUOP_CELL_NOT_SCHEDULED : cell;
        else if (r->cell != CELL_KEEP)
            cell = r->cell;
        *violation |= r->cell == GPUOP_CELL_VIOLATION;
    }
    return cell;
}

/* ---- one node ---- */

/* Judges node nd, its best pod per operand bp: pushes its findings (as
 * node index ni), fills *r but its name, and *t. */
int gpuop_findings_judge_node(struct gpuop_findings *f, uint32_t ni, const struct gpuop_node *nd,
                              const struct gpuop_pod *const *bp, long long now,
                              struct gpuop_node_result *r, struct gpuop_node_tally *t)
{
    struct judge j = {.nd = nd, .bp = bp};
    const int nops = f->noperands;
    const long long before = f->next_change;
    size_t first = f->nitems;

    memset(r, 0, sizeof(*r));
    memset(t, 0, sizeof(*t));
    f->next_change = 0; /* this node's, then folded in */
    r->gpu = nd->gpu;
    r->gpus = nd->gpus;
    if (nd->gpu) { /* the resource its config advertises (sharing.h) */
        bool other;
        r->renamed = renamed(&f->inc, nd, &other);
        r->other_name = other;
        if (r->renamed) {
            r->gpus.capacity = nd->shared.capacity;
            r->gpus.allocatable = nd->shared.allocatable;
        }
    }
    r->upgrade = nd->upgrade;
    r->sharing = nd->gpu ? nd->sharing : GPUOP_SHARING_NONE; /* GFD's labels (sharing.h) */
    r->replicas = nd->gpu ? nd->replicas : 0;
    r->gpu_count = nd->gpu ? nd->gpu_count : 0;
    for (int o = 0; o < nops; o++) {
        j.running[o] = gpuop_pod_running(bp[o]);
        j.host[o] =
            nd->gpu && (!f->operands[o].enabled || gpuop_label_host_provided(nd->deploy[o]));
        if (j.host[o])
            r->host_provided |= (uint16_t)(1u << o);
        if (j.host[o] && nd->deploy[o] == GPUOP_LABEL_PREINSTALLED)
            r->preinstalled |= (uint16_t)(1u << o);
        if (j.running[o])
            t->running |= (uint16_t)(1u << o);
        if (nd->gpu && f->operands[o].enabled && nd->deploy[o] == GPUOP_LABEL_TRUE &&
            nd->operands_label != GPUOP_LABEL_FALSE)
            t->expected |= (uint16_t)(1u << o);
    }
    int rc = 0;
    for (int o = 0; o < nops && rc >= 0; o++) {
        rc = judge_cell(f, ni, o, &j, now, &t->violation);
        if (rc >= 0)
            r->cell[o] = (uint8_t)rc;
    }
    r->findings = f->items ? f->items + first : NULL; /* until the items grow: gpuop_analyze
                                                         points them again */
    r->first = (uint32_t)first;
    r->nfindings = (uint32_t)(f->nitems - first);
    if (rc >= 0 && r->nfindings)
        t->idle_from = (uint32_t)judge_progress(f, r, &j, f->inc.event_grace_s, now);
    t->next_change = f->next_change;
    f->next_change = before;
    if (t->next_change)
        gpuop_findings_change_at(f, t->next_change);
    return rc < 0 ? rc : 0;
}

/* A node is listed when it is a GPU node or has findings. */
bool gpuop_findings_listed(const struct gpuop_node_result *r)
{
    return r->gpu || r->nfindings;
}

/* Adds (sign 1) or takes back (-1) what listed node r (its tally t)
 * feeds: the summary counters, the operands' expected and running nodes,
 * the stranded pods; with items (r's findings), its findings per kind and
 * reason too (push adds those). */
void gpuop_findings_count_node(struct gpuop_findings *f, const struct gpuop_node_result *r,
                               const struct gpuop_node_tally *t, const struct gpuop_finding *items,
                               int sign)
{
    for (uint32_t k = 0; items && k < r->nfindings; k++) {
        const struct gpuop_finding *x = &items[k];
        f->by_kind[x->kind] += (size_t)sign;
        f->by_reason[x->reason] += (size_t)sign;
    }
    for (int o = 0; o < f->noperands; o++) {
        f->operands[o].expected_nodes += (size_t)(sign * (int)((t->expected >> o) & 1));
        f->operands[o].running_nodes += (size_t)(sign * (int)((t->running >> o) & 1));
    }
    f->progressing_nodes += (size_t)(sign * r->progressing);
    f->finding_nodes += (size_t)(sign * (r->nfindings > 0));
    if (r->gpu) {
        f->gpu_nodes += (size_t)sign;
        f->advertised_gpus += (size_t)(sign * (long long)r->gpus.allocatable);
        f->complete_nodes += (size_t)(sign * (r->nfindings == 0));
        f->violations += (size_t)(sign * t->violation);
    }
    const struct gpuop_stranded *st = gpuop_findings_stranded(f, r);
    if (st)
        f->stranded_pods += (size_t)(sign * (long long)st->count);
}

/* ---- the full pass ---- */

/* The DaemonSet each operand is judged against (s->per_os set): its one,
 * or a per-OS operand's, one per OS pool (SPEC 4b), sorted by name. */
static void choose_ds(struct gpuop_analysis_state *s, int nops, const struct gpuop_ds *const *ds,
                      size_t nds)
{
    memset(s->dsof, 0, sizeof(s->dsof));
    s->nosds = 0;
    for (size_t i = 0; i < nds; i++) {
        if (!ds || !ds[i])
            continue;
        int op = ds[i]->operand >= 0 ? ds[i]->operand : gpuop_operand_by_ds(ds[i]->name);
        if (op < 0 || op >= nops)
            continue;
        if (s->per_os[op]) {
            if (strcmp(ds[i]->name, gpuop_operand_get(op)->ds_name) &&
                s->nosds < GPUOP_ANALYSIS_OS_DS_MAX)
                s->osds[s->nosds++] = ds[i];
        } else if (!s->dsof[op] && (!gpuop_operand_get(op)->per_os ||
                                    !strcmp(ds[i]->name, gpuop_operand_get(op)->ds_name))) {
            s->dsof[op] = ds[i]; /* a per-OS row without pools: its one DaemonSet */
        }
    }
    qsort(s->osds, s->nosds, sizeof(*s->osds), ds_by_name);
}

static uint64_t hash_str(uint64_t h, const char *str)
{
    return str ? gpuop_hash_bytes(h, str, strlen(str) + 1) : gpuop_hash_bytes(h, "", 1) + 1;
}

/* What a node's judgement reads of one DaemonSet: its name and operand,
 * creation, host network and tolerations (not its status counters). */
static uint64_t ds_judged(uint64_t h, const struct gpuop_ds *d)
{
    if (!d)
        return gpuop_hash_bytes(h, "-", 1);
    h = hash_str(h, d->name);
    h = gpuop_hash_bytes(h, &d->operand, sizeof(d->operand));
    h = gpuop_hash_bytes(h, &d->created, sizeof(d->created));
    h = gpuop_hash_bytes(h, &d->host_network, sizeof(d->host_network));
    for (size_t i = 0; i < d->ntolerations; i++) {
        const struct gpuop_toleration *t = &d->tolerations[i];
        h = hash_str(hash_str(hash_str(hash_str(h, t->key), t->op), t->value), t->effect);
    }
    return gpuop_hash_bytes(h, &d->ntolerations, sizeof(d->ntolerations));
}

/* The choice of s as the nodes read it. */
static uint64_t ds_fingerprint(const struct gpuop_analysis_state *s, int nops)
{
    uint64_t h = GPUOP_HASH_INIT;
    for (int o = 0; o < nops; o++)
        h = ds_judged(h, s->dsof[o]);
    for (size_t i = 0; i < s->nosds; i++)
        h = ds_judged(h, s->osds[i]);
    return gpuop_hash_mix(gpuop_hash_bytes(h, &s->nosds, sizeof(s->nosds)));
}

/* The operands' results the chosen DaemonSets make: present, desired,
 * ready, what their controller says, a per-OS operand's list. */
static int ds_results(struct gpuop_findings *f)
{
    const struct gpuop_analysis_state *s = &f->inc;
    for (int o = 0; o < f->noperands; o++) {
        const struct gpuop_ds *d = s->dsof[o];
        struct gpuop_operand_result *r = &f->operands[o];
        r->ds_present = d != NULL;
        r->desired = d ? d->desired : 0;
        r->ready = d ? d->ready : 0;
        r->controller_says = d ? d->controller_says : NULL;
        r->daemonsets = NULL;
        int rc;
        if (s->per_os[o] && (rc = pool_sums(f, o, s->osds, s->nosds)) < 0)
            return rc;
    }
    return 0;
}

/* The device plugin's sharing ConfigMap as p's holder read it, while p
 * names a device plugin config (sharing.h); else UNKNOWN. */
static void read_plugin_cm(struct gpuop_analysis_state *s, const struct gpuop_policy *p)
{
    int dp = s->device_plugin;
    const char *cfg = p && dp >= 0 ? p->operands[dp].config_name : NULL;
    if (cfg && *cfg && p->operands[dp].enabled) {
        s->plugin_cm = p->plugin_cm;
        snprintf(s->plugin_default, sizeof(s->plugin_default), "%s",
                 p->plugin_config_default ? p->plugin_config_default : "");
    } else {
        memset(&s->plugin_cm, 0, sizeof(s->plugin_cm));
        s->plugin_default[0] = '\0';
    }
}

/* What every node is judged against, into out (zeroed): the policy's
 * switches and graces, the prerequisite chain, and the DaemonSets chosen
 * per operand (a per-OS operand's, one per OS pool: SPEC 4b), with the
 * operands' results they make. */
static int read_setup(struct gpuop_findings *out, const struct gpuop_policy *p,
                      const struct gpuop_ds *const *ds, size_t nds)
{
    const int nops = gpuop_operand_count();
    struct gpuop_analysis_state *s = &out->inc;
    const struct gpuop_ospool dflt = {0}; /* a node of the default driver pool */

    out->noperands = nops;
    out->terminating_grace_s = terminating_grace(p);
    s->advertise_grace_s = advertise_grace(p);
    s->event_grace_s = event_grace(p);
    s->enforce = p && p->ordering == GPUOP_ORDERING_ENFORCE;
    /* the operands the scheduler's view is judged on, from the reasons table */
    const struct gpuop_reason_info *adv =
        gpuop_reason_get(GPUOP_REASON_GPUS_ADVERTISED_WITHOUT_TOOLKIT);
    s->device_plugin = gpuop_operand_by_name(adv->operand);
    s->driver = gpuop_operand_by_key("driver");
    s->dra = gpuop_operand_by_name("dra-driver");
    s->toolkit = gpuop_operand_by_name(adv->prereq);
    for (int o = 0; o < nops; o++) /* looked up by name: once a pass, not once a cell */
        s->prereq[o] = (int8_t)gpuop_policy_prereq(p, o); /* dcgm-exporter's: dcgm when on */

    /* a per-OS operand's DaemonSets, one per OS pool (SPEC 4b) */
    for (int o = 0; o < nops; o++) {
        s->per_os[o] = p && p->operands[o].enabled && gpuop_render_per_os(p, o);
        s->by_kernel[o] = s->per_os[o] && gpuop_render_pool_by_kernel(p, o, &dflt);
    }
    s->ndpools = p ? p->ndriver_pools + p->ndraining_pools : 0;
    memset(s->dpool_by_kernel, 0, sizeof(s->dpool_by_kernel));
    for (int k = 0; k < s->ndpools; k++) { /* a draining pool's nodes are judged on its DaemonSet */
        memcpy(s->dpools[k],
               k < p->ndriver_pools ? p->driver_pools[k].name
                                    : p->draining_pools[k - p->ndriver_pools],
               sizeof(s->dpools[k]));
        s->dpool_by_kernel[k] = gpuop_policy_pool_precompiled(p, s->dpools[k]);
    }
    choose_ds(s, nops, ds, nds);
    s->ds_fp = ds_fingerprint(s, nops);
    read_plugin_cm(s, p);
    for (int o = 0; o < nops; o++)
        out->operands[o].enabled = p ? p->operands[o].enabled : true;
    return ds_results(out);
}

/* What a node's judgement reads of the setup f holds: the policy's
 * switches and graces, the prerequisite chain, and the DaemonSets chosen
 * (ds_fp: not their status counters, nor what their controller says). */
static uint64_t setup_fp(const struct gpuop_findings *f)
{
    const struct gpuop_analysis_state *s = &f->inc;
    uint64_t h = GPUOP_HASH_INIT;
    h = gpuop_hash_bytes(h, &s->ds_fp, sizeof(s->ds_fp));
    h = gpuop_hash_bytes(h, s->per_os, sizeof(s->per_os));
    h = gpuop_hash_bytes(h, s->by_kernel, sizeof(s->by_kernel));
    h = gpuop_hash_bytes(h, s->dpools, sizeof(s->dpools));
    h = gpuop_hash_bytes(h, &s->ndpools, sizeof(s->ndpools));
    h = gpuop_hash_bytes(h, s->dpool_by_kernel, sizeof(s->dpool_by_kernel));
    h = gpuop_hash_bytes(h, &s->enforce, sizeof(s->enforce));
    h = gpuop_hash_bytes(h, &s->advertise_grace_s, sizeof(s->advertise_grace_s));
    h = gpuop_hash_bytes(h, &s->event_grace_s, sizeof(s->event_grace_s));
    h = gpuop_hash_bytes(h, &s->device_plugin, sizeof(s->device_plugin));
    h = gpuop_hash_bytes(h, &s->toolkit, sizeof(s->toolkit));
    h = gpuop_hash_bytes(h, s->prereq, sizeof(s->prereq));
    h = gpuop_hash_bytes(h, &f->terminating_grace_s, sizeof(f->terminating_grace_s));
    h = gpuop_hash_bytes(h, &s->plugin_cm.state, sizeof(s->plugin_cm.state));
    h = hash_str(h, s->plugin_cm.name);
    h = hash_str(h, s->plugin_cm.keys);
    h = hash_str(h, s->plugin_default);
    h = gpuop_hash_bytes(h, s->plugin_cm.conf, s->plugin_cm.nkeys * sizeof(s->plugin_cm.conf[0]));
    h = gpuop_hash_bytes(h, s->plugin_cm.since, s->plugin_cm.nkeys * sizeof(s->plugin_cm.since[0]));
    for (int o = 0; o < f->noperands; o++)
        h = gpuop_hash_bytes(h, &f->operands[o].enabled, sizeof(f->operands[o].enabled));
    return gpuop_hash_mix(h);
}

int gpuop_findings_setup(struct gpuop_findings *f, const struct gpuop_policy *p,
                         const struct gpuop_ds *const *ds, size_t nds, uint64_t *fp)
{
    int rc = read_setup(f, p, ds, nds);
    *fp = setup_fp(f);
    return rc;
}

/* Every pod of in (borrowed) looked up by its node once: a new array of
 * the best pod per (node of sorted, operand), n x operands, NULL when
 * out of memory. ix is the index of sorted the caller frees. */
static const struct gpuop_pod **best_pods(const struct gpuop_analysis_in *in,
                                          const struct gpuop_node **sorted, size_t n,
                                          struct nindex *ix)
{
    const int nops = gpuop_operand_count();
    if (nindex_init(ix, sorted, n) < 0)
        return NULL;
    const struct gpuop_pod **best = calloc(n * (size_t)nops + 1, sizeof(*best));
    if (!best)
        return NULL;
    for (size_t i = 0; i < in->npods; i++) {
        const struct gpuop_pod *pod = in->pods ? in->pods[i] : NULL;
        if (!pod || !pod->node || pod->operand < 0 || pod->operand >= nops)
            continue;
        long pos = nindex_get(ix, pod->node);
        if (pos < 0)
            continue; /* node gone: nothing to say about it */
        const struct gpuop_pod **slot = &best[(size_t)pos * nops + pod->operand];
        if (!*slot || gpuop_findings_pod_better(pod, *slot))
            *slot = pod;
    }
    return best;
}

/* The pass over in's nodes, each node's best pods from its pods. */
int gpuop_analyze(const struct gpuop_analysis_in *in, struct gpuop_findings *out)
{
    const struct gpuop_node *const *nodes = in->nodes;
    size_t nnodes = in->nnodes;
    long long now = in->now;
    const int nops = gpuop_operand_count();
    struct gpuop_analysis_state *s = &out->inc;
    const struct gpuop_node **sorted = NULL;
    const struct gpuop_pod **best = NULL;
    struct nindex ix = {0};
    size_t n = 0;
    int rc = GPUOP_ENOMEM;

    memset(out, 0, sizeof(*out));
    if ((rc = read_setup(out, in->policy, in->ds, in->nds)) < 0)
        goto done;
    rc = GPUOP_ENOMEM;

    sorted = malloc((nnodes ? nnodes : 1) * sizeof(*sorted));
    if (!sorted)
        goto done;
    for (size_t i = 0; i < nnodes; i++)
        if (nodes && nodes[i] && nodes[i]->name)
            sorted[n++] = nodes[i];
    gpuop_sort(sorted, n, sizeof(*sorted), by_name); /* the caches' are in order */
    if (!in->pods_of && !(best = best_pods(in, sorted, n, &ix)))
        goto done;

    s->nodes_cap = n ? n : 1;
    out->nodes = calloc(s->nodes_cap, sizeof(*out->nodes));
    s->tally = calloc(s->nodes_cap, sizeof(*s->tally));
    if (!out->nodes || !s->tally)
        goto done;
    for (size_t i = 0; i < n; i++) {
        size_t at = out->nnodes;
        struct gpuop_node_result *r = &out->nodes[at];
        const struct gpuop_pod *mine[GPUOP_ANALYSIS_NODE_PODS_MAX], *bp[GPUOP_OPERAND_MAX];
        const struct gpuop_pod *const *b = best ? &best[i * nops] : bp;
        if (!best) {
            size_t np = 0;
            if ((rc = in->pods_of(in->pods_arg, sorted[i]->name, mine, GPUOP_ANALYSIS_NODE_PODS_MAX,
                                  &np)) < 0)
                goto done;
            gpuop_findings_best_pods(NULL, mine, np, nops, bp); /* all the node's */
        }
        if ((rc = gpuop_findings_judge_node(out, (uint32_t)at, sorted[i], b, now, r,
                                            &s->tally[at])) < 0)
            goto done;
        rc = GPUOP_ENOMEM;
        if (!gpuop_findings_listed(r))
            continue; /* non-GPU node with nothing to say: not listed */
        if (!(r->name = gpuop_arena_strdup(&out->names, sorted[i]->name)))
            goto done;
        out->nnodes++;
        gpuop_findings_count_node(out, r, &s->tally[at], NULL, 1);
    }
    size_t want = out->nitems + out->nitems / ITEMS_SLACK_DIV + ITEMS_MIN;
    if (want < s->items_cap) { /* given back; a failed shrink keeps the larger array */
        struct gpuop_finding *items = realloc(out->items, want * sizeof(*items));
        if (items) {
            out->items = items;
            s->items_cap = want;
        }
    }
    for (size_t i = 0; out->items && i < out->nnodes; i++) /* where the items ended up */
        out->nodes[i].findings = out->items + out->nodes[i].first;
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
    free(f->inc.tally);
    memset(f, 0, sizeof(*f));
}
