/*
 * test_release_policy.c - gpuop_release_policy (src/cmd/cmd_release.c), the
 * chart's pre-delete hook, against a fake API server
 * (test/unit/support/fakeapi.h) holding one GpuPolicy and the nodes an
 * upgrade holds, which gpuop (played by the server) lets go a few reads
 * after the policy is deleted, and which gpuop's finalizer may keep a few
 * reads more (its DRA plugin waiting for claims). e2e/60_real_node runs the hook itself on
 * `helm uninstall` with a node held mid-upgrade.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cmd_int.h"
#include "fakeapi.h"
#include "gpuop/kube.h"
#include "process_setup.h"

#define POLICY_PATH "/apis/gpuop.dev/v1alpha1/gpupolicies"
#define NODES_PATH  "/api/v1/nodes?"
#define TIMEOUT     10000 /* ms: a guard against a hang only */
#define POLL_MS     10

struct server {
    bool policy;         /* the GpuPolicy "default" is there */
    bool other;          /* another GpuPolicy is there */
    bool forbid;         /* the DELETE: 403 */
    int kept_reads;      /* policy reads after the delete that still show it, being
                            deleted and kept by gpuop's finalizer */
    bool other_deleting; /* "other" is being deleted too */
    int policy_reads;    /* policy LISTs served */
    int held_reads;      /* node reads after the delete that still show a held node */
    int node_reads;      /* node LISTs served */
    int deletes;         /* DELETEs served */
    char selector[256];
};

static void handle(void *arg, struct fakeapi_conn *c, const struct fakeapi_request *r)
{
    struct server *s = arg;
    if (!strcmp(r->method, "DELETE") && !strcmp(r->path, POLICY_PATH "/default")) {
        s->deletes++;
        if (s->forbid)
            fakeapi_respond_status(c, 403, "Forbidden", "gpupolicies is forbidden");
        else if (!s->policy)
            fakeapi_respond_status(c, 404, "NotFound", "gpupolicies \"default\" not found");
        else {
            s->policy = false;
            fakeapi_respond(c, 200, "application/json", "{\"kind\":\"GpuPolicy\"}");
        }
    } else if (!strcmp(r->method, "GET") && !strcmp(r->path, POLICY_PATH)) {
        char body[512];
        bool kept = !s->policy && s->kept_reads-- > 0;
        s->policy_reads++;
        snprintf(body, sizeof(body), "{\"kind\":\"GpuPolicyList\",\"items\":[%s%s%s]}",
                 s->policy ? "{\"metadata\":{\"name\":\"default\"}}"
                 : kept    ? "{\"metadata\":{\"name\":\"default\",\"deletionTimestamp\":\"t\","
                             "\"finalizers\":[\"example.com/x\",\"gpuop.dev/dra-driver\"]}}"
                           : "",
                 (s->policy || kept) && s->other ? "," : "",
                 !s->other ? ""
                 : s->other_deleting
                     ? "{\"metadata\":{\"name\":\"other\",\"deletionTimestamp\":\"t\"}}"
                     : "{\"metadata\":{\"name\":\"other\"}}");
        fakeapi_respond(c, 200, "application/json", body);
    } else if (!strcmp(r->method, "GET") && !strncmp(r->path, NODES_PATH, strlen(NODES_PATH))) {
        snprintf(s->selector, sizeof(s->selector), "%s", r->path + strlen(NODES_PATH));
        s->node_reads++;
        bool held = s->policy || s->held_reads-- > 0;
        /* a node of NVIDIA's with a state label but no gpuop mark, and
           one gpuop holds until it lets go */
        fakeapi_respond(
            c, 200, "application/json",
            held ? "{\"kind\":\"NodeList\",\"items\":[{\"metadata\":{\"name\":\"nv\","
                   "\"annotations\":{\"other\":\"x\"}}},{\"metadata\":{\"name\":\"gpu-1\","
                   "\"annotations\":{\"gpuop.dev/driver-upgrade-since\":\"t\"}}}]}"
                 : "{\"kind\":\"NodeList\",\"items\":[{\"metadata\":{\"name\":\"nv\"}}]}");
    } else {
        fakeapi_respond_status(c, 404, "NotFound", "no such path");
    }
}

struct fx {
    uv_loop_t loop;
    struct fakeapi *srv;
    struct gpuop_kube *k;
    struct server s;
    bool closed;
};

static void on_closed(void *arg)
{
    ((struct fx *)arg)->closed = true;
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    assert_int_equal(fakeapi_start(&f->loop, handle, &f->s, &f->srv), 0);
    struct gpuop_kubeconfig cfg = {.server = (char *)fakeapi_url(f->srv), .token = "t0k3n"};
    struct gpuop_err err = {0};
    assert_int_equal(gpuop_kube_new(&f->loop, &cfg, &f->k, &err), 0);
    f->s.policy = true;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    gpuop_kube_close(f->k, on_closed, f);
    fakeapi_stop(f->srv);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_true(f->closed);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    free(f);
    return 0;
}

/* Deleted, then it waits while gpuop still holds a node, and succeeds
 * once it let go; only the nodes with an upgrade state label are read. */
static void test_waits_until_released(void **state)
{
    struct fx *f = *state;
    f->s.held_reads = 3;
    assert_int_equal(gpuop_release_policy(f->k, "default", TIMEOUT, POLL_MS), 0);
    assert_int_equal(f->s.deletes, 1);
    assert_false(f->s.policy);
    assert_int_equal(f->s.node_reads, 4); /* 3 held, then released */
    assert_string_equal(f->s.selector, "labelSelector=nvidia.com%2Fgpu-driver-upgrade-state");
}

/* A node still held at the timeout: it fails (the uninstall stops). */
static void test_timeout_fails(void **state)
{
    struct fx *f = *state;
    f->s.held_reads = 1000000;
    assert_int_equal(gpuop_release_policy(f->k, "default", 200, POLL_MS), 1);
    assert_true(f->s.node_reads >= 2);
}

/* The policy already gone: nothing to delete, the wait all the same. */
static void test_not_found(void **state)
{
    struct fx *f = *state;
    f->s.policy = false;
    assert_int_equal(gpuop_release_policy(f->k, "default", TIMEOUT, POLL_MS), 0);
    assert_int_equal(f->s.deletes, 1);
}

/* Another GpuPolicy goes on with the upgrade: no wait for the nodes. */
static void test_other_policy(void **state)
{
    struct fx *f = *state;
    f->s.other = true;
    f->s.held_reads = 1000000;
    assert_int_equal(gpuop_release_policy(f->k, "default", TIMEOUT, POLL_MS), 0);
    assert_int_equal(f->s.node_reads, 1);
}

/* Kept by gpuop's finalizer (its DRA plugin waits for claims): no node is
 * held, but it waits until the policy is gone, even with another policy
 * there; the uninstall must not remove gpuop before it removed it. */
static void test_waits_for_finalizer(void **state)
{
    struct fx *f = *state;
    f->s.kept_reads = 3;
    f->s.other = true;
    assert_int_equal(gpuop_release_policy(f->k, "default", TIMEOUT, POLL_MS), 0);
    assert_int_equal(f->s.policy_reads, 4); /* 3 kept, then gone */
}

/* Still kept at the timeout: it fails (the uninstall stops, gpuop still
 * runs). */
static void test_finalizer_timeout_fails(void **state)
{
    struct fx *f = *state;
    f->s.kept_reads = 1000000;
    assert_int_equal(gpuop_release_policy(f->k, "default", 200, POLL_MS), 1);
    assert_true(f->s.policy_reads >= 2);
}

/* Another policy that is being deleted goes on with nothing: the wait is
 * for the nodes. */
static void test_other_deleting(void **state)
{
    struct fx *f = *state;
    f->s.other = true;
    f->s.other_deleting = true;
    f->s.held_reads = 3;
    assert_int_equal(gpuop_release_policy(f->k, "default", TIMEOUT, POLL_MS), 0);
    assert_int_equal(f->s.node_reads, 4);
}

/* A refused delete fails at once. */
static void test_forbidden(void **state)
{
    struct fx *f = *state;
    f->s.forbid = true;
    assert_int_equal(gpuop_release_policy(f->k, "default", TIMEOUT, POLL_MS), 1);
    assert_int_equal(f->s.node_reads, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_waits_until_released, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeout_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_found, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_policy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_forbidden, setup, teardown),
        cmocka_unit_test_setup_teardown(test_waits_for_finalizer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_finalizer_timeout_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_deleting, setup, teardown),
    };
    return cmocka_run_group_tests(tests, process_setup, process_teardown);
}
