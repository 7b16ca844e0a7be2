/*
 * fakeapi.c - the scripted test HTTP server (see fakeapi.h).
 *
 * Each connection owns a TCP handle and two timers: "script" runs the
 * queued steps one after another (each after its delay), "tick" drives
 * fakeapi_every. Writes are counted; a close asked for by the script waits
 * until every write has completed, so a cut really lands after the bytes
 * before it. A connection and its record are separate: records live until
 * the server is freed, so tests can look at them after the client went.
 *
 * The server frees itself once stopped and every handle (listeners
 * included: fakeapi_listen closes and re-creates them) has been closed.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakeapi.h"
#include "gpuop/buf.h"

enum step_kind { S_SEND, S_RAW, S_END, S_CUT };

struct step {
    struct step *next;
    uint64_t delay;
    enum step_kind kind;
    size_t len;
    char data[];
};

struct fakeapi_conn {
    uv_tcp_t tcp;
    uv_timer_t script, tick;
    struct fakeapi *s;
    struct fakeapi_request *req; /* set once the request is complete */
    struct gpuop_buf in;         /* the request as read so far, NUL-terminated */
    char scratch[4096];          /* reads after the request, discarded */
    bool handled, closing, close_when_flushed, chunked;
    int open;    /* handles not yet closed */
    int pending; /* writes in flight */
    struct step *head, *tail;
    void (*every)(struct fakeapi_conn *, void *);
    void *every_arg;
    struct fakeapi_conn *prev, *next;
};

struct fakeapi {
    uv_loop_t *loop;
    uv_tcp_t *listener; /* NULL while not listening */
    int port;
    char url[64];
    fakeapi_handler handle;
    void *arg;
    struct fakeapi_conn *conns;
    size_t nconns;
    struct fakeapi_request **reqs;
    size_t nreq, cap;
    int live; /* connections and listeners not yet freed */
    bool stopping;
};

struct wreq {
    uv_write_t req;
    struct fakeapi_conn *c;
    size_t len;
    char data[];
};

static void maybe_free_server(struct fakeapi *s)
{
    if (!s->stopping || s->live > 0)
        return;
    for (size_t i = 0; i < s->nreq; i++) {
        free(s->reqs[i]->body);
        free(s->reqs[i]);
    }
    free(s->reqs);
    free(s);
}

/* ---- connections ---- */

static void free_steps(struct fakeapi_conn *c)
{
    while (c->head) {
        struct step *st = c->head;
        c->head = st->next;
        free(st);
    }
    c->tail = NULL;
}

static void conn_handle_closed(uv_handle_t *h)
{
    struct fakeapi_conn *c = h->data;
    if (--c->open > 0)
        return;
    struct fakeapi *s = c->s;
    gpuop_buf_free(&c->in);
    free(c);
    s->live--;
    maybe_free_server(s);
}

static void conn_close(struct fakeapi_conn *c, bool by_server)
{
    if (c->closing)
        return;
    c->closing = true;
    struct fakeapi *s = c->s;
    if (c->req) {
        if (by_server)
            c->req->server_close = true;
        else
            c->req->client_gone = true;
    }
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->nconns--;
    free_steps(c);
    uv_close((uv_handle_t *)&c->tcp, conn_handle_closed);
    uv_close((uv_handle_t *)&c->script, conn_handle_closed);
    uv_close((uv_handle_t *)&c->tick, conn_handle_closed);
}

static void on_written(uv_write_t *w, int status)
{
    struct wreq *wr = (struct wreq *)w;
    struct fakeapi_conn *c = wr->c;
    c->pending--;
    if (status == 0 && c->req)
        c->req->sent += wr->len;
    free(wr);
    if (c->closing)
        return;
    if (status < 0)
        conn_close(c, false);
    else if (c->close_when_flushed && c->pending == 0)
        conn_close(c, true);
}

static void put(struct fakeapi_conn *c, const char *p, size_t n)
{
    if (c->closing || n == 0)
        return;
    struct wreq *wr = malloc(sizeof(*wr) + n);
    if (!wr) {
        conn_close(c, true);
        return;
    }
    wr->c = c;
    wr->len = n;
    memcpy(wr->data, p, n);
    uv_buf_t b = uv_buf_init(wr->data, (unsigned)n);
    c->pending++;
    if (uv_write(&wr->req, (uv_stream_t *)&c->tcp, &b, 1, on_written) != 0) {
        c->pending--;
        free(wr);
        conn_close(c, false);
    }
}

static void close_after_writes(struct fakeapi_conn *c)
{
    if (c->closing)
        return;
    c->close_when_flushed = true;
    if (c->pending == 0)
        conn_close(c, true);
}

void fakeapi_write(struct fakeapi_conn *c, const char *data, size_t len)
{
    if (!c->chunked) {
        put(c, data, len);
        return;
    }
    if (len == 0)
        return; /* an empty chunk would end the body */
    char *buf = malloc(len + 32);
    if (!buf) {
        conn_close(c, true);
        return;
    }
    int n = snprintf(buf, 32, "%zx\r\n", len);
    memcpy(buf + n, data, len);
    memcpy(buf + n + len, "\r\n", 2);
    put(c, buf, (size_t)n + len + 2);
    free(buf);
}

/* ---- the script ---- */

static void script_kick(struct fakeapi_conn *c);

static void on_script(uv_timer_t *t)
{
    struct fakeapi_conn *c = t->data;
    struct step *st = c->head;
    if (!st || c->closing)
        return;
    c->head = st->next;
    if (!c->head)
        c->tail = NULL;
    switch (st->kind) {
    case S_SEND:
        fakeapi_write(c, st->data, st->len);
        break;
    case S_RAW:
        put(c, st->data, st->len);
        break;
    case S_END:
        if (c->chunked)
            put(c, "0\r\n\r\n", 5);
        close_after_writes(c);
        break;
    case S_CUT:
        close_after_writes(c);
        break;
    }
    free(st);
    script_kick(c);
}

static void script_kick(struct fakeapi_conn *c)
{
    if (c->closing || !c->head || uv_is_active((uv_handle_t *)&c->script))
        return;
    uv_timer_start(&c->script, on_script, c->head->delay, 0);
}

static void add_step(struct fakeapi_conn *c, enum step_kind kind, uint64_t delay, const char *data,
                     size_t len)
{
    if (c->closing)
        return;
    struct step *st = malloc(sizeof(*st) + len);
    if (!st)
        return;
    st->next = NULL;
    st->delay = delay;
    st->kind = kind;
    st->len = len;
    if (len)
        memcpy(st->data, data, len);
    if (c->tail)
        c->tail->next = st;
    else
        c->head = st;
    c->tail = st;
    script_kick(c);
}

void fakeapi_stream_send(struct fakeapi_conn *c, uint64_t delay_ms, const char *data, size_t len)
{
    add_step(c, S_SEND, delay_ms, data, len);
}

void fakeapi_stream_sendf(struct fakeapi_conn *c, uint64_t delay_ms, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n >= 0)
        add_step(c, S_SEND, delay_ms, s, (size_t)n);
    free(s);
}

void fakeapi_stream_raw(struct fakeapi_conn *c, uint64_t delay_ms, const char *data, size_t len)
{
    add_step(c, S_RAW, delay_ms, data, len);
}

void fakeapi_stream_end(struct fakeapi_conn *c, uint64_t delay_ms)
{
    add_step(c, S_END, delay_ms, NULL, 0);
}

void fakeapi_cut(struct fakeapi_conn *c, uint64_t delay_ms)
{
    add_step(c, S_CUT, delay_ms, NULL, 0);
}

static void on_tick(uv_timer_t *t)
{
    struct fakeapi_conn *c = t->data;
    if (!c->closing && c->every)
        c->every(c, c->every_arg);
}

void fakeapi_every(struct fakeapi_conn *c, uint64_t interval_ms,
                   void (*fn)(struct fakeapi_conn *c, void *arg), void *arg)
{
    if (c->closing)
        return;
    c->every = fn;
    c->every_arg = arg;
    uv_timer_start(&c->tick, on_tick, interval_ms, interval_ms ? interval_ms : 1);
}

/* ---- answers ---- */

static const char *reason_phrase(int code)
{
    return code >= 200 && code < 300 ? "OK" : "Error";
}

void fakeapi_respond(struct fakeapi_conn *c, int code, const char *ctype, const char *body)
{
    size_t blen = strlen(body);
    char head[512];
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n",
                     code, reason_phrase(code), ctype, blen);
    char *buf = malloc((size_t)n + blen);
    if (!buf) {
        conn_close(c, true);
        return;
    }
    memcpy(buf, head, (size_t)n);
    memcpy(buf + n, body, blen);
    put(c, buf, (size_t)n + blen);
    free(buf);
    close_after_writes(c);
}

/* Copies s into out as JSON string content (quotes and controls dropped). */
static void json_text(char *out, size_t cap, const char *s)
{
    size_t n = 0;
    for (; s && *s && n + 1 < cap; s++)
        if (*s != '"' && *s != '\\' && (unsigned char)*s >= 0x20)
            out[n++] = *s;
    out[n] = '\0';
}

void fakeapi_respond_status(struct fakeapi_conn *c, int code, const char *reason,
                            const char *message)
{
    char r[128], m[512], body[1024];
    json_text(r, sizeof(r), reason);
    json_text(m, sizeof(m), message);
    snprintf(body, sizeof(body),
             "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
             "\"message\":\"%s\",\"reason\":\"%s\",\"code\":%d}",
             m, r, code);
    fakeapi_respond(c, code, "application/json", body);
}

void fakeapi_stream_begin(struct fakeapi_conn *c, int code, enum fakeapi_framing framing,
                          size_t declared_len)
{
    char head[512], len[64] = "";
    if (framing == FAKEAPI_CHUNKED)
        snprintf(len, sizeof(len), "Transfer-Encoding: chunked\r\n");
    else if (framing == FAKEAPI_LENGTH)
        snprintf(len, sizeof(len), "Content-Length: %zu\r\n", declared_len);
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n%s"
                     "Connection: close\r\n\r\n",
                     code, reason_phrase(code), len);
    c->chunked = framing == FAKEAPI_CHUNKED;
    put(c, head, (size_t)n);
}

/* ---- requests ---- */

static void header_value(const char *head, const char *name, char *out, size_t cap)
{
    char pat[64];
    const char *p;
    out[0] = '\0';
    snprintf(pat, sizeof(pat), "\r\n%s:", name);
    p = strcasestr(head, pat);
    if (!p)
        return;
    p += strlen(pat);
    while (*p == ' ' || *p == '\t')
        p++;
    size_t n = strcspn(p, "\r\n");
    snprintf(out, cap, "%.*s", (int)n, p);
}

static struct fakeapi_request *record(struct fakeapi *s, const char *head, const char *body,
                                      size_t body_len)
{
    if (s->nreq == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        struct fakeapi_request **r = realloc(s->reqs, cap * sizeof(*r));
        if (!r)
            return NULL;
        s->reqs = r;
        s->cap = cap;
    }
    struct fakeapi_request *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->body = malloc(body_len + 1);
    if (!r->body) {
        free(r);
        return NULL;
    }
    memcpy(r->body, body, body_len);
    r->body[body_len] = '\0';
    r->body_len = body_len;
    r->index = s->nreq;
    if (sscanf(head, "%15s %4095s", r->method, r->path) != 2)
        r->path[0] = '\0';
    header_value(head, "Authorization", r->auth, sizeof(r->auth));
    header_value(head, "Content-Type", r->ctype, sizeof(r->ctype));
    header_value(head, "User-Agent", r->ua, sizeof(r->ua));
    header_value(head, "Accept", r->accept, sizeof(r->accept));
    header_value(head, "Expect", r->expect, sizeof(r->expect));
    s->reqs[s->nreq++] = r;
    return r;
}

/* The request is read into c->in, which grows by doubling while less than
 * IN_ROOM bytes are free, up to head + body + a NUL. */
#define IN_FIRST 8192
#define IN_ROOM  4096

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    struct fakeapi_conn *c = h->data;
    struct gpuop_buf *in = &c->in;
    if (!c->handled && in->cap - in->len < IN_ROOM && in->cap < in->max) {
        size_t room = in->max - in->len < IN_ROOM ? in->max - in->len : IN_ROOM;
        (void)gpuop_buf_reserve(in, room); /* on failure: the scratch below */
    }
    if (c->handled || !in->data || in->cap - in->len <= 1) {
        b->base = c->scratch;
        b->len = sizeof(c->scratch);
        return;
    }
    b->base = in->data + in->len;
    b->len = in->cap - 1 - in->len; /* room for the NUL */
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *b)
{
    struct fakeapi_conn *c = st->data;
    if (nread < 0) {
        conn_close(c, false);
        return;
    }
    if (nread == 0)
        return;
    if (c->handled || b->base == c->scratch) {
        if (!c->handled) { /* no room left: too large */
            c->handled = true;
            fakeapi_respond(c, 413, "text/plain", "request too large");
        }
        return;
    }
    c->in.len += (size_t)nread;
    c->in.data[c->in.len] = '\0';
    char *end = strstr(c->in.data, "\r\n\r\n");
    if (!end) {
        if (c->in.len > FAKEAPI_MAX_HEAD) {
            c->handled = true;
            fakeapi_respond(c, 431, "text/plain", "request head too large");
        }
        return;
    }
    char cl[32];
    *end = '\0';
    header_value(c->in.data, "Content-Length", cl, sizeof(cl));
    size_t want = (size_t)strtoull(cl, NULL, 10);
    size_t have = c->in.len - (size_t)(end + 4 - c->in.data);
    if (want > FAKEAPI_MAX_BODY) {
        c->handled = true;
        fakeapi_respond(c, 413, "text/plain", "request body too large");
        return;
    }
    if (have < want) {
        *end = '\r';
        return;
    }
    c->handled = true;
    c->req = record(c->s, c->in.data, end + 4, want);
    if (!c->req) {
        fakeapi_respond(c, 500, "text/plain", "out of memory");
        return;
    }
    c->s->handle(c->s->arg, c, c->req);
}

static void on_connection(uv_stream_t *server, int status)
{
    struct fakeapi *s = server->data;
    if (status < 0 || s->stopping)
        return;
    struct fakeapi_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return;
    c->s = s;
    gpuop_buf_init(&c->in, IN_FIRST, FAKEAPI_MAX_HEAD + FAKEAPI_MAX_BODY + 1);
    uv_tcp_init(s->loop, &c->tcp);
    uv_timer_init(s->loop, &c->script);
    uv_timer_init(s->loop, &c->tick);
    c->tcp.data = c->script.data = c->tick.data = c;
    c->open = 3;
    s->live++;
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    s->nconns++;
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0 ||
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0)
        conn_close(c, true);
}

const struct fakeapi_request *fakeapi_conn_request(const struct fakeapi_conn *c)
{
    return c->req;
}

/* ---- the server ---- */

static void listener_closed(uv_handle_t *h)
{
    struct fakeapi *s = h->data;
    free(h);
    s->live--;
    maybe_free_server(s);
}

int fakeapi_listen(struct fakeapi *s, bool on)
{
    if (!on) {
        if (s->listener) {
            uv_close((uv_handle_t *)s->listener, listener_closed);
            s->listener = NULL;
        }
        return 0;
    }
    if (s->listener || s->stopping)
        return 0;
    uv_tcp_t *t = malloc(sizeof(*t));
    if (!t)
        return UV_ENOMEM;
    uv_tcp_init(s->loop, t);
    t->data = s;
    s->live++;
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", s->port, &a);
    int rc = uv_tcp_bind(t, (struct sockaddr *)&a, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)t, 64, on_connection);
    if (rc != 0) {
        uv_close((uv_handle_t *)t, listener_closed);
        return rc;
    }
    struct sockaddr_in got;
    int len = sizeof(got);
    uv_tcp_getsockname(t, (struct sockaddr *)&got, &len);
    s->port = ntohs(got.sin_port);
    snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%d", s->port);
    s->listener = t;
    return 0;
}

int fakeapi_start(uv_loop_t *loop, fakeapi_handler handle, void *arg, struct fakeapi **out)
{
    signal(SIGPIPE, SIG_IGN); /* a client that went away must not kill the test */
    struct fakeapi *s = calloc(1, sizeof(*s));
    if (!s)
        return UV_ENOMEM;
    s->loop = loop;
    s->handle = handle;
    s->arg = arg;
    int rc = fakeapi_listen(s, true);
    if (rc != 0) {
        s->stopping = true;
        maybe_free_server(s); /* or once the listener has closed */
        return rc;
    }
    *out = s;
    return 0;
}

void fakeapi_stop(struct fakeapi *s)
{
    s->stopping = true;
    while (s->conns)
        conn_close(s->conns, true);
    fakeapi_listen(s, false);
    maybe_free_server(s);
}

int fakeapi_port(const struct fakeapi *s)
{
    return s->port;
}

const char *fakeapi_url(const struct fakeapi *s)
{
    return s->url;
}

size_t fakeapi_nreq(const struct fakeapi *s)
{
    return s->nreq;
}

const struct fakeapi_request *fakeapi_req(const struct fakeapi *s, size_t i)
{
    return i < s->nreq ? s->reqs[i] : NULL;
}

const struct fakeapi_request *fakeapi_last(const struct fakeapi *s)
{
    return s->nreq ? s->reqs[s->nreq - 1] : NULL;
}

size_t fakeapi_open_conns(const struct fakeapi *s)
{
    return s->nconns;
}

bool fakeapi_query(const struct fakeapi_request *r, const char *name, char *out, size_t cap)
{
    const char *p = strchr(r->path, '?');
    size_t nlen = strlen(name);
    while (p && *p) {
        p++; /* past '?' or '&' */
        size_t plen = strcspn(p, "&");
        if (plen > nlen && !strncmp(p, name, nlen) && p[nlen] == '=') {
            size_t vlen = plen - nlen - 1;
            if (vlen + 1 > cap)
                return false;
            memcpy(out, p + nlen + 1, vlen);
            out[vlen] = '\0';
            return true;
        }
        if (plen == nlen && !strncmp(p, name, nlen)) {
            if (cap < 1)
                return false;
            out[0] = '\0';
            return true;
        }
        p = strchr(p, '&');
    }
    return false;
}
