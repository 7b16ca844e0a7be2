/*
 * test_kube.c - the curl-on-libuv Kubernetes client against a small
 * fault-injecting HTTP/1.1 server that runs in this process, on the same
 * libuv loop, on 127.0.0.1 with an ephemeral port.
 *
 * The server reads one request per connection, records it, and answers by
 * path: /ok (200 JSON), /status/<code> (a Kubernetes Status), /plain/<code>
 * (text), /split (a chunked body written in odd-sized pieces), /forever (a
 * chunk every few ms until the client goes), /cut (closes mid-body), /stall
 * (never answers), /big (a 5000-byte body). Every test ends by closing the
 * client and the server and checking that uv_loop_close finds no handle
 * left open.
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

#include "gpuop/kube.h"

/* ---- the server ------------------------------------------------------- */

struct srv;

struct conn {
    uv_tcp_t tcp;
    uv_timer_t timer;
    struct srv *s;
    char in[16384];
    size_t in_len;
    bool handled, closing;
    int open;
    char *wire; /* scripted output, sent in pieces */
    size_t wire_len, off;
    int piece;
    int ticks;
    struct conn *prev, *next;
};

struct srv {
    uv_loop_t *loop;
    uv_tcp_t tcp;
    int port;
    struct conn *conns;
    int nreq;
    char method[16], path[256], auth[256], ctype[128], ua[128], accept[128], expect[64];
    char body[4096];
    size_t body_len;
    char payload[8192]; /* what /split sends, decoded */
    size_t payload_len;
};

struct wreq {
    uv_write_t req;
    struct conn *c;
    bool close_after;
    char data[];
};

static void conn_handle_closed(uv_handle_t *h)
{
    struct conn *c = h->data;
    if (--c->open == 0) {
        free(c->wire);
        free(c);
    }
}

static void conn_close(struct conn *c)
{
    if (c->closing)
        return;
    c->closing = true;
    struct srv *s = c->s;
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    uv_close((uv_handle_t *)&c->tcp, conn_handle_closed);
    uv_close((uv_handle_t *)&c->timer, conn_handle_closed);
}

static void on_written(uv_write_t *w, int status)
{
    struct wreq *wr = (struct wreq *)w;
    if ((status < 0 || wr->close_after) && !wr->c->closing)
        conn_close(wr->c);
    free(wr);
}

static void send_bytes(struct conn *c, const char *p, size_t n, bool close_after)
{
    if (c->closing)
        return;
    struct wreq *wr = malloc(sizeof(*wr) + n);
    assert_non_null(wr);
    wr->c = c;
    wr->close_after = close_after;
    memcpy(wr->data, p, n);
    uv_buf_t b = uv_buf_init(wr->data, (unsigned)n);
    if (uv_write(&wr->req, (uv_stream_t *)&c->tcp, &b, 1, on_written) != 0) {
        free(wr);
        conn_close(c);
    }
}

static void respond(struct conn *c, int code, const char *ctype, const char *body)
{
    char head[512];
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %d X\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n",
                     code, ctype, strlen(body));
    send_bytes(c, head, (size_t)n, false);
    send_bytes(c, body, strlen(body), true);
}

/* odd piece sizes: chunk framing and lines get split everywhere */
static const size_t pieces[] = {1, 7, 3, 13, 2, 29, 5, 64, 11};

static void on_piece(uv_timer_t *t)
{
    struct conn *c = t->data;
    size_t n = pieces[c->piece++ % (sizeof(pieces) / sizeof(pieces[0]))];
    if (n > c->wire_len - c->off)
        n = c->wire_len - c->off;
    bool last = c->off + n == c->wire_len;
    send_bytes(c, c->wire + c->off, n, last);
    c->off += n;
    if (!last)
        uv_timer_start(&c->timer, on_piece, 2, 0);
}

static void on_tick(uv_timer_t *t)
{
    struct conn *c = t->data;
    char line[64], chunk[96];
    int n = snprintf(line, sizeof(line), "{\"tick\":%d}\n", c->ticks++);
    int m = snprintf(chunk, sizeof(chunk), "%x\r\n%s\r\n", n, line);
    send_bytes(c, chunk, (size_t)m, false);
}

static const char chunked_head[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                   "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";

static void header_value(const char *head, const char *name, char *out, size_t cap)
{
    out[0] = '\0';
    char pat[64];
    snprintf(pat, sizeof(pat), "\r\n%s:", name);
    const char *p = strcasestr(head, pat);
    if (!p)
        return;
    p += strlen(pat);
    while (*p == ' ')
        p++;
    size_t n = strcspn(p, "\r\n");
    snprintf(out, cap, "%.*s", (int)n, p);
}

static void handle(struct conn *c, const char *head, const char *body, size_t body_len)
{
    struct srv *s = c->s;
    s->nreq++;
    sscanf(head, "%15s %255s", s->method, s->path);
    header_value(head, "Authorization", s->auth, sizeof(s->auth));
    header_value(head, "Content-Type", s->ctype, sizeof(s->ctype));
    header_value(head, "User-Agent", s->ua, sizeof(s->ua));
    header_value(head, "Accept", s->accept, sizeof(s->accept));
    header_value(head, "Expect", s->expect, sizeof(s->expect));
    s->body_len = body_len < sizeof(s->body) ? body_len : sizeof(s->body) - 1;
    memcpy(s->body, body, s->body_len);
    s->body[s->body_len] = '\0';

    const char *p = s->path;
    int code;
    char buf[512];
    if (!strncmp(p, "/ok", 3)) {
        respond(c, 200, "application/json", "{\"kind\":\"Thing\",\"n\":42}");
    } else if (sscanf(p, "/status/%d", &code) == 1) {
        snprintf(buf, sizeof(buf),
                 "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                 "\"message\":\"msg %d\",\"reason\":\"Reason%d\",\"code\":%d,"
                 "\"details\":{\"causes\":[{\"field\":\"spec.f%d\"}]}}",
                 code, code, code, code);
        respond(c, code, "application/json", buf);
    } else if (sscanf(p, "/plain/%d", &code) == 1) {
        respond(c, code, "text/plain", "plain failure\x01\ttext");
    } else if (!strcmp(p, "/split")) {
        /* payload: JSON lines with a multi-byte UTF-8 character */
        s->payload_len = 0;
        for (int i = 0; i < 40; i++)
            s->payload_len +=
                (size_t)snprintf(s->payload + s->payload_len, sizeof(s->payload) - s->payload_len,
                                 "{\"type\":\"ADDED\",\"n\":%d,\"s\":\"\xc3\xa9\"}\n", i);
        size_t cap = s->payload_len * 2 + 256;
        c->wire = malloc(cap);
        assert_non_null(c->wire);
        size_t w = (size_t)snprintf(c->wire, cap, "%s", chunked_head);
        /* chunk sizes unrelated to line boundaries */
        for (size_t off = 0; off < s->payload_len;) {
            size_t n = s->payload_len - off < 37 ? s->payload_len - off : 37;
            w += (size_t)snprintf(c->wire + w, cap - w, "%zx\r\n", n);
            memcpy(c->wire + w, s->payload + off, n);
            w += n;
            w += (size_t)snprintf(c->wire + w, cap - w, "\r\n");
            off += n;
        }
        w += (size_t)snprintf(c->wire + w, cap - w, "0\r\n\r\n");
        c->wire_len = w;
        uv_timer_start(&c->timer, on_piece, 0, 0);
    } else if (!strcmp(p, "/forever")) {
        send_bytes(c, chunked_head, strlen(chunked_head), false);
        uv_timer_start(&c->timer, on_tick, 0, 5);
    } else if (!strcmp(p, "/cut")) {
        const char *h = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                        "Content-Length: 1000\r\n\r\n{\"partial\":";
        send_bytes(c, h, strlen(h), true);
    } else if (!strcmp(p, "/stall")) {
        /* say nothing */
    } else if (!strcmp(p, "/big")) {
        char *big = malloc(5001);
        assert_non_null(big);
        memset(big, ' ', 5000);
        big[0] = '[';
        big[4999] = ']';
        big[5000] = '\0';
        respond(c, 200, "application/json", big);
        free(big);
    } else {
        respond(c, 404, "text/plain", "no route");
    }
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    struct conn *c = h->data;
    b->base = c->in + c->in_len;
    b->len = sizeof(c->in) - 1 - c->in_len;
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *b)
{
    struct conn *c = st->data;
    if (nread < 0) {
        conn_close(c);
        return;
    }
    if (c->handled)
        return;
    c->in_len += (size_t)nread;
    c->in[c->in_len] = '\0';
    char *end = strstr(c->in, "\r\n\r\n");
    if (!end) {
        assert_true(c->in_len < sizeof(c->in) - 1);
        return;
    }
    *end = '\0';
    char cl[32];
    header_value(c->in, "Content-Length", cl, sizeof(cl));
    size_t want = (size_t)atol(cl);
    size_t have = c->in_len - (size_t)(end + 4 - c->in);
    if (have < want) {
        *end = '\r';
        return;
    }
    c->handled = true;
    handle(c, c->in, end + 4, want);
}

static void on_connection(uv_stream_t *server, int status)
{
    struct srv *s = server->data;
    assert_int_equal(status, 0);
    struct conn *c = calloc(1, sizeof(*c));
    assert_non_null(c);
    c->s = s;
    uv_tcp_init(s->loop, &c->tcp);
    uv_timer_init(s->loop, &c->timer);
    c->tcp.data = c->timer.data = c;
    c->open = 2;
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    assert_int_equal(uv_accept(server, (uv_stream_t *)&c->tcp), 0);
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

static void srv_start(struct srv *s, uv_loop_t *loop)
{
    memset(s, 0, sizeof(*s));
    s->loop = loop;
    uv_tcp_init(loop, &s->tcp);
    s->tcp.data = s;
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", 0, &a);
    assert_int_equal(uv_tcp_bind(&s->tcp, (struct sockaddr *)&a, 0), 0);
    assert_int_equal(uv_listen((uv_stream_t *)&s->tcp, 16, on_connection), 0);
    struct sockaddr_in got;
    int len = sizeof(got);
    uv_tcp_getsockname(&s->tcp, (struct sockaddr *)&got, &len);
    s->port = ntohs(got.sin_port);
    assert_true(s->port > 0);
}

static void srv_stop(struct srv *s)
{
    while (s->conns)
        conn_close(s->conns);
    uv_close((uv_handle_t *)&s->tcp, NULL);
}

/* ---- the fixture ------------------------------------------------------ */

struct fx {
    uv_loop_t loop;
    struct srv srv;
    struct gpuop_kube *k;
    uv_timer_t watchdog;
    bool expired;
    bool closed; /* the client's close callback ran */
    char tokfile[64];
};

static void on_watchdog(uv_timer_t *t)
{
    struct fx *f = t->data;
    f->expired = true;
}

/* Runs the loop until *flag or ms elapse; fails the test on expiry. */
static void run_until(struct fx *f, const bool *flag, uint64_t ms)
{
    f->expired = false;
    uv_timer_start(&f->watchdog, on_watchdog, ms, 0);
    while (!*flag && !f->expired)
        uv_run(&f->loop, UV_RUN_ONCE);
    uv_timer_stop(&f->watchdog);
    if (!*flag)
        fail_msg("timed out waiting");
}

/* Runs the loop for about ms. */
static void run_for(struct fx *f, uint64_t ms)
{
    bool never = false;
    f->expired = false;
    uv_timer_start(&f->watchdog, on_watchdog, ms, 0);
    while (!never && !f->expired)
        uv_run(&f->loop, UV_RUN_ONCE);
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
    uv_timer_init(&f->loop, &f->watchdog);
    f->watchdog.data = f;
    srv_start(&f->srv, &f->loop);
    make_client(f, "t0k3n", NULL, f->srv.port);
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
    srv_stop(&f->srv);
    uv_close((uv_handle_t *)&f->watchdog, NULL);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&f->loop), 0); /* no handle left behind */
    if (f->tokfile[0])
        unlink(f->tokfile);
    free(f);
    return 0;
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
        assert_int_equal(gpuop_kube_request(r->f->k, "GET", r->chain_path, NULL, NULL, 0, 0,
                                            on_done, r->chain, &r->chain->req),
                         0);
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
        assert_int_equal(gpuop_kube_request(r->f->k, "GET", r->chain_path, NULL, NULL, 0, 0,
                                            on_done, r->chain, &r->chain->req),
                         0);
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
    assert_int_equal(gpuop_kube_call(f->k, "GET", "/ok?limit=5", NULL, NULL, &body, &err), 0);
    assert_non_null(body);
    assert_int_equal(json_integer_value(json_object_get(body, "n")), 42);
    assert_int_equal(err.http_code, 200);
    json_decref(body);
    assert_string_equal(f->srv.method, "GET");
    assert_string_equal(f->srv.path, "/ok?limit=5");
    assert_string_equal(f->srv.auth, "Bearer t0k3n");
    assert_string_equal(f->srv.accept, "application/json");
    assert_string_equal(f->srv.ua, "gpuop/" GPUOP_VERSION);
    assert_string_equal(f->srv.ctype, "");
    assert_int_equal(f->srv.nreq, 1);
}

static void test_methods_and_bodies(void **state)
{
    struct fx *f = *state;
    struct gpuop_err err = {0};
    const char *doc = "{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\"}";
    assert_int_equal(gpuop_kube_call(f->k, "PATCH", "/ok/x?fieldManager=gpuop&force=true",
                                     GPUOP_CT_APPLY, doc, NULL, &err),
                     0);
    assert_string_equal(f->srv.method, "PATCH");
    assert_string_equal(f->srv.ctype, GPUOP_CT_APPLY);
    assert_string_equal(f->srv.body, doc);
    assert_string_equal(f->srv.expect, "");

    assert_int_equal(gpuop_kube_call(f->k, "POST", "/ok", NULL, "{}", NULL, &err), 0);
    assert_string_equal(f->srv.method, "POST");
    assert_string_equal(f->srv.ctype, GPUOP_CT_JSON);
    assert_string_equal(f->srv.body, "{}");

    /* a 3000-byte body arrives whole */
    char *large = malloc(3001);
    assert_non_null(large);
    memset(large, 'a', 3000);
    large[0] = '"';
    large[2999] = '"';
    large[3000] = '\0';
    assert_int_equal(gpuop_kube_call(f->k, "PUT", "/ok/lease", NULL, large, NULL, &err), 0);
    assert_string_equal(f->srv.method, "PUT");
    assert_int_equal(f->srv.body_len, 3000);
    assert_string_equal(f->srv.expect, "");
    free(large);

    assert_int_equal(gpuop_kube_call(f->k, "DELETE", "/ok/y", NULL, NULL, NULL, &err), 0);
    assert_string_equal(f->srv.method, "DELETE");
    assert_int_equal(f->srv.body_len, 0);

    /* bad arguments never reach the network */
    int n = f->srv.nreq;
    assert_int_equal(gpuop_kube_call(f->k, "GET", "no-slash", NULL, NULL, NULL, &err),
                     GPUOP_EINVAL);
    assert_int_equal(gpuop_kube_call(f->k, "GET", "/a b", NULL, NULL, NULL, &err), GPUOP_EINVAL);
    assert_int_equal(f->srv.nreq, n);
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
        int rc = gpuop_kube_call(f->k, "GET", path, NULL, NULL, &body, &err);
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
    assert_int_equal(gpuop_kube_call(f->k, "GET", "/plain/502", NULL, NULL, &body, &err),
                     GPUOP_EHTTP);
    assert_null(body);
    assert_int_equal(err.http_code, 502);
    assert_string_equal(err.message, "HTTP 502: plain failure  text");
    assert_string_equal(err.reason, "");
}

static void test_stream_split(void **state)
{
    struct fx *f = *state;
    struct res r = {.f = f};
    assert_int_equal(gpuop_kube_stream(f->k, "/split", 0, on_data, on_done, &r, &r.req), 0);
    assert_non_null(r.req);
    run_until(f, &r.finished, 10000);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.calls, 1);
    assert_null(r.body);
    assert_true(f->srv.payload_len > 1000);
    assert_int_equal(r.data_len, f->srv.payload_len);
    assert_memory_equal(r.data, f->srv.payload, r.data_len);
    assert_true(r.chunks > 5); /* delivered as it arrived, not at the end */
    run_for(f, 20);
    assert_int_equal(r.calls, 1);
    res_free(&r);
}

static void test_stream_error_status(void **state)
{
    struct fx *f = *state;
    struct res r = {.f = f};
    assert_int_equal(gpuop_kube_stream(f->k, "/status/410", 0, on_data, on_done, &r, NULL), 0);
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
    assert_int_equal(gpuop_kube_call(f->k, "GET", "/cut", NULL, NULL, &body, &err),
                     GPUOP_ETRANSPORT);
    assert_null(body);
    assert_true(strlen(err.message) > 0);
}

static void test_timeouts(void **state)
{
    struct fx *f = *state;
    struct res r = {.f = f}, s = {.f = f};
    uint64_t t0 = uv_now(&f->loop);
    assert_int_equal(
        gpuop_kube_request(f->k, "GET", "/stall", NULL, NULL, 0, 300, on_done, &r, NULL), 0);
    assert_int_equal(gpuop_kube_stream(f->k, "/stall", 400, on_data, on_done, &s, NULL), 0);
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
    assert_int_equal(gpuop_kube_call(f->k, "GET", "/big", NULL, NULL, &body, &err), GPUOP_ETOOBIG);
    assert_null(body);
    gpuop_kube_set_max_body(f->k, 5000); /* exactly at the limit is fine */
    assert_int_equal(gpuop_kube_call(f->k, "GET", "/big", NULL, NULL, &body, &err), 0);
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
    make_client(f, NULL, f->tokfile, f->srv.port);
    struct gpuop_err err = {0};
    assert_int_equal(gpuop_kube_call(f->k, "GET", "/ok", NULL, NULL, NULL, &err), 0);
    assert_string_equal(f->srv.auth, "Bearer one");
    write_token(f->tokfile, "two\n");
    assert_int_equal(gpuop_kube_call(f->k, "GET", "/ok", NULL, NULL, NULL, &err), 0);
    assert_string_equal(f->srv.auth, "Bearer one"); /* younger than a minute */
    gpuop_kube_set_token_ttl(f->k, 0);
    assert_int_equal(gpuop_kube_call(f->k, "GET", "/ok", NULL, NULL, NULL, &err), 0);
    assert_string_equal(f->srv.auth, "Bearer two");
    /* a file that vanishes for a moment: the last good token stays */
    unlink(f->tokfile);
    assert_int_equal(gpuop_kube_call(f->k, "GET", "/ok", NULL, NULL, NULL, &err), 0);
    assert_string_equal(f->srv.auth, "Bearer two");
    f->tokfile[0] = '\0';
}

static void test_token_file_unreadable(void **state)
{
    struct fx *f = *state;
    gpuop_kube_close(f->k, NULL, NULL);
    make_client(f, NULL, "/nonexistent/gpuop/token", f->srv.port);
    struct gpuop_err err = {0};
    int n = f->srv.nreq;
    assert_int_equal(gpuop_kube_call(f->k, "GET", "/ok", NULL, NULL, NULL, &err), GPUOP_ECONFIG);
    assert_non_null(strstr(err.message, "token file"));
    assert_int_equal(f->srv.nreq, n);
}

static void test_cancel_in_on_data(void **state)
{
    struct fx *f = *state;
    struct res r = {.f = f, .cancel_after_chunks = 3};
    assert_int_equal(gpuop_kube_stream(f->k, "/forever", 0, on_data, on_done, &r, &r.req), 0);
    run_until(f, &r.finished, 5000);
    assert_true(r.done_during_cancel);
    assert_int_equal(r.rc, GPUOP_ECANCELED);
    assert_int_equal(r.err.rc, GPUOP_ECANCELED);
    int chunks = r.chunks;
    assert_int_equal(chunks, 3);
    /* the client keeps working, and the stream stays silent */
    struct gpuop_err err = {0};
    assert_int_equal(gpuop_kube_call(f->k, "GET", "/ok", NULL, NULL, NULL, &err), 0);
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
    assert_int_equal(gpuop_kube_stream(f->k, "/forever", 0, on_data, on_done, &r, NULL), 0);
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
    assert_int_equal(gpuop_kube_stream(f->k, "/forever", 0, on_data, on_done, &r, &r.req), 0);
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
    assert_int_equal(
        gpuop_kube_request(f->k, "GET", "/ok", NULL, NULL, 0, 0, on_done, &first, &first.req), 0);
    run_until(f, &second.finished, 5000);
    assert_int_equal(first.rc, 0);
    assert_int_equal(second.rc, GPUOP_ENOTFOUND);
    assert_int_equal(first.calls, 1);
    assert_int_equal(second.calls, 1);
    assert_string_equal(f->srv.path, "/status/404");
    res_free(&first);
    res_free(&second);
}

static void test_cancel_other_from_done(void **state)
{
    struct fx *f = *state;
    struct res stalled = {.f = f}, quick = {.f = f};
    assert_int_equal(gpuop_kube_request(f->k, "GET", "/stall", NULL, NULL, 0, 0, on_done, &stalled,
                                        &stalled.req),
                     0);
    quick.other = stalled.req;
    assert_int_equal(
        gpuop_kube_request(f->k, "GET", "/ok", NULL, NULL, 0, 0, on_done, &quick, NULL), 0);
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
    assert_int_equal(gpuop_kube_request(f->k, "GET", "/stall", NULL, NULL, 0, 0, on_done, &a, NULL),
                     0);
    assert_int_equal(gpuop_kube_stream(f->k, "/forever", 0, on_data, on_done, &b, NULL), 0);
    assert_int_equal(gpuop_kube_stream(f->k, "/split", 0, on_data, on_done, &c, NULL), 0);
    bool got = false;
    while (!got) { /* wait until the forever stream flows */
        uv_run(&f->loop, UV_RUN_ONCE);
        got = b.chunks >= 2;
    }
    assert_int_equal(gpuop_kube_request(f->k, "GET", "/ok", NULL, NULL, 0, 0, on_done, &d, NULL),
                     0);
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
    assert_int_equal(gpuop_kube_request(f->k, "GET", "/ok", NULL, NULL, 0, 0, on_done, &e, NULL),
                     GPUOP_ECANCELED);
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
    assert_int_equal(gpuop_kube_stream(f->k, "/forever", 0, on_data, on_done, &r, NULL), 0);
    assert_int_equal(gpuop_kube_request(f->k, "GET", "/stall", NULL, NULL, 0, 0, on_done, &s, NULL),
                     0);
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
    assert_int_equal(gpuop_kube_call(f->k, "GET", "/ok", NULL, NULL, NULL, &err), GPUOP_ETRANSPORT);
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
    gpuop_kube_call(f->k, "GET", "/ok", NULL, NULL, NULL, &err);
    gpuop_kube_call(f->k, "DELETE", "/status/404", NULL, NULL, NULL, &err);
    struct res r = {.f = f};
    assert_int_equal(gpuop_kube_stream(f->k, "/split", 0, on_data, on_done, &r, NULL), 0);
    run_until(f, &r.finished, 5000);
    struct res c = {.f = f};
    assert_int_equal(
        gpuop_kube_request(f->k, "GET", "/stall", NULL, NULL, 0, 0, on_done, &c, &c.req), 0);
    gpuop_kube_cancel(c.req); /* not observed */
    assert_int_equal(c.rc, GPUOP_ECANCELED);
    assert_int_equal(seen.n, 3);
    assert_string_equal(seen.verbs[0], "GET");
    assert_int_equal(seen.codes[0], 200);
    assert_string_equal(seen.verbs[1], "DELETE");
    assert_int_equal(seen.codes[1], 404);
    assert_string_equal(seen.verbs[2], "WATCH");
    assert_int_equal(seen.codes[2], 200);
    res_free(&r);
    res_free(&c);
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

    s = gpuop_kube_path("v1", NULL, "nodes", NULL, NULL);
    assert_string_equal(s, "/api/v1/nodes");
    free(s);
    s = gpuop_kube_path("", "ns", "pods", "p-1", NULL);
    assert_string_equal(s, "/api/v1/namespaces/ns/pods/p-1");
    free(s);
    s = gpuop_kube_path("apps/v1", "gpu-operator", "daemonsets", "nvidia-dcgm", NULL);
    assert_string_equal(s, "/apis/apps/v1/namespaces/gpu-operator/daemonsets/nvidia-dcgm");
    free(s);
    s = gpuop_kube_path("gpuop.io/v1alpha1", NULL, "gpupolicies", "default", "status");
    assert_string_equal(s, "/apis/gpuop.io/v1alpha1/gpupolicies/default/status");
    free(s);
    s = gpuop_kube_path("v1", NULL, "nodes", NULL, "status"); /* no name: ignored */
    assert_string_equal(s, "/api/v1/nodes");
    free(s);
    s = gpuop_kube_path("v1", NULL, "nodes", "a/b", NULL);
    assert_string_equal(s, "/api/v1/nodes/a%2Fb");
    free(s);
    assert_null(gpuop_kube_path("v1", NULL, "", NULL, NULL));
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_get_ok),
        T(test_methods_and_bodies),
        T(test_status_errors),
        T(test_plain_error),
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
    return cmocka_run_group_tests(tests, NULL, NULL);
}
