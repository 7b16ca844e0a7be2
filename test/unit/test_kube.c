/*
 * test_kube.c - the curl-on-libuv Kubernetes client against the shared
 * fault-injecting HTTP/1.1 server (test/unit/support/fakeapi.h) that runs
 * in this process, on the same libuv loop, on 127.0.0.1 with an ephemeral
 * port.
 *
 * The server records every request; the handler here answers by path: /ok (200 JSON),
 * /status/<code> (a Kubernetes Status), /plain/<code> (text), /split (a chunked body written in
 * odd-sized pieces), /forever (a chunk every few ms until the client goes), /cut (closes mid-body),
 * /stall (never answers), /big (a 5000-byte body), /garbage/<code> (that status with a body that is
 * not JSON). Every test ends by closing the client and the server and checking that uv_loop_close
 * finds no handle left open. The group setup does what the process must before any client
 * (process_setup.h), as main does.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "fakeapi.h"
#include "waiter.h"
#include "gpuop/kube.h"
#include "process_setup.h"

/* ---- the server's routes --------------------------------------------- */

struct routes {
    char payload[8192]; /* what /split sends, decoded */
    size_t payload_len;
    int ticks;
};

/* odd piece sizes: chunk framing and lines get split everywhere */
static const size_t pieces[] = {1, 7, 3, 13, 2, 29, 5, 64, 11};

static const char chunked_head[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                   "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";

static void on_tick(struct fakeapi_conn *c, void *arg)
{
    struct routes *rt = arg;
    char line[64];
    int n = snprintf(line, sizeof(line), "{\"tick\":%d}\n", rt->ticks++);
    fakeapi_write(c, line, (size_t)n);
}

/* The split route: a chunked body of JSON lines (with a multi-byte UTF-8
 * character), chunk sizes unrelated to line boundaries, written in odd
 * pieces 2 ms apart. */
static void route_split(struct routes *rt, struct fakeapi_conn *c)
{
    rt->payload_len = 0;
    for (int i = 0; i < 40; i++)
        rt->payload_len +=
            (size_t)snprintf(rt->payload + rt->payload_len, sizeof(rt->payload) - rt->payload_len,
                             "{\"type\":\"ADDED\",\"n\":%d,\"s\":\"\xc3\xa9\"}\n", i);
    size_t cap = rt->payload_len * 2 + 256;
    char *wire = malloc(cap);
    assert_non_null(wire);
    size_t w = (size_t)snprintf(wire, cap, "%s", chunked_head);
    for (size_t off = 0; off < rt->payload_len;) {
        size_t n = rt->payload_len - off < 37 ? rt->payload_len - off : 37;
        w += (size_t)snprintf(wire + w, cap - w, "%zx\r\n", n);
        memcpy(wire + w, rt->payload + off, n);
        w += n;
        w += (size_t)snprintf(wire + w, cap - w, "\r\n");
        off += n;
    }
    w += (size_t)snprintf(wire + w, cap - w, "0\r\n\r\n");
    for (size_t off = 0, i = 0; off < w; i++) {
        size_t n = pieces[i % (sizeof(pieces) / sizeof(pieces[0]))];
        if (n > w - off)
            n = w - off;
        fakeapi_stream_raw(c, i ? 2 : 0, wire + off, n);
        off += n;
    }
    fakeapi_cut(c, 0); /* the body is complete: just close */
    free(wire);
}

/* Answers by path: /ok (200 JSON), /status/<code> (a Kubernetes Status),
 * /plain/<code> (text), /split (see route_split), /forever (a chunk every
 * few ms until the client goes), /cut (closes mid-body), /stall (never
 * answers), /big (a 5000-byte body). */
static void handle(void *arg, struct fakeapi_conn *c, const struct fakeapi_request *r)
{
    struct routes *rt = arg;
    const char *p = r->path;
    int code;
    char buf[512];
    if (!strcmp(p, "/managed")) {
        fakeapi_respond(c, 200, "application/json",
                        "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n\",\"managedFields\":"
                        "[{\"manager\":\"kwok\",\"fieldsV1\":{\"f:status\":{}}}],"
                        "\"labels\":{\"managedFields\":\"x\"}},\"n\":42}");
    } else if (!strncmp(p, "/ok", 3)) {
        fakeapi_respond(c, 200, "application/json", "{\"kind\":\"Thing\",\"n\":42}");
    } else if (sscanf(p, "/status/%d", &code) == 1) {
        snprintf(buf, sizeof(buf),
                 "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                 "\"message\":\"msg %d\",\"reason\":\"Reason%d\",\"code\":%d,"
                 "\"details\":{\"causes\":[{\"field\":\"spec.f%d\"}]}}",
                 code, code, code, code);
        fakeapi_respond(c, code, "application/json", buf);
    } else if (sscanf(p, "/garbage/%d", &code) == 1) {
        fakeapi_respond(c, code, "application/json", "{\"kind\":\"Thing\",\"n\":");
    } else if (sscanf(p, "/plain/%d", &code) == 1) {
        fakeapi_respond(c, code, "text/plain", "plain failure\x01\ttext");
    } else if (!strcmp(p, "/split")) {
        route_split(rt, c);
    } else if (!strcmp(p, "/forever")) {
        fakeapi_stream_begin(c, 200, FAKEAPI_CHUNKED, 0);
        fakeapi_every(c, 5, on_tick, rt);
    } else if (!strcmp(p, "/cut")) {
        fakeapi_stream_begin(c, 200, FAKEAPI_LENGTH, 1000);
        fakeapi_stream_send(c, 0, "{\"partial\":", 11);
        fakeapi_cut(c, 0);
    } else if (!strcmp(p, "/stall")) {
        /* say nothing */
    } else if (!strcmp(p, "/big")) {
        char *big = malloc(5001);
        assert_non_null(big);
        memset(big, ' ', 5000);
        big[0] = '[';
        big[4999] = ']';
        big[5000] = '\0';
        fakeapi_respond(c, 200, "application/json", big);
        free(big);
    } else {
        fakeapi_respond(c, 404, "text/plain", "no route");
    }
}

/* The last request the server saw (never NULL in a test that made one). */
static const struct fakeapi_request *last(const struct fakeapi *s)
{
    const struct fakeapi_request *r = fakeapi_last(s);
    assert_non_null(r);
    return r;
}

/* ---- the fixture ------------------------------------------------------ */

struct fx {
    uv_loop_t loop;
    struct fakeapi *srv;
    struct routes routes;
    struct gpuop_kube *k;
    struct waiter wait;
    bool closed; /* the client's close callback ran */
    char tokfile[64];
};

/* Waits: test/unit/support/waiter.h. */

/* Runs the loop until *flag or ms elapse; fails the test on expiry. */
static void run_until(struct fx *f, const bool *flag, uint64_t ms)
{
    waiter_begin(&f->wait, ms);
    while (!*flag && !f->wait.expired)
        uv_run(&f->loop, UV_RUN_ONCE);
    waiter_end(&f->wait);
    if (!*flag)
        fail_msg("timed out waiting");
}

/* Runs the loop for about ms. */
static void run_for(struct fx *f, uint64_t ms)
{
    waiter_begin(&f->wait, ms);
    while (!f->wait.expired)
        uv_run(&f->loop, UV_RUN_ONCE);
    waiter_end(&f->wait);
}

static void make_client(struct fx *f, const char *token, const char *token_file, int port)
{
    char server[64];
    snprintf(server, sizeof(server), "http://127.0.0.1:%d", port);
    struct gpuop_kubeconfig cfg = {0};
    cfg.server = server;
    cfg.token = (char *)token;
    cfg.token_file = (char *)token_file;
    struct gpuop_err err = {0};
    assert_int_equal(gpuop_kube_new(&f->loop, &cfg, &f->k, &err), 0);
    assert_non_null(f->k);
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    waiter_init(&f->wait, &f->loop);
    assert_int_equal(fakeapi_start(&f->loop, handle, &f->routes, &f->srv), 0);
    make_client(f, "t0k3n", NULL, fakeapi_port(f->srv));
    *state = f;
    return 0;
}

static void on_closed(void *arg)
{
    struct fx *f = arg;
    f->closed = true;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    if (f->k && !f->closed) {
        gpuop_kube_close(f->k, on_closed, f);
        run_until(f, &f->closed, 5000);
    }
    fakeapi_stop(f->srv);
    waiter_close(&f->wait);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&f->loop), 0); /* no handle left behind */
    if (f->tokfile[0])
        unlink(f->tokfile);
    free(f);
    return 0;
}

/* ---- requests --------------------------------------------------------- */

/* A GET of path, with the defaults. */
#define GET(p) (&(struct gpuop_kube_opts){.verb = GPUOP_KUBE_GET, .path = (p)})

/* gpuop_kube_call with the request's parts as arguments. */
static int call(struct fx *f, enum gpuop_kube_verb verb, const char *path, const char *ctype,
                const char *body, json_t **out, struct gpuop_err *err)
{
    struct gpuop_kube_opts o = {.verb = verb,
                                .path = path,
                                .content_type = ctype,
                                .body = body,
                                .body_len = body ? strlen(body) : 0};
    return gpuop_kube_call(f->k, &o, out, err);
}

/* ---- request results -------------------------------------------------- */

struct res {
    struct fx *f;
    int calls;
    int rc;
    struct gpuop_err err;
    json_t *body; /* own reference */
    bool finished;
    char data[16384];
    size_t data_len;
    int chunks;
    int data_after_done;
    /* actions */
    int cancel_after_chunks;      /* cancel own stream from on_data */
    int close_after_chunks;       /* close the client from on_data */
    int start_after_chunks;       /* start `chain` from on_data */
    int abort_after_chunks;       /* return GPUOP_EPARSE from on_data */
    struct gpuop_kube_req *req;   /* own handle */
    struct gpuop_kube_req *other; /* cancel this one from done */
    struct res *chain;            /* start a request for this one from done */
    const char *chain_path;
    bool done_during_cancel;
};

static void on_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct res *r = arg;
    r->calls++;
    r->rc = rc;
    r->finished = true;
    assert_non_null(err);
    r->err = *err;
    assert_int_equal(err->rc, rc);
    json_decref(r->body);
    r->body = json_incref(body);
    if (r->other)
        gpuop_kube_cancel(r->other);
    if (r->chain && !r->start_after_chunks)
        assert_int_equal(
            gpuop_kube_request(r->f->k, GET(r->chain_path), on_done, r->chain, &r->chain->req), 0);
}

static int on_data(void *arg, const char *p, size_t n)
{
    struct res *r = arg;
    if (r->finished)
        r->data_after_done++;
    assert_true(r->data_len + n <= sizeof(r->data));
    memcpy(r->data + r->data_len, p, n);
    r->data_len += n;
    r->chunks++;
    if (r->start_after_chunks && r->chunks == r->start_after_chunks)
        assert_int_equal(
            gpuop_kube_request(r->f->k, GET(r->chain_path), on_done, r->chain, &r->chain->req), 0);
    if (r->cancel_after_chunks && r->chunks == r->cancel_after_chunks) {
        gpuop_kube_cancel(r->req);
        r->done_during_cancel = r->finished; /* done ran before cancel returned */
    }
    if (r->close_after_chunks && r->chunks == r->close_after_chunks)
        gpuop_kube_close(r->f->k, on_closed, r->f);
    if (r->abort_after_chunks && r->chunks == r->abort_after_chunks)
        return GPUOP_EPARSE;
    return 0;
}

static void res_free(struct res *r)
{
    json_decref(r->body);
    r->body = NULL;
}

/* ---- tests ------------------------------------------------------------ */

static void test_get_ok(void **state)
{
    struct fx *f = *state;
    json_t *body = NULL;
    struct gpuop_err err = {0};
    assert_int_equal(call(f, GPUOP_KUBE_GET, "/ok?limit=5", NULL, NULL, &body, &err), 0);
    assert_non_null(body);
    assert_int_equal(json_integer_value(json_object_get(body, "n")), 42);
    assert_int_equal(err.http_code, 200);
    json_decref(body);
    assert_string_equal(last(f->srv)->method, "GET");
    assert_string_equal(last(f->srv)->path, "/ok?limit=5");
    assert_string_equal(last(f->srv)->auth, "Bearer t0k3n");
    assert_string_equal(last(f->srv)->accept, "application/json");
    assert_string_equal(last(f->srv)->ua, "gpuop/" GPUOP_VERSION);
    assert_string_equal(last(f->srv)->ctype, "");
    assert_int_equal((int)fakeapi_nreq(f->srv), 1);
    /* the caller's Accept: a LIST of metadata alone (the labeller's) */
    struct gpuop_kube_opts o = {
        .verb = GPUOP_KUBE_GET, .path = "/ok", .accept = GPUOP_ACCEPT_METADATA_LIST};
    assert_int_equal(gpuop_kube_call(f->k, &o, &body, &err), 0);
    json_decref(body);
    assert_string_equal(last(f->srv)->accept, GPUOP_ACCEPT_METADATA_LIST);
}

/* A response is parsed without its metadata.managedFields (never read,
 * most of a Node's bytes); the rest arrives whole. */
static void test_response_without_managed_fields(void **state)
{
    struct fx *f = *state;
    json_t *body = NULL;
    struct gpuop_err err = {0};
    assert_int_equal(call(f, GPUOP_KUBE_GET, "/managed", NULL, NULL, &body, &err), 0);
    json_t *md = json_object_get(body, "metadata");
    assert_null(json_object_get(md, "managedFields"));
    assert_string_equal(json_string_value(json_object_get(md, "name")), "n");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(md, "labels"), "managedFields")), "x");
    assert_int_equal(json_integer_value(json_object_get(body, "n")), 42);
    json_decref(body);
}

static void test_methods_and_bodies(void **state)
{
    struct fx *f = *state;
    struct gpuop_err err = {0};
    const char *doc = "{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\"}";
    assert_int_equal(call(f, GPUOP_KUBE_PATCH, "/ok/x?fieldManager=gpuop&force=true",
                          GPUOP_CT_APPLY, doc, NULL, &err),
                     0);
    assert_string_equal(last(f->srv)->method, "PATCH");
    assert_string_equal(last(f->srv)->ctype, GPUOP_CT_APPLY);
    assert_string_equal(last(f->srv)->body, doc);
    assert_string_equal(last(f->srv)->expect, "");

    assert_int_equal(call(f, GPUOP_KUBE_POST, "/ok", NULL, "{}", NULL, &err), 0);
    assert_string_equal(last(f->srv)->method, "POST");
    assert_string_equal(last(f->srv)->ctype, GPUOP_CT_JSON);
    assert_string_equal(last(f->srv)->body, "{}");
    /* body_len 0: the body's strlen */
    struct gpuop_kube_opts o = {.verb = GPUOP_KUBE_POST, .path = "/ok", .body = "{\"a\":1}"};
    assert_int_equal(gpuop_kube_call(f->k, &o, NULL, &err), 0);
    assert_string_equal(last(f->srv)->body, "{\"a\":1}");

    /* a 3000-byte body arrives whole */
    char *large = malloc(3001);
    assert_non_null(large);
    memset(large, 'a', 3000);
    large[0] = '"';
    large[2999] = '"';
    large[3000] = '\0';
    assert_int_equal(call(f, GPUOP_KUBE_PUT, "/ok/lease", NULL, large, NULL, &err), 0);
    assert_string_equal(last(f->srv)->method, "PUT");
    assert_int_equal(last(f->srv)->body_len, 3000);
    assert_string_equal(last(f->srv)->expect, "");
    free(large);

    assert_int_equal(call(f, GPUOP_KUBE_DELETE, "/ok/y", NULL, NULL, NULL, &err), 0);
    assert_string_equal(last(f->srv)->method, "DELETE");
    assert_int_equal(last(f->srv)->body_len, 0);

    /* bad arguments never reach the network */
    int n = (int)fakeapi_nreq(f->srv);
    assert_int_equal(call(f, GPUOP_KUBE_GET, "no-slash", NULL, NULL, NULL, &err), GPUOP_EINVAL);
    assert_int_equal(call(f, GPUOP_KUBE_GET, "/a b", NULL, NULL, NULL, &err), GPUOP_EINVAL);
    assert_int_equal(call(f, GPUOP_KUBE_GET, NULL, NULL, NULL, NULL, &err), GPUOP_EINVAL);
    assert_int_equal(call(f, (enum gpuop_kube_verb)99, "/ok", NULL, NULL, NULL, &err),
                     GPUOP_EINVAL);
    /* a watch is a stream, and a stream a GET */
    assert_int_equal(call(f, GPUOP_KUBE_WATCH, "/ok?watch=1", NULL, NULL, NULL, &err),
                     GPUOP_EINVAL);
    struct res r = {.f = f};
    struct gpuop_kube_opts post = {.verb = GPUOP_KUBE_POST, .path = "/ok"};
    assert_int_equal(gpuop_kube_stream(f->k, &post, on_data, on_done, &r, NULL), GPUOP_EINVAL);
    assert_int_equal(r.calls, 0);
    assert_int_equal((int)fakeapi_nreq(f->srv), n);
}

static void test_status_errors(void **state)
{
    struct fx *f = *state;
    static const struct {
        int code, rc;
    } cases[] = {{404, GPUOP_ENOTFOUND},  {409, GPUOP_ECONFLICT},  {410, GPUOP_EGONE},
                 {403, GPUOP_EFORBIDDEN}, {401, GPUOP_EFORBIDDEN}, {422, GPUOP_EINVAL},
                 {400, GPUOP_EINVAL},     {500, GPUOP_EHTTP},      {429, GPUOP_EHTTP}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char path[64], want[64];
        snprintf(path, sizeof(path), "/status/%d", cases[i].code);
        json_t *body = NULL;
        struct gpuop_err err = {0};
        int rc = call(f, GPUOP_KUBE_GET, path, NULL, NULL, &body, &err);
        assert_int_equal(rc, cases[i].rc);
        assert_int_equal(err.rc, cases[i].rc);
        assert_int_equal(err.http_code, cases[i].code);
        snprintf(want, sizeof(want), "Reason%d", cases[i].code);
        assert_string_equal(err.reason, want);
        snprintf(want, sizeof(want), "msg %d", cases[i].code);
        assert_string_equal(err.message, want);
        snprintf(want, sizeof(want), "spec.f%d", cases[i].code);
        assert_string_equal(err.field, want);
        /* the Status itself is handed over too */
        assert_string_equal(json_string_value(json_object_get(body, "kind")), "Status");
        json_decref(body);
    }
}

static void test_plain_error(void **state)
{
    struct fx *f = *state;
    json_t *body = NULL;
    struct gpuop_err err = {0};
    assert_int_equal(call(f, GPUOP_KUBE_GET, "/plain/502", NULL, NULL, &body, &err), GPUOP_EHTTP);
    assert_null(body);
    assert_int_equal(err.http_code, 502);
    assert_string_equal(err.message, "HTTP 502: plain failure  text");
    assert_string_equal(err.reason, "");
}

/* A 2xx whose body is not JSON is an error, not a success without a body
 * (it was: rc 0, body NULL, and a caller took that for an empty answer). */
static void test_bad_2xx_body(void **state)
{
    struct fx *f = *state;
    static const int codes[] = {200, 201};
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        char path[32];
        snprintf(path, sizeof(path), "/garbage/%d", codes[i]);
        json_t *body = NULL;
        struct gpuop_err err = {0};
        assert_int_equal(call(f, GPUOP_KUBE_GET, path, NULL, NULL, &body, &err), GPUOP_EPARSE);
        assert_null(body);
        assert_int_equal(err.rc, GPUOP_EPARSE);
        assert_int_equal(err.http_code, codes[i]);
        assert_non_null(strstr(err.message, "not JSON"));
    }
    /* a non-2xx one is still the HTTP error, its raw body quoted */
    json_t *body = NULL;
    struct gpuop_err err = {0};
    assert_int_equal(call(f, GPUOP_KUBE_GET, "/garbage/500", NULL, NULL, &body, &err), GPUOP_EHTTP);
    assert_null(body);
    assert_int_equal(err.http_code, 500);
    assert_non_null(strstr(err.message, "HTTP 500: {\"kind\""));
}

static void test_stream_split(void **state)
{
    struct fx *f = *state;
    struct res r = {.f = f};
    assert_int_equal(gpuop_kube_stream(f->k, GET("/split"), on_data, on_done, &r, &r.req), 0);
    assert_non_null(r.req);
    run_until(f, &r.finished, 10000);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.calls, 1);
    assert_null(r.body);
    assert_true(f->routes.payload_len > 1000);
    assert_int_equal(r.data_len, f->routes.payload_len);
    assert_memory_equal(r.data, f->routes.payload, r.data_len);
    assert_true(r.chunks > 5); /* delivered as it arrived, not at the end */
    run_for(f, 20);
    assert_int_equal(r.calls, 1);
    res_free(&r);
}

static void test_stream_error_status(void **state)
{
    struct fx *f = *state;
    struct res r = {.f = f};
    assert_int_equal(gpuop_kube_stream(f->k, GET("/status/410"), on_data, on_done, &r, NULL), 0);
    run_until(f, &r.finished, 5000);
    assert_int_equal(r.rc, GPUOP_EGONE);
    assert_int_equal(r.chunks, 0); /* an error body is not stream data */
    assert_string_equal(r.err.reason, "Reason410");
    assert_int_equal(r.err.http_code, 410);
    res_free(&r);
}

static void test_cut_mid_body(void **state)
{
    struct fx *f = *state;
    struct gpuop_err err = {0};
    json_t *body = NULL;
    assert_int_equal(call(f, GPUOP_KUBE_GET, "/cut", NULL, NULL, &body, &err), GPUOP_ETRANSPORT);
    assert_null(body);
    assert_true(strlen(err.message) > 0);
}

static void test_timeouts(void **state)
{
    struct fx *f = *state;
    struct res r = {.f = f}, s = {.f = f};
    uint64_t t0 = uv_now(&f->loop);
    assert_int_equal(
        gpuop_kube_request(
            f->k,
            &(struct gpuop_kube_opts){.verb = GPUOP_KUBE_GET, .path = "/stall", .timeout_ms = 300},
            on_done, &r, NULL),
        0);
    assert_int_equal(
        gpuop_kube_stream(
            f->k,
            &(struct gpuop_kube_opts){.verb = GPUOP_KUBE_GET, .path = "/stall", .timeout_ms = 400},
            on_data, on_done, &s, NULL),
        0);
    run_until(f, &r.finished, 5000);
    run_until(f, &s.finished, 5000);
    uv_update_time(&f->loop);
    uint64_t dt = uv_now(&f->loop) - t0;
    assert_int_equal(r.rc, GPUOP_ETRANSPORT);
    assert_string_equal(r.err.reason, "Timeout");
    assert_int_equal(s.rc, GPUOP_ETRANSPORT);
    assert_true(dt >= 350 && dt < 3000);
    res_free(&r);
    res_free(&s);
}

static void test_too_big(void **state)
{
    struct fx *f = *state;
    struct gpuop_err err = {0};
    json_t *body = NULL;
    gpuop_kube_set_max_body(f->k, 4999);
    assert_int_equal(call(f, GPUOP_KUBE_GET, "/big", NULL, NULL, &body, &err), GPUOP_ETOOBIG);
    assert_null(body);
    gpuop_kube_set_max_body(f->k, 5000); /* exactly at the limit is fine */
    assert_int_equal(call(f, GPUOP_KUBE_GET, "/big", NULL, NULL, &body, &err), 0);
    assert_true(json_is_array(body));
    json_decref(body);
}

static void write_token(const char *path, const char *tok)
{
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(tok, fp);
    fclose(fp);
}

static void test_token_file_rotation(void **state)
{
    struct fx *f = *state;
    snprintf(f->tokfile, sizeof(f->tokfile), "/tmp/gpuop-tok-XXXXXX");
    int fd = mkstemp(f->tokfile);
    assert_true(fd >= 0);
    close(fd);
    write_token(f->tokfile, "  one\n");
    /* a second client on the same loop, authenticating from the file */
    struct gpuop_kube *first = f->k;
    gpuop_kube_close(first, NULL, NULL);
    make_client(f, NULL, f->tokfile, fakeapi_port(f->srv));
    struct gpuop_err err = {0};
    assert_int_equal(call(f, GPUOP_KUBE_GET, "/ok", NULL, NULL, NULL, &err), 0);
    assert_string_equal(last(f->srv)->auth, "Bearer one");
    write_token(f->tokfile, "two\n");
    assert_int_equal(call(f, GPUOP_KUBE_GET, "/ok", NULL, NULL, NULL, &err), 0);
    assert_string_equal(last(f->srv)->auth, "Bearer one"); /* younger than a minute */
    gpuop_kube_set_token_ttl(f->k, 0);
    assert_int_equal(call(f, GPUOP_KUBE_GET, "/ok", NULL, NULL, NULL, &err), 0);
    assert_string_equal(last(f->srv)->auth, "Bearer two");
    /* a file that vanishes for a moment: the last good token stays */
    unlink(f->tokfile);
    assert_int_equal(call(f, GPUOP_KUBE_GET, "/ok", NULL, NULL, NULL, &err), 0);
    assert_string_equal(last(f->srv)->auth, "Bearer two");
    f->tokfile[0] = '\0';
}

static void test_token_file_unreadable(void **state)
{
    struct fx *f = *state;
    gpuop_kube_close(f->k, NULL, NULL);
    make_client(f, NULL, "/nonexistent/gpuop/token", fakeapi_port(f->srv));
    struct gpuop_err err = {0};
    int n = (int)fakeapi_nreq(f->srv);
    assert_int_equal(call(f, GPUOP_KUBE_GET, "/ok", NULL, NULL, NULL, &err), GPUOP_ECONFIG);
    assert_non_null(strstr(err.message, "token file"));
    assert_int_equal((int)fakeapi_nreq(f->srv), n);
}

static void test_cancel_in_on_data(void **state)
{
    struct fx *f = *state;
    struct res r = {.f = f, .cancel_after_chunks = 3};
    assert_int_equal(gpuop_kube_stream(f->k, GET("/forever"), on_data, on_done, &r, &r.req), 0);
    run_until(f, &r.finished, 5000);
    assert_true(r.done_during_cancel);
    assert_int_equal(r.rc, GPUOP_ECANCELED);
    assert_int_equal(r.err.rc, GPUOP_ECANCELED);
    int chunks = r.chunks;
    assert_int_equal(chunks, 3);
    /* the client keeps working, and the stream stays silent */
    struct gpuop_err err = {0};
    assert_int_equal(call(f, GPUOP_KUBE_GET, "/ok", NULL, NULL, NULL, &err), 0);
    run_for(f, 50);
    assert_int_equal(r.chunks, chunks);
    assert_int_equal(r.calls, 1);
    assert_int_equal(r.data_after_done, 0);
    res_free(&r);
}

static void test_abort_from_on_data(void **state)
{
    struct fx *f = *state;
    struct res r = {.f = f, .abort_after_chunks = 2};
    assert_int_equal(gpuop_kube_stream(f->k, GET("/forever"), on_data, on_done, &r, NULL), 0);
    run_until(f, &r.finished, 5000);
    assert_int_equal(r.rc, GPUOP_EPARSE); /* the callback's own rc */
    assert_int_equal(r.chunks, 2);
    assert_int_equal(r.err.http_code, 200);
    run_for(f, 30);
    assert_int_equal(r.calls, 1);
    assert_int_equal(r.chunks, 2);
    res_free(&r);
}

static void test_request_from_on_data(void **state)
{
    struct fx *f = *state;
    struct res next = {.f = f};
    struct res r = {.f = f,
                    .start_after_chunks = 2,
                    .cancel_after_chunks = 2,
                    .chain = &next,
                    .chain_path = "/ok"};
    assert_int_equal(gpuop_kube_stream(f->k, GET("/forever"), on_data, on_done, &r, &r.req), 0);
    run_until(f, &next.finished, 5000);
    assert_int_equal(r.rc, GPUOP_ECANCELED);
    assert_int_equal(r.calls, 1);
    assert_int_equal(next.rc, 0);
    assert_int_equal(next.calls, 1);
    assert_int_equal(json_integer_value(json_object_get(next.body, "n")), 42);
    res_free(&r);
    res_free(&next);
}

static void test_request_from_done(void **state)
{
    struct fx *f = *state;
    struct res second = {.f = f};
    struct res first = {.f = f, .chain = &second, .chain_path = "/status/404"};
    assert_int_equal(gpuop_kube_request(f->k, GET("/ok"), on_done, &first, &first.req), 0);
    run_until(f, &second.finished, 5000);
    assert_int_equal(first.rc, 0);
    assert_int_equal(second.rc, GPUOP_ENOTFOUND);
    assert_int_equal(first.calls, 1);
    assert_int_equal(second.calls, 1);
    assert_string_equal(last(f->srv)->path, "/status/404");
    res_free(&first);
    res_free(&second);
}

static void test_cancel_other_from_done(void **state)
{
    struct fx *f = *state;
    struct res stalled = {.f = f}, quick = {.f = f};
    assert_int_equal(gpuop_kube_request(f->k, GET("/stall"), on_done, &stalled, &stalled.req), 0);
    quick.other = stalled.req;
    assert_int_equal(gpuop_kube_request(f->k, GET("/ok"), on_done, &quick, NULL), 0);
    run_until(f, &stalled.finished, 5000);
    assert_int_equal(quick.rc, 0);
    assert_int_equal(stalled.rc, GPUOP_ECANCELED);
    run_for(f, 20);
    assert_int_equal(stalled.calls, 1);
    assert_int_equal(quick.calls, 1);
    res_free(&stalled);
    res_free(&quick);
}

static void test_close_in_flight(void **state)
{
    struct fx *f = *state;
    struct res a = {.f = f}, b = {.f = f}, c = {.f = f}, d = {.f = f};
    assert_int_equal(gpuop_kube_request(f->k, GET("/stall"), on_done, &a, NULL), 0);
    assert_int_equal(gpuop_kube_stream(f->k, GET("/forever"), on_data, on_done, &b, NULL), 0);
    assert_int_equal(gpuop_kube_stream(f->k, GET("/split"), on_data, on_done, &c, NULL), 0);
    bool got = false;
    while (!got) { /* wait until the forever stream flows */
        uv_run(&f->loop, UV_RUN_ONCE);
        got = b.chunks >= 2;
    }
    assert_int_equal(gpuop_kube_request(f->k, GET("/ok"), on_done, &d, NULL), 0);
    gpuop_kube_close(f->k, on_closed, f);
    /* every done ran, with ECANCELED, before close returned */
    assert_int_equal(a.calls, 1);
    assert_int_equal(b.calls, 1);
    assert_int_equal(c.calls, 1);
    assert_int_equal(d.calls, 1);
    assert_int_equal(a.rc, GPUOP_ECANCELED);
    assert_int_equal(b.rc, GPUOP_ECANCELED);
    assert_int_equal(c.rc, GPUOP_ECANCELED);
    assert_int_equal(d.rc, GPUOP_ECANCELED);
    /* nothing new starts on a closing client */
    struct res e = {.f = f};
    assert_int_equal(gpuop_kube_request(f->k, GET("/ok"), on_done, &e, NULL), GPUOP_ECANCELED);
    assert_false(f->closed);
    run_until(f, &f->closed, 5000);
    assert_int_equal(a.calls + b.calls + c.calls + d.calls + e.calls, 4);
    res_free(&a);
    res_free(&b);
    res_free(&c);
    res_free(&d);
}

static void test_close_from_on_data(void **state)
{
    struct fx *f = *state;
    struct res r = {.f = f, .close_after_chunks = 2}, s = {.f = f};
    assert_int_equal(gpuop_kube_stream(f->k, GET("/forever"), on_data, on_done, &r, NULL), 0);
    assert_int_equal(gpuop_kube_request(f->k, GET("/stall"), on_done, &s, NULL), 0);
    run_until(f, &f->closed, 5000);
    assert_int_equal(r.rc, GPUOP_ECANCELED);
    assert_int_equal(s.rc, GPUOP_ECANCELED);
    assert_int_equal(r.calls, 1);
    assert_int_equal(s.calls, 1);
    assert_int_equal(r.chunks, 2);
    res_free(&r);
    res_free(&s);
}

static void test_refused(void **state)
{
    struct fx *f = *state;
    /* a port nobody listens on: bind one, note it, close it */
    uv_tcp_t t;
    uv_tcp_init(&f->loop, &t);
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", 0, &a);
    assert_int_equal(uv_tcp_bind(&t, (struct sockaddr *)&a, 0), 0);
    struct sockaddr_in got;
    int len = sizeof(got);
    uv_tcp_getsockname(&t, (struct sockaddr *)&got, &len);
    int port = ntohs(got.sin_port);
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(&f->loop, UV_RUN_NOWAIT);

    gpuop_kube_close(f->k, NULL, NULL);
    make_client(f, "x", NULL, port);
    uv_update_time(&f->loop);
    uint64_t t0 = uv_now(&f->loop);
    struct gpuop_err err = {0};
    assert_int_equal(call(f, GPUOP_KUBE_GET, "/ok", NULL, NULL, NULL, &err), GPUOP_ETRANSPORT);
    uv_update_time(&f->loop);
    assert_true(uv_now(&f->loop) - t0 < 2000);
    assert_int_equal(err.http_code, 0);
    assert_true(strlen(err.message) > 0);
}

struct seen {
    int n;
    char verbs[8][16];
    long codes[8];
};

static void observe(void *arg, const char *verb, long code)
{
    struct seen *s = arg;
    if (s->n < 8) {
        snprintf(s->verbs[s->n], sizeof(s->verbs[0]), "%s", verb);
        s->codes[s->n] = code;
    }
    s->n++;
}

static void test_observer(void **state)
{
    struct fx *f = *state;
    struct seen seen = {0};
    gpuop_kube_set_observer(f->k, observe, &seen);
    struct gpuop_err err = {0};
    call(f, GPUOP_KUBE_GET, "/ok", NULL, NULL, NULL, &err);
    call(f, GPUOP_KUBE_DELETE, "/status/404", NULL, NULL, NULL, &err);
    struct res r = {.f = f};
    assert_int_equal(gpuop_kube_stream(f->k, GET("/split"), on_data, on_done, &r, NULL), 0);
    run_until(f, &r.finished, 5000);
    struct res w = {.f = f};
    struct gpuop_kube_opts watch = {.verb = GPUOP_KUBE_WATCH, .path = "/ok"};
    assert_int_equal(gpuop_kube_stream(f->k, &watch, on_data, on_done, &w, NULL), 0);
    run_until(f, &w.finished, 5000);
    /* the verb is the caller's: a path that looks like a watch is not one */
    struct res g = {.f = f};
    assert_int_equal(gpuop_kube_stream(f->k, GET("/ok?watch=1"), on_data, on_done, &g, NULL), 0);
    run_until(f, &g.finished, 5000);
    struct res c = {.f = f};
    assert_int_equal(gpuop_kube_request(f->k, GET("/stall"), on_done, &c, &c.req), 0);
    gpuop_kube_cancel(c.req); /* not observed */
    assert_int_equal(c.rc, GPUOP_ECANCELED);
    assert_int_equal(seen.n, 5);
    assert_string_equal(seen.verbs[0], "GET");
    assert_int_equal(seen.codes[0], 200);
    assert_string_equal(seen.verbs[1], "DELETE");
    assert_int_equal(seen.codes[1], 404);
    assert_string_equal(seen.verbs[2], "GET"); /* streamed, but not a watch: a LIST page */
    assert_int_equal(seen.codes[2], 200);
    assert_string_equal(seen.verbs[3], "WATCH");
    assert_int_equal(seen.codes[3], 200);
    assert_string_equal(seen.verbs[4], "GET");
    res_free(&r);
    res_free(&w);
    res_free(&g);
    res_free(&c);
}

static void on_closed_flag(void *arg)
{
    *(bool *)arg = true;
}

/* A bearer token for a plain http:// server gets one warning in the
 * process, however many clients: the first test, before any other client. */
static void test_plain_http_token_warns_once(void **state)
{
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    fflush(stderr);
    int saved = dup(2);
    FILE *log = tmpfile();
    assert_true(saved >= 0 && log);
    dup2(fileno(log), 2);
    const char *servers[] = {"https://127.0.0.1:1", "http://127.0.0.1:1", "HTTP://127.0.0.1:2"};
    for (int i = 0; i < 3; i++) {
        struct gpuop_kubeconfig cfg = {.server = (char *)servers[i], .token = "t0k3n"};
        struct gpuop_kube *k = NULL;
        struct gpuop_err err = {0};
        assert_int_equal(gpuop_kube_new(&loop, &cfg, &k, &err), 0);
        bool closed = false;
        gpuop_kube_close(k, on_closed_flag, &closed);
        while (!closed)
            uv_run(&loop, UV_RUN_ONCE);
    }
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    int warnings = 0, https = 0;
    char line[1024];
    rewind(log);
    while (fgets(line, sizeof(line), log)) {
        warnings += strstr(line, "plain http://") != NULL;
        https += strstr(line, "https://") != NULL;
        assert_null(strstr(line, "t0k3n")); /* never the token itself */
    }
    fclose(log);
    assert_int_equal(warnings, 1);
    assert_int_equal(https, 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_escape_and_path(void **state)
{
    char *s = gpuop_kube_escape("app.kubernetes.io/name in (dcgm,x)~_-");
    assert_string_equal(s, "app.kubernetes.io%2Fname%20in%20%28dcgm%2Cx%29~_-");
    free(s);
    s = gpuop_kube_escape("nvidia.com/gpu.deploy.driver=true\xc3\xa9");
    assert_string_equal(s, "nvidia.com%2Fgpu.deploy.driver%3Dtrue%C3%A9");
    free(s);
    s = gpuop_kube_escape("");
    assert_string_equal(s, "");
    free(s);

#define PATH_IS(want, params, n, ...)                                                              \
    do {                                                                                           \
        char *p_ = gpuop_kube_path(&(struct gpuop_kube_ref){__VA_ARGS__}, params, n);              \
        assert_non_null(p_);                                                                       \
        assert_string_equal(p_, want);                                                             \
        free(p_);                                                                                  \
    } while (0)
    PATH_IS("/api/v1/nodes", NULL, 0, .group_version = "v1", .resource = "nodes");
    PATH_IS("/api/v1/namespaces/ns/pods/p-1", NULL, 0, .ns = "ns", .resource = "pods",
            .name = "p-1"); /* no group_version: core */
    PATH_IS("/apis/apps/v1/namespaces/gpu-operator/daemonsets/nvidia-dcgm", NULL, 0,
            .group_version = "apps/v1", .ns = "gpu-operator", .resource = "daemonsets",
            .name = "nvidia-dcgm");
    /* a cluster-scoped custom resource's status */
    PATH_IS("/apis/gpuop.io/v1alpha1/gpupolicies/default/status", NULL, 0,
            .group_version = "gpuop.io/v1alpha1", .resource = "gpupolicies", .name = "default",
            .subresource = "status");
    PATH_IS("/api/v1/nodes", NULL, 0, .resource = "nodes", .subresource = "status"); /* no name */
    PATH_IS("/api/v1/nodes/a%2Fb", NULL, 0, .resource = "nodes", .name = "a/b");
    PATH_IS("/api/v1/namespaces/a%20b/pods", NULL, 0, .ns = "a b", .resource = "pods");
    /* query parameters: escaped, in order, NULL values left out */
    struct gpuop_kube_param apply[] = {{.key = "fieldManager", .value = "gpuop"},
                                       {.key = "dryRun", .value = NULL},
                                       {.key = "force", .value = "true"}};
    PATH_IS("/apis/apps/v1/namespaces/gpu/daemonsets/dcgm?fieldManager=gpuop&force=true", apply, 3,
            .group_version = "apps/v1", .ns = "gpu", .resource = "daemonsets", .name = "dcgm");
    struct gpuop_kube_param sel[] = {{.key = "labelSelector", .value = "a in (b,c)"},
                                     {.key = "continue", .value = "x=&y"}};
    PATH_IS("/api/v1/pods?labelSelector=a%20in%20%28b%2Cc%29&continue=x%3D%26y", sel, 2,
            .resource = "pods");
    struct gpuop_kube_param none[] = {{.key = "continue", .value = NULL}};
    PATH_IS("/api/v1/pods", none, 1, .resource = "pods");
#undef PATH_IS
    assert_null(gpuop_kube_path(&(struct gpuop_kube_ref){.resource = ""}, NULL, 0));
    assert_null(gpuop_kube_path(NULL, NULL, 0));
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_http_token_warns_once),
        T(test_get_ok),
        T(test_response_without_managed_fields),
        T(test_methods_and_bodies),
        T(test_status_errors),
        T(test_plain_error),
        T(test_bad_2xx_body),
        T(test_stream_split),
        T(test_stream_error_status),
        T(test_cut_mid_body),
        T(test_timeouts),
        T(test_too_big),
        T(test_token_file_rotation),
        T(test_token_file_unreadable),
        T(test_cancel_in_on_data),
        T(test_abort_from_on_data),
        T(test_request_from_on_data),
        T(test_request_from_done),
        T(test_cancel_other_from_done),
        T(test_close_in_flight),
        T(test_close_from_on_data),
        T(test_refused),
        T(test_observer),
        cmocka_unit_test(test_escape_and_path),
    };
    return cmocka_run_group_tests(tests, process_setup, process_teardown);
}
