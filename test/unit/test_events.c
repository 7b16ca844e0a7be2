/*
 * test_events.c - Events on finding changes: the burst limit, flap
 * suppression, and that what is remembered for it stays bounded (only what
 * was posted, forgotten after the quiet window); the grace period of
 * transient findings (pending -> posted -> cleared, or pending -> gone
 * without a word), the first observation (everything waits out the grace),
 * the requeue when a grace ends, and aggregation (the
 * same Event again counts up its object). The first tests post to a port
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
#include <cmocka.h>

#include "events_int.h"
#include "gpuop/kube.h"
#include "queue_int.h"
#include "fakeapi.h"
#include "world_fixture.h"

static long long fake_now;

static long long clock_fn(void)
{
    return fake_now;
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
    assert_int_equal(uv_loop_init(&f.loop), 0);
    struct gpuop_kubeconfig cfg = {0};
    cfg.server = "http://127.0.0.1:9"; /* discard: nothing answers */
    struct gpuop_err err = {0};
    assert_int_equal(gpuop_kube_new(&f.loop, &cfg, &f.kube, &err), 0);
    assert_int_equal(gpuop_events_new(f.kube, NULL, &f.ev), 0);
    gpuop_events_set_clock(f.ev, clock_fn);
    fake_now = 1000000;

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
    fx_world_free(&w);
    assert_int_equal(gpuop_events_posted(f.ev), GPUOP_EVENTS_BURST + 1);
    assert_int_equal(gpuop_events_remembered(f.ev), GPUOP_EVENTS_BURST);
    /* queued, one in flight: nothing has answered yet */
    assert_int_equal(gpuop_events_queued(f.ev), GPUOP_EVENTS_BURST + 1);

    /* all clear: a Cleared only for the ten said (no summary: nothing
     * else to say); then all back within the window: the ten already said
     * are not said again, ten others are, and a summary */
    fake_now += 30;
    struct gpuop_findings empty = {0};
    gpuop_events_observe(f.ev, "main", "uid-1", 0, &empty);
    assert_int_equal(gpuop_events_posted(f.ev), GPUOP_EVENTS_BURST + 1 + GPUOP_EVENTS_BURST);
    assert_int_equal(gpuop_events_remembered(f.ev), 2 * GPUOP_EVENTS_BURST);
    fake_now += 30;
    missing(&w, 20, &f1);
    gpuop_events_observe(f.ev, "main", "uid-1", 0, &f1);
    fx_world_free(&w);
    size_t after_flap = gpuop_events_posted(f.ev);
    assert_int_equal(after_flap, 3 * GPUOP_EVENTS_BURST + 2); /* ten others, not the same */
    assert_int_equal(gpuop_events_remembered(f.ev), 3 * GPUOP_EVENTS_BURST);

    /* past the quiet window everything is forgotten */
    fake_now += GPUOP_EVENTS_QUIET_S + 1;
    missing(&w, 20, &f1);
    gpuop_events_observe(f.ev, "main", "uid-1", 0, &f1); /* no change */
    fx_world_free(&w);
    assert_int_equal(gpuop_events_posted(f.ev), after_flap);
    assert_int_equal(gpuop_events_remembered(f.ev), 0);

    gpuop_events_close(f.ev, NULL, NULL);
    gpuop_kube_close(f.kube, on_closed, &f.closed);
    while (!f.closed)
        uv_run(&f.loop, UV_RUN_ONCE);
    assert_int_equal(uv_loop_close(&f.loop), 0);
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
    gpuop_events_set_clock(f.ev, clock_fn);
    fake_now = 2000000;

    struct fx_world w;
    struct gpuop_findings none = {0}, f1;
    gpuop_events_observe(f.ev, "main", "uid-1", 0, &none);
    missing(&w, 20, &f1);
    gpuop_events_observe(f.ev, "main", "uid-1", 0, &f1);
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
    if (fake_clock)
        gpuop_events_set_clock(g->fx.ev, clock_fn);
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

/* "R R ... R", NOPS times (static buffer). */
static const char *repeat(const char *r)
{
    static char buf[512];
    buf[0] = '\0';
    for (int i = 0; i < NOPS; i++)
        snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s", i ? " " : "", r);
    return buf;
}

/* Observes a world: gpu-00 with every label and no pod (a PodNotCreated per
 * operand, transient) or its pods running, and with W_LABELLESS gpu-01
 * without any deploy label (a LabelAbsent per operand, not transient). */
static void gx_observe(struct gx *g, int what, long long grace)
{
    struct fx_world w;
    fx_world_init(&w, 0, 0);
    fx_add_node(&w, "gpu-00", FX_ALL);
    if (what & W_RUNNING)
        fx_run_all(&w, "gpu-00", NULL);
    if (what & W_LABELLESS)
        fx_add_node(&w, "gpu-01", "");
    fx_analyze(&w);
    struct gpuop_findings f = w.f;
    memset(&w.f, 0, sizeof(w.f));
    gpuop_events_observe(g->fx.ev, "main", "uid-1", grace, &f);
    fx_world_free(&w);
}

static void test_transient_waits_out_the_grace(void **state)
{
    (void)state;
    struct gx g;
    gx_start(&g, true);
    fake_now = 3000000;
    struct got got;

    gx_observe(&g, W_RUNNING, 60); /* learns: all running */
    /* six PodNotCreated: pending, nothing posted, a recheck requeued */
    gx_observe(&g, W_NOT_CREATED, 60);
    got = gx_got(&g);
    assert_int_equal(got.warnings + got.normals + got.patches, 0);
    assert_int_equal(gpuop_events_pending(g.fx.ev), NOPS);
    assert_int_equal(gpuop_queue_delayed(g.queue), 1);
    /* pods come up within the grace: no Warning, no Cleared, nothing left */
    fake_now += 30;
    gx_observe(&g, W_NOT_CREATED, 60);
    fake_now += 20;
    gx_observe(&g, W_RUNNING, 60);
    got = gx_got(&g);
    assert_int_equal(got.warnings + got.normals + got.patches, 0);
    assert_int_equal(gpuop_events_pending(g.fx.ev), 0);
    assert_int_equal(gpuop_events_shown(g.fx.ev), 0);

    /* a non-transient finding is posted at once, grace or not */
    gx_observe(&g, W_RUNNING | W_LABELLESS, 60);
    got = gx_got(&g);
    assert_int_equal(got.warnings, NOPS);
    assert_string_equal(got.reasons, repeat("LabelAbsent"));
    assert_int_equal(gpuop_events_shown(g.fx.ev), NOPS);

    /* PodNotCreated again, and it lasts: posted when the grace has passed
     * (one second short: not yet) */
    fake_now += 10;
    gx_observe(&g, W_NOT_CREATED | W_LABELLESS, 60);
    fake_now += 59;
    gx_observe(&g, W_NOT_CREATED | W_LABELLESS, 60);
    got = gx_got(&g);
    assert_int_equal(got.warnings + got.normals, 0);
    fake_now += 1;
    gx_observe(&g, W_NOT_CREATED | W_LABELLESS, 60);
    got = gx_got(&g);
    assert_int_equal(got.warnings, NOPS);
    assert_int_equal(got.normals, 0);
    assert_string_equal(got.reasons, repeat("PodNotCreated"));
    assert_int_equal(gpuop_events_pending(g.fx.ev), 0);
    assert_int_equal(gpuop_events_shown(g.fx.ev), 2 * NOPS);
    /* nothing more while it stays */
    fake_now += 100;
    gx_observe(&g, W_NOT_CREATED | W_LABELLESS, 60);
    got = gx_got(&g);
    assert_int_equal(got.warnings + got.normals + got.patches, 0);

    /* everything clears: one Cleared for each posted finding */
    gx_observe(&g, W_RUNNING, 60);
    got = gx_got(&g);
    assert_int_equal(got.warnings, 0);
    assert_int_equal(got.normals, 10 + 1); /* the burst, then the summary */
    assert_non_null(strstr(got.reasons, "PodNotCreatedCleared"));
    assert_non_null(strstr(got.reasons, "LabelAbsentCleared"));
    assert_non_null(strstr(got.reasons, "FindingsSummarized"));
    /* the two beyond the burst were not said: forgotten all the same */
    assert_int_equal(gpuop_events_shown(g.fx.ev), 0);

    /* grace 0: transient findings are posted at once */
    fake_now += 1000;
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
    fake_now = 5000000;
    gx_observe(&g, W_RUNNING | W_LABELLESS, 60);
    struct got got = gx_got(&g);
    assert_int_equal(got.warnings + got.normals + got.patches, 0);
    assert_int_equal(gpuop_events_pending(g.fx.ev), NOPS);
    assert_int_equal(gpuop_queue_delayed(g.queue), 1);
    fake_now += 60;
    gx_observe(&g, W_RUNNING | W_LABELLESS, 60);
    got = gx_got(&g);
    assert_int_equal(got.warnings, NOPS);
    assert_string_equal(got.reasons, repeat("LabelAbsent"));
    assert_int_equal(gpuop_events_pending(g.fx.ev), 0);
    assert_int_equal(gpuop_events_shown(g.fx.ev), NOPS);
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
    fake_now = 4000000;
    gx_observe(&g, W_RUNNING, 60);
    gx_observe(&g, W_RUNNING | W_LABELLESS, 60);
    struct got got = gx_got(&g);
    assert_int_equal(got.warnings, NOPS);
    assert_int_equal(got.last_count, 1);
    char name[300];
    snprintf(name, sizeof(name), "%s", got.last_name);
    assert_true(strncmp(name, "main.", 5) == 0 && strlen(name) == 5 + 16);
    /* cleared, then back after the flap window: the same six messages */
    fake_now += 10;
    gx_observe(&g, W_RUNNING, 60);
    got = gx_got(&g);
    assert_int_equal(got.normals, NOPS);
    fake_now += GPUOP_EVENTS_QUIET_S + 1;
    gx_observe(&g, W_RUNNING | W_LABELLESS, 60);
    got = gx_got(&g);
    assert_int_equal(got.warnings + got.normals, 0);
    assert_int_equal(got.patches, NOPS);
    assert_string_equal(got.last_name, name);
    const struct fakeapi_request *r = fakeapi_last(g.rec.srv);
    assert_non_null(strstr(r->body, "\"count\":2"));
    assert_non_null(strstr(r->body, "\"lastTimestamp\":"));
    /* once more, and the objects have expired: PATCH 404, then POST */
    g.rec.patch_404 = true;
    fake_now += 10;
    gx_observe(&g, W_RUNNING, 60);
    fake_now += GPUOP_EVENTS_QUIET_S + 1;
    (void)gx_got(&g);
    gx_observe(&g, W_RUNNING | W_LABELLESS, 60);
    got = gx_got(&g);
    assert_int_equal(got.patches, NOPS);
    assert_int_equal(got.warnings, NOPS);
    assert_int_equal(got.last_count, 3);
    assert_string_equal(got.last_name, name);
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
    fclose(fp);
    assert_true(found);
    for (int r = 0; r < GPUOP_REASON_COUNT; r++) {
        const struct gpuop_reason_info *ri = gpuop_reason_get(r);
        char quoted[96];
        snprintf(quoted, sizeof(quoted), "`%s`", ri->name);
        if ((strstr(line, quoted) != NULL) != ri->transient)
            fail_msg("docs/findings.md: %s is %stransient in the table", ri->name,
                     ri->transient ? "" : "not ");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bounded_memory),
        cmocka_unit_test(test_posted_one_at_a_time),
        cmocka_unit_test(test_transient_waits_out_the_grace),
        cmocka_unit_test(test_first_observation_waits_out_the_grace),
        cmocka_unit_test(test_requeued_when_the_grace_ends),
        cmocka_unit_test(test_same_event_is_counted_up),
        cmocka_unit_test(test_docs_list_the_transient_reasons),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
