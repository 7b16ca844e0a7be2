/*
 * informer.c - LIST+WATCH reflector and store (see informer.h).
 *
 * State machine, one request in flight at a time:
 *
 *   start ──> LIST (pages) ──> WATCH ──(ended normally)──> WATCH
 *               ^   |            |  \──(410 / ERROR 410)──> LIST (relist)
 *               |   v            v
 *               └─ BACKOFF <──(transport or API error)──> WATCH (resume)
 *
 * A relist marks every listed item with the list's mark; at the end of the
 * list, items with an older mark are deleted (synthetic deletes). In
 * stream mode the store stays empty: objects go to the owner as they come
 * (on_object) and the list's bounds are told (on_list) in place of marks
 * and sweep.
 *
 * Neither a LIST page nor a watch stream is ever held whole: a page is
 * streamed through the jsonlist splitter, each item parsed alone as it
 * arrives; a watch is split into lines, each event parsed alone. Either is
 * bounded by max_line per item or event. Neither is parsed with its
 * metadata.managedFields, nor with the members the config calls unread
 * (jsonstrip_int.h): gpuop never reads them, and they were most of a
 * pod's bytes and of the CPU its events cost. Every
 * request path comes from
 * gpuop_kube_path (escaped), and every timing is a named constant below
 * (client-go's reflector's names and values where it has them).
 */
#include <stdlib.h>
#include <string.h>

#include "gpuop/clock.h"
#include "gpuop/informer.h"
#include "gpuop/jsonarena.h"
#include "jsonlist_int.h"
#include "jsonstrip_int.h"
#include "lines_int.h"
#include "gpuop/log.h"

/* A LIST page is streamed: it may take this long before it is abandoned. */
#define LIST_TIMEOUT_MS 60000
/* client-go's reflector: watch timeouts are minWatchTimeout to twice that
 * (random), so watchers do not all reconnect at once; the client waits a
 * little longer than the server before it gives up on the stream. */
#define MIN_WATCH_TIMEOUT_S  300
#define WATCH_CLIENT_SLACK_S 30
/* client-go's reflector backoff (initial, max, resetDuration; jitter here
 * up to +50 %): a watch or list that stayed healthy for BACKOFF_RESET_MS
 * resets the backoff to its initial value. */
#define BACKOFF_INITIAL_MS 800
#define BACKOFF_MAX_MS     30000
#define BACKOFF_RESET_MS   60000
/* client-go: a watch that ends cleanly this soon without one event is "very
 * short": the server or a proxy is cutting it, so it is backed off. */
#define VERY_SHORT_WATCH_MS 1000

/* Longest store key: "namespace/name" (63 + 1 + 253, and room). */
#define STORE_KEY_MAX 512

enum state { ST_IDLE, ST_LISTING, ST_WATCHING, ST_BACKOFF, ST_CLOSED };

enum verdict { V_OK = 0, V_RELIST, V_ERROR };

struct gpuop_informer {
    uv_loop_t *loop;
    struct gpuop_kube *kube;
    struct gpuop_informer_config cfg; /* strings owned (copied), res's too */
    size_t max_line;

    struct gpuop_map store; /* key -> item; the key's tag is the mark of the
                               list that last saw it */
    uint32_t mark;          /* mark of the current/last list */
    char *rv;               /* last resourceVersion seen */
    char *cont;             /* continue token of the list in progress */

    enum state state;
    struct gpuop_kube_req *req;
    struct gpuop_lines lines;
    struct gpuop_jsonlist list; /* the LIST page streaming in */
    char list_err[512];         /* why the splitter stopped a page */
    enum verdict verdict;
    /* the members cut before parsing (managedFields, cfg.unread): their
     * paths in a list item and in a watch event, keys in unread_keys */
    struct gpuop_jsonstrip_path item_cut[GPUOP_JSONSTRIP_PATHS_MAX];
    struct gpuop_jsonstrip_path event_cut[GPUOP_JSONSTRIP_PATHS_MAX];
    size_t ncut;
    char *unread_keys;      /* owned: cfg.unread's strings, split at the dots */
    uint64_t watch_started; /* gpuop_clock_ms at open */
    uint64_t watch_events;  /* events on the current stream */
    bool synced;
    bool after_gone;    /* the next list is a relist forced by 410 */
    bool one_namespace; /* cfg.res.ns set: keys are names */

    uv_timer_t timer;
    uint64_t backoff_ms, base_ms, max_ms;
    uint64_t rng;

    struct gpuop_informer_stats stats;
    void (*close_cb)(void *);
    void *close_arg;
};

static void start_list(struct gpuop_informer *inf);
static void start_watch(struct gpuop_informer *inf);

/* Cut from every object before it is parsed: the server-side apply
 * bookkeeping, then the members the config calls unread. A watch event
 * holds the object under "object". */
#define MANAGED_FIELDS_PATH .key = {"metadata", "managedFields"}, .n = 2
_Static_assert(GPUOP_INFORMER_UNREAD_MAX + 1 <= GPUOP_JSONSTRIP_PATHS_MAX,
               "the unread members and managedFields are cut in one pass");
_Static_assert(GPUOP_INFORMER_UNREAD_KEYS + 1 <= GPUOP_JSONSTRIP_PATH_MAX,
               "a watch event's paths begin with \"object\"");

/* ---- store ---- */

int gpuop_object_key(json_t *obj, char *buf, size_t len)
{
    json_t *md = json_object_get(obj, "metadata");
    const char *name = json_string_value(json_object_get(md, "name"));
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    if (!name || !*name)
        return GPUOP_EINVAL;
    int n = (ns && *ns) ? snprintf(buf, len, "%s/%s", ns, name) : snprintf(buf, len, "%s", name);
    return (n < 0 || (size_t)n >= len) ? GPUOP_EINVAL : 0;
}

/* The store key: the name alone when every object comes from one namespace
 * (30,000 pod keys without "gpuop-system/" are 0.5 MB less). */
static int store_key(const struct gpuop_informer *inf, json_t *obj, char *buf, size_t len)
{
    if (!inf->one_namespace)
        return gpuop_object_key(obj, buf, len);
    const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
    if (!name || !*name)
        return GPUOP_EINVAL;
    int n = snprintf(buf, len, "%s", name);
    return (n < 0 || (size_t)n >= len) ? GPUOP_EINVAL : 0;
}

static void free_item(struct gpuop_informer *inf, void *item)
{
    if (!item)
        return;
    if (inf->cfg.free_item)
        inf->cfg.free_item(item);
    else
        json_decref(item);
}

/* An object on its way into the store. It is converted while its JSON tree
 * lives, inside the scratch window when the config asks for one (see
 * jsonarena.h), and stored (on_event called) only after the window closed,
 * so nothing a callback does is ever allocated in the scratch region. */
enum staged_op { STAGED_NONE, STAGED_PUT, STAGED_DEL };

struct staged {
    enum staged_op op;
    bool added; /* PUT of a key the store did not have */
    void *item; /* PUT: new, the converted item */
    char key[STORE_KEY_MAX];
};

/* Phase one of an add or update, while obj (borrowed) lives: the key goes
 * into the store first, so the converter gets the store's own copy (an item
 * may point at it rather than copy the name); the new item waits in st. */
static void stage_put(struct gpuop_informer *inf, json_t *obj, struct staged *st)
{
    st->op = STAGED_NONE;
    if (store_key(inf, obj, st->key, sizeof(st->key)) < 0) {
        gpuop_warn(inf->cfg.name, "skipping an object without a usable name");
        return;
    }
    if (inf->cfg.stream) { /* no store: the key is st's, for the call */
        struct gpuop_err err = {0};
        st->item = inf->cfg.convert ? inf->cfg.convert(obj, st->key, &err) : json_incref(obj);
        if (!st->item)
            gpuop_warn(st->key, "cannot use this %s: %s", inf->cfg.name, err.message);
        st->op = STAGED_PUT; /* a NULL item: refused, told as such */
        return;
    }
    uint32_t *mark = gpuop_map_tag(&inf->store, st->key);
    st->added = !mark;
    if (st->added) {
        if (gpuop_map_put(&inf->store, st->key, NULL, NULL) < 0) {
            gpuop_error(st->key, "out of memory caching %s", inf->cfg.name);
            return;
        }
        mark = gpuop_map_tag(&inf->store, st->key);
    }
    const char *skey = gpuop_map_key(&inf->store, st->key);
    struct gpuop_err err = {0};
    void *item = inf->cfg.convert ? inf->cfg.convert(obj, skey, &err) : json_incref(obj);
    if (!item) {
        gpuop_warn(st->key, "cannot use this %s: %s", inf->cfg.name, err.message);
        if (st->added)
            gpuop_map_del(&inf->store, st->key);
        else
            *mark = inf->mark; /* keep the last good version */
        return;
    }
    *mark = inf->mark;
    st->item = item;
    st->op = STAGED_PUT;
}

/* Phase one of a delete: only the key is kept. */
static void stage_del(struct gpuop_informer *inf, json_t *obj, struct staged *st)
{
    st->op = store_key(inf, obj, st->key, sizeof(st->key)) == 0 ? STAGED_DEL : STAGED_NONE;
}

static void remove_key(struct gpuop_informer *inf, const char *key);

/* Phase two, the scratch window closed: the store changes and on_event
 * runs. */
static void commit(struct gpuop_informer *inf, struct staged *st)
{
    if (inf->cfg.stream) {
        if (st->op == STAGED_NONE)
            return;
        bool put = st->op == STAGED_PUT;
        inf->cfg.on_object(inf->cfg.arg, put ? GPUOP_INFORMER_PUT : GPUOP_INFORMER_DEL, st->key,
                           put ? st->item : NULL);
        if (put)
            free_item(inf, st->item);
        return;
    }
    if (st->op == STAGED_DEL) {
        remove_key(inf, st->key);
        return;
    }
    if (st->op != STAGED_PUT)
        return;
    const char *skey = gpuop_map_key(&inf->store, st->key);
    void *item = st->item, *old = st->added ? NULL : gpuop_map_get(&inf->store, st->key);
    bool same = old && inf->cfg.same && inf->cfg.same(old, item);
    if (same && inf->cfg.keep_same) {
        free_item(inf, item); /* the cached item stays: nothing changed */
        return;
    }
    gpuop_map_put(&inf->store, st->key, item, &old); /* a replace: cannot fail */
    if (st->added) {
        if (inf->cfg.on_event)
            inf->cfg.on_event(inf->cfg.arg, skey, NULL, item);
        return;
    }
    if (!same && inf->cfg.on_event)
        inf->cfg.on_event(inf->cfg.arg, skey, old, item);
    free_item(inf, old);
}

static void remove_key(struct gpuop_informer *inf, const char *key)
{
    void *item = gpuop_map_get(&inf->store, key);
    if (!item)
        return;
    /* The item may point at the store's key: the key goes last. */
    if (inf->cfg.on_event)
        inf->cfg.on_event(inf->cfg.arg, key, item, NULL);
    free_item(inf, item);
    gpuop_map_del(&inf->store, key);
}

/* Synthetic deletes for items the last list did not contain. */
static void sweep(struct gpuop_informer *inf)
{
    size_t n = 0, it = 0;
    const char *key;
    uint32_t mark;
    char **stale = NULL;
    while (gpuop_map_next_tag(&inf->store, &it, NULL, NULL, &mark))
        if (mark != inf->mark)
            n++;
    if (!n)
        return;
    stale = calloc(n, sizeof(*stale));
    if (!stale)
        return; /* retried at the next relist */
    size_t k = 0;
    it = 0;
    while (k < n && gpuop_map_next_tag(&inf->store, &it, &key, NULL, &mark))
        if (mark != inf->mark)
            stale[k++] = strdup(key);
    for (size_t i = 0; i < k; i++) {
        if (stale[i]) {
            gpuop_debug(stale[i], "%s: gone after relist", inf->cfg.name);
            remove_key(inf, stale[i]);
        }
        free(stale[i]);
    }
    free(stale);
}

static void set_str(char **dst, const char *s)
{
    char *d = (s && *s) ? strdup(s) : NULL;
    free(*dst);
    *dst = d;
}

static void set_rv_from(struct gpuop_informer *inf, json_t *obj)
{
    const char *rv =
        json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
    if (rv && *rv)
        set_str(&inf->rv, rv);
}

/* ---- backoff ---- */

/* xorshift64: spreads many watchers' retries and timeouts apart. */
static uint64_t next_random(struct gpuop_informer *inf)
{
    inf->rng ^= inf->rng << 13;
    inf->rng ^= inf->rng >> 7;
    inf->rng ^= inf->rng << 17;
    return inf->rng;
}

/* ms plus up to 50 %. */
static uint64_t jitter(struct gpuop_informer *inf, uint64_t ms)
{
    return ms + (ms ? next_random(inf) % (ms / 2 + 1) : 0);
}

static void backoff_fire(uv_timer_t *t)
{
    struct gpuop_informer *inf = t->data;
    /* A relist that failed is retried as a list: the server already called
     * the resourceVersion we have too old. */
    if (inf->rv && inf->synced && !inf->after_gone)
        start_watch(inf);
    else
        start_list(inf);
}

static void backoff(struct gpuop_informer *inf, const char *why)
{
    uint64_t d = jitter(inf, inf->backoff_ms);
    gpuop_warn(inf->cfg.name, "%s; retrying in %.1f s", why, (double)d / 1000.0);
    inf->backoff_ms = inf->backoff_ms * 2 > inf->max_ms ? inf->max_ms : inf->backoff_ms * 2;
    inf->state = ST_BACKOFF;
    uv_timer_start(&inf->timer, backoff_fire, d, 0);
}

/* ---- paths ---- */

/* The path of a list or watch of cfg.res with params (NULL values left
 * out) and the label selector: new string, or NULL on out-of-memory. */
static char *request_path(const struct gpuop_informer *inf, struct gpuop_kube_param *params,
                          size_t n)
{
    params[n++] =
        (struct gpuop_kube_param){.key = "labelSelector", .value = inf->cfg.label_selector};
    params[n++] =
        (struct gpuop_kube_param){.key = "fieldSelector", .value = inf->cfg.field_selector};
    return gpuop_kube_path(&inf->cfg.res, params, n);
}

/* ---- list ---- */

static void list_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct gpuop_informer *inf = arg;
    inf->req = NULL;
    if (inf->state == ST_CLOSED || rc == GPUOP_ECANCELED)
        return;
    if (rc == GPUOP_EGONE && inf->cont) {
        /* The continue token expired: start the list over. */
        set_str(&inf->cont, NULL);
        start_list(inf);
        return;
    }
    (void)body; /* a streamed response: the items went through on_list_item */
    struct gpuop_err ferr = {0};
    const char *fail = NULL;
    if (rc < 0)
        fail = inf->list_err[0] ? inf->list_err : err->message;
    else if (gpuop_jsonlist_finish(&inf->list, &ferr) < 0)
        fail = ferr.message;
    else if (!inf->list.saw_items)
        fail = "no items";
    if (fail) {
        char why[700];
        snprintf(why, sizeof(why), "list failed: %s", fail);
        set_str(&inf->cont, NULL);
        if (inf->cfg.on_list_error)
            inf->cfg.on_list_error(inf->cfg.arg, rc < 0 ? rc : GPUOP_EPARSE);
        if (inf->state == ST_CLOSED)
            return; /* closed from on_list_error */
        backoff(inf, why);
        return;
    }

    json_t *md = inf->list.metadata;
    const char *cont = json_string_value(json_object_get(md, "continue"));
    if (cont && *cont) {
        set_str(&inf->cont, cont);
        start_list(inf);
        return;
    }
    set_str(&inf->cont, NULL);
    set_str(&inf->rv, json_string_value(json_object_get(md, "resourceVersion")));
    if (!inf->cfg.stream) {
        sweep(inf);
    } else if (inf->cfg.on_list) {
        inf->cfg.on_list(inf->cfg.arg, GPUOP_INFORMER_LIST_END);
        if (inf->state == ST_CLOSED)
            return; /* closed from on_list */
    }
    inf->stats.lists++;
    if (inf->after_gone)
        inf->stats.relists++;
    inf->after_gone = false;
    inf->backoff_ms = inf->base_ms;
    if (!inf->synced) {
        inf->synced = true;
        gpuop_debug(inf->cfg.name, "synced: %zu objects at resourceVersion %s", inf->store.len,
                    inf->rv ? inf->rv : "?");
        if (inf->cfg.on_synced)
            inf->cfg.on_synced(inf->cfg.arg);
    }
    if (inf->state != ST_CLOSED)
        start_watch(inf);
}

/* The JSON scratch window (jsonarena.h), for kinds whose config asks for
 * it: opened before a list item or watch event is parsed, closed once its
 * tree is freed, before the store changes and on_event runs (commit). */
static void scratch_begin(const struct gpuop_informer *inf)
{
    if (inf->cfg.scratch)
        gpuop_jsonarena_begin();
}

static void scratch_end(const struct gpuop_informer *inf)
{
    if (inf->cfg.scratch)
        gpuop_jsonarena_end();
}

/* One element of the page's items, as soon as it has arrived. */
static int on_list_item(void *arg, const char *json, size_t len)
{
    struct gpuop_informer *inf = arg;
    json_error_t je;
    scratch_begin(inf);
    json_t *obj = gpuop_jsonstrip_load(json, len, inf->item_cut, inf->ncut, 0, &je);
    if (!obj) {
        scratch_end(inf);
        snprintf(inf->list_err, sizeof(inf->list_err), "malformed object in the list: %s", je.text);
        return GPUOP_EPARSE;
    }
    struct staged st;
    stage_put(inf, obj, &st);
    json_decref(obj);
    scratch_end(inf);
    commit(inf, &st);
    return inf->state == ST_CLOSED ? GPUOP_ECANCELED : 0; /* closed from on_event */
}

static int on_list_data(void *arg, const char *chunk, size_t len)
{
    struct gpuop_informer *inf = arg;
    if (inf->state == ST_CLOSED)
        return GPUOP_ECANCELED;
    struct gpuop_err err = {0};
    int rc = gpuop_jsonlist_feed(&inf->list, chunk, len, &err);
    if (rc < 0 && !inf->list_err[0])
        snprintf(inf->list_err, sizeof(inf->list_err), "%s", err.message);
    return rc;
}

static void start_list(struct gpuop_informer *inf)
{
    char limit[16];
    snprintf(limit, sizeof(limit), "%d", GPUOP_INFORMER_PAGE);
    struct gpuop_kube_param params[4] = {{.key = "limit", .value = limit},
                                         {.key = "continue", .value = inf->cont}};
    if (!inf->cont) { /* a new list begins */
        inf->mark++;
        if (inf->cfg.stream && inf->cfg.on_list) {
            inf->cfg.on_list(inf->cfg.arg, GPUOP_INFORMER_LIST_BEGIN);
            if (inf->state == ST_CLOSED)
                return; /* closed from on_list */
        }
    }
    char *path = request_path(inf, params, 2);
    inf->state = ST_LISTING;
    gpuop_jsonlist_reset(&inf->list);
    inf->list_err[0] = '\0';
    /* Streamed, so a page is never held whole: see jsonlist_int.h. */
    struct gpuop_kube_opts o = {
        .verb = GPUOP_KUBE_GET, .path = path, .timeout_ms = LIST_TIMEOUT_MS};
    int rc = path ? gpuop_kube_stream(inf->kube, &o, on_list_data, list_done, inf, &inf->req)
                  : GPUOP_ENOMEM;
    free(path);
    if (rc < 0) {
        inf->req = NULL;
        backoff(inf, "cannot start list");
    }
}

/* ---- watch ---- */

static int on_line(void *arg, const char *line, size_t len)
{
    struct gpuop_informer *inf = arg;
    json_error_t jerr;
    if (inf->state == ST_CLOSED)
        return -1; /* closed from on_event: the rest of the chunk is dropped */
    scratch_begin(inf);
    json_t *ev = gpuop_jsonstrip_load(line, len, inf->event_cut, inf->ncut, 0, &jerr);
    if (!ev) {
        scratch_end(inf);
        gpuop_warn(inf->cfg.name, "malformed watch event: %s", jerr.text);
        inf->verdict = V_ERROR;
        return -1;
    }
    const char *type = json_string_value(json_object_get(ev, "type"));
    json_t *obj = json_object_get(ev, "object");
    struct staged st = {.op = STAGED_NONE};
    int ret = 0;
    inf->stats.events++;
    inf->watch_events++;
    if (!type || !json_is_object(obj)) {
        gpuop_warn(inf->cfg.name, "watch event without type or object");
        inf->verdict = V_ERROR;
        ret = -1;
    } else if (!strcmp(type, "ADDED") || !strcmp(type, "MODIFIED")) {
        stage_put(inf, obj, &st);
        set_rv_from(inf, obj);
    } else if (!strcmp(type, "DELETED")) {
        stage_del(inf, obj, &st);
        set_rv_from(inf, obj);
    } else if (!strcmp(type, "BOOKMARK")) {
        set_rv_from(inf, obj);
    } else if (!strcmp(type, "ERROR")) {
        json_int_t code = json_integer_value(json_object_get(obj, "code"));
        const char *msg = json_string_value(json_object_get(obj, "message"));
        if (code == 410) {
            gpuop_info(inf->cfg.name, "watch expired (410: %s); relisting", msg ? msg : "gone");
            inf->verdict = V_RELIST;
        } else {
            gpuop_warn(inf->cfg.name, "watch error %lld: %s", (long long)code,
                       msg ? msg : "(no message)");
            inf->verdict = V_ERROR;
        }
        ret = -1;
    } else {
        gpuop_warn(inf->cfg.name, "unknown watch event type %s", type);
    }
    json_decref(ev);
    scratch_end(inf);
    commit(inf, &st);
    return ret;
}

static int on_data(void *arg, const char *chunk, size_t len)
{
    struct gpuop_informer *inf = arg;
    int rc = gpuop_lines_feed(&inf->lines, chunk, len, on_line, inf);
    if (rc == GPUOP_ETOOBIG) {
        gpuop_warn(inf->cfg.name, "watch event over %zu bytes", inf->max_line);
        inf->verdict = V_ERROR;
    }
    return rc < 0 ? GPUOP_EPARSE : 0;
}

static void watch_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct gpuop_informer *inf = arg;
    inf->req = NULL;
    if (inf->state == ST_CLOSED || rc == GPUOP_ECANCELED)
        return;
    uint64_t lasted = gpuop_clock_ms() - inf->watch_started;
    if (inf->verdict == V_RELIST || rc == GPUOP_EGONE) {
        inf->after_gone = true;
        start_list(inf);
        return;
    }
    if (rc == 0 && inf->verdict == V_OK &&
        (lasted >= VERY_SHORT_WATCH_MS || inf->watch_events > 0)) {
        /* The server closed the stream at its timeout: resume. */
        if (lasted >= BACKOFF_RESET_MS)
            inf->backoff_ms = inf->base_ms;
        start_watch(inf);
        return;
    }
    inf->stats.restarts++;
    if (lasted >= BACKOFF_RESET_MS)
        inf->backoff_ms = inf->base_ms;
    char why[700];
    snprintf(why, sizeof(why), "watch ended: %s",
             rc < 0 && err ? err->message : "stream closed early or malformed");
    backoff(inf, why);
}

static void start_watch(struct gpuop_informer *inf)
{
    char tmo[24];
    inf->rng ^= uv_hrtime();
    uint64_t timeout_s = MIN_WATCH_TIMEOUT_S + next_random(inf) % MIN_WATCH_TIMEOUT_S;
    snprintf(tmo, sizeof(tmo), "%llu", (unsigned long long)timeout_s);
    struct gpuop_kube_param params[6] = {{.key = "watch", .value = "1"},
                                         {.key = "allowWatchBookmarks", .value = "true"},
                                         {.key = "timeoutSeconds", .value = tmo},
                                         {.key = "resourceVersion", .value = inf->rv}};
    char *path = request_path(inf, params, 4);
    gpuop_lines_reset(&inf->lines);
    inf->verdict = V_OK;
    inf->watch_events = 0;
    inf->watch_started = gpuop_clock_ms();
    inf->state = ST_WATCHING;
    inf->stats.watches++;
    struct gpuop_kube_opts o = {.verb = GPUOP_KUBE_WATCH,
                                .path = path,
                                .timeout_ms = (long)(timeout_s + WATCH_CLIENT_SLACK_S) * 1000};
    int rc =
        path ? gpuop_kube_stream(inf->kube, &o, on_data, watch_done, inf, &inf->req) : GPUOP_ENOMEM;
    free(path);
    if (rc < 0) {
        inf->req = NULL;
        backoff(inf, "cannot start watch");
    }
}

/* ---- lifecycle ---- */

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* The paths cut before parsing: managedFields, then cfg->unread, then
 * cfg->digested ("a.b", NULL-terminated; copied into unread_keys).
 * GPUOP_EINVAL for more than GPUOP_INFORMER_UNREAD_MAX of them, one of
 * more than GPUOP_INFORMER_UNREAD_KEYS keys or with an empty key. */
static int cut_paths(struct gpuop_informer *inf, const char *const *unread,
                     const char *const *digested)
{
    static const struct gpuop_jsonstrip_path mf = {MANAGED_FIELDS_PATH};
    size_t nu = 0, nd = 0, bytes = 0;
    for (; unread && unread[nu]; nu++)
        bytes += strlen(unread[nu]) + 1;
    for (; digested && digested[nd]; nd++)
        bytes += strlen(digested[nd]) + 1;
    if (nu + nd > GPUOP_INFORMER_UNREAD_MAX)
        return GPUOP_EINVAL;
    inf->item_cut[0] = mf;
    inf->ncut = 1;
    char *p = nu + nd ? malloc(bytes) : NULL;
    if (nu + nd && !p)
        return GPUOP_ENOMEM;
    inf->unread_keys = p;
    for (size_t i = 0; i < nu + nd; i++) {
        const char *dotted = i < nu ? unread[i] : digested[i - nu];
        size_t len = strlen(dotted);
        memcpy(p, dotted, len + 1);
        struct gpuop_jsonstrip_path *x = &inf->item_cut[inf->ncut++];
        if (gpuop_jsonstrip_split(p, NULL, GPUOP_INFORMER_UNREAD_KEYS, x) < 0)
            return GPUOP_EINVAL;
        x->digest = i >= nu;
        p += len + 1;
    }
    for (size_t i = 0; i < inf->ncut; i++) {
        inf->event_cut[i].key[0] = "object";
        memcpy(&inf->event_cut[i].key[1], inf->item_cut[i].key,
               inf->item_cut[i].n * sizeof(inf->item_cut[i].key[0]));
        inf->event_cut[i].n = inf->item_cut[i].n + 1;
        inf->event_cut[i].digest = inf->item_cut[i].digest;
    }
    return 0;
}

/* The strings of cfg the informer owns. */
static void free_cfg(struct gpuop_informer_config *c)
{
    free((char *)c->name);
    free((char *)c->res.group_version);
    free((char *)c->res.ns);
    free((char *)c->res.resource);
    free((char *)c->label_selector);
    free((char *)c->field_selector);
}

int gpuop_informer_new(uv_loop_t *loop, struct gpuop_kube *kube,
                       const struct gpuop_informer_config *cfg, struct gpuop_informer **out)
{
    if (!cfg->res.resource || !*cfg->res.resource || cfg->res.name)
        return GPUOP_EINVAL; /* a collection */
    if (cfg->scratch && !cfg->convert)
        return GPUOP_EINVAL; /* the items would be trees in the scratch region */
    if (cfg->keep_same && !cfg->same)
        return GPUOP_EINVAL; /* nothing says what is the same */
    if (cfg->stream && (!cfg->on_object || cfg->on_event || cfg->same))
        return GPUOP_EINVAL; /* no store: nothing to compare or to tell as a change */
    struct gpuop_informer *inf = calloc(1, sizeof(*inf));
    if (!inf)
        return GPUOP_ENOMEM;
    inf->loop = loop;
    inf->kube = kube;
    inf->cfg = *cfg;
    struct gpuop_informer_config *c = &inf->cfg;
    c->name = dup_or_null(cfg->name ? cfg->name : cfg->res.resource);
    c->res = (struct gpuop_kube_ref){.group_version = dup_or_null(cfg->res.group_version),
                                     .ns = dup_or_null(cfg->res.ns),
                                     .resource = dup_or_null(cfg->res.resource)};
    c->label_selector = dup_or_null(cfg->label_selector);
    c->field_selector = dup_or_null(cfg->field_selector);
    if (!c->name || !c->res.resource || (cfg->res.group_version && !c->res.group_version) ||
        (cfg->res.ns && !c->res.ns) || (cfg->label_selector && !c->label_selector) ||
        (cfg->field_selector && !c->field_selector)) {
        free_cfg(c);
        free(inf);
        return GPUOP_ENOMEM;
    }
    c->unread = c->digested = NULL; /* not kept: cut_paths copies what it needs */
    int rc = cut_paths(inf, cfg->unread, cfg->digested);
    if (rc < 0) {
        free(inf->unread_keys);
        free_cfg(c);
        free(inf);
        return rc;
    }
    inf->one_namespace = c->res.ns && *c->res.ns;
    inf->max_line = cfg->max_line ? cfg->max_line : GPUOP_INFORMER_MAX_LINE;
    gpuop_map_init_pooled(&inf->store);
    gpuop_lines_init(&inf->lines, inf->max_line);
    gpuop_jsonlist_init(&inf->list, inf->max_line, on_list_item, inf);
    uv_timer_init(loop, &inf->timer);
    inf->timer.data = inf;
    inf->base_ms = inf->backoff_ms = BACKOFF_INITIAL_MS;
    inf->max_ms = BACKOFF_MAX_MS;
    inf->rng = uv_hrtime() | 1;
    *out = inf;
    return 0;
}

int gpuop_informer_start(struct gpuop_informer *inf)
{
    if (inf->state != ST_IDLE)
        return GPUOP_EINVAL;
    start_list(inf);
    return 0;
}

bool gpuop_informer_synced(const struct gpuop_informer *inf)
{
    return inf->synced;
}

void *gpuop_informer_get(const struct gpuop_informer *inf, const char *key)
{
    return gpuop_map_get(&inf->store, key);
}

void *gpuop_informer_get_h32(const struct gpuop_informer *inf, uint32_t h, const char *skip,
                             const char **key)
{
    return gpuop_map_get_h32(&inf->store, h, skip, key);
}

size_t gpuop_informer_len(const struct gpuop_informer *inf)
{
    return inf->store.len;
}

int gpuop_informer_next(const struct gpuop_informer *inf, size_t *iter, const char **key,
                        void **item)
{
    return gpuop_map_next(&inf->store, iter, key, item);
}

const char *gpuop_informer_resource_version(const struct gpuop_informer *inf)
{
    return inf->rv;
}

void gpuop_informer_stats(const struct gpuop_informer *inf, struct gpuop_informer_stats *out)
{
    *out = inf->stats;
}

void gpuop_informer_set_backoff(struct gpuop_informer *inf, uint64_t base_ms, uint64_t max_ms)
{
    inf->base_ms = inf->backoff_ms = base_ms;
    inf->max_ms = max_ms;
}

static void timer_closed(uv_handle_t *h)
{
    struct gpuop_informer *inf = h->data;
    size_t it = 0;
    void *item;
    while (gpuop_map_next(&inf->store, &it, NULL, &item))
        free_item(inf, item);
    gpuop_map_free(&inf->store, NULL);
    gpuop_lines_free(&inf->lines);
    gpuop_jsonlist_free(&inf->list);
    free(inf->rv);
    free(inf->cont);
    free(inf->unread_keys);
    free_cfg(&inf->cfg);
    void (*cb)(void *) = inf->close_cb;
    void *arg = inf->close_arg;
    free(inf);
    if (cb)
        cb(arg);
}

void gpuop_informer_close(struct gpuop_informer *inf, void (*cb)(void *), void *arg)
{
    inf->state = ST_CLOSED;
    inf->close_cb = cb;
    inf->close_arg = arg;
    if (inf->req) {
        struct gpuop_kube_req *r = inf->req;
        inf->req = NULL;
        gpuop_kube_cancel(r);
    }
    uv_timer_stop(&inf->timer);
    uv_close((uv_handle_t *)&inf->timer, timer_closed);
}
