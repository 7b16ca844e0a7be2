/*
 * kube.c - the Kubernetes API client: libcurl's multi_socket interface on a
 * libuv loop.
 *
 * curl says which sockets to watch (socket callback) and when to wake it
 * (timer callback). Each socket gets one uv_poll_t (a struct sock, attached
 * to curl's socket with curl_multi_assign), and the client owns one
 * uv_timer_t for curl's timeout. A poll error (UV_EBADF for a socket that
 * went away) is handed to curl as CURL_CSELECT_ERR; a remove for a socket
 * that was never announced is ignored. Every handle is freed only in its
 * close callback.
 *
 * Re-entrancy. curl forbids calling curl_multi_add_handle/remove_handle
 * from inside its callbacks, and on_data runs inside the write callback.
 * So while curl is running (k->in_curl) starting a request only queues it,
 * and cancelling one only marks it; a second timer, the "kick", then adds
 * the queued requests and removes the cancelled ones on the next loop
 * iteration. A cancelled request's done callback still runs before
 * gpuop_kube_cancel returns, exactly once; its transfer is aborted by the
 * write callback returning 0 or reaped by the kick, whichever comes first.
 * Done callbacks of finished transfers run after curl_multi_socket_action
 * has returned, so they may start, cancel or close freely.
 *
 * gpuop_kube_close cancels every request (each done gets GPUOP_ECANCELED),
 * then the kick tears down: easy handles, the multi handle, every poll and
 * both timers; the user's callback runs when the last close callback has.
 *
 * Process-wide setup (curl_global_init, SIGPIPE ignored) is main's, once
 * (kube.h): a client never changes process state.
 *
 * Every curl_easy_setopt and curl_multi_setopt result is checked (SET_EASY,
 * SET_MULTI): an option libcurl refuses fails the request, or the client,
 * with the option's name in the error.
 *
 * Limits: a response body is capped by max_body (GPUOP_KUBE_MAX_BODY,
 * settable for tests); the bearer token file is read at most 64 KiB and
 * re-read when its copy is older than token_ttl (60 s). The token lives in
 * one header per request and is never logged.
 *
 * A 2xx body is parsed without its metadata.managedFields (jsonstrip_int.h;
 * nobody reads them, and they are most of a Node's or a DaemonSet's bytes):
 * RESPONSE_CUT; the members a request calls digested are not parsed
 * either, and come back as a digest of their bytes.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "gpuop/buf.h"
#include "gpuop/clock.h"
#include "gpuop/kube.h"
#include "gpuop/list.h"
#include "gpuop/log.h"
#include "jsonstrip_int.h"

#define DEFAULT_TIMEOUT_MS 30000L
#define CONNECT_TIMEOUT_MS 10000L
#define TOKEN_TTL_MS       60000u
#define MAX_TOKEN          (64u << 10)
#define MAX_ERROR_BODY     (64u << 10) /* an error response of a stream */
#define ERROR_SNIPPET      200         /* bytes of a non-JSON error body quoted */
#define MAX_CONNECTIONS    8           /* kept open for reuse; more may be open meanwhile */
/* The member cut from an object a 2xx response holds. */
static const struct gpuop_jsonstrip_path RESPONSE_CUT = {.key = {"metadata", "managedFields"},
                                                         .n = 2};
#define UPLOAD_BUFFER    16384L /* curl's smallest upload buffer (default 64 KB) */
#define RESP_INITIAL_CAP 4096u  /* a response buffer's first size; doubles as it grows */
/* A watch stream's TCP keepalive, so a dead peer is noticed within about
 * KEEPALIVE_IDLE_S + 9 probes x KEEPALIVE_INTVL_S (Linux's default count). */
#define KEEPALIVE_IDLE_S  30L
#define KEEPALIVE_INTVL_S 15L

struct sock {
    uv_poll_t poll;
    curl_socket_t fd;
    struct gpuop_kube *k;
    struct gpuop_list_node link; /* in the client's socks */
};

struct gpuop_kube_req {
    struct gpuop_kube *k;
    CURL *easy;
    struct curl_slist *headers;
    char *url;
    char *body; /* request body copy */
    size_t body_len;
    enum gpuop_kube_verb verb;
    gpuop_kube_done_cb done;
    gpuop_kube_data_cb on_data;
    void *arg;
    struct gpuop_buf resp; /* collected response (non-stream, or a stream's error body) */
    /* cut from a 2xx body before it is parsed: managedFields, then the
     * digested members (their keys in cut_keys, owned) */
    struct gpuop_jsonstrip_path cut[1 + GPUOP_KUBE_DIGESTED_MAX];
    size_t ncut;
    char *cut_keys;
    int abort_rc;   /* set by the write callback: why it stopped the transfer */
    bool in_multi;  /* added to the multi handle */
    bool finished;  /* done has been called */
    bool stream_ok; /* stream with a 2xx status: bytes go to on_data */
    bool status_seen;
    char errbuf[CURL_ERROR_SIZE];
    struct gpuop_list_node link; /* in the client's reqs */
};

struct gpuop_kube {
    uv_loop_t *loop;
    CURLM *multi;
    uv_timer_t timer; /* curl's timeout */
    uv_timer_t kick;  /* deferred add/remove, and teardown */
    struct gpuop_kubeconfig cfg;
    char *token; /* current bearer token (from cfg.token or the file) */
    uint64_t token_read_ms;
    uint64_t token_ttl_ms;
    size_t max_body;
    gpuop_kube_observe_cb observe;
    void *observe_arg;
    gpuop_kube_fatal_cb fatal;
    void *fatal_arg;
    struct gpuop_list reqs;  /* every request not yet freed (list.h) */
    struct gpuop_list socks; /* every poll not yet closing */
    int in_curl;             /* > 0 while inside curl_multi_socket_action */
    int open_handles;
    bool closing, torn_down;
    void (*close_cb)(void *arg);
    void *close_arg;
};

static void check_multi_info(struct gpuop_kube *k);
static void schedule_kick(struct gpuop_kube *k);

/* Each verb's HTTP method and the name the observer counts it under. */
static const struct {
    const char *method, *name;
} verbs[] = {
    [GPUOP_KUBE_GET] = {"GET", "GET"},       [GPUOP_KUBE_WATCH] = {"GET", "WATCH"},
    [GPUOP_KUBE_POST] = {"POST", "POST"},    [GPUOP_KUBE_PUT] = {"PUT", "PUT"},
    [GPUOP_KUBE_PATCH] = {"PATCH", "PATCH"}, [GPUOP_KUBE_DELETE] = {"DELETE", "DELETE"},
};
#define NVERBS (sizeof(verbs) / sizeof(verbs[0]))

/* ---- small helpers --------------------------------------------------- */

/* The checked setter: the first option libcurl refuses is kept in c (rc
 * and err, naming the option); the calls after it still run, harmlessly,
 * so a run of SET_EASY/SET_MULTI reads as the list of options it is, with
 * one check at its end. */
struct opt_check {
    int rc;
    struct gpuop_err *err;
};

static void opt_result(struct opt_check *c, const char *name, CURLcode ec, CURLMcode mc)
{
    if (c->rc || (ec == CURLE_OK && mc == CURLM_OK))
        return;
    bool oom = ec == CURLE_OUT_OF_MEMORY || mc == CURLM_OUT_OF_MEMORY;
    c->rc = gpuop_err_set(c->err, oom ? GPUOP_ENOMEM : GPUOP_EINVAL, NULL, "libcurl refused %s: %s",
                          name, ec != CURLE_OK ? curl_easy_strerror(ec) : curl_multi_strerror(mc));
}
#define SET_EASY(c, e, opt, val) opt_result((c), #opt, curl_easy_setopt((e), opt, (val)), CURLM_OK)
#define SET_MULTI(c, m, opt, val)                                                                  \
    opt_result((c), #opt, CURLE_OK, curl_multi_setopt((m), opt, (val)))

static void wipe_free(char *s)
{
    if (s) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

#define REQ_FIRST(k)  GPUOP_LIST_FIRST(&(k)->reqs, struct gpuop_kube_req, link)
#define REQ_NEXT(r)   GPUOP_LIST_NEXT(r, struct gpuop_kube_req, link)
#define SOCK_FIRST(k) GPUOP_LIST_FIRST(&(k)->socks, struct sock, link)

static void req_link(struct gpuop_kube *k, struct gpuop_kube_req *r)
{
    gpuop_list_push(&k->reqs, &r->link);
}

static void req_unlink(struct gpuop_kube_req *r)
{
    gpuop_list_remove(&r->link);
}

/* Frees r: detaches it from curl. Never inside a curl callback. */
static void req_free(struct gpuop_kube_req *r)
{
    struct gpuop_kube *k = r->k;
    if (r->in_multi)
        curl_multi_remove_handle(k->multi, r->easy);
    r->in_multi = false;
    if (r->easy)
        curl_easy_cleanup(r->easy);
    if (r->headers) {
        /* one of them carries the token: wipe before freeing */
        for (struct curl_slist *h = r->headers; h; h = h->next)
            explicit_bzero(h->data, strlen(h->data));
        curl_slist_free_all(r->headers);
    }
    req_unlink(r);
    free(r->url);
    free(r->body);
    free(r->cut_keys);
    gpuop_buf_free(&r->resp);
    free(r);
}

/* Frees r now when curl allows it, else on the next kick. */
static void req_release(struct gpuop_kube_req *r)
{
    if (r->k->in_curl)
        schedule_kick(r->k);
    else
        req_free(r);
}

/* A failure no retry can fix: the server's certificate is not trusted
 * (wrong CA, wrong name), or a certificate or CA file of ours is unusable. A
 * failed handshake (CURLE_SSL_CONNECT_ERROR) is not among them: a server
 * that is starting or overloaded can cause it. */
static bool tls_verification_failed(CURLcode res)
{
    switch (res) {
    case CURLE_PEER_FAILED_VERIFICATION: /* also CURLE_SSL_CACERT */
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_CRL_BADFILE:
        return true;
    default:
        return false;
    }
}

/* Calls done once; r stays allocated (the caller releases it). */
static void finish(struct gpuop_kube_req *r, int rc, json_t *body, const struct gpuop_err *err,
                   long http_code)
{
    if (r->finished)
        return;
    r->finished = true;
    struct gpuop_kube *k = r->k;
    if (k->observe && rc != GPUOP_ECANCELED)
        k->observe(k->observe_arg, verbs[r->verb].name, http_code);
    if (k->fatal && rc == GPUOP_ETLS)
        k->fatal(k->fatal_arg, err);
    r->done(r->arg, rc, body, err);
}

/* ---- the response ----------------------------------------------------- */

static int rc_for_http(long code)
{
    switch (code) {
    case 400:
    case 422:
        return GPUOP_EINVAL;
    case 401:
    case 403:
        return GPUOP_EFORBIDDEN;
    case 404:
        return GPUOP_ENOTFOUND;
    case 409:
        return GPUOP_ECONFLICT;
    case 410:
        return GPUOP_EGONE;
    default:
        return GPUOP_EHTTP;
    }
}

/* Fills err from a non-2xx response: a Kubernetes Status when the body
 * (st, borrowed: the body parsed, or NULL) is one, else the first bytes of
 * the raw body, printable characters only. */
static void decode_error(const struct gpuop_kube_req *r, long code, const json_t *st,
                         struct gpuop_err *err)
{
    int rc = rc_for_http(code);
    gpuop_err_set(err, rc, NULL, "HTTP %ld", code);
    err->http_code = code;
    const char *reason = json_string_value(json_object_get(st, "reason"));
    const char *msg = json_string_value(json_object_get(st, "message"));
    if (json_is_object(st) && (reason || msg)) {
        snprintf(err->reason, sizeof(err->reason), "%s", reason ? reason : "");
        if (msg)
            snprintf(err->message, sizeof(err->message), "%s", msg);
        json_t *fields = json_object_get(json_object_get(st, "details"), "causes");
        const char *field = json_string_value(json_object_get(json_array_get(fields, 0), "field"));
        if (field)
            snprintf(err->field, sizeof(err->field), "%s", field);
    } else if (r->resp.len) {
        char snip[ERROR_SNIPPET + 1];
        size_t n = 0;
        for (size_t i = 0; i < r->resp.len && n < ERROR_SNIPPET; i++) {
            unsigned char c = (unsigned char)r->resp.data[i];
            snip[n++] = (c >= 0x20 && c < 0x7f) ? (char)c : ' ';
        }
        snip[n] = '\0';
        snprintf(err->message, sizeof(err->message), "HTTP %ld: %s", code, snip);
    }
}

/* A transfer curl reports finished. */
static void complete(struct gpuop_kube_req *r, CURLcode res)
{
    struct gpuop_kube *k = r->k;
    if (r->in_multi) {
        curl_multi_remove_handle(k->multi, r->easy);
        r->in_multi = false;
    }
    if (r->finished) { /* cancelled earlier from inside a callback */
        req_free(r);
        return;
    }
    struct gpuop_err err = {0};
    long code = 0;
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
    json_t *body = NULL;
    int rc = 0;
    if (r->abort_rc) {
        rc = r->abort_rc;
        if (rc == GPUOP_ETOOBIG)
            gpuop_err_set(&err, rc, NULL, "response body over %zu bytes", r->resp.max);
        else
            gpuop_err_set(&err, rc, NULL, "transfer stopped: %s", gpuop_strerror(rc));
        err.http_code = code;
    } else if (res != CURLE_OK) {
        bool tls = tls_verification_failed(res);
        rc = gpuop_err_set(&err, tls ? GPUOP_ETLS : GPUOP_ETRANSPORT, NULL, "%s: %s",
                           curl_easy_strerror(res), r->errbuf[0] ? r->errbuf : "no detail");
        snprintf(err.reason, sizeof(err.reason), "%s",
                 tls                               ? "TLSVerification"
                 : res == CURLE_OPERATION_TIMEDOUT ? "Timeout"
                                                   : "Transport");
        err.http_code = code;
    } else if (code >= 200 && code < 300) {
        json_error_t jerr;
        if (!r->on_data && r->resp.len &&
            !(body = gpuop_jsonstrip_load(r->resp.data, r->resp.len, r->cut, r->ncut, 0, &jerr)))
            rc = gpuop_err_set(&err, GPUOP_EPARSE, NULL,
                               "the HTTP %ld response is not JSON: %s (line %d, column %d)", code,
                               jerr.text, jerr.line, jerr.column);
        err.http_code = code;
    } else {
        /* parsed once: the Status for err, and the body done is given */
        body = r->resp.len ? json_loadb(r->resp.data, r->resp.len, 0, NULL) : NULL;
        decode_error(r, code, body, &err);
        rc = err.rc;
    }
    finish(r, rc, body, &err, code);
    json_decref(body);
    req_free(r);
}

static size_t on_write(char *p, size_t size, size_t nmemb, void *userp)
{
    struct gpuop_kube_req *r = userp;
    size_t n = size * nmemb;
    if (r->finished)
        return 0; /* cancelled: abort */
    if (!r->status_seen) {
        r->status_seen = true;
        long code = 0;
        curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
        r->stream_ok = r->on_data && code >= 200 && code < 300;
    }
    if (r->stream_ok) {
        int rc = r->on_data(r->arg, p, n);
        if (rc < 0) {
            if (!r->finished)
                r->abort_rc = rc;
            return 0;
        }
        return r->finished ? 0 : n;
    }
    int rc = gpuop_buf_append(&r->resp, p, n);
    if (rc) {
        r->abort_rc = rc;
        return 0;
    }
    return n;
}

/* ---- curl <-> libuv --------------------------------------------------- */

static void handle_gone(struct gpuop_kube *k);

static void sock_closed(uv_handle_t *h)
{
    struct sock *s = h->data;
    struct gpuop_kube *k = s->k;
    free(s);
    handle_gone(k);
}

static void sock_close(struct sock *s)
{
    gpuop_list_remove(&s->link);
    uv_poll_stop(&s->poll);
    uv_close((uv_handle_t *)&s->poll, sock_closed);
}

static void run_socket_action(struct gpuop_kube *k, curl_socket_t fd, int flags)
{
    int running = 0;
    k->in_curl++;
    curl_multi_socket_action(k->multi, fd, flags, &running);
    k->in_curl--;
    check_multi_info(k);
}

static void on_poll(uv_poll_t *h, int status, int events)
{
    struct sock *s = h->data;
    int flags = 0;
    if (status < 0)
        flags = CURL_CSELECT_ERR; /* UV_EBADF and friends */
    else {
        if (events & UV_READABLE)
            flags |= CURL_CSELECT_IN;
        if (events & UV_WRITABLE)
            flags |= CURL_CSELECT_OUT;
    }
    run_socket_action(s->k, s->fd, flags); /* s may be closed after this */
}

static int on_curl_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
    struct gpuop_kube *k = userp;
    struct sock *s = socketp;
    if (what == CURL_POLL_REMOVE) {
        if (s) { /* curl may remove a socket it never announced: s is NULL then */
            curl_multi_assign(k->multi, fd, NULL);
            sock_close(s);
        }
        return 0;
    }
    if (k->torn_down)
        return -1;
    if (!s) {
        s = calloc(1, sizeof(*s));
        if (!s)
            return -1;
        if (uv_poll_init_socket(k->loop, &s->poll, fd) != 0) {
            free(s);
            return -1;
        }
        s->fd = fd;
        s->k = k;
        s->poll.data = s;
        gpuop_list_push(&k->socks, &s->link);
        k->open_handles++;
        curl_multi_assign(k->multi, fd, s);
    }
    int ev = 0;
    if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
        ev |= UV_READABLE;
    if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
        ev |= UV_WRITABLE;
    if (uv_poll_start(&s->poll, ev, on_poll) != 0)
        return -1;
    return 0;
}

static void on_timer(uv_timer_t *t)
{
    run_socket_action(t->data, CURL_SOCKET_TIMEOUT, 0);
}

static int on_curl_timer(CURLM *multi, long timeout_ms, void *userp)
{
    struct gpuop_kube *k = userp;
    if (timeout_ms < 0)
        uv_timer_stop(&k->timer);
    else if (!k->torn_down)
        uv_timer_start(&k->timer, on_timer, (uint64_t)timeout_ms, 0);
    return 0;
}

static void check_multi_info(struct gpuop_kube *k)
{
    CURLMsg *m;
    int left;
    while (!k->torn_down && (m = curl_multi_info_read(k->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        struct gpuop_kube_req *r = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
        if (r)
            complete(r, m->data.result);
    }
}

/* ---- teardown --------------------------------------------------------- */

/* One libuv handle finished closing; the last one after teardown frees k
 * and runs the close callback. */
static void handle_gone(struct gpuop_kube *k)
{
    if (--k->open_handles > 0 || !k->torn_down)
        return;
    void (*cb)(void *) = k->close_cb;
    void *arg = k->close_arg;
    wipe_free(k->token);
    gpuop_kubeconfig_free(&k->cfg);
    free(k);
    if (cb)
        cb(arg);
}

static void on_handle_closed(uv_handle_t *h)
{
    handle_gone(h->data);
}

static void teardown(struct gpuop_kube *k)
{
    while (!gpuop_list_empty(&k->reqs))
        req_free(REQ_FIRST(k)); /* all finished by gpuop_kube_close */
    /* close the polls first; curl's removes during cleanup then find NULL */
    while (!gpuop_list_empty(&k->socks)) {
        struct sock *s = SOCK_FIRST(k);
        curl_multi_assign(k->multi, s->fd, NULL);
        sock_close(s);
    }
    k->torn_down = true;
    curl_multi_cleanup(k->multi);
    k->multi = NULL;
    uv_timer_stop(&k->timer);
    uv_close((uv_handle_t *)&k->timer, on_handle_closed);
    uv_close((uv_handle_t *)&k->kick, on_handle_closed);
}

static void on_kick(uv_timer_t *t)
{
    struct gpuop_kube *k = t->data;
    if (k->closing) {
        teardown(k);
        return;
    }
    struct gpuop_kube_req *r = REQ_FIRST(k), *next;
    for (; r; r = next) {
        next = REQ_NEXT(r);
        if (r->finished) {
            req_free(r);
        } else if (!r->in_multi) {
            CURLMcode mc = curl_multi_add_handle(k->multi, r->easy);
            if (mc == CURLM_OK) {
                r->in_multi = true;
            } else {
                struct gpuop_err err;
                gpuop_err_set(&err, GPUOP_ETRANSPORT, NULL, "cannot start request: %s",
                              curl_multi_strerror(mc));
                err.http_code = 0;
                finish(r, GPUOP_ETRANSPORT, NULL, &err, 0);
                /* next may have been freed by a done callback that cancelled
                 * it: restart from the head (freed ones are gone, added ones
                 * are skipped) */
                req_free(r);
                next = k->closing ? NULL : REQ_FIRST(k);
            }
        }
    }
}

static void schedule_kick(struct gpuop_kube *k)
{
    if (!k->torn_down && !uv_is_active((uv_handle_t *)&k->kick))
        uv_timer_start(&k->kick, on_kick, 0, 0);
}

/* ---- public API ------------------------------------------------------- */

/* Once per process: every request would show the token to anyone on the
 * path. Not refused: a lab or a local proxy on loopback may do it on
 * purpose. */
static void warn_plain_token(const char *server)
{
    static bool warned;
    if (warned)
        return;
    warned = true;
    gpuop_warn(NULL,
               "the API server %s is plain http://: the bearer token goes out unencrypted with "
               "every request",
               server);
}

int gpuop_kube_new(uv_loop_t *loop, const struct gpuop_kubeconfig *cfg, struct gpuop_kube **out,
                   struct gpuop_err *err)
{
    *out = NULL;
    if (!cfg || !cfg->server)
        return gpuop_err_set(err, GPUOP_EINVAL, "server", "no API server address");
    struct gpuop_kube *k = calloc(1, sizeof(*k));
    if (!k)
        return gpuop_err_set(err, GPUOP_ENOMEM, NULL, NULL);
    if (gpuop_kubeconfig_copy(cfg, &k->cfg)) {
        free(k);
        return gpuop_err_set(err, GPUOP_ENOMEM, NULL, NULL);
    }
    struct opt_check oc = {.err = err};
    k->multi = curl_multi_init();
    if (k->multi) {
        SET_MULTI(&oc, k->multi, CURLMOPT_SOCKETFUNCTION, on_curl_socket);
        SET_MULTI(&oc, k->multi, CURLMOPT_SOCKETDATA, k);
        SET_MULTI(&oc, k->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
        SET_MULTI(&oc, k->multi, CURLMOPT_TIMERDATA, k);
        /* Connections kept open, in use or idle (curl counts both). curl's
         * default, four per transfer in flight, left 20 TLS connections
         * open after a 5,000-node rollout, some 40 KB each; the watches
         * hold theirs, and a quiet controller needs one more for its Lease. */
        SET_MULTI(&oc, k->multi, CURLMOPT_MAXCONNECTS, (long)MAX_CONNECTIONS);
    }
    if (!k->multi || oc.rc) {
        int rc = k->multi ? oc.rc : gpuop_err_set(err, GPUOP_ENOMEM, NULL, NULL);
        if (k->multi)
            curl_multi_cleanup(k->multi);
        gpuop_kubeconfig_free(&k->cfg);
        free(k);
        return rc;
    }
    if ((cfg->token || cfg->token_file) && !strncasecmp(cfg->server, "http://", 7))
        warn_plain_token(cfg->server);
    k->loop = loop;
    k->max_body = GPUOP_KUBE_MAX_BODY;
    k->token_ttl_ms = TOKEN_TTL_MS;
    uv_timer_init(loop, &k->timer);
    uv_timer_init(loop, &k->kick);
    k->timer.data = k;
    k->kick.data = k;
    k->open_handles = 2;
    *out = k;
    return 0;
}

void gpuop_kube_set_observer(struct gpuop_kube *k, gpuop_kube_observe_cb cb, void *arg)
{
    k->observe = cb;
    k->observe_arg = arg;
}

void gpuop_kube_lib_versions(const char **curl, const char **tls)
{
    const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
    *curl = v && v->version ? v->version : "unknown";
    *tls = v && v->ssl_version ? v->ssl_version : "none";
}

void gpuop_kube_set_fatal(struct gpuop_kube *k, gpuop_kube_fatal_cb cb, void *arg)
{
    k->fatal = cb;
    k->fatal_arg = arg;
}

void gpuop_kube_set_max_body(struct gpuop_kube *k, size_t max)
{
    k->max_body = max ? max : GPUOP_KUBE_MAX_BODY;
}

void gpuop_kube_set_token_ttl(struct gpuop_kube *k, uint64_t ms)
{
    k->token_ttl_ms = ms;
    k->token_read_ms = 0;
}

/* The bearer token for a new request (borrowed; NULL: none). Re-reads the
 * token file when the copy is older than token_ttl; keeps the old token if
 * the file cannot be read for a moment. */
static const char *current_token(struct gpuop_kube *k, struct gpuop_err *err, int *rc)
{
    *rc = 0;
    if (k->cfg.token)
        return k->cfg.token;
    if (!k->cfg.token_file)
        return NULL;
    uint64_t now = gpuop_clock_ms();
    if (k->token && now - k->token_read_ms < k->token_ttl_ms && k->token_ttl_ms > 0)
        return k->token;
    FILE *f = fopen(k->cfg.token_file, "rb");
    char *buf = malloc(MAX_TOKEN + 1);
    size_t n = 0;
    bool ok = f && buf;
    if (ok) {
        n = fread(buf, 1, MAX_TOKEN + 1, f);
        ok = !ferror(f) && n <= MAX_TOKEN;
    }
    if (f)
        fclose(f);
    if (ok) {
        while (n && strchr(" \t\r\n", buf[n - 1]))
            n--;
        size_t i = 0;
        while (i < n && strchr(" \t\r\n", buf[i]))
            i++;
        memmove(buf, buf + i, n - i);
        buf[n - i] = '\0';
        ok = buf[0] != '\0' && !strpbrk(buf, "\r\n");
    }
    if (ok) {
        wipe_free(k->token);
        k->token = buf;
        k->token_read_ms = now;
        return k->token;
    }
    if (buf) {
        explicit_bzero(buf, MAX_TOKEN + 1);
        free(buf);
    }
    if (k->token)
        return k->token; /* keep the last good one */
    *rc = gpuop_err_set(err, GPUOP_ECONFIG, "tokenFile", "cannot read the token file %s",
                        k->cfg.token_file);
    return NULL;
}

/* The transfer's own options: where, how long, where the bytes go. */
static void set_transfer(struct opt_check *oc, struct gpuop_kube_req *r, long timeout_ms)
{
    CURL *e = r->easy;
    SET_EASY(oc, e, CURLOPT_URL, r->url);
    SET_EASY(oc, e, CURLOPT_PRIVATE, r);
    SET_EASY(oc, e, CURLOPT_ERRORBUFFER, r->errbuf);
    SET_EASY(oc, e, CURLOPT_NOSIGNAL, 1L);
    SET_EASY(oc, e, CURLOPT_WRITEFUNCTION, on_write);
    SET_EASY(oc, e, CURLOPT_WRITEDATA, r);
    SET_EASY(oc, e, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
    SET_EASY(oc, e, CURLOPT_TIMEOUT_MS, timeout_ms);
    SET_EASY(oc, e, CURLOPT_FOLLOWLOCATION, 0L);
    SET_EASY(oc, e, CURLOPT_PROTOCOLS_STR, "http,https");
    SET_EASY(oc, e, CURLOPT_ACCEPT_ENCODING, NULL);
    /* The smallest upload buffer curl allows (default 64 KB): an apply or
     * status body is a few KB, and every request in flight holds one. */
    SET_EASY(oc, e, CURLOPT_UPLOAD_BUFFERSIZE, UPLOAD_BUFFER);
    if (r->on_data) {
        SET_EASY(oc, e, CURLOPT_TCP_KEEPALIVE, 1L);
        SET_EASY(oc, e, CURLOPT_TCP_KEEPIDLE, KEEPALIVE_IDLE_S);
        SET_EASY(oc, e, CURLOPT_TCP_KEEPINTVL, KEEPALIVE_INTVL_S);
    }
}

/* TLS from the kubeconfig: the CA, our certificate and key, as blobs
 * (curl copies none: they live as long as the client) or files. */
static void set_tls(struct opt_check *oc, CURL *e, const struct gpuop_kubeconfig *c)
{
    if (c->insecure) {
        SET_EASY(oc, e, CURLOPT_SSL_VERIFYPEER, 0L);
        SET_EASY(oc, e, CURLOPT_SSL_VERIFYHOST, 0L);
    } else if (c->ca.data) {
        struct curl_blob b = {.data = c->ca.data, .len = c->ca.len, .flags = CURL_BLOB_NOCOPY};
        SET_EASY(oc, e, CURLOPT_CAINFO_BLOB, &b);
    } else if (c->ca_file) {
        SET_EASY(oc, e, CURLOPT_CAINFO, c->ca_file);
    }
    if (c->cert.data) {
        struct curl_blob b = {.data = c->cert.data, .len = c->cert.len, .flags = CURL_BLOB_NOCOPY};
        SET_EASY(oc, e, CURLOPT_SSLCERT_BLOB, &b);
    } else if (c->cert_file) {
        SET_EASY(oc, e, CURLOPT_SSLCERT, c->cert_file);
    }
    if (c->cert.data || c->cert_file)
        SET_EASY(oc, e, CURLOPT_SSLCERTTYPE, "PEM");
    if (c->key.data) {
        struct curl_blob b = {.data = c->key.data, .len = c->key.len, .flags = CURL_BLOB_NOCOPY};
        SET_EASY(oc, e, CURLOPT_SSLKEY_BLOB, &b);
    } else if (c->key_file) {
        SET_EASY(oc, e, CURLOPT_SSLKEY, c->key_file);
    }
    if (c->key.data || c->key_file)
        SET_EASY(oc, e, CURLOPT_SSLKEYTYPE, "PEM");
}

/* The method, and the body when there is one. */
static void set_method(struct opt_check *oc, struct gpuop_kube_req *r)
{
    CURL *e = r->easy;
    const char *method = verbs[r->verb].method;
    if (r->body) {
        SET_EASY(oc, e, CURLOPT_POSTFIELDS, r->body);
        SET_EASY(oc, e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
        if (r->verb != GPUOP_KUBE_POST)
            SET_EASY(oc, e, CURLOPT_CUSTOMREQUEST, method);
    } else if (!strcmp(method, "GET")) {
        SET_EASY(oc, e, CURLOPT_HTTPGET, 1L);
    } else {
        SET_EASY(oc, e, CURLOPT_CUSTOMREQUEST, method);
    }
}

static int add_header(struct curl_slist **l, const char *h)
{
    struct curl_slist *n = curl_slist_append(*l, h);
    if (!n)
        return GPUOP_ENOMEM;
    *l = n;
    return 0;
}

/* The request's headers into r->headers, the bearer token's among them. */
static int add_headers(struct gpuop_kube *k, struct gpuop_kube_req *r,
                       const struct gpuop_kube_opts *o, struct gpuop_err *err)
{
    const char *content_type = o->content_type;
    char h[256], accept[256];
    int rc;
    snprintf(accept, sizeof(accept), "Accept: %.200s", o->accept ? o->accept : GPUOP_CT_JSON);
    if ((rc = add_header(&r->headers, accept)) ||
        (rc = add_header(&r->headers, "User-Agent: gpuop/" GPUOP_VERSION)) ||
        (rc = add_header(&r->headers, "Expect:")))
        return gpuop_err_set(err, rc, NULL, NULL);
    if (r->body) {
        snprintf(h, sizeof(h), "Content-Type: %.200s", content_type ? content_type : GPUOP_CT_JSON);
        if ((rc = add_header(&r->headers, h)))
            return gpuop_err_set(err, rc, NULL, NULL);
    }
    const char *tok = current_token(k, err, &rc);
    if (rc || !tok)
        return rc;
    size_t n = strlen(tok) + sizeof("Authorization: Bearer ");
    char *a = malloc(n);
    if (!a)
        return gpuop_err_set(err, GPUOP_ENOMEM, NULL, NULL);
    snprintf(a, n, "Authorization: Bearer %s", tok);
    rc = add_header(&r->headers, a);
    explicit_bzero(a, n);
    free(a);
    return rc ? gpuop_err_set(err, rc, NULL, NULL) : 0;
}

static int setup_easy(struct gpuop_kube *k, struct gpuop_kube_req *r,
                      const struct gpuop_kube_opts *o, long timeout_ms, struct gpuop_err *err)
{
    struct opt_check oc = {.err = err};
    set_transfer(&oc, r, timeout_ms);
    set_tls(&oc, r->easy, &k->cfg);
    set_method(&oc, r);
    if (oc.rc)
        return oc.rc;
    int rc = add_headers(k, r, o, err);
    if (rc)
        return rc;
    SET_EASY(&oc, r->easy, CURLOPT_HTTPHEADER, r->headers);
    return oc.rc;
}

/* Who hears of a request: on_data (streams only), done, and their arg. */
struct handlers {
    gpuop_kube_data_cb on_data;
    gpuop_kube_done_cb done;
    void *arg;
};

/* A request's arguments are usable: a verb, a path that is one (no space
 * or line break), a watch only as a stream, someone to tell. */
static bool opts_ok(const struct gpuop_kube_opts *o, const struct handlers *h)
{
    return o && (unsigned)o->verb < NVERBS && o->path && o->path[0] == '/' &&
           !strpbrk(o->path, " \r\n") && h->done && (o->verb != GPUOP_KUBE_WATCH || h->on_data) &&
           (!h->on_data || (o->verb == GPUOP_KUBE_GET || o->verb == GPUOP_KUBE_WATCH)) &&
           (!h->on_data || !o->body);
}

/* r's cut: managedFields, then digested (NULL-terminated, or NULL),
 * copied. GPUOP_EINVAL beyond GPUOP_KUBE_DIGESTED_MAX or _KEYS. */
static int cut_paths(struct gpuop_kube_req *r, const char *const *digested)
{
    r->cut[0] = RESPONSE_CUT;
    r->ncut = 1;
    size_t n = 0, bytes = 0;
    for (; digested && digested[n]; n++)
        bytes += strlen(digested[n]) + 1;
    if (n == 0)
        return 0;
    if (n > GPUOP_KUBE_DIGESTED_MAX)
        return GPUOP_EINVAL;
    char *p = r->cut_keys = malloc(bytes);
    if (!p)
        return GPUOP_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(digested[i]);
        memcpy(p, digested[i], len + 1);
        struct gpuop_jsonstrip_path *x = &r->cut[r->ncut++];
        if (gpuop_jsonstrip_split(p, NULL, GPUOP_KUBE_DIGESTED_KEYS, x) < 0)
            return GPUOP_EINVAL;
        x->digest = true;
        p += len + 1;
    }
    return 0;
}

static int start(struct gpuop_kube *k, const struct gpuop_kube_opts *o, const struct handlers *h,
                 struct gpuop_kube_req **out, struct gpuop_err *err)
{
    if (out)
        *out = NULL;
    if (k->closing)
        return gpuop_err_set(err, GPUOP_ECANCELED, NULL, "the client is closing");
    if (!opts_ok(o, h))
        return gpuop_err_set(err, GPUOP_EINVAL, NULL, "bad request arguments");
    struct gpuop_kube_req *r = calloc(1, sizeof(*r));
    if (!r)
        return gpuop_err_set(err, GPUOP_ENOMEM, NULL, NULL);
    r->k = k;
    r->verb = o->verb;
    r->done = h->done;
    r->on_data = h->on_data;
    r->arg = h->arg;
    gpuop_buf_init(&r->resp, RESP_INITIAL_CAP,
                   h->on_data && k->max_body > MAX_ERROR_BODY ? MAX_ERROR_BODY : k->max_body);
    size_t ulen = strlen(k->cfg.server) + strlen(o->path) + 1;
    r->url = malloc(ulen);
    r->easy = curl_easy_init();
    if (o->body) {
        r->body_len = o->body_len ? o->body_len : strlen(o->body);
        r->body = malloc(r->body_len + 1);
        if (r->body) {
            memcpy(r->body, o->body, r->body_len);
            r->body[r->body_len] = '\0';
        }
    }
    req_link(k, r);
    int rc = cut_paths(r, o->digested);
    if (rc < 0) {
        gpuop_err_set(err, rc, NULL, rc == GPUOP_EINVAL ? "bad digested members" : NULL);
        goto fail;
    }
    if (!r->url || !r->easy || (o->body && !r->body)) {
        rc = gpuop_err_set(err, GPUOP_ENOMEM, NULL, NULL);
        goto fail;
    }
    snprintf(r->url, ulen, "%s%s", k->cfg.server, o->path);
    long timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : h->on_data ? 0 : DEFAULT_TIMEOUT_MS;
    rc = setup_easy(k, r, o, timeout_ms, err);
    if (rc)
        goto fail;
    if (k->in_curl) {
        schedule_kick(k); /* added on the next loop iteration */
    } else {
        CURLMcode mc = curl_multi_add_handle(k->multi, r->easy);
        if (mc != CURLM_OK) {
            rc = gpuop_err_set(err, GPUOP_ETRANSPORT, NULL, "cannot start request: %s",
                               curl_multi_strerror(mc));
            goto fail;
        }
        r->in_multi = true;
    }
    if (out)
        *out = r;
    return 0;
fail:
    r->finished = true;
    req_free(r); /* not in the multi: safe even inside a callback */
    return rc;
}

int gpuop_kube_request(struct gpuop_kube *k, const struct gpuop_kube_opts *o,
                       gpuop_kube_done_cb done, void *arg, struct gpuop_kube_req **out)
{
    return start(k, o, &(struct handlers){.done = done, .arg = arg}, out, NULL);
}

int gpuop_kube_stream(struct gpuop_kube *k, const struct gpuop_kube_opts *o,
                      gpuop_kube_data_cb on_data, gpuop_kube_done_cb done, void *arg,
                      struct gpuop_kube_req **out)
{
    if (!on_data)
        return GPUOP_EINVAL;
    return start(k, o, &(struct handlers){.on_data = on_data, .done = done, .arg = arg}, out, NULL);
}

void gpuop_kube_cancel(struct gpuop_kube_req *r)
{
    if (!r || r->finished)
        return;
    struct gpuop_err err;
    gpuop_err_clear(&err);
    gpuop_err_set(&err, GPUOP_ECANCELED, NULL, "request canceled");
    finish(r, GPUOP_ECANCELED, NULL, &err, 0);
    req_release(r);
}

struct call_state {
    bool done;
    int rc;
    json_t *body;
    struct gpuop_err err;
};

static void call_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct call_state *cs = arg;
    cs->done = true;
    cs->rc = rc;
    cs->body = json_incref(body);
    if (err)
        cs->err = *err;
}

int gpuop_kube_call(struct gpuop_kube *k, const struct gpuop_kube_opts *o, json_t **out,
                    struct gpuop_err *err)
{
    if (out)
        *out = NULL;
    struct call_state cs = {0};
    struct gpuop_kube_req *r = NULL;
    int rc = start(k, o, &(struct handlers){.done = call_done, .arg = &cs}, &r, err);
    if (rc)
        return rc;
    while (!cs.done) {
        if (uv_run(k->loop, UV_RUN_ONCE) == 0 && !cs.done) {
            gpuop_kube_cancel(r); /* nothing left to wait for: cannot happen */
            break;
        }
    }
    if (err)
        *err = cs.err;
    if (out)
        *out = cs.body;
    else
        json_decref(cs.body);
    return cs.rc;
}

void gpuop_kube_close(struct gpuop_kube *k, void (*cb)(void *arg), void *arg)
{
    if (!k || k->closing)
        return;
    k->closing = true;
    k->close_cb = cb;
    k->close_arg = arg;
    struct gpuop_err err;
    gpuop_err_clear(&err);
    gpuop_err_set(&err, GPUOP_ECANCELED, NULL, "client closed");
    /* done callbacks may cancel others: restart from the head each time */
    for (;;) {
        struct gpuop_kube_req *r = REQ_FIRST(k);
        while (r && r->finished)
            r = REQ_NEXT(r);
        if (!r)
            break;
        finish(r, GPUOP_ECANCELED, NULL, &err, 0);
    }
    uv_timer_stop(&k->kick);
    uv_timer_start(&k->kick, on_kick, 0, 0); /* teardown outside any callback */
}

/* ---- helpers ---------------------------------------------------------- */

static bool unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

/* Writes s at out + n, percent-encoded when esc, and returns the length
 * after it; with out NULL it only counts (the first of two passes). */
static size_t put(char *out, size_t n, const char *s, bool esc)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (!esc || unreserved(c)) {
            if (out)
                out[n] = (char)c;
            n++;
        } else {
            if (out) {
                out[n] = '%';
                out[n + 1] = hex[c >> 4];
                out[n + 2] = hex[c & 15];
            }
            n += 3;
        }
    }
    return n;
}

char *gpuop_kube_escape(const char *s)
{
    if (strlen(s) > (SIZE_MAX - 1) / 3)
        return NULL;
    size_t n = put(NULL, 0, s, true);
    char *o = malloc(n + 1);
    if (!o)
        return NULL;
    put(o, 0, s, true);
    o[n] = '\0';
    return o;
}

/* One pass of gpuop_kube_path: see put. */
static size_t put_path(char *out, const struct gpuop_kube_ref *ref,
                       const struct gpuop_kube_param *params, size_t nparams)
{
    const char *gv = ref->group_version && *ref->group_version ? ref->group_version : "v1";
    size_t n = put(out, 0, strcmp(gv, "v1") ? "/apis/" : "/api/", false);
    n = put(out, n, gv, false); /* "group/version": its slash is the path's */
    if (ref->ns && *ref->ns) {
        n = put(out, n, "/namespaces/", false);
        n = put(out, n, ref->ns, true);
    }
    n = put(out, n, "/", false);
    n = put(out, n, ref->resource, true);
    if (ref->name && *ref->name) {
        n = put(out, n, "/", false);
        n = put(out, n, ref->name, true);
        if (ref->subresource && *ref->subresource) {
            n = put(out, n, "/", false);
            n = put(out, n, ref->subresource, true);
        }
    }
    const char *sep = "?";
    for (size_t i = 0; i < nparams; i++) {
        if (!params[i].key || !params[i].value)
            continue;
        n = put(out, n, sep, false);
        n = put(out, n, params[i].key, true);
        n = put(out, n, "=", false);
        n = put(out, n, params[i].value, true);
        sep = "&";
    }
    return n;
}

char *gpuop_kube_path(const struct gpuop_kube_ref *ref, const struct gpuop_kube_param *params,
                      size_t nparams)
{
    if (!ref || !ref->resource || !*ref->resource)
        return NULL;
    size_t n = put_path(NULL, ref, params, nparams);
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    put_path(out, ref, params, nparams);
    out[n] = '\0';
    return out;
}
