/*
 * test_leader.c - Lease leader election against the shared scripted fake
 * API server (test/unit/support/fakeapi.h). The handler here keeps one
 * Lease with a resourceVersion and enforces optimistic concurrency like the
 * API server (PUT with a stale resourceVersion -> 409, POST of an existing
 * Lease -> 409); knobs inject failures. Timings are short (lease 4 s,
 * renew deadline 2 s, retry 500 ms) so the tests run in seconds, yet long
 * enough that a request on a loaded machine (load average 10 on 2 cores,
 * valgrind) finishes within the renew deadline, which is also the request
 * timeout. Tests wait for conditions with WAIT_MS deadlines; what they
 * assert on time is a lower bound, or the bound the protocol promises (a
 * leader that cannot renew stops before its lease could expire).
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

#include "fakeapi.h"
#include "waiter.h"
#include "gpuop/kube.h"
#include "gpuop/leader.h"
#include "process_setup.h"

#define LEASE_MS 4000
#define RENEW_MS 2000
#define RETRY_MS 500
#define WAIT_MS  30000 /* generous: a loaded machine, valgrind */
#define PATH     "/apis/coordination.k8s.io/v1/namespaces/ns1/leases"

struct store {
    json_t *lease; /* NULL: absent */
    int rv;
    int fail_code;     /* answer every request with this, 0: behave */
    int conflict_puts; /* answer that many PUTs with 409 */
    int gets, posts, puts, conflicts;
};

struct fx {
    uv_loop_t loop;
    struct waiter wait;
    struct fakeapi *srv;
    struct store st;
    struct gpuop_kube *kube;
    bool kube_closed;
    struct elector *open[4]; /* electors to close if a test fails midway */
    struct elector *all[4];  /* every elector, freed at teardown */
};

struct elector {
    struct gpuop_leader *l;
    int started, stopped;
    bool closed;
};

static void respond_json(struct fakeapi_conn *c, int code, json_t *obj)
{
    char *s = json_dumps(obj, JSON_COMPACT);
    fakeapi_respond(c, code, "application/json", s);
    free(s);
}

static void store_put(struct store *st, json_t *obj /* steals */)
{
    char rv[16];
    snprintf(rv, sizeof(rv), "%d", ++st->rv);
    json_object_set_new(json_object_get(obj, "metadata"), "resourceVersion", json_string(rv));
    json_decref(st->lease);
    st->lease = obj;
}

static void handle(void *arg, struct fakeapi_conn *c, const struct fakeapi_request *r)
{
    struct store *st = arg;
    if (st->fail_code) {
        fakeapi_respond_status(c, st->fail_code, "InternalError", "injected");
        return;
    }
    if (!strcmp(r->method, "GET") && !strcmp(r->path, PATH "/l1")) {
        st->gets++;
        if (!st->lease)
            fakeapi_respond_status(c, 404, "NotFound", "leases \"l1\" not found");
        else
            respond_json(c, 200, st->lease);
        return;
    }
    json_t *body = json_loads(r->body ? r->body : "", 0, NULL);
    if (!strcmp(r->method, "POST") && !strcmp(r->path, PATH)) {
        st->posts++;
        if (st->lease) {
            st->conflicts++;
            fakeapi_respond_status(c, 409, "AlreadyExists", "exists");
            json_decref(body);
            return;
        }
        store_put(st, body);
        respond_json(c, 201, st->lease);
        return;
    }
    if (!strcmp(r->method, "PUT") && !strcmp(r->path, PATH "/l1")) {
        st->puts++;
        const char *rv = json_string_value(
            json_object_get(json_object_get(body, "metadata"), "resourceVersion"));
        char cur[16];
        snprintf(cur, sizeof(cur), "%d", st->rv);
        if (!st->lease || !rv || strcmp(rv, cur) != 0 || st->conflict_puts > 0) {
            if (st->conflict_puts > 0)
                st->conflict_puts--;
            st->conflicts++;
            fakeapi_respond_status(c, 409, "Conflict", "the object has been modified");
            json_decref(body);
            return;
        }
        store_put(st, body);
        respond_json(c, 200, st->lease);
        return;
    }
    json_decref(body);
    fakeapi_respond_status(c, 400, "BadRequest", "unexpected request");
}

static const char *holder(struct fx *f)
{
    return json_string_value(
        json_object_get(json_object_get(f->st.lease, "spec"), "holderIdentity"));
}

static json_int_t spec_int(struct fx *f, const char *k)
{
    return json_integer_value(json_object_get(json_object_get(f->st.lease, "spec"), k));
}

/* Puts a Lease held by someone else into the store (as if written by it). */
static void other_holds(struct fx *f, const char *who, const char *renew_time)
{
    json_t *obj =
        json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:i, s:s, s:s, s:i}}", "apiVersion",
                  "coordination.k8s.io/v1", "kind", "Lease", "metadata", "name", "l1", "namespace",
                  "ns1", "spec", "holderIdentity", who, "leaseDurationSeconds", 1, "acquireTime",
                  renew_time, "renewTime", renew_time, "leaseTransitions", 3);
    store_put(&f->st, obj);
}

/* Waits: test/unit/support/waiter.h. */

static void run_until_fn(struct fx *f, bool (*cond)(void *), void *arg, uint64_t ms)
{
    waiter_begin(&f->wait, ms);
    while (!cond(arg) && !f->wait.expired)
        uv_run(&f->loop, UV_RUN_ONCE);
    waiter_end(&f->wait);
    if (!cond(arg))
        fail_msg("timed out waiting");
}

static bool flag_set(void *arg)
{
    return *(bool *)arg;
}

static void run_until(struct fx *f, bool *flag, uint64_t ms)
{
    run_until_fn(f, flag_set, flag, ms);
}

static void run_for(struct fx *f, uint64_t ms)
{
    waiter_begin(&f->wait, ms);
    while (!f->wait.expired)
        uv_run(&f->loop, UV_RUN_ONCE);
    waiter_end(&f->wait);
}

static void on_started(void *arg)
{
    struct elector *e = arg;
    e->started++;
}

static void on_stopped(void *arg)
{
    ((struct elector *)arg)->stopped++;
}

/* New elector (heap: it outlives a failed test until teardown). */
static struct elector *elector_new(struct fx *f, const char *id)
{
    struct elector *e = calloc(1, sizeof(*e));
    assert_non_null(e);
    struct gpuop_leader_config cfg = {.namespace = "ns1",
                                      .name = "l1",
                                      .identity = id,
                                      .lease_ms = LEASE_MS,
                                      .renew_ms = RENEW_MS,
                                      .retry_ms = RETRY_MS,
                                      .on_started = on_started,
                                      .on_stopped = on_stopped,
                                      .arg = e};
    assert_int_equal(gpuop_leader_new(&f->loop, f->kube, &cfg, &e->l), 0);
    assert_int_equal(gpuop_leader_start(e->l), 0);
    for (int i = 0; i < 4; i++)
        if (!f->open[i]) {
            f->open[i] = e;
            break;
        }
    for (int i = 0; i < 4; i++)
        if (!f->all[i]) {
            f->all[i] = e;
            break;
        }
    return e;
}

static void on_elector_closed(void *arg)
{
    ((struct elector *)arg)->closed = true;
}

static void elector_close(struct fx *f, struct elector *e)
{
    for (int i = 0; i < 4; i++)
        if (f->open[i] == e)
            f->open[i] = NULL;
    gpuop_leader_close(e->l, on_elector_closed, e);
    run_until(f, &e->closed, WAIT_MS);
    e->l = NULL;
}

static bool stopped(void *arg)
{
    return ((struct elector *)arg)->stopped > 0;
}

static bool is_leader(void *arg)
{
    struct elector *e = arg;
    return e->l && gpuop_leader_is_leader(e->l);
}

/* One leads and the other has seen it hold the lease. */
static bool settled(void *arg)
{
    struct elector **e = arg;
    for (int i = 0; i < 2; i++) {
        struct elector *me = e[i], *other = e[1 - i];
        if (is_leader(me) && !is_leader(other) &&
            !strcmp(gpuop_leader_holder(other->l), gpuop_leader_self(me->l)))
            return true;
    }
    return false;
}

static bool wrote_4(void *arg)
{
    struct elector *e = arg;
    return gpuop_leader_writes(e->l) >= 4;
}

static bool conflicted(void *arg)
{
    return ((struct store *)arg)->conflicts > 0;
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    waiter_init(&f->wait, &f->loop);
    assert_int_equal(fakeapi_start(&f->loop, handle, &f->st, &f->srv), 0);
    struct gpuop_kubeconfig cfg = {0};
    cfg.server = (char *)fakeapi_url(f->srv);
    struct gpuop_err err = {0};
    assert_int_equal(gpuop_kube_new(&f->loop, &cfg, &f->kube, &err), 0);
    *state = f;
    return 0;
}

static void on_kube_closed(void *arg)
{
    ((struct fx *)arg)->kube_closed = true;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    for (int i = 0; i < 4; i++)
        if (f->open[i])
            elector_close(f, f->open[i]);
    for (int i = 0; i < 4; i++)
        free(f->all[i]);
    gpuop_kube_close(f->kube, on_kube_closed, f);
    run_until(f, &f->kube_closed, WAIT_MS);
    fakeapi_stop(f->srv);
    waiter_close(&f->wait);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    json_decref(f->st.lease);
    free(f);
    return 0;
}

/* ---- tests ---- */

static void test_timing_rules(void **state)
{
    assert_int_equal(gpuop_leader_check_timing(15000, 10000, 2000), 0);
    assert_int_equal(gpuop_leader_check_timing(10000, 10000, 2000), GPUOP_EINVAL);
    assert_int_equal(gpuop_leader_check_timing(15000, 2400, 2000), GPUOP_EINVAL);
    assert_int_equal(gpuop_leader_check_timing(15000, 10000, 0), GPUOP_EINVAL);
    char id[GPUOP_LEADER_MAX_IDENT], id2[GPUOP_LEADER_MAX_IDENT];
    gpuop_leader_identity(id, sizeof(id));
    gpuop_leader_identity(id2, sizeof(id2));
    assert_non_null(strchr(id, '_'));
    assert_string_not_equal(id, id2); /* random suffix */
}

static void test_acquire_at_once_when_absent(void **state)
{
    struct fx *f = *state;
    struct elector *e;
    uint64_t t0 = uv_now(&f->loop);
    e = elector_new(f, "me");
    run_until_fn(f, is_leader, e, WAIT_MS);
    /* no waiting: one GET (404), then the POST at once (a wait would show
     * as another GET); wall time is not asserted (valgrind is slow) */
    (void)t0;
    assert_int_equal(e->started, 1);
    assert_int_equal(f->st.gets, 1);
    assert_int_equal(f->st.posts, 1);
    assert_string_equal(holder(f), "me");
    assert_int_equal(spec_int(f, "leaseDurationSeconds"), LEASE_MS / 1000);
    assert_int_equal(spec_int(f, "leaseTransitions"), 0);
    /* it renews every retry period, and stays leader meanwhile */
    int rv = f->st.rv;
    run_until_fn(f, wrote_4, e, WAIT_MS); /* the create and three renewals */
    assert_true(f->st.rv - rv >= 3);
    assert_true(gpuop_leader_is_leader(e->l));
    assert_int_equal(e->stopped, 0);
    /* release on close: holder emptied, duration 1 s */
    elector_close(f, e);
    assert_string_equal(holder(f), "");
    assert_int_equal(spec_int(f, "leaseDurationSeconds"), 1);
    assert_int_equal(e->stopped, 0); /* a clean close is no loss */
}

static void test_two_candidates_then_handover(void **state)
{
    struct fx *f = *state;
    struct elector *a, *b;
    a = elector_new(f, "a");
    b = elector_new(f, "b");
    struct elector *both[2] = {a, b};
    run_until_fn(f, settled, both, WAIT_MS);
    assert_true(gpuop_leader_is_leader(a->l) != gpuop_leader_is_leader(b->l)); /* exactly one */
    struct elector *lead = gpuop_leader_is_leader(a->l) ? a : b;
    struct elector *wait = lead == a ? b : a;
    assert_string_equal(holder(f), gpuop_leader_self(lead->l));
    assert_string_equal(gpuop_leader_holder(wait->l), gpuop_leader_self(lead->l));
    run_for(f, 2 * LEASE_MS); /* the leader renews, so the other keeps waiting */
    assert_false(gpuop_leader_is_leader(wait->l));
    /* the leader goes cleanly: the other takes over well before the lease
     * duration, and the transition is counted */
    uint64_t t0 = uv_now(&f->loop);
    elector_close(f, lead);
    run_until_fn(f, is_leader, wait, WAIT_MS);
    assert_true(uv_now(&f->loop) - t0 < LEASE_MS);
    assert_string_equal(holder(f), gpuop_leader_self(wait->l));
    assert_int_equal(spec_int(f, "leaseTransitions"), 1);
    elector_close(f, wait);
}

static void test_expiry_on_local_clock(void **state)
{
    struct fx *f = *state;
    /* held by "other" with a renewTime from long ago: the holder's clock
     * says nothing; we wait a full lease duration from our first look */
    other_holds(f, "other", "2000-01-01T00:00:00.000000Z");
    struct elector *e;
    uint64_t t0 = uv_now(&f->loop);
    e = elector_new(f, "me");
    run_for(f, LEASE_MS / 2);
    assert_false(gpuop_leader_is_leader(e->l));
    assert_string_equal(gpuop_leader_holder(e->l), "other");
    /* the holder renews (the record changes): the clock restarts */
    other_holds(f, "other", "2000-01-01T00:00:01.000000Z");
    uint64_t changed = uv_now(&f->loop);
    run_until_fn(f, is_leader, e, WAIT_MS);
    uint64_t took = uv_now(&f->loop);
    assert_true(took - changed >= LEASE_MS - RETRY_MS); /* seen up to one retry late */
    assert_true(took - t0 >= LEASE_MS + LEASE_MS / 2 - RETRY_MS);
    assert_string_equal(holder(f), "me");
    assert_int_equal(spec_int(f, "leaseTransitions"), 4);
    elector_close(f, e);
}

static void test_lost_race_409(void **state)
{
    struct fx *f = *state;
    other_holds(f, "other", "2000-01-01T00:00:00.000000Z");
    json_object_set_new(json_object_get(f->st.lease, "spec"), "holderIdentity", json_string(""));
    struct elector *e;
    f->st.conflict_puts = 1; /* someone else's write lands first */
    e = elector_new(f, "me");
    run_until_fn(f, conflicted, &f->st, WAIT_MS);
    assert_false(gpuop_leader_is_leader(e->l));
    assert_int_equal(f->st.conflicts, 1);
    run_until_fn(f, is_leader, e, WAIT_MS); /* retries, then wins */
    assert_int_equal(e->started, 1);
    elector_close(f, e);
}

static void test_renew_deadline_loses_for_good(void **state)
{
    struct fx *f = *state;
    struct elector *e;
    e = elector_new(f, "me");
    run_until_fn(f, is_leader, e, WAIT_MS);
    f->st.fail_code = 500; /* the API server breaks */
    uv_update_time(&f->loop);
    uint64_t t0 = uv_now(&f->loop);
    run_until_fn(f, stopped, e, WAIT_MS);
    assert_int_equal(e->stopped, 1);
    assert_false(gpuop_leader_is_leader(e->l));
    /* not before the renew deadline (less the retry it was last renewed
     * within), and before the lease could expire for the others */
    uint64_t took = uv_now(&f->loop) - t0;
    assert_true(took >= RENEW_MS - RETRY_MS);
    assert_true(took < LEASE_MS);
    /* the server recovers: a lost leader does not come back */
    f->st.fail_code = 0;
    int puts = f->st.puts;
    run_for(f, 3 * RETRY_MS);
    assert_int_equal(f->st.puts, puts);
    assert_int_equal(e->started, 1);
    elector_close(f, e);
    assert_string_equal(holder(f), "me"); /* no release after a loss */
}

static void test_taken_over_by_another(void **state)
{
    struct fx *f = *state;
    struct elector *e;
    e = elector_new(f, "me");
    run_until_fn(f, is_leader, e, WAIT_MS);
    /* someone overwrites the lease (new resourceVersion) */
    other_holds(f, "thief", "2030-01-01T00:00:00.000000Z");
    run_until_fn(f, stopped, e, WAIT_MS);
    assert_int_equal(e->stopped, 1);
    assert_string_equal(gpuop_leader_holder(e->l), "thief");
    elector_close(f, e);
    assert_string_equal(holder(f), "thief");
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_timing_rules),
        T(test_acquire_at_once_when_absent),
        T(test_two_candidates_then_handover),
        T(test_expiry_on_local_clock),
        T(test_lost_race_409),
        T(test_renew_deadline_loses_for_good),
        T(test_taken_over_by_another),
    };
    return cmocka_run_group_tests(tests, process_setup, process_teardown);
}
