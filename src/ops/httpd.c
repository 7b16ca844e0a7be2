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
 * Slow clients cannot starve a new one: the table of connections is
 * bounded twice, in all (max_conns) and per client address
 * (max_conns_per_peer), and a new connection that finds a bound reached
 * takes the place of the oldest connection of the address that holds the
 * most (its own address when that is the bound reached). A kubelet probe
 * from the node's address thus always finds room while a pod trickles
 * bytes from hundreds of connections; only when every connection of the
 * heaviest address is already answered is the new one refused. Evictions
 * and refusals are counted and logged at most once per
 * GPUOP_HTTPD_WARN_INTERVAL_MS, with the count.
 *
 * The parser (gpuop_httpd_parse) is a pure function over a byte range so
 * that the fuzz target can drive it without sockets.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuop/clock.h"
#include "gpuop/httpd.h"
#include "gpuop/list.h"
#include "gpuop/log.h"

#define LISTEN_BACKLOG 128 /* kept short: past the connection bounds, clients are closed */

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

/* A client address without its port: what the per-address bound counts. */
struct peer {
    int family; /* AF_INET, AF_INET6; 0: unknown (never matches) */
    unsigned char addr[16];
};

struct conn {
    struct gpuop_httpd *h;
    struct peer peer;
    uint64_t accepted_ms;
    uv_tcp_t tcp;
    uv_timer_t timer;
    uv_write_t wr;
    uv_shutdown_t sd;
    int open_handles;
    bool answered, closing;
    bool shut;                   /* our side is shut down: waiting for the client's EOF */
    bool peer_eof;               /* the client is done sending */
    char *out;                   /* response being written, owned */
    struct gpuop_list_node link; /* on the server's conns */
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
    int max_conns, max_per_peer;
    size_t nconns;
    struct gpuop_list conns; /* struct conn, newest first */
    uv_timer_t warn_timer;
    uint64_t evicted, refused; /* since the last warning */
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
    gpuop_list_remove(&c->link);
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

static void warn_drops(struct gpuop_httpd *h)
{
    gpuop_warn(h->name,
               "%llu slow connection(s) evicted and %llu refused (at most %d open, %d per "
               "client address); the next count in %d s at the earliest",
               (unsigned long long)h->evicted, (unsigned long long)h->refused, h->max_conns,
               h->max_per_peer, GPUOP_HTTPD_WARN_INTERVAL_MS / 1000);
    h->evicted = h->refused = 0;
}

static void on_warn_timer(uv_timer_t *t)
{
    struct gpuop_httpd *h = t->data;
    if (h->evicted || h->refused) {
        warn_drops(h);
        uv_timer_start(&h->warn_timer, on_warn_timer, GPUOP_HTTPD_WARN_INTERVAL_MS, 0);
    }
}

/* Counts an eviction or a refusal: the first one of a quiet spell is
 * logged at once, the rest once per interval with their count. */
static void note_drop(struct gpuop_httpd *h, bool refused)
{
    if (refused)
        h->refused++;
    else
        h->evicted++;
    if (!uv_is_active((uv_handle_t *)&h->warn_timer)) {
        warn_drops(h);
        uv_timer_start(&h->warn_timer, on_warn_timer, GPUOP_HTTPD_WARN_INTERVAL_MS, 0);
    }
}

static void peer_of(uv_tcp_t *tcp, struct peer *p)
{
    struct sockaddr_storage sa;
    int len = sizeof(sa);
    memset(p, 0, sizeof(*p));
    if (uv_tcp_getpeername(tcp, (struct sockaddr *)&sa, &len) < 0)
        return;
    if (sa.ss_family == AF_INET) {
        p->family = AF_INET;
        memcpy(p->addr, &((struct sockaddr_in *)&sa)->sin_addr, 4);
    } else if (sa.ss_family == AF_INET6) {
        p->family = AF_INET6;
        memcpy(p->addr, &((struct sockaddr_in6 *)&sa)->sin6_addr, 16);
    }
}

static bool same_peer(const struct peer *a, const struct peer *b)
{
    return a->family && a->family == b->family && memcmp(a->addr, b->addr, sizeof(a->addr)) == 0;
}

/* The connection a new one from peer p replaces, or NULL when it fits (or
 * when nothing can be evicted: *refuse then says so). Candidates are the
 * unanswered connections (still sending their head) of p when p holds its
 * bound, else of the address holding the most; the oldest goes. O(n^2) in
 * max_conns, which is small. */
static struct conn *victim(struct gpuop_httpd *h, const struct conn *newc, bool *refuse)
{
    *refuse = false;
    size_t own = 0;
    GPUOP_LIST_FOREACH(c, &h->conns, struct conn, link)
    {
        if (c != newc && same_peer(&c->peer, &newc->peer))
            own++;
    }
    const struct conn *of = NULL; /* a connection of the address to evict from */
    if (own >= (size_t)h->max_per_peer) {
        of = newc;
    } else if (h->nconns > (size_t)h->max_conns) {
        size_t most = 0;
        GPUOP_LIST_FOREACH(c, &h->conns, struct conn, link)
        {
            if (c == newc)
                continue;
            size_t n = 0;
            GPUOP_LIST_FOREACH(d, &h->conns, struct conn, link)
            {
                if (d != newc && (d == c || same_peer(&d->peer, &c->peer)))
                    n++;
            }
            if (n >= most) { /* >=: the list runs newest first, so ties go to the older */
                most = n;
                of = c;
            }
        }
    } else {
        return NULL;
    }
    struct conn *v = NULL;
    GPUOP_LIST_FOREACH(c, &h->conns, struct conn, link)
    {
        bool mine = of == c || same_peer(&c->peer, &of->peer);
        if (c != newc && mine && !c->answered)
            v = c; /* the last one found is the oldest */
    }
    *refuse = !v;
    return v;
}

static void on_connection(uv_stream_t *server, int status)
{
    struct gpuop_httpd *h = server->data;
    if (status < 0 || h->closing)
        return;
    struct conn *c = calloc(1, sizeof(*c) + h->max_request);
    if (!c)
        return; /* left in the backlog: the next connection retries */
    c->h = h;
    uv_tcp_init(h->loop, &c->tcp);
    uv_timer_init(h->loop, &c->timer);
    c->tcp.data = c->timer.data = c->sd.data = c;
    c->open_handles = 2;
    h->open_handles += 2;
    gpuop_list_push(&h->conns, &c->link);
    h->nconns++;
    if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0) {
        conn_close(c);
        return;
    }
    c->accepted_ms = gpuop_clock_ms();
    peer_of(&c->tcp, &c->peer);
    bool refuse;
    struct conn *v = victim(h, c, &refuse);
    if (refuse) {
        /* Every connection of the heaviest address is being answered. */
        note_drop(h, true);
        conn_close(c);
        return;
    }
    if (v) {
        gpuop_debug(h->name, "evicting a connection %.1f s old that has sent %zu bytes",
                    (double)(c->accepted_ms - v->accepted_ms) / 1000.0, v->len);
        note_drop(h, false);
        conn_close(v);
    }
    uv_timer_start(&c->timer, on_timeout, h->timeout_ms, 0);
    if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) < 0)
        conn_close(c);
}

static void on_server_handle_closed(uv_handle_t *hd)
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
    h->max_per_peer =
        cfg->max_conns_per_peer > 0 ? cfg->max_conns_per_peer : GPUOP_HTTPD_MAX_CONNS_PER_PEER;
    if (h->max_per_peer > h->max_conns)
        h->max_per_peer = h->max_conns;
    uv_tcp_init(loop, &h->listener);
    h->listener.data = h;
    uv_timer_init(loop, &h->warn_timer);
    h->warn_timer.data = h;
    h->open_handles = 2;
    int rc = uv_tcp_bind(&h->listener, (const struct sockaddr *)&sa, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&h->listener, LISTEN_BACKLOG, on_connection);
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
    while (!gpuop_list_empty(&h->conns))
        conn_close(GPUOP_LIST_FIRST(&h->conns, struct conn, link));
    uv_close((uv_handle_t *)&h->warn_timer, on_server_handle_closed);
    uv_close((uv_handle_t *)&h->listener, on_server_handle_closed);
}
