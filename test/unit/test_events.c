/*
 * test_events.c - Events on finding changes: the burst limit, flap
 * suppression, and that what is remembered for it stays bounded (only what
 * was posted, forgotten after the quiet window). The posts go to a port
 * nobody listens on: only what gpuop decides to post is checked here; the
 * e2e tests read real Events from the lab.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpuop/events.h"
#include "gpuop/kube.h"
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
    assert_int_equal(gpuop_events_new(f.kube, &f.ev), 0);
    gpuop_events_set_clock(f.ev, clock_fn);
    fake_now = 1000000;

    struct fx_world w;
    struct gpuop_findings none = {0}, f1;
    /* the first observation only learns */
    gpuop_events_observe(f.ev, "main", "uid-1", &none);
    assert_int_equal(gpuop_events_posted(f.ev), 0);

    /* 20 nodes x 6 operands appear: 10 posted plus a summary; only the 10
     * are remembered, not the 110 suppressed by the burst limit */
    missing(&w, 20, &f1);
    assert_true(f1.nitems >= 120);
    gpuop_events_observe(f.ev, "main", "uid-1", &f1);
    fx_world_free(&w);
    assert_int_equal(gpuop_events_posted(f.ev), GPUOP_EVENTS_BURST + 1);
    assert_int_equal(gpuop_events_remembered(f.ev), GPUOP_EVENTS_BURST);
    /* queued, one in flight: nothing has answered yet */
    assert_int_equal(gpuop_events_queued(f.ev), GPUOP_EVENTS_BURST + 1);

    /* all clear, then all back within the window: the clears are new
     * (10 more remembered), the reappearing ones already said are not
     * posted again */
    fake_now += 30;
    struct gpuop_findings empty = {0};
    gpuop_events_observe(f.ev, "main", "uid-1", &empty);
    assert_int_equal(gpuop_events_posted(f.ev), 2 * (GPUOP_EVENTS_BURST + 1));
    assert_int_equal(gpuop_events_remembered(f.ev), 2 * GPUOP_EVENTS_BURST);
    fake_now += 30;
    missing(&w, 20, &f1);
    gpuop_events_observe(f.ev, "main", "uid-1", &f1);
    fx_world_free(&w);
    size_t after_flap = gpuop_events_posted(f.ev);
    assert_int_equal(after_flap, 3 * (GPUOP_EVENTS_BURST + 1)); /* ten others, not the same */
    assert_int_equal(gpuop_events_remembered(f.ev), 3 * GPUOP_EVENTS_BURST);

    /* past the quiet window everything is forgotten */
    fake_now += GPUOP_EVENTS_QUIET_S + 1;
    missing(&w, 20, &f1);
    gpuop_events_observe(f.ev, "main", "uid-1", &f1); /* no change */
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
    assert_int_equal(gpuop_events_new(f.kube, &f.ev), 0);
    gpuop_events_set_clock(f.ev, clock_fn);
    fake_now = 2000000;

    struct fx_world w;
    struct gpuop_findings none = {0}, f1;
    gpuop_events_observe(f.ev, "main", "uid-1", &none);
    missing(&w, 20, &f1);
    gpuop_events_observe(f.ev, "main", "uid-1", &f1);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bounded_memory),
        cmocka_unit_test(test_posted_one_at_a_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
