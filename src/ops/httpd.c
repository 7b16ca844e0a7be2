/*
 * httpd.c - the small HTTP/1.1 server of httpd.h.
 *
 * A connection lives in one struct conn with a fixed head buffer of
 * max_request bytes, a TCP handle and one timer. The timer is the only
 * deadline: it starts at accept (the whole head must arrive within
 * read_timeout_ms, however slowly the bytes trickle) and restarts when the
 * response is queued (the client must take it within as long again). When
 * it fires the connection is closed, whatever state it is in. Bytes are
 * parsed after every read; a complete head is answered at once, an error
 * is answered with 400/405/431 and the connection closes; anything after
 * the head (a body, a pipelined request) is ignored.
 *
 * The parser (gpuop_httpd_parse) is a pure function over a byte range so
 * that the fuzz target can drive it without sockets.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuop/httpd.h"
#include "gpuop/log.h"

/* ---- parser ---- */

static bool is_tchar(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

static const char *find_nl(const char *p, const char *end)
{
    return memchr(p, '\n', (size_t)(end - p));
}

static int parse_request_line(const char *s, size_t n, struct gpuop_http_request *out)
{
    if (n && s[n - 1] == '\r')
        n--;
    size_t i = 0, m = 0;
    while (i < n && s[i] >= 'A' && s[i] <= 'Z') {
        if (m + 1 >= sizeof(out->method))
            return GPUOP_EPARSE;
        out->method[m++] = s[i++];
    }
    out->method[m] = '\0';
    if (m == 0 || i >= n || s[i] != ' ')
        return GPUOP_EPARSE;
    i++;
    size_t t0 = i;
    while (i < n && (unsigned char)s[i] > 0x20 && (unsigned char)s[i] < 0x7f)
        i++;
    size_t tlen = i - t0;
    if (tlen == 0 || s[t0] != '/' || i >= n || s[i] != ' ')
        return GPUOP_EPARSE;
    const char *q = memchr(s + t0, '?', tlen);
    size_t plen = q ? (size_t)(q - (s + t0)) : tlen;
    size_t qlen = q ? tlen - plen - 1 : 0;
    if (plen >= sizeof(out->path) || qlen >= sizeof(out->query))
        return GPUOP_ETOOBIG;
    memcpy(out->path, s + t0, plen);
    out->path[plen] = '\0';
    if (q)
        memcpy(out->query, q + 1, qlen);
    out->query[qlen] = '\0';
    i++;
    if (n - i != 8 || memcmp(s + i, "HTTP/1.", 7) != 0 || (s[i + 7] != '0' && s[i + 7] != '1'))
        return GPUOP_EPARSE;
    out->minor = s[i + 7] - '0';
    return 0;
}

static int check_header(const char *s, size_t n)
{
    if (n && s[n - 1] == '\r')
        n--;
    size_t i = 0;
    while (i < n && is_tchar((unsigned char)s[i]))
        i++;
    if (i == 0 || i >= n || s[i] != ':')
        return GPUOP_EPARSE; /* also obs-fold: a line starting with SP/HT */
    for (i++; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return GPUOP_EPARSE;
    }
    return 0;
}

int gpuop_httpd_parse(const char *buf, size_t len, size_t max, struct gpuop_http_request *out)
{
    memset(out, 0, sizeof(*out));
    if (len > max)
        len = max;
    const char *end = buf + len;
    const char *nl = find_nl(buf, end);
    if (!nl) {
        /* Fail early on what can never become a request line. */
        for (size_t i = 0; i < len && buf[i] != ' '; i++)
            if (buf[i] < 'A' || buf[i] > 'Z' || i >= sizeof(out->method) - 1)
                return GPUOP_EPARSE;
        return len >= max ? GPUOP_ETOOBIG : 0;
    }
    int rc = parse_request_line(buf, (size_t)(nl - buf), out);
    if (rc < 0)
        return rc;
    const char *p = nl + 1;
    for (;;) {
        nl = find_nl(p, end);
        if (!nl)
            return len >= max ? GPUOP_ETOOBIG : 0;
        size_t n = (size_t)(nl - p);
        if (n == 0 || (n == 1 && p[0] == '\r'))
            return (int)(nl + 1 - buf);
        if (++out->nheaders > GPUOP_HTTPD_MAX_HEADERS)
            return GPUOP_ETOOBIG;
        if ((rc = check_header(p, n)) < 0)
            return rc;
        p = nl + 1;
    }
}

int gpuop_httpd_parse_addr(const char *addr, struct sockaddr_storage *out)
{
    memset(out, 0, sizeof(*out));
    if (!addr)
        return GPUOP_EINVAL;
    const char *colon = strrchr(addr, ':');
    if (!colon || !colon[1] || strlen(colon + 1) > 5)
        return GPUOP_EINVAL;
    char *e;
    long port = strtol(colon + 1, &e, 10);
    if (*e || port < 0 || port > 65535)
        return GPUOP_EINVAL;
    char host[64];
    size_t hlen = (size_t)(colon - addr);
    if (hlen >= sizeof(host))
        return GPUOP_EINVAL;
    memcpy(host, addr, hlen);
    host[hlen] = '\0';
    if (host[0] == '[') {
        if (hlen < 3 || host[hlen - 1] != ']')
            return GPUOP_EINVAL;
        host[hlen - 1] = '\0';
        return uv_ip6_addr(host + 1, (int)port, (struct sockaddr_in6 *)out) ? GPUOP_EINVAL : 0;
    }
    if (strchr(host, ':'))
        return GPUOP_EINVAL; /* IPv6 needs brackets */
    const char *h = !host[0] ? "0.0.0.0" : strcmp(host, "localhost") == 0 ? "127.0.0.1" : host;
    return uv_ip4_addr(h, (int)port, (struct sockaddr_in *)out) ? GPUOP_EINVAL : 0;
}

/* ---- server ---- */

struct conn {
    struct gpuop_httpd *h;
    uv_tcp_t tcp;
    uv_timer_t timer;
    uv_write_t wr;
    uv_shutdown_t sd;
    int open_handles;
    bool answered, closing;
    bool shut;     /* our side is shut down: waiting for the client's EOF */
    bool peer_eof; /* the client is done sending */
    char *out;     /* response being written, owned */
    struct conn *prev, *next;
    size_t len;
    char buf[]; /* max_request bytes */
};

struct gpuop_httpd {
    uv_loop_t *loop;
    uv_tcp_t listener;
    char *name;
    gpuop_httpd_handler handler;
    void *arg;
    size_t max_request;
    uint64_t timeout_ms;
    int max_conns;
    size_t nconns;
    struct conn *conns;
    bool closing;
    int open_handles; /* listener + connections' handles */
    void (*close_cb)(void *);
    void *close_arg;
};

static void maybe_freed(struct gpuop_httpd *h)
{
    if (!h->closing || h->open_handles > 0)
        return;
    void (*cb)(void *) = h->close_cb;
    void *arg = h->close_arg;
    free(h->name);
    free(h);
    if (cb)
        cb(arg);
}

static void conn_handle_closed(uv_handle_t *hd)
{
    struct conn *c = hd->data;
    struct gpuop_httpd *h = c->h;
    h->open_handles--;
    if (--c->open_handles > 0)
        return;
    free(c->out);
    free(c);
    maybe_freed(h);
}

static void conn_close(struct conn *c)
{
    if (c->closing)
        return;
    c->closing = true;
    struct gpuop_httpd *h = c->h;
    if (c->prev)
        c->prev->next = c->next;
    else
        h->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    h->nconns--;
    uv_close((uv_handle_t *)&c->tcp, conn_handle_closed);
    uv_close((uv_handle_t *)&c->timer, conn_handle_closed);
}

static void on_timeout(uv_timer_t *t)
{
    struct conn *c = t->data;
    gpuop_debug(c->h->name, "closing a connection: %s timed out",
                c->answered ? "response" : "request");
    conn_close(c);
}

/* Lingering close: after our FIN, the connection closes on the client's
 * EOF (or the timer), so unread request bytes never turn into an RST that
 * would destroy the response before the client reads it. */
static void on_shutdown(uv_shutdown_t *req, int status)
{
    struct conn *c = req->data;
    c->shut = true;
    if (status < 0 || c->peer_eof)
        conn_close(c);
}

static void on_written(uv_write_t *req, int status)
{
    struct conn *c = req->data;
    if (c->closing)
        return;
    if (status < 0 || uv_shutdown(&c->sd, (uv_stream_t *)&c->tcp, on_shutdown) < 0)
        conn_close(c);
}

static const char *reason_phrase(int code)
{
    switch (code) {
    case 200:
        return "OK";
    case 400:
        return "Bad Request";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 408:
        return "Request Timeout";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 503:
        return "Service Unavailable";
    default:
        return "Unknown";
    }
}

/* Queues the response (body stolen) and stops reading. */
static void respond(struct conn *c, int code, const char *ctype, char *body, size_t len,
                    bool head_only)
{
    c->answered = true; /* further bytes are read and dropped */
    char head[256];
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
                     "Connection: close\r\n\r\n",
                     code, reason_phrase(code), ctype ? ctype : "text/plain; charset=utf-8", len,
                     code == 405 ? "Allow: GET, HEAD\r\n" : "");
    size_t blen = head_only ? 0 : len;
    c->out = malloc((size_t)n + blen);
    if (!c->out) {
        free(body);
        conn_close(c);
        return;
    }
    memcpy(c->out, head, (size_t)n);
    if (blen)
        memcpy(c->out + n, body, blen);
    free(body);
    uv_buf_t b = uv_buf_init(c->out, (unsigned)((size_t)n + blen));
    c->wr.data = c;
    uv_timer_start(&c->timer, on_timeout, c->h->timeout_ms, 0);
    if (uv_write(&c->wr, (uv_stream_t *)&c->tcp, &b, 1, on_written) < 0)
        conn_close(c);
}

static void respond_text(struct conn *c, int code, const char *text)
{
    char *b = strdup(text);
    respond(c, code, NULL, b, b ? strlen(b) : 0, false);
}

static void on_alloc(uv_handle_t *hd, size_t suggested, uv_buf_t *buf)
{
    struct conn *c = hd->data;
    if (c->answered)
        c->len = 0; /* draining */
    size_t room = c->h->max_request - c->len;
    *buf = uv_buf_init(c->buf + c->len, (unsigned)room);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct conn *c = s->data;
    if (c->closing)
        return;
    if (c->answered) {
        if (nread < 0) {
            c->peer_eof = true;
            uv_read_stop(s);
            if (c->shut)
                conn_close(c);
        }
        return;
    }
    if (nread < 0) {
        conn_close(c); /* EOF or error before a complete request */
        return;
    }
    c->len += (size_t)nread;
    struct gpuop_http_request req;
    int rc = gpuop_httpd_parse(c->buf, c->len, c->h->max_request, &req);
    if (rc == 0)
        return;
    if (rc == GPUOP_ETOOBIG) {
        respond_text(c, 431, "request too large\n");
        return;
    }
    if (rc < 0) {
        respond_text(c, 400, "bad request\n");
        return;
    }
    bool head = strcmp(req.method, "HEAD") == 0;
    if (!head && strcmp(req.method, "GET") != 0) {
        respond_text(c, 405, "only GET and HEAD\n");
        return;
    }
    struct gpuop_httpd_response resp = {.code = 200};
    c->h->handler(c->h->arg, &req, &resp);
    respond(c, resp.code ? resp.code : 200, resp.content_type, resp.body, resp.len, head);
}

static void on_reject_closed(uv_handle_t *hd)
{
    struct gpuop_httpd *h = hd->data;
    free(hd);
    h->open_handles--;
    maybe_freed(h);
}

static void on_connection(uv_stream_t *server, int status)
{
    struct gpuop_httpd *h = server->data;
    if (status < 0 || h->closing)
        return;
    if (h->nconns >= (size_t)h->max_conns) {
        /* Take it off the backlog and close it at once. */
        uv_tcp_t *t = malloc(sizeof(*t));
        if (!t)
            return;
        uv_tcp_init(h->loop, t);
        t->data = h;
        h->open_handles++;
        if (uv_accept(server, (uv_stream_t *)t) == 0)
            gpuop_warn(h->name, "connection limit (%d) reached: refusing a client", h->max_conns);
        uv_close((uv_handle_t *)t, on_reject_closed);
        return;
    }
    struct conn *c = calloc(1, sizeof(*c) + h->max_request);
    if (!c)
        return;
    c->h = h;
    uv_tcp_init(h->loop, &c->tcp);
    uv_timer_init(h->loop, &c->timer);
    c->tcp.data = c->timer.data = c->sd.data = c;
    c->open_handles = 2;
    h->open_handles += 2;
    c->next = h->conns;
    if (h->conns)
        h->conns->prev = c;
    h->conns = c;
    h->nconns++;
    if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0) {
        conn_close(c);
        return;
    }
    uv_timer_start(&c->timer, on_timeout, h->timeout_ms, 0);
    if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) < 0)
        conn_close(c);
}

static void on_listener_closed(uv_handle_t *hd)
{
    struct gpuop_httpd *h = hd->data;
    h->open_handles--;
    maybe_freed(h);
}

int gpuop_httpd_new(uv_loop_t *loop, const struct gpuop_httpd_config *cfg, struct gpuop_httpd **out,
                    struct gpuop_err *err)
{
    struct sockaddr_storage sa;
    if (!cfg->handler || gpuop_httpd_parse_addr(cfg->addr, &sa) < 0)
        return gpuop_err_set(err, GPUOP_EINVAL, NULL, "bad listen address '%s' (want host:port)",
                             cfg->addr ? cfg->addr : "");
    struct gpuop_httpd *h = calloc(1, sizeof(*h));
    if (!h)
        return gpuop_err_set(err, GPUOP_ENOMEM, NULL, "out of memory");
    h->name = strdup(cfg->name ? cfg->name : "httpd");
    if (!h->name) {
        free(h);
        return gpuop_err_set(err, GPUOP_ENOMEM, NULL, "out of memory");
    }
    h->loop = loop;
    h->handler = cfg->handler;
    h->arg = cfg->arg;
    h->max_request = cfg->max_request ? cfg->max_request : GPUOP_HTTPD_MAX_REQUEST;
    h->timeout_ms = cfg->read_timeout_ms ? cfg->read_timeout_ms : GPUOP_HTTPD_READ_TIMEOUT_MS;
    h->max_conns = cfg->max_conns > 0 ? cfg->max_conns : GPUOP_HTTPD_MAX_CONNS;
    uv_tcp_init(loop, &h->listener);
    h->listener.data = h;
    h->open_handles = 1;
    int rc = uv_tcp_bind(&h->listener, (const struct sockaddr *)&sa, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&h->listener, 128, on_connection);
    if (rc < 0) {
        gpuop_err_set(err, GPUOP_EIO, NULL, "cannot listen on %s: %s", cfg->addr, uv_strerror(rc));
        gpuop_httpd_close(h, NULL, NULL);
        return GPUOP_EIO;
    }
    *out = h;
    return 0;
}

int gpuop_httpd_port(const struct gpuop_httpd *h)
{
    struct sockaddr_storage sa;
    int len = sizeof(sa);
    if (uv_tcp_getsockname(&h->listener, (struct sockaddr *)&sa, &len) < 0)
        return -1;
    if (sa.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&sa)->sin6_port);
    return ntohs(((struct sockaddr_in *)&sa)->sin_port);
}

size_t gpuop_httpd_conns(const struct gpuop_httpd *h)
{
    return h->nconns;
}

void gpuop_httpd_close(struct gpuop_httpd *h, void (*cb)(void *), void *arg)
{
    h->closing = true;
    h->close_cb = cb;
    h->close_arg = arg;
    while (h->conns)
        conn_close(h->conns);
    uv_close((uv_handle_t *)&h->listener, on_listener_closed);
}
