/*
 * test_records.c - the node records against the full pass.
 *
 * A small random cluster (up to NODE_SLOTS nodes, POD_SLOTS pods) takes
 * EVENTS_PER_POLICY random events under each of several policies: nodes
 * added, removed, relabelled (deploy labels of every kind, operands=false,
 * a label gpuop set and someone changed, the upgrade state, the OS
 * labels), tainted and untainted, advertising GPUs or not; pods added,
 * removed, changing phase, Ready, waiting reason, gate and deletion time.
 * After each event the records are set up again (policy, DaemonSets: a
 * change that nodes read makes every node dirty, a DaemonSet controller's
 * words the nodes whose steps read them) and the dirty nodes judged, as
 * the controller does: the node the event touched, the nodes the setup
 * names, and the nodes whose judgement the clock moved (their
 * next_change). The records' view is compared with a full gpuop_analyze
 * of the same inputs by gpuop_findings_same (every sum, operand result,
 * node result, and per finding its key, prereq, since, detail and
 * message). An old node or pod is freed before the comparison, so ASan
 * sees a record that still borrowed it.
 *
 * The seed is fixed (GPUOP_TEST_SEED overrides it) and printed.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rnd.h"

#include "gpuop/analysis.h"
#include "gpuop/gate.h"

#define T0                1795986400LL
#define NODE_SLOTS        24
#define POD_SLOTS         160
#define EVENTS_PER_POLICY 3000
#define SEED_DEFAULT      20261202u

static uint64_t rng;

static uint32_t rnd(uint32_t n)
{
    return test_rnd(&rng, n);
}

static bool coin(uint32_t pct)
{
    return rnd(100) < pct;
}

/* ---- the cluster: nodes and pods, each one allocation ---- */

struct tnode {
    struct gpuop_node n;
    char name[16];
    struct gpuop_taint taints[2];
    char *other[GPUOP_OPERAND_MAX];
    char os[64];
};

struct tpod {
    struct gpuop_pod p;
    char name[32];
    char node[16];
};

static const char *const other_values[] = {"", "paused", GPUOP_LABEL_PAUSED_FOR_UPGRADE, "bogus"};
static const char *const waits[] = {NULL,
                                    "ImagePullBackOff",
                                    "CrashLoopBackOff",
                                    "Unschedulable",
                                    "ContainerCreating",
                                    "CreateContainerConfigError",
                                    "PodInitializing",
                                    "NoSuchReasonYet"}; /* a record keeps its string */
/* A waiting message as long as the model keeps one. */
static char long_message[GPUOP_MODEL_MESSAGE_MAX + 1];

struct world {
    struct gpuop_policy pol;
    struct tnode *nodes[NODE_SLOTS];
    struct tpod *pods[POD_SLOTS];
    struct gpuop_ds ds[GPUOP_OPERAND_MAX + 2];
    size_t nds;
    long long now;
    struct gpuop_stranded stranded[2];
};

static void node_name(int slot, char *buf, size_t size)
{
    snprintf(buf, size, "node-%02u", (unsigned)slot % 100u); /* NODE_SLOTS <= 100 */
}

static struct tnode *random_node(int slot)
{
    struct tnode *t = calloc(1, sizeof(*t));
    struct gpuop_node *n = &t->n;
    node_name(slot, t->name, sizeof(t->name));
    n->name = t->name;
    n->created = T0 + rnd(200);
    n->gpu = coin(85);
    n->operands_label = coin(8) ? GPUOP_LABEL_FALSE : coin(10) ? GPUOP_LABEL_TRUE : 0;
    for (int o = 0; o < gpuop_operand_count(); o++) {
        uint32_t r = rnd(100);
        n->deploy[o] = r < 70   ? GPUOP_LABEL_TRUE
                       : r < 80 ? GPUOP_LABEL_ABSENT
                       : r < 85 ? GPUOP_LABEL_FALSE
                       : r < 90 ? GPUOP_LABEL_PREINSTALLED
                                : GPUOP_LABEL_OTHER;
        if (n->deploy[o] == GPUOP_LABEL_OTHER) {
            t->other[o] = (char *)other_values[rnd(4)];
            n->deploy_other = t->other;
        }
        if (coin(10))
            n->labelled |= (uint16_t)(1u << o);
    }
    n->label_note = coin(30) ? GPUOP_NOTE_OK : GPUOP_NOTE_NONE;
    n->upgrade = (uint8_t)rnd(4);
    if (coin(25)) {
        t->taints[n->ntaints++] = (struct gpuop_taint){"dedicated", NULL, "NoSchedule"};
    }
    if (coin(25)) {
        t->taints[n->ntaints++] = (struct gpuop_taint){"nvidia.com/gpu", NULL, "NoSchedule"};
    }
    n->taints = t->taints;
    if (coin(80)) { /* NFD's OS labels: ubuntu 22.04 or 24.04, or only the ID */
        static const char os22[] = "ubuntu\0"
                                   "22.04\0"
                                   "22",
                          os24[] = "ubuntu\0"
                                   "24.04\0"
                                   "24";
        bool two = coin(50);
        memcpy(t->os, two ? os22 : os24, sizeof(os22));
        n->os = t->os;
        n->os_labels = coin(85) ? GPUOP_OS_HAS(GPUOP_OS_ID) | GPUOP_OS_HAS(GPUOP_OS_VERSION) |
                                      GPUOP_OS_HAS(GPUOP_OS_MAJOR)
                                : GPUOP_OS_HAS(GPUOP_OS_ID);
    }
    uint32_t g = rnd(4);
    n->gpus = (struct gpuop_gpu_counts){(uint16_t)(g * 2), (uint16_t)(g ? g * 2 - coin(20) : 0), 0,
                                        (uint16_t)(coin(5) ? 7 : 0)};
    return t;
}

static struct tpod *random_pod(int slot, int node_slot)
{
    struct tpod *t = calloc(1, sizeof(*t));
    struct gpuop_pod *p = &t->p;
    int o = (int)rnd((uint32_t)gpuop_operand_count());
    /* mostly named as its DaemonSet names it (a record keeps the rest) */
    snprintf(t->name, sizeof(t->name), "%s-%d",
             coin(80) ? gpuop_operand_get(o)->ds_name : gpuop_operand_get(o)->name, slot);
    node_name(node_slot, t->node, sizeof(t->node));
    p->name = t->name;
    p->node = t->node;
    p->operand = (int8_t)o;
    p->created = (uint32_t)(T0 + rnd(3000));
    p->bound = coin(92);
    uint32_t r = rnd(100);
    p->phase = r < 65 ? GPUOP_PHASE_RUNNING : r < 85 ? GPUOP_PHASE_PENDING : (uint8_t)rnd(6);
    p->gate = coin(10) ? (uint8_t)(1 + rnd(GPUOP_GATE_COUNT - 1)) : GPUOP_GATE_NONE;
    if (p->gate != GPUOP_GATE_NONE)
        p->gate_since = coin(10) ? GPUOP_TIME_UNREADABLE : (uint32_t)(T0 + rnd(4000));
    else if (p->phase == GPUOP_PHASE_RUNNING && coin(80))
        p->ready_since = coin(5) ? GPUOP_TIME_UNREADABLE : (uint32_t)(T0 + rnd(4000));
    p->waiting_reason = (char *)waits[rnd(sizeof(waits) / sizeof(waits[0]))];
    if (p->phase == GPUOP_PHASE_RUNNING && p->ready_since && coin(80))
        p->waiting_reason = NULL;
    if (!long_message[0])
        memset(long_message, 'm', GPUOP_MODEL_MESSAGE_MAX);
    p->waiting_message = !p->waiting_reason ? NULL
                         : coin(50)         ? ""
                         : coin(80)         ? "back-off 5m0s"
                                            : long_message;
    p->restarts = coin(20) ? (uint16_t)rnd(4) : 0;
    if (coin(10))
        p->deleted = (uint32_t)(T0 + rnd(4000));
    return t;
}

static void add_ds(struct world *w, int o, const char *name)
{
    static struct gpuop_toleration tol = {"nvidia.com/gpu", "Exists", NULL, "NoSchedule"};
    struct gpuop_ds *d = &w->ds[w->nds++];
    d->name = (char *)name;
    d->operand = o;
    d->created = T0 + 100;
    d->desired = 3;
    d->ready = 2;
    d->tolerations = &tol;
    d->ntolerations = 1;
}

/* The policies the events run under. */
enum { POL_DEFAULT, POL_SOME_OFF, POL_ENFORCE, POL_PER_OS, POLICIES };

static void world_init(struct world *w, int kind)
{
    static char per_os_name[64];
    memset(w, 0, sizeof(*w));
    w->now = T0 + 1000;
    for (int o = 0; o < gpuop_operand_count(); o++)
        w->pol.operands[o].enabled = true;
    w->pol.generation = 1;
    w->pol.terminating_grace_s = kind == POL_ENFORCE ? 60 : GPUOP_TERMINATING_GRACE_DEFAULT;
    w->pol.advertise_grace_s = kind == POL_SOME_OFF ? 30 : GPUOP_ADVERTISE_GRACE_DEFAULT;
    w->pol.event_grace_s = kind == POL_PER_OS ? 20 : GPUOP_EVENT_GRACE_DEFAULT;
    if (kind == POL_SOME_OFF) {
        w->pol.operands[gpuop_operand_by_name("dcgm-exporter")].enabled = false;
        w->pol.operands[gpuop_operand_by_name("container-toolkit")].enabled = false;
    }
    if (kind == POL_ENFORCE)
        w->pol.ordering = GPUOP_ORDERING_ENFORCE;
    int driver = gpuop_operand_by_name("driver");
    if (kind == POL_PER_OS)
        w->pol.operands[driver].os_tag = true;
    for (int o = 0; o < gpuop_operand_count(); o++) {
        if (o == 4 && kind == POL_DEFAULT)
            continue; /* one DaemonSet absent */
        if (o == driver && kind == POL_PER_OS)
            continue;
        add_ds(w, o, gpuop_operand_get(o)->ds_name);
    }
    if (kind == POL_PER_OS) { /* the 22.04 pool has its DaemonSet, 24.04 not */
        struct gpuop_ospool pool;
        assert_int_equal(gpuop_ospool_make("ubuntu", "22.04", &pool), 0);
        snprintf(per_os_name, sizeof(per_os_name), "%s-%s", gpuop_operand_get(driver)->ds_name,
                 pool.tag);
        add_ds(w, driver, per_os_name);
    }
    /* GPU pods stranded on two nodes (shown only where a violation is) */
    static const char *names[] = {"ns/a", "ns/b"};
    w->stranded[0] = (struct gpuop_stranded){"node-03", 5, 2, {names[0], names[1]}, 0};
    w->stranded[1] = (struct gpuop_stranded){"node-07", 1, 1, {names[0]}, 0};
    for (int i = 0; i < NODE_SLOTS; i++)
        if (coin(70))
            w->nodes[i] = random_node(i);
    for (int i = 0; i < POD_SLOTS; i++)
        if (coin(60))
            w->pods[i] = random_pod(i, (int)rnd(NODE_SLOTS));
}

static void world_free(struct world *w)
{
    for (int i = 0; i < NODE_SLOTS; i++)
        free(w->nodes[i]);
    for (int i = 0; i < POD_SLOTS; i++)
        free(w->pods[i]);
}

/* gpuop_analysis_pods_fn over the world: the pods of node, as the
 * caches' index gives them. */
static int world_pods_of(void *arg, const char *node, const struct gpuop_pod **buf, size_t max,
                         size_t *n)
{
    struct world *w = arg;
    *n = 0;
    for (int i = 0; i < POD_SLOTS; i++) {
        if (!w->pods[i] || !w->pods[i]->p.node || strcmp(w->pods[i]->p.node, node))
            continue;
        if (*n == max)
            return GPUOP_ETOOBIG;
        buf[(*n)++] = &w->pods[i]->p;
    }
    return 0;
}

/* A full pass over the world: from the array of every pod, or with
 * by_node each node's pods from world_pods_of (the controller's). */
static int full_pass(struct world *w, struct gpuop_findings *f, bool by_node)
{
    const struct gpuop_node *np[NODE_SLOTS];
    const struct gpuop_pod *pp[POD_SLOTS];
    const struct gpuop_ds *dp[GPUOP_OPERAND_MAX + 2];
    size_t nn = 0, npods = 0;
    for (int i = 0; i < NODE_SLOTS; i++)
        if (w->nodes[i])
            np[nn++] = &w->nodes[i]->n;
    for (int i = 0; i < POD_SLOTS; i++)
        if (w->pods[i])
            pp[npods++] = &w->pods[i]->p;
    for (size_t i = 0; i < w->nds; i++)
        dp[i] = &w->ds[i];
    int rc = by_node ? gpuop_analyze(&(struct gpuop_analysis_in){.policy = &w->pol,
                                                                 .nodes = np,
                                                                 .nnodes = nn,
                                                                 .ds = dp,
                                                                 .nds = w->nds,
                                                                 .pods_of = world_pods_of,
                                                                 .pods_arg = w,
                                                                 .now = w->now},
                                     f)
                     : gpuop_analyze(&(struct gpuop_analysis_in){.policy = &w->pol,
                                                                 .nodes = np,
                                                                 .nnodes = nn,
                                                                 .ds = dp,
                                                                 .nds = w->nds,
                                                                 .pods = pp,
                                                                 .npods = npods,
                                                                 .now = w->now},
                                     f);
    if (rc == 0)
        gpuop_findings_set_stranded(f, w->stranded, 2);
    return rc;
}

static int full(struct world *w, struct gpuop_findings *f)
{
    return full_pass(w, f, false);
}

static int full_by_node(struct world *w, struct gpuop_findings *f)
{
    return full_pass(w, f, true);
}

/* Node slot judged into its record, with every pod of the world. */
static int judge(struct world *w, struct gpuop_records *rec, int slot)
{
    const struct gpuop_pod *pp[POD_SLOTS];
    size_t npods = 0;
    char name[16];
    node_name(slot, name, sizeof(name));
    for (int i = 0; i < POD_SLOTS; i++)
        if (w->pods[i])
            pp[npods++] = &w->pods[i]->p;
    return gpuop_records_judge(rec, name, w->nodes[slot] ? &w->nodes[slot]->n : NULL, pp, npods,
                               w->now);
}

/* ---- the events ---- */

/* Applies one random event; returns the node slot it touched. The old
 * node or pod, if any, is left in *old_node / *old_pod for the caller to
 * free after the update. */
static int random_event(struct world *w, struct tnode **old_node, struct tpod **old_pod,
                        const char **what)
{
    int slot = (int)rnd(NODE_SLOTS), p = (int)rnd(POD_SLOTS);
    struct tnode *n = w->nodes[slot];
    struct tpod *pod = w->pods[p];
    *old_node = NULL;
    *old_pod = NULL;
    switch (rnd(10)) {
    case 0: /* a node comes or goes */
        *what = n ? "node removed" : "node added";
        *old_node = n;
        w->nodes[slot] = n ? NULL : random_node(slot);
        return slot;
    case 1: /* relabelled, tainted, advertising: a new node object of the same name */
    case 2: {
        *what = "node changed";
        if (!n)
            return slot;
        struct tnode *m = random_node(slot);
        if (coin(50)) { /* one field only */
            *m = *n;
            m->n.name = m->name;
            m->n.taints = m->taints;
            m->n.deploy_other = n->n.deploy_other ? m->other : NULL;
            m->n.os = n->n.os ? m->os : NULL;
            int o = (int)rnd((uint32_t)gpuop_operand_count());
            switch (rnd(5)) {
            case 0:
                m->n.deploy[o] = (uint8_t)rnd(GPUOP_LABEL_PREINSTALLED + 1); /* every state */
                if (m->n.deploy[o] == GPUOP_LABEL_OTHER) {
                    m->other[o] = (char *)other_values[rnd(4)];
                    m->n.deploy_other = m->other;
                }
                break;
            case 1:
                m->n.ntaints = (uint16_t)rnd(3);
                m->taints[0] = (struct gpuop_taint){"dedicated", NULL, "NoExecute"};
                m->taints[1] = (struct gpuop_taint){"gpu", "bad", "NoSchedule"};
                break;
            case 2:
                m->n.gpus.allocatable = (uint16_t)rnd(3);
                break;
            case 3:
                m->n.operands_label = (uint8_t)rnd(3);
                break;
            default:
                m->n.upgrade = (uint8_t)rnd(4);
                break;
            }
        }
        *old_node = n;
        w->nodes[slot] = m;
        return slot;
    }
    case 3: /* a pod comes or goes */
    case 4: {
        if (pod) {
            *what = "pod removed";
            *old_pod = pod;
            w->pods[p] = NULL;
            return atoi(pod->node + 5);
        }
        *what = "pod added";
        w->pods[p] = random_pod(p, slot);
        return slot;
    }
    default: { /* a pod changes: phase, Ready, waiting, gate, deletion */
        *what = "pod changed";
        if (!pod)
            return slot;
        struct tpod *q = malloc(sizeof(*q));
        *q = *pod;
        q->p.name = q->name;
        q->p.node = q->node;
        switch (rnd(5)) {
        case 0:
            q->p.phase = (uint8_t)rnd(6);
            break;
        case 1:
            q->p.ready_since = q->p.gate          ? q->p.ready_since
                               : q->p.ready_since ? 0
                                                  : (uint32_t)(w->now - rnd(100));
            break;
        case 2:
            q->p.waiting_reason = (char *)waits[rnd(sizeof(waits) / sizeof(waits[0]))];
            q->p.waiting_message = q->p.waiting_reason ? "" : NULL;
            break;
        case 3:
            q->p.gate = q->p.gate ? GPUOP_GATE_NONE : (uint8_t)(1 + rnd(GPUOP_GATE_COUNT - 1));
            q->p.gate_since = (uint32_t)(w->now - rnd(100));
            break;
        default:
            q->p.deleted = q->p.deleted ? q->p.deleted : (uint32_t)w->now;
            q->p.restarts += coin(30);
            break;
        }
        *old_pod = pod;
        w->pods[p] = q;
        return atoi(q->node + 5);
    }
    }
}

/* A share of the events (in percent) that also change a DaemonSet. */
#define DS_EVENT_PCT 8

/* A DaemonSet changes: its status counters and what its controller says
 * (a rollout's every pod moves them), or, a quarter of the time,
 * something each node's judgement reads (returns true then). */
static bool ds_event(struct world *w)
{
    static const char *const says[] = {NULL, "FailedCreate: exceeded quota",
                                       "FailedDaemonPod: found failed daemon pod"};
    struct gpuop_ds *d = &w->ds[rnd((uint32_t)w->nds)];
    if (coin(25)) {
        if (coin(50)) /* often recent: its nodes' steps are judged on it */
            d->created = w->now - rnd(GPUOP_PROGRESS_DEADLINE_S);
        else
            d->host_network = !d->host_network;
        return true;
    }
    d->desired = rnd(6);
    d->ready = rnd(6);
    d->current = rnd(6);
    d->controller_says = says[rnd(3)];
    return false;
}

/* The nodes the setup and the clock name, to judge again. */
struct rejudged {
    bool slot[NODE_SLOTS];
    int n;
};

static void rejudge(const char *node, void *arg)
{
    struct rejudged *r = arg;
    int slot = atoi(node + 5); /* node-NN */
    assert_true(slot >= 0 && slot < NODE_SLOTS);
    r->n += !r->slot[slot];
    r->slot[slot] = true;
}

/* The setup with the world's policy and DaemonSets: 1 (every node
 * dirty), 0 (the nodes it names in *r), or negative. */
static int setup(struct world *w, struct gpuop_records *rec, struct rejudged *r)
{
    const struct gpuop_ds *dp[GPUOP_OPERAND_MAX + 2];
    for (size_t i = 0; i < w->nds; i++)
        dp[i] = &w->ds[i];
    return gpuop_records_setup(rec, &w->pol, dp, w->nds, rejudge, r);
}

/* Every node judged: the same judgement, each slot, then the sweep. */
static int judge_all(struct world *w, struct gpuop_records *rec)
{
    gpuop_records_begin_all(rec);
    for (int i = 0; i < NODE_SLOTS; i++) {
        int rc = w->nodes[i] ? judge(w, rec, i) : 0;
        if (rc < 0)
            return rc;
    }
    gpuop_records_sweep(rec);
    return 0;
}

/* What one reconcile does after an event that touched node slot: the
 * setup, then every node when it says so, else the touched node, the
 * nodes it named and the nodes due. Counts into *st. */
struct walk_stats {
    size_t alls, judged, ds_named, due;
};

static int reconcile(struct world *w, struct gpuop_records *rec, int slot, struct walk_stats *st)
{
    struct rejudged r = {0};
    int rc = setup(w, rec, &r);
    if (rc < 0)
        return rc;
    if (rc > 0) {
        st->alls++;
        return judge_all(w, rec);
    }
    st->ds_named += (size_t)r.n;
    int named = r.n;
    gpuop_records_due(rec, w->now, rejudge, &r);
    st->due += (size_t)(r.n - named);
    r.n += !r.slot[slot];
    r.slot[slot] = true;
    for (int i = 0; i < NODE_SLOTS && rc == 0; i++)
        if (r.slot[i])
            rc = judge(w, rec, i), st->judged++;
    return rc;
}

static void test_records_equal_full(void **state)
{
    (void)state;
    const char *env = getenv("GPUOP_TEST_SEED");
    uint32_t seed = env ? (uint32_t)strtoul(env, NULL, 10) : SEED_DEFAULT;
    /* GPUOP_TEST_EVENTS: fewer events per policy (the valgrind build's) */
    const char *nenv = getenv("GPUOP_TEST_EVENTS");
    int events = EVENTS_PER_POLICY;
    if (nenv && atoi(nenv) > 0 && atoi(nenv) < EVENTS_PER_POLICY)
        events = atoi(nenv);
    printf("test_records: seed %u (GPUOP_TEST_SEED), %d events under each of %d policies\n", seed,
           events, POLICIES);
    rng = seed * 2654435761u + 1;
    struct walk_stats st = {0};
    size_t findings = 0, by_node = 0, ds_events = 0;
    for (int kind = 0; kind < POLICIES; kind++) {
        struct world w;
        world_init(&w, kind);
        struct gpuop_records *rec;
        struct gpuop_findings ref, *view;
        assert_int_equal(gpuop_records_new(&rec), 0);
        assert_int_equal(reconcile(&w, rec, 0, &st), 0);
        for (int e = 0; e < events; e++) {
            struct tnode *old_node;
            struct tpod *old_pod;
            const char *what = "";
            w.now += rnd(40);
            int slot = random_event(&w, &old_node, &old_pod, &what);
            if (coin(DS_EVENT_PCT))
                (void)ds_event(&w), ds_events++;
            assert_int_equal(reconcile(&w, rec, slot, &st), 0);
            free(old_node); /* nothing of them is read after their judgement */
            free(old_pod);
            assert_int_equal(gpuop_records_view(rec, w.stranded, 2, w.now, &view), 0);
            assert_int_equal(full(&w, &ref), 0);
            char why[2 * GPUOP_FINDING_MESSAGE_MAX + 128];
            if (!gpuop_findings_same(view, &ref, why, sizeof(why)))
                fail_msg("seed %u, policy %d, event %d (%s on node-%02d): %s", seed, kind, e, what,
                         slot, why);
            findings += ref.nitems;
            if (e % 4 == 0) { /* a pass reading each node's pods alone says the same */
                struct gpuop_findings per;
                assert_int_equal(full_by_node(&w, &per), 0);
                if (!gpuop_findings_same(&per, &ref, why, sizeof(why)))
                    fail_msg("seed %u, policy %d, event %d: by node: %s", seed, kind, e, why);
                gpuop_findings_free(&per);
                by_node++;
            }
            gpuop_findings_free(&ref);
        }
        gpuop_records_free(rec);
        world_free(&w);
    }
    printf("test_records: %zu nodes judged one by one (%zu named by a DaemonSet controller's "
           "words, %zu by the clock), %zu judgements of every node (%zu DaemonSet events), %zu "
           "findings compared\n",
           st.judged, st.ds_named, st.due, st.alls, ds_events, findings);
    assert_true(st.ds_named > 0); /* the controller's words moved some node's steps */
    assert_true(st.due > 0);      /* the clock moved some */
    assert_true(by_node > 0);
    assert_true(st.judged > st.alls);
}

/* Judging is refused without a setup and for a node of another name. */
static void test_judge_refused(void **state)
{
    (void)state;
    struct world w;
    rng = 7;
    world_init(&w, POL_DEFAULT);
    struct gpuop_records *rec;
    assert_int_equal(gpuop_records_new(&rec), 0);
    int slot = 0;
    while (!w.nodes[slot])
        slot++;
    assert_int_equal(judge(&w, rec, slot), GPUOP_EINVAL); /* no setup yet */
    struct rejudged r = {0};
    assert_int_equal(setup(&w, rec, &r), 1); /* the first: every node */
    assert_int_equal(setup(&w, rec, &r), 0); /* nothing moved */
    assert_int_equal(gpuop_records_judge(rec, "someone-else", &w.nodes[slot]->n, NULL, 0, w.now),
                     GPUOP_EINVAL);
    gpuop_records_free(rec);
    world_free(&w);
}

/* Records with no nodes and no findings take a node with findings, then
 * lose it: back to empty, as a full pass says. */
static void test_judge_from_empty(void **state)
{
    (void)state;
    struct world w;
    rng = 11;
    world_init(&w, POL_DEFAULT);
    for (int i = 0; i < NODE_SLOTS; i++) {
        free(w.nodes[i]);
        w.nodes[i] = NULL;
    }
    struct gpuop_records *rec;
    struct gpuop_findings *f, ref;
    struct rejudged r = {0};
    char why[2 * GPUOP_FINDING_MESSAGE_MAX + 128];
    assert_int_equal(gpuop_records_new(&rec), 0);
    assert_int_equal(setup(&w, rec, &r), 1);
    assert_int_equal(judge_all(&w, rec), 0);
    assert_int_equal(gpuop_records_view(rec, w.stranded, 2, w.now, &f), 0);
    assert_int_equal(f->nitems, 0);
    assert_int_equal(judge(&w, rec, 5), 0); /* no node there: nothing */
    w.nodes[5] = random_node(5);
    w.nodes[5]->n.gpu = true;
    w.nodes[5]->n.deploy[0] = GPUOP_LABEL_ABSENT; /* NotScheduled at least */
    assert_int_equal(judge(&w, rec, 5), 0);
    assert_int_equal(gpuop_records_view(rec, w.stranded, 2, w.now, &f), 0);
    assert_int_equal(full(&w, &ref), 0);
    if (!gpuop_findings_same(f, &ref, why, sizeof(why)))
        fail_msg("after the node came: %s", why);
    assert_true(f->nitems > 0);
    gpuop_findings_free(&ref);
    free(w.nodes[5]);
    w.nodes[5] = NULL;
    assert_int_equal(judge(&w, rec, 5), 0);
    assert_int_equal(gpuop_records_view(rec, w.stranded, 2, w.now, &f), 0);
    assert_int_equal(full(&w, &ref), 0);
    if (!gpuop_findings_same(f, &ref, why, sizeof(why)))
        fail_msg("after the node went: %s", why);
    assert_int_equal(f->nnodes, 0);
    assert_int_equal(gpuop_records_count(rec), 0);
    gpuop_findings_free(&ref);
    gpuop_records_free(rec);
    world_free(&w);
}

/* The view's messages, each after its node's name, into buf (size). */
static void view_text(const struct gpuop_findings *f, char *buf, size_t size)
{
    size_t at = 0;
    char msg[GPUOP_FINDING_MESSAGE_MAX];
    for (size_t i = 0; i < f->nnodes; i++)
        for (uint32_t k = 0; k < f->nodes[i].nfindings; k++) {
            gpuop_finding_message(f, &f->nodes[i].findings[k], msg, sizeof(msg));
            int n = snprintf(buf + at, size - at, "%s: %s\n", f->nodes[i].name, msg);
            assert_true(n > 0 && (size_t)n < size - at);
            at += (size_t)n;
        }
}

/* A view borrows its findings from the records: judging nodes after it
 * (their records replaced, their old inputs freed) leaves it readable
 * and as it was, until the next view (ASan sees a read of freed
 * memory). */
static void test_view_outlives_judging(void **state)
{
    (void)state;
    enum { TEXT = 1 << 20 };
    struct world w;
    rng = 13;
    world_init(&w, POL_DEFAULT);
    struct gpuop_records *rec;
    struct gpuop_findings *f, ref;
    struct rejudged r = {0};
    char *before = malloc(TEXT), *after = malloc(TEXT);
    assert_non_null(before);
    assert_non_null(after);
    assert_int_equal(gpuop_records_new(&rec), 0);
    assert_int_equal(setup(&w, rec, &r), 1);
    assert_int_equal(judge_all(&w, rec), 0);
    assert_int_equal(gpuop_records_view(rec, w.stranded, 2, w.now, &f), 0);
    size_t nitems = f->nitems, nnodes = f->nnodes;
    assert_true(nitems > 0);
    view_text(f, before, TEXT);
    for (int e = 0; e < 200; e++) {
        struct tnode *old_node;
        struct tpod *old_pod;
        const char *what;
        w.now += rnd(40);
        int slot = random_event(&w, &old_node, &old_pod, &what);
        assert_int_equal(judge(&w, rec, slot), 0);
        free(old_node);
        free(old_pod);
    }
    assert_int_equal(f->nitems, nitems);
    assert_int_equal(f->nnodes, nnodes);
    view_text(f, after, TEXT);
    assert_string_equal(after, before);
    char why[2 * GPUOP_FINDING_MESSAGE_MAX + 128];
    assert_int_equal(judge_all(&w, rec), 0); /* the clock moved too */
    assert_int_equal(gpuop_records_view(rec, w.stranded, 2, w.now, &f), 0);
    assert_int_equal(full(&w, &ref), 0);
    if (!gpuop_findings_same(f, &ref, why, sizeof(why)))
        fail_msg("the next view: %s", why);
    gpuop_findings_free(&ref);
    gpuop_records_free(rec);
    world_free(&w);
    free(before);
    free(after);
}

/* When node slot's judgement at w->now changes (its next_change, from
 * a full pass over that node alone); 0 never. */
static long long node_change(struct world *w, int slot)
{
    const struct gpuop_node *np[1] = {&w->nodes[slot]->n};
    const struct gpuop_pod *pp[POD_SLOTS];
    const struct gpuop_ds *dp[GPUOP_OPERAND_MAX + 2];
    size_t npods = 0;
    for (int i = 0; i < POD_SLOTS; i++)
        if (w->pods[i] && w->pods[i]->p.node && !strcmp(w->pods[i]->p.node, np[0]->name))
            pp[npods++] = &w->pods[i]->p;
    for (size_t i = 0; i < w->nds; i++)
        dp[i] = &w->ds[i];
    struct gpuop_findings f;
    assert_int_equal(gpuop_analyze(&(struct gpuop_analysis_in){.policy = &w->pol,
                                                               .nodes = np,
                                                               .nnodes = 1,
                                                               .ds = dp,
                                                               .nds = w->nds,
                                                               .pods = pp,
                                                               .npods = npods,
                                                               .now = w->now},
                                   &f),
                     0);
    long long c = f.next_change;
    gpuop_findings_free(&f);
    return c;
}

/* gpuop_records_due names exactly the nodes whose change[] came by t. */
static void expect_due(struct gpuop_records *rec, const long long *change, long long t)
{
    struct rejudged r = {0};
    gpuop_records_due(rec, t, rejudge, &r);
    for (int i = 0; i < NODE_SLOTS; i++)
        if (r.slot[i] != (change[i] && change[i] <= t))
            fail_msg("at %lld node-%02d (its change at %lld) %s", t, i, change[i],
                     r.slot[i] ? "named early" : "not named");
}

/* The clock's judgements: a record whose next_change came is named by
 * gpuop_records_due, one whose next_change moved later is not named
 * early, a record that has none any more or is gone never. Pods being
 * deleted, Ready and gated at spread times give the nodes their own
 * moments (each known from a full pass over that node). */
static void test_due(void **state)
{
    (void)state;
    struct world w;
    rng = 13;
    world_init(&w, POL_DEFAULT);
    struct gpuop_records *rec;
    struct rejudged r = {0};
    long long change[NODE_SLOTS] = {0}, before[NODE_SLOTS];
    assert_int_equal(gpuop_records_new(&rec), 0);
    assert_int_equal(setup(&w, rec, &r), 1);
    assert_int_equal(judge_all(&w, rec), 0);
    int timed = 0;
    for (int i = 0; i < NODE_SLOTS; i++)
        if (w.nodes[i] && (change[i] = node_change(&w, i)) > 0)
            timed++;
    assert_true(timed >= 3); /* the seed's world has some */
    for (int i = 0; i < NODE_SLOTS; i++)
        if (change[i]) {
            expect_due(rec, change, change[i] - 1);
            expect_due(rec, change, change[i]);
        }
    /* every node's and pod's times later by a minute: the timed nodes'
     * moments move later (or go), and are not named at the old ones */
    memcpy(before, change, sizeof(before));
    for (int i = 0; i < NODE_SLOTS; i++)
        if (w.nodes[i])
            w.nodes[i]->n.created += 60;
    for (int i = 0; i < POD_SLOTS; i++) {
        struct gpuop_pod *p = w.pods[i] ? &w.pods[i]->p : NULL;
        if (p && p->deleted > GPUOP_TIME_UNREADABLE)
            p->deleted += 60;
        if (p && p->ready_since > GPUOP_TIME_UNREADABLE)
            p->ready_since += 60; /* gate_since too: they share it */
        if (p)
            p->created += 60;
    }
    int later = 0;
    for (int i = 0; i < NODE_SLOTS; i++) {
        if (!w.nodes[i])
            continue;
        assert_int_equal(judge(&w, rec, i), 0);
        change[i] = node_change(&w, i);
        later += before[i] && (!change[i] || change[i] > before[i]);
    }
    assert_true(later >= timed / 2);
    for (int i = 0; i < NODE_SLOTS; i++)
        if (before[i]) {
            expect_due(rec, change, before[i]);
            if (change[i])
                expect_due(rec, change, change[i]);
        }
    /* the timed nodes gone: never named again */
    for (int i = 0; i < NODE_SLOTS; i++)
        if (change[i]) {
            free(w.nodes[i]);
            w.nodes[i] = NULL;
            change[i] = 0;
            assert_int_equal(judge(&w, rec, i), 0);
        }
    expect_due(rec, change, LLONG_MAX);
    gpuop_records_free(rec);
    world_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_records_equal_full),
        cmocka_unit_test(test_judge_refused),
        cmocka_unit_test(test_judge_from_empty),
        cmocka_unit_test(test_view_outlives_judging),
        cmocka_unit_test(test_due),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
