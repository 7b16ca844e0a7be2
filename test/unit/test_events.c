/*
 * test_events.c - Events on finding changes: the burst limit, flap
 * suppression, and that what is remembered for it stays bounded (only what
 * was posted, forgotten after the quiet window); the grace period of
 * transient findings (pending -> posted -> cleared, or pending -> gone
 * without a word), the first observation (everything waits out the grace),
 * the requeue when a grace ends, and aggregation (the
 * same Event again counts up its object). The kube layer's recorder
 * (recorder.h), which does the aggregating, queueing and posting, is
 * tested through gpuop_events and on its own (test_recorder_*). The first tests post to a port
 * nobody listens on (only what gpuop decides to post is checked); the
 * later ones to fakeapi, which records what arrived. The e2e tests read
 * real Events from the lab.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "rnd.h"

#include "events_int.h"
#include "gpuop/clock.h"
#include "gpuop/kube.h"
#include "gpuop/recorder.h"
#include "queue_int.h"
#include "fakeapi.h"
#include "world_fixture.h"
#include "process_setup.h"

/* The wall clock the events module and the recorder read (clock.h); the
 * monotonic one stays real, so the queue and the client's timers run. */
static void set_now(long long t)
{
    gpuop_clock_set_wall((int64_t)t * GPUOP_US_PER_S);
}
#define fake_now gpuop_clock_wall()

/* Each test starts on the system's clock. */
static int real_clock(void **state)
{
    (void)state;
    gpuop_clock_real();
    return 0;
}

static uint64_t rng_events = 0x9e3779b97f4a7c15ULL;

static uint32_t rnd_events(uint32_t n)
{
    return test_rnd(&rng_events, n);
}

struct fx {
    uv_loop_t loop;
    struct gpuop_kube *kube;
    struct gpuop_events *ev;
    bool closed;
};

static void on_closed(void *arg)
{
    *(bool *)arg = true;
}

/* An events module whose API server is the discard port: nothing answers,
 * so what it said stays queued. */
static void fx_open_discard(struct fx *f)
{
    assert_int_equal(uv_loop_init(&f->loop), 0);
    struct gpuop_kubeconfig cfg = {0};
    cfg.server = "http://127.0.0.1:9";
    struct gpuop_err err = {0};
    assert_int_equal(gpuop_kube_new(&f->loop, &cfg, &f->kube, &err), 0);
    assert_int_equal(gpuop_events_new(f->kube, NULL, &f->ev), 0);
}

static void fx_close(struct fx *f)
{
    gpuop_events_close(f->ev, NULL, NULL);
    gpuop_kube_close(f->kube, on_closed, &f->closed);
    while (!f->closed)
        uv_run(&f->loop, UV_RUN_ONCE);
    assert_int_equal(uv_loop_close(&f->loop), 0);
}

/* Findings of a world with n GPU nodes and no operand pods: 6n Missing. */
static void missing(struct fx_world *w, int n, struct gpuop_findings *out)
{
    static char names[64][16];
    fx_world_init(w, 0, 0);
    for (int i = 0; i < n; i++) {
        snprintf(names[i], sizeof(names[i]), "gpu-%02d", i);
        fx_add_node(w, names[i], FX_ALL);
    }
    fx_analyze(w);
    *out = w->f;
    memset(&w->f, 0, sizeof(w->f));
}

static void test_bounded_memory(void **state)
{
    (void)state;
    struct fx f = {0};
    fx_open_discard(&f);
    set_now(1000000);

    struct fx_world w;
    struct gpuop_findings none = {0}, f1;
    /* the first observation only learns */
    gpuop_events_observe(f.ev, "main", "uid-1", 0, &none);
    assert_int_equal(gpuop_events_posted(f.ev), 0);

    /* 20 nodes x every operand appear: 10 posted plus a summary; only the 10
     * are remembered, not the 110 suppressed by the burst limit */
    missing(&w, 20, &f1);
    assert_true(f1.nitems >= 120);
    gpuop_events_observe(f.ev, "main", "uid-1", 0, &f1);
    gpuop_findings_free(&f1);
    fx_world_free(&w);
    assert_int_equal(gpuop_events_posted(f.ev), GPUOP_EVENTS_BURST + 1);
    assert_int_equal(gpuop_events_remembered(f.ev), GPUOP_EVENTS_BURST);
    /* queued, one in flight: nothing has answered yet */
    assert_int_equal(gpuop_events_queued(f.ev), GPUOP_EVENTS_BURST + 1);

    /* all clear: a Cleared only for the ten said (no summary: nothing
     * else to say); then all back within the window: the ten already said
     * are not said again, ten others are, and a summary */
    set_now(fake_now + 30);
    struct gpuop_findings empty = {0};
    gpuop_events_observe(f.ev, "main", "uid-1", 0, &empty);
    assert_int_equal(gpuop_events_posted(f.ev), GPUOP_EVENTS_BURST + 1 + GPUOP_EVENTS_BURST);
    assert_int_equal(gpuop_events_remembered(f.ev), 2 * GPUOP_EVENTS_BURST);
    set_now(fake_now + 30);
    missing(&w, 20, &f1);
    gpuop_events_observe(f.ev, "main", "uid-1", 0, &f1);
    gpuop_findings_free(&f1);
    fx_world_free(&w);
    size_t after_flap = gpuop_events_posted(f.ev);
    assert_int_equal(after_flap, 3 * GPUOP_EVENTS_BURST + 2); /* ten others, not the same */
    assert_int_equal(gpuop_events_remembered(f.ev), 3 * GPUOP_EVENTS_BURST);

    /* past the quiet window everything is forgotten */
    set_now(fake_now + (GPUOP_EVENTS_QUIET_S + 1));
    missing(&w, 20, &f1);
    gpuop_events_observe(f.ev, "main", "uid-1", 0, &f1);
    gpuop_findings_free(&f1); /* no change */
    fx_world_free(&w);
    assert_int_equal(gpuop_events_posted(f.ev), after_flap);
    assert_int_equal(gpuop_events_remembered(f.ev), 0);

    fx_close(&f);
}

/* Random walk of a small cluster, one change a step, against a model
 * made from the findings themselves: with grace 0 and the clock moved past
 * the flap window each step, every finding that appears is said, and
 * every one that clears (all were said) gets its Cleared. After each
 * observation the Events remember exactly the keys said in it (the older
 * ones pruned), show every present finding, and have none pending: what
 * the walk of their records against the new findings decided equals the
 * keys' difference. */
enum { RW_NODES = 10, RW_OPS = 4, RW_STEPS = 400, RW_KEYS = 256 };
static const char *const rw_ops[RW_OPS] = {"driver", "container-toolkit", "device-plugin",
                                           "gpu-feature-discovery"};

struct rw_keys {
    char k[RW_KEYS][96];
    size_t n;
};

static void rw_keys_of(const struct gpuop_findings *f, struct rw_keys *out)
{
    out->n = 0;
    for (size_t i = 0; i < f->nitems; i++) {
        const struct gpuop_finding *x = &f->items[i];
        assert_true(out->n < RW_KEYS);
        snprintf(out->k[out->n++], sizeof(out->k[0]), "%s|%d|%d|%d", gpuop_finding_node(f, x),
                 x->operand, x->kind, x->reason);
    }
}

static size_t rw_missing_from(const struct rw_keys *a, const struct rw_keys *b)
{
    size_t n = 0;
    for (size_t i = 0; i < a->n; i++) {
        bool found = false;
        for (size_t j = 0; j < b->n && !found; j++)
            found = strcmp(a->k[i], b->k[j]) == 0;
        n += !found;
    }
    return n;
}

static void test_random_walk_matches_the_keys(void **state)
{
    (void)state;
    struct fx f = {0};
    fx_open_discard(&f);
    set_now(4000000);

    static char names[RW_NODES][16];
    static struct rw_keys before, after;
    bool present[RW_NODES] = {0}, runs[RW_NODES][RW_OPS] = {{0}};
    char deploy[160] = "";
    for (int o = 0; o < RW_OPS; o++)
        snprintf(deploy + strlen(deploy), sizeof(deploy) - strlen(deploy), "%s ", rw_ops[o]);
    for (int i = 0; i < RW_NODES; i++)
        snprintf(names[i], sizeof(names[i]), "gpu-%02d", (i * 7) % RW_NODES); /* not in order */
    struct gpuop_findings none = {0};
    gpuop_events_observe(f.ev, "main", "uid-1", 0, &none); /* learns an empty cluster */
    before.n = 0;
    size_t said = 0;
    for (int step = 0; step < RW_STEPS; step++) {
        int n = (int)rnd_events(RW_NODES);
        if (!present[n] || rnd_events(3) == 0) {
            present[n] = !present[n];
            for (int o = 0; o < RW_OPS; o++)
                runs[n][o] = rnd_events(2);
        } else {
            int o = (int)rnd_events(RW_OPS);
            runs[n][o] = !runs[n][o];
        }
        struct fx_world w;
        fx_world_init(&w, 0, 0);
        for (int i = 0; i < RW_NODES; i++) {
            if (!present[i])
                continue;
            fx_add_node(&w, names[i], deploy);
            char ops[160] = "";
            for (int o = 0; o < RW_OPS; o++)
                if (runs[i][o])
                    snprintf(ops + strlen(ops), sizeof(ops) - strlen(ops), "%s ", rw_ops[o]);
            fx_run(&w, names[i], ops);
        }
        fx_analyze(&w);
        rw_keys_of(&w.f, &after);
        size_t appeared = rw_missing_from(&after, &before), gone = rw_missing_from(&before, &after);
        assert_true(appeared + gone <= GPUOP_EVENTS_BURST); /* one change: within the burst */
        set_now(fake_now + GPUOP_EVENTS_QUIET_S + 61);
        gpuop_events_observe(f.ev, "main", "uid-1", 0, &w.f);
        fx_world_free(&w);
        assert_int_equal(gpuop_events_remembered(f.ev), appeared + gone);
        assert_int_equal(gpuop_events_shown(f.ev), after.n);
        assert_int_equal(gpuop_events_pending(f.ev), 0);
        said += appeared + gone;
        before = after;
    }
    print_message("%d steps, %zu findings said appeared or cleared\n", RW_STEPS, said);
    assert_true(said > RW_STEPS); /* the walk did change things */

    fx_close(&f);
}

/* Each POST is answered after 20 ms; the handler notes how many
 * connections were open when a request arrived. */
struct slow {
    struct fakeapi *srv;
    size_t max_open;
    size_t events;
};

static void slow_handler(void *arg, struct fakeapi_conn *c, const struct fakeapi_request *r)
{
    struct slow *sl = arg;
    size_t open = fakeapi_open_conns(sl->srv);
    if (open > sl->max_open)
        sl->max_open = open;
    if (strcmp(r->method, "POST") == 0 && strstr(r->path, "/namespaces/default/events"))
        sl->events++;
    static const char body[] = "{\"kind\":\"Event\"}";
    fakeapi_stream_begin(c, 201, FAKEAPI_LENGTH, sizeof(body) - 1);
    fakeapi_stream_send(c, 20, body, sizeof(body) - 1);
    fakeapi_stream_end(c, 0);
}

static void count_drained(void *arg)
{
    (*(int *)arg)++;
}

/* A burst goes out one POST at a time, in full: one connection, not eleven. */
static void test_posted_one_at_a_time(void **state)
{
    (void)state;
    struct fx f = {0};
    struct slow sl = {0};
    struct fakeapi *srv;
    assert_int_equal(uv_loop_init(&f.loop), 0);
    assert_int_equal(fakeapi_start(&f.loop, slow_handler, &sl, &srv), 0);
    sl.srv = srv;
    struct gpuop_kubeconfig cfg = {0};
    cfg.server = (char *)fakeapi_url(srv);
    struct gpuop_err err = {0};
    assert_int_equal(gpuop_kube_new(&f.loop, &cfg, &f.kube, &err), 0);
    assert_int_equal(gpuop_events_new(f.kube, NULL, &f.ev), 0);
    set_now(2000000);

    struct fx_world w;
    struct gpuop_findings none = {0}, f1;
    gpuop_events_observe(f.ev, "main", "uid-1", 0, &none);
    missing(&w, 20, &f1);
    gpuop_events_observe(f.ev, "main", "uid-1", 0, &f1);
    gpuop_findings_free(&f1);
    fx_world_free(&w);
    int drained = 0;
    gpuop_events_set_on_drained(f.ev, count_drained, &drained);
    assert_int_equal(gpuop_events_queued(f.ev), GPUOP_EVENTS_BURST + 1);
    for (int i = 0; i < 2000 && gpuop_events_queued(f.ev) > 0; i++)
        uv_run(&f.loop, UV_RUN_ONCE);
    assert_int_equal(gpuop_events_queued(f.ev), 0);
    assert_int_equal(drained, 1); /* once, when the last one went out */
    assert_int_equal(sl.events, GPUOP_EVENTS_BURST + 1);
    /* one at a time (the previous connection may still be closing) */
    assert_true(sl.max_open <= 2);
    assert_int_equal(gpuop_events_dropped(f.ev), 0);

    gpuop_events_close(f.ev, NULL, NULL);
    gpuop_kube_close(f.kube, on_closed, &f.closed);
    while (!f.closed)
        uv_run(&f.loop, UV_RUN_ONCE);
    fakeapi_stop(srv);
    uv_run(&f.loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&f.loop), 0);
}

/* ---- grace and aggregation, against a recording server ---- */

/* Answers POST 201 and PATCH 200, or PATCH 404 while patch_404. */
struct rec {
    struct fakeapi *srv;
    bool patch_404;
};

static void rec_handler(void *arg, struct fakeapi_conn *c, const struct fakeapi_request *r)
{
    struct rec *rc = arg;
    if (strcmp(r->method, "PATCH") == 0 && rc->patch_404)
        fakeapi_respond_status(c, 404, "NotFound", "events not found");
    else
        fakeapi_respond(c, strcmp(r->method, "POST") == 0 ? 201 : 200, "application/json",
                        "{\"kind\":\"Event\"}");
}

struct gx {
    struct fx fx;
    struct rec rec;
    struct gpuop_queue *queue;
    int ready;   /* on_ready calls */
    size_t seen; /* requests already looked at */
};

static void on_ready(void *arg)
{
    ((struct gx *)arg)->ready++;
}

static void gx_start(struct gx *g, bool fake_clock)
{
    memset(g, 0, sizeof(*g));
    assert_int_equal(uv_loop_init(&g->fx.loop), 0);
    assert_int_equal(fakeapi_start(&g->fx.loop, rec_handler, &g->rec, &g->rec.srv), 0);
    struct gpuop_kubeconfig cfg = {0};
    cfg.server = (char *)fakeapi_url(g->rec.srv);
    struct gpuop_err err = {0};
    assert_int_equal(gpuop_kube_new(&g->fx.loop, &cfg, &g->fx.kube, &err), 0);
    assert_int_equal(gpuop_queue_new(&g->fx.loop, on_ready, g, &g->queue), 0);
    assert_int_equal(gpuop_events_new(g->fx.kube, g->queue, &g->fx.ev), 0);
    if (!fake_clock)
        gpuop_clock_real();
}

static void gx_drain(struct gx *g)
{
    for (int i = 0; i < 5000 && gpuop_events_queued(g->fx.ev) > 0; i++)
        uv_run(&g->fx.loop, UV_RUN_ONCE);
    assert_int_equal(gpuop_events_queued(g->fx.ev), 0);
}

static void gx_stop(struct gx *g)
{
    gpuop_events_close(g->fx.ev, NULL, NULL);
    bool qclosed = false;
    gpuop_queue_close(g->queue, on_closed, &qclosed);
    gpuop_kube_close(g->fx.kube, on_closed, &g->fx.closed);
    while (!g->fx.closed || !qclosed)
        uv_run(&g->fx.loop, UV_RUN_ONCE);
    fakeapi_stop(g->rec.srv);
    uv_run(&g->fx.loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&g->fx.loop), 0);
}

/* What arrived since the last call: Warnings, Normals (POST), PATCHes;
 * reasons of the POSTs, space separated, into reasons. */
struct got {
    int warnings, normals, patches;
    char reasons[512];
    char last_name[300];
    long long last_count;
};

static struct got gx_got(struct gx *g)
{
    gx_drain(g);
    struct got out = {0};
    size_t n = fakeapi_nreq(g->rec.srv);
    for (; g->seen < n; g->seen++) {
        const struct fakeapi_request *r = fakeapi_req(g->rec.srv, g->seen);
        json_t *b = json_loads(r->body ? r->body : "", 0, NULL);
        assert_non_null(b);
        if (strcmp(r->method, "PATCH") == 0) {
            out.patches++;
            const char *slash = strrchr(r->path, '/');
            snprintf(out.last_name, sizeof(out.last_name), "%s", slash ? slash + 1 : "");
            assert_string_equal(r->ctype, "application/merge-patch+json");
        } else {
            assert_string_equal(r->method, "POST");
            const char *type = json_string_value(json_object_get(b, "type"));
            const char *reason = json_string_value(json_object_get(b, "reason"));
            assert_non_null(type);
            assert_non_null(reason);
            if (strcmp(type, "Warning") == 0)
                out.warnings++;
            else
                out.normals++;
            size_t l = strlen(out.reasons);
            snprintf(out.reasons + l, sizeof(out.reasons) - l, "%s%s", l ? " " : "", reason);
            snprintf(out.last_name, sizeof(out.last_name), "%s",
                     json_string_value(json_object_get(json_object_get(b, "metadata"), "name")));
        }
        out.last_count = json_integer_value(json_object_get(b, "count"));
        json_decref(b);
    }
    return out;
}

enum { W_NOT_CREATED = 1, W_RUNNING = 2, W_LABELLESS = 4 };

/* Operands: one finding of each per broken node. */
#define NOPS gpuop_operand_count()

/* Operands with a deploy label of their own: a LabelAbsent each on a node
 * without labels (the MPS control daemon has none to be absent). */
static int nlabels(void)
{
    int n = 0;
    for (int i = 0; i < gpuop_operand_count(); i++)
        n += !gpuop_operand_follow(i);
    return n;
}
#define NLABELS nlabels()

/* "R R ... R", n times (static buffer). */
static const char *repeat_n(const char *r, int n)
{
    static char buf[512];
    buf[0] = '\0';
    for (int i = 0; i < n; i++)
        snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s", i ? " " : "", r);
    return buf;
}

/* "R R ... R", NOPS times (static buffer). */
static const char *repeat(const char *r)
{
    return repeat_n(r, NOPS);
}

/* Observes a world: gpu-00 with every label and no pod (a PodNotCreated per
 * operand, transient) or its pods running, and with W_LABELLESS gpu-01
 * without any deploy label (a LabelAbsent per operand, not transient).
 * The DaemonSet controller says why it creates no pod (so gpu-00 does not
 * progress: a PodNotCreated waits out the grace from when it appeared). */
static void gx_observe(struct gx *g, int what, long long grace)
{
    struct fx_world w;
    fx_world_init(&w, 0, 0);
    for (size_t i = 0; i < w.nds; i++)
        w.ds[i].controller_says = "FailedCreate: Error creating: pods is forbidden";
    fx_add_node(&w, "gpu-00", FX_ALL);
    if (what & W_RUNNING)
        fx_run_all(&w, "gpu-00", NULL);
    if (what & W_LABELLESS)
        fx_add_node(&w, "gpu-01", "");
    fx_analyze(&w);
    /* borrowed: the world and its set go right after */
    gpuop_events_observe(g->fx.ev, "main", "uid-1", grace, &w.f);
    fx_world_free(&w);
}

static void test_transient_waits_out_the_grace(void **state)
{
    (void)state;
    struct gx g;
    gx_start(&g, true);
    set_now(3000000);
    struct got got;

    gx_observe(&g, W_RUNNING, 60); /* learns: all running */
    /* six PodNotCreated: pending, nothing posted, a recheck requeued */
    gx_observe(&g, W_NOT_CREATED, 60);
    got = gx_got(&g);
    assert_int_equal(got.warnings + got.normals + got.patches, 0);
    assert_int_equal(gpuop_events_pending(g.fx.ev), NOPS);
    assert_int_equal(gpuop_queue_delayed(g.queue), 1);
    /* pods come up within the grace: no Warning, no Cleared, nothing left */
    set_now(fake_now + 30);
    gx_observe(&g, W_NOT_CREATED, 60);
    set_now(fake_now + 20);
    gx_observe(&g, W_RUNNING, 60);
    got = gx_got(&g);
    assert_int_equal(got.warnings + got.normals + got.patches, 0);
    assert_int_equal(gpuop_events_pending(g.fx.ev), 0);
    assert_int_equal(gpuop_events_shown(g.fx.ev), 0);

    /* a non-transient finding is posted at once, grace or not */
    gx_observe(&g, W_RUNNING | W_LABELLESS, 60);
    got = gx_got(&g);
    assert_int_equal(got.warnings, NLABELS);
    assert_string_equal(got.reasons, repeat_n("LabelAbsent", NLABELS));
    assert_int_equal(gpuop_events_shown(g.fx.ev), NLABELS);

    /* PodNotCreated again, and it lasts: posted when the grace has passed
     * (one second short: not yet) */
    set_now(fake_now + 10);
    gx_observe(&g, W_NOT_CREATED | W_LABELLESS, 60);
    set_now(fake_now + 59);
    gx_observe(&g, W_NOT_CREATED | W_LABELLESS, 60);
    got = gx_got(&g);
    assert_int_equal(got.warnings + got.normals, 0);
    set_now(fake_now + 1);
    gx_observe(&g, W_NOT_CREATED | W_LABELLESS, 60);
    got = gx_got(&g);
    assert_int_equal(got.warnings, NOPS);
    assert_int_equal(got.normals, 0);
    assert_string_equal(got.reasons, repeat("PodNotCreated"));
    assert_int_equal(gpuop_events_pending(g.fx.ev), 0);
    assert_int_equal(gpuop_events_shown(g.fx.ev), NOPS + NLABELS);
    /* nothing more while it stays */
    set_now(fake_now + 100);
    gx_observe(&g, W_NOT_CREATED | W_LABELLESS, 60);
    got = gx_got(&g);
    assert_int_equal(got.warnings + got.normals + got.patches, 0);

    /* everything clears: one Cleared for each posted finding */
    gx_observe(&g, W_RUNNING, 60);
    got = gx_got(&g);
    assert_int_equal(got.warnings, 0);
    assert_int_equal(got.normals, 10 + 1); /* the burst, then the summary */
    assert_non_null(strstr(got.reasons, "PodNotCreatedCleared"));
    /* gpu-00's first: gpu-01's LabelAbsent only where the burst has room */
    if (NOPS < GPUOP_EVENTS_BURST)
        assert_non_null(strstr(got.reasons, "LabelAbsentCleared"));
    else
        assert_null(strstr(got.reasons, "LabelAbsentCleared"));
    assert_non_null(strstr(got.reasons, "FindingsSummarized"));
    /* those beyond the burst were not said: forgotten all the same */
    assert_int_equal(gpuop_events_shown(g.fx.ev), 0);

    /* grace 0: transient findings are posted at once */
    set_now(fake_now + 1000);
    gx_observe(&g, W_NOT_CREATED, 0);
    got = gx_got(&g);
    assert_int_equal(got.warnings + got.patches, NOPS); /* the same Events: counted up */
    assert_int_equal(got.patches, NOPS);
    assert_int_equal(gpuop_events_pending(g.fx.ev), 0);
    gx_stop(&g);
}

/* The first observation cannot tell old findings from new: nothing at
 * once, and what lasts the grace is said once, whatever its reason. */
static void test_first_observation_waits_out_the_grace(void **state)
{
    (void)state;
    struct gx g;
    gx_start(&g, true);
    set_now(5000000);
    gx_observe(&g, W_RUNNING | W_LABELLESS, 60);
    struct got got = gx_got(&g);
    assert_int_equal(got.warnings + got.normals + got.patches, 0);
    assert_int_equal(gpuop_events_pending(g.fx.ev), NLABELS);
    assert_int_equal(gpuop_queue_delayed(g.queue), 1);
    set_now(fake_now + 60);
    gx_observe(&g, W_RUNNING | W_LABELLESS, 60);
    got = gx_got(&g);
    assert_int_equal(got.warnings, NLABELS);
    assert_string_equal(got.reasons, repeat_n("LabelAbsent", NLABELS));
    assert_int_equal(gpuop_events_pending(g.fx.ev), 0);
    assert_int_equal(gpuop_events_shown(g.fx.ev), NLABELS);
    gx_stop(&g);
}

/* With the real clock: the queue hands the policy's key back once the
 * grace has passed, and that reconcile posts the Warnings. */
static void test_requeued_when_the_grace_ends(void **state)
{
    (void)state;
    struct gx g;
    gx_start(&g, false);
    gx_observe(&g, W_RUNNING, 1);
    gx_observe(&g, W_NOT_CREATED, 1);
    assert_int_equal(gpuop_events_pending(g.fx.ev), NOPS);
    assert_int_equal(gpuop_queue_delayed(g.queue), 1);
    uint64_t start = uv_hrtime();
    while (!g.ready && uv_hrtime() - start < 20000000000ull)
        uv_run(&g.fx.loop, UV_RUN_ONCE);
    assert_int_equal(g.ready, 1);
    assert_true(uv_hrtime() - start >= 900000000ull); /* not before the grace */
    char *key = gpuop_queue_get(g.queue);
    assert_non_null(key);
    assert_string_equal(key, "main");
    gx_observe(&g, W_NOT_CREATED, 1);
    gpuop_queue_done(g.queue, key);
    free(key);
    struct got got = gx_got(&g);
    assert_int_equal(got.warnings, NOPS);
    assert_int_equal(gpuop_events_pending(g.fx.ev), 0);
    assert_int_equal(gpuop_queue_delayed(g.queue), 0); /* nothing left to wait for */
    gx_stop(&g);
}

/* The same Event (type, reason, message) again is one object counted up:
 * a PATCH of its count, to the name it was created with; an object gone
 * meanwhile (404) is created again. */
static void test_same_event_is_counted_up(void **state)
{
    (void)state;
    struct gx g;
    gx_start(&g, true);
    set_now(4000000);
    gx_observe(&g, W_RUNNING, 60);
    gx_observe(&g, W_RUNNING | W_LABELLESS, 60);
    struct got got = gx_got(&g);
    assert_int_equal(got.warnings, NLABELS);
    assert_int_equal(got.last_count, 1);
    char name[300];
    snprintf(name, sizeof(name), "%s", got.last_name);
    assert_true(strncmp(name, "main.", 5) == 0 && strlen(name) == 5 + 16);
    /* cleared, then back after the flap window: the same six messages */
    set_now(fake_now + 10);
    gx_observe(&g, W_RUNNING, 60);
    got = gx_got(&g);
    assert_int_equal(got.normals, NLABELS);
    set_now(fake_now + (GPUOP_EVENTS_QUIET_S + 1));
    gx_observe(&g, W_RUNNING | W_LABELLESS, 60);
    got = gx_got(&g);
    assert_int_equal(got.warnings + got.normals, 0);
    assert_int_equal(got.patches, NLABELS);
    assert_string_equal(got.last_name, name);
    const struct fakeapi_request *r = fakeapi_last(g.rec.srv);
    assert_non_null(strstr(r->body, "\"count\":2"));
    assert_non_null(strstr(r->body, "\"lastTimestamp\":"));
    /* once more, and the objects have expired: PATCH 404, then POST */
    g.rec.patch_404 = true;
    set_now(fake_now + 10);
    gx_observe(&g, W_RUNNING, 60);
    set_now(fake_now + (GPUOP_EVENTS_QUIET_S + 1));
    (void)gx_got(&g);
    gx_observe(&g, W_RUNNING | W_LABELLESS, 60);
    got = gx_got(&g);
    assert_int_equal(got.patches, NLABELS);
    assert_int_equal(got.warnings, NLABELS);
    assert_int_equal(got.last_count, 3);
    assert_string_equal(got.last_name, name);
    gx_stop(&g);
}

/* The recorder alone, for an object in a namespace: the Event goes to that
 * namespace and names it; the same Event again is a PATCH of its count;
 * a full queue drops and counts. */
static void test_recorder_namespaced_and_bounded(void **state)
{
    (void)state;
    struct gx g;
    gx_start(&g, false);
    struct gpuop_recorder *r = NULL;
    assert_int_equal(gpuop_recorder_new(g.fx.kube, "tester", &r), 0);
    set_now(5000000);
    struct gpuop_recorder_object obj = {
        .api_version = "apps/v1", .kind = "DaemonSet", .ns = "gpu-operator", .name = "dcgm-"};
    gpuop_recorder_event(r, &obj, "Warning", "Broken", "it broke");
    for (int i = 0; i < 2000 && gpuop_recorder_queued(r) > 0; i++)
        uv_run(&g.fx.loop, UV_RUN_ONCE);
    const struct fakeapi_request *q = fakeapi_last(g.rec.srv);
    assert_non_null(q);
    assert_string_equal(q->method, "POST");
    assert_string_equal(q->path, "/api/v1/namespaces/gpu-operator/events");
    json_t *b = json_loads(q->body, 0, NULL);
    assert_non_null(b);
    json_t *io = json_object_get(b, "involvedObject");
    assert_string_equal(json_string_value(json_object_get(io, "namespace")), "gpu-operator");
    assert_string_equal(json_string_value(json_object_get(io, "kind")), "DaemonSet");
    assert_string_equal(json_string_value(json_object_get(io, "uid")), "");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(b, "source"), "component")), "tester");
    const char *name = json_string_value(json_object_get(json_object_get(b, "metadata"), "name"));
    assert_true(strncmp(name, "dcgm.", 5) == 0 && strlen(name) == 5 + 16); /* no "-." */
    char path[128];
    snprintf(path, sizeof(path), "/api/v1/namespaces/gpu-operator/events/%s", name);
    json_decref(b);
    set_now(fake_now + 5);
    gpuop_recorder_event(r, &obj, "Warning", "Broken", "it broke");
    for (int i = 0; i < 2000 && gpuop_recorder_queued(r) > 0; i++)
        uv_run(&g.fx.loop, UV_RUN_ONCE);
    q = fakeapi_last(g.rec.srv);
    assert_string_equal(q->method, "PATCH");
    assert_string_equal(q->path, path);
    assert_non_null(strstr(q->body, "\"count\":2"));
    assert_int_equal(gpuop_recorder_posted(r), 2);
    /* an API server that does not answer in time: the queue fills */
    char msg[32];
    for (int i = 0; i < GPUOP_RECORDER_QUEUE_MAX + 5; i++) {
        snprintf(msg, sizeof(msg), "number %d", i);
        gpuop_recorder_event(r, &obj, "Normal", "Counted", msg);
    }
    assert_int_equal(gpuop_recorder_queued(r), GPUOP_RECORDER_QUEUE_MAX);
    assert_int_equal(gpuop_recorder_dropped(r), 5);
    assert_int_equal(gpuop_recorder_posted(r), 2 + GPUOP_RECORDER_QUEUE_MAX);
    gpuop_recorder_close(r); /* with a post in flight and the rest waiting */
    gx_stop(&g);
}

/* ---- a rollout over time: progress per node ---- */

/* RFC 3339 of t (static buffer, one at a time). */
static const char *rfc3339(long long t)
{
    static char buf[32];
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

/* Adds to w, through the model's parser, the pod of operand opname on
 * gpu-00 as the kubelet reports it: phase; Ready since `ready` (0: not
 * Ready); held in init container `gate` (running since gate_at; NULL:
 * initialized); its container waiting for `waiting` (NULL: not waiting)
 * after `restarts` restarts. Created 5 s before the first of its times. */
static void kpod(struct fx_world *w, const char *opname, const char *phase, long long ready,
                 const char *gate, long long gate_at, const char *waiting, int restarts)
{
    char name[96];
    snprintf(name, sizeof(name), "%s-gpu-00", opname);
    long long created = (gate ? gate_at : ready ? ready : fake_now) - 5;
    json_t *meta =
        json_pack("{s:s, s:{s:s}, s:s}", "name", name, "labels", "app.kubernetes.io/component",
                  opname, "creationTimestamp", rfc3339(created));
    json_t *status = json_pack("{s:s, s:[]}", "phase", phase, "conditions");
    json_t *conds = json_object_get(status, "conditions");
    json_array_append_new(conds, json_pack("{s:s, s:s, s:s}", "type", "Initialized", "status",
                                           gate ? "False" : "True", "lastTransitionTime",
                                           rfc3339(created)));
    json_array_append_new(conds, json_pack("{s:s, s:s, s:s}", "type", "Ready", "status",
                                           ready ? "True" : "False", "lastTransitionTime",
                                           rfc3339(ready ? ready : created)));
    if (gate)
        json_object_set_new(status, "initContainerStatuses",
                            json_pack("[{s:s, s:b, s:i, s:{s:{s:s}}}]", "name", gate, "ready", 0,
                                      "restartCount", 0, "state", "running", "startedAt",
                                      rfc3339(gate_at)));
    json_t *state = waiting ? json_pack("{s:{s:s}}", "waiting", "reason", waiting)
                    : ready ? json_pack("{s:{s:s}}", "running", "startedAt", rfc3339(ready))
                            : json_pack("{s:{}}", "running");
    json_object_set_new(status, "containerStatuses",
                        json_pack("[{s:s, s:b, s:i, s:o}]", "name", "main", "ready", ready != 0,
                                  "restartCount", restarts, "state", state));
    json_t *j = json_pack("{s:o, s:{s:s}, s:o}", "metadata", meta, "spec", "nodeName", "gpu-00",
                          "status", status);
    assert_non_null(j);
    assert_true(w->npods < FX_MAX_PODS);
    assert_non_null(w->pods[w->npods] = gpuop_pod_new(j, NULL, NULL));
    w->pp[w->npods] = w->pods[w->npods];
    w->npods++;
    json_decref(j);
}

/* The findings of w at fake_now, observed with grace 60 (the default). */
static void observe_at_now(struct gx *g, struct fx_world *w)
{
    w->pol.event_grace_s = GPUOP_EVENT_GRACE_DEFAULT;
    w->pol.advertise_grace_s = GPUOP_ADVERTISE_GRACE_DEFAULT;
    w->pol.terminating_grace_s = GPUOP_TERMINATING_GRACE_DEFAULT;
    fx_analyze_at(w, fake_now);
    gpuop_events_observe(g->fx.ev, "main", "uid-1", GPUOP_EVENT_GRACE_DEFAULT, &w->f);
}

/* gpu-00 at t seconds into a rollout that started at t0, as the GPU
 * Operator's pods go through it: no pod yet; the driver creating its
 * container while every other operand waits in its gate (the validator in
 * driver-validation); the driver building its module (Running, not
 * Ready) for 200 s; Ready, the toolkit's gate opens; the toolkit Ready,
 * the rest's gates open; all Ready. MIG Manager has no gate here and comes
 * up before the toolkit: PrerequisiteNotRunning for 220 s, the rollout's
 * order, not a failure. */
static void rollout_world(struct fx_world *w, long long t0, long long t)
{
    static const char *const gated[] = {"device-plugin", "gpu-feature-discovery", "dcgm",
                                        "dcgm-exporter", "mps-control-daemon"};
    fx_world_init(w, 0, 0);
    fx_add_node(w, "gpu-00", FX_ALL);
    long long d = t - t0, start = t0 + 75;
    if (d < 70)
        return; /* the DaemonSet controller has not got here yet */
    kpod(w, "driver", d < 200 ? "Pending" : "Running", d >= 400 ? t0 + 400 : 0, NULL, 0,
         d < 200 ? "ContainerCreating" : NULL, 0);
    if (d < 430)
        kpod(w, "container-toolkit", "Pending", 0, "driver-validation", start, "PodInitializing",
             0);
    else
        kpod(w, "container-toolkit", "Running", t0 + 430, NULL, 0, NULL, 0);
    if (d < 420) /* the DRA plugin waits for the driver, not the toolkit */
        kpod(w, "dra-driver", "Pending", 0, "driver-validation", start, "PodInitializing", 0);
    else
        kpod(w, "dra-driver", "Running", t0 + 420, NULL, 0, NULL, 0);
    for (size_t i = 0; i < sizeof(gated) / sizeof(gated[0]); i++)
        if (d < 460)
            kpod(w, gated[i], "Pending", 0, "toolkit-validation", start, "PodInitializing", 0);
        else
            kpod(w, gated[i], "Running", t0 + 460, NULL, 0, NULL, 0);
    if (d < 210)
        kpod(w, "mig-manager", "Pending", 0, NULL, 0, "ContainerCreating", 0);
    else
        kpod(w, "mig-manager", "Running", t0 + 210, NULL, 0, NULL, 0);
    if (d < 480)
        kpod(w, "operator-validator", "Pending", 0,
             d < 435 ? "driver-validation" : "plugin-validation", d < 435 ? start : t0 + 435,
             "PodInitializing", 0);
    else
        kpod(w, "operator-validator", "Running", t0 + 480, NULL, 0, NULL, 0);
}

/* A healthy rollout that takes eight minutes, its findings long past the
 * grace, posts no Event at all: every reconcile sees gpu-00 progress. */
static void test_long_rollout_stays_quiet(void **state)
{
    (void)state;
    struct gx g;
    gx_start(&g, true);
    long long t0 = 7000000;
    set_now(t0 - 10);
    struct fx_world w;
    fx_world_init(&w, 0, 0); /* learns a world without GPU nodes */
    observe_at_now(&g, &w);
    fx_world_free(&w);
    bool saw_gate = false, saw_order = false;
    for (set_now(t0); fake_now <= t0 + 520; set_now(fake_now + 5)) {
        rollout_world(&w, t0, fake_now);
        observe_at_now(&g, &w);
        /* what the status shows meanwhile: the truth */
        fx_analyze_at(&w, fake_now);
        saw_gate |= w.f.by_reason[GPUOP_REASON_WAITING_FOR_GATE] > 0;
        saw_order |= w.f.by_reason[GPUOP_REASON_PREREQUISITE_NOT_RUNNING] > 0;
        if (w.f.nitems && !w.f.nodes[0].progressing)
            fail_msg("gpu-00 does not progress %lld s into the rollout", fake_now - t0);
        fx_world_free(&w);
        struct got got = gx_got(&g);
        if (got.warnings + got.normals + got.patches)
            fail_msg("%lld s into the rollout: %d Warnings (%s), %d Normals", fake_now - t0,
                     got.warnings, got.reasons, got.normals);
    }
    assert_true(saw_gate);
    assert_true(saw_order);
    assert_int_equal(gpuop_events_pending(g.fx.ev), 0); /* all complete: nothing waits */
    assert_int_equal(gpuop_events_stalled(g.fx.ev), 0);
    gx_stop(&g);
}

/* gpu-00 with only the driver and the toolkit enabled: the driver becomes
 * Ready at t0 + 100 but the toolkit's gate stays shut. The node progresses
 * while the driver starts and for a grace after it is Ready, then stops:
 * one Warning (WaitingForGate) a grace after the driver became Ready, none
 * before, none again; one Cleared when the gate opens. */
static void stuck_world(struct fx_world *w, long long t0, bool opened)
{
    fx_world_init(w, 0, 0);
    for (int i = 0; i < gpuop_operand_count(); i++)
        w->pol.operands[i].enabled =
            i == gpuop_operand_by_name("driver") || i == gpuop_operand_by_name("container-toolkit");
    fx_add_node(w, "gpu-00", FX_ALL);
    bool ready = fake_now >= t0 + 100;
    kpod(w, "driver", ready ? "Running" : "Pending", ready ? t0 + 100 : 0, NULL, 0,
         ready ? NULL : "ContainerCreating", 0);
    if (opened)
        kpod(w, "container-toolkit", "Running", fake_now - 1, NULL, 0, NULL, 0);
    else
        kpod(w, "container-toolkit", "Pending", 0, "driver-validation", t0, "PodInitializing", 0);
}

static void test_stalled_node_posts_once(void **state)
{
    (void)state;
    struct gx g;
    gx_start(&g, true);
    long long t0 = 8000000;
    set_now(t0 - 10);
    struct fx_world w;
    fx_world_init(&w, 0, 0);
    observe_at_now(&g, &w);
    fx_world_free(&w);
    struct got got;
    for (set_now(t0); fake_now < t0 + 160; set_now(fake_now + 10)) {
        stuck_world(&w, t0, false);
        observe_at_now(&g, &w);
        fx_world_free(&w);
        got = gx_got(&g);
        if (got.warnings + got.normals + got.patches)
            fail_msg("%lld s in: %s", fake_now - t0, got.reasons);
    }
    assert_int_equal(gpuop_events_pending(g.fx.ev), 1); /* the gate, waiting for the node */
    assert_int_equal(gpuop_events_stalled(g.fx.ev), 0); /* still progressing at t0 + 150 */
    /* a grace after the driver became Ready: stalled since then, said */
    set_now(t0 + 161);
    stuck_world(&w, t0, false);
    observe_at_now(&g, &w);
    fx_world_free(&w);
    got = gx_got(&g);
    assert_int_equal(got.warnings, 1);
    assert_int_equal(got.normals + got.patches, 0);
    assert_string_equal(got.reasons, "WaitingForGate");
    assert_int_equal(gpuop_events_pending(g.fx.ev), 0);
    assert_int_equal(gpuop_events_shown(g.fx.ev), 1);
    const struct fakeapi_request *r = fakeapi_last(g.rec.srv);
    assert_non_null(strstr(r->body, "held in init container driver-validation"));
    for (set_now(t0 + 170); fake_now < t0 + 400; set_now(fake_now + 30)) {
        stuck_world(&w, t0, false);
        observe_at_now(&g, &w);
        fx_world_free(&w);
    }
    got = gx_got(&g);
    assert_int_equal(got.warnings + got.normals + got.patches, 0); /* once */
    stuck_world(&w, t0, true);
    observe_at_now(&g, &w);
    fx_world_free(&w);
    got = gx_got(&g);
    assert_int_equal(got.normals, 1);
    assert_string_equal(got.reasons, "WaitingForGateCleared");
    gx_stop(&g);
}

/* docs/findings.md's Event reasons section lists exactly the reasons the
 * table marks transient, on its "Transient reasons" line. */
static void test_docs_list_the_transient_reasons(void **state)
{
    (void)state;
    char path[1024];
    snprintf(path, sizeof(path), "%s/docs/findings.md", SRCDIR);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    char line[4096];
    bool in_section = false, found = false;
    while (fgets(line, sizeof(line), fp)) {
        if (!strncmp(line, "## ", 3))
            in_section = !strncmp(line, "## Event reasons", 16);
        if (in_section && !strncmp(line, "Transient reasons", 17)) {
            found = true;
            break;
        }
    }
    char steps[4096] = "";
    while (found && fgets(steps, sizeof(steps), fp) && strncmp(steps, "Rollout steps", 13))
        steps[0] = '\0';
    fclose(fp);
    assert_true(found);
    assert_true(strncmp(steps, "Rollout steps", 13) == 0);
    for (int r = 0; r < GPUOP_REASON_COUNT; r++) {
        const struct gpuop_reason_info *ri = gpuop_reason_get(r);
        char quoted[96];
        snprintf(quoted, sizeof(quoted), "`%s`", ri->name);
        if ((strstr(line, quoted) != NULL) != (ri->transient != GPUOP_WAIT_NONE))
            fail_msg("docs/findings.md: %s is %stransient in the table", ri->name,
                     ri->transient ? "" : "not ");
        if ((strstr(steps, quoted) != NULL) != (ri->transient == GPUOP_WAIT_STALL))
            fail_msg("docs/findings.md: %s is %sa rollout step in the table", ri->name,
                     ri->transient == GPUOP_WAIT_STALL ? "" : "not ");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_bounded_memory, real_clock),
        cmocka_unit_test_setup(test_random_walk_matches_the_keys, real_clock),
        cmocka_unit_test_setup(test_posted_one_at_a_time, real_clock),
        cmocka_unit_test_setup(test_transient_waits_out_the_grace, real_clock),
        cmocka_unit_test_setup(test_first_observation_waits_out_the_grace, real_clock),
        cmocka_unit_test_setup(test_requeued_when_the_grace_ends, real_clock),
        cmocka_unit_test_setup(test_same_event_is_counted_up, real_clock),
        cmocka_unit_test_setup(test_recorder_namespaced_and_bounded, real_clock),
        cmocka_unit_test_setup(test_long_rollout_stays_quiet, real_clock),
        cmocka_unit_test_setup(test_stalled_node_posts_once, real_clock),
        cmocka_unit_test_setup(test_docs_list_the_transient_reasons, real_clock),
    };
    return cmocka_run_group_tests(tests, process_setup, process_teardown);
}
