/*
 * stranded.c - who is stranded (issue 15 §2): the pods bound to a node
 * with an ordering violation that request nvidia.com/gpu.
 *
 * gpuop watches pods only in its own namespace (the operands'); the GPU
 * pods of the cluster are not cached, and a cluster-wide pod watch would
 * break the memory budget. Instead, for exactly the nodes the last
 * analysis found with an OrderingViolation, one field-selector LIST
 *   GET /api/v1/pods?fieldSelector=spec.nodeName=NODE,status.phase!=...
 * is sent per node, rate-limited: at most STRANDED_LISTS_PER_TICK LISTs
 * per STRANDED_TICK_MS and never more than STRANDED_IN_FLIGHT_MAX
 * unanswered, each node re-listed at most every STRANDED_RELIST_MS. Of
 * the answer only the count of GPU pods and the first
 * GPUOP_STRANDED_NAMES_MAX names are kept. A node that no longer
 * violates is forgotten (its LIST in flight cancelled). A node that is
 * only mid-rollout (its violation an operand up a moment before its
 * prerequisite, the node still progressing: gpuop_node_result.progressing)
 * is not listed; once it stops progressing it is, and it stays tracked
 * while it violates, progressing again or not. When a node's list
 * changes, the policy is requeued; its reconcile passes the lists to the
 * findings (gpuop_findings_set_stranded: the analysis stays pure) and says
 * the change in an Event.
 *
 * Cost: with V violating nodes, min(V * 60000 / STRANDED_RELIST_MS,
 * STRANDED_LISTS_PER_TICK * 60000 / STRANDED_TICK_MS) LISTs a minute
 * (100 nodes: 100 a minute; never more than 120). Beyond 120 violating
 * nodes each is listed in turn, the one listed longest ago first, every
 * V / 2 s (next_due). Measured by test/bench/stranded-rate: see
 * docs/benchmarks-history.md, "Stranded-pod LISTs".
 *
 * The nodes with GpusAdvertisedTwice (issue 42: the device plugin and the
 * DRA driver both advertise their GPUs, few nodes) are listed the same
 * way, under the same limits, whether they violate or not: of their GPU
 * pods the effective nvidia.com/gpu requests are summed too (gpus), so the
 * findings can count what the pods hold against the node's GPUs
 * (gpuop_findings_overadmit). A node tracked only for that has no Event
 * of its own (its finding's message names the pods).
 */
#include <stdlib.h>
#include <string.h>

#include "gpuop/buf.h"
#include "gpuop/clock.h"
#include "gpuop/hash.h"
#include "gpuop/log.h"
#include "gpuop/model.h"
#include "gpuop/pool.h"

#include "controller_int.h"

/* The rate limit: LISTs started per tick, the tick, how often one node
 * is listed again while it violates, and how many may be in flight at
 * once (an API server slow to answer gets no more than that: without it,
 * two more each tick piled up during a rollout, each with its own TLS
 * connection and response, docs/benchmarks-history.md). */
#define STRANDED_LISTS_PER_TICK 2
#define STRANDED_IN_FLIGHT_MAX  2
#define STRANDED_TICK_MS        1000
#define STRANDED_RELIST_MS      60000
/* Pods of one LIST page (a node holds at most a few hundred; beyond, the
 * count is a lower bound). */
#define STRANDED_LIST_LIMIT "1000"
/* resourceVersion=0 ("any"): answered from the API server's watch cache,
 * which indexes pods by spec.nodeName, and never by reading every pod of
 * the cluster from etcd and filtering them, as a consistent LIST is when
 * that cache lags (121 of 223 LISTs in a 1,000-node rollout on the lab,
 * docs/benchmarks-history.md). It may be as old as the cache: nothing beside a
 * re-list a minute. */
#define STRANDED_LIST_RV "0"
/* Longest "namespace/name" kept (63 + 1 + 253). */
#define STRANDED_NAME_MAX 320
/* First size of the per-node arrays (they double as violating nodes come). */
#define STRANDED_ARRAY_FIRST 64
/* nvidia.com/gpu a pod or node is counted with at most (no sum overflows). */
#define STRANDED_POD_GPUS_MAX 65535u

/* One tracked node: 72 bytes and its name while it has no stranded pod
 * (in a 5,000-node rollout some 4,000 nodes violate the order for a while,
 * with none), its names in one more block when it has. From gpuop_pool's
 * slabs (pool.h): thousands of small blocks that live through a rollout
 * kept the heap's pages around them resident. */
struct rec {
    struct ctl_stranded *s;
    struct gpuop_kube_req *req; /* LIST in flight, or NULL */
    char *names;                /* nnames "namespace/name" strings, each ending in NUL, one
                                   after the other, names_len bytes (new); NULL when none */
    uint64_t listed_ms;         /* gpuop_clock_ms of the last answer (or failure) */
    uint64_t said;              /* hash of what the last Event said; 0: nothing said */
    uint64_t seen;              /* the track call that last wanted it */
    uint32_t count;             /* GPU pods bound there, at the last answer */
    uint32_t nnames;
    uint32_t names_len;
    uint32_t said_count;
    uint32_t gpus; /* their effective nvidia.com/gpu requests, summed */
    bool violates; /* an OrderingViolation (else only GpusAdvertisedTwice): Events */
    bool dropped;  /* no longer tracked: freed when its LIST ends */
    bool listed;   /* a LIST answered at least once */
    char node[];   /* the node's name: one allocation with the rest */
};

struct ctl_stranded {
    uv_loop_t *loop;
    struct gpuop_kube *kube;
    struct gpuop_queue *queue;
    uv_timer_t tick;
    /* The n tracked nodes, struct rec *[n] sorted by node, and the nview
     * of them with stranded pods as the findings read them, struct
     * gpuop_stranded[nview]. Each track builds the next array in spare,
     * then the two swap: their memory is kept from one reconcile to the
     * next (during a rollout that is hundreds of reconciles with thousands
     * of nodes violating for a while), and given back when no node
     * violates. */
    struct gpuop_buf recs, spare, view;
    size_t n, nview;
    char *policy;                /* requeued when a list changes */
    uint64_t lists;              /* LISTs sent */
    size_t inflight;             /* LISTs sent and not answered */
    uint64_t tracks;             /* track calls */
    uint64_t tick_ms, relist_ms; /* STRANDED_TICK_MS, STRANDED_RELIST_MS */
    bool closing;
    void (*close_cb)(void *);
    void *close_arg;
};

static struct rec **recs_of(const struct gpuop_buf *b)
{
    return (struct rec **)(void *)b->data;
}

static void rec_free(struct rec *r)
{
    if (!r)
        return;
    free(r->names);
    gpuop_pool_free(r);
}

/* Points out[0 .. r->nnames) at r's names (borrowed from r). */
static void names_of(const struct rec *r, const char *out[GPUOP_STRANDED_NAMES_MAX])
{
    const char *p = r->names;
    for (uint32_t k = 0; k < r->nnames && k < GPUOP_STRANDED_NAMES_MAX; k++) {
        out[k] = p;
        p += strlen(p) + 1;
    }
}

/* A container's (borrowed) nvidia.com/gpu: its request, else its limit
 * (an extended resource's request defaults to its limit and must equal
 * it); a quantity that is not a whole number counts 1 (it asks for some). */
static uint32_t ctr_gpus(json_t *ctr)
{
    static const char *const kinds[] = {"requests", "limits"};
    json_t *res = json_object_get(ctr, "resources");
    for (size_t k = 0; k < 2; k++) {
        const char *q =
            json_string_value(json_object_get(json_object_get(res, kinds[k]), GPUOP_RESOURCE_GPU));
        if (!q || !*q)
            continue;
        char *end;
        unsigned long v = strtoul(q, &end, 10);
        if (*end || v > STRANDED_POD_GPUS_MAX)
            return strcmp(q, "0") != 0;
        return (uint32_t)v;
    }
    return 0;
}

/* The pod's (borrowed) effective nvidia.com/gpu request, as the scheduler
 * counts it: the larger of its containers' sum and its largest init
 * container's (sidecar init containers are counted as init containers);
 * 0: it asks for none. */
static uint32_t pod_gpus(json_t *pod)
{
    json_t *spec = json_object_get(pod, "spec");
    uint32_t sum = 0, init = 0, g;
    size_t i;
    json_t *ctr;
    json_array_foreach(json_object_get(spec, "containers"), i, ctr)
    {
        g = ctr_gpus(ctr);
        sum = sum + g > STRANDED_POD_GPUS_MAX ? STRANDED_POD_GPUS_MAX : sum + g;
    }
    json_array_foreach(json_object_get(spec, "initContainers"), i, ctr)
    {
        g = ctr_gpus(ctr);
        init = g > init ? g : init;
    }
    return sum > init ? sum : init;
}

static void list_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct rec *r = arg;
    struct ctl_stranded *s = r->s;
    r->req = NULL;
    s->inflight--;
    r->listed_ms = gpuop_clock_ms();
    if (r->dropped) {
        rec_free(r);
        return;
    }
    if (rc < 0) {
        gpuop_debug("stranded", "LIST of the pods on node %s failed: %s", r->node,
                    err && err->message[0] ? err->message : gpuop_strerror(rc));
        return;
    }
    uint32_t count = 0, nnames = 0, gpus = 0;
    char names[GPUOP_STRANDED_NAMES_MAX * STRANDED_NAME_MAX];
    size_t len = 0, i;
    json_t *pod;
    json_array_foreach(json_object_get(body, "items"), i, pod)
    {
        const char *phase =
            json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
        if (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0))
            continue;
        uint32_t g = pod_gpus(pod);
        if (!g)
            continue;
        count++;
        gpus = gpus + g > STRANDED_POD_GPUS_MAX ? STRANDED_POD_GPUS_MAX : gpus + g;
        if (nnames < GPUOP_STRANDED_NAMES_MAX) {
            json_t *meta = json_object_get(pod, "metadata");
            const char *ns = json_string_value(json_object_get(meta, "namespace"));
            const char *name = json_string_value(json_object_get(meta, "name"));
            int k = snprintf(names + len, STRANDED_NAME_MAX, "%.63s/%.253s", ns ? ns : "",
                             name ? name : "");
            len += (k < 0 ? 0 : k < STRANDED_NAME_MAX ? (size_t)k : STRANDED_NAME_MAX - 1) + 1;
            nnames++;
        }
    }
    /* Unchanged, or a first answer of none (as the findings showed it: a
     * node with no stranded pod is not in the view): no reconcile. */
    bool same = count == r->count && gpus == r->gpus && nnames == r->nnames &&
                len == r->names_len && (!len || memcmp(names, r->names, len) == 0);
    r->listed = true;
    if (same)
        return;
    char *block = len ? malloc(len) : NULL;
    if (len && !block)
        return; /* ENOMEM: the old list stands until the next answer */
    if (len)
        memcpy(block, names, len);
    free(r->names);
    r->names = block;
    r->names_len = (uint32_t)len;
    r->nnames = nnames;
    r->count = count;
    r->gpus = gpus;
    gpuop_debug("stranded", "node %s: %u GPU pods bound, %u GPUs", r->node, count, gpus);
    if (s->policy)
        (void)gpuop_queue_add(s->queue, s->policy); /* ENOMEM: at the next change */
}

static void list_start(struct ctl_stranded *s, struct rec *r)
{
    r->listed_ms = gpuop_clock_ms(); /* a LIST that cannot start is tried again later */
    size_t n = strlen(r->node) + 128;
    char *sel = malloc(n);
    if (!sel)
        return;
    snprintf(sel, n, "spec.nodeName=%s,status.phase!=Succeeded,status.phase!=Failed", r->node);
    struct gpuop_kube_ref ref = {"v1", NULL, "pods", NULL, NULL};
    struct gpuop_kube_param params[] = {{"fieldSelector", sel},
                                        {"limit", STRANDED_LIST_LIMIT},
                                        {"resourceVersion", STRANDED_LIST_RV}};
    char *path = gpuop_kube_path(&ref, params, 3);
    free(sel);
    if (!path)
        return;
    struct gpuop_kube_opts o = {.verb = GPUOP_KUBE_GET, .path = path};
    if (gpuop_kube_request(s->kube, &o, list_done, r, &r->req) < 0) {
        r->req = NULL;
    } else {
        s->lists++;
        s->inflight++;
    }
    free(path);
}

/* The next node to list: due (no LIST in flight, not listed within the
 * interval), never listed before any listed one, then the one listed
 * longest ago, ties in name order; NULL when none is due. So with more
 * violating nodes than the rate lists in an interval, each is listed in
 * turn (every V / rate s) and none is passed over for ever. */
static struct rec *next_due(const struct ctl_stranded *s, uint64_t now)
{
    struct rec *best = NULL;
    struct rec **recs = recs_of(&s->recs);
    for (size_t i = 0; i < s->n; i++) {
        struct rec *r = recs[i];
        if (r->req || (r->listed_ms && now - r->listed_ms < s->relist_ms))
            continue;
        if (!best || r->listed_ms < best->listed_ms)
            best = r; /* never listed: 0, before any time */
    }
    return best;
}

static void on_tick(uv_timer_t *t)
{
    struct ctl_stranded *s = t->data;
    uint64_t now = gpuop_clock_ms();
    struct rec *r;
    for (int started = 0; started < STRANDED_LISTS_PER_TICK &&
                          s->inflight < STRANDED_IN_FLIGHT_MAX && (r = next_due(s, now));
         started++)
        list_start(s, r); /* in flight now: not due */
    if (s->n == 0)
        uv_timer_stop(&s->tick);
}

int gpuop_ctl_stranded_new(uv_loop_t *loop, struct gpuop_kube *kube, struct gpuop_queue *queue,
                           struct ctl_stranded **out)
{
    struct ctl_stranded *s = calloc(1, sizeof(*s));
    if (!s)
        return GPUOP_ENOMEM;
    s->loop = loop;
    s->kube = kube;
    s->queue = queue;
    s->tick_ms = STRANDED_TICK_MS;
    s->relist_ms = STRANDED_RELIST_MS;
    gpuop_buf_init(&s->recs, STRANDED_ARRAY_FIRST * sizeof(struct rec *), GPUOP_BUF_UNLIMITED);
    gpuop_buf_init(&s->spare, STRANDED_ARRAY_FIRST * sizeof(struct rec *), GPUOP_BUF_UNLIMITED);
    gpuop_buf_init(&s->view, STRANDED_ARRAY_FIRST * sizeof(struct gpuop_stranded),
                   GPUOP_BUF_UNLIMITED);
    uv_timer_init(loop, &s->tick);
    s->tick.data = s;
    *out = s;
    return 0;
}

static int rec_cmp(const void *key, const void *elem)
{
    return strcmp(key, (*(struct rec *const *)elem)->node);
}

/* Drops r: freed now, or when its LIST ends. */
static void rec_drop(struct rec *r)
{
    if (r->req) {
        r->dropped = true;
        gpuop_kube_cancel(r->req); /* list_done frees it */
    } else {
        rec_free(r);
    }
}

/* Has node result nr the finding GpusAdvertisedTwice (issue 42: its pods'
 * GPUs are counted against the node's)? */
static bool twice(const struct gpuop_node_result *nr)
{
    for (uint32_t k = 0; k < nr->nfindings; k++)
        if (nr->findings[k].reason == GPUOP_REASON_GPUS_ADVERTISED_TWICE)
            return true;
    return false;
}

/* Is node result nr to be tracked: it has GpusAdvertisedTwice, or it
 * violates, and it does not just progress, or is tracked already (prev:
 * the n tracked, sorted)? */
static bool wanted(const struct gpuop_node_result *nr, struct rec **prev, size_t n)
{
    if (twice(nr))
        return true;
    if (!gpuop_findings_violates(nr))
        return false;
    return !nr->progressing || (n && bsearch(nr->name, prev, n, sizeof(*prev), rec_cmp));
}

static void say(struct ctl_stranded *s, struct gpuop_events *ev, const char *policy,
                const char *uid, struct rec *r, bool gone)
{
    gone = gone || !r->violates; /* only GpusAdvertisedTwice: its finding says it */
    uint32_t count = gone ? 0 : r->count;
    uint64_t h = GPUOP_HASH_INIT;
    h = gpuop_hash_bytes(h, &count, sizeof(count));
    if (!gone && r->names_len)
        h = gpuop_hash_bytes(h, r->names, r->names_len);
    h = gpuop_hash_mix(h) | 1;
    if (!ev || (!r->listed && !gone) || h == r->said || (count == 0 && r->said_count == 0)) {
        if (count == 0 && r->said_count == 0)
            r->said = h;
        return;
    }
    (void)s;
    char msg[GPUOP_FINDING_MESSAGE_MAX + 512];
    if (count) {
        struct gpuop_stranded st = {r->node, r->count, r->nnames, {0}, r->gpus};
        names_of(r, st.names);
        char text[GPUOP_FINDING_MESSAGE_MAX];
        gpuop_stranded_text(&st, text, sizeof(text));
        snprintf(msg, sizeof(msg),
                 "node %.253s: %u GPU pods bound here while the node has an ordering violation "
                 "(they cannot get a GPU): %.900s",
                 r->node, count, text);
        gpuop_events_say(ev, policy, uid, "Warning", "StrandedGpuPods", msg);
    } else {
        snprintf(msg, sizeof(msg), "node %.253s: no GPU pod stranded any more", r->node);
        gpuop_events_say(ev, policy, uid, "Normal", "StrandedGpuPodsCleared", msg);
    }
    r->said = h;
    r->said_count = count;
}

int gpuop_ctl_stranded_track(struct ctl_stranded *s, const struct gpuop_findings *f,
                             struct gpuop_events *ev, const char *policy, const char *uid)
{
    if (s->closing)
        return 0;
    if (!s->policy || strcmp(s->policy, policy) != 0) {
        char *p = strdup(policy);
        if (!p)
            return GPUOP_ENOMEM;
        free(s->policy);
        s->policy = p;
    }
    struct rec **prev = recs_of(&s->recs);
    size_t want = 0;
    for (size_t i = 0; i < f->nnodes; i++)
        want += wanted(&f->nodes[i], prev, s->n);
    if (gpuop_buf_reserve(&s->spare, want * sizeof(struct rec *)) < 0)
        return GPUOP_ENOMEM;
    struct rec **recs = recs_of(&s->spare);
    size_t n = 0;
    for (size_t i = 0; i < f->nnodes && n < want; i++) { /* f's nodes are sorted by name */
        const struct gpuop_node_result *nr = &f->nodes[i];
        if (!wanted(nr, prev, s->n))
            continue;
        struct rec **old = s->n ? bsearch(nr->name, prev, s->n, sizeof(*prev), rec_cmp) : NULL;
        struct rec *r = old ? *old : NULL; /* kept (the old array stays sorted, no holes) */
        if (!r) {
            size_t len = strlen(nr->name);
            if (!(r = gpuop_pool_alloc(sizeof(*r) + len + 1)))
                continue; /* ENOMEM: not tracked this time */
            memset(r, 0, sizeof(*r));
            memcpy(r->node, nr->name, len + 1);
            r->s = s;
        }
        r->seen = s->tracks + 1;
        r->violates = gpuop_findings_violates(nr);
        recs[n++] = r;
    }
    s->tracks++;
    for (size_t i = 0; i < s->n; i++)
        if (prev[i]->seen != s->tracks) { /* no longer violating: cleared, forgotten */
            say(s, ev, policy, uid, prev[i], true);
            rec_drop(prev[i]);
        }
    struct gpuop_buf t = s->recs;
    s->recs = s->spare;
    s->spare = t;
    s->n = n;
    if (n == 0) { /* nothing violates (the steady state): the memory back */
        gpuop_buf_free(&s->recs);
        gpuop_buf_free(&s->spare);
    }
    size_t nview = 0;
    for (size_t i = 0; i < n; i++)
        nview += recs[i]->count > 0;
    int rc = 0;
    s->nview = 0;
    if (nview == 0)
        gpuop_buf_free(&s->view);
    else if ((rc = gpuop_buf_reserve(&s->view, nview * sizeof(struct gpuop_stranded))) == 0)
        s->nview = nview; /* ENOMEM: none shown this reconcile */
    struct gpuop_stranded *view = (struct gpuop_stranded *)(void *)s->view.data;
    for (size_t i = 0, v = 0; i < n; i++) {
        struct rec *r = recs[i];
        if (r->count && v < s->nview) {
            view[v] = (struct gpuop_stranded){
                .node = r->node, .count = r->count, .nnames = r->nnames, .gpus = r->gpus};
            names_of(r, view[v++].names);
        }
        say(s, ev, policy, uid, r, false);
    }
    if (n && !uv_is_active((uv_handle_t *)&s->tick))
        uv_timer_start(&s->tick, on_tick, 0, s->tick_ms);
    return rc;
}

const struct gpuop_stranded *gpuop_ctl_stranded_view(const struct ctl_stranded *s, size_t *n)
{
    *n = s->nview;
    return s->nview ? (const struct gpuop_stranded *)(const void *)s->view.data : NULL;
}

size_t gpuop_ctl_stranded_tracked(const struct ctl_stranded *s)
{
    return s->n;
}

uint64_t gpuop_ctl_stranded_lists(const struct ctl_stranded *s)
{
    return s->lists;
}

size_t gpuop_ctl_stranded_inflight(const struct ctl_stranded *s)
{
    return s->inflight;
}

void gpuop_ctl_stranded_set_timing(struct ctl_stranded *s, uint64_t tick_ms, uint64_t relist_ms)
{
    s->tick_ms = tick_ms;
    s->relist_ms = relist_ms;
}

static void tick_closed(uv_handle_t *h)
{
    struct ctl_stranded *s = h->data;
    void (*cb)(void *) = s->close_cb;
    void *arg = s->close_arg;
    free(s->policy);
    free(s);
    if (cb)
        cb(arg);
}

void gpuop_ctl_stranded_close(struct ctl_stranded *s, void (*cb)(void *), void *arg)
{
    s->closing = true;
    s->close_cb = cb;
    s->close_arg = arg;
    struct rec **recs = recs_of(&s->recs);
    for (size_t i = 0; i < s->n; i++)
        rec_drop(recs[i]);
    gpuop_buf_free(&s->recs);
    gpuop_buf_free(&s->spare);
    gpuop_buf_free(&s->view);
    s->n = s->nview = 0;
    uv_timer_stop(&s->tick);
    uv_close((uv_handle_t *)&s->tick, tick_closed);
}
