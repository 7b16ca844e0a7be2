/*
 * fakeapi.h - a scripted, fault-injecting HTTP/1.1 server for unit tests.
 * It runs in the test process, on the test's libuv loop, on 127.0.0.1 with
 * an ephemeral port, so a client under test and the server share one
 * thread and a test can interleave them deterministically.
 *
 * One request per connection (responses carry "Connection: close"). Every
 * request is recorded (method, path with query, a few headers, the body)
 * before the test's handler is called; the handler then answers with a
 * whole response, or scripts a streaming body step by step (each step after
 * a delay), or does nothing (the connection stays open until the client
 * goes or the server stops), or cuts the connection mid-body.
 *
 * Limits: a request head is at most FAKEAPI_MAX_HEAD bytes and a request
 * body at most FAKEAPI_MAX_BODY; larger requests get 431/413 and are not
 * handed to the handler. The test owns everything; nothing here asserts,
 * so it links into any test program.
 */
#ifndef GPUOP_TEST_FAKEAPI_H
#define GPUOP_TEST_FAKEAPI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#define FAKEAPI_MAX_HEAD (16u << 10)
#define FAKEAPI_MAX_BODY (1u << 20)

struct fakeapi;
struct fakeapi_conn;

/* One recorded request; owned by the server, valid until it is freed. */
struct fakeapi_request {
    size_t index;     /* order of arrival, from 0 */
    char method[16];  /* "GET" */
    char path[4096];  /* with the query, as sent (still escaped) */
    char auth[256];   /* header values, "" when absent */
    char ctype[128];  /* Content-Type */
    char ua[128];     /* User-Agent */
    char accept[128]; /* Accept */
    char expect[64];  /* Expect */
    char *body;       /* NUL-terminated copy */
    size_t body_len;
    /* what happened on its connection */
    size_t sent;       /* response bytes written (head and framing included) */
    bool client_gone;  /* the client closed or reset before the server did */
    bool server_close; /* the server closed it (end, cut or stop) */
};

typedef void (*fakeapi_handler)(void *arg, struct fakeapi_conn *c, const struct fakeapi_request *r);

/* Starts listening. *out is new; end it with fakeapi_stop. Returns 0 or a
 * negative libuv error. */
int fakeapi_start(uv_loop_t *loop, fakeapi_handler handle, void *arg, struct fakeapi **out);

/* Closes every connection and the listener; the server is freed (records
 * too) once libuv has closed its handles, so run the loop afterwards. */
void fakeapi_stop(struct fakeapi *s);

/* Stops accepting (connections are then refused) or accepts again, on the
 * same port. Returns 0 or a negative libuv error. */
int fakeapi_listen(struct fakeapi *s, bool on);

int fakeapi_port(const struct fakeapi *s);
/* "http://127.0.0.1:<port>"; borrowed. */
const char *fakeapi_url(const struct fakeapi *s);

size_t fakeapi_nreq(const struct fakeapi *s);
/* Borrowed; NULL when i is out of range. */
const struct fakeapi_request *fakeapi_req(const struct fakeapi *s, size_t i);
const struct fakeapi_request *fakeapi_last(const struct fakeapi *s);
/* Connections open now. */
size_t fakeapi_open_conns(const struct fakeapi *s);

/* The raw (still escaped) value of query parameter name in r->path into
 * out; false when absent or longer than cap - 1. */
bool fakeapi_query(const struct fakeapi_request *r, const char *name, char *out, size_t cap);

/* The request a connection serves (borrowed). */
const struct fakeapi_request *fakeapi_conn_request(const struct fakeapi_conn *c);

/* ---- answers (call from the handler, or later while the conn lives) ---- */

/* A whole response with Content-Length; the connection closes after it. */
void fakeapi_respond(struct fakeapi_conn *c, int code, const char *ctype, const char *body);
/* A Kubernetes Status response: {"kind":"Status",...,"code":code}. */
void fakeapi_respond_status(struct fakeapi_conn *c, int code, const char *reason,
                            const char *message);

enum fakeapi_framing {
    FAKEAPI_CHUNKED,         /* Transfer-Encoding: chunked */
    FAKEAPI_CLOSE_DELIMITED, /* no length: the body ends when the server closes */
    FAKEAPI_LENGTH           /* Content-Length: declared_len */
};

/* Writes a streaming response head now. declared_len is used with
 * FAKEAPI_LENGTH only. */
void fakeapi_stream_begin(struct fakeapi_conn *c, int code, enum fakeapi_framing framing,
                          size_t declared_len);

/* Scripted steps run in order; each waits delay_ms after the previous one
 * (0: the next loop iteration). */

/* Body bytes: one chunk when chunked, as they are otherwise. Copied. */
void fakeapi_stream_send(struct fakeapi_conn *c, uint64_t delay_ms, const char *data, size_t len);
void fakeapi_stream_sendf(struct fakeapi_conn *c, uint64_t delay_ms, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Bytes as they are, whatever the framing (for hand-made chunking). */
void fakeapi_stream_raw(struct fakeapi_conn *c, uint64_t delay_ms, const char *data, size_t len);
/* Ends the body properly (the last chunk when chunked) and closes. */
void fakeapi_stream_end(struct fakeapi_conn *c, uint64_t delay_ms);
/* Closes without ending the body: a chunked or length-framed body is then
 * truncated; a close-delimited one simply ends. Pending writes go first. */
void fakeapi_cut(struct fakeapi_conn *c, uint64_t delay_ms);

/* Calls fn(c, arg) every interval_ms (first after interval_ms) until the
 * connection closes; fn may send with fakeapi_stream_send(c, 0, ...) or
 * fakeapi_write. */
void fakeapi_every(struct fakeapi_conn *c, uint64_t interval_ms,
                   void (*fn)(struct fakeapi_conn *c, void *arg), void *arg);

/* Writes body bytes now (chunk-framed when chunked), bypassing the script. */
void fakeapi_write(struct fakeapi_conn *c, const char *data, size_t len);

#endif
