/*
 * kube.h - an asynchronous Kubernetes API client: libcurl's multi_socket
 * interface driven by a libuv loop, so no thread ever blocks on the network.
 *
 * Every request completes exactly once through its done callback, also when
 * it fails to connect, times out, or is cancelled (rc GPUOP_ECANCELED).
 * Responses are bounded (GPUOP_KUBE_MAX_BODY); a Kubernetes Status in an
 * error response is decoded into the gpuop_err (http_code, reason, message).
 * The bearer token is re-read from its file about once a minute so rotated
 * service-account tokens are picked up; a token for a plain http:// server
 * gets a warning, once per process.
 */
#ifndef GPUOP_KUBE_H
#define GPUOP_KUBE_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include <uv.h>

#include "gpuop/error.h"
#include "gpuop/kubeconfig.h"

#define GPUOP_KUBE_MAX_BODY (64u << 20) /* largest response body accepted */
#define GPUOP_CT_JSON       "application/json"
#define GPUOP_CT_APPLY      "application/apply-patch+yaml"
#define GPUOP_CT_MERGE      "application/merge-patch+json"
/* A LIST's Accept for its items' metadata alone (PartialObjectMetadataList,
 * as client-go's metadata client asks), plain JSON from a server that
 * cannot: the caller reads metadata either way. */
#define GPUOP_ACCEPT_METADATA_LIST                                                                 \
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"

struct gpuop_kube;
struct gpuop_kube_req;

/* body: the parsed JSON response (borrowed, valid during the call; NULL when
 * there was none or it was not JSON), without its metadata.managedFields
 * and with the request's digested members as digests on 2xx. err is
 * borrowed; rc == 0 on 2xx. */
typedef void (*gpuop_kube_done_cb)(void *arg, int rc, json_t *body, const struct gpuop_err *err);

/* Streaming data of a 2xx response (a watch): raw transport chunks, borrowed.
 * Return 0 to continue, negative to abort the transfer (done then gets that rc). */
typedef int (*gpuop_kube_data_cb)(void *arg, const char *chunk, size_t len);

/* Observes every finished request (for metrics): verb, HTTP code (0: none). */
typedef void (*gpuop_kube_observe_cb)(void *arg, const char *verb, long http_code);

/* Creates a client on loop with a copy of cfg. *out is new; close with
 * gpuop_kube_close().
 * Process-wide setup is the caller's, done once before the first client:
 * curl_global_init(CURL_GLOBAL_DEFAULT) (libcurl requires it before any
 * other thread exists, so main does it: src/cmd/main.c; a test program in
 * its setup) and signal(SIGPIPE, SIG_IGN) (a peer that closes a socket
 * must not kill the process; curl's CURLOPT_NOSIGNAL leaves it to us). */
int gpuop_kube_new(uv_loop_t *loop, const struct gpuop_kubeconfig *cfg, struct gpuop_kube **out,
                   struct gpuop_err *err);

void gpuop_kube_set_observer(struct gpuop_kube *k, gpuop_kube_observe_cb cb, void *arg);

/* Called with the request's error (borrowed) just before the done callback
 * of every request that failed in a way no retry can fix (rc GPUOP_ETLS:
 * the server's certificate is not trusted, or a certificate of ours is
 * unusable). The informers back off and retry whatever the error; a
 * one-shot command sets this to stop at the first such failure. */
typedef void (*gpuop_kube_fatal_cb)(void *arg, const struct gpuop_err *err);
void gpuop_kube_set_fatal(struct gpuop_kube *k, gpuop_kube_fatal_cb cb, void *arg);

/* What a request does: its HTTP method, and the verb the observer
 * (metrics) counts it under, which is the method but for a watch. The
 * caller says which; nothing is guessed from the path. */
enum gpuop_kube_verb {
    GPUOP_KUBE_GET,   /* an object, or a LIST page (streamed or not) */
    GPUOP_KUBE_WATCH, /* a GET of a watch stream (gpuop_kube_stream only), "WATCH" */
    GPUOP_KUBE_POST,
    GPUOP_KUBE_PUT,
    GPUOP_KUBE_PATCH,
    GPUOP_KUBE_DELETE,
};

/* One request, as its caller describes it. Everything is borrowed for the
 * call only: path and body are copied. */
struct gpuop_kube_opts {
    enum gpuop_kube_verb verb;
    const char *path;         /* with its query: "/api/v1/nodes?limit=500" (gpuop_kube_path) */
    const char *content_type; /* of body; NULL: application/json */
    const char *body;         /* NULL: none */
    size_t body_len;          /* bytes of body; 0: strlen(body) */
    long timeout_ms;          /* the whole transfer; 0: 30 s (a stream: no limit) */
    /* Members of a 2xx body ("status.nodes", NULL-terminated, or NULL)
     * that done sees as a digest of their bytes, as an informer's
     * digested (informer.h): they are not parsed. At most
     * GPUOP_KUBE_DIGESTED_MAX, each of at most GPUOP_KUBE_DIGESTED_KEYS
     * keys (GPUOP_EINVAL otherwise); copied. */
    const char *const *digested;
    const char *accept; /* the Accept header's value; NULL: application/json */
};
#define GPUOP_KUBE_DIGESTED_MAX  2
#define GPUOP_KUBE_DIGESTED_KEYS 4

/* Starts a request. *out (may be NULL) is a borrowed handle valid until
 * done is called. A 2xx response whose body is not JSON is an error
 * (GPUOP_EPARSE, err.http_code set); an empty one gives body NULL. */
int gpuop_kube_request(struct gpuop_kube *k, const struct gpuop_kube_opts *o,
                       gpuop_kube_done_cb done, void *arg, struct gpuop_kube_req **out);

/* Starts a streaming GET (o->verb GPUOP_KUBE_GET or GPUOP_KUBE_WATCH, no
 * body). on_data receives the body of a 2xx response as it arrives; a
 * non-2xx response is collected and reported to done as an error. */
int gpuop_kube_stream(struct gpuop_kube *k, const struct gpuop_kube_opts *o,
                      gpuop_kube_data_cb on_data, gpuop_kube_done_cb done, void *arg,
                      struct gpuop_kube_req **out);

/* Cancels a request that has not completed; its done callback runs with
 * GPUOP_ECANCELED before this returns. Safe from inside on_data. */
void gpuop_kube_cancel(struct gpuop_kube_req *r);

/* Blocking convenience for one-shot commands and tests: runs the loop until
 * the request completes. *out is the new response body (may be NULL). */
int gpuop_kube_call(struct gpuop_kube *k, const struct gpuop_kube_opts *o, json_t **out,
                    struct gpuop_err *err);

/* Cancels everything in flight, closes all libuv handles; cb(arg) runs once
 * everything is closed and the client is freed. Safe from inside any
 * callback of the client. */
void gpuop_kube_close(struct gpuop_kube *k, void (*cb)(void *arg), void *arg);

/* Notes (kube.c):
 * - gpuop_kube_request/_stream return 0 or a negative rc; when they fail,
 *   done is never called. While the client is closing they fail with
 *   GPUOP_ECANCELED.
 * - Starting, cancelling or closing from inside on_data or a done callback
 *   is allowed; a request started from inside on_data begins on the next
 *   loop iteration.
 * - The observer is not called for cancelled requests. verb is the HTTP
 *   method, "WATCH" for GPUOP_KUBE_WATCH.
 * - A bad argument (no path or one without its leading '/', a space or
 *   line break in it, a verb out of range, a watch not streamed) fails
 *   with GPUOP_EINVAL before anything reaches the network; so does an
 *   option libcurl refuses (err names it). */

/* Tuning for tests: the response body limit (0: GPUOP_KUBE_MAX_BODY; the
 * error body of a stream is capped at 64 KiB) and how old the token read
 * from the token file may get before it is read again (default 60000 ms;
 * 0: before every request). */
void gpuop_kube_set_max_body(struct gpuop_kube *k, size_t max);
void gpuop_kube_set_token_ttl(struct gpuop_kube *k, uint64_t ms);

/* The libcurl and the TLS library linked in, as they report themselves at
 * run time (curl_version_info: "7.88.1" and "OpenSSL/3.0.20", the version
 * OpenSSL_version gives): static strings. */
void gpuop_kube_lib_versions(const char **curl, const char **tls);

/* Percent-encodes s for a query value or a path segment: everything but
 * A-Z a-z 0-9 - . _ ~ becomes %XX. New string; NULL on out-of-memory. */
char *gpuop_kube_escape(const char *s);

/* A resource, or a collection of them, as gpuop_kube_path names it. */
struct gpuop_kube_ref {
    const char *group_version; /* "v1" (NULL, ""): core, under /api; "apps/v1": under /apis */
    const char *ns;            /* NULL: cluster-scoped, or the collection in every namespace */
    const char *resource;      /* plural, required: "daemonsets" */
    const char *name;          /* NULL: the collection */
    const char *subresource;   /* "status", or NULL; ignored without a name */
};

/* A query parameter; a NULL value leaves it out (an optional one). */
struct gpuop_kube_param {
    const char *key;
    const char *value;
};

/* The one function that builds a request path: every resource path and
 * query of gpuop comes from here, escaped (ns, resource, name,
 * subresource and each key and value go through gpuop_kube_escape; the
 * group_version is written as it is). Returns a new string (free()), or
 * NULL on out-of-memory or without a resource.
 *   ({"apps/v1", "gpu", "daemonsets", "dcgm"},
 *    {{"fieldManager", "gpuop"}, {"force", "true"}}, 2)
 *     -> "/apis/apps/v1/namespaces/gpu/daemonsets/dcgm?fieldManager=gpuop&force=true"
 *   ({"gpuop.dev/v1alpha1", NULL, "gpupolicies", "default", "status"}, NULL, 0)
 *     -> "/apis/gpuop.dev/v1alpha1/gpupolicies/default/status"
 *   ({"v1", NULL, "nodes"}, {{"labelSelector", "a in (b)"}}, 1)
 *     -> "/api/v1/nodes?labelSelector=a%20in%20%28b%29" */
char *gpuop_kube_path(const struct gpuop_kube_ref *ref, const struct gpuop_kube_param *params,
                      size_t nparams);

#endif
