/*
 * test_httpd.c - the small HTTP server: its request parser (pure), and the
 * server on a real socket with clients on the same libuv loop: answers,
 * HEAD, 405/400/431, a client that sends nothing is dropped after the read
 * timeout while other clients are served meanwhile, the connection caps
 * (a new client takes the place of the oldest slow one), a bounded storm
 * of slow clients from other addresses while probes keep being answered,
 * and close with connections open. Every test ends with no handle open.
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

#include "waiter.h"
#include "gpuop/httpd.h"

/* ---- parser ---- */

static int parse(const char *s, struct gpuop_http_request *r)
{
    return gpuop_httpd_parse(s, strlen(s), GPUOP_HTTPD_MAX_REQUEST, r);
}

static void test_parse_valid(void **state)
{
    struct gpuop_http_request r;
    const char *req = "GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\nBODY";
    assert_int_equal(parse(req, &r), (int)(strstr(req, "BODY") - req));
    assert_string_equal(r.method, "GET");
    assert_string_equal(r.path, "/metrics");
    assert_string_equal(r.query, "x=1");
    assert_int_equal(r.minor, 1);
    assert_int_equal(r.nheaders, 2);
    /* bare LF line ends, HTTP/1.0, no header at all */
    assert_int_equal(parse("HEAD /healthz HTTP/1.0\n\n", &r), 24);
    assert_string_equal(r.method, "HEAD");
    assert_int_equal(r.minor, 0);
    assert_int_equal(r.nheaders, 0);
}

static void test_parse_incomplete(void **state)
{
    struct gpuop_http_request r;
    const char *full = "GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n";
    /* every proper prefix needs more bytes, never an error */
    for (size_t n = 0; n < strlen(full); n++)
        assert_int_equal(gpuop_httpd_parse(full, n, GPUOP_HTTPD_MAX_REQUEST, &r), 0);
    assert_int_equal(parse(full, &r), (int)strlen(full));
}

static void test_parse_malformed(void **state)
{
    struct gpuop_http_request r;
    assert_int_equal(parse("get / HTTP/1.1\r\n\r\n", &r), GPUOP_EPARSE);
    assert_int_equal(parse("\x16\x03\x01", &r), GPUOP_EPARSE); /* TLS hello: early */
    assert_int_equal(parse("GET  / HTTP/1.1\r\n\r\n", &r), GPUOP_EPARSE);
    assert_int_equal(parse("GET metrics HTTP/1.1\r\n\r\n", &r), GPUOP_EPARSE);
    assert_int_equal(parse("GET / HTTP/2.0\r\n\r\n", &r), GPUOP_EPARSE);
    assert_int_equal(parse("GET /\r\n\r\n", &r), GPUOP_EPARSE);
    assert_int_equal(parse("GET / HTTP/1.1 \r\n\r\n", &r), GPUOP_EPARSE);
    assert_int_equal(parse("GET / HTTP/1.1\r\nNoColon\r\n\r\n", &r), GPUOP_EPARSE);
    assert_int_equal(parse("GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n", &r), GPUOP_EPARSE);
    assert_int_equal(parse("GET / HTTP/1.1\r\nA: b\x01\r\n\r\n", &r), GPUOP_EPARSE);
    assert_int_equal(parse("GET / HTTP/1.1\r\n: empty\r\n\r\n", &r), GPUOP_EPARSE);
    assert_int_equal(parse("VERYLONGMETHOD / HTTP/1.1\r\n\r\n", &r), GPUOP_EPARSE);
    const char nul[] = "GET /a\0b HTTP/1.1\r\n\r\n";
    assert_int_equal(gpuop_httpd_parse(nul, sizeof(nul) - 1, 8192, &r), GPUOP_EPARSE);
}

static void test_parse_limits(void **state)
{
    struct gpuop_http_request r;
    char *big = malloc(20000);
    assert_non_null(big);
    /* a header that never ends within the limit */
    int n = snprintf(big, 20000, "GET / HTTP/1.1\r\nX: ");
    memset(big + n, 'a', 20000 - (size_t)n);
    assert_int_equal(gpuop_httpd_parse(big, 20000, 8192, &r), GPUOP_ETOOBIG);
    assert_int_equal(gpuop_httpd_parse(big, 8191, 8192, &r), 0);
    /* a request line that never ends */
    memcpy(big, "GET /", 5);
    memset(big + 5, 'a', 20000 - 5);
    assert_int_equal(gpuop_httpd_parse(big, 8192, 8192, &r), GPUOP_ETOOBIG);
    /* a path over GPUOP_HTTPD_MAX_PATH */
    n = snprintf(big, 20000, "GET /%0*d HTTP/1.1\r\n\r\n", GPUOP_HTTPD_MAX_PATH, 0);
    assert_int_equal(gpuop_httpd_parse(big, (size_t)n, 8192, &r), GPUOP_ETOOBIG);
    /* too many headers */
    n = snprintf(big, 20000, "GET / HTTP/1.1\r\n");
    for (int i = 0; i <= GPUOP_HTTPD_MAX_HEADERS; i++)
        n += snprintf(big + n, 20000 - (size_t)n, "H%d: v\r\n", i);
    n += snprintf(big + n, 20000 - (size_t)n, "\r\n");
    assert_int_equal(gpuop_httpd_parse(big, (size_t)n, 8192, &r), GPUOP_ETOOBIG);
    free(big);
}

static void test_parse_addr(void **state)
{
    struct sockaddr_storage sa;
    assert_int_equal(gpuop_httpd_parse_addr("127.0.0.1:8080", &sa), 0);
    assert_int_equal(sa.ss_family, AF_INET);
    assert_int_equal(ntohs(((struct sockaddr_in *)&sa)->sin_port), 8080);
    assert_int_equal(gpuop_httpd_parse_addr(":9", &sa), 0);
    assert_int_equal(gpuop_httpd_parse_addr("localhost:0", &sa), 0);
    assert_int_equal(gpuop_httpd_parse_addr("[::1]:8081", &sa), 0);
    assert_int_equal(sa.ss_family, AF_INET6);
    assert_int_equal(gpuop_httpd_parse_addr("::1:8081", &sa), GPUOP_EINVAL);
    assert_int_equal(gpuop_httpd_parse_addr("127.0.0.1", &sa), GPUOP_EINVAL);
    assert_int_equal(gpuop_httpd_parse_addr("127.0.0.1:99999", &sa), GPUOP_EINVAL);
    assert_int_equal(gpuop_httpd_parse_addr("127.0.0.1:80x", &sa), GPUOP_EINVAL);
    assert_int_equal(gpuop_httpd_parse_addr("example:80", &sa), GPUOP_EINVAL);
    assert_int_equal(gpuop_httpd_parse_addr(NULL, &sa), GPUOP_EINVAL);
}

/* ---- server ---- */

struct fx {
    uv_loop_t loop;
    struct waiter wait;
    struct gpuop_httpd *h;
    int port;
    int handled;
    bool closed;
};

struct client {
    struct fx *f;
    uv_tcp_t tcp;
    uv_connect_t conn;
    uv_write_t wr;
    char *out;
    size_t out_len;
    char in[65536];
    size_t in_len;
    bool eof, closed;
    uint64_t eof_ms;
};

static void handler(void *arg, const struct gpuop_http_request *req,
                    struct gpuop_httpd_response *resp)
{
    struct fx *f = arg;
    f->handled++;
    if (strcmp(req->path, "/hello") == 0) {
        resp->body = strdup("hello\n");
        resp->len = 6;
        resp->content_type = "text/x-test";
    } else {
        resp->code = 404;
    }
}

/* Waits: test/unit/support/waiter.h. */
#define WAIT_MS 30000 /* generous: a loaded machine, valgrind */

static void run_until(struct fx *f, const bool *flag, uint64_t ms)
{
    waiter_begin(&f->wait, ms);
    while (!*flag && !f->wait.expired)
        uv_run(&f->loop, UV_RUN_ONCE);
    waiter_end(&f->wait);
    if (!*flag)
        fail_msg("timed out waiting");
}

static void start_server(struct fx *f, int max_conns, uint64_t timeout_ms, size_t max_request)
{
    struct gpuop_httpd_config cfg = {.addr = "127.0.0.1:0",
                                     .name = "test",
                                     .handler = handler,
                                     .arg = f,
                                     .max_conns = max_conns,
                                     .read_timeout_ms = timeout_ms,
                                     .max_request = max_request};
    struct gpuop_err err = {0};
    assert_int_equal(gpuop_httpd_new(&f->loop, &cfg, &f->h, &err), 0);
    f->port = gpuop_httpd_port(f->h);
    assert_true(f->port > 0);
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    waiter_init(&f->wait, &f->loop);
    *state = f;
    return 0;
}

static void on_server_closed(void *arg)
{
    ((struct fx *)arg)->closed = true;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    if (f->h) {
        gpuop_httpd_close(f->h, on_server_closed, f);
        run_until(f, &f->closed, WAIT_MS);
    }
    waiter_close(&f->wait);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    free(f);
    return 0;
}

static void c_alloc(uv_handle_t *h, size_t s, uv_buf_t *b)
{
    struct client *c = h->data;
    *b = uv_buf_init(c->in + c->in_len, (unsigned)(sizeof(c->in) - 1 - c->in_len));
}

static void c_closed(uv_handle_t *h)
{
    ((struct client *)h->data)->closed = true;
}

static void c_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    struct client *c = s->data;
    if (n > 0) {
        c->in_len += (size_t)n;
        c->in[c->in_len] = '\0';
        return;
    }
    if (n < 0 && !c->eof) {
        c->eof = true;
        c->eof_ms = uv_now(&c->f->loop);
        uv_close((uv_handle_t *)&c->tcp, c_closed);
    }
}

static void c_written(uv_write_t *w, int status)
{
}

static void c_connected(uv_connect_t *req, int status)
{
    struct client *c = req->data;
    if (status < 0) {
        c->eof = true;
        uv_close((uv_handle_t *)&c->tcp, c_closed);
        return;
    }
    uv_read_start((uv_stream_t *)&c->tcp, c_alloc, c_read);
    if (c->out_len) {
        uv_buf_t b = uv_buf_init(c->out, (unsigned)c->out_len);
        uv_write(&c->wr, (uv_stream_t *)&c->tcp, &b, 1, c_written);
    }
}

/* Connects from the address src (NULL: the kernel's choice, 127.0.0.1) and
 * sends data (may be NULL: sends nothing); data is copied. */
static struct client *client_from(struct fx *f, const char *src, const char *data, size_t len)
{
    struct client *c = calloc(1, sizeof(*c));
    assert_non_null(c);
    c->f = f;
    if (len) {
        c->out = malloc(len);
        assert_non_null(c->out);
        memcpy(c->out, data, len);
        c->out_len = len;
    }
    uv_tcp_init(&f->loop, &c->tcp);
    c->tcp.data = c;
    c->conn.data = c;
    if (src) {
        struct sockaddr_in me;
        uv_ip4_addr(src, 0, &me);
        assert_int_equal(uv_tcp_bind(&c->tcp, (struct sockaddr *)&me, 0), 0);
    }
    struct sockaddr_in sa;
    uv_ip4_addr("127.0.0.1", f->port, &sa);
    assert_int_equal(uv_tcp_connect(&c->conn, &c->tcp, (struct sockaddr *)&sa, c_connected), 0);
    return c;
}

static struct client *client_new(struct fx *f, const char *data, size_t len)
{
    return client_from(f, NULL, data, len);
}

static void client_free(struct fx *f, struct client *c)
{
    if (!c->eof) {
        c->eof = true;
        uv_close((uv_handle_t *)&c->tcp, c_closed);
    }
    run_until(f, &c->closed, WAIT_MS);
    free(c->out);
    free(c);
}

static struct client *get(struct fx *f, const char *req)
{
    struct client *c = client_new(f, req, strlen(req));
    run_until(f, &c->eof, WAIT_MS);
    return c;
}

static void test_serve_get_head(void **state)
{
    struct fx *f = *state;
    start_server(f, 0, 0, 0);
    struct client *c = get(f, "GET /hello?x HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_non_null(strstr(c->in, "HTTP/1.1 200 OK\r\n"));
    assert_non_null(strstr(c->in, "Content-Type: text/x-test\r\n"));
    assert_non_null(strstr(c->in, "Content-Length: 6\r\n"));
    assert_non_null(strstr(c->in, "Connection: close\r\n"));
    assert_non_null(strstr(c->in, "\r\n\r\nhello\n"));
    client_free(f, c);

    c = get(f, "HEAD /hello HTTP/1.0\r\n\r\n");
    assert_non_null(strstr(c->in, "HTTP/1.1 200 OK\r\n"));
    assert_non_null(strstr(c->in, "Content-Length: 6\r\n"));
    assert_null(strstr(c->in, "hello\n")); /* no body for HEAD */
    client_free(f, c);

    c = get(f, "GET /nope HTTP/1.1\r\n\r\n");
    assert_non_null(strstr(c->in, "HTTP/1.1 404 "));
    client_free(f, c);
    assert_int_equal(f->handled, 3);
}

static void test_serve_errors(void **state)
{
    struct fx *f = *state;
    start_server(f, 0, 0, 1024);
    struct client *c = get(f, "POST /hello HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi");
    assert_non_null(strstr(c->in, "HTTP/1.1 405 "));
    assert_non_null(strstr(c->in, "Allow: GET, HEAD\r\n"));
    client_free(f, c);

    c = get(f, "garbage\r\n\r\n");
    assert_non_null(strstr(c->in, "HTTP/1.1 400 "));
    client_free(f, c);

    /* a huge header: 431 as soon as the limit is passed, connection closed */
    size_t n = 64 * 1024;
    char *big = malloc(n);
    assert_non_null(big);
    int h = snprintf(big, n, "GET /hello HTTP/1.1\r\nX-Big: ");
    memset(big + h, 'a', n - (size_t)h);
    c = client_new(f, big, n);
    free(big);
    run_until(f, &c->eof, WAIT_MS);
    assert_non_null(strstr(c->in, "HTTP/1.1 431 "));
    client_free(f, c);
    assert_int_equal(f->handled, 0); /* none reached the handler */
}

static void wait_ms(struct fx *f, uint64_t ms)
{
    waiter_run_for(&f->wait, ms);
}

/* Runs the loop until the server holds n connections (accepts are
 * asynchronous), or fails after a generous deadline. */
static void wait_conns(struct fx *f, size_t n)
{
    uint64_t until = uv_now(&f->loop) + 10000;
    while (gpuop_httpd_conns(f->h) != n && uv_now(&f->loop) < until)
        wait_ms(f, 5);
    assert_int_equal(gpuop_httpd_conns(f->h), n);
}

/* Long enough that the other client is served before the slow ones are
 * dropped, on a loaded machine too. */
#define SLOW_TIMEOUT_MS 3000

static void test_slow_clients(void **state)
{
    struct fx *f = *state;
    start_server(f, 0, SLOW_TIMEOUT_MS, 0);
    uint64_t t0 = uv_now(&f->loop);
    /* one connects and says nothing; one sends half a request */
    struct client *idle = client_new(f, NULL, 0);
    struct client *half = client_new(f, "GET /hello HTTP/1.1\r\nHo", 23);
    wait_conns(f, 2);
    /* meanwhile another client is served at once */
    struct client *c = get(f, "GET /hello HTTP/1.1\r\n\r\n");
    assert_non_null(strstr(c->in, "200 OK"));
    assert_false(idle->eof);
    client_free(f, c);
    /* the slow ones are dropped after the read timeout, without an answer */
    run_until(f, &idle->eof, WAIT_MS);
    run_until(f, &half->eof, WAIT_MS);
    assert_true(idle->eof_ms - t0 >= SLOW_TIMEOUT_MS - 10);
    assert_int_equal(idle->in_len, 0);
    assert_int_equal(half->in_len, 0);
    assert_int_equal(gpuop_httpd_conns(f->h), 0);
    client_free(f, idle);
    client_free(f, half);
}

static void test_connection_cap(void **state)
{
    struct fx *f = *state;
    start_server(f, 2, 5000, 0);
    /* two idle clients from two addresses fill the table */
    struct client *a = client_from(f, "127.0.0.2", NULL, 0);
    wait_conns(f, 1);
    struct client *b = client_from(f, "127.0.0.3", NULL, 0);
    wait_conns(f, 2);
    /* a third takes the place of the oldest idle one and is served */
    struct client *c = get(f, "GET /hello HTTP/1.1\r\n\r\n");
    assert_non_null(strstr(c->in, "200 OK"));
    client_free(f, c);
    run_until(f, &a->eof, WAIT_MS);
    assert_int_equal(a->in_len, 0); /* dropped without an answer */
    assert_false(b->eof);
    wait_conns(f, 1);
    client_free(f, a);
    client_free(f, b);
}

/* One client address may hold at most max_conns_per_peer connections: its
 * new connection evicts its own oldest unanswered one, not another's. */
static void test_per_peer_cap(void **state)
{
    struct fx *f = *state;
    enum { IDLE = 100 }; /* more than GPUOP_HTTPD_MAX_CONNS */
    start_server(f, 0, 30000, 0);
    struct client *other = client_from(f, "127.0.0.3", "GET /he", 7);
    wait_conns(f, 1);
    struct client *idle[IDLE];
    for (int i = 0; i < IDLE; i++)
        idle[i] = client_from(f, "127.0.0.2", "GET /hel", 8);
    /* all but the newest GPUOP_HTTPD_MAX_CONNS_PER_PEER are evicted */
    int dropped = 0;
    uint64_t until = uv_now(&f->loop) + 20000;
    while (dropped < IDLE - GPUOP_HTTPD_MAX_CONNS_PER_PEER && uv_now(&f->loop) < until) {
        wait_ms(f, 5);
        dropped = 0;
        for (int i = 0; i < IDLE; i++)
            dropped += idle[i]->eof;
    }
    assert_int_equal(dropped, IDLE - GPUOP_HTTPD_MAX_CONNS_PER_PEER);
    wait_conns(f, 1 + GPUOP_HTTPD_MAX_CONNS_PER_PEER);
    for (int i = 0; i < IDLE; i++)
        assert_int_equal(idle[i]->in_len, 0); /* dropped without an answer */
    /* from the same address as the slow ones, a probe is still served */
    struct client *probe = client_from(f, "127.0.0.2", "GET /hello HTTP/1.1\r\n\r\n", 23);
    run_until(f, &probe->eof, WAIT_MS);
    assert_non_null(strstr(probe->in, "200 OK"));
    client_free(f, probe);
    /* and from another address */
    struct client *c = get(f, "GET /hello HTTP/1.1\r\n\r\n");
    assert_non_null(strstr(c->in, "200 OK"));
    client_free(f, c);
    assert_false(other->eof); /* never the victim of 127.0.0.2's excess */
    for (int i = 0; i < IDLE; i++)
        client_free(f, idle[i]);
    client_free(f, other);
}

/* ---- a storm of slow clients ---- */

/* Bounded in clients, connects and time, so it stops by itself: */
#define STORM_CLIENTS      200  /* at once, from 127.0.0.2 and 127.0.0.3 */
#define STORM_MAX_CONNECTS 1000 /* a dropped client reconnects until these are used */
#define STORM_MS           3000
#define TRICKLE_MS         500 /* one header byte per client per tick */
#define PROBE_EVERY_MS     100
#define MAX_PROBES         (STORM_MS / PROBE_EVERY_MS + 8)

struct storm;

struct slow {
    struct storm *s;
    int idx;
    uv_tcp_t tcp;
    uv_connect_t conn;
    uv_write_t wr;
    bool connected, writing, closed;
    size_t sent;
    char rbuf[512];
};

struct storm {
    struct fx *f;
    uv_timer_t tick, probe_timer, end;
    bool over;
    int connects, closed_tick;
    struct slow slow[STORM_CLIENTS];
    struct client *probes[MAX_PROBES];
    int nprobes;
};

static const char TRICKLE[] = "GET /hello HTTP/1.1\r\nX-Slow: ";

static void slow_connect(struct slow *c);

static void slow_alloc(uv_handle_t *h, size_t n, uv_buf_t *b)
{
    struct slow *c = h->data;
    *b = uv_buf_init(c->rbuf, sizeof(c->rbuf));
}

static void slow_closed(uv_handle_t *h)
{
    struct slow *c = h->data;
    c->connected = false;
    if (!c->s->over && c->s->connects < STORM_MAX_CONNECTS)
        slow_connect(c);
    else
        c->closed = true;
}

static void slow_drop(struct slow *c)
{
    if (!uv_is_closing((uv_handle_t *)&c->tcp))
        uv_close((uv_handle_t *)&c->tcp, slow_closed);
}

static void slow_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    if (n < 0)
        slow_drop(s->data); /* evicted or timed out: come back */
}

static void slow_connected(uv_connect_t *req, int status)
{
    struct slow *c = req->data;
    if (status < 0 || c->s->over) {
        slow_drop(c);
        return;
    }
    c->connected = true;
    uv_read_start((uv_stream_t *)&c->tcp, slow_alloc, slow_read);
}

static void slow_connect(struct slow *c)
{
    struct storm *s = c->s;
    s->connects++;
    c->closed = c->connected = c->writing = false;
    c->sent = 0;
    uv_tcp_init(&s->f->loop, &c->tcp);
    c->tcp.data = c->conn.data = c->wr.data = c;
    struct sockaddr_in me, sa;
    uv_ip4_addr(c->idx % 2 ? "127.0.0.3" : "127.0.0.2", 0, &me);
    uv_ip4_addr("127.0.0.1", s->f->port, &sa);
    if (uv_tcp_bind(&c->tcp, (struct sockaddr *)&me, 0) < 0 ||
        uv_tcp_connect(&c->conn, &c->tcp, (struct sockaddr *)&sa, slow_connected) < 0) {
        s->connects = STORM_MAX_CONNECTS; /* out of ports: no more */
        slow_drop(c);
    }
}

static void slow_written(uv_write_t *w, int status)
{
    struct slow *c = w->data;
    c->writing = false;
}

static void on_tick(uv_timer_t *t)
{
    struct storm *s = t->data;
    static const char a = 'a';
    for (int i = 0; i < STORM_CLIENTS; i++) {
        struct slow *c = &s->slow[i];
        if (!c->connected || c->writing || uv_is_closing((uv_handle_t *)&c->tcp))
            continue;
        const char *p = c->sent < sizeof(TRICKLE) - 1 ? TRICKLE + c->sent : &a;
        uv_buf_t b = uv_buf_init((char *)p, 1);
        if (uv_write(&c->wr, (uv_stream_t *)&c->tcp, &b, 1, slow_written) == 0) {
            c->writing = true;
            c->sent++;
        }
    }
}

static void on_probe(uv_timer_t *t)
{
    struct storm *s = t->data;
    if (s->nprobes < MAX_PROBES)
        s->probes[s->nprobes++] = client_new(s->f, "GET /hello HTTP/1.1\r\n\r\n", 23);
}

static void on_storm_end(uv_timer_t *t)
{
    struct storm *s = t->data;
    s->over = true;
    uv_timer_stop(&s->tick);
    uv_timer_stop(&s->probe_timer);
    for (int i = 0; i < STORM_CLIENTS; i++)
        if (!s->slow[i].closed)
            slow_drop(&s->slow[i]);
}

static bool storm_settled(struct storm *s)
{
    if (!s->over)
        return false;
    for (int i = 0; i < STORM_CLIENTS; i++)
        if (!s->slow[i].closed)
            return false;
    for (int i = 0; i < s->nprobes; i++)
        if (!s->probes[i]->eof)
            return false;
    return true;
}

static void test_slow_storm(void **state)
{
    struct fx *f = *state;
    start_server(f, 0, 0, 0);
    struct storm *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    s->f = f;
    uv_timer_init(&f->loop, &s->tick);
    uv_timer_init(&f->loop, &s->probe_timer);
    uv_timer_init(&f->loop, &s->end);
    s->tick.data = s->probe_timer.data = s->end.data = s;

    /* the warnings go to stderr: count them there */
    fflush(stderr);
    int saved = dup(2);
    FILE *log = tmpfile();
    assert_true(saved >= 0 && log);
    dup2(fileno(log), 2);

    for (int i = 0; i < STORM_CLIENTS; i++) {
        s->slow[i].s = s;
        s->slow[i].idx = i;
        slow_connect(&s->slow[i]);
    }
    uv_timer_start(&s->tick, on_tick, TRICKLE_MS, TRICKLE_MS);
    uv_timer_start(&s->probe_timer, on_probe, PROBE_EVERY_MS, PROBE_EVERY_MS);
    uv_timer_start(&s->end, on_storm_end, STORM_MS, 0);
    /* the storm ends by itself; wait for every client to be done, however
     * slowly a loaded machine runs it */
    waiter_begin(&f->wait, STORM_MS + 60000);
    while (!storm_settled(s) && !f->wait.expired)
        uv_run(&f->loop, UV_RUN_ONCE);
    waiter_end(&f->wait);

    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    assert_true(storm_settled(s));

    int ok = 0;
    for (int i = 0; i < s->nprobes; i++) {
        ok += strstr(s->probes[i]->in, "200 OK") != NULL;
        client_free(f, s->probes[i]);
    }
    int lines = 0;
    char line[512];
    rewind(log);
    while (fgets(line, sizeof(line), log))
        lines += strstr(line, "evicted") != NULL || strstr(line, "refus") != NULL;
    fclose(log);
    print_message("storm: %d connects, %d of %d probes answered, %d warning line(s)\n", s->connects,
                  ok, s->nprobes, lines);
    uv_close((uv_handle_t *)&s->tick, NULL);
    uv_close((uv_handle_t *)&s->probe_timer, NULL);
    uv_close((uv_handle_t *)&s->end, NULL);
    uv_run(&f->loop, UV_RUN_NOWAIT);
    /* every probe is answered, however many slow clients there are */
    assert_true(s->nprobes >= 2);
    assert_int_equal(ok, s->nprobes);
    /* the evictions happened (the storm outnumbers the table), and were
     * logged once per interval, not once each */
    assert_true(s->connects > STORM_CLIENTS);
    assert_true(lines >= 1);
    assert_true(lines <= 1 + (STORM_MS + 60000) / GPUOP_HTTPD_WARN_INTERVAL_MS);
    free(s);
}

static void test_close_with_open_connections(void **state)
{
    struct fx *f = *state;
    start_server(f, 0, 5000, 0);
    struct client *a = client_new(f, NULL, 0), *b = client_new(f, "GET /he", 7);
    wait_conns(f, 2);
    gpuop_httpd_close(f->h, on_server_closed, f);
    f->h = NULL;
    run_until(f, &f->closed, WAIT_MS);
    run_until(f, &a->eof, WAIT_MS);
    run_until(f, &b->eof, WAIT_MS);
    client_free(f, a);
    client_free(f, b);
}

static void test_bind_error(void **state)
{
    struct fx *f = *state;
    start_server(f, 0, 0, 0);
    char addr[32];
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", f->port);
    struct gpuop_httpd_config cfg = {.addr = addr, .handler = handler, .arg = f};
    struct gpuop_httpd *h2 = NULL;
    struct gpuop_err err = {0};
    assert_int_equal(gpuop_httpd_new(&f->loop, &cfg, &h2, &err), GPUOP_EIO);
    assert_null(h2);
    assert_non_null(strstr(err.message, "cannot listen"));
    cfg.addr = "nonsense";
    assert_int_equal(gpuop_httpd_new(&f->loop, &cfg, &h2, &err), GPUOP_EINVAL);
    uv_run(&f->loop, UV_RUN_NOWAIT);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_valid),
        cmocka_unit_test(test_parse_incomplete),
        cmocka_unit_test(test_parse_malformed),
        cmocka_unit_test(test_parse_limits),
        cmocka_unit_test(test_parse_addr),
        T(test_serve_get_head),
        T(test_serve_errors),
        T(test_slow_clients),
        T(test_connection_cap),
        T(test_per_peer_cap),
        T(test_slow_storm),
        T(test_close_with_open_connections),
        T(test_bind_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
