/*
 * test_labeler.c - the node labeler (src/controller/labeler.c) against
 * fakeapi: a fresh GPU node is read (GET) and patched once, with a JSON
 * merge patch carrying the GET's resourceVersion, the labels and gpuop's
 * annotation; a 409 makes it read the node again and decide from what it
 * reads (a person labelled it meanwhile: nothing written); an API error
 * backs the node off; a stopped labeler (leadership lost) sends nothing;
 * with driver pools, each pool's nodeSelector is listed (every page) and
 * the node it selects is patched with its pool label alone.
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
#include "gpuop/names.h"
#include "waiter.h"
#include "process_setup.h"

#define WAIT_MS 30000

struct lx {
    uv_loop_t loop;
    struct fakeapi *srv;
    struct gpuop_kube *kube;
    struct ctl_labeler *l;
    struct waiter wait;
    int gets, patches;
    int conflicts; /* answer this many PATCHes 409, and the node is a person's after */
    int errors;    /* answer this many PATCHes 500 */
    bool persons;  /* GET: the node carries a deploy label */
    bool hold;     /* keep the next PATCH unanswered, in held */
    struct fakeapi_conn *held;
    bool pool;            /* GET: the node carries pool=a100 */
    int lists;            /* LISTs of nodes by labelSelector */
    char selector[256];   /* the last one's labelSelector, still escaped */
    uint64_t patch_ms[8]; /* uv_now of each PATCH */
    char patch[8][4096];
    int rv;
};

static void handler(void *arg, struct fakeapi_conn *c, const struct fakeapi_request *r)
{
    struct lx *x = arg;
    if (strcmp(r->method, "GET") == 0 && strcmp(r->path, "/api/v1/nodes/n1") == 0) {
        x->gets++;
        char body[1024];
        snprintf(body, sizeof(body),
                 "{\"metadata\":{\"name\":\"n1\",\"resourceVersion\":\"%d\",\"labels\":{"
                 "\"feature.node.kubernetes.io/pci-10de.present\":\"true\"%s}}}",
                 x->rv,
                 x->persons ? ",\"nvidia.com/gpu.deploy.driver\":\"false\""
                 : x->pool  ? ",\"pool\":\"a100\""
                            : "");
        fakeapi_respond(c, 200, "application/json", body);
        return;
    }
    if (strcmp(r->method, "GET") == 0 && strncmp(r->path, "/api/v1/nodes?", 14) == 0) {
        char cont[64] = "";
        x->lists++;
        assert_true(fakeapi_query(r, "labelSelector", x->selector, sizeof(x->selector)));
        assert_string_equal(r->accept, GPUOP_ACCEPT_METADATA_LIST); /* names only */
        /* two pages: n1, then none */
        if (fakeapi_query(r, "continue", cont, sizeof(cont)) && !strcmp(cont, "page2"))
            fakeapi_respond(c, 200, "application/json", "{\"metadata\":{},\"items\":[]}");
        else
            fakeapi_respond(c, 200, "application/json",
                            "{\"metadata\":{\"continue\":\"page2\"},\"items\":["
                            "{\"metadata\":{\"name\":\"n1\"}}]}");
        return;
    }
    if (strcmp(r->method, "PATCH") == 0 && strcmp(r->path, "/api/v1/nodes/n1") == 0) {
        int i = x->patches++;
        if (i < 8) {
            x->patch_ms[i] = uv_now(&x->loop);
            snprintf(x->patch[i], sizeof(x->patch[i]), "%s", r->body ? r->body : "");
        }
        assert_string_equal(r->ctype, GPUOP_CT_MERGE);
        if (x->hold) {
            x->hold = false;
            x->held = c;
            x->rv++;
        } else if (x->conflicts > 0) {
            x->conflicts--;
            x->persons = true;
            x->rv++;
            fakeapi_respond_status(c, 409, "Conflict", "the object has been modified");
        } else if (x->errors > 0) {
            x->errors--;
            fakeapi_respond_status(c, 500, "InternalError", "etcd is slow");
        } else {
            x->rv++;
            fakeapi_respond(c, 200, "application/json", "{\"kind\":\"Node\"}");
        }
        return;
    }
    fakeapi_respond_status(c, 404, "NotFound", "no such thing");
}

static void on_closed(void *arg)
{
    (*(int *)arg)++;
}

static void lx_open(struct lx *x)
{
    assert_int_equal(uv_loop_init(&x->loop), 0);
    waiter_init(&x->wait, &x->loop);
    assert_int_equal(fakeapi_start(&x->loop, handler, x, &x->srv), 0);
    struct gpuop_kubeconfig cfg = {0};
    cfg.server = (char *)fakeapi_url(x->srv);
    struct gpuop_err err = {0};
    assert_int_equal(gpuop_kube_new(&x->loop, &cfg, &x->kube, &err), 0);
    assert_int_equal(gpuop_ctl_labeler_new(&x->loop, x->kube, NULL, &x->l), 0);
    x->rv = 100;
}

static void lx_close(struct lx *x)
{
    int closed = 0;
    gpuop_ctl_labeler_close(x->l, on_closed, &closed);
    WAITER_RUN_UNTIL(&x->wait, closed == 1, WAIT_MS); /* gone before the client */
    gpuop_kube_close(x->kube, on_closed, &closed);
    WAITER_RUN_UNTIL(&x->wait, closed == 2, WAIT_MS);
    fakeapi_stop(x->srv);
    waiter_close(&x->wait);
    uv_run(&x->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&x->loop), 0);
}

/* The cached node n1 (fresh: NFD only) and a policy with labelling on,
 * dcgm-exporter disabled. */
static struct gpuop_node *node_with(const char *more_labels)
{
    char text[512];
    snprintf(text, sizeof(text),
             "{\"metadata\":{\"name\":\"n1\",\"labels\":{"
             "\"feature.node.kubernetes.io/pci-10de.present\":\"true\"%s}}}",
             more_labels);
    json_t *obj = json_loads(text, 0, NULL);
    struct gpuop_err err = {0};
    struct gpuop_node *n = gpuop_node_new(obj, NULL, &err);
    json_decref(obj);
    assert_non_null(n);
    return n;
}

static struct gpuop_node *cached_node(void)
{
    return node_with("");
}

static void policy(struct gpuop_policy *p)
{
    memset(p, 0, sizeof(*p));
    for (int i = 0; i < gpuop_operand_count(); i++)
        p->operands[i].enabled = strcmp(gpuop_operand_get(i)->name, "dcgm-exporter") != 0;
    p->node_labeling = true;
}

static void test_patch_once(void **state)
{
    (void)state;
    struct lx x = {0};
    lx_open(&x);
    struct gpuop_policy p;
    policy(&p);
    struct gpuop_node *n = cached_node();
    const struct gpuop_node *nodes[] = {n};
    assert_int_equal(gpuop_ctl_labeler_track(x.l, &p, nodes, 1), 0);
    WAITER_RUN_UNTIL(&x.wait, gpuop_ctl_labeler_patches(x.l) == 1, WAIT_MS);
    assert_int_equal(x.gets, 1);
    assert_int_equal(x.patches, 1);
    json_t *body = json_loads(x.patch[0], 0, NULL);
    assert_non_null(body);
    json_t *meta = json_object_get(body, "metadata");
    assert_string_equal(json_string_value(json_object_get(meta, "resourceVersion")), "100");
    json_t *labels = json_object_get(meta, "labels");
    assert_string_equal(json_string_value(json_object_get(labels, "nvidia.com/gpu.present")),
                        "true");
    assert_string_equal(json_string_value(json_object_get(labels, "nvidia.com/gpu.deploy.driver")),
                        "true");
    assert_null(json_object_get(labels, "nvidia.com/gpu.deploy.dcgm-exporter")); /* disabled */
    assert_null(json_object_get(labels, "nvidia.com/gpu.deploy.mig-manager"));   /* no MIG */
    /* every operand but those two and the MPS daemon (no label of its own), and gpu.present */
    assert_int_equal(json_object_size(labels), (size_t)gpuop_operand_count() - 2);
    assert_null(json_object_get(labels, "nvidia.com/gpu.deploy.mps-control-daemon"));
    assert_int_equal(json_object_size(meta), 3); /* resourceVersion, labels, annotations */
    const char *note = json_string_value(
        json_object_get(json_object_get(meta, "annotations"), GPUOP_ANNOTATION_NODE_LABELS));
    assert_non_null(note);
    json_t *nj = json_loads(note, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(nj, "nvidia.com/gpu.deploy.driver"), "value")),
                        "true");
    assert_non_null(json_object_get(json_object_get(nj, "nvidia.com/gpu.present"), "at"));
    json_decref(nj);
    json_decref(body);

    /* the cache has not seen the PATCH yet: a second track within the
     * settle time sends nothing */
    assert_int_equal(gpuop_ctl_labeler_track(x.l, &p, nodes, 1), 0);
    waiter_run_for(&x.wait, 300);
    assert_int_equal(x.gets, 1);
    assert_int_equal(x.patches, 1);
    gpuop_node_free(n);
    lx_close(&x);
}

/* 409: the node changed after the GET; read again, and a person's label
 * there now means nothing is written. */
static void test_conflict_decides_again(void **state)
{
    (void)state;
    struct lx x = {0};
    lx_open(&x);
    x.conflicts = 1;
    struct gpuop_policy p;
    policy(&p);
    struct gpuop_node *n = cached_node();
    const struct gpuop_node *nodes[] = {n};
    assert_int_equal(gpuop_ctl_labeler_track(x.l, &p, nodes, 1), 0);
    WAITER_RUN_UNTIL(&x.wait, x.patches == 1, WAIT_MS);
    assert_int_equal(gpuop_ctl_labeler_track(x.l, &p, nodes, 1), 0); /* the cache still lags */
    WAITER_RUN_UNTIL(&x.wait, x.gets == 2, WAIT_MS);
    waiter_run_for(&x.wait, 300);
    assert_int_equal(x.patches, 1); /* the person's label: no second PATCH */
    assert_int_equal(gpuop_ctl_labeler_patches(x.l), 0);
    gpuop_node_free(n);
    lx_close(&x);
}

/* Opens x, has its labeler PATCH the fresh node n1 (new in *n) and holds
 * that PATCH unanswered; then the node watch shows n1 labelled (new in
 * *done, a node no longer a candidate) before the answer. */
static void patch_then_labelled(struct lx *x, struct gpuop_policy *p, struct gpuop_node **n,
                                struct gpuop_node **done)
{
    lx_open(x);
    x->hold = true;
    policy(p);
    *n = cached_node();
    const struct gpuop_node *nodes[] = {*n};
    assert_int_equal(gpuop_ctl_labeler_track(x->l, p, nodes, 1), 0);
    WAITER_RUN_UNTIL(&x->wait, x->held != NULL, WAIT_MS);
    *done = node_with(",\"nvidia.com/gpu.present\":\"true\","
                      "\"nvidia.com/gpu.deploy.driver\":\"true\"");
    const struct gpuop_node *now[] = {*done};
    assert_int_equal(gpuop_ctl_labeler_track(x->l, p, now, 1), 0); /* the watch event */
    waiter_run_for(&x->wait, 100);
}

/* The PATCH's own change reaches the cache (the node watch) before its
 * answer does: the node is no longer a candidate, but the PATCH that was
 * sent is not cancelled, and its success is counted and logged (e2e
 * 29_labeling greps the log line). */
static void test_watch_before_answer(void **state)
{
    (void)state;
    struct lx x = {0};
    struct gpuop_policy p;
    struct gpuop_node *n, *done;
    patch_then_labelled(&x, &p, &n, &done);
    fakeapi_respond(x.held, 200, "application/json", "{\"kind\":\"Node\"}");
    WAITER_RUN_UNTIL(&x.wait, gpuop_ctl_labeler_patches(x.l) == 1, WAIT_MS);
    assert_int_equal(x.patches, 1);
    assert_int_equal(x.gets, 1);
    gpuop_node_free(done);
    gpuop_node_free(n);
    lx_close(&x);
}

/* The same, but the labeler closes (leadership lost, shutdown) before the
 * answer: the PATCH is cancelled and nothing is touched after the close
 * (valgrind, ASan: lx_close frees the labeler before the client). */
static void test_close_with_patch_in_flight(void **state)
{
    (void)state;
    struct lx x = {0};
    struct gpuop_policy p;
    struct gpuop_node *n, *done;
    patch_then_labelled(&x, &p, &n, &done);
    lx_close(&x); /* the held PATCH is never answered */
    assert_int_equal(x.patches, 1);
    gpuop_node_free(done);
    gpuop_node_free(n);
}

/* An API error backs the node off (no PATCH before the first delay); then
 * it is labelled. */
static void test_error_backs_off(void **state)
{
    (void)state;
    struct lx x = {0};
    lx_open(&x);
    x.errors = 1;
    struct gpuop_policy p;
    policy(&p);
    struct gpuop_node *n = cached_node();
    const struct gpuop_node *nodes[] = {n};
    assert_int_equal(gpuop_ctl_labeler_track(x.l, &p, nodes, 1), 0);
    WAITER_RUN_UNTIL(&x.wait, x.patches == 1, WAIT_MS);
    assert_int_equal(gpuop_ctl_labeler_track(x.l, &p, nodes, 1), 0); /* a reconcile meanwhile */
    WAITER_RUN_UNTIL(&x.wait, gpuop_ctl_labeler_patches(x.l) == 1, WAIT_MS);
    assert_int_equal(x.patches, 2);
    assert_true(x.patch_ms[1] - x.patch_ms[0] >= 1000); /* LABELER_BACKOFF_FIRST_MS */
    gpuop_node_free(n);
    lx_close(&x);
}

/* Labelling off, or a stopped labeler (not the leader): nothing is sent. */
static void test_off_and_stopped(void **state)
{
    (void)state;
    struct lx x = {0};
    lx_open(&x);
    struct gpuop_policy p;
    policy(&p);
    struct gpuop_node *n = cached_node();
    const struct gpuop_node *nodes[] = {n};
    p.node_labeling = false;
    assert_int_equal(gpuop_ctl_labeler_track(x.l, &p, nodes, 1), 0);
    waiter_run_for(&x.wait, 300);
    assert_int_equal(x.gets, 0);
    p.node_labeling = true;
    x.errors = 1;
    assert_int_equal(gpuop_ctl_labeler_track(x.l, &p, nodes, 1), 0);
    WAITER_RUN_UNTIL(&x.wait, x.patches == 1, WAIT_MS); /* failed: backing off */
    gpuop_ctl_labeler_stop(x.l);
    waiter_run_for(&x.wait, 1500); /* past the backoff */
    assert_int_equal(x.patches, 1);
    assert_int_equal(x.gets, 1);
    gpuop_node_free(n);
    lx_close(&x);
}

/* Driver pools (SPEC 4f): the pool's selector is listed (both pages), the
 * node it selects is read and patched with the pool label only (labelling
 * off: no deploy label, no note). */
static void test_driver_pool_label(void **state)
{
    (void)state;
    struct lx x = {0};
    lx_open(&x);
    x.pool = true;
    struct gpuop_policy p;
    policy(&p);
    p.node_labeling = false;
    snprintf(p.driver_pools[0].name, sizeof(p.driver_pools[0].name), "a100");
    p.driver_pools[0].node_selector = json_pack("{s:s}", "pool", "a100");
    p.ndriver_pools = 1;
    struct gpuop_node *n = cached_node();
    const struct gpuop_node *nodes[] = {n};
    assert_int_equal(gpuop_ctl_labeler_track(x.l, &p, nodes, 1), 0); /* LISTs start */
    WAITER_RUN_UNTIL(&x.wait, x.lists == 2, WAIT_MS);
    assert_string_equal(x.selector, "pool%3Da100");
    /* the LISTs answered: the next track (the queued reconcile's) picks n1 */
    WAITER_RUN_UNTIL(&x.wait,
                     gpuop_ctl_labeler_track(x.l, &p, nodes, 1) == 0 &&
                         gpuop_ctl_labeler_patches(x.l) == 1,
                     WAIT_MS);
    assert_int_equal(x.lists, 2); /* not again: nothing changed */
    json_t *body = json_loads(x.patch[0], 0, NULL);
    json_t *meta = json_object_get(body, "metadata");
    assert_string_equal(json_string_value(json_object_get(json_object_get(meta, "labels"),
                                                          GPUOP_LABEL_DRIVER_POOL)),
                        "a100");
    assert_int_equal(json_object_size(json_object_get(meta, "labels")), 1);
    assert_null(
        json_object_get(json_object_get(meta, "annotations"), GPUOP_ANNOTATION_NODE_LABELS));
    json_decref(body);
    json_decref(p.driver_pools[0].node_selector);
    gpuop_node_free(n);
    lx_close(&x);
}

static bool driver_everywhere(void *arg, const char *node)
{
    (*(int *)arg)++;
    return node != NULL;
}

/* A node that runs a driver pod is not relabelled into the pool: the
 * patch writes only the wanted annotation (the driver upgrade moves it). */
static void test_driver_pool_wanted(void **state)
{
    (void)state;
    struct lx x = {0};
    lx_open(&x);
    x.pool = true;
    int asked = 0;
    gpuop_ctl_labeler_drivers(x.l, driver_everywhere, &asked);
    struct gpuop_policy p;
    policy(&p);
    p.node_labeling = false;
    snprintf(p.driver_pools[0].name, sizeof(p.driver_pools[0].name), "a100");
    p.driver_pools[0].node_selector = json_pack("{s:s}", "pool", "a100");
    p.ndriver_pools = 1;
    struct gpuop_node *n = cached_node();
    const struct gpuop_node *nodes[] = {n};
    assert_int_equal(gpuop_ctl_labeler_track(x.l, &p, nodes, 1), 0);
    WAITER_RUN_UNTIL(&x.wait, x.lists == 2, WAIT_MS);
    WAITER_RUN_UNTIL(&x.wait,
                     gpuop_ctl_labeler_track(x.l, &p, nodes, 1) == 0 &&
                         gpuop_ctl_labeler_patches(x.l) == 1,
                     WAIT_MS);
    assert_true(asked > 0);
    json_t *body = json_loads(x.patch[0], 0, NULL);
    json_t *meta = json_object_get(body, "metadata");
    assert_int_equal(json_object_size(json_object_get(meta, "labels")), 0); /* label kept */
    assert_string_equal(json_string_value(json_object_get(json_object_get(meta, "annotations"),
                                                          GPUOP_ANNOTATION_DRIVER_POOL_WANTED)),
                        "a100");
    json_decref(body);
    json_decref(p.driver_pools[0].node_selector);
    gpuop_node_free(n);
    lx_close(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_patch_once),
        cmocka_unit_test(test_conflict_decides_again),
        cmocka_unit_test(test_watch_before_answer),
        cmocka_unit_test(test_close_with_patch_in_flight),
        cmocka_unit_test(test_error_backs_off),
        cmocka_unit_test(test_off_and_stopped),
        cmocka_unit_test(test_driver_pool_label),
        cmocka_unit_test(test_driver_pool_wanted),
    };
    return cmocka_run_group_tests(tests, process_setup, process_teardown);
}
