/*
 * test_informer.c - protocol edge cases of the watch cache against the
 * scripted fake API server (test/unit/support/fakeapi.h), all on one libuv
 * loop: paged lists, watch events, resume from the last resourceVersion,
 * bookmarks, 410 in both forms, expired continue tokens, errors with
 * backoff, cut and malformed streams, the line limit, the same/convert
 * ops, and closing with a stream in flight; and the same paths in stream
 * mode (no store: objects told as they come, lists bracketed).
 *
 * Each test sets a route: a function that answers the n-th list or the
 * n-th watch. Watches a route does not script are held open, so the
 * informer idles. Items are small structs made by a convert op that counts
 * them, so a leak or a double free of items shows up as a nonzero count.
 * Every wait is bounded by a watchdog timer; teardown closes the informer,
 * the client and the server and checks that uv_loop_close finds no handle.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fakeapi.h"
#include "waiter.h"
#include "gpuop/informer.h"
#include "gpuop/jsonarena.h"
#include "gpuop/pool.h"

#define STR_(x) #x
#define STR(x)  STR_(x)
#include "gpuop/kube.h"
#include "gpuop/log.h"
#include "process_setup.h"

#define WAIT_MS    20000 /* generous: valgrind */
#define BACKOFF_MS 40

/* ---- items ---- */

struct item {
    char v[32];      /* the value the operator cares about */
    long hb;         /* a heartbeat it does not */
    const char *key; /* the store's key, borrowed as the informer allows */
};

static int live_items; /* converted and not yet freed */
/* The scratch window as convert and on_event saw it (a test of the
 * config's scratch). */
static int converts_in_window, converts_outside;
/* Objects convert saw with a metadata.managedFields, or with the
 * spec.containers or spec.volumes a test calls unread (the informer cuts
 * them before parsing). */
static int converts_with_managed_fields;

/* obj borrowed -> new item; NULL for objects marked "bad". */
static void *convert(json_t *obj, const char *key, struct gpuop_err *err)
{
    assert_non_null(key);
    if (gpuop_jsonarena_active())
        converts_in_window++;
    else
        converts_outside++;
    if (json_object_get(json_object_get(obj, "metadata"), "managedFields") ||
        json_object_get(json_object_get(obj, "spec"), "containers") ||
        json_object_get(json_object_get(obj, "spec"), "volumes"))
        converts_with_managed_fields++;
    if (json_is_true(json_object_get(obj, "bad"))) {
        gpuop_err_set(err, GPUOP_EINVAL, "bad", "marked bad");
        return NULL;
    }
    struct item *it = calloc(1, sizeof(*it));
    assert_non_null(it);
    snprintf(it->v, sizeof(it->v), "%s", json_string_value(json_object_get(obj, "v")));
    it->hb = (long)json_integer_value(json_object_get(obj, "hb"));
    it->key = key;
    live_items++;
    return it;
}

/* steals item */
static void free_item(void *item)
{
    /* The key an item borrows outlives it (ASan and valgrind watch this). */
    assert_true(strlen(((struct item *)item)->key) > 0);
    live_items--;
    free(item);
}

static bool same(const void *a, const void *b)
{
    return !strcmp(((const struct item *)a)->v, ((const struct item *)b)->v);
}

/* ---- the fixture ---- */

struct fx;
typedef void (*route_fn)(struct fx *f, struct fakeapi_conn *c, const struct fakeapi_request *r);

struct fx {
    uv_loop_t loop;
    struct fakeapi *srv;
    struct gpuop_kube *k;
    struct gpuop_informer *inf;
    uv_timer_t aside; /* a timer a test may use */
    struct waiter wait;
    route_fn route;
    int nlist, nwatch; /* requests of each kind so far */
    uint64_t at[256];  /* arrival time of each request */
    char log[8192];    /* "A:key=v M:key=old>new D:key=v " */
    int nevents, synced_calls, close_calls;
    int list_errors, last_list_error; /* on_list_error's calls, its last rc */
    bool inf_closed, kube_closed;
    const char *close_on_key; /* close the informer from on_event */
    bool use_same;
    bool keep_same; /* the config's keep_same */
    const char *selector;
    struct gpuop_kube_ref res; /* the collection; resource NULL: nodes */
    size_t max_line;           /* 0: the informer's default */
    bool scratch;              /* the config's scratch */
    const char *const *unread; /* the config's unread */
    char *big;                 /* a buffer a test may fill */
    bool stream;               /* the config's stream: on_object and on_list log */
};

/* Waits: test/unit/support/waiter.h. */

/* Runs the loop until cond holds; fails the test after ms. */
#define RUN_UNTIL(f, cond, ms) WAITER_RUN_UNTIL(&(f)->wait, cond, ms)

/* Runs the loop for about ms. */
static void run_for(struct fx *f, uint64_t ms)
{
    waiter_run_for(&f->wait, ms);
}

static bool is_watch(const struct fakeapi_request *r)
{
    char v[8];
    return fakeapi_query(r, "watch", v, sizeof(v)) && !strcmp(v, "1");
}

static void handle(void *arg, struct fakeapi_conn *c, const struct fakeapi_request *r)
{
    struct fx *f = arg;
    if (r->index < sizeof(f->at) / sizeof(f->at[0]))
        f->at[r->index] = uv_now(&f->loop);
    if (is_watch(r))
        f->nwatch++;
    else
        f->nlist++;
    f->route(f, c, r);
}

static void logf_(struct fx *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(struct fx *f, const char *fmt, ...)
{
    size_t n = strlen(f->log);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->log + n, sizeof(f->log) - n, fmt, ap);
    va_end(ap);
}

static void inf_closed(void *arg)
{
    struct fx *f = arg;
    f->close_calls++;
    f->inf_closed = true;
}

static void on_event(void *arg, const char *key, const void *old_item, const void *new_item)
{
    struct fx *f = arg;
    const struct item *o = old_item, *n = new_item;
    assert_false(f->inf_closed);
    assert_true(o || n);
    /* The scratch window is closed before the store changes: what a
     * callback allocates with jansson comes from the heap and may be kept. */
    assert_false(gpuop_jsonarena_active());
    json_t *kept = json_string(key);
    assert_false(gpuop_jsonarena_owns(kept));
    json_decref(kept);
    f->nevents++;
    if (!o)
        logf_(f, "A:%s=%s ", key, n->v);
    else if (!n)
        logf_(f, "D:%s=%s ", key, o->v);
    else
        logf_(f, "M:%s=%s>%s ", key, o->v, n->v);
    if (f->close_on_key && !strcmp(f->close_on_key, key))
        gpuop_informer_close(f->inf, inf_closed, f);
}

/* Stream mode: "P:key=v " (put), "P:key! " (refused), "X:key " (delete);
 * a list is "[ " ... "] ". */
static void on_object(void *arg, enum gpuop_informer_op op, const char *key, const void *item)
{
    struct fx *f = arg;
    const struct item *it = item;
    assert_false(f->inf_closed);
    assert_false(gpuop_jsonarena_active());
    assert_int_equal(gpuop_informer_len(f->inf), 0); /* no store */
    assert_null(gpuop_informer_get(f->inf, key));
    f->nevents++;
    if (op == GPUOP_INFORMER_DEL) {
        assert_null(item);
        logf_(f, "X:%s ", key);
    } else if (!it) {
        logf_(f, "P:%s! ", key);
    } else {
        assert_int_equal(live_items, 1); /* this one: the last was freed */
        assert_string_equal(it->key, key);
        logf_(f, "P:%s=%s ", key, it->v);
    }
    if (f->close_on_key && !strcmp(f->close_on_key, key))
        gpuop_informer_close(f->inf, inf_closed, f);
}

static void on_list(void *arg, enum gpuop_informer_list what)
{
    struct fx *f = arg;
    assert_false(f->inf_closed);
    logf_(f, what == GPUOP_INFORMER_LIST_BEGIN ? "[ " : "] ");
}

static void on_synced(void *arg)
{
    struct fx *f = arg;
    f->synced_calls++;
    logf_(f, "| ");
}

static void on_list_error(void *arg, int rc)
{
    struct fx *f = arg;
    f->list_errors++;
    f->last_list_error = rc;
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    waiter_init(&f->wait, &f->loop);
    uv_timer_init(&f->loop, &f->aside);
    f->aside.data = f;
    assert_int_equal(fakeapi_start(&f->loop, handle, f, &f->srv), 0);
    struct gpuop_kubeconfig cfg = {0};
    cfg.server = (char *)fakeapi_url(f->srv);
    cfg.token = "tok";
    struct gpuop_err err = {0};
    assert_int_equal(gpuop_kube_new(&f->loop, &cfg, &f->k, &err), 0);
    live_items = 0;
    converts_in_window = converts_outside = converts_with_managed_fields = 0;
    gpuop_log_set_level("error"); /* the warnings are the point of most tests */
    *state = f;
    return 0;
}

/* Creates and starts the informer on f->res, by default the nodes. */
static void start(struct fx *f, route_fn route)
{
    f->route = route;
    struct gpuop_informer_config cfg = {
        .name = "nodes",
        .res = f->res.resource
                   ? f->res
                   : (struct gpuop_kube_ref){.group_version = "v1", .resource = "nodes"},
        .max_line = f->max_line,
        .label_selector = f->selector,
        .convert = convert,
        .free_item = free_item,
        .scratch = f->scratch,
        .unread = f->unread,
        .same = f->use_same ? same : NULL,
        .keep_same = f->keep_same,
        .on_event = f->stream ? NULL : on_event,
        .stream = f->stream,
        .on_object = f->stream ? on_object : NULL,
        .on_list = f->stream ? on_list : NULL,
        .on_synced = on_synced,
        .on_list_error = on_list_error,
        .arg = f,
    };
    assert_int_equal(gpuop_informer_new(&f->loop, f->k, &cfg, &f->inf), 0);
    gpuop_informer_set_backoff(f->inf, BACKOFF_MS, 4 * BACKOFF_MS);
    assert_int_equal(gpuop_informer_start(f->inf), 0);
    assert_int_equal(gpuop_informer_start(f->inf), GPUOP_EINVAL); /* once */
}

static void kube_closed(void *arg)
{
    struct fx *f = arg;
    f->kube_closed = true;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    if (f->inf && !f->inf_closed) {
        gpuop_informer_close(f->inf, inf_closed, f);
        RUN_UNTIL(f, f->inf_closed, WAIT_MS);
    }
    if (f->inf)
        assert_int_equal(f->close_calls, 1);
    assert_int_equal(live_items, 0); /* every item freed, once */
    struct gpuop_pool_stats ps;
    gpuop_pool_stats(&ps);
    assert_int_equal(ps.blocks, 0); /* and every store key */
    gpuop_kube_close(f->k, kube_closed, f);
    RUN_UNTIL(f, f->kube_closed, WAIT_MS);
    fakeapi_stop(f->srv);
    waiter_close(&f->wait);
    uv_close((uv_handle_t *)&f->aside, NULL);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&f->loop), 0); /* no handle left behind */
    free(f->big);
    free(f);
    return 0;
}

/* ---- bodies ---- */

/* One object from a spec "[ns/]name=v[:hb]" or "[ns/]name!" (marked bad). */
static void obj(char *buf, size_t cap, const char *spec, const char *rv)
{
    char ns[64] = "", name[64], v[32] = "", nsfield[96] = "";
    long hb = 0;
    const char *slash = strchr(spec, '/');
    if (slash) {
        snprintf(ns, sizeof(ns), "%.*s", (int)(slash - spec), spec);
        spec = slash + 1;
        snprintf(nsfield, sizeof(nsfield), ",\"namespace\":\"%s\"", ns);
    }
    size_t nl = strcspn(spec, "=!");
    snprintf(name, sizeof(name), "%.*s", (int)nl, spec);
    bool bad = spec[nl] == '!';
    if (spec[nl] == '=') {
        const char *val = spec + nl + 1;
        size_t vl = strcspn(val, ":");
        snprintf(v, sizeof(v), "%.*s", (int)vl, val);
        if (val[vl] == ':')
            hb = atol(val + vl + 1);
    }
    snprintf(buf, cap,
             "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"%s\"%s,"
             "\"resourceVersion\":\"%s\"},\"v\":\"%s\",\"hb\":%ld%s}",
             name, nsfield, rv, v, hb, bad ? ",\"bad\":true" : "");
}

/* A NodeList page: items from a space-separated spec list. cont may be NULL. */
static void respond_list(struct fakeapi_conn *c, const char *rv, const char *cont,
                         const char *specs)
{
    char body[8192], one[512], copy[1024];
    size_t n = (size_t)snprintf(body, sizeof(body),
                                "{\"kind\":\"NodeList\",\"apiVersion\":\"v1\",\"metadata\":{"
                                "\"resourceVersion\":\"%s\"%s%s%s},\"items\":[",
                                cont ? "" : rv, cont ? ",\"continue\":\"" : "", cont ? cont : "",
                                cont ? "\"" : "");
    snprintf(copy, sizeof(copy), "%s", specs);
    char *save = NULL;
    bool first = true;
    for (char *s = strtok_r(copy, " ", &save); s; s = strtok_r(NULL, " ", &save)) {
        obj(one, sizeof(one), s, rv);
        n += (size_t)snprintf(body + n, sizeof(body) - n, "%s%s", first ? "" : ",", one);
        first = false;
    }
    snprintf(body + n, sizeof(body) - n, "]}");
    fakeapi_respond(c, 200, "application/json", body);
}

/* Queues one watch event line. */
static void event(struct fakeapi_conn *c, uint64_t delay, const char *type, const char *spec,
                  const char *rv)
{
    char one[512];
    obj(one, sizeof(one), spec, rv);
    fakeapi_stream_sendf(c, delay, "{\"type\":\"%s\",\"object\":%s}\n", type, one);
}

static void watch_begin(struct fakeapi_conn *c)
{
    fakeapi_stream_begin(c, 200, FAKEAPI_CHUNKED, 0);
}

static const struct fakeapi_request *req(struct fx *f, size_t i)
{
    const struct fakeapi_request *r = fakeapi_req(f->srv, i);
    if (!r)
        fail_msg("no request %zu (have %zu)", i, fakeapi_nreq(f->srv));
    return r;
}

/* Asserts request i is a watch from resourceVersion rv. */
static void assert_watch_from(struct fx *f, size_t i, const char *rv)
{
    const struct fakeapi_request *r = req(f, i);
    char v[256];
    assert_true(is_watch(r));
    assert_true(fakeapi_query(r, "resourceVersion", v, sizeof(v)));
    assert_string_equal(v, rv);
    assert_true(fakeapi_query(r, "allowWatchBookmarks", v, sizeof(v)));
    assert_string_equal(v, "true");
}

/* Asserts request i is a list; cont: the continue token expected (NULL: none). */
static void assert_list(struct fx *f, size_t i, const char *cont)
{
    const struct fakeapi_request *r = req(f, i);
    char v[256];
    assert_false(is_watch(r));
    assert_string_equal(r->method, "GET");
    assert_true(fakeapi_query(r, "limit", v, sizeof(v)));
    assert_int_equal(atoi(v), GPUOP_INFORMER_PAGE);
    assert_false(fakeapi_query(r, "resourceVersion", v, sizeof(v)));
    if (cont) {
        assert_true(fakeapi_query(r, "continue", v, sizeof(v)));
        assert_string_equal(v, cont);
    } else {
        assert_false(fakeapi_query(r, "continue", v, sizeof(v)));
    }
}

static const struct item *get(struct fx *f, const char *key)
{
    return gpuop_informer_get(f->inf, key);
}

static struct gpuop_informer_stats stats(struct fx *f)
{
    struct gpuop_informer_stats s;
    gpuop_informer_stats(f->inf, &s);
    return s;
}

static const char *rv(struct fx *f)
{
    const char *v = gpuop_informer_resource_version(f->inf);
    return v ? v : "";
}

/* ---- initial paged list ---- */

static void route_paged(struct fx *f, struct fakeapi_conn *c, const struct fakeapi_request *r)
{
    char cont[64] = "";
    if (is_watch(r))
        return; /* held open */
    if (!fakeapi_query(r, "continue", cont, sizeof(cont)))
        respond_list(c, "", "p+2/x=", "a=1 kube-system/b=1");
    else
        respond_list(c, "100", NULL, "c=1");
}

/* An informer of one namespace keys its objects by name alone. */
static void test_one_namespace_keys(void **state)
{
    struct fx *f = *state;
    f->res = (struct gpuop_kube_ref){.group_version = "v1", .ns = "gpu", .resource = "pods"};
    start(f, route_paged);
    RUN_UNTIL(f, fakeapi_nreq(f->srv) >= 3, WAIT_MS);
    assert_string_equal(req(f, 0)->path,
                        "/api/v1/namespaces/gpu/pods?limit=" STR(GPUOP_INFORMER_PAGE));
    assert_string_equal(f->log, "A:a=1 A:b=1 A:c=1 | ");
    assert_string_equal(get(f, "b")->v, "1");
    assert_null(get(f, "kube-system/b"));
}

static void test_paged_list(void **state)
{
    struct fx *f = *state;
    f->selector = "app.kubernetes.io/managed-by=gpuop";
    start(f, route_paged);
    RUN_UNTIL(f, fakeapi_nreq(f->srv) >= 3, WAIT_MS);
    assert_int_equal(f->synced_calls, 1);
    assert_true(gpuop_informer_synced(f->inf));
    assert_string_equal(f->log, "A:a=1 A:kube-system/b=1 A:c=1 | ");
    assert_int_equal(gpuop_informer_len(f->inf), 3);
    assert_string_equal(get(f, "kube-system/b")->v, "1");
    assert_null(get(f, "b"));
    assert_string_equal(rv(f), "100");

    assert_string_equal(
        req(f, 0)->path,
        "/api/v1/nodes?limit=" STR(GPUOP_INFORMER_PAGE) "&labelSelector=app.kubernetes.io%"
                                                        "2Fmanaged-by%3Dgpuop");
    assert_list(f, 0, NULL);
    assert_list(f, 1, "p%2B2%2Fx%3D"); /* the token, escaped */
    char v[256];
    assert_true(fakeapi_query(req(f, 1), "labelSelector", v, sizeof(v)));
    assert_string_equal(v, "app.kubernetes.io%2Fmanaged-by%3Dgpuop");
    assert_watch_from(f, 2, "100");
    assert_true(fakeapi_query(req(f, 2), "labelSelector", v, sizeof(v)));
    assert_string_equal(v, "app.kubernetes.io%2Fmanaged-by%3Dgpuop");
    assert_true(fakeapi_query(req(f, 2), "timeoutSeconds", v, sizeof(v)));
    assert_in_range(atol(v), 300, 600);

    run_for(f, 50);
    struct gpuop_informer_stats s = stats(f);
    assert_int_equal(s.lists, 1);
    assert_int_equal(s.relists, 0);
    assert_int_equal(s.watches, 1);
    assert_int_equal(s.restarts, 0);
    assert_int_equal(f->synced_calls, 1);
    assert_int_equal(fakeapi_nreq(f->srv), 3);
}

/* ---- watch events ---- */

static void route_events(struct fx *f, struct fakeapi_conn *c, const struct fakeapi_request *r)
{
    if (!is_watch(r)) {
        respond_list(c, "10", NULL, "a=1 b=1");
        return;
    }
    if (f->nwatch > 1)
        return;
    watch_begin(c);
    event(c, 5, "ADDED", "ns/c=1", "11");
    event(c, 5, "MODIFIED", "a=2", "12");
    event(c, 5, "DELETED", "b=1", "13");
    event(c, 5, "DELETED", "never-seen=1", "14"); /* unknown key: no event */
}

static void test_watch_events(void **state)
{
    struct fx *f = *state;
    start(f, route_events);
    RUN_UNTIL(f, !strcmp(rv(f), "14"), WAIT_MS);
    assert_string_equal(f->log, "A:a=1 A:b=1 | A:ns/c=1 M:a=1>2 D:b=1 ");
    assert_int_equal(gpuop_informer_len(f->inf), 2);
    assert_string_equal(get(f, "a")->v, "2");
    assert_string_equal(get(f, "ns/c")->v, "1");
    assert_null(get(f, "b"));
    assert_int_equal(live_items, 2);
    struct gpuop_informer_stats s = stats(f);
    assert_int_equal(s.events, 4);
    assert_int_equal(s.watches, 1);
    assert_int_equal(s.restarts, 0);
    assert_watch_from(f, 1, "10");
}

/* Objects with managedFields, listed and watched: the informer never
 * parses them, and the rest of the object arrives whole. */
#define MANAGED_FIELDS                                                                             \
    "\"managedFields\":[{\"manager\":\"kwok\",\"fieldsV1\":{\"f:metadata\":{\"f:labels\":"         \
    "{\".\":{},\"f:x]}\\\"\":{}}}}}]"
static void route_managed_fields(struct fx *f, struct fakeapi_conn *c,
                                 const struct fakeapi_request *r)
{
    if (!is_watch(r)) {
        fakeapi_respond(c, 200, "application/json",
                        "{\"kind\":\"NodeList\",\"metadata\":{\"resourceVersion\":\"10\"},"
                        "\"items\":[{\"metadata\":{\"name\":\"a\"," MANAGED_FIELDS
                        ",\"resourceVersion\":\"10\"},\"v\":\"1\"}]}");
        return;
    }
    if (f->nwatch > 1)
        return;
    watch_begin(c);
    fakeapi_stream_sendf(c, 5,
                         "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{" MANAGED_FIELDS
                         ",\"name\":\"a\",\"resourceVersion\":\"11\"},\"v\":\"2\"}}\n");
}

static void test_managed_fields_listed(void **state)
{
    struct fx *f = *state;
    start(f, route_managed_fields);
    RUN_UNTIL(f, gpuop_informer_synced(f->inf), WAIT_MS);
    assert_string_equal(get(f, "a")->v, "1");
    assert_int_equal(converts_in_window + converts_outside, 1);
    assert_int_equal(converts_with_managed_fields, 0);
}

static void test_managed_fields_watched(void **state)
{
    struct fx *f = *state;
    start(f, route_managed_fields);
    RUN_UNTIL(f, !strcmp(rv(f), "11"), WAIT_MS);
    assert_string_equal(f->log, "A:a=1 | M:a=1>2 ");
    assert_int_equal(converts_in_window + converts_outside, 2);
    assert_int_equal(converts_with_managed_fields, 0);
}

/* With scratch, list items and watch events are parsed and converted in
 * the JSON scratch window, and stored and reported (on_event, which checks
 * the window is closed) after it. Without, neither is in a window. */
static void test_scratch_window(void **state)
{
    struct fx *f = *state;
    f->scratch = true;
    start(f, route_events);
    RUN_UNTIL(f, !strcmp(rv(f), "14"), WAIT_MS);
    assert_string_equal(f->log, "A:a=1 A:b=1 | A:ns/c=1 M:a=1>2 D:b=1 ");
    assert_int_equal(converts_in_window, 4); /* 2 listed, 2 from the watch */
    assert_int_equal(converts_outside, 0);
    assert_false(gpuop_jsonarena_active());
}

static void test_no_scratch_window(void **state)
{
    struct fx *f = *state;
    start(f, route_events);
    RUN_UNTIL(f, !strcmp(rv(f), "14"), WAIT_MS);
    assert_int_equal(converts_in_window, 0);
    assert_int_equal(converts_outside, 4);
}

/* scratch needs a convert: the items would otherwise be trees in the
 * region. */
static void test_scratch_needs_convert(void **state)
{
    struct fx *f = *state;
    struct gpuop_informer_config cfg = {
        .res = {.group_version = "v1", .resource = "nodes"},
        .scratch = true,
    };
    struct gpuop_informer *inf = NULL;
    assert_int_equal(gpuop_informer_new(&f->loop, f->k, &cfg, &inf), GPUOP_EINVAL);
    assert_null(inf);
}

/* The members a config calls unread are cut from list items and watch
 * events, beside managedFields; the rest of the object arrives whole. */
#define POD_SPEC "\"spec\":{\"containers\":[{\"name\":\"c]\"}],\"nodeName\":\"n\",\"volumes\":[]}"
static void route_unread(struct fx *f, struct fakeapi_conn *c, const struct fakeapi_request *r)
{
    if (!is_watch(r)) {
        fakeapi_respond(c, 200, "application/json",
                        "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"10\"},"
                        "\"items\":[{\"metadata\":{\"name\":\"a\"," MANAGED_FIELDS "}," POD_SPEC
                        ",\"v\":\"1\"}]}");
        return;
    }
    if (f->nwatch > 1)
        return;
    watch_begin(c);
    fakeapi_stream_sendf(c, 5,
                         "{\"type\":\"MODIFIED\",\"object\":{" POD_SPEC
                         ",\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"11\"},"
                         "\"v\":\"2\"}}\n");
}

static void test_unread_cut(void **state)
{
    struct fx *f = *state;
    static const char *const unread[] = {"spec.containers", "spec.volumes", NULL};
    f->unread = unread;
    start(f, route_unread);
    RUN_UNTIL(f, !strcmp(rv(f), "11"), WAIT_MS);
    assert_string_equal(f->log, "A:a=1 | M:a=1>2 ");
    assert_int_equal(converts_in_window + converts_outside, 2);
    assert_int_equal(converts_with_managed_fields, 0);
}

/* unread beyond its limits: refused. */
static void test_unread_limits(void **state)
{
    struct fx *f = *state;
    static const char *const many[] = {"a", "b", "c", "d", "e", "f", "g", "h", NULL};
    static const char *const deep[] = {"a.b.c.d.e.f.g", NULL};
    static const char *const empty[] = {"spec..x", NULL};
    const char *const *bad[] = {many, deep, empty};
    for (size_t i = 0; i < 3; i++) {
        struct gpuop_informer_config cfg = {
            .res = {.group_version = "v1", .resource = "nodes"},
            .unread = bad[i],
        };
        struct gpuop_informer *inf = NULL;
        assert_int_equal(gpuop_informer_new(&f->loop, f->k, &cfg, &inf), GPUOP_EINVAL);
        assert_null(inf);
    }
}

/* ---- a stream that ends normally is resumed, without a list ---- */

static void route_resume(struct fx *f, struct fakeapi_conn *c, const struct fakeapi_request *r)
{
    if (!is_watch(r)) {
        respond_list(c, "10", NULL, "a=1");
        return;
    }
    if (f->nwatch == 1) { /* chunked, properly ended */
        watch_begin(c);
        event(c, 0, "MODIFIED", "a=2", "11");
        event(c, 5, "ADDED", "b=1", "12");
        fakeapi_stream_end(c, 5);
    } else if (f->nwatch == 2) { /* close-delimited: the close ends it */
        fakeapi_stream_begin(c, 200, FAKEAPI_CLOSE_DELIMITED, 0);
        event(c, 0, "MODIFIED", "b=2", "15");
        fakeapi_cut(c, 5);
    }
}

static void test_resume_after_end(void **state)
{
    struct fx *f = *state;
    start(f, route_resume);
    RUN_UNTIL(f, f->nwatch == 3, WAIT_MS);
    run_for(f, 30);
    assert_int_equal(fakeapi_nreq(f->srv), 4);
    assert_list(f, 0, NULL);
    assert_watch_from(f, 1, "10");
    assert_watch_from(f, 2, "12");
    assert_watch_from(f, 3, "15");
    assert_true(req(f, 1)->server_close);
    assert_string_equal(f->log, "A:a=1 | M:a=1>2 A:b=1 M:b=1>2 ");
    struct gpuop_informer_stats s = stats(f);
    assert_int_equal(s.lists, 1);
    assert_int_equal(s.watches, 3);
    assert_int_equal(s.restarts, 0); /* resumed at once, no backoff */
}

/* ---- bookmarks ---- */

static void route_bookmark(struct fx *f, struct fakeapi_conn *c, const struct fakeapi_request *r)
{
    if (!is_watch(r)) {
        respond_list(c, "10", NULL, "a=1");
        return;
    }
    if (f->nwatch == 1) {
        watch_begin(c);
        fakeapi_stream_sendf(c, 5,
                             "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Node\",\"apiVersion\":"
                             "\"v1\",\"metadata\":{\"resourceVersion\":\"20\"}}}\n");
        fakeapi_stream_end(c, 30);
    }
}

static void test_bookmark(void **state)
{
    struct fx *f = *state;
    start(f, route_bookmark);
    RUN_UNTIL(f, !strcmp(rv(f), "20"), WAIT_MS);
    assert_string_equal(f->log, "A:a=1 | "); /* no event */
    assert_int_equal(gpuop_informer_len(f->inf), 1);
    RUN_UNTIL(f, f->nwatch == 2, WAIT_MS);
    assert_watch_from(f, 2, "20");
    assert_string_equal(f->log, "A:a=1 | ");
    assert_int_equal(stats(f).restarts, 0);
    assert_int_equal(stats(f).lists, 1);
}

/* ---- 410 inside a 200: relist, synthetic deletes ---- */

static void route_gone_event(struct fx *f, struct fakeapi_conn *c, const struct fakeapi_request *r)
{
    if (!is_watch(r)) {
        if (f->nlist == 1)
            respond_list(c, "10", NULL, "a=1 b=1 ns/d=1");
        else
            respond_list(c, "50", NULL, "a=2 c=1 ns/d=1");
        return;
    }
    if (f->nwatch == 1) {
        watch_begin(c);
        event(c, 0, "MODIFIED", "a=1", "11");
        fakeapi_stream_sendf(c, 5,
                             "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":"
                             "\"v1\",\"status\":\"Failure\",\"message\":\"too old resource "
                             "version: 11 (40)\",\"reason\":\"Expired\",\"code\":410}}\n");
        event(c, 0, "ADDED", "late=1", "12"); /* after the ERROR: not applied */
        /* and the stream stays open: the informer must go by itself */
    }
}

static void test_gone_event_relist(void **state)
{
    struct fx *f = *state;
    start(f, route_gone_event);
    RUN_UNTIL(f, f->nwatch == 2, WAIT_MS);
    assert_list(f, 0, NULL);
    assert_watch_from(f, 1, "10");
    assert_list(f, 2, NULL); /* the relist, from scratch */
    assert_watch_from(f, 3, "50");
    assert_true(req(f, 1)->client_gone);
    assert_string_equal(f->log, "A:a=1 A:b=1 A:ns/d=1 | M:a=1>1 M:a=1>2 A:c=1 M:ns/d=1>1 D:b=1 ");
    assert_null(get(f, "b"));
    assert_null(get(f, "late"));
    assert_string_equal(get(f, "ns/d")->v, "1");
    assert_int_equal(gpuop_informer_len(f->inf), 3);
    assert_int_equal(live_items, 3);
    assert_int_equal(f->synced_calls, 1);
    struct gpuop_informer_stats s = stats(f);
    assert_int_equal(s.lists, 2);
    assert_int_equal(s.relists, 1);
    assert_int_equal(s.restarts, 0);
    assert_string_equal(rv(f), "50");
}

/* ---- HTTP 410 on the watch: relist; a failed relist is retried as a list ---- */

static void route_gone_http(struct fx *f, struct fakeapi_conn *c, const struct fakeapi_request *r)
{
    if (!is_watch(r)) {
        if (f->nlist == 1)
            respond_list(c, "10", NULL, "a=1 b=1");
        else if (f->nlist == 2)
            fakeapi_respond_status(c, 500, "InternalError", "etcd is sad");
        else
            respond_list(c, "60", NULL, "b=2");
        return;
    }
    if (f->nwatch == 1)
        fakeapi_respond_status(c, 410, "Expired", "too old resource version");
}

static void test_gone_http_relist(void **state)
{
    struct fx *f = *state;
    start(f, route_gone_http);
    RUN_UNTIL(f, f->nwatch == 2, WAIT_MS);
    assert_list(f, 0, NULL);
    assert_watch_from(f, 1, "10");
    assert_list(f, 2, NULL);
    /* the relist failed: the retry is a list again, not a watch from the
     * resourceVersion the server just called too old */
    assert_list(f, 3, NULL);
    assert_true(f->at[3] - f->at[2] >= BACKOFF_MS);
    assert_watch_from(f, 4, "60");
    assert_string_equal(f->log, "A:a=1 A:b=1 | M:b=1>2 D:a=1 ");
    struct gpuop_informer_stats s = stats(f);
    assert_int_equal(s.lists, 2);
    assert_int_equal(s.relists, 1);
    assert_int_equal(f->synced_calls, 1);
}

/* ---- an expired continue token restarts the list ---- */

static void route_expired_continue(struct fx *f, struct fakeapi_conn *c,
                                   const struct fakeapi_request *r)
{
    char cont[64] = "";
    if (is_watch(r))
        return;
    bool has = fakeapi_query(r, "continue", cont, sizeof(cont));
    if (f->nlist == 1)
        respond_list(c, "", "t1", "a=1 x=1");
    else if (f->nlist == 2 && has)
        fakeapi_respond_status(c, 410, "Expired", "continue token too old");
    else if (f->nlist == 3 && !has)
        respond_list(c, "", "t2", "a=2");
    else if (f->nlist == 4 && !strcmp(cont, "t2"))
        respond_list(c, "30", NULL, "b=1");
    else
        fakeapi_respond_status(c, 400, "BadRequest", "unexpected request");
}

static void test_expired_continue(void **state)
{
    struct fx *f = *state;
    start(f, route_expired_continue);
    RUN_UNTIL(f, f->nwatch == 1, WAIT_MS);
    assert_list(f, 0, NULL);
    assert_list(f, 1, "t1");
    assert_list(f, 2, NULL); /* from the first page again */
    assert_list(f, 3, "t2");
    assert_watch_from(f, 4, "30");
    assert_int_equal(f->synced_calls, 1);
    /* x was only in the abandoned list: gone at the end of the complete one */
    assert_string_equal(f->log, "A:a=1 A:x=1 M:a=1>2 A:b=1 D:x=1 | ");
    assert_int_equal(gpuop_informer_len(f->inf), 2);
    struct gpuop_informer_stats s = stats(f);
    assert_int_equal(s.lists, 1);
    assert_int_equal(s.relists, 0);
    assert_int_equal(s.restarts, 0);
}

/* ---- HTTP 500 and ERROR 500 on the watch: backoff, resume ---- */

static void route_500(struct fx *f, struct fakeapi_conn *c, const struct fakeapi_request *r)
{
    if (!is_watch(r)) {
        respond_list(c, "10", NULL, "a=1");
        return;
    }
    if (f->nwatch == 1) {
        fakeapi_respond_status(c, 500, "InternalError", "boom");
    } else if (f->nwatch == 2) {
        watch_begin(c);
        event(c, 0, "MODIFIED", "a=2", "11");
        fakeapi_stream_sendf(c, 0,
                             "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":500,"
                             "\"message\":\"internal\"}}\n");
    }
}

static void test_http_500_backoff(void **state)
{
    struct fx *f = *state;
    start(f, route_500);
    RUN_UNTIL(f, f->nwatch == 3, WAIT_MS);
    assert_int_equal(f->list_errors, 0); /* the watches failed, not the list */
    assert_int_equal(fakeapi_nreq(f->srv), 4);
    assert_watch_from(f, 1, "10");
    assert_watch_from(f, 2, "10"); /* resumed, no list */
    assert_watch_from(f, 3, "11");
    assert_true(f->at[2] - f->at[1] >= BACKOFF_MS);
    /* the second failure backs off longer (doubling, jitter on top) */
    assert_true(f->at[3] - f->at[2] >= 2 * BACKOFF_MS);
    struct gpuop_informer_stats s = stats(f);
    assert_int_equal(s.lists, 1);
    assert_int_equal(s.relists, 0);
    assert_int_equal(s.restarts, 2);
    assert_int_equal(s.watches, 3);
    assert_string_equal(f->log, "A:a=1 | M:a=1>2 ");
}

/* ---- a collection the server does not serve: each list's 404 is told
 * (on_list_error: GPUOP_ENOTFOUND), and listed again after a backoff; once
 * served, the list and watch go on as ever ---- */

static void route_404(struct fx *f, struct fakeapi_conn *c, const struct fakeapi_request *r)
{
    if (!is_watch(r) && f->nlist <= 2) {
        fakeapi_respond_status(c, 404, "NotFound",
                               "the server could not find the requested resource");
        return;
    }
    if (!is_watch(r)) {
        respond_list(c, "10", NULL, "a=1");
        return;
    }
    watch_begin(c);
}

static void test_list_not_found(void **state)
{
    struct fx *f = *state;
    start(f, route_404);
    RUN_UNTIL(f, f->synced_calls == 1, WAIT_MS);
    assert_int_equal(f->list_errors, 2);
    assert_int_equal(f->last_list_error, GPUOP_ENOTFOUND);
    assert_true(f->at[1] - f->at[0] >= BACKOFF_MS);
    assert_string_equal(f->log, "A:a=1 | ");
}

/* ---- broken LIST pages: each is abandoned with a backoff, then a good
 * list (streamed in small chunks) syncs; nothing of the broken pages but
 * the objects that arrived whole before the break is ever cached ---- */

static void route_broken_lists(struct fx *f, struct fakeapi_conn *c,
                               const struct fakeapi_request *r)
{
    char one[512];
    if (is_watch(r))
        return; /* held open */
    switch (f->nlist) {
    case 1: /* the second item is not JSON, though its brackets balance */
        obj(one, sizeof(one), "a=1", "10");
        fakeapi_stream_begin(c, 200, FAKEAPI_CHUNKED, 0);
        fakeapi_stream_sendf(c, 0,
                             "{\"kind\":\"NodeList\",\"metadata\":{\"resourceVersion\":"
                             "\"10\"},\"items\":[%s,",
                             one);
        fakeapi_stream_sendf(c, 2, "{\"metadata\":{\"name\":\"b\" \"x\"}}]}");
        fakeapi_stream_end(c, 2);
        break;
    case 2: /* a 200 that is no list */
        fakeapi_respond(c, 200, "application/json", "{\"kind\":\"Status\",\"metadata\":{}}");
        break;
    case 3: /* ends cleanly in the middle of an object */
        fakeapi_stream_begin(c, 200, FAKEAPI_CHUNKED, 0);
        fakeapi_stream_sendf(c, 0,
                             "{\"metadata\":{\"resourceVersion\":\"10\"},\"items\":[{"
                             "\"metadata\":{\"name\":\"d\"");
        fakeapi_stream_end(c, 2);
        break;
    default: { /* good, in pieces that split objects and strings */
        char body[2048], *p = body;
        obj(one, sizeof(one), "a=1", "12");
        p += snprintf(p, sizeof(body), "{\"metadata\":{\"resourceVersion\":\"12\"},\"items\":[%s,",
                      one);
        obj(one, sizeof(one), "c=1", "12");
        snprintf(p, sizeof(body) - (size_t)(p - body), "%s]}", one);
        size_t n = strlen(body);
        fakeapi_stream_begin(c, 200, FAKEAPI_CHUNKED, 0);
        for (size_t off = 0; off < n; off += 7)
            fakeapi_stream_send(c, 1, body + off, n - off < 7 ? n - off : 7);
        fakeapi_stream_end(c, 1);
    }
    }
}

static void test_broken_list_pages(void **state)
{
    struct fx *f = *state;
    start(f, route_broken_lists);
    RUN_UNTIL(f, f->nwatch == 1, WAIT_MS);
    assert_int_equal(f->nlist, 4);
    assert_true(gpuop_informer_synced(f->inf));
    assert_int_equal(f->synced_calls, 1);
    assert_int_equal(gpuop_informer_len(f->inf), 2);
    assert_non_null(get(f, "a"));
    assert_non_null(get(f, "c"));
    assert_null(get(f, "b"));
    assert_null(get(f, "d"));
    assert_string_equal(rv(f), "12");
    assert_watch_from(f, 4, "12");
    for (int i = 1; i < 4; i++)
        assert_true(f->at[i] - f->at[i - 1] >= BACKOFF_MS); /* each failure backed off */
    struct gpuop_informer_stats st = stats(f);
    assert_int_equal(st.lists, 1);
}

/* ---- cut mid-line: backoff, resume; the partial line is not applied ---- */

static void route_cut(struct fx *f, struct fakeapi_conn *c, const struct fakeapi_request *r)
{
    if (!is_watch(r)) {
        respond_list(c, "10", NULL, "a=1");
        return;
    }
    if (f->nwatch == 1) {
        watch_begin(c);
        event(c, 0, "ADDED", "b=1", "11");
        fakeapi_stream_sendf(c, 5, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"p\"");
        fakeapi_cut(c, 10);
    }
}

static void test_cut_mid_line(void **state)
{
    struct fx *f = *state;
    start(f, route_cut);
    RUN_UNTIL(f, f->nwatch == 2, WAIT_MS);
    assert_watch_from(f, 2, "11");
    assert_true(f->at[2] - f->at[1] >= BACKOFF_MS);
    assert_null(get(f, "p"));
    assert_string_equal(f->log, "A:a=1 | A:b=1 ");
    assert_int_equal(stats(f).restarts, 1);
    assert_int_equal(stats(f).lists, 1);
}

/* ---- connection refused: backoff, resume once the server is back ---- */

/* The server listens again once the informer has been refused twice (the
 * cut, then two refusals): counted, not timed, so a slow machine that
 * retries less often in a given time sees the same story. */
static void relisten(uv_timer_t *t)
{
    struct fx *f = t->data;
    struct gpuop_informer_stats s;
    gpuop_informer_stats(f->inf, &s);
    if (s.restarts < 3)
        return; /* the repeating timer looks again */
    uv_timer_stop(t);
    assert_int_equal(fakeapi_listen(f->srv, true), 0);
}

static void route_refused(struct fx *f, struct fakeapi_conn *c, const struct fakeapi_request *r)
{
    if (!is_watch(r)) {
        respond_list(c, "10", NULL, "a=1");
        return;
    }
    if (f->nwatch == 1) {
        watch_begin(c);
        event(c, 0, "MODIFIED", "a=2", "12");
        fakeapi_cut(c, 5);
        /* the server goes away for a while */
        assert_int_equal(fakeapi_listen(f->srv, false), 0);
        uv_timer_start(&f->aside, relisten, BACKOFF_MS / 4, BACKOFF_MS / 4);
    }
}

static void test_refused(void **state)
{
    struct fx *f = *state;
    start(f, route_refused);
    RUN_UNTIL(f, f->nwatch == 2, WAIT_MS);
    assert_int_equal(fakeapi_nreq(f->srv), 3); /* the refused ones never arrived */
    assert_watch_from(f, 2, "12");
    /* backed off after the cut and each refusal: at least 1 + 2 + 4
     * times the base (the jitter only adds) */
    assert_true(f->at[2] - f->at[1] >= 7 * BACKOFF_MS);
    struct gpuop_informer_stats s = stats(f);
    assert_true(s.restarts >= 3); /* the cut, then at least two refusals */
    assert_int_equal(s.watches, s.restarts + 1);
    assert_int_equal(s.lists, 1);
    assert_string_equal(f->log, "A:a=1 | M:a=1>2 ");
}

/* ---- malformed lines ---- */

static void route_malformed(struct fx *f, struct fakeapi_conn *c, const struct fakeapi_request *r)
{
    if (!is_watch(r)) {
        respond_list(c, "10", NULL, "a=1");
        return;
    }
    if (f->nwatch == 1) {
        watch_begin(c);
        event(c, 0, "ADDED", "b=1", "11");
        /* a broken line and a good one in the same chunk */
        fakeapi_stream_sendf(c, 5,
                             "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":\xff}}\n"
                             "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"c\","
                             "\"resourceVersion\":\"12\"},\"v\":\"1\"}}\n");
    } else if (f->nwatch == 2) {
        watch_begin(c);
        fakeapi_stream_sendf(c, 0, "{\"type\":\"SOMETHING\",\"object\":{}}\n"); /* ignored */
        fakeapi_stream_sendf(c, 0, "{\"type\":\"ADDED\",\"object\":{}} trailing\n");
    } else if (f->nwatch == 3) {
        watch_begin(c);
        fakeapi_stream_sendf(c, 0, "[1,2,3]\n");
    } else if (f->nwatch == 4) {
        watch_begin(c);
        fakeapi_stream_sendf(c, 0, "{\"type\":\"ADDED\",\"object\":\"not an object\"}\n");
    }
}

static void test_malformed_line(void **state)
{
    struct fx *f = *state;
    start(f, route_malformed);
    RUN_UNTIL(f, f->nwatch == 5, WAIT_MS);
    for (size_t i = 2; i <= 5; i++)
        assert_watch_from(f, i, "11");
    assert_string_equal(f->log, "A:a=1 | A:b=1 ");
    assert_null(get(f, "c"));
    assert_string_equal(get(f, "a")->v, "1");
    assert_string_equal(get(f, "b")->v, "1");
    assert_int_equal(gpuop_informer_len(f->inf), 2);
    struct gpuop_informer_stats s = stats(f);
    assert_int_equal(s.restarts, 4);
    assert_int_equal(s.lists, 1);
    for (size_t i = 1; i <= 4; i++)
        assert_true(req(f, i)->client_gone); /* the informer hung up */
}

/* ---- the line limit ---- */

/* The informer's line limit in this test: the code is the same at any
 * limit, and 16 MB through valgrind on a loaded machine took longer than
 * any sane deadline (the default's own value is not what is tested). */
#define BIG (64u << 10)

/* f->big: an ADDED line of exactly BIG bytes (then '\n'), then a line of
 * BIG + 1 bytes, then a good line that must not be applied. */
static size_t build_big(struct fx *f)
{
    const char *head = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"big\","
                       "\"resourceVersion\":\"11\"},\"v\":\"1\",\"pad\":\"";
    const char *tail = "\"}}";
    const char *after = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"after\","
                        "\"resourceVersion\":\"13\"},\"v\":\"1\"}}\n";
    size_t cap = 2 * (size_t)BIG + 1024;
    f->big = malloc(cap);
    assert_non_null(f->big);
    size_t n = 0, pad = BIG - strlen(head) - strlen(tail);
    memcpy(f->big, head, strlen(head));
    n += strlen(head);
    memset(f->big + n, 'x', pad);
    n += pad;
    memcpy(f->big + n, tail, strlen(tail));
    n += strlen(tail);
    assert_int_equal(n, BIG);
    f->big[n++] = '\n';
    memset(f->big + n, ' ', BIG + 1); /* whitespace: would parse as nothing */
    f->big[n] = '{';
    n += BIG + 1;
    f->big[n++] = '\n';
    memcpy(f->big + n, after, strlen(after));
    n += strlen(after);
    return n;
}

static void route_too_long(struct fx *f, struct fakeapi_conn *c, const struct fakeapi_request *r)
{
    if (!is_watch(r)) {
        respond_list(c, "10", NULL, "a=1");
        return;
    }
    if (f->nwatch == 1) {
        size_t n = build_big(f);
        watch_begin(c);
        for (size_t off = 0; off < n; off += 1u << 20)
            fakeapi_stream_send(c, 1, f->big + off, n - off < (1u << 20) ? n - off : 1u << 20);
        /* and then silence: the informer must hang up by itself */
    }
}

static void test_line_too_long(void **state)
{
    struct fx *f = *state;
    f->max_line = BIG;
    start(f, route_too_long);
    RUN_UNTIL(f, f->nwatch == 2, WAIT_MS);
    /* a line of exactly the limit is an event; one byte more is not */
    assert_non_null(get(f, "big"));
    assert_string_equal(get(f, "big")->v, "1");
    assert_null(get(f, "after"));
    assert_string_equal(f->log, "A:a=1 | A:big=1 ");
    assert_watch_from(f, 2, "11");
    assert_int_equal(stats(f).restarts, 1);
    /* the informer hung up rather than read on */
    assert_true(req(f, 1)->client_gone);
    assert_false(req(f, 1)->server_close);
}

/* ---- same and convert ---- */

static void route_same(struct fx *f, struct fakeapi_conn *c, const struct fakeapi_request *r)
{
    if (!is_watch(r)) {
        respond_list(c, "10", NULL, "a=1:1 bad! b=1");
        return;
    }
    if (f->nwatch == 1) {
        watch_begin(c);
        event(c, 0, "MODIFIED", "a=1:2", "11"); /* heartbeat: same */
        event(c, 0, "MODIFIED", "a=2:2", "12");
        event(c, 0, "ADDED", "worse!", "13");   /* skipped */
        event(c, 0, "MODIFIED", "b!", "14");    /* the last good b stays */
        event(c, 0, "MODIFIED", "b=1:9", "15"); /* same as the kept one */
        event(c, 0, "ADDED", "c=1", "16");
    }
}

static void test_same_and_convert(void **state)
{
    struct fx *f = *state;
    f->use_same = true;
    start(f, route_same);
    RUN_UNTIL(f, !strcmp(rv(f), "16"), WAIT_MS);
    assert_string_equal(f->log, "A:a=1 A:b=1 | M:a=1>2 A:c=1 ");
    assert_null(get(f, "bad"));
    assert_null(get(f, "worse"));
    assert_int_equal(get(f, "a")->hb, 2); /* replaced, silently */
    assert_int_equal(get(f, "b")->hb, 9);
    assert_int_equal(gpuop_informer_len(f->inf), 3);
    assert_int_equal(live_items, 3);
    assert_int_equal(stats(f).restarts, 0);
}

/* keep_same: an update the same op calls the same keeps the cached item
 * (a pointer to it stays valid: the incremental analysis borrows them);
 * one that differs replaces it and says so. */
static void test_keep_same(void **state)
{
    struct fx *f = *state;
    f->use_same = f->keep_same = true;
    start(f, route_same);
    RUN_UNTIL(f, gpuop_informer_synced(f->inf), WAIT_MS);
    const struct item *a1 = get(f, "a"), *b1 = get(f, "b");
    int b_hb = b1->hb;
    RUN_UNTIL(f, !strcmp(rv(f), "16"), WAIT_MS);
    assert_string_equal(f->log, "A:a=1 A:b=1 | M:a=1>2 A:c=1 ");
    assert_int_not_equal(b_hb, 9);
    assert_int_equal(get(f, "b")->hb, b_hb); /* the kept one, not the heartbeat's 9 */
    assert_ptr_equal(get(f, "b"), b1);
    assert_ptr_not_equal(get(f, "a"), a1); /* a=2 replaced it, with an event */
    assert_int_equal(live_items, 3);
}

static void test_keep_same_needs_same(void **state)
{
    struct fx *f = *state;
    struct gpuop_informer_config cfg = {
        .name = "nodes",
        .res = {.group_version = "v1", .resource = "nodes"},
        .keep_same = true,
    };
    struct gpuop_informer *inf = NULL;
    assert_int_equal(gpuop_informer_new(&f->loop, f->k, &cfg, &inf), GPUOP_EINVAL);
    assert_null(inf);
}

/* ---- close ---- */

static void tick_modified(struct fakeapi_conn *c, void *arg)
{
    struct fx *f = arg;
    static int n = 100;
    char line[256];
    int len = snprintf(line, sizeof(line),
                       "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"a\","
                       "\"resourceVersion\":\"%d\"},\"v\":\"%d\"}}\n",
                       n, n);
    n++;
    (void)f;
    fakeapi_write(c, line, (size_t)len);
}

static void route_flowing(struct fx *f, struct fakeapi_conn *c, const struct fakeapi_request *r)
{
    if (!is_watch(r)) {
        respond_list(c, "10", NULL, "a=1 b=1");
        return;
    }
    watch_begin(c);
    fakeapi_every(c, 2, tick_modified, f);
}

static void test_close_in_flight(void **state)
{
    struct fx *f = *state;
    start(f, route_flowing);
    RUN_UNTIL(f, f->nevents >= 5, WAIT_MS);
    gpuop_informer_close(f->inf, inf_closed, f);
    assert_false(f->inf_closed); /* runs later, once the timer has closed */
    int events = f->nevents;
    RUN_UNTIL(f, f->inf_closed, WAIT_MS);
    assert_int_equal(f->close_calls, 1);
    assert_int_equal(live_items, 0);
    RUN_UNTIL(f, fakeapi_open_conns(f->srv) == 0, WAIT_MS); /* the stream hung up */
    assert_true(req(f, 1)->client_gone);
    run_for(f, 20);
    assert_int_equal(f->nevents, events);
    assert_int_equal(fakeapi_nreq(f->srv), 2);
}

static void route_pair(struct fx *f, struct fakeapi_conn *c, const struct fakeapi_request *r)
{
    if (!is_watch(r)) {
        respond_list(c, "10", NULL, "a=1");
        return;
    }
    watch_begin(c);
    /* three events in one chunk: closing on the first stops the rest */
    fakeapi_stream_sendf(c, 0,
                         "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"b\","
                         "\"resourceVersion\":\"11\"},\"v\":\"1\"}}\n"
                         "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"c\","
                         "\"resourceVersion\":\"12\"},\"v\":\"1\"}}\n"
                         "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"a\","
                         "\"resourceVersion\":\"13\"},\"v\":\"1\"}}\n");
}

static void test_close_from_on_event(void **state)
{
    struct fx *f = *state;
    f->close_on_key = "b";
    start(f, route_pair);
    RUN_UNTIL(f, f->inf_closed, WAIT_MS);
    assert_string_equal(f->log, "A:a=1 | A:b=1 ");
    assert_int_equal(f->close_calls, 1);
    assert_int_equal(live_items, 0);
}

static void route_list_close(struct fx *f, struct fakeapi_conn *c, const struct fakeapi_request *r)
{
    respond_list(c, "10", NULL, "a=1 b=1 c=1");
}

static void test_close_from_on_event_in_list(void **state)
{
    struct fx *f = *state;
    f->close_on_key = "a";
    start(f, route_list_close);
    RUN_UNTIL(f, f->inf_closed, WAIT_MS);
    run_for(f, 20);
    assert_string_equal(f->log, "A:a=1 ");
    assert_int_equal(f->synced_calls, 0);
    assert_int_equal(fakeapi_nreq(f->srv), 1); /* no watch after close */
    assert_int_equal(live_items, 0);
}

static void route_stall(struct fx *f, struct fakeapi_conn *c, const struct fakeapi_request *r)
{
    /* the list never answers */
}

static void test_close_while_listing(void **state)
{
    struct fx *f = *state;
    start(f, route_stall);
    RUN_UNTIL(f, fakeapi_nreq(f->srv) == 1, WAIT_MS);
    gpuop_informer_close(f->inf, inf_closed, f);
    RUN_UNTIL(f, f->inf_closed, WAIT_MS);
    assert_int_equal(f->synced_calls, 0);
    RUN_UNTIL(f, fakeapi_open_conns(f->srv) == 0, WAIT_MS);
}

static void route_watch_fails(struct fx *f, struct fakeapi_conn *c, const struct fakeapi_request *r)
{
    if (!is_watch(r))
        respond_list(c, "10", NULL, "a=1");
    else
        fakeapi_respond_status(c, 503, "ServiceUnavailable", "later");
}

static void test_close_during_backoff(void **state)
{
    struct fx *f = *state;
    start(f, route_watch_fails);
    RUN_UNTIL(f, stats(f).restarts == 1, WAIT_MS);
    gpuop_informer_set_backoff(f->inf, 60000, 60000); /* the next wait is long */
    RUN_UNTIL(f, stats(f).restarts == 2, WAIT_MS);
    size_t n = fakeapi_nreq(f->srv);
    gpuop_informer_close(f->inf, inf_closed, f);
    RUN_UNTIL(f, f->inf_closed, WAIT_MS);
    run_for(f, 3 * BACKOFF_MS);
    assert_int_equal(fakeapi_nreq(f->srv), n); /* the timer is gone */
    assert_int_equal(live_items, 0);
}

static void test_close_unstarted(void **state)
{
    struct fx *f = *state;
    struct gpuop_informer_config cfg = {.res = {.resource = "nodes"}};
    assert_int_equal(gpuop_informer_new(&f->loop, f->k, &cfg, &f->inf), 0);
    assert_false(gpuop_informer_synced(f->inf));
    assert_null(gpuop_informer_resource_version(f->inf));
    assert_null(gpuop_informer_get(f->inf, "a"));
    gpuop_informer_close(f->inf, inf_closed, f);
    RUN_UNTIL(f, f->inf_closed, WAIT_MS);
    assert_int_equal(fakeapi_nreq(f->srv), 0);
}

/* ---- stream mode ---- */

static void test_stream_paged_list(void **state)
{
    struct fx *f = *state;
    f->stream = true;
    start(f, route_paged);
    RUN_UNTIL(f, fakeapi_nreq(f->srv) >= 3, WAIT_MS);
    assert_string_equal(f->log, "[ P:a=1 P:kube-system/b=1 P:c=1 ] | ");
    assert_int_equal(gpuop_informer_len(f->inf), 0);
    assert_null(get(f, "a"));
    assert_int_equal(live_items, 0);
    assert_list(f, 1, "p%2B2%2Fx%3D");
    assert_watch_from(f, 2, "100");
    assert_int_equal(stats(f).lists, 1);
}

static void test_stream_watch_events(void **state)
{
    struct fx *f = *state;
    f->stream = true;
    start(f, route_events);
    RUN_UNTIL(f, !strcmp(rv(f), "14"), WAIT_MS);
    /* a delete is told whether or not the key was seen: there is no store */
    assert_string_equal(f->log, "[ P:a=1 P:b=1 ] | P:ns/c=1 P:a=2 X:b X:never-seen ");
    assert_int_equal(gpuop_informer_len(f->inf), 0);
    assert_int_equal(live_items, 0);
    assert_int_equal(stats(f).events, 4);
}

static void test_stream_gone_event_relist(void **state)
{
    struct fx *f = *state;
    f->stream = true;
    start(f, route_gone_event);
    RUN_UNTIL(f, f->nwatch == 2, WAIT_MS);
    assert_list(f, 2, NULL);
    assert_watch_from(f, 3, "50");
    /* b's absence is the owner's to see between the brackets */
    assert_string_equal(f->log, "[ P:a=1 P:b=1 P:ns/d=1 ] | P:a=1 [ P:a=2 P:c=1 P:ns/d=1 ] ");
    assert_int_equal(gpuop_informer_len(f->inf), 0);
    assert_int_equal(live_items, 0);
    assert_int_equal(f->synced_calls, 1);
    assert_int_equal(stats(f).relists, 1);
}

static void test_stream_gone_http_relist(void **state)
{
    struct fx *f = *state;
    f->stream = true;
    start(f, route_gone_http);
    RUN_UNTIL(f, f->nwatch == 2, WAIT_MS);
    assert_list(f, 3, NULL);
    assert_watch_from(f, 4, "60");
    /* the failed relist began, never ended; its retry begins again */
    assert_string_equal(f->log, "[ P:a=1 P:b=1 ] | [ [ P:b=2 ] ");
    assert_int_equal(gpuop_informer_len(f->inf), 0);
    assert_int_equal(live_items, 0);
    assert_int_equal(stats(f).relists, 1);
}

static void test_stream_expired_continue(void **state)
{
    struct fx *f = *state;
    f->stream = true;
    start(f, route_expired_continue);
    RUN_UNTIL(f, f->nwatch == 1, WAIT_MS);
    assert_list(f, 2, NULL);
    assert_watch_from(f, 4, "30");
    /* the abandoned list began; the complete one begins from its first page */
    assert_string_equal(f->log, "[ P:a=1 P:x=1 [ P:a=2 P:b=1 ] | ");
    assert_int_equal(gpuop_informer_len(f->inf), 0);
    assert_int_equal(live_items, 0);
}

static void route_stream_refused(struct fx *f, struct fakeapi_conn *c,
                                 const struct fakeapi_request *r)
{
    if (!is_watch(r)) {
        respond_list(c, "10", NULL, "a=1 b!");
        return;
    }
    if (f->nwatch > 1)
        return;
    watch_begin(c);
    event(c, 0, "MODIFIED", "a!", "11");
    event(c, 0, "MODIFIED", "b=2", "12");
}

/* An object convert refuses comes as a PUT without an item. */
static void test_stream_refused_object(void **state)
{
    struct fx *f = *state;
    f->stream = true;
    start(f, route_stream_refused);
    RUN_UNTIL(f, !strcmp(rv(f), "12"), WAIT_MS);
    assert_string_equal(f->log, "[ P:a=1 P:b! ] | P:a! P:b=2 ");
    assert_int_equal(live_items, 0);
}

static void test_stream_close_from_on_object(void **state)
{
    struct fx *f = *state;
    f->stream = true;
    f->close_on_key = "b";
    start(f, route_pair);
    RUN_UNTIL(f, f->inf_closed, WAIT_MS);
    assert_string_equal(f->log, "[ P:a=1 ] | P:b=1 ");
    assert_int_equal(f->close_calls, 1);
    assert_int_equal(live_items, 0);
}

static void test_stream_close_from_on_object_in_list(void **state)
{
    struct fx *f = *state;
    f->stream = true;
    f->close_on_key = "a";
    start(f, route_list_close);
    RUN_UNTIL(f, f->inf_closed, WAIT_MS);
    run_for(f, 20);
    assert_string_equal(f->log, "[ P:a=1 ");
    assert_int_equal(f->synced_calls, 0);
    assert_int_equal(fakeapi_nreq(f->srv), 1);
    assert_int_equal(live_items, 0);
}

static void ignore_object(void *arg, enum gpuop_informer_op op, const char *key, const void *item)
{
    (void)arg, (void)op, (void)key, (void)item;
}

static void ignore_event(void *arg, const char *key, const void *a, const void *b)
{
    (void)arg, (void)key, (void)a, (void)b;
}

/* Stream mode needs on_object and takes none of a store's ops. */
static void test_stream_config(void **state)
{
    struct fx *f = *state;
    struct gpuop_informer *inf = NULL;
    struct gpuop_informer_config cfg = {.res = {.resource = "nodes"}, .stream = true};
    assert_int_equal(gpuop_informer_new(&f->loop, f->k, &cfg, &inf), GPUOP_EINVAL);
    cfg.on_object = ignore_object;
    cfg.on_event = ignore_event;
    assert_int_equal(gpuop_informer_new(&f->loop, f->k, &cfg, &inf), GPUOP_EINVAL);
    cfg.on_event = NULL;
    cfg.same = same;
    assert_int_equal(gpuop_informer_new(&f->loop, f->k, &cfg, &inf), GPUOP_EINVAL);
    assert_null(inf);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_paged_list),
        T(test_watch_events),
        T(test_managed_fields_listed),
        T(test_unread_cut),
        T(test_unread_limits),
        T(test_managed_fields_watched),
        T(test_resume_after_end),
        T(test_bookmark),
        T(test_gone_event_relist),
        T(test_gone_http_relist),
        T(test_expired_continue),
        T(test_http_500_backoff),
        T(test_list_not_found),
        T(test_cut_mid_line),
        T(test_refused),
        T(test_one_namespace_keys),
        T(test_broken_list_pages),
        T(test_malformed_line),
        T(test_line_too_long),
        T(test_same_and_convert),
        T(test_keep_same),
        T(test_keep_same_needs_same),
        T(test_close_in_flight),
        T(test_close_from_on_event),
        T(test_close_from_on_event_in_list),
        T(test_close_while_listing),
        T(test_close_during_backoff),
        T(test_close_unstarted),
        T(test_scratch_window),
        T(test_no_scratch_window),
        T(test_scratch_needs_convert),
        T(test_stream_paged_list),
        T(test_stream_watch_events),
        T(test_stream_gone_event_relist),
        T(test_stream_gone_http_relist),
        T(test_stream_expired_continue),
        T(test_stream_refused_object),
        T(test_stream_close_from_on_object),
        T(test_stream_close_from_on_object_in_list),
        T(test_stream_config),
    };
    return cmocka_run_group_tests(tests, process_setup, process_teardown);
}
