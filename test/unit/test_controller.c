/*
 * test_controller.c - the controller driven by the scripted fake API
 * server (test/unit/support/fakeapi.h), all on one libuv loop.
 *
 * The fake keeps a tiny cluster: one GpuPolicy "main", no nodes, and what
 * the controller applies (DaemonSets, the operands' ServiceAccount). LISTs
 * answer from it; WATCHes replay, every few milliseconds, the change log
 * from the resourceVersion they ask for; an apply stores the object and
 * logs the change, a status write too (so gpuop's own write comes back
 * through the GpuPolicy watch, as on a real server). A test can refuse
 * the apply of one DaemonSet with a 422, edit a stored object by hand, or
 * change the policy.
 *
 * Covered: every operand applied and the ServiceAccount, the status
 * written once and not again when nothing changed; drift put back (an
 * edited DaemonSet, a deleted one); the
 * DaemonSet of a disabled operand deleted; a refused apply retried only
 * on the key's backoff, its dependants not applied, the status not
 * rewritten by its own echo.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rnd.h"

#include "fakeapi.h"
#include "waiter.h"
#include "controller_int.h"
#include "gpuop/controller.h"
#include "gpuop/hash.h"
#include "gpuop/jsonarena.h"
#include "gpuop/kube.h"
#include "gpuop/log.h"
#include "gpuop/names.h"
#include "process_setup.h"

#define WAIT_MS  20000 /* generous: valgrind, a loaded machine */
#define NS       "gpuop-system"
#define PUMP_MS  5
#define LOG_MAX  2048
#define CONN_MAX 256

/* K_RC, K_CM, K_SVC, K_DC: the objects beside the DaemonSets (applied,
 * never watched); K_DC and K_SLICE (resource.k8s.io/v1) only while
 * f->dra_served, else their paths are 404 */
enum kind {
    K_POLICY,
    K_NODE,
    K_DS,
    K_POD,
    K_SA,
    K_EVENT,
    K_RC,
    K_CM,
    K_SVC,
    K_DC,
    K_SLICE,
    K_COUNT
};
static const char *const COLL[K_COUNT] = {
    "/apis/gpuop.dev/v1alpha1/gpupolicies",       "/api/v1/nodes",
    "/apis/apps/v1/namespaces/" NS "/daemonsets", "/api/v1/namespaces/" NS "/pods",
    "/api/v1/namespaces/" NS "/serviceaccounts",  "/api/v1/namespaces/" NS "/events",
    "/apis/node.k8s.io/v1/runtimeclasses",        "/api/v1/namespaces/" NS "/configmaps",
    "/api/v1/namespaces/" NS "/services",         "/apis/resource.k8s.io/v1/deviceclasses",
    "/apis/resource.k8s.io/v1/resourceslices"};

struct change {
    enum kind kind;
    long rv;
    char *line; /* the watch event, newline-terminated */
};

struct watcher {
    struct fx *f;
    enum kind kind;
    size_t next; /* index into the change log */
};

struct fx {
    uv_loop_t loop;
    struct waiter wait;
    struct fakeapi *srv;
    struct gpuop_kube *k;
    struct gpuop_controller *c;
    bool c_closed, k_closed;
    long rv;
    json_t *store[K_COUNT]; /* name -> object */
    struct change log[LOG_MAX];
    size_t nlog;
    struct watcher w[CONN_MAX];
    size_t nw;
    const char *refuse; /* DaemonSet name whose apply gets a 422 */
    /* DaemonSet name whose next apply is answered only when the test says
     * (release_held): held, its connection and the answer it gets */
    const char *hold;
    struct fakeapi_conn *held;
    json_t *held_answer;
    int applies[GPUOP_OPERAND_MAX]; /* PATCHes per operand index */
    int deletes, status_writes, sa_applies;
    bool template_gens; /* applied DaemonSets get the DaemonSet controller's template generation,
                           random_change's driver pods theirs */
    int extra_applies, extra_deletes; /* RuntimeClass, ConfigMap, Service */
    uint64_t apply_at[64];            /* uv_now of each PATCH of the refused one */
    int nrefused;
    char said[8192];    /* "<reason>: <message>\n" of each Event POSTed, truncated */
    bool dra_served;    /* resource.k8s.io/v1 is served (K_DC, K_SLICE) */
    int slice_requests; /* requests to K_SLICE's path, served or not */
    /* the pods of every namespace a field-selector LIST of /api/v1/pods
       answers with (draclaims.c's), NULL: none; and those LISTs */
    json_t *holders;
    int pod_lists;
    /* merge patches of the policy's metadata.finalizers, and how many of
       the next ones are answered 409 (the policy changed meanwhile) */
    int finalizer_patches, conflicts;
};

#define RUN_UNTIL(f, cond, ms) WAITER_RUN_UNTIL(&(f)->wait, cond, ms)

static void run_for(struct fx *f, uint64_t ms)
{
    waiter_run_for(&f->wait, ms);
}

/* ---- the fake cluster ---- */

/* The operand DaemonSets applied by default: all but dcgm, mig-manager and
 * dra-driver (six), and the MPS control daemon, which goes with the device
 * plugin. */
#define NDS_DEFAULT 7

/* the operand table's names, in its order (dcgm, mig-manager and
 * dra-driver off by default) */
static const char *operands[] = {
    "driver",     "container-toolkit", "device-plugin",      "gpu-feature-discovery",
    "dcgm",       "dcgm-exporter",     "operator-validator", "mig-manager",
    "dra-driver", "mps-control-daemon"};

static int operand_of(const char *ds)
{
    for (int i = 0; i < (int)(sizeof(operands) / sizeof(operands[0])); i++)
        if (!strcmp(ds + strlen("gpuop-"), operands[i]))
            return i;
    return !strncmp(ds, "gpuop-driver-", 13) ? 0 : -1; /* an OS pool's driver */
}

/* Stores obj (steals) as kind/name and logs the change. */
static void put(struct fx *f, enum kind k, const char *name, json_t *obj, const char *type)
{
    char rv[32];
    snprintf(rv, sizeof(rv), "%ld", ++f->rv);
    json_t *md = json_object_get(obj, "metadata");
    json_object_set_new(md, "resourceVersion", json_string(rv));
    json_object_set_new(md, "name", json_string(name));
    if (!json_object_get(md, "uid"))
        json_object_set_new(md, "uid", json_string(name));
    if (!json_object_get(md, "creationTimestamp"))
        json_object_set_new(md, "creationTimestamp", json_string("2026-11-29T21:06:40Z"));
    json_t *ev = json_pack("{s:s, s:O}", "type", type, "object", obj);
    char *s = json_dumps(ev, JSON_COMPACT);
    json_decref(ev);
    assert_true(f->nlog < LOG_MAX);
    size_t n = strlen(s);
    char *line = malloc(n + 2);
    memcpy(line, s, n);
    line[n] = '\n';
    line[n + 1] = '\0';
    free(s);
    f->log[f->nlog++] = (struct change){k, f->rv, line};
    if (!strcmp(type, "DELETED")) {
        json_object_del(f->store[k], name);
        json_decref(obj);
    } else {
        json_object_set_new(f->store[k], name, obj);
    }
}

/* Stores obj (steals) as kind/name without a watch event: a change made
 * while the watchers were away, seen by the next list only. */
static void put_unwatched(struct fx *f, enum kind k, const char *name, json_t *obj,
                          const char *type)
{
    put(f, k, name, obj, type);
    free(f->log[--f->nlog].line);
}

/* Ends kind's watches with an ERROR 410 (their resourceVersion expired):
 * the informer relists. */
static void expire_watch(struct fx *f, enum kind k)
{
    assert_true(f->nlog < LOG_MAX);
    f->log[f->nlog++] = (struct change){
        k, ++f->rv,
        strdup("{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\","
               "\"status\":\"Failure\",\"reason\":\"Expired\",\"code\":410}}\n")};
}

/* The policy "main" with spec (steals) as its new spec, generation 2,
 * stored and watched. */
static void set_spec(struct fx *f, json_t *spec)
{
    json_t *p = json_deep_copy(json_object_get(f->store[K_POLICY], "main"));
    json_object_set_new(p, "spec", spec);
    json_object_set_new(json_object_get(p, "metadata"), "generation", json_integer(2));
    put(f, K_POLICY, "main", p, "MODIFIED");
}

static void pump(struct fakeapi_conn *c, void *arg)
{
    struct watcher *w = arg;
    struct fx *f = w->f;
    for (; w->next < f->nlog; w->next++)
        if (f->log[w->next].kind == w->kind)
            fakeapi_write(c, f->log[w->next].line, strlen(f->log[w->next].line));
}

static int kind_of(const char *path)
{
    for (int k = 0; k < K_COUNT; k++) {
        size_t n = strlen(COLL[k]);
        if (!strncmp(path, COLL[k], n) && (path[n] == '?' || path[n] == '/' || !path[n]))
            return k;
    }
    return -1;
}

/* The name after the collection path ("" when none), into buf. */
static const char *name_of(const char *path, int k, char *buf, size_t size)
{
    const char *p = path + strlen(COLL[k]);
    buf[0] = '\0';
    if (*p == '/') {
        size_t n = strcspn(p + 1, "/?");
        snprintf(buf, size, "%.*s", (int)n, p + 1);
    }
    return buf;
}

static void respond_obj(struct fakeapi_conn *c, json_t *obj)
{
    char *s = json_dumps(obj, JSON_COMPACT);
    fakeapi_respond(c, 200, "application/json", s);
    free(s);
}

static void handle(void *arg, struct fakeapi_conn *c, const struct fakeapi_request *r)
{
    struct fx *f = arg;
    /* gpuop's own Events (about the cluster-scoped policy: in the default
     * namespace), recorded */
    if (!strcmp(r->method, "POST") && strstr(r->path, "/events")) {
        json_t *ev = json_loads(r->body, 0, NULL);
        size_t used = strlen(f->said);
        snprintf(f->said + used, sizeof(f->said) - used, "%s: %s\n",
                 json_string_value(json_object_get(ev, "reason")),
                 json_string_value(json_object_get(ev, "message")));
        json_decref(ev);
        fakeapi_respond(c, 201, "application/json", r->body);
        return;
    }
    if (!strcmp(r->method, "GET") && !strncmp(r->path, "/api/v1/pods?", 13)) {
        f->pod_lists++; /* every node's pods: the claim holders */
        json_t *items = f->holders ? json_incref(f->holders) : json_array();
        json_t *list = json_pack("{s:s, s:o}", "kind", "PodList", "items", items);
        respond_obj(c, list);
        json_decref(list);
        return;
    }
    int k = kind_of(r->path);
    char name[256], v[32];
    f->slice_requests += k == K_SLICE;
    if ((k == K_DC || k == K_SLICE) && !f->dra_served)
        k = -1;
    if (k < 0) {
        fakeapi_respond_status(c, 404, "NotFound", "no such path");
        return;
    }
    name_of(r->path, k, name, sizeof(name));
    if (!strcmp(r->method, "GET") && fakeapi_query(r, "watch", v, sizeof(v))) {
        assert_true(f->nw < CONN_MAX);
        struct watcher *w = &f->w[f->nw++];
        long from = fakeapi_query(r, "resourceVersion", v, sizeof(v)) ? atol(v) : f->rv;
        *w = (struct watcher){f, (enum kind)k, 0};
        while (w->next < f->nlog && f->log[w->next].rv <= from)
            w->next++;
        fakeapi_stream_begin(c, 200, FAKEAPI_CHUNKED, 0);
        fakeapi_every(c, PUMP_MS, pump, w);
        return;
    }
    if (!strcmp(r->method, "GET")) {
        json_t *items = json_array();
        const char *key;
        json_t *o;
        json_object_foreach(f->store[k], key, o) json_array_append(items, o);
        char rv[32];
        snprintf(rv, sizeof(rv), "%ld", f->rv);
        json_t *list = json_pack("{s:s, s:{s:s}, s:o}", "kind", "List", "metadata",
                                 "resourceVersion", rv, "items", items);
        respond_obj(c, list);
        json_decref(list);
        return;
    }
    json_t *body = r->body_len ? json_loads(r->body, 0, NULL) : NULL;
    if (!strcmp(r->method, "PATCH") && k == K_POLICY && !strstr(r->path, "/status?")) {
        /* the finalizers: a merge patch, its resourceVersion a precondition */
        assert_string_equal(r->ctype, "application/merge-patch+json");
        json_t *md = json_object_get(body, "metadata");
        json_t *p = json_deep_copy(json_object_get(f->store[K_POLICY], name));
        json_t *pmd = json_object_get(p, "metadata");
        f->finalizer_patches++;
        assert_int_equal(json_object_size(body), 1);
        assert_int_equal(json_object_size(md), 2);
        if (!p) {
            fakeapi_respond_status(c, 404, "NotFound", "not found");
        } else if (f->conflicts > 0 || !json_equal(json_object_get(md, "resourceVersion"),
                                                   json_object_get(pmd, "resourceVersion"))) {
            f->conflicts -= f->conflicts > 0;
            fakeapi_respond_status(c, 409, "Conflict", "the object has been modified");
        } else {
            json_object_set(pmd, "finalizers", json_object_get(md, "finalizers"));
            bool gone = json_object_get(pmd, "deletionTimestamp") &&
                        !json_array_size(json_object_get(pmd, "finalizers"));
            put(f, K_POLICY, name, json_incref(p), gone ? "DELETED" : "MODIFIED");
            respond_obj(c, p);
        }
        json_decref(p);
    } else if (!strcmp(r->method, "PATCH") && k == K_POLICY &&
               !json_object_get(f->store[K_POLICY], name)) {
        fakeapi_respond_status(c, 404, "NotFound", "not found"); /* its status: gone */
    } else if (!strcmp(r->method, "PATCH") && k == K_POLICY) {   /* .../main/status */
        f->status_writes++;
        json_t *p = json_deep_copy(json_object_get(f->store[K_POLICY], name));
        json_object_set(p, "status", json_object_get(body, "status"));
        put(f, K_POLICY, name, json_incref(p), "MODIFIED");
        respond_obj(c, p);
        json_decref(p);
    } else if (!strcmp(r->method, "PATCH") && k == K_DS) {
        int op = operand_of(name);
        assert_true(op >= 0);
        f->applies[op]++;
        if (f->refuse && !strcmp(name, f->refuse)) {
            if (f->nrefused < 64)
                f->apply_at[f->nrefused++] = uv_now(&f->loop);
            fakeapi_respond_status(c, 422, "Invalid", "requests must be <= limits");
        } else {
            json_t *old = json_object_get(f->store[K_DS], name);
            long long gen = old ? json_integer_value(json_object_get(
                                      json_object_get(old, "metadata"), "generation"))
                                : 0;
            if (!old || !json_equal(json_object_get(old, "spec"), json_object_get(body, "spec")))
                gen++;
            json_object_set_new(json_object_get(body, "metadata"), "generation", json_integer(gen));
            if (f->hold && !strcmp(name, f->hold) && !f->held) {
                /* landed on the object as it is now; answered later */
                f->held = c;
                f->held_answer = json_incref(body);
                f->hold = NULL;
                json_decref(body);
                return;
            }
            if (f->template_gens) {
                json_t *md = json_object_get(body, "metadata");
                if (!json_object_get(md, "annotations"))
                    json_object_set_new(md, "annotations", json_object());
                json_object_set_new(json_object_get(md, "annotations"),
                                    GPUOP_ANNOTATION_TEMPLATE_GEN, json_sprintf("%lld", gen));
            }
            put(f, K_DS, name, json_incref(body), old ? "MODIFIED" : "ADDED");
            respond_obj(c, body);
        }
    } else if (!strcmp(r->method, "PATCH") && k == K_SA) {
        f->sa_applies++;
        bool had = json_object_get(f->store[K_SA], name) != NULL;
        put(f, K_SA, name, json_incref(body), had ? "MODIFIED" : "ADDED");
        respond_obj(c, body);
    } else if (!strcmp(r->method, "PATCH") && (k == K_RC || k == K_CM || k == K_SVC || k == K_DC)) {
        f->extra_applies++;
        assert_string_equal(r->ctype, "application/apply-patch+yaml");
        bool had = json_object_get(f->store[k], name) != NULL;
        put(f, (enum kind)k, name, json_incref(body), had ? "MODIFIED" : "ADDED");
        respond_obj(c, body);
    } else if (!strcmp(r->method, "DELETE") &&
               (k == K_RC || k == K_CM || k == K_SVC || k == K_DC)) {
        f->extra_deletes++;
        json_t *old = json_object_get(f->store[k], name);
        if (old) {
            put(f, (enum kind)k, name, json_incref(old), "DELETED");
            fakeapi_respond_status(c, 200, "Success", "deleted");
        } else {
            fakeapi_respond_status(c, 404, "NotFound", "not found");
        }
    } else if (!strcmp(r->method, "DELETE") && k == K_DS) {
        f->deletes++;
        json_t *old = json_object_get(f->store[K_DS], name);
        if (old) {
            put(f, K_DS, name, json_incref(old), "DELETED");
            fakeapi_respond_status(c, 200, "Success", "deleted");
        } else {
            fakeapi_respond_status(c, 404, "NotFound", "not found");
        }
    } else {
        fakeapi_respond_status(c, 405, "MethodNotAllowed", "not here");
    }
    json_decref(body);
}

/* ---- fixture ---- */

/* New: a GPU node carrying NFD's OS labels (major may be NULL). */
static json_t *os_node(const char *name, const char *id, const char *ver, const char *major)
{
    json_t *labels = json_pack("{s:s, s:s, s:s}", "nvidia.com/gpu.present", "true",
                               GPUOP_LABEL_OS_ID, id, GPUOP_LABEL_OS_VERSION, ver);
    if (major)
        json_object_set_new(labels, GPUOP_LABEL_OS_MAJOR, json_string(major));
    return json_pack("{s:s, s:s, s:{s:s, s:o}}", "apiVersion", "v1", "kind", "Node", "metadata",
                     "name", name, "labels", labels);
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    waiter_init(&f->wait, &f->loop);
    for (int k = 0; k < K_COUNT; k++)
        f->store[k] = json_object();
    put(f, K_POLICY, "main",
        json_pack("{s:s, s:s, s:{s:I}, s:{}}", "apiVersion", "gpuop.dev/v1alpha1", "kind",
                  "GpuPolicy", "metadata", "generation", (json_int_t)1, "spec"),
        "ADDED");
    /* one GPU node of one OS pool: the driver is gpuop-driver-ubuntu24.04 */
    put(f, K_NODE, "gpu-1", os_node("gpu-1", "ubuntu", "24.04", NULL), "ADDED");
    assert_int_equal(fakeapi_start(&f->loop, handle, f, &f->srv), 0);
    struct gpuop_kubeconfig cfg = {0};
    cfg.server = (char *)fakeapi_url(f->srv);
    cfg.token = "tok";
    struct gpuop_err err = {0};
    assert_int_equal(gpuop_kube_new(&f->loop, &cfg, &f->k, &err), 0);
    gpuop_log_set_level(getenv("TEST_DEBUG") ? "debug" : "error");
    *state = f;
    return 0;
}

/* start, with the verify oracle on (keeps the findings at any size) */
static void start_verify(struct fx *f)
{
    struct gpuop_controller_config cc = {.namespace = NS, .leader = true, .verify = true};
    assert_int_equal(gpuop_controller_new(&f->loop, f->k, &cc, &f->c), 0);
    assert_int_equal(gpuop_controller_start(f->c), 0);
}

static void start(struct fx *f)
{
    struct gpuop_controller_config cc = {.namespace = NS, .leader = true};
    assert_int_equal(gpuop_controller_new(&f->loop, f->k, &cc, &f->c), 0);
    assert_int_equal(gpuop_controller_start(f->c), 0);
}

static void c_closed(void *arg)
{
    ((struct fx *)arg)->c_closed = true;
}

static void k_closed(void *arg)
{
    ((struct fx *)arg)->k_closed = true;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    if (f->c) {
        gpuop_controller_close(f->c, c_closed, f);
        RUN_UNTIL(f, f->c_closed, WAIT_MS);
    }
    gpuop_kube_close(f->k, k_closed, f);
    RUN_UNTIL(f, f->k_closed, WAIT_MS);
    fakeapi_stop(f->srv);
    waiter_close(&f->wait);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    for (int k = 0; k < K_COUNT; k++)
        json_decref(f->store[k]);
    json_decref(f->holders);
    for (size_t i = 0; i < f->nlog; i++)
        free(f->log[i].line);
    free(f);
    return 0;
}

static int total_applies(const struct fx *f)
{
    int n = 0;
    for (int i = 0; i < gpuop_operand_count(); i++)
        n += f->applies[i];
    return n;
}

static json_t *status_of(struct fx *f)
{
    return json_object_get(json_object_get(f->store[K_POLICY], "main"), "status");
}

static const char *operand_apply(struct fx *f, int op)
{
    return json_string_value(
        json_object_get(json_array_get(json_object_get(status_of(f), "operands"), op), "apply"));
}

/* Waits until the controller has nothing more to do: no request for
 * quiet_ms. */
static void settle(struct fx *f, uint64_t quiet_ms)
{
    size_t n;
    do {
        n = fakeapi_nreq(f->srv);
        run_for(f, quiet_ms);
        /* a status the write pacing holds goes out at its interval's end,
         * and one sent may not have reached the server yet (valgrind) */
    } while (fakeapi_nreq(f->srv) != n ||
             (f->c && (gpuop_ctl_status_held(f->c) || f->c->ops.pending > 0)));
}

static json_int_t gpu_nodes_of(struct fx *f)
{
    return json_integer_value(
        json_object_get(json_object_get(status_of(f), "summary"), "gpuNodes"));
}

/* ---- tests ---- */

static void test_apply_then_quiet(void **state)
{
    struct fx *f = *state;
    start(f);
    RUN_UNTIL(f, json_object_size(f->store[K_DS]) == NDS_DEFAULT && f->status_writes > 0, WAIT_MS);
    settle(f, 500);
    for (int i = 0; i < gpuop_operand_count(); i++) {
        if (!gpuop_operand_get(i)->enabled)
            continue;                       /* off by default: not applied */
        assert_int_equal(f->applies[i], 1); /* once each */
        assert_string_equal(operand_apply(f, i), "Current");
    }
    assert_int_equal(f->sa_applies, 1);
    assert_non_null(json_object_get(f->store[K_SA], "gpuop-operand"));
    /* the status follows the DaemonSets' arrival in the cache, then stops */
    int writes = f->status_writes;
    assert_true(writes >= 1 && writes <= 3);
    run_for(f, 1500);
    assert_int_equal(f->status_writes, writes); /* nothing changed: no write */
    assert_int_equal(total_applies(f), NDS_DEFAULT);
    json_t *rec = json_array_get(json_object_get(status_of(f), "conditions"), 3);
    assert_string_equal(json_string_value(json_object_get(rec, "type")), "Reconciled");
    assert_string_equal(json_string_value(json_object_get(rec, "status")), "True");
}

static void test_drift_put_back(void **state)
{
    struct fx *f = *state;
    start(f);
    RUN_UNTIL(f, json_object_size(f->store[K_DS]) == NDS_DEFAULT && f->status_writes > 0, WAIT_MS);
    settle(f, 300);
    /* someone edits the toolkit's spec: the server bumps its generation */
    json_t *ds = json_deep_copy(json_object_get(f->store[K_DS], "gpuop-container-toolkit"));
    json_t *md = json_object_get(ds, "metadata");
    json_object_set_new(md, "generation",
                        json_integer(json_integer_value(json_object_get(md, "generation")) + 1));
    json_object_set_new(json_object_get(ds, "spec"), "minReadySeconds", json_integer(99));
    put(f, K_DS, "gpuop-container-toolkit", ds, "MODIFIED");
    RUN_UNTIL(f, f->applies[1] == 2, WAIT_MS);
    settle(f, 300);
    assert_null(json_object_get(
        json_object_get(json_object_get(f->store[K_DS], "gpuop-container-toolkit"), "spec"),
        "minReadySeconds"));
    assert_int_equal(total_applies(f), NDS_DEFAULT + 1); /* only that one */
    /* someone deletes the driver's DaemonSet: applied again */
    const char *drv = "gpuop-driver-ubuntu24.04";
    put(f, K_DS, drv, json_incref(json_object_get(f->store[K_DS], drv)), "DELETED");
    RUN_UNTIL(f, json_object_get(f->store[K_DS], drv) != NULL, WAIT_MS);
    settle(f, 300);
    assert_int_equal(f->applies[0], 2);
    assert_int_equal(total_applies(f), NDS_DEFAULT + 2);
}

/* Answers the held apply with what it got when it landed. */
static void release_held(struct fx *f)
{
    assert_non_null(f->held);
    respond_obj(f->held, f->held_answer);
    json_decref(f->held_answer);
    f->held = NULL;
    f->held_answer = NULL;
}

/* Stores DaemonSet name as a DaemonSet controller shows it once a delete
 * with propagationPolicy Orphan was asked for (deletionTimestamp, the
 * orphan finalizer, the generation moved), and logs the change. */
static void put_deleting(struct fx *f, const char *name)
{
    json_t *ds = json_deep_copy(json_object_get(f->store[K_DS], name));
    json_t *md = json_object_get(ds, "metadata");
    json_object_set_new(md, "generation",
                        json_integer(json_integer_value(json_object_get(md, "generation")) + 1));
    json_object_set_new(md, "deletionTimestamp", json_string("2026-11-29T21:07:40Z"));
    json_object_set_new(md, "finalizers", json_pack("[s]", "orphan"));
    put(f, K_DS, name, ds, "MODIFIED");
}

/* A DaemonSet being deleted is not there: nothing is applied onto it, and
 * it is re-created once the watch shows it gone (issue 40: deleted with
 * --cascade=orphan, it stayed deleted). */
static void test_deleting_recreated(void **state)
{
    struct fx *f = *state;
    const char *dp = "gpuop-device-plugin";
    start(f);
    RUN_UNTIL(f, json_object_size(f->store[K_DS]) == NDS_DEFAULT && f->status_writes > 0, WAIT_MS);
    settle(f, 300);
    int before = f->applies[2];
    put_deleting(f, dp);
    settle(f, 300);
    assert_int_equal(f->applies[2], before); /* nothing applied onto it */
    put(f, K_DS, dp, json_incref(json_object_get(f->store[K_DS], dp)), "DELETED");
    RUN_UNTIL(f, json_object_get(f->store[K_DS], dp) != NULL, WAIT_MS);
    settle(f, 300);
    assert_int_equal(f->applies[2], before + 1);
    assert_int_equal(total_applies(f), NDS_DEFAULT + 1);
}

/* An apply in flight when the watch shows its DaemonSet deleted: its answer
 * is of the object that is gone, and the DaemonSet is re-created. */
static void test_deleted_while_applying(void **state)
{
    struct fx *f = *state;
    const char *dp = "gpuop-device-plugin";
    start(f);
    RUN_UNTIL(f, json_object_size(f->store[K_DS]) == NDS_DEFAULT && f->status_writes > 0, WAIT_MS);
    settle(f, 300);
    int before = f->applies[2];
    /* a hand edit gpuop puts back; that apply is held */
    f->hold = dp;
    json_t *ds = json_deep_copy(json_object_get(f->store[K_DS], dp));
    json_t *md = json_object_get(ds, "metadata");
    json_object_set_new(md, "generation",
                        json_integer(json_integer_value(json_object_get(md, "generation")) + 1));
    put(f, K_DS, dp, ds, "MODIFIED");
    RUN_UNTIL(f, f->held != NULL, WAIT_MS);
    /* the deletion completes before the apply's answer is read */
    put_deleting(f, dp);
    put(f, K_DS, dp, json_incref(json_object_get(f->store[K_DS], dp)), "DELETED");
    run_for(f, 200);
    release_held(f);
    RUN_UNTIL(f, json_object_get(f->store[K_DS], dp) != NULL, WAIT_MS);
    settle(f, 300);
    assert_int_equal(f->applies[2], before + 2); /* the held one, and the re-creation */
}

static void test_disabled_deleted(void **state)
{
    struct fx *f = *state;
    start(f);
    RUN_UNTIL(f, json_object_size(f->store[K_DS]) == NDS_DEFAULT && f->status_writes > 0, WAIT_MS);
    settle(f, 300);
    set_spec(f, json_pack("{s:{s:b}}", "dcgmExporter", "enabled", 0));
    RUN_UNTIL(f, f->deletes == 1 && !json_object_get(f->store[K_DS], "gpuop-dcgm-exporter"),
              WAIT_MS);
    settle(f, 300);
    assert_int_equal(f->deletes, 1);
    assert_string_equal(operand_apply(f, gpuop_operand_by_name("dcgm-exporter")), "Absent");
    assert_int_equal(json_object_size(f->store[K_DS]), NDS_DEFAULT - 1);
}

/* New: a pod of DaemonSet ds on node gpu-1, in phase. */
static json_t *operand_pod(const char *ds, const char *phase)
{
    return json_pack("{s:s, s:s, s:{s:s, s:[{s:s, s:s}]}, s:{s:s}, s:{s:s}}", "apiVersion", "v1",
                     "kind", "Pod", "metadata", "namespace", NS, "ownerReferences", "kind",
                     "DaemonSet", "name", ds, "spec", "nodeName", "gpu-1", "status", "phase",
                     phase);
}

/* New: what the status says of each operand's apply (its "apply" and its
 * DaemonSets), the facts the apply stage gives it. */
static json_t *operands_of(struct fx *f)
{
    json_t *out = json_array(), *op;
    size_t i;
    json_array_foreach(json_object_get(status_of(f), "operands"), i, op) json_array_append_new(
        out,
        json_pack("{s:O?, s:O?, s:O?}", "apply", json_object_get(op, "apply"), "daemonSets",
                  json_object_get(op, "daemonSets"), "message", json_object_get(op, "message")));
    return out;
}

/* Runs the loop until a reconcile has begun and ended since the call: a
 * change that only moves findings may wait for the status pacing's
 * interval. */
static void wait_reconcile(struct fx *f)
{
    struct gpuop_controller_stats st;
    gpuop_controller_stats(f->c, &st);
    uint64_t r0 = st.reconciles;
    RUN_UNTIL(f, (gpuop_controller_stats(f->c, &st), st.reconciles > r0) && f->c->key == NULL,
              WAIT_MS);
}

/* After what the stage reads moved: a full stage ran beyond the stages
 * there were; returns the count now. */
static uint64_t assert_staged(struct fx *f, uint64_t stages)
{
    struct gpuop_controller_stats st;
    settle(f, 300);
    gpuop_controller_stats(f->c, &st);
    assert_true(st.apply_stages > stages);
    return st.apply_stages;
}

/* After what reuses the last stage's verdicts: at least min_reconciles
 * ran, no stage beyond the stages there were, still the six first applies,
 * and the status's operands equal the full stage's (borrowed). */
static void assert_no_stage(struct fx *f, uint64_t min_reconciles, uint64_t stages,
                            const json_t *full)
{
    struct gpuop_controller_stats st;
    settle(f, 300);
    gpuop_controller_stats(f->c, &st);
    assert_true(st.reconciles >= min_reconciles);
    assert_int_equal(st.apply_stages, stages);
    assert_int_equal(total_applies(f), NDS_DEFAULT);
    json_t *now = operands_of(f);
    assert_true(json_equal(now, full));
    json_decref(now);
}

/* Pod events, a DaemonSet's status alone, and nodes within the OS pools
 * there are queue only the status reconcile: no apply reconcile runs, no
 * request, and the status's operands are what the last apply left. What
 * the apply reads moving (an OS pool, a DaemonSet's generation, the
 * policy, the leadership) runs an apply reconcile, which puts back what
 * changed. */
static void test_apply_only_when_its_inputs_move(void **state)
{
    struct fx *f = *state;
    struct gpuop_controller_stats st;
    start(f);
    RUN_UNTIL(f, json_object_size(f->store[K_DS]) == NDS_DEFAULT && f->status_writes > 0, WAIT_MS);
    settle(f, 300);
    json_t *full = operands_of(f); /* the reference */
    gpuop_controller_stats(f->c, &st);
    uint64_t stages = st.apply_stages, reconciles = st.reconciles;
    assert_true(stages >= 1);

    /* pods come and change: reconciles, each reusing the verdicts */
    static const char *const ds[] = {"gpuop-driver-ubuntu24.04", "gpuop-container-toolkit",
                                     "gpuop-device-plugin"};
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof(name), "pod-%d", i);
        put(f, K_POD, name, operand_pod(ds[i], "Pending"), "ADDED");
        wait_reconcile(f);
        put(f, K_POD, name, operand_pod(ds[i], "Running"), "MODIFIED");
        wait_reconcile(f);
    }
    /* a DaemonSet's status alone */
    json_t *d = json_deep_copy(json_object_get(f->store[K_DS], "gpuop-device-plugin"));
    json_object_set_new(d, "status",
                        json_pack("{s:i, s:i}", "desiredNumberScheduled", 1, "numberReady", 1));
    put(f, K_DS, "gpuop-device-plugin", d, "MODIFIED");
    wait_reconcile(f);
    assert_no_stage(f, reconciles + 3, stages, full);

    /* nodes within the OS pools there are: a GPU node of the one pool
     * comes, a GPU node's labels change, a plain node comes and becomes a
     * GPU node of that pool (the benchmark's latency flip): reconciles,
     * no stage */
    put(f, K_NODE, "gpu-2", os_node("gpu-2", "ubuntu", "24.04", NULL), "ADDED");
    wait_reconcile(f);
    json_t *n = os_node("gpu-1", "ubuntu", "24.04", NULL);
    json_object_set_new(json_object_get(json_object_get(n, "metadata"), "labels"), "team",
                        json_string("a"));
    put(f, K_NODE, "gpu-1", n, "MODIFIED");
    wait_reconcile(f);
    n = os_node("cpu-1", "ubuntu", "24.04", NULL);
    json_object_del(json_object_get(json_object_get(n, "metadata"), "labels"),
                    "nvidia.com/gpu.present");
    put(f, K_NODE, "cpu-1", n, "ADDED");
    wait_reconcile(f);
    put(f, K_NODE, "cpu-1", os_node("cpu-1", "ubuntu", "24.04", NULL), "MODIFIED");
    wait_reconcile(f);
    assert_no_stage(f, reconciles + 7, stages, full);

    /* a GPU node of a new pool: a full stage applies its driver's
     * DaemonSet; its only node leaving, a full stage deletes it */
    int deletes = f->deletes;
    put(f, K_NODE, "gpu-3", os_node("gpu-3", "rhel", "9.4", "9"), "ADDED");
    RUN_UNTIL(f, json_object_get(f->store[K_DS], "gpuop-driver-rhel9") != NULL, WAIT_MS);
    stages = assert_staged(f, stages);
    put(f, K_NODE, "gpu-3", json_deep_copy(json_object_get(f->store[K_NODE], "gpu-3")), "DELETED");
    RUN_UNTIL(f, !json_object_get(f->store[K_DS], "gpuop-driver-rhel9"), WAIT_MS);
    stages = assert_staged(f, stages);
    assert_int_equal(f->deletes, deletes + 1);
    json_t *now = operands_of(f);
    assert_true(json_equal(now, full));
    json_decref(now);

    /* a DaemonSet edited by hand: a full stage puts it back */
    d = json_deep_copy(json_object_get(f->store[K_DS], "gpuop-device-plugin"));
    json_t *md = json_object_get(d, "metadata");
    json_object_set_new(md, "generation",
                        json_integer(json_integer_value(json_object_get(md, "generation")) + 1));
    put(f, K_DS, "gpuop-device-plugin", d, "MODIFIED");
    RUN_UNTIL(f, f->applies[2] == 2, WAIT_MS);
    stages = assert_staged(f, stages);

    /* leadership lost and regained: a full stage */
    gpuop_controller_set_leader(f->c, false);
    gpuop_controller_set_leader(f->c, true);
    stages = assert_staged(f, stages);

    /* the policy: a full stage, and the change applied */
    set_spec(f, json_pack("{s:{s:b}}", "dcgmExporter", "enabled", 0));
    RUN_UNTIL(f, f->deletes == deletes + 2, WAIT_MS);
    assert_staged(f, stages);
    assert_string_equal(operand_apply(f, gpuop_operand_by_name("dcgm-exporter")), "Absent");
    json_decref(full);
}

/* New: operand_pod, Running and Ready when ready. */
static json_t *ready_pod(const char *ds, bool ready)
{
    json_t *p = operand_pod(ds, ready ? "Running" : "Pending");
    if (ready)
        json_object_set_new(json_object_get(p, "status"), "conditions",
                            json_pack("[{s:s, s:s}]", "type", "Ready", "status", "True"));
    return p;
}

/* Pod events while the status pacing's interval runs (only the findings
 * change) are judged together at its end: a burst of 30 pod changes in 10
 * deliveries after a quiet interval costs the first reconcile at once and
 * one at the interval's end, not one per delivery; the status ends at the
 * last state. A node event in the interval still reconciles at once. */
static void test_findings_events_coalesced(void **state)
{
    struct fx *f = *state;
    struct gpuop_controller_stats st;
    start(f);
    RUN_UNTIL(f, json_object_size(f->store[K_DS]) == NDS_DEFAULT && f->status_writes > 0, WAIT_MS);
    settle(f, 300);
    run_for(f, CTL_STATUS_WRITE_INTERVAL_MS + 100); /* a quiet interval */
    gpuop_controller_stats(f->c, &st);
    uint64_t before = st.reconciles;
    int writes = f->status_writes;
    enum { ROUNDS = 10 };
    for (int i = 0; i < ROUNDS; i++) {
        for (int k = 0; k < 3; k++) {
            char name[32];
            snprintf(name, sizeof(name), "pod-%d", k);
            put(f, K_POD, name, ready_pod("gpuop-container-toolkit", (i + k) % 2 == 1),
                i == 0 ? "ADDED" : "MODIFIED");
        }
        run_for(f, 20); /* a watch delivery, a reconcile if one is due */
    }
    gpuop_controller_stats(f->c, &st);
    uint64_t during = st.reconciles - before;
    /* the last state: pod-0 and pod-2 ready (i = 9), pod-1 not */
    RUN_UNTIL(f,
              gpuop_controller_summary(f->c)->operands[1].running == 1 && f->c->key == NULL &&
                  !gpuop_ctl_status_held(f->c),
              WAIT_MS);
    run_for(f, CTL_STATUS_WRITE_INTERVAL_MS + 100);
    gpuop_controller_stats(f->c, &st);
    print_message(
        "%d delivered pod bursts: %llu reconciles during, %llu in all, %d status writes\n", ROUNDS,
        (unsigned long long)during, (unsigned long long)(st.reconciles - before),
        f->status_writes - writes);
    assert_true(during <= 2);
    assert_true(st.reconciles - before <= 3);
    assert_true(f->status_writes - writes <= 2);
    json_t *op1 = json_array_get(json_object_get(status_of(f), "operands"), 1);
    assert_int_equal(json_integer_value(json_object_get(op1, "runningNodes")), 1);

    /* a node inside the interval: at once */
    put(f, K_POD, "pod-1", ready_pod("gpuop-container-toolkit", true), "MODIFIED");
    run_for(f, 50);
    gpuop_controller_stats(f->c, &st);
    before = st.reconciles;
    put(f, K_NODE, "gpu-2", os_node("gpu-2", "ubuntu", "24.04", NULL), "ADDED");
    RUN_UNTIL(f, gpuop_controller_summary(f->c)->gpu_nodes == 2, CTL_STATUS_WRITE_INTERVAL_MS / 2);
}

/* Findings-only events that leave the status as it is (Warning Events of
 * a DaemonSet with all its pods: nothing shows them) start no write
 * interval; they still reconcile at most once per
 * CTL_FINDINGS_RECONCILE_GAP_MS after the last reconcile began: ten
 * deliveries in 200 ms after a quiet interval cost the first reconcile at
 * once and one at the gap's end, not ten. */
static void test_findings_reconcile_gap(void **state)
{
    struct fx *f = *state;
    struct gpuop_controller_stats st;
    start(f);
    RUN_UNTIL(f, json_object_size(f->store[K_DS]) == NDS_DEFAULT && f->status_writes > 0, WAIT_MS);
    settle(f, 300);
    run_for(f, CTL_STATUS_WRITE_INTERVAL_MS + 100); /* a quiet interval */
    gpuop_controller_stats(f->c, &st);
    uint64_t before = st.reconciles;
    int writes = f->status_writes;
    enum { DELIVERIES = 10 };
    for (int i = 0; i < DELIVERIES; i++) {
        char name[32];
        snprintf(name, sizeof(name), "ev.%d", i);
        put(f, K_EVENT, name,
            json_pack("{s:{s:s}, s:{s:s, s:s}, s:s, s:s, s:s, s:s}", "metadata", "namespace", NS,
                      "involvedObject", "kind", "DaemonSet", "name", "gpuop-dcgm-exporter", "type",
                      "Warning", "reason", "FailedCreate", "message", "try again", "lastTimestamp",
                      "2026-11-29T21:07:40Z"),
            "ADDED");
        run_for(f, 20); /* a watch delivery, a reconcile if one is due */
    }
    gpuop_controller_stats(f->c, &st);
    uint64_t during = st.reconciles - before;
    RUN_UNTIL(f, f->c->key == NULL && !gpuop_ctl_status_held(f->c), WAIT_MS);
    run_for(f, CTL_FINDINGS_RECONCILE_GAP_MS + 100);
    gpuop_controller_stats(f->c, &st);
    print_message("%d deliveries of Events: %llu reconciles during, %llu in all, %d writes\n",
                  DELIVERIES, (unsigned long long)during,
                  (unsigned long long)(st.reconciles - before), f->status_writes - writes);
    assert_true(during <= 2);
    assert_true(st.reconciles - before >= 1);
    assert_true(st.reconciles - before <= 3);
    assert_int_equal(f->status_writes, writes); /* nothing showed them */
}

/* The RuntimeClass and the DCGM Service are applied once beside the
 * DaemonSets, not again while their body stays; the Service is deleted
 * when the exporter is disabled; MIG Manager's default config appears when
 * it is enabled. */
static void test_extras(void **state)
{
    struct fx *f = *state;
    start(f);
    RUN_UNTIL(f, json_object_size(f->store[K_DS]) == NDS_DEFAULT && f->status_writes > 0, WAIT_MS);
    settle(f, 300);
    assert_int_equal(f->extra_applies, 4); /* nvidia, nvidia-cdi, nvidia-legacy, the Service */
    assert_int_equal(f->extra_deletes, 0); /* never applied: nothing of gpuop's to delete */
    json_t *rc = json_object_get(f->store[K_RC], "nvidia");
    assert_non_null(rc);
    assert_string_equal(json_string_value(json_object_get(rc, "handler")), "nvidia");
    static const char *const cdi_classes[] = {"nvidia-cdi", "nvidia-legacy"};
    for (size_t i = 0; i < 2; i++)
        assert_string_equal(json_string_value(json_object_get(
                                json_object_get(f->store[K_RC], cdi_classes[i]), "handler")),
                            cdi_classes[i]);
    assert_non_null(json_object_get(f->store[K_SVC], "gpuop-dcgm-exporter"));
    assert_null(json_object_get(f->store[K_CM], "default-mig-parted-config"));
    run_for(f, 500);
    assert_int_equal(f->extra_applies, 4);

    set_spec(f, json_pack("{s:{s:b}, s:{s:b}}", "dcgmExporter", "enabled", 0, "migManager",
                          "enabled", 1));
    RUN_UNTIL(f,
              f->extra_deletes == 1 && !json_object_get(f->store[K_SVC], "gpuop-dcgm-exporter") &&
                  json_object_get(f->store[K_CM], "default-mig-parted-config"),
              WAIT_MS);
    settle(f, 300);
    assert_int_equal(f->extra_deletes, 1);
    assert_int_equal(f->extra_applies, 5); /* the ConfigMap; the RuntimeClasses unchanged */
    json_t *cm = json_object_get(f->store[K_CM], "default-mig-parted-config");
    assert_string_equal(
        json_string_value(json_object_get(
            json_array_get(json_object_get(json_object_get(cm, "metadata"), "ownerReferences"), 0),
            "kind")),
        "GpuPolicy");
}

/* The condition of type in the policy's status (borrowed), or NULL. */
static json_t *condition_of(struct fx *f, const char *type)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(status_of(f), "conditions"), i, c)
    {
        if (!strcmp(json_string_value(json_object_get(c, "type")), type))
            return c;
    }
    return NULL;
}

/* spec.dcgmExporter.serviceMonitor on a cluster without the Prometheus
 * Operator (the fake API server answers its path 404, as an API server
 * without the CRD does): the ServiceMonitor condition says so, the reconcile
 * does not fail (Reconciled True, the rest applied, no retry by backoff),
 * and the ServiceMonitor is tried again at the next full stage. Switched
 * off, the condition goes. */
static void test_service_monitor_without_crd(void **state)
{
    struct fx *f = *state;
    start(f);
    RUN_UNTIL(f, json_object_size(f->store[K_DS]) == NDS_DEFAULT && f->status_writes > 0, WAIT_MS);
    settle(f, 300);
    assert_null(condition_of(f, "ServiceMonitor")); /* not asked for: not said */
    set_spec(f, json_pack("{s:{s:{s:b}}}", "dcgmExporter", "serviceMonitor", "enabled", 1));
    RUN_UNTIL(f, condition_of(f, "ServiceMonitor") != NULL, WAIT_MS);
    settle(f, 300);
    json_t *c = condition_of(f, "ServiceMonitor");
    assert_string_equal(json_string_value(json_object_get(c, "status")), "False");
    assert_string_equal(json_string_value(json_object_get(c, "reason")), "CRDNotInstalled");
    assert_non_null(strstr(json_string_value(json_object_get(c, "message")),
                           "servicemonitors.monitoring.coreos.com"));
    c = condition_of(f, "Reconciled");
    assert_string_equal(json_string_value(json_object_get(c, "status")), "True");
    assert_non_null(json_object_get(f->store[K_SVC], "gpuop-dcgm-exporter"));
    assert_int_equal(f->c->stats.reconcile_errors, 0);
    set_spec(f, json_pack("{s:{s:{s:b}}}", "dcgmExporter", "serviceMonitor", "enabled", 0));
    RUN_UNTIL(f, condition_of(f, "ServiceMonitor") == NULL, WAIT_MS);
}

/* spec.draDriver on an API server that does not serve resource.k8s.io/v1
 * (the fake answers its paths 404): the plugin's DaemonSet is applied, the
 * DeviceClasses condition says APINotServed naming the API, the reconcile
 * does not fail (Reconciled True, no error). Switched off, the DaemonSet
 * goes and the condition with it. */
static void test_device_classes_not_served(void **state)
{
    struct fx *f = *state;
    start(f);
    RUN_UNTIL(f, json_object_size(f->store[K_DS]) == NDS_DEFAULT && f->status_writes > 0, WAIT_MS);
    settle(f, 300);
    assert_null(condition_of(f, "DeviceClasses")); /* not asked for: not said */
    set_spec(f, json_pack("{s:{s:b}}", "draDriver", "enabled", 1));
    RUN_UNTIL(f,
              condition_of(f, "DeviceClasses") != NULL &&
                  json_object_get(f->store[K_DS], "gpuop-dra-driver"),
              WAIT_MS);
    settle(f, 300);
    json_t *c = condition_of(f, "DeviceClasses");
    assert_string_equal(json_string_value(json_object_get(c, "status")), "False");
    assert_string_equal(json_string_value(json_object_get(c, "reason")), "APINotServed");
    assert_non_null(strstr(json_string_value(json_object_get(c, "message")), "resource.k8s.io/v1"));
    c = condition_of(f, "Reconciled");
    assert_string_equal(json_string_value(json_object_get(c, "status")), "True");
    assert_int_equal(f->c->stats.reconcile_errors, 0);
    set_spec(f, json_pack("{s:{s:b}}", "draDriver", "enabled", 0));
    RUN_UNTIL(f,
              condition_of(f, "DeviceClasses") == NULL &&
                  !json_object_get(f->store[K_DS], "gpuop-dra-driver"),
              WAIT_MS);
    assert_int_equal(f->slice_requests, 0); /* its ResourceSlices never asked for */
}

/* New: a ResourceSlice of NVIDIA's DRA driver on node, ndev devices. */
static json_t *dra_slice(const char *node, int ndev)
{
    json_t *devs = json_array();
    for (int i = 0; i < ndev; i++)
        json_array_append_new(devs, json_pack("{s:s}", "name", "gpu"));
    return json_pack("{s:s, s:s, s:{}, s:{s:s, s:s, s:{s:s, s:i}, s:o}}", "apiVersion",
                     "resource.k8s.io/v1", "kind", "ResourceSlice", "metadata", "spec", "driver",
                     GPUOP_DRA_GPU_DRIVER, "nodeName", node, "pool", "name", node, "generation", 1,
                     "devices", devs);
}

/* node's cached DRA fold is {devices, slices, watched}. */
static bool fold_is(struct fx *f, const char *node, int devices, int slices, int watched)
{
    const struct gpuop_node *n = gpuop_caches_node(gpuop_controller_caches(f->c), node);
    return n && n->dra.devices == devices && n->dra.slices == slices && n->dra.watched == watched;
}

/* Issue 42: the DRA driver's ResourceSlices, watched once its DeviceClass
 * was applied (the API serves resource.k8s.io/v1), folded into each
 * node: a slice listed before the watch, a Node's update keeping its
 * fold, a slice that came before its Node, a slice changed and deleted,
 * slices deleted and recreated elsewhere while the watch was away (ERROR
 * 410, a relist), a Node deleted and re-added with its slices; the DRA
 * driver off: the watch stops and every fold is emptied. */
static void test_slices_folded(void **state)
{
    struct fx *f = *state;
    f->dra_served = true;
    put(f, K_SLICE, "gpu-1-a", dra_slice("gpu-1", 8), "ADDED");
    start_verify(f);
    RUN_UNTIL(f, json_object_size(f->store[K_DS]) == NDS_DEFAULT && f->status_writes > 0, WAIT_MS);
    assert_int_equal(f->slice_requests, 0); /* the DRA driver is off: not asked */
    assert_true(fold_is(f, "gpu-1", 0, 0, 0));
    set_spec(f, json_pack("{s:{s:b}}", "draDriver", "enabled", 1));
    RUN_UNTIL(f, fold_is(f, "gpu-1", 8, 1, 1), WAIT_MS);
    assert_non_null(json_object_get(f->store[K_DC], "gpu.nvidia.com"));
    /* the Node changes: its fold stays */
    const struct gpuop_node *was = gpuop_caches_node(gpuop_controller_caches(f->c), "gpu-1");
    json_t *n1 = os_node("gpu-1", "ubuntu", "24.04", NULL);
    json_object_set_new(json_object_get(json_object_get(n1, "metadata"), "labels"),
                        "nvidia.com/gpu.deploy.dra-driver", json_string("true"));
    put(f, K_NODE, "gpu-1", n1, "MODIFIED");
    RUN_UNTIL(f, gpuop_caches_node(gpuop_controller_caches(f->c), "gpu-1") != was, WAIT_MS);
    assert_true(fold_is(f, "gpu-1", 8, 1, 1));
    /* a slice before its Node */
    put(f, K_SLICE, "gpu-2-a", dra_slice("gpu-2", 4), "ADDED");
    put(f, K_SLICE, "gpu-2-b", dra_slice("gpu-2", 0), "ADDED");
    run_for(f, 100);
    put(f, K_NODE, "gpu-2", os_node("gpu-2", "ubuntu", "24.04", NULL), "ADDED");
    RUN_UNTIL(f, fold_is(f, "gpu-2", 4, 2, 1), WAIT_MS);
    /* changed, moved to another node, deleted */
    put(f, K_SLICE, "gpu-2-a", dra_slice("gpu-2", 2), "MODIFIED");
    RUN_UNTIL(f, fold_is(f, "gpu-2", 2, 2, 1), WAIT_MS);
    put(f, K_SLICE, "gpu-2-b", dra_slice("gpu-1", 1), "MODIFIED");
    RUN_UNTIL(f, fold_is(f, "gpu-2", 2, 1, 1) && fold_is(f, "gpu-1", 9, 2, 1), WAIT_MS);
    put(f, K_SLICE, "gpu-1-a", dra_slice("gpu-1", 8), "DELETED");
    RUN_UNTIL(f, fold_is(f, "gpu-1", 1, 1, 1), WAIT_MS);
    /* while the watch is away, a slice deleted, one recreated on another
     * node, one added; then ERROR 410: the relist's end takes out what
     * it did not hold (issue 42: the slices have no store of their own) */
    struct gpuop_informer_stats st;
    gpuop_caches_stats(gpuop_controller_caches(f->c), GPUOP_CACHES_SLICE, &st);
    uint64_t relists = st.relists;
    put_unwatched(f, K_SLICE, "gpu-2-a", dra_slice("gpu-2", 2), "DELETED");
    put_unwatched(f, K_SLICE, "gpu-2-b", dra_slice("gpu-2", 3), "ADDED");
    put_unwatched(f, K_SLICE, "gpu-1-c", dra_slice("gpu-1", 5), "ADDED");
    expire_watch(f, K_SLICE);
    RUN_UNTIL(f, fold_is(f, "gpu-1", 5, 1, 1) && fold_is(f, "gpu-2", 3, 1, 1), WAIT_MS);
    gpuop_caches_stats(gpuop_controller_caches(f->c), GPUOP_CACHES_SLICE, &st);
    assert_int_equal(st.relists, relists + 1);
    /* a relist that only finds a slice gone still wakes the controller */
    settle(f, 300);
    uint64_t reconciles = f->c->stats.reconciles;
    put_unwatched(f, K_SLICE, "gpu-1-c", dra_slice("gpu-1", 5), "DELETED");
    expire_watch(f, K_SLICE);
    RUN_UNTIL(f, fold_is(f, "gpu-1", 0, 0, 1) && f->c->stats.reconciles > reconciles, WAIT_MS);
    /* and a Node that goes keeps its slices for when it comes back */
    put(f, K_NODE, "gpu-2", os_node("gpu-2", "ubuntu", "24.04", NULL), "DELETED");
    RUN_UNTIL(f, !gpuop_caches_node(gpuop_controller_caches(f->c), "gpu-2"), WAIT_MS);
    put(f, K_SLICE, "gpu-2-c", dra_slice("gpu-2", 1), "ADDED");
    put(f, K_NODE, "gpu-2", os_node("gpu-2", "ubuntu", "24.04", NULL), "ADDED");
    RUN_UNTIL(f, fold_is(f, "gpu-2", 4, 2, 1), WAIT_MS);
    assert_true(fold_is(f, "gpu-1", 0, 0, 1));
    settle(f, 200);
    assert_int_equal(f->c->stats.analysis_mismatches, 0);
    /* the DRA driver off: its DeviceClass deleted, the slices not watched */
    set_spec(f, json_pack("{s:{s:b}}", "draDriver", "enabled", 0));
    RUN_UNTIL(f, fold_is(f, "gpu-1", 0, 0, 0) && fold_is(f, "gpu-2", 0, 0, 0), WAIT_MS);
    assert_null(json_object_get(f->store[K_DC], "gpu.nvidia.com"));
    assert_int_equal(f->c->stats.analysis_mismatches, 0);
}

/* spec.operator.runtimeClass renamed: the RuntimeClass is applied under
 * the new name (its handler the same) and the one gpuop applied under the
 * old name is deleted after it, once. */
static void test_runtime_class_rename(void **state)
{
    struct fx *f = *state;
    start(f);
    RUN_UNTIL(f, json_object_get(f->store[K_RC], "nvidia") && f->status_writes > 0, WAIT_MS);
    settle(f, 300);
    int applies = f->extra_applies;
    assert_int_equal(f->extra_deletes, 0);

    set_spec(f, json_pack("{s:{s:s}}", "operator", "runtimeClass", "nvidia-container-runtime"));
    RUN_UNTIL(f,
              json_object_get(f->store[K_RC], "nvidia-container-runtime") &&
                  !json_object_get(f->store[K_RC], "nvidia"),
              WAIT_MS);
    settle(f, 300);
    json_t *rc = json_object_get(f->store[K_RC], "nvidia-container-runtime");
    assert_string_equal(json_string_value(json_object_get(rc, "handler")),
                        "nvidia-container-runtime");
    assert_int_equal(f->extra_deletes, 1);
    assert_int_equal(f->extra_applies, applies + 1);
    json_t *ds = json_object_get(f->store[K_DS], "gpuop-device-plugin");
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(json_object_get(ds, "spec"), "template"), "spec"),
            "runtimeClassName")),
        "nvidia-container-runtime");
    run_for(f, 500);
    assert_int_equal(f->extra_deletes, 1); /* not again */
}

/* spec.cdi.enabled false (issue 39): the nvidia-cdi and nvidia-legacy
 * RuntimeClasses gpuop applied are deleted, once each, as the GPU
 * Operator's RuntimeClasses does; nvidia stays; the device plugin's
 * DaemonSet goes to the legacy envvar strategy. Back on, they return. */
static void test_cdi_runtime_classes(void **state)
{
    struct fx *f = *state;
    start(f);
    RUN_UNTIL(f, json_object_get(f->store[K_RC], "nvidia-legacy") && f->status_writes > 0, WAIT_MS);
    settle(f, 300);
    int applies = f->extra_applies;
    assert_int_equal(f->extra_deletes, 0);

    set_spec(f, json_pack("{s:{s:b}}", "cdi", "enabled", 0));
    RUN_UNTIL(f,
              !json_object_get(f->store[K_RC], "nvidia-cdi") &&
                  !json_object_get(f->store[K_RC], "nvidia-legacy"),
              WAIT_MS);
    settle(f, 300);
    assert_int_equal(f->extra_deletes, 2);
    assert_int_equal(f->extra_applies, applies); /* nvidia unchanged */
    assert_non_null(json_object_get(f->store[K_RC], "nvidia"));
    json_t *ds = json_object_get(f->store[K_DS], "gpuop-device-plugin");
    json_t *env = json_object_get(
        json_array_get(
            json_object_get(
                json_object_get(json_object_get(json_object_get(ds, "spec"), "template"), "spec"),
                "containers"),
            0),
        "env");
    size_t i;
    json_t *e;
    const char *strategy = NULL;
    json_array_foreach(env, i, e)
    {
        if (!strcmp(json_string_value(json_object_get(e, "name")), "DEVICE_LIST_STRATEGY"))
            strategy = json_string_value(json_object_get(e, "value"));
        assert_string_not_equal(json_string_value(json_object_get(e, "name")), "CDI_ENABLED");
    }
    assert_non_null(strategy);
    assert_string_equal(strategy, "envvar");
    run_for(f, 500);
    assert_int_equal(f->extra_deletes, 2); /* not again */

    set_spec(f, json_pack("{s:{s:b}}", "cdi", "enabled", 1));
    RUN_UNTIL(f,
              json_object_get(f->store[K_RC], "nvidia-cdi") &&
                  json_object_get(f->store[K_RC], "nvidia-legacy"),
              WAIT_MS);
    settle(f, 300);
    assert_int_equal(f->extra_applies, applies + 2);
}

/* The driver per OS pool (SPEC 4b): a pool's DaemonSet comes with its
 * first GPU node and goes with its last; a full reference gives the one
 * gpuop-driver instead, and the pools' DaemonSets go. */
static void test_os_pools(void **state)
{
    struct fx *f = *state;
    start(f);
    RUN_UNTIL(f, json_object_size(f->store[K_DS]) == NDS_DEFAULT && f->status_writes > 0, WAIT_MS);
    json_t *u = json_object_get(f->store[K_DS], "gpuop-driver-ubuntu24.04");
    assert_non_null(u);
    json_t *c = json_array_get(
        json_object_get(
            json_object_get(json_object_get(json_object_get(u, "spec"), "template"), "spec"),
            "containers"),
        0);
    assert_string_equal(json_string_value(json_object_get(c, "image")),
                        "nvcr.io/nvidia/driver:595.91.07-ubuntu24.04");
    /* a RHEL 9.4 node: the pool rhel9, selected on VERSION_ID.major */
    put(f, K_NODE, "gpu-2", os_node("gpu-2", "rhel", "9.4", "9"), "ADDED");
    RUN_UNTIL(f, json_object_get(f->store[K_DS], "gpuop-driver-rhel9") != NULL, WAIT_MS);
    json_t *r = json_object_get(f->store[K_DS], "gpuop-driver-rhel9");
    json_t *sel = json_object_get(
        json_object_get(json_object_get(json_object_get(r, "spec"), "template"), "spec"),
        "nodeSelector");
    assert_string_equal(json_string_value(json_object_get(sel, GPUOP_LABEL_OS_ID)), "rhel");
    assert_string_equal(json_string_value(json_object_get(sel, GPUOP_LABEL_OS_MAJOR)), "9");
    assert_null(json_object_get(sel, GPUOP_LABEL_OS_VERSION));
    /* a second RHEL 9 node (9.6) is the same pool: nothing new */
    put(f, K_NODE, "gpu-3", os_node("gpu-3", "rhel", "9.6", "9"), "ADDED");
    settle(f, 300);
    assert_int_equal(json_object_size(f->store[K_DS]), NDS_DEFAULT + 1);
    /* the pool's last node goes: its DaemonSet goes */
    put(f, K_NODE, "gpu-2", json_incref(json_object_get(f->store[K_NODE], "gpu-2")), "DELETED");
    settle(f, 300);
    assert_non_null(json_object_get(f->store[K_DS], "gpuop-driver-rhel9"));
    put(f, K_NODE, "gpu-3", json_incref(json_object_get(f->store[K_NODE], "gpu-3")), "DELETED");
    RUN_UNTIL(f, !json_object_get(f->store[K_DS], "gpuop-driver-rhel9"), WAIT_MS);
    assert_int_equal(f->deletes, 1);
    /* the status lists the pools' DaemonSets as the one driver operand */
    settle(f, 300);
    json_t *op0 = json_array_get(json_object_get(status_of(f), "operands"), 0);
    json_t *list = json_object_get(op0, "daemonSets");
    assert_int_equal(json_array_size(list), 1);
    assert_string_equal(json_string_value(json_array_get(list, 0)), "gpuop-driver-ubuntu24.04");
    /* a full reference: one gpuop-driver, the pools' DaemonSets deleted */
    set_spec(f, json_pack("{s:{s:s}}", "driver", "image", "r.example/driver:1-ubuntu24.04"));
    RUN_UNTIL(f,
              json_object_get(f->store[K_DS], "gpuop-driver") &&
                  !json_object_get(f->store[K_DS], "gpuop-driver-ubuntu24.04"),
              WAIT_MS);
    settle(f, 300);
    assert_int_equal(json_object_size(f->store[K_DS]), NDS_DEFAULT);
    assert_string_equal(operand_apply(f, 0), "Current");
}

/* The driver image of the DaemonSet name in the fake API server; borrowed. */
/* The member at path ("a/b/0/c", array indexes by number) of the stored
 * DaemonSet name, borrowed; NULL when absent. */
static json_t *ds_at(struct fx *f, const char *name, const char *path)
{
    char buf[256];
    json_t *o = json_object_get(f->store[K_DS], name);
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *tok = strtok(buf, "/"); tok && o; tok = strtok(NULL, "/"))
        o = json_is_array(o) ? json_array_get(o, (size_t)atoi(tok)) : json_object_get(o, tok);
    return o;
}

static const char *ds_image(struct fx *f, const char *name)
{
    json_t *ds = json_object_get(f->store[K_DS], name);
    json_t *c = json_array_get(
        json_object_get(
            json_object_get(json_object_get(json_object_get(ds, "spec"), "template"), "spec"),
            "containers"),
        0);
    return json_string_value(json_object_get(c, "image"));
}

/* A GPU node of Ubuntu 24.04 on kernel (NULL: no kernel label). */
static json_t *kernel_node(const char *name, const char *kernel)
{
    json_t *n = os_node(name, "ubuntu", "24.04", NULL);
    if (kernel)
        json_object_set_new(json_object_get(json_object_get(n, "metadata"), "labels"),
                            GPUOP_LABEL_KERNEL, json_string(kernel));
    return n;
}

/* Precompiled drivers: a DaemonSet per OS pool and kernel; a node whose
 * kernel changes moves to the other kernel's DaemonSet (the caches count
 * the kernel in a pool's identity, so the stage renders again), and the
 * old kernel's goes with its last node; compiled again, the OS pool's
 * DaemonSet comes back and the kernels' go. */
static void test_kernel_pools(void **state)
{
    struct fx *f = *state;
    start(f);
    RUN_UNTIL(f, json_object_size(f->store[K_DS]) == NDS_DEFAULT && f->status_writes > 0, WAIT_MS);
    put(f, K_NODE, "gpu-1", kernel_node("gpu-1", "6.8.0-1"), "MODIFIED");
    put(f, K_NODE, "gpu-2", kernel_node("gpu-2", "6.8.0-2"), "ADDED");
    set_spec(f, json_pack("{s:{s:b}}", "driver", "usePrecompiled", 1));
    const char *k1 = "gpuop-driver-6.8.0-1-ubuntu24.04", *k2 = "gpuop-driver-6.8.0-2-ubuntu24.04";
    RUN_UNTIL(f,
              json_object_get(f->store[K_DS], k1) && json_object_get(f->store[K_DS], k2) &&
                  !json_object_get(f->store[K_DS], "gpuop-driver-ubuntu24.04"),
              WAIT_MS);
    assert_string_equal(ds_image(f, k2), "nvcr.io/nvidia/driver:595.91.07-6.8.0-2-ubuntu24.04");
    /* gpu-2 boots kernel 6.8.0-3: a new DaemonSet, 6.8.0-2's goes */
    put(f, K_NODE, "gpu-2", kernel_node("gpu-2", "6.8.0-3"), "MODIFIED");
    const char *k3 = "gpuop-driver-6.8.0-3-ubuntu24.04";
    RUN_UNTIL(f, json_object_get(f->store[K_DS], k3) && !json_object_get(f->store[K_DS], k2),
              WAIT_MS);
    /* a node without the kernel label: no DaemonSet for it, nothing else moves */
    put(f, K_NODE, "gpu-3", kernel_node("gpu-3", NULL), "ADDED");
    settle(f, 300);
    assert_int_equal(json_object_size(f->store[K_DS]), NDS_DEFAULT + 1);
    /* compiled again */
    set_spec(f, json_pack("{s:{s:b}}", "driver", "usePrecompiled", 0));
    RUN_UNTIL(f,
              json_object_get(f->store[K_DS], "gpuop-driver-ubuntu24.04") &&
                  !json_object_get(f->store[K_DS], k1) && !json_object_get(f->store[K_DS], k3),
              WAIT_MS);
    settle(f, 300);
    assert_int_equal(json_object_size(f->store[K_DS]), NDS_DEFAULT);
    assert_string_equal(operand_apply(f, 0), "Current");
}

/* Driver pools (spec.driver.pools): a node labelled gpuop.dev/driver-pool
 * with a pool's name gets its pool's DaemonSet for its OS (the pool's
 * version), the default's keeps off it; the pool gone from the policy, its
 * DaemonSet stays while its node carries its name (it drains), then goes
 * and its node is the default's again. */
static void test_driver_pools(void **state)
{
    struct fx *f = *state;
    const char *a100 = "gpuop-driver-a100-ubuntu24.04", *dflt = "gpuop-driver-ubuntu24.04";
    start(f);
    RUN_UNTIL(f, json_object_size(f->store[K_DS]) == NDS_DEFAULT && f->status_writes > 0, WAIT_MS);
    json_t *n = os_node("gpu-1", "ubuntu", "24.04", NULL);
    json_object_set_new(json_object_get(json_object_get(n, "metadata"), "labels"),
                        GPUOP_LABEL_DRIVER_POOL, json_string("a100"));
    put(f, K_NODE, "gpu-1", n, "MODIFIED");
    put(f, K_NODE, "gpu-2", os_node("gpu-2", "ubuntu", "24.04", NULL), "ADDED");
    set_spec(f, json_pack("{s:{s:s, s:[{s:s, s:s}]}}", "driver", "version", "580.1", "pools",
                          "name", "a100", "version", "550.1"));
    RUN_UNTIL(f,
              ds_image(f, a100) && ds_image(f, dflt) &&
                  !strcmp(ds_image(f, dflt), "nvcr.io/nvidia/driver:580.1-ubuntu24.04"),
              WAIT_MS);
    assert_string_equal(ds_image(f, a100), "nvcr.io/nvidia/driver:550.1-ubuntu24.04");
    json_t *ps = json_object_get(
        json_object_get(json_object_get(json_object_get(f->store[K_DS], a100), "spec"), "template"),
        "spec");
    assert_string_equal(json_string_value(json_object_get(json_object_get(ps, "nodeSelector"),
                                                          GPUOP_LABEL_DRIVER_POOL)),
                        "a100");
    settle(f, 300);
    assert_int_equal(json_object_size(f->store[K_DS]), NDS_DEFAULT + 1);
    assert_string_equal(operand_apply(f, 0), "Current");
    /* the pool gone while gpu-1 still carries its name: it drains, its
     * DaemonSet kept as it is (not applied: its image stays), the
     * default's keeps off gpu-1 (issue 38) */
    set_spec(f, json_pack("{s:{s:s}}", "driver", "version", "581.1"));
    RUN_UNTIL(f, !strcmp(ds_image(f, dflt), "nvcr.io/nvidia/driver:581.1-ubuntu24.04"), WAIT_MS);
    settle(f, 300);
    assert_string_equal(ds_image(f, a100), "nvcr.io/nvidia/driver:550.1-ubuntu24.04");
    json_t *expr = ds_at(f, dflt,
                         "spec/template/spec/affinity/nodeAffinity/"
                         "requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/"
                         "matchExpressions/2");
    assert_string_equal(json_string_value(json_object_get(expr, "key")), GPUOP_LABEL_DRIVER_POOL);
    assert_string_equal(json_string_value(json_array_get(json_object_get(expr, "values"), 0)),
                        "a100");
    /* gpu-1 moved (its label gone): the DaemonSet deleted, the default's stays */
    put(f, K_NODE, "gpu-1", os_node("gpu-1", "ubuntu", "24.04", NULL), "MODIFIED");
    RUN_UNTIL(f, !json_object_get(f->store[K_DS], a100), WAIT_MS);
    settle(f, 300);
    assert_non_null(json_object_get(f->store[K_DS], dflt));
    assert_int_equal(json_object_size(f->store[K_DS]), NDS_DEFAULT);
}

/* A mistyped spec.driver.version (issue 37, probe 11): the driver's
 * DaemonSets are kept as they run, never rolled out to the built-in
 * default (which would upgrade every node to a version nobody asked
 * for); Reconciled=False names the field. Fixed, it rolls out. */
static void test_invalid_spec_kept(void **state)
{
    struct fx *f = *state;
    const char *drv = "gpuop-driver-ubuntu24.04";
    start(f);
    RUN_UNTIL(f, json_object_size(f->store[K_DS]) == NDS_DEFAULT && f->status_writes > 0, WAIT_MS);
    for (int gen = 2; gen <= 4; gen++) {
        static const char *const versions[] = {"580.95.05", "580 95 05", "580.126.09"};
        json_t *p = json_deep_copy(json_object_get(f->store[K_POLICY], "main"));
        json_object_set_new(p, "spec",
                            json_pack("{s:{s:s}}", "driver", "version", versions[gen - 2]));
        json_object_set_new(json_object_get(p, "metadata"), "generation", json_integer(gen));
        put(f, K_POLICY, "main", p, "MODIFIED");
        if (gen == 3) { /* the typo: nothing is sent for the driver */
            int before = f->applies[0];
            settle(f, 500);
            assert_int_equal(f->applies[0], before);
            assert_string_equal(ds_image(f, drv), "nvcr.io/nvidia/driver:580.95.05-ubuntu24.04");
            json_t *rec = json_array_get(json_object_get(status_of(f), "conditions"), 3);
            assert_string_equal(json_string_value(json_object_get(rec, "status")), "False");
            const char *m = json_string_value(json_object_get(rec, "message"));
            assert_non_null(strstr(m, "spec.driver.version"));
            assert_non_null(strstr(m, "kept as they run"));
            continue;
        }
        char want[128];
        snprintf(want, sizeof(want), "nvcr.io/nvidia/driver:%s-ubuntu24.04", versions[gen - 2]);
        RUN_UNTIL(f, ds_image(f, drv) && !strcmp(ds_image(f, drv), want), WAIT_MS);
    }
}

static void test_refused_backoff(void **state)
{
    struct fx *f = *state;
    f->refuse = "gpuop-container-toolkit";
    start(f);
    RUN_UNTIL(f,
              f->status_writes > 0 && operand_apply(f, 1) && !strcmp(operand_apply(f, 1), "Failed"),
              WAIT_MS);
    run_for(f, 3000);
    print_message("refused apply sent %d times in about 3 s; %d status writes\n", f->nrefused,
                  f->status_writes);
    /* 100 ms doubling: by 3 s at most 1 + 5 retries (0.1+0.2+0.4+0.8+1.6) */
    assert_true(f->nrefused >= 2);
    assert_true(f->nrefused <= 6);
    /* never sooner than the backoff: n attempts span at least 100 ms x
     * (1 + 2 + ... + 2^(n-2)); a slow machine only adds to it */
    uint64_t min_span = 100 * ((1u << (f->nrefused - 1)) - 1);
    assert_true(f->apply_at[f->nrefused - 1] - f->apply_at[0] + 10 >= min_span);
    /* what needs the toolkit was never applied; the driver was */
    assert_int_equal(f->applies[0], 1);
    for (int i = 2; i < gpuop_operand_count(); i++) {
        if (!gpuop_operand_get(i)->enabled)
            continue;
        assert_int_equal(f->applies[i], 0);
        assert_string_equal(operand_apply(f, i), "Blocked");
    }
    /* the status says the same every time: written once (or twice while the
     * driver's DaemonSet arrives), not once per retry or per echo */
    assert_true(f->status_writes <= 2);
}

/* ---- status write pacing ---- */

/* A controller reduced to what the pacing reads (status records, key,
 * write), driven by a clock the test sets: the state is a counter, its
 * digest the counter, a reconcile asks gpuop_ctl_status_due and "writes"
 * (sent at once, answered at once) or remembers when the held key is
 * queued again, as findings_and_status does. */
struct pace_sim {
    struct gpuop_controller c;
    json_t *obj;
    uint64_t now;
    int state, written, writes;
    uint64_t requeue_at; /* 0: none */
    uint64_t write_at[64];
};

static void sim_reconcile(struct pace_sim *s)
{
    uint64_t wait = 0, digest = 1000 + (uint64_t)s->state;
    enum ctl_status_due due = gpuop_ctl_status_due(&s->c, s->obj, digest, s->now, &wait);
    if (due == CTL_STATUS_NOW) {
        assert_true(s->writes < 64);
        s->write_at[s->writes++] = s->now;
        s->written = s->state;
        gpuop_ctl_status_sent(&s->c, s->c.key, s->now);
        gpuop_ctl_status_answered(&s->c, s->c.key, digest, s->obj, "1", NULL);
    } else if (due == CTL_STATUS_HELD) {
        assert_true(wait > 0 && wait <= CTL_STATUS_WRITE_INTERVAL_MS);
        if (!s->requeue_at || s->now + wait < s->requeue_at) /* the queue keeps the earlier */
            s->requeue_at = s->now + wait;
    }
}

/* Moves the clock to t, running the queued-again reconcile on the way. */
static void sim_advance(struct pace_sim *s, uint64_t t)
{
    while (s->requeue_at && s->requeue_at <= t) {
        s->now = s->requeue_at;
        s->requeue_at = 0;
        sim_reconcile(s);
    }
    s->now = t;
}

static void sim_init(struct pace_sim *s)
{
    memset(s, 0, sizeof(*s));
    gpuop_map_init(&s->c.status_recs);
    s->c.key = "main";
    s->c.leader = true;
    s->obj = json_pack("{s:{s:s}}", "metadata", "resourceVersion", "1");
    s->now = 100000;
    s->written = -1;
}

static void sim_free(struct pace_sim *s)
{
    gpuop_ctl_status_free(&s->c);
    json_decref(s->obj);
}

static void test_status_pacing_clock(void **state)
{
    (void)state;
    assert_int_equal(gpuop_ctl_status_pace(false, 0, 5), 0);
    assert_int_equal(gpuop_ctl_status_pace(true, 1000, 1000), CTL_STATUS_WRITE_INTERVAL_MS);
    assert_int_equal(gpuop_ctl_status_pace(true, 1000, 1000 + CTL_STATUS_WRITE_INTERVAL_MS), 0);

    for (int n = 1; n <= 40; n += 13) {
        struct pace_sim s;
        sim_init(&s);
        /* N changes inside one interval: the first goes out at once, the
         * rest wait for one trailing write of the last state */
        uint64_t t0 = s.now;
        for (int i = 0; i < n; i++) {
            sim_advance(&s, t0 + (uint64_t)i * (CTL_STATUS_WRITE_INTERVAL_MS - 1) / (uint64_t)n);
            s.state++;
            sim_reconcile(&s);
            if (i == 0) {
                assert_int_equal(s.writes, 1); /* immediately when quiet */
                assert_true(s.write_at[0] == t0);
            }
        }
        sim_advance(&s, t0 + 10 * CTL_STATUS_WRITE_INTERVAL_MS);
        assert_true(s.writes <= 2);
        assert_int_equal(s.written, s.state); /* the last state is never lost */
        assert_int_equal(s.writes, n == 1 ? 1 : 2);
        /* quiet: reconciles with nothing changed write nothing */
        int w = s.writes;
        for (int i = 0; i < 20; i++) {
            sim_advance(&s, s.now + 700);
            sim_reconcile(&s);
        }
        assert_int_equal(s.writes, w);
        /* the first change after a quiet interval goes out at once */
        s.state++;
        sim_reconcile(&s);
        assert_int_equal(s.writes, w + 1);
        assert_true(s.write_at[w] == s.now);
        /* a change that flips back before the interval's end writes nothing more */
        sim_advance(&s, s.now + 10);
        s.state++;
        sim_reconcile(&s);
        s.state--;
        sim_advance(&s, s.now + 10);
        sim_reconcile(&s);
        sim_advance(&s, s.now + 5 * CTL_STATUS_WRITE_INTERVAL_MS);
        assert_int_equal(s.writes, w + 1);
        assert_int_equal(s.written, s.state);
        sim_free(&s);
    }

    /* churn for 5 s, a change every 10 ms: at most one write per interval
     * (plus the first), never two closer than the interval, last one kept */
    struct pace_sim s;
    sim_init(&s);
    uint64_t t0 = s.now;
    for (uint64_t t = t0; t < t0 + 5 * CTL_STATUS_WRITE_INTERVAL_MS; t += 10) {
        sim_advance(&s, t);
        s.state++;
        sim_reconcile(&s);
    }
    sim_advance(&s, s.now + 10 * CTL_STATUS_WRITE_INTERVAL_MS);
    assert_true(s.writes <= 6);
    for (int i = 1; i < s.writes; i++)
        assert_true(s.write_at[i] - s.write_at[i - 1] >= CTL_STATUS_WRITE_INTERVAL_MS);
    assert_int_equal(s.written, s.state);
    /* not leading: nothing written, nothing held */
    s.c.leader = false;
    s.state++;
    sim_reconcile(&s);
    assert_false(gpuop_ctl_status_held(&s.c));
    sim_free(&s);
}

/* The real controller: a burst of node changes inside one interval after
 * a quiet one gives at most two status writes (the first at once, one
 * trailing), and the status ends at the last state; then the quiet
 * window writes nothing. */
static void test_status_churn_coalesced(void **state)
{
    struct fx *f = *state;
    start(f);
    RUN_UNTIL(f, json_object_size(f->store[K_DS]) == NDS_DEFAULT && f->status_writes > 0, WAIT_MS);
    settle(f, 300);
    run_for(f, CTL_STATUS_WRITE_INTERVAL_MS + 100); /* a quiet interval */
    int before = f->status_writes;
    enum { N = 30 };
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof(name), "gpu-burst-%d", i);
        put(f, K_NODE, name, os_node(name, "ubuntu", "24.04", NULL), "ADDED");
        if (i % 10 == 9)
            run_for(f, 30); /* several watch deliveries, several reconciles */
    }
    RUN_UNTIL(f, gpu_nodes_of(f) == 1 + N, WAIT_MS);
    settle(f, 300);
    print_message("%d node changes: %d status writes\n", N, f->status_writes - before);
    assert_true(f->status_writes - before >= 1);
    assert_true(f->status_writes - before <= 2);
    assert_int_equal(gpu_nodes_of(f), 1 + N);
    int w = f->status_writes;
    run_for(f, 2 * CTL_STATUS_WRITE_INTERVAL_MS);
    assert_int_equal(f->status_writes, w);
}

/* A status the pacing holds is written when the controller closes. */
static void test_status_close_flushes(void **state)
{
    struct fx *f = *state;
    start(f);
    RUN_UNTIL(f, json_object_size(f->store[K_DS]) == NDS_DEFAULT && f->status_writes > 0, WAIT_MS);
    settle(f, 300);
    run_for(f, CTL_STATUS_WRITE_INTERVAL_MS + 100);
    put(f, K_NODE, "gpu-a", os_node("gpu-a", "ubuntu", "24.04", NULL), "ADDED");
    RUN_UNTIL(f, gpu_nodes_of(f) == 2, WAIT_MS); /* written at once */
    put(f, K_NODE, "gpu-b", os_node("gpu-b", "ubuntu", "24.04", NULL), "ADDED");
    RUN_UNTIL(f, gpuop_ctl_status_held(f->c) || gpu_nodes_of(f) == 3, WAIT_MS);
    int w = f->status_writes;
    gpuop_controller_close(f->c, c_closed, f);
    RUN_UNTIL(f, f->c_closed, WAIT_MS);
    f->c = NULL;
    assert_int_equal(gpu_nodes_of(f), 3);
    assert_true(f->status_writes <= w + 1);
}

/* The policy as edited by someone else (stolen: obj), stored and watched,
 * seen in gpuop's cache, and the key reconciled. */
static void edit_policy(struct fx *f, json_t *obj)
{
    put(f, K_POLICY, "main", obj, "MODIFIED");
    char rv[32];
    snprintf(rv, sizeof(rv), "%ld", f->rv);
    RUN_UNTIL(
        f,
        !strcmp(rv, json_string_value(json_object_get(
                        json_object_get(gpuop_caches_policy(f->c->caches, "main"), "metadata"),
                        "resourceVersion"))),
        WAIT_MS);
    /* the cache holds status.nodes as a digest, not the nodes */
    const char *held = json_string_value(json_object_get(
        json_object_get(gpuop_caches_policy(f->c->caches, "main"), "status"), "nodes"));
    assert_non_null(held);
    assert_int_equal(strncmp(held, "digest:", 7), 0);
    assert_int_equal(gpuop_queue_add(f->c->queue, "main"), 0);
}

/* Someone else writes the status: a change to status.nodes, which the
 * cache and the write's answer both hold as a digest of its bytes, is
 * put back at the next reconcile; a change of the policy's labels alone
 * leaves the status as written (the two digests agree): no write. */
static void test_status_edited_elsewhere(void **state)
{
    struct fx *f = *state;
    start(f);
    RUN_UNTIL(f, json_object_size(f->store[K_DS]) == NDS_DEFAULT && f->status_writes > 0, WAIT_MS);
    settle(f, 300);
    json_t *mine = json_deep_copy(json_object_get(status_of(f), "nodes"));
    assert_true(json_array_size(mine) > 0); /* gpu-1 has no operand pod */
    int w = f->status_writes;

    json_t *p = json_deep_copy(json_object_get(f->store[K_POLICY], "main"));
    json_object_set_new(json_object_get(p, "metadata"), "labels", json_pack("{s:s}", "team", "a"));
    edit_policy(f, p);
    settle(f, 300);
    assert_int_equal(f->status_writes, w);

    p = json_deep_copy(json_object_get(f->store[K_POLICY], "main"));
    json_object_set_new(json_object_get(p, "status"), "nodes",
                        json_pack("[{s:s}]", "name", "gpu-9"));
    edit_policy(f, p);
    RUN_UNTIL(f, f->status_writes > w, WAIT_MS);
    settle(f, 300);
    assert_true(json_equal(json_object_get(status_of(f), "nodes"), mine));
    json_decref(mine);
}

/* The status hash is the hash of the sorted-keys dump, computed as the dump
 * streams out (never held whole): equal to hashing json_dumps' string, the
 * same for key orders that differ, different for a changed value, and the
 * same on a value too big for one chunk of the dumper. */
static void test_json_hash_streams(void **state)
{
    (void)state;
    json_t *a = json_pack("{s:i, s:{s:s, s:[i,i]}, s:b}", "z", 1, "m", "y", "x", "k", 2, 3, "a", 1);
    json_t *b = json_pack("{s:b, s:{s:[i,i], s:s}, s:i}", "a", 1, "m", "k", 2, 3, "y", "x", "z", 1);
    assert_non_null(a);
    assert_non_null(b);
    char *dump = json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    assert_non_null(dump);
    uint64_t want = gpuop_hash_mix(gpuop_hash_bytes(GPUOP_HASH_INIT, dump, strlen(dump)));
    gpuop_json_free(dump);
    assert_true(gpuop_hash_json(a) == want);
    assert_true(gpuop_hash_json(b) == want);
    json_object_set_new(b, "z", json_integer(2));
    assert_true(gpuop_hash_json(b) != want);
    char *big = malloc(1 << 20);
    assert_non_null(big);
    memset(big, 'q', (1 << 20) - 1);
    big[(1 << 20) - 1] = '\0';
    json_object_set_new(a, "big", json_string(big));
    dump = json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    assert_non_null(dump);
    want = gpuop_hash_mix(gpuop_hash_bytes(GPUOP_HASH_INIT, dump, strlen(dump)));
    assert_true(gpuop_hash_json(a) == want);
    gpuop_json_free(dump);
    free(big);
    json_decref(a);
    json_decref(b);
    assert_true(gpuop_hash_json(NULL) == 0);
}

/* ---- the node records kept between reconciles (judge.c, records.c) ---- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(uint32_t n)
{
    return test_rnd(&rng, n);
}

enum { KEEP_NODES = 6, KEEP_ROUNDS = 60 };

/* A pod of DaemonSet ds on node: Pending, Running, or Running and Ready;
 * maybe being deleted. */
static json_t *pod_on(const char *ds, const char *node, int state, bool deleting)
{
    json_t *p = json_pack("{s:s, s:s, s:{s:s, s:[{s:s, s:s}]}, s:{s:s}, s:{s:s}}", "apiVersion",
                          "v1", "kind", "Pod", "metadata", "namespace", NS, "ownerReferences",
                          "kind", "DaemonSet", "name", ds, "spec", "nodeName", node, "status",
                          "phase", state ? "Running" : "Pending");
    if (state == 2)
        json_object_set_new(json_object_get(p, "status"), "conditions",
                            json_pack("[{s:s, s:s}]", "type", "Ready", "status", "True"));
    if (deleting)
        json_object_set_new(json_object_get(p, "metadata"), "deletionTimestamp",
                            json_string("2026-11-29T21:07:40Z"));
    return p;
}

/* One random change of a node or a pod of the fake cluster. */
static void random_change(struct fx *f)
{
    static const char *const ds[] = {"gpuop-driver-ubuntu24.04", "gpuop-container-toolkit",
                                     "gpuop-device-plugin",      "gpuop-gpu-feature-discovery",
                                     "gpuop-dcgm-exporter",      "gpuop-operator-validator"};
    char node[16], pod[64];
    snprintf(node, sizeof(node), "gpu-%u", 1 + rnd(KEEP_NODES));
    bool node_there = json_object_get(f->store[K_NODE], node) != NULL;
    if (rnd(5) == 0) { /* the node: comes, changes a label, goes */
        if (node_there && rnd(4) == 0) {
            put(f, K_NODE, node, json_deep_copy(json_object_get(f->store[K_NODE], node)),
                "DELETED");
            return;
        }
        json_t *n = os_node(node, "ubuntu", "24.04", NULL);
        json_t *labels = json_object_get(json_object_get(n, "metadata"), "labels");
        if (rnd(3) == 0)
            json_object_set_new(labels, "nvidia.com/gpu.deploy.device-plugin",
                                json_string(rnd(2) ? "false" : "true"));
        if (rnd(4) == 0)
            json_object_set_new(labels, "nvidia.com/gpu.present", json_string("false"));
        put(f, K_NODE, node, n, node_there ? "MODIFIED" : "ADDED");
        return;
    }
    const char *d = ds[rnd(6)];
    snprintf(pod, sizeof(pod), "%s-%s", d + strlen("gpuop-"), node);
    bool pod_there = json_object_get(f->store[K_POD], pod) != NULL;
    if (pod_there && rnd(4) == 0) {
        put(f, K_POD, pod, json_deep_copy(json_object_get(f->store[K_POD], pod)), "DELETED");
        return;
    }
    json_t *p = pod_on(d, node, (int)rnd(3), rnd(8) == 0);
    json_t *dsobj = json_object_get(f->store[K_DS], d);
    if (f->template_gens && dsobj && !strcmp(d, ds[0])) { /* the driver's: the current, but on
                                                            every fifth node (random's draws
                                                            unchanged) */
        long long gen =
            json_integer_value(json_object_get(json_object_get(dsobj, "metadata"), "generation"));
        json_object_set_new(json_object_get(p, "metadata"), "labels",
                            json_pack("{s:o}", "pod-template-generation",
                                      json_sprintf("%lld", atoi(node + 4) % 5 ? gen : gen - 1)));
    }
    put(f, K_POD, pod, p, pod_there ? "MODIFIED" : "ADDED");
}

/* The verify oracle: after every reconcile the node records equal a
 * full pass (judge.c compares them and counts a difference), over random
 * node and pod changes (driver pods mostly on their DaemonSet's template
 * generation); the dirty nodes are judged alone (not every node every
 * time), and a DaemonSet's change that every node's judgement reads
 * makes every node dirty. */
static void test_keep_verified(void **state)
{
    struct fx *f = *state;
    struct gpuop_controller_stats st;
    f->template_gens = true;
    start_verify(f);
    RUN_UNTIL(f, json_object_size(f->store[K_DS]) == NDS_DEFAULT && f->status_writes > 0, WAIT_MS);
    settle(f, 100);
    for (int i = 0; i < KEEP_ROUNDS; i++) {
        int n = 1 + (int)rnd(3);
        for (int k = 0; k < n; k++)
            random_change(f);
        run_for(f, 15); /* a delivery; a reconcile when one is due */
    }
    settle(f, 100);
    gpuop_controller_stats(f->c, &st);
    print_message("%d rounds: %llu reconciles, %llu full passes, %llu node updates\n", KEEP_ROUNDS,
                  (unsigned long long)st.reconciles, (unsigned long long)st.analysis_fulls,
                  (unsigned long long)st.analysis_updates);
    assert_int_equal(st.analysis_mismatches, 0);
    assert_true(st.analysis_updates > 0);

    /* a DaemonSet's status changes: the operands' results only, no full
     * pass; its tolerations change: a full pass. Equal each time. */
    uint64_t fulls = st.analysis_fulls;
    json_t *d = json_deep_copy(json_object_get(f->store[K_DS], "gpuop-device-plugin"));
    json_object_set_new(d, "status",
                        json_pack("{s:i, s:i}", "desiredNumberScheduled", 3, "numberReady", 1));
    put(f, K_DS, "gpuop-device-plugin", d, "MODIFIED");
    wait_reconcile(f);
    settle(f, 100);
    gpuop_controller_stats(f->c, &st);
    assert_int_equal(st.analysis_fulls, fulls);
    assert_int_equal(st.analysis_mismatches, 0);
    json_t *op2 = json_array_get(json_object_get(status_of(f), "operands"), 2);
    assert_int_equal(json_integer_value(json_object_get(op2, "desiredNumberScheduled")), 3);
    d = json_deep_copy(json_object_get(f->store[K_DS], "gpuop-device-plugin"));
    json_object_set_new(
        json_object_get(json_object_get(d, "spec"), "template"), "spec",
        json_pack("{s:[{s:s, s:s}]}", "tolerations", "key", "x", "operator", "Exists"));
    put(f, K_DS, "gpuop-device-plugin", d, "MODIFIED");
    wait_reconcile(f);
    settle(f, 100);
    gpuop_controller_stats(f->c, &st);
    assert_true(st.analysis_fulls > fulls);
    assert_int_equal(st.analysis_mismatches, 0);

    /* A node created now without its device plugin's pod: a step within
     * its deadline. The DaemonSet's controller says why it creates none
     * (a Warning Event, while it lacks pods): the step is no progress
     * any more, and only the nodes with that finding are judged again. */
    char ts[32];
    time_t t = time(NULL);
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    json_t *n = os_node("gpu-1", "ubuntu", "24.04", NULL);
    json_object_set_new(json_object_get(n, "metadata"), "creationTimestamp", json_string(ts));
    json_object_set_new(json_object_get(json_object_get(n, "metadata"), "labels"),
                        "nvidia.com/gpu.deploy.device-plugin", json_string("true"));
    put(f, K_NODE, "gpu-1", n, "MODIFIED");
    json_t *pod = json_object_get(f->store[K_POD], "device-plugin-gpu-1");
    if (pod)
        put(f, K_POD, "device-plugin-gpu-1", json_deep_copy(pod), "DELETED");
    wait_reconcile(f);
    settle(f, 100);
    gpuop_controller_stats(f->c, &st);
    fulls = st.analysis_fulls;
    uint64_t updates = st.analysis_updates;
    put(f, K_EVENT, "dp.1",
        json_pack("{s:{s:s}, s:{s:s, s:s}, s:s, s:s, s:s, s:s}", "metadata", "namespace", NS,
                  "involvedObject", "kind", "DaemonSet", "name", "gpuop-device-plugin", "type",
                  "Warning", "reason", "FailedCreate", "message", "exceeded quota", "lastTimestamp",
                  ts),
        "ADDED");
    wait_reconcile(f);
    settle(f, 100);
    gpuop_controller_stats(f->c, &st);
    assert_int_equal(st.analysis_mismatches, 0);
    assert_int_equal(st.analysis_fulls, fulls);
    assert_true(st.analysis_updates > updates);
    op2 = json_array_get(json_object_get(status_of(f), "operands"), 2);
    assert_string_equal(json_string_value(json_object_get(op2, "controllerWarning")),
                        "FailedCreate: exceeded quota");

    /* The DaemonSet controller repeats its Warning within the second:
     * only the Event's count moves, nothing gpuop keeps of it. A pod
     * change is then judged node by node, reading what the controller
     * says from the records' own copy (ASan, valgrind: no read of a freed
     * Event). */
    struct gpuop_informer_stats es;
    gpuop_caches_stats(f->c->caches, GPUOP_CACHES_EVENT, &es);
    uint64_t delivered = es.events;
    json_t *again = json_deep_copy(json_object_get(f->store[K_EVENT], "dp.1"));
    json_object_set_new(again, "count", json_integer(2));
    put(f, K_EVENT, "dp.1", again, "MODIFIED");
    RUN_UNTIL(f, (gpuop_caches_stats(f->c->caches, GPUOP_CACHES_EVENT, &es), es.events > delivered),
              WAIT_MS);
    for (int i = 0; i < 3; i++) { /* a pod of gpu-1 changes phase */
        bool there = json_object_get(f->store[K_POD], "container-toolkit-gpu-1") != NULL;
        put(f, K_POD, "container-toolkit-gpu-1",
            pod_on("gpuop-container-toolkit", "gpu-1", i, false), there ? "MODIFIED" : "ADDED");
        wait_reconcile(f);
    }
    settle(f, 100);
    gpuop_controller_stats(f->c, &st);
    assert_int_equal(st.analysis_mismatches, 0);
    op2 = json_array_get(json_object_get(status_of(f), "operands"), 2);
    assert_string_equal(json_string_value(json_object_get(op2, "controllerWarning")),
                        "FailedCreate: exceeded quota");
}

/* The Events of the records say what a full pass's would: the details a
 * finding borrows from the caches (the pod, its state, since when) are in
 * their messages, not only the finding's key. */
static void test_keep_event_details(void **state)
{
    struct fx *f = *state;
    json_t *p = json_deep_copy(json_object_get(f->store[K_POLICY], "main"));
    json_object_set_new(p, "spec",
                        json_pack("{s:{s:i}}", "findings", "eventGracePeriodSeconds", 0));
    put(f, K_POLICY, "main", p, "MODIFIED");
    json_t *n = os_node("gpu-1", "ubuntu", "24.04", NULL);
    for (int i = 0; i < gpuop_operand_count(); i++) { /* every operand runs here */
        if (!gpuop_operand_get(i)->enabled)
            continue; /* off by default */
        char label[128];
        snprintf(label, sizeof(label), "nvidia.com/gpu.deploy.%s", operands[i]);
        json_object_set_new(json_object_get(json_object_get(n, "metadata"), "labels"), label,
                            json_string("true"));
    }
    put(f, K_NODE, "gpu-1", n, "MODIFIED");
    start_verify(f);
    RUN_UNTIL(f, json_object_size(f->store[K_DS]) == NDS_DEFAULT && f->status_writes > 0, WAIT_MS);
    json_t *pod = pod_on("gpuop-container-toolkit", "gpu-1", 1, false);
    json_object_set_new(json_object_get(pod, "status"), "phase", json_string("Failed"));
    put(f, K_POD, "container-toolkit-gpu-1", pod, "ADDED");
    RUN_UNTIL(f, strstr(f->said, "PodFailed: ") != NULL, WAIT_MS);
    const char *line = strstr(f->said, "PodFailed: ");
    print_message("%.*s\n", (int)strcspn(line, "\n"), line);
    assert_non_null(f->c->judge.rec); /* the records were kept */
    const char *name = strstr(line, "container-toolkit-gpu-1");
    assert_non_null(name); /* the pod the finding is about */
    assert_true(name < line + strcspn(line, "\n"));
}

/* A small cluster keeps its records too: a node's change judges that
 * node (no every-node judgement per reconcile). */
static void test_records_small(void **state)
{
    struct fx *f = *state;
    struct gpuop_controller_stats st;
    start(f);
    RUN_UNTIL(f, json_object_size(f->store[K_DS]) == NDS_DEFAULT && f->status_writes > 0, WAIT_MS);
    settle(f, 100);
    gpuop_controller_stats(f->c, &st);
    uint64_t fulls = st.analysis_fulls;
    for (int i = 0; i < 10; i++) {
        bool there = json_object_get(f->store[K_POD], "container-toolkit-gpu-1") != NULL;
        put(f, K_POD, "container-toolkit-gpu-1",
            pod_on("gpuop-container-toolkit", "gpu-1", i % 2, false), there ? "MODIFIED" : "ADDED");
        wait_reconcile(f);
    }
    settle(f, 100);
    gpuop_controller_stats(f->c, &st);
    assert_true(st.analysis_updates > 0);
    assert_int_equal(st.analysis_fulls, fulls);
    assert_non_null(f->c->judge.rec);
}

/* Whether the policy "main" carries finalizer name. */
#define has_finalizer(f, name) has_finalizer_of(f, "main", name)
/* Whether policy carries finalizer name. */
static bool has_finalizer_of(struct fx *f, const char *policy, const char *name)
{
    json_t *md = json_object_get(json_object_get(f->store[K_POLICY], policy), "metadata"), *v;
    size_t i;
    json_array_foreach(json_object_get(md, "finalizers"), i, v)
    {
        if (!strcmp(json_string_value(v), name))
            return true;
    }
    return false;
}

/* The policy "main" as the API server keeps it once asked to delete it
 * while finalizers hold it (steals nothing). */
static void put_policy_deleting(struct fx *f)
{
    json_t *p = json_deep_copy(json_object_get(f->store[K_POLICY], "main"));
    json_object_set_new(json_object_get(p, "metadata"), "deletionTimestamp",
                        json_string("2026-11-29T21:08:40Z"));
    put(f, K_POLICY, "main", p, "MODIFIED");
}

static const char *condition_message(struct fx *f, const char *type)
{
    const char *m = json_string_value(json_object_get(condition_of(f, type), "message"));
    return m ? m : "";
}

/* Issue 42: the DRA driver enabled, gpuop's finalizer goes on the policy
 * (a merge patch of the whole list, another controller's finalizer kept;
 * a 409 is tried again). The policy deleted while a pod on the plugin's
 * node holds a claim: the plugin's DaemonSet and the policy stay, and the
 * condition says why; the pod gone, the DaemonSet is deleted, then the
 * finalizer removed (the other one kept), and nothing is sent after. */
static void test_deleted_keeps_dra_plugin(void **state)
{
    struct fx *f = *state;
    const char *dra = "gpuop-dra-driver";
    f->holders = json_array();
    start(f);
    RUN_UNTIL(f, json_object_size(f->store[K_DS]) == NDS_DEFAULT && f->status_writes > 0, WAIT_MS);
    settle(f, 300);
    assert_int_equal(f->finalizer_patches, 0); /* no DRA driver: no finalizer */
    json_t *p = json_deep_copy(json_object_get(f->store[K_POLICY], "main"));
    json_object_set_new(json_object_get(p, "metadata"), "finalizers",
                        json_pack("[s]", "example.com/keep"));
    put(f, K_POLICY, "main", p, "MODIFIED");
    f->conflicts = 1;
    set_spec(f, json_pack("{s:{s:b}}", "draDriver", "enabled", 1));
    RUN_UNTIL(f, json_object_get(f->store[K_DS], dra) && has_finalizer(f, GPUOP_FINALIZER_DRA),
              WAIT_MS);
    settle(f, 300);
    assert_true(has_finalizer(f, "example.com/keep"));
    assert_true(f->finalizer_patches >= 2); /* the 409, then once more */
    int patches = f->finalizer_patches;
    assert_true(json_object_get(f->store[K_POLICY], "main") != NULL);

    /* the plugin runs on gpu-1, where a pod holds a claim; deleted */
    put(f, K_POD, "dra-gpu-1", pod_on(dra, "gpu-1", 2, false), "ADDED");
    json_array_append_new(
        f->holders,
        json_pack("{s:{s:s, s:s}, s:{s:s, s:[{s:s, s:s}]}, s:{s:s}}", "metadata", "namespace",
                  "team-a", "name", "train-0", "spec", "nodeName", "gpu-1", "resourceClaims",
                  "name", "gpu", "resourceClaimTemplateName", "gpu", "status", "phase", "Running"));
    settle(f, 300);
    int lists = f->pod_lists;
    put_policy_deleting(f);
    RUN_UNTIL(f, strstr(condition_message(f, "DraPluginDeletion"), "team-a/train-0 on gpu-1"),
              WAIT_MS);
    RUN_UNTIL(f, f->pod_lists >= lists + 2, WAIT_MS); /* listed again: still held */
    assert_non_null(
        strstr(condition_message(f, "DraPluginDeletion"), "The GpuPolicy is being deleted"));
    assert_non_null(json_object_get(f->store[K_DS], dra));
    assert_int_equal(f->deletes, 0);
    assert_true(has_finalizer(f, GPUOP_FINALIZER_DRA));
    assert_int_equal(f->finalizer_patches, patches); /* never added again */

    /* the pod gone: the DaemonSet, then the finalizer */
    json_array_clear(f->holders);
    RUN_UNTIL(f, !has_finalizer(f, GPUOP_FINALIZER_DRA), WAIT_MS);
    assert_null(json_object_get(f->store[K_DS], dra));
    assert_int_equal(f->deletes, 1);
    assert_true(has_finalizer(f, "example.com/keep"));
    patches = f->finalizer_patches;
    settle(f, 500);
    assert_int_equal(f->finalizer_patches, patches); /* nothing more to do */
    assert_null(condition_of(f, "DraPluginDeletion"));
}

/* A policy that is not the active one keeps no finalizer of gpuop's (one
 * restored from a backup, say): removed, another controller's kept. */
static void test_inactive_loses_finalizer(void **state)
{
    struct fx *f = *state;
    start(f);
    RUN_UNTIL(f, json_object_size(f->store[K_DS]) == NDS_DEFAULT && f->status_writes > 0, WAIT_MS);
    settle(f, 300);
    put(f, K_POLICY, "second",
        json_pack("{s:s, s:s, s:{s:I, s:s, s:[s, s]}, s:{}}", "apiVersion", "gpuop.dev/v1alpha1",
                  "kind", "GpuPolicy", "metadata", "generation", (json_int_t)1, "creationTimestamp",
                  "2026-11-30T00:00:00Z", "finalizers", "example.com/keep", GPUOP_FINALIZER_DRA,
                  "spec"),
        "ADDED");
    RUN_UNTIL(f, !has_finalizer_of(f, "second", GPUOP_FINALIZER_DRA), WAIT_MS);
    assert_true(has_finalizer_of(f, "second", "example.com/keep"));
    int patches = f->finalizer_patches;
    assert_true(patches >= 1);
    settle(f, 300);
    assert_int_equal(f->finalizer_patches, patches);
    assert_false(has_finalizer(f, GPUOP_FINALIZER_DRA)); /* the active one: no DRA driver */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_hash_streams),
        cmocka_unit_test(test_status_pacing_clock),
        cmocka_unit_test_setup_teardown(test_status_churn_coalesced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_status_close_flushes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_status_edited_elsewhere, setup, teardown),
        cmocka_unit_test_setup_teardown(test_apply_then_quiet, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drift_put_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deleting_recreated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deleted_while_applying, setup, teardown),
        cmocka_unit_test_setup_teardown(test_disabled_deleted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deleted_keeps_dra_plugin, setup, teardown),
        cmocka_unit_test_setup_teardown(test_inactive_loses_finalizer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_apply_only_when_its_inputs_move, setup, teardown),
        cmocka_unit_test_setup_teardown(test_findings_events_coalesced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_findings_reconcile_gap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cdi_runtime_classes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_runtime_class_rename, setup, teardown),
        cmocka_unit_test_setup_teardown(test_extras, setup, teardown),
        cmocka_unit_test_setup_teardown(test_service_monitor_without_crd, setup, teardown),
        cmocka_unit_test_setup_teardown(test_device_classes_not_served, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slices_folded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_os_pools, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kernel_pools, setup, teardown),
        cmocka_unit_test_setup_teardown(test_driver_pools, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalid_spec_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_backoff, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keep_verified, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keep_event_details, setup, teardown),
        cmocka_unit_test_setup_teardown(test_records_small, setup, teardown),
    };
    return cmocka_run_group_tests(tests, process_setup, process_teardown);
}
