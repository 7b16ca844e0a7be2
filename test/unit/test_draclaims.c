/*
 * test_draclaims.c - the DRA kubelet plugin's DaemonSet outlives the pods
 * whose claims it must unprepare (src/controller/draclaims.c), against
 * fakeapi: each node where a plugin pod runs is listed once a round, by
 * field selector, from the watch cache (resourceVersion=0); a pod with
 * spec.resourceClaims that is not terminal holds the plugin, and so does a
 * terminal one being deleted (NVIDIA's nodeHasDRAClaimPods); a pod
 * without claims, or terminal and not being deleted, does not; the
 * waiting words name the first DRACLAIMS_NAMES_MAX holders with their
 * node and count the rest; a clear round answers true; a failed LIST is
 * never clear; reset forgets.
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
#include "fakeapi.h"
#include "gpuop/kube.h"
#include "queue_int.h"
#include "waiter.h"
#include "process_setup.h"

/* Longest wait for anything (a loaded machine). */
#define WAIT_MS 30000

struct dx {
    uv_loop_t loop;
    struct fakeapi *srv;
    struct gpuop_kube *kube;
    struct gpuop_queue *queue;
    struct ctl_draclaims *d;
    struct waiter wait;
    int lists, lists_not_cached;
    char nodes[4096]; /* the field selectors listed, space-separated */
    bool holders;     /* gpu-a answers with claim holders; else every node with none */
    bool fail;        /* answer 500 */
};

/* On gpu-a: two running pods with claims, one terminal pod with claims
 * being deleted (holds), one terminal not being deleted (does not), one
 * without claims; three more holders when holders is set. */
static const char *const POD_A =
    "{\"kind\":\"PodList\",\"items\":["
    "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"train-0\"},\"spec\":{\"resourceClaims\":"
    "[{\"name\":\"gpu\",\"resourceClaimTemplateName\":\"one-gpu\"}]},\"status\":{\"phase\":"
    "\"Running\"}},"
    "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"train-1\"},\"spec\":{\"resourceClaims\":"
    "[{\"name\":\"gpu\",\"resourceClaimName\":\"c1\"}]},\"status\":{\"phase\":\"Pending\"}},"
    "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"ending\",\"deletionTimestamp\":"
    "\"2026-12-07T06:00:00Z\"},\"spec\":{\"resourceClaims\":[{\"name\":\"gpu\","
    "\"resourceClaimName\":\"c2\"}]},\"status\":{\"phase\":\"Succeeded\"}},"
    "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"done\"},\"spec\":{\"resourceClaims\":"
    "[{\"name\":\"gpu\",\"resourceClaimName\":\"c3\"}]},\"status\":{\"phase\":\"Failed\"}},"
    "{\"metadata\":{\"namespace\":\"web\",\"name\":\"nginx\"},\"spec\":{\"resourceClaims\":[],"
    "\"containers\":[{}]},\"status\":{\"phase\":\"Running\"}},"
    "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"x-3\"},\"spec\":{\"resourceClaims\":"
    "[{\"name\":\"g\"}]},\"status\":{\"phase\":\"Running\"}},"
    "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"x-4\"},\"spec\":{\"resourceClaims\":"
    "[{\"name\":\"g\"}]},\"status\":{\"phase\":\"Running\"}}]}";

static void handler(void *arg, struct fakeapi_conn *c, const struct fakeapi_request *r)
{
    struct dx *x = arg;
    if (strcmp(r->method, "GET") || strncmp(r->path, "/api/v1/pods?", 13)) {
        fakeapi_respond(c, 404, "application/json", "{\"kind\":\"Status\",\"code\":404}");
        return;
    }
    x->lists++;
    char sel[512] = "", rv[16] = "";
    fakeapi_query(r, "fieldSelector", sel, sizeof(sel));
    if (!fakeapi_query(r, "resourceVersion", rv, sizeof(rv)) || strcmp(rv, "0") != 0)
        x->lists_not_cached++;
    size_t len = strlen(x->nodes);
    snprintf(x->nodes + len, sizeof(x->nodes) - len, "%s ", sel);
    if (x->fail) {
        fakeapi_respond(c, 500, "application/json", "{\"kind\":\"Status\",\"code\":500}");
        return;
    }
    bool a = strstr(sel, "gpu-a") != NULL;
    fakeapi_respond(c, 200, "application/json",
                    a && x->holders ? POD_A : "{\"kind\":\"PodList\",\"items\":[]}");
}

static void on_ready(void *arg)
{
    (void)arg;
}

static void on_closed(void *arg)
{
    (*(int *)arg)++;
}

static void dx_open(struct dx *x)
{
    assert_int_equal(uv_loop_init(&x->loop), 0);
    waiter_init(&x->wait, &x->loop);
    assert_int_equal(fakeapi_start(&x->loop, handler, x, &x->srv), 0);
    struct gpuop_kubeconfig cfg = {0};
    cfg.server = (char *)fakeapi_url(x->srv);
    struct gpuop_err err = {0};
    assert_int_equal(gpuop_kube_new(&x->loop, &cfg, &x->kube, &err), 0);
    assert_int_equal(gpuop_queue_new(&x->loop, on_ready, x, &x->queue), 0);
    assert_int_equal(gpuop_ctl_draclaims_new(x->kube, x->queue, &x->d), 0);
}

static void dx_close(struct dx *x)
{
    int closed = 0;
    gpuop_ctl_draclaims_free(x->d);
    gpuop_queue_close(x->queue, on_closed, &closed);
    gpuop_kube_close(x->kube, on_closed, &closed);
    waiter_begin(&x->wait, WAIT_MS);
    while (closed < 2 && !x->wait.expired)
        uv_run(&x->loop, UV_RUN_ONCE);
    waiter_end(&x->wait);
    assert_int_equal(closed, 2);
    fakeapi_stop(x->srv);
    waiter_close(&x->wait);
    uv_run(&x->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&x->loop), 0);
}

/* Runs until `lists` LISTs were answered and the round has ended (the
 * words no longer say it is listing); returns the answer of the ask after
 * it. */
static bool ask_after_round(struct dx *x, const char *const *nodes, size_t n, int lists)
{
    char words[GPUOP_STATUS_DRA_WAITING_MAX];
    waiter_begin(&x->wait, WAIT_MS);
    for (;;) {
        gpuop_ctl_draclaims_waiting(x->d, words, sizeof(words));
        if ((x->lists >= lists && !strstr(words, "listing the pods")) || x->wait.expired)
            break;
        uv_run(&x->loop, UV_RUN_ONCE);
    }
    waiter_end(&x->wait);
    assert_int_equal(x->lists, lists);
    return gpuop_ctl_draclaims_clear(x->d, "main", false, nodes, n);
}

/* The keys ready now taken off the queue. */
static void drain(struct dx *x)
{
    char *k;
    while ((k = gpuop_queue_get(x->queue))) {
        gpuop_queue_done(x->queue, k);
        free(k);
    }
}

static void test_draclaims(void **state)
{
    (void)state;
    struct dx x = {.holders = true};
    dx_open(&x);
    const char *nodes[] = {"gpu-a", "gpu-b"};
    char words[GPUOP_STATUS_DRA_WAITING_MAX];

    /* nothing asked yet: nothing waits */
    assert_int_equal(gpuop_ctl_draclaims_waiting(x.d, words, sizeof(words)), 0);
    assert_string_equal(words, "");
    /* switched off: a round starts, not clear before it ends */
    assert_false(gpuop_ctl_draclaims_clear(x.d, "main", false, nodes, 2));
    gpuop_ctl_draclaims_waiting(x.d, words, sizeof(words));
    assert_non_null(strstr(words, "listing the pods of its nodes"));
    assert_false(ask_after_round(&x, nodes, 2, 2));    /* a round with holders */
    assert_int_equal(gpuop_queue_delayed(x.queue), 1); /* asked again after the recheck */
    assert_non_null(strstr(x.nodes, "spec.nodeName%3Dgpu-a "));
    assert_non_null(strstr(x.nodes, "spec.nodeName%3Dgpu-b "));
    assert_int_equal(x.lists_not_cached, 0);
    gpuop_ctl_draclaims_waiting(x.d, words, sizeof(words));
    assert_non_null(strstr(words, "DaemonSet gpuop-dra-driver is kept until no pod on its nodes "
                                  "holds a resource claim it must unprepare: 5 pod(s) on its 2 "
                                  "node(s) still do: ml/train-0 on gpu-a, ml/train-1 on gpu-a, "
                                  "ml/ending on gpu-a and 2 more."));
    assert_null(strstr(words, "ml/done"));
    assert_null(strstr(words, "nginx"));
    /* asked again at once: no new round before the recheck */
    assert_false(gpuop_ctl_draclaims_clear(x.d, "main", false, nodes, 2));
    assert_int_equal(x.lists, 2);

    /* the holders gone, after the recheck: clear */
    x.holders = false;
    gpuop_ctl_draclaims_reset(x.d);
    assert_false(gpuop_ctl_draclaims_clear(x.d, "main", false, nodes, 2));
    drain(&x);
    assert_true(ask_after_round(&x, nodes, 2, 4));
    assert_int_equal(gpuop_queue_len(x.queue), 1); /* clear: the policy at once */
    assert_int_equal(gpuop_ctl_draclaims_waiting(x.d, words, sizeof(words)), 0);

    /* a failed LIST is never clear, and says so */
    gpuop_ctl_draclaims_reset(x.d);
    x.fail = true;
    assert_false(gpuop_ctl_draclaims_clear(x.d, "main", false, nodes, 2));
    drain(&x);
    assert_false(ask_after_round(&x, nodes, 2, 6));
    gpuop_ctl_draclaims_waiting(x.d, words, sizeof(words));
    assert_non_null(strstr(words, "0 pod(s) on its 2 node(s) still do (and a node's pods could "
                                  "not be listed)"));

    /* the policy being deleted: the words say so, and that its finalizer
       keeps it */
    gpuop_ctl_draclaims_reset(x.d);
    x.fail = false;
    assert_false(gpuop_ctl_draclaims_clear(x.d, "main", true, nodes, 2));
    gpuop_ctl_draclaims_waiting(x.d, words, sizeof(words));
    assert_non_null(strstr(words, "The GpuPolicy is being deleted: the kubelet plugin's "
                                  "DaemonSet gpuop-dra-driver is kept (and the GpuPolicy, by its "
                                  "finalizer gpuop.dev/dra-driver) until no pod on its nodes"));
    drain(&x);
    assert_true(ask_after_round(&x, nodes, 2, 8)); /* no holder left: clear */

    /* no plugin pod anywhere: nothing to unprepare for */
    gpuop_ctl_draclaims_reset(x.d);
    assert_true(gpuop_ctl_draclaims_clear(x.d, "main", false, NULL, 0));
    assert_int_equal(x.lists, 8);
    dx_close(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_draclaims),
    };
    return cmocka_run_group_tests(tests, process_setup, process_teardown);
}
