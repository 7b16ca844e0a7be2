/*
 * httpd.h - a small HTTP/1.1 server on libuv for /metrics and the health
 * probes. It serves GET and HEAD only, one request per connection
 * ("Connection: close"), and defends the process against bad clients:
 *
 * - a request head is at most max_request bytes (else 431), a malformed
 *   head gets 400, another method 405, and the connection closes;
 * - a connection has read_timeout_ms to send its whole head and then as
 *   long again to take the response; after that it is closed (a client
 *   that connects and sends nothing, or trickles bytes, is dropped);
 * - at most max_conns connections are open, and at most
 *   max_conns_per_peer from one client address; a connection past either
 *   bound takes the place of the oldest unanswered connection of the
 *   address holding the most (its own, past the per-address bound), so
 *   slow clients cannot starve a probe; when there is none to evict, the
 *   new connection is accepted and closed at once, so the listen backlog
 *   never fills up with idle clients. Evictions and refusals are logged
 *   once per GPUOP_HTTPD_WARN_INTERVAL_MS with their count.
 *
 * The handler runs on the loop thread and answers synchronously.
 */
#ifndef GPUOP_HTTPD_H
#define GPUOP_HTTPD_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "gpuop/error.h"

#define GPUOP_HTTPD_MAX_REQUEST        8192 /* default request head limit, bytes */
#define GPUOP_HTTPD_MAX_HEADERS        64
#define GPUOP_HTTPD_MAX_PATH           1024
#define GPUOP_HTTPD_MAX_CONNS          64
#define GPUOP_HTTPD_MAX_CONNS_PER_PEER 16    /* from one client address */
#define GPUOP_HTTPD_READ_TIMEOUT_MS    5000  /* to send the whole head, and to take the response */
#define GPUOP_HTTPD_WARN_INTERVAL_MS   10000 /* at most one eviction/refusal warning per interval */

struct gpuop_http_request {
    char method[8];                   /* "GET" */
    char path[GPUOP_HTTPD_MAX_PATH];  /* without the query: "/metrics" */
    char query[GPUOP_HTTPD_MAX_PATH]; /* after '?', "" when none */
    int minor;                        /* HTTP/1.<minor> */
    int nheaders;
};

/* Parses the request head at buf[0..len). Returns the length of the head
 * (> 0) once it is complete and valid, 0 when more bytes are needed,
 * GPUOP_EPARSE when it is malformed (as soon as that is known) or
 * GPUOP_ETOOBIG when no complete head fits in max bytes (or it has more
 * than GPUOP_HTTPD_MAX_HEADERS headers, or a path over the limit). Only
 * the request line is kept; header lines are checked for shape. Never
 * reads past buf + len. */
int gpuop_httpd_parse(const char *buf, size_t len, size_t max, struct gpuop_http_request *out);

/* The handler fills resp: code (default 200), content_type (static string;
 * default text/plain), body (heap memory the server steals and frees, or
 * NULL) and len. */
struct gpuop_httpd_response {
    int code;
    const char *content_type;
    char *body;
    size_t len;
};

typedef void (*gpuop_httpd_handler)(void *arg, const struct gpuop_http_request *req,
                                    struct gpuop_httpd_response *resp);

struct gpuop_httpd_config {
    const char *addr; /* "127.0.0.1:8080", "[::1]:8081", ":8080" (any); port 0: ephemeral */
    const char *name; /* for logs: "metrics" */
    gpuop_httpd_handler handler;
    void *arg;
    size_t max_request;       /* 0: GPUOP_HTTPD_MAX_REQUEST */
    uint64_t read_timeout_ms; /* 0: GPUOP_HTTPD_READ_TIMEOUT_MS */
    int max_conns;            /* 0: GPUOP_HTTPD_MAX_CONNS */
    int max_conns_per_peer;   /* 0: GPUOP_HTTPD_MAX_CONNS_PER_PEER; at most max_conns */
};

struct gpuop_httpd;

/* Splits "host:port" into a socket address (IPv4, [IPv6], "localhost", or
 * empty host for every IPv4 interface). Returns 0 or GPUOP_EINVAL. */
int gpuop_httpd_parse_addr(const char *addr, struct sockaddr_storage *out);

/* Binds and listens. *out is new; close with gpuop_httpd_close. */
int gpuop_httpd_new(uv_loop_t *loop, const struct gpuop_httpd_config *cfg, struct gpuop_httpd **out,
                    struct gpuop_err *err);
/* The port actually bound (useful with port 0). */
int gpuop_httpd_port(const struct gpuop_httpd *h);
/* Connections open now. */
size_t gpuop_httpd_conns(const struct gpuop_httpd *h);
/* Closes the listener and every connection; cb(arg) runs once all handles
 * are closed and h is freed. */
void gpuop_httpd_close(struct gpuop_httpd *h, void (*cb)(void *arg), void *arg);

#endif
