/*
 * test_stranded.c - who is stranded (src/controller/stranded.c), against
 * fakeapi: only the nodes with an OrderingViolation are listed, with a
 * field selector on their name; of the answer only pods requesting
 * nvidia.com/gpu that are not finished count, and only the first
 * GPUOP_STRANDED_NAMES_MAX names are kept; a changed list requeues the
 * policy and is said in an Event (StrandedGpuPods, then ...Cleared when
 * the violation goes); a node is not listed again before its interval;
 * the LISTs are answered from the watch cache (resourceVersion=0), and no
 * more than two are unanswered at once.
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

#include "controller_int.h"
#include "events_int.h"
#include "fakeapi.h"
#include "gpuop/kube.h"
#include "queue_int.h"
#include "waiter.h"
#include "world_fixture.h"
#include "process_setup.h"

/* Longest wait for anything (a loaded machine). */
#define WAIT_MS 30000

struct sx {
    uv_loop_t loop;
    struct fakeapi *srv;
    struct gpuop_kube *kube;
    struct gpuop_queue *queue;
    struct gpuop_events *ev;
    struct ctl_stranded *s;
    struct waiter wait;
    int lists, events_stranded, events_cleared;
    int lists_not_cached; /* LISTs without resourceVersion=0 */
    char last_event[2048];
    char nodes[16384]; /* the field selectors listed, space-separated */
    uint64_t slow_ms;  /* answer each LIST this long after it came (0: at once) */
    uint64_t due[64];  /* when the slow LISTs seen so far are answered */
    size_t ndue;
    size_t most_open; /* most slow LISTs unanswered at once, counting the new one */
    bool none;        /* answer every LIST with no pod */
    bool multi;       /* answer with pods of several GPUs (effective requests) */
};

/* Pods of several GPUs: containers 2 + 1 with an init container of 4 (the
 * scheduler counts 4), containers 1 + 1 with an init container of 1 (2),
 * a limit of 3 only (3), one finished (not counted). 9 GPUs in all. */
#define MULTI_BODY                                                                                 \
    "{\"kind\":\"PodList\",\"items\":["                                                            \
    "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"big\"},\"spec\":{\"containers\":["             \
    "{\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"2\"}}},"                                   \
    "{\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}],\"initContainers\":["                \
    "{\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"4\"}}}]}},"                                  \
    "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"pair\"},\"spec\":{\"containers\":["            \
    "{\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}},"                                     \
    "{\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}],\"initContainers\":["                \
    "{\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}},"                                  \
    "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"three\"},\"spec\":{\"containers\":["           \
    "{\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"3\"}}}]}},"                                  \
    "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"done\"},\"spec\":{\"containers\":["            \
    "{\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"8\"}}}]},\"status\":{\"phase\":"             \
    "\"Failed\"}}]}"

static void handler(void *arg, struct fakeapi_conn *c, const struct fakeapi_request *r)
{
    struct sx *x = arg;
    if (strcmp(r->method, "GET") == 0 && strncmp(r->path, "/api/v1/pods?", 13) == 0) {
        x->lists++;
        char sel[512] = "";
        fakeapi_query(r, "fieldSelector", sel, sizeof(sel)); /* as sent: escaped */
        char rv[16] = "";
        if (!fakeapi_query(r, "resourceVersion", rv, sizeof(rv)) || strcmp(rv, "0") != 0)
            x->lists_not_cached++; /* would be read from etcd when the cache lags */
        size_t len = strlen(x->nodes);
        snprintf(x->nodes + len, sizeof(x->nodes) - len, "%s ", sel);
        if (x->none) {
            fakeapi_respond(c, 200, "application/json", "{\"kind\":\"PodList\",\"items\":[]}");
            return;
        }
        if (x->multi) {
            fakeapi_respond(c, 200, "application/json", MULTI_BODY);
            return;
        }
        /* 12 GPU pods (limits or requests, init containers too), one
         * without a GPU, one finished, one asking for 0 */
        char body[16384];
        size_t n = (size_t)snprintf(body, sizeof(body), "{\"kind\":\"PodList\",\"items\":[");
        for (int i = 0; i < 12; i++)
            n += (size_t)snprintf(
                body + n, sizeof(body) - n,
                "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"train-%02d\"},\"spec\":{\"%s\":"
                "[{\"resources\":{\"%s\":{\"nvidia.com/gpu\":\"1\"}}}]},\"status\":{\"phase\":"
                "\"Pending\"}},",
                i, i == 11 ? "initContainers" : "containers", i % 2 ? "requests" : "limits");
        n += (size_t)snprintf(
            body + n, sizeof(body) - n, "%s",
            "{\"metadata\":{\"namespace\":\"web\",\"name\":\"nginx\"},\"spec\":{\"containers\":[{}]"
            "}},"
            "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"done\"},\"spec\":{\"containers\":[{"
            "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]},\"status\":{\"phase\":"
            "\"Succeeded\"}},"
            "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"zero\"},\"spec\":{\"containers\":[{"
            "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"0\"}}}]}}]}");
        if (!x->slow_ms) {
            fakeapi_respond(c, 200, "application/json", body);
            return;
        }
        uint64_t now = uv_now(&x->loop);
        size_t open = 1;
        for (size_t i = 0; i < x->ndue; i++)
            open += x->due[i] > now;
        if (open > x->most_open)
            x->most_open = open;
        if (x->ndue < sizeof(x->due) / sizeof(x->due[0]))
            x->due[x->ndue++] = now + x->slow_ms;
        fakeapi_stream_begin(c, 200, FAKEAPI_LENGTH, n);
        fakeapi_stream_send(c, x->slow_ms, body, n);
        fakeapi_stream_end(c, 0);
        return;
    }
    if (strcmp(r->method, "POST") == 0 && strstr(r->path, "/events")) {
        if (r->body && strstr(r->body, "\"StrandedGpuPodsCleared\""))
            x->events_cleared++;
        else if (r->body && strstr(r->body, "\"StrandedGpuPods\""))
            x->events_stranded++;
        snprintf(x->last_event, sizeof(x->last_event), "%s", r->body ? r->body : "");
    }
    fakeapi_respond(c, 201, "application/json", "{\"kind\":\"Event\"}");
}

static void on_ready(void *arg)
{
    (void)arg;
}

static void on_closed(void *arg)
{
    (*(int *)arg)++;
}

/* gpu-b, gpu-d and gpu-e run the device plugin without the toolkit (unless
 * fixed; its label absent: no rollout brings it); gpu-c is complete. */
static void world(struct fx_world *w, bool fixed)
{
    fx_world_init(w, 3, 2);
    w->pol.operands[0].enabled = false;
    fx_add_node_except(w, "gpu-b", fixed ? NULL : "container-toolkit", NULL);
    fx_run_all(w, "gpu-b", fixed ? "driver" : "driver container-toolkit");
    fx_add_node_except(w, "gpu-c", NULL, NULL);
    fx_run_all(w, "gpu-c", "driver");
    fx_add_node_except(w, "gpu-d", fixed ? NULL : "container-toolkit", NULL);
    fx_run_all(w, "gpu-d", fixed ? "driver" : "driver container-toolkit");
    fx_add_node_except(w, "gpu-e", fixed ? NULL : "container-toolkit", NULL);
    fx_run_all(w, "gpu-e", fixed ? "driver" : "driver container-toolkit");
    fx_analyze(w);
}

static void run_until(struct sx *x, int *what, int want)
{
    waiter_begin(&x->wait, WAIT_MS);
    while (*what < want && !x->wait.expired)
        uv_run(&x->loop, UV_RUN_ONCE);
    waiter_end(&x->wait);
    assert_int_equal(*what, want);
}

/* Runs until `want` LISTs were sent and every one was answered. */
static void run_until_answered(struct sx *x, int want)
{
    waiter_begin(&x->wait, WAIT_MS);
    while ((x->lists < want || gpuop_ctl_stranded_inflight(x->s) > 0) && !x->wait.expired)
        uv_run(&x->loop, UV_RUN_ONCE);
    waiter_end(&x->wait);
    assert_int_equal(x->lists, want);
    assert_int_equal(gpuop_ctl_stranded_inflight(x->s), 0);
}

/* The fake API server, a client, a queue, the Events module and the
 * stranded-pod lister on one loop. */
static void sx_open(struct sx *x)
{
    assert_int_equal(uv_loop_init(&x->loop), 0);
    waiter_init(&x->wait, &x->loop);
    assert_int_equal(fakeapi_start(&x->loop, handler, x, &x->srv), 0);
    struct gpuop_kubeconfig cfg = {0};
    cfg.server = (char *)fakeapi_url(x->srv);
    struct gpuop_err err = {0};
    assert_int_equal(gpuop_kube_new(&x->loop, &cfg, &x->kube, &err), 0);
    assert_int_equal(gpuop_queue_new(&x->loop, on_ready, x, &x->queue), 0);
    assert_int_equal(gpuop_events_new(x->kube, x->queue, &x->ev), 0);
    assert_int_equal(gpuop_ctl_stranded_new(&x->loop, x->kube, x->queue, &x->s), 0);
}

/* Closes what sx_open made (LISTs in flight cancelled), then the loop. */
static void sx_close(struct sx *x)
{
    int closed = 0;
    gpuop_ctl_stranded_close(x->s, on_closed, &closed);
    gpuop_events_close(x->ev, on_closed, &closed);
    gpuop_queue_close(x->queue, on_closed, &closed);
    gpuop_kube_close(x->kube, on_closed, &closed);
    run_until(x, &closed, 4);
    fakeapi_stop(x->srv);
    waiter_close(&x->wait);
    uv_run(&x->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&x->loop), 0);
}

static void test_stranded(void **state)
{
    (void)state;
    struct sx x = {0};
    sx_open(&x);

    struct fx_world w;
    world(&w, false);
    assert_int_equal(gpuop_ctl_stranded_track(x.s, &w.f, x.ev, "main", "uid-1"), 0);
    assert_int_equal(gpuop_ctl_stranded_tracked(x.s), 3); /* gpu-c has no violation */
    size_t n;
    const struct gpuop_stranded *v = gpuop_ctl_stranded_view(x.s, &n);
    assert_null(v); /* not listed yet: nothing to show */
    assert_int_equal(n, 0);
    run_until_answered(&x, 3); /* two in the first tick, the third a tick later */
    assert_non_null(
        strstr(x.nodes,
               "spec.nodeName%3Dgpu-b%2Cstatus.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed "));
    assert_non_null(strstr(x.nodes, "spec.nodeName%3Dgpu-d%2C"));
    assert_non_null(strstr(x.nodes, "spec.nodeName%3Dgpu-e%2C"));
    assert_null(strstr(x.nodes, "gpu-c")); /* complete: never listed */
    waiter_begin(&x.wait, WAIT_MS);
    while (gpuop_queue_len(x.queue) == 0 && !x.wait.expired)
        uv_run(&x.loop, UV_RUN_ONCE);
    waiter_end(&x.wait);
    assert_int_equal(gpuop_queue_len(x.queue), 1); /* the policy requeued */
    assert_int_equal(gpuop_ctl_stranded_lists(x.s), 3);
    assert_int_equal(x.lists_not_cached, 0);

    /* the next reconcile: 12 counted, 10 named, in the answer's order */
    assert_int_equal(gpuop_ctl_stranded_track(x.s, &w.f, x.ev, "main", "uid-1"), 0);
    v = gpuop_ctl_stranded_view(x.s, &n);
    assert_int_equal(n, 3);
    assert_string_equal(v[0].node, "gpu-b");
    assert_string_equal(v[1].node, "gpu-d");
    assert_string_equal(v[2].node, "gpu-e");
    assert_int_equal(v[0].count, 12);
    assert_int_equal(v[0].gpus, 12); /* one each */
    assert_int_equal(v[0].nnames, GPUOP_STRANDED_NAMES_MAX);
    assert_string_equal(v[0].names[0], "ml/train-00");
    assert_string_equal(v[0].names[9], "ml/train-09");
    gpuop_findings_set_stranded(&w.f, v, n);
    assert_int_equal(w.f.stranded_pods, 36);
    run_until(&x, &x.events_stranded, 3);
    assert_non_null(strstr(x.last_event, "node gpu-e: 12 GPU pods bound here"));
    assert_non_null(strstr(x.last_event, "ml/train-09 and 2 more"));
    /* the same again: no Event, no LIST before the interval */
    assert_int_equal(gpuop_ctl_stranded_track(x.s, &w.f, x.ev, "main", "uid-1"), 0);
    waiter_run_for(&x.wait, 300);
    assert_int_equal(x.events_stranded, 3);
    assert_int_equal(x.lists, 3);
    fx_world_free(&w);

    /* the toolkit runs: the violation goes, the list with it, said once */
    world(&w, true);
    assert_int_equal(gpuop_ctl_stranded_track(x.s, &w.f, x.ev, "main", "uid-1"), 0);
    v = gpuop_ctl_stranded_view(x.s, &n);
    assert_int_equal(n, 0);
    assert_int_equal(gpuop_ctl_stranded_tracked(x.s), 0);
    run_until(&x, &x.events_cleared, 3);
    assert_non_null(strstr(x.last_event, "node gpu-e: no GPU pod stranded any more"));
    fx_world_free(&w);

    /* a LIST in flight when the node stops violating, then close */
    world(&w, false);
    assert_int_equal(gpuop_ctl_stranded_track(x.s, &w.f, x.ev, "main", "uid-1"), 0);
    fx_world_free(&w);
    sx_close(&x);
}

/* Issue 42: a node with GpusAdvertisedTwice (the device plugin's 2 GPUs
 * and a 2-device slice) and no violation is listed too, its pods' GPUs
 * summed as the scheduler counts them; no StrandedGpuPods Event for it
 * (its finding names the pods); forgotten when the finding goes. */
#define TWICE_OPS "driver container-toolkit device-plugin dra-driver"
static void test_overadmit_listed(void **state)
{
    (void)state;
    struct sx x = {0};
    sx_open(&x);
    x.multi = true;
    struct fx_world w;
    fx_world_init(&w, 3, 2);
    fx_add_node(&w, "gpu-t", TWICE_OPS);
    fx_run(&w, "gpu-t", TWICE_OPS);
    w.nodes[0]->gpus = (struct gpuop_gpu_counts){2, 2, 0, 0};
    w.nodes[0]->dra = (struct gpuop_node_dra){2, 1, 1, 0};
    fx_add_node(&w, "gpu-u", TWICE_OPS); /* the same without a slice */
    fx_run(&w, "gpu-u", TWICE_OPS);
    w.nodes[1]->gpus = (struct gpuop_gpu_counts){2, 2, 0, 0};
    fx_analyze(&w);
    assert_int_equal(w.f.by_reason[GPUOP_REASON_GPUS_ADVERTISED_TWICE], 1);
    assert_false(gpuop_findings_violates(&w.f.nodes[0]));

    assert_int_equal(gpuop_ctl_stranded_track(x.s, &w.f, x.ev, "main", "uid-1"), 0);
    assert_int_equal(gpuop_ctl_stranded_tracked(x.s), 1);
    run_until_answered(&x, 1);
    assert_non_null(strstr(x.nodes, "spec.nodeName%3Dgpu-t%2C"));
    assert_int_equal(gpuop_ctl_stranded_track(x.s, &w.f, x.ev, "main", "uid-1"), 0);
    size_t n;
    const struct gpuop_stranded *v = gpuop_ctl_stranded_view(x.s, &n);
    assert_int_equal(n, 1);
    assert_string_equal(v[0].node, "gpu-t");
    assert_int_equal(v[0].count, 3);
    assert_int_equal(v[0].gpus, 9); /* 4 + 2 + 3 */
    gpuop_findings_set_stranded(&w.f, v, n);
    assert_int_equal(w.f.stranded_pods, 0); /* not stranded: no violation */
    const struct gpuop_node_result *r = &w.f.nodes[0];
    const struct gpuop_finding *twice = NULL;
    for (uint32_t k = 0; k < r->nfindings; k++)
        if (w.f.items[r->first + k].reason == GPUOP_REASON_GPUS_ADVERTISED_TWICE)
            twice = &w.f.items[r->first + k];
    struct gpuop_overadmit o;
    assert_true(gpuop_findings_overadmit(&w.f, r, twice, &o));
    assert_int_equal(o.by_requests, 9);
    assert_int_equal(o.gpus, 2);
    assert_int_equal(o.pods.count, 3);
    waiter_run_for(&x.wait, 300);
    assert_int_equal(x.events_stranded, 0);
    fx_world_free(&w);

    /* the slice gone: the finding with it, the node forgotten */
    fx_world_init(&w, 3, 2);
    fx_add_node(&w, "gpu-t", TWICE_OPS);
    fx_run(&w, "gpu-t", TWICE_OPS);
    w.nodes[0]->gpus = (struct gpuop_gpu_counts){2, 2, 0, 0};
    fx_analyze(&w);
    assert_int_equal(gpuop_ctl_stranded_track(x.s, &w.f, x.ev, "main", "uid-1"), 0);
    assert_int_equal(gpuop_ctl_stranded_tracked(x.s), 0);
    waiter_run_for(&x.wait, 300);
    assert_int_equal(x.events_cleared, 0); /* nothing was said: nothing cleared */
    fx_world_free(&w);
    sx_close(&x);
}

/* More violating nodes than the rate limit lists in one re-list interval:
 * every one of them is still listed (the ones never listed first, then the
 * one listed longest ago), none is passed over for ever. Found by
 * test/bench/stranded-rate at 300 nodes: 159 were never listed, because
 * each tick took the first due nodes in name order, and the first ones
 * were due again before the scan reached the rest. */
#define MANY_NODES 40

/* Was node gpu-NN listed (its field selector, as sent)? */
static bool listed(const struct sx *x, int i)
{
    char sel[64];
    snprintf(sel, sizeof(sel), "spec.nodeName%%3Dgpu-%02d%%2C", i);
    return strstr(x->nodes, sel) != NULL;
}

/* MANY_NODES nodes gpu-NN, each running the device plugin without the
 * toolkit (unlabelled: an OrderingViolation no rollout ends), analysed. */
static void many_violating(struct fx_world *w)
{
    fx_world_init(w, 3, 2);
    w->pol.operands[0].enabled = false;
    for (int i = 0; i < MANY_NODES; i++) {
        char name[32];
        snprintf(name, sizeof(name), "gpu-%02d", i);
        fx_add_node_except(w, name, "container-toolkit", NULL);
        fx_run_all(w, name, "driver container-toolkit");
    }
    fx_analyze(w);
}

static void test_no_node_starved(void **state)
{
    (void)state;
    struct sx x = {0};
    sx_open(&x);
    /* 2 LISTs a 10 ms tick, each node again after 50 ms: 10 nodes an
     * interval, 40 violating */
    gpuop_ctl_stranded_set_timing(x.s, 10, 50);

    struct fx_world w;
    many_violating(&w);
    assert_int_equal(gpuop_ctl_stranded_track(x.s, &w.f, NULL, "main", "uid-1"), 0);
    assert_int_equal(gpuop_ctl_stranded_tracked(x.s), MANY_NODES);

    /* until every node was listed, the deadline, or a full log (the later
     * nodes passed over) */
    bool all = false;
    waiter_begin(&x.wait, WAIT_MS);
    while (!all && !x.wait.expired && strlen(x.nodes) < sizeof(x.nodes) - 128) {
        uv_run(&x.loop, UV_RUN_ONCE);
        all = true;
        for (int i = 0; i < MANY_NODES && all; i++)
            all = listed(&x, i);
    }
    waiter_end(&x.wait);
    for (int i = 0; i < MANY_NODES; i++)
        if (!listed(&x, i))
            fail_msg("gpu-%02d never listed after %d LISTs", i, x.lists);
    fx_world_free(&w);

    sx_close(&x);
}

/* An API server slow to answer gets no more LISTs at once than the cap,
 * however many nodes are due: 2 may start every 10 ms tick, each answered
 * 50 ms after it came (without the cap, about 10 were open at once). */
static void test_lists_in_flight_bounded(void **state)
{
    (void)state;
    struct sx x = {0};
    x.slow_ms = 50;
    sx_open(&x);
    gpuop_ctl_stranded_set_timing(x.s, 10, 60000);
    struct fx_world w;
    many_violating(&w);
    assert_int_equal(gpuop_ctl_stranded_track(x.s, &w.f, NULL, "main", "uid-1"), 0);
    waiter_begin(&x.wait, WAIT_MS);
    while (x.lists < 16 && !x.wait.expired)
        uv_run(&x.loop, UV_RUN_ONCE);
    waiter_end(&x.wait);
    assert_true(x.lists >= 16);
    if (x.most_open > 2)
        fail_msg("%zu LISTs open at once (at most 2)", x.most_open);
    assert_true(x.most_open >= 1);
    fx_world_free(&w);
    sx_close(&x);
}

/* Nodes whose LISTs find no GPU pod change nothing the findings show: the
 * policy is not reconciled again for them (it was, once per node). */
static void test_none_stranded_no_requeue(void **state)
{
    (void)state;
    struct sx x = {0};
    x.none = true;
    sx_open(&x);
    struct fx_world w;
    world(&w, false);
    assert_int_equal(gpuop_ctl_stranded_track(x.s, &w.f, x.ev, "main", "uid-1"), 0);
    run_until_answered(&x, 3);
    assert_int_equal(gpuop_queue_len(x.queue), 0);
    size_t n;
    assert_null(gpuop_ctl_stranded_view(x.s, &n));
    assert_int_equal(n, 0);
    assert_int_equal(gpuop_ctl_stranded_tracked(x.s), 3);
    fx_world_free(&w);
    sx_close(&x);
}

/* A node that is only mid-rollout (its device plugin up before the
 * toolkit, whose pod the DaemonSet controller is still to create: the node
 * progresses) is not listed; once it stops progressing (the controller
 * says why it creates no pod) it is, and it stays tracked while it
 * violates, progressing again or not. */
static void mid_rollout(struct fx_world *w, const char *controller_says)
{
    fx_world_init(w, 3, 2);
    w->pol.operands[0].enabled = false;
    w->ds[gpuop_operand_by_name("container-toolkit")].controller_says = controller_says;
    fx_add_node_except(w, "gpu-r", NULL, NULL);
    fx_run_all(w, "gpu-r", "driver container-toolkit");
    fx_analyze(w);
}

static void test_mid_rollout_not_listed(void **state)
{
    (void)state;
    struct sx x = {0};
    sx_open(&x);
    gpuop_ctl_stranded_set_timing(x.s, 10, 50);
    struct fx_world w;
    mid_rollout(&w, NULL);
    assert_true(gpuop_findings_violates(&w.f.nodes[0]));
    assert_true(w.f.nodes[0].progressing);
    assert_int_equal(gpuop_ctl_stranded_track(x.s, &w.f, x.ev, "main", "uid-1"), 0);
    assert_int_equal(gpuop_ctl_stranded_tracked(x.s), 0);
    waiter_run_for(&x.wait, 300); /* many ticks and re-list intervals */
    assert_int_equal(x.lists, 0);
    fx_world_free(&w);

    mid_rollout(&w, "FailedCreate: pods is forbidden");
    assert_false(w.f.nodes[0].progressing);
    assert_int_equal(gpuop_ctl_stranded_track(x.s, &w.f, x.ev, "main", "uid-1"), 0);
    assert_int_equal(gpuop_ctl_stranded_tracked(x.s), 1);
    run_until_answered(&x, 1);
    fx_world_free(&w);

    mid_rollout(&w, NULL); /* progressing again: still tracked */
    assert_int_equal(gpuop_ctl_stranded_track(x.s, &w.f, x.ev, "main", "uid-1"), 0);
    assert_int_equal(gpuop_ctl_stranded_tracked(x.s), 1);
    fx_world_free(&w);
    sx_close(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stranded),
        cmocka_unit_test(test_overadmit_listed),
        cmocka_unit_test(test_no_node_starved),
        cmocka_unit_test(test_lists_in_flight_bounded),
        cmocka_unit_test(test_none_stranded_no_requeue),
        cmocka_unit_test(test_mid_rollout_not_listed),
    };
    return cmocka_run_group_tests(tests, process_setup, process_teardown);
}
