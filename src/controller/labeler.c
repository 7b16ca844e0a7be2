/*
 * labeler.c - node labelling (SPEC 4a): gpuop labels a GPU node nobody
 * labelled, once, and records what it set in the node's annotation.
 *
 * Driven by the reconcile of the active policy, while this replica leads:
 * gpuop_ctl_labeler_track() gets the node cache and the policy, asks the
 * pure decision (findings/labeling.c) which nodes want labels, and keeps
 * exactly those as candidates (level-triggered: recomputed from the cache
 * every time, a node that no longer wants labels is forgotten with its
 * backoff). For each candidate, at most LABELER_IN_FLIGHT_MAX at a time:
 *
 *   GET the node -> the same decision from that fresh object (the cache
 *   may lag a person's label, or our own last PATCH) -> nothing to do:
 *   settle; else PATCH application/merge-patch+json
 *     {"metadata": {"resourceVersion": <the GET's>,
 *                   "labels": {<label>: "true", ...},
 *                   "annotations": {"gpuop.dev/node-labels": <JSON>}}}
 *
 * Why a JSON merge patch and not server-side apply: gpuop writes each label
 * once and must never write it again. A merge patch carries exactly the
 * keys being added and nothing else; with SSA gpuop's field manager would
 * own the labels, so a later apply that leaves one out deletes it, and one
 * that keeps it (force) takes it back from a person who changed it. The
 * resourceVersion in the patch is a precondition: when the node changed
 * after the GET (a person labelled it meanwhile), the API server answers
 * 409 and the node is decided again from a new GET, so nothing is written
 * over a label gpuop did not see.
 *
 * Errors back off per node (LABELER_BACKOFF_FIRST_MS doubling to
 * LABELER_BACKOFF_MAX_MS); a 409 is retried at once (once per track); a
 * node that is gone is forgotten. After a PATCH (or a GET that found
 * nothing to do) the node waits LABELER_SETTLE_MS before it may be asked
 * again, so a cache that has not seen the change yet costs one GET, not a
 * loop.
 *
 * Driver pools (SPEC 4f, labeling.h has the rules): the node cache keeps
 * no label but its own few, so which GPU nodes a pool's nodeSelector
 * selects is asked of the API server, as NVIDIA's validator does
 * (gpu-operator internal/validator/validator.go lists the nodes of each
 * NVIDIADriver's selector): one LIST per pool with a nodeSelector,
 * labelSelector=<its selector>, in pages of POOLS_LIST_LIMIT, one request
 * at a time, of the nodes' metadata alone (GPUOP_ACCEPT_METADATA_LIST:
 * only the names are read). When the last one answers, each GPU node whose pool label or
 * conflict annotation the answers say is wrong is a candidate like the
 * others, and the policy is queued so that it is tracked at once. The
 * LISTs are made again when the pools change, when the number of GPU
 * nodes changes (at most every POOLS_LIST_GAP_MS) and every
 * POOLS_RESYNC_MS (a label a person changes on a node is seen by then).
 * The GET decides again from the fresh node's own labels, so a LIST that
 * lags never writes a wrong label; the merge patch sets or removes
 * GPUOP_LABEL_DRIVER_POOL and GPUOP_ANNOTATION_DRIVER_POOL_CONFLICT beside
 * the deploy labels (and the node-labels note only when those are set).
 * A node that runs a driver pod (the pods' cache, gpuop_ctl_labeler_drivers)
 * is never relabelled into another pool: the patch sets
 * GPUOP_ANNOTATION_DRIVER_POOL_WANTED instead, and the driver upgrade
 * (upgrade_actor.c) changes the label once the node's GPU jobs are done or
 * evicted (labeling.h has the rule). Every pool label value written is
 * recorded in GPUOP_ANNOTATION_DRIVER_POOL_SET, so that a label of a pool
 * gone is removed only when it is gpuop's; a pool draining from the policy
 * (gpuop_policy.draining_pools), or such a label on a GPU node, keeps the
 * labeller on without a nodeSelector.
 */
#include <stdlib.h>
#include <string.h>

#include "gpuop/clock.h"
#include "gpuop/jsonarena.h"
#include "gpuop/caches.h"
#include "gpuop/kube.h"
#include "gpuop/labeling.h"
#include "gpuop/log.h"
#include "gpuop/map.h"
#include "gpuop/names.h"

#include "controller_int.h"
#include "queue_int.h"

#define LABELER_IN_FLIGHT_MAX    4
#define LABELER_BACKOFF_FIRST_MS 1000
#define LABELER_BACKOFF_MAX_MS   300000
#define LABELER_SETTLE_MS        3000
/* "gpuop.dev/node-labels" of a node, as gpuop writes it: a few labels. */
#define LABELER_NOTE_MAX GPUOP_MODEL_NOTE_MAX
/* Driver pools: the LISTs of the nodes each pool's nodeSelector selects. */
#define POOLS_RESYNC_MS   30000 /* made again after this long, whatever changed */
#define POOLS_LIST_GAP_MS 5000  /* at least this long between two, unless the pools changed */
/* Nodes a page: their metadata alone (PartialObjectMetadataList: no spec
 * or status, whose images list is a third of a GPU node; its labels,
 * annotations and managedFields stay), so at 150 a page's parse is what
 * 100 whole Nodes' was: jansson holds 10.5 MiB for 100 whole synthetic
 * NFD-labelled GPU nodes (22 KiB each), 7.0 MiB for their metadata
 * (14 KiB each), 17.5 MiB for 250 (docs/operations.md, "Driver pools"). */
#define POOLS_LIST_LIMIT "150"
/* A listed node's map value: its pools' bits beside this one (never NULL). */
#define POOLS_LISTED 0x100u

/* One candidate node: in the map by name. */
struct rec {
    struct ctl_labeler *l;
    struct gpuop_kube_req *req; /* GET or PATCH in flight, or NULL */
    uint64_t retry_at_ms;       /* gpuop_clock_ms before which it is not asked again */
    uint64_t backoff_ms;        /* the next failure's delay; 0: none failed */
    uint64_t seen;              /* the track that last wanted it */
    bool dropped;               /* no longer a candidate: freed when its request ends */
    bool patching;              /* req is the PATCH */
    char *said;                 /* the labels of the PATCH in flight, for the log (new) */
    char name[];
};

struct ctl_labeler {
    uv_loop_t *loop;
    struct gpuop_kube *kube;
    uv_timer_t timer;            /* the next backoff or settle that ends */
    struct gpuop_map recs;       /* node name -> struct rec * */
    struct gpuop_labeling facts; /* of the last track's policy */
    uint64_t tracks;
    size_t inflight;
    uint64_t patches;
    /* driver pools */
    struct gpuop_queue *queue;     /* the policy is queued when the LISTs answer */
    char *key;                     /* the policy tracked last (new) */
    struct gpuop_pool_facts pools; /* of the last track's policy (owned) */
    struct gpuop_map listed;       /* node name -> POOLS_LISTED | its pools' bits */
    struct gpuop_map building;     /* the same, while the LISTs run */
    bool listed_valid;             /* listed answers for pools */
    struct gpuop_kube_req *list_req;
    int list_pool;                                   /* the pool being listed */
    char *list_continue;                             /* its next page's token (new), or NULL */
    uint64_t listed_at_ms;                           /* when the last LISTs began; 0: never */
    size_t listed_gpus;                              /* GPU nodes in the cache then */
    size_t gpus;                                     /* GPU nodes in the cache at the last track */
    uv_timer_t list_timer;                           /* the next resync */
    bool (*has_driver)(void *arg, const char *node); /* NULL: no node has a driver pod */
    void *driver_arg;
    bool stopped; /* not leading, or closing: nothing is started */
    bool closing;
    void (*close_cb)(void *);
    void *close_arg;
};

static void pump(struct ctl_labeler *l);

static void rec_free(struct rec *r)
{
    free(r->said);
    free(r);
}

/* A GET in flight is cancelled; a PATCH is not while the labeler runs:
 * it was sent, and the node watch often shows its change (so the node is
 * no longer a candidate) before its answer arrives, which is then still
 * counted and logged. Such a record stays in the map, marked dropped,
 * until its answer (or until stopping or closing cancels it). */
static void rec_forget(struct ctl_labeler *l, struct rec *r)
{
    if (r->req && r->patching && !l->stopped) {
        r->dropped = true; /* stays in the map (stop finds it) until its answer */
        return;
    }
    gpuop_map_del(&l->recs, r->name);
    if (r->req) {
        r->dropped = true;
        gpuop_kube_cancel(r->req); /* its done callback frees it */
    } else {
        rec_free(r);
    }
}

/* The request of r ended: true when r is still a candidate to work on. */
static bool ended(struct rec *r)
{
    struct ctl_labeler *l = r->l;
    r->req = NULL;
    r->patching = false;
    l->inflight--;
    if (r->dropped) {
        if (gpuop_map_get(&l->recs, r->name) == r) /* a PATCH let finish */
            gpuop_map_del(&l->recs, r->name);
        rec_free(r);
        return false;
    }
    return true;
}

static void failed(struct rec *r, const char *what, int rc, const struct gpuop_err *err)
{
    struct ctl_labeler *l = r->l;
    if (rc == GPUOP_ECANCELED)
        return;
    if (rc == GPUOP_ENOTFOUND) { /* node gone */
        rec_forget(l, r);
        return;
    }
    if (rc == GPUOP_ECONFLICT) { /* changed since the GET: decide again, now */
        r->retry_at_ms = 0;
        gpuop_debug("labeler", "node %s changed while being labelled; deciding again", r->name);
        return;
    }
    r->backoff_ms = r->backoff_ms ? r->backoff_ms * 2 : LABELER_BACKOFF_FIRST_MS;
    if (r->backoff_ms > LABELER_BACKOFF_MAX_MS)
        r->backoff_ms = LABELER_BACKOFF_MAX_MS;
    r->retry_at_ms = gpuop_clock_ms() + r->backoff_ms;
    gpuop_warn("labeler", "%s of node %s failed: %s; retrying in %llu ms", what, r->name,
               err && err->message[0] ? err->message : gpuop_strerror(rc),
               (unsigned long long)r->backoff_ms);
}

static void patch_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct rec *r = arg;
    struct ctl_labeler *l = r->l;
    (void)body;
    if (rc >= 0) { /* also when r was dropped meanwhile */
        l->patches++;
        gpuop_info("labeler", "labelled node %s: %s", r->name, r->said ? r->said : "?");
    }
    if (!ended(r))
        goto out;
    if (rc < 0) {
        failed(r, "PATCH", rc, err);
    } else {
        r->backoff_ms = 0;
        r->retry_at_ms = gpuop_clock_ms() + LABELER_SETTLE_MS;
    }
out:
    if (!l->closing)
        pump(l);
}

/* What one PATCH writes: the deploy labels (SPEC 4a) and the pool's. */
struct plans {
    bool deploy;
    struct gpuop_label_plan labels;
    bool pool;
    struct gpuop_pool_plan pools;
};

/* Appends one item, the strings a, b and c, to the log's list said (size
 * bytes, *len used). */
static void say(char *said, size_t size, size_t *len, const char *a, const char *b, const char *c)
{
    int k = snprintf(said + *len, size - *len, "%s%s%s%s", *len ? ", " : "", a, b, c);
    *len += k > 0 && (size_t)k < size - *len ? (size_t)k : 0;
}

/* The deploy labels of plan into labels and the note of node annotations
 * old (borrowed) into annotations (both borrowed); false on out-of-memory. */
static bool deploy_part(json_t *old_annotations, const struct gpuop_label_plan *plan,
                        json_t *labels, json_t *annotations, char *said, size_t size, size_t *len)
{
    const char *old =
        json_string_value(json_object_get(old_annotations, GPUOP_ANNOTATION_NODE_LABELS));
    json_t *note = old && strlen(old) <= LABELER_NOTE_MAX ? json_loads(old, 0, NULL) : NULL;
    if (!json_is_object(note)) { /* none (a BAD one is never written over: plan) */
        json_decref(note);
        note = json_object();
    }
    char at[GPUOP_TIME_MAX], key[128];
    gpuop_time_format(at, sizeof(at), gpuop_clock_wall_us(), GPUOP_TIME_S);
    for (int i = -1; i < gpuop_operand_count(); i++) {
        if (i < 0 ? !plan->present : !((plan->deploy >> i) & 1u))
            continue;
        if (i < 0)
            snprintf(key, sizeof(key), "%s", GPUOP_LABEL_GPU_PRESENT);
        else
            snprintf(key, sizeof(key), "%s%s", GPUOP_LABEL_PREFIX, gpuop_operand_get(i)->name);
        json_object_set_new(labels, key, json_string("true"));
        json_object_set_new(note, key, json_pack("{s:s,s:s}", "value", "true", "at", at));
        say(said, size, len, key, "=true", "");
    }
    char *note_s = json_dumps(note, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(note);
    bool ok =
        note_s && strlen(note_s) <= LABELER_NOTE_MAX &&
        json_object_set_new(annotations, GPUOP_ANNOTATION_NODE_LABELS, json_string(note_s)) == 0;
    gpuop_json_free(note_s);
    return ok;
}

/* The pool label and conflict annotation of plan into labels and
 * annotations (borrowed); a JSON null removes one. */
static void pool_part(const struct gpuop_pool_plan *plan, json_t *labels, json_t *annotations,
                      char *said, size_t size, size_t *len)
{
    if (plan->label) {
        json_object_set_new(labels, GPUOP_LABEL_DRIVER_POOL,
                            plan->pool ? json_string(plan->pool) : json_null());
        say(said, size, len, GPUOP_LABEL_DRIVER_POOL, plan->pool ? "=" : " removed",
            plan->pool ? plan->pool : "");
    }
    if (plan->record) /* the value gpuop wrote: only that is ever removed */
        json_object_set_new(annotations, GPUOP_ANNOTATION_DRIVER_POOL_SET,
                            plan->pool ? json_string(plan->pool) : json_null());
    if (plan->note) {
        const char *c = plan->conflict;
        json_object_set_new(annotations, GPUOP_ANNOTATION_DRIVER_POOL_CONFLICT,
                            *c ? json_string(c) : json_null());
        say(said, size, len, GPUOP_ANNOTATION_DRIVER_POOL_CONFLICT, *c ? "=" : " removed",
            *c ? c : "");
    }
    if (plan->want) {
        const char *w = plan->wanted;
        json_object_set_new(annotations, GPUOP_ANNOTATION_DRIVER_POOL_WANTED,
                            w ? json_string(w) : json_null());
        say(said, size, len, GPUOP_ANNOTATION_DRIVER_POOL_WANTED, w ? "=" : " removed", w ? w : "");
    }
}

/* The merge patch for node obj (borrowed) and pl (new JSON text, NULL on
 * out-of-memory); what it writes is listed into said. */
static char *patch_body(json_t *obj, const struct plans *pl, char *said, size_t size)
{
    json_t *meta = json_object_get(obj, "metadata");
    const char *rv = json_string_value(json_object_get(meta, "resourceVersion"));
    json_t *labels = json_object(), *annotations = json_object(), *patch = NULL;
    size_t len = 0;
    said[0] = '\0';
    bool ok = labels && annotations && rv;
    if (ok && pl->deploy)
        ok = deploy_part(json_object_get(meta, "annotations"), &pl->labels, labels, annotations,
                         said, size, &len);
    if (ok && pl->pool)
        pool_part(&pl->pools, labels, annotations, said, size, &len);
    if (ok)
        patch = json_pack("{s:{s:s,s:O,s:O}}", "metadata", "resourceVersion", rv, "labels", labels,
                          "annotations", annotations);
    json_decref(labels);
    json_decref(annotations);
    char *body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
    json_decref(patch);
    return body;
}

/* What the fresh node body (borrowed) wants written; false: nothing. */
static bool decide(const struct ctl_labeler *l, json_t *body, struct plans *pl)
{
    struct gpuop_err e = {0};
    struct gpuop_node *n = gpuop_node_new(body, NULL, &e);
    memset(pl, 0, sizeof(*pl));
    pl->deploy = n && gpuop_labeling_plan(&l->facts, n, &pl->labels);
    if (n && n->gpu && l->pools.on) {
        json_t *labels = json_object_get(json_object_get(body, "metadata"), "labels");
        struct gpuop_pool_node now = {
            gpuop_node_os(n, GPUOP_OS_DRIVER_POOL), gpuop_node_os(n, GPUOP_OS_POOL_CONFLICT),
            gpuop_node_os(n, GPUOP_OS_POOL_WANTED),
            l->has_driver && l->has_driver(l->driver_arg, n->name), n->up.pool_ours};
        pl->pool = gpuop_labeling_pool_plan(&l->pools, gpuop_labeling_pool_match(&l->pools, labels),
                                            &now, &pl->pools);
    }
    gpuop_node_free(n);
    return pl->deploy || pl->pool;
}

static void get_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct rec *r = arg;
    struct ctl_labeler *l = r->l;
    if (!ended(r))
        goto out;
    if (rc < 0) {
        failed(r, "GET", rc, err);
        goto out;
    }
    struct gpuop_err e = {0};
    struct plans pl;
    bool want = decide(l, body, &pl);
    r->retry_at_ms = gpuop_clock_ms() + LABELER_SETTLE_MS;
    if (!want)
        goto out; /* someone labelled it, or our PATCH is not in the cache yet */
    char said[1024];
    char *patch = patch_body(body, &pl, said, sizeof(said));
    struct gpuop_kube_ref ref = {"v1", NULL, "nodes", r->name, NULL};
    char *path = gpuop_kube_path(&ref, NULL, 0);
    struct gpuop_kube_opts o = {.verb = GPUOP_KUBE_PATCH,
                                .path = path,
                                .content_type = GPUOP_CT_MERGE,
                                .body = patch,
                                .body_len = patch ? strlen(patch) : 0};
    if (patch && path && gpuop_kube_request(l->kube, &o, patch_done, r, &r->req) == 0) {
        l->inflight++;
        r->patching = true;
        free(r->said);
        r->said = strdup(said); /* NULL: the log says "?" */
        gpuop_debug("labeler", "labelling node %s: %s", r->name, said);
    } else {
        gpuop_err_set(&e, GPUOP_ENOMEM, NULL, "out of memory building the patch");
        failed(r, "PATCH", GPUOP_ENOMEM, &e);
    }
    gpuop_json_free(patch);
    free(path);
out:
    if (!l->closing)
        pump(l);
}

static void on_timer(uv_timer_t *t)
{
    pump(t->data);
}

/* Starts what is due, up to the in-flight limit; arms the timer for the
 * first one that is not due yet. */
static void pump(struct ctl_labeler *l)
{
    if (l->stopped)
        return;
    uint64_t now = gpuop_clock_ms(), next = 0;
    size_t it = 0;
    void *v;
    while (l->inflight < LABELER_IN_FLIGHT_MAX && gpuop_map_next(&l->recs, &it, NULL, &v)) {
        struct rec *r = v;
        if (r->req)
            continue;
        if (r->retry_at_ms > now) {
            if (!next || r->retry_at_ms < next)
                next = r->retry_at_ms;
            continue;
        }
        struct gpuop_kube_ref ref = {"v1", NULL, "nodes", r->name, NULL};
        char *path = gpuop_kube_path(&ref, NULL, 0);
        r->retry_at_ms = now + LABELER_SETTLE_MS; /* a GET that cannot start: later */
        struct gpuop_kube_opts o = {.verb = GPUOP_KUBE_GET, .path = path};
        if (path && gpuop_kube_request(l->kube, &o, get_done, r, &r->req) == 0)
            l->inflight++;
        else
            r->req = NULL;
        free(path);
    }
    uv_timer_stop(&l->timer);
    if (next)
        uv_timer_start(&l->timer, on_timer, next - now, 0);
}

/* ---- driver pools: the LISTs of what each pool's nodeSelector selects ---- */

static void list_page(struct ctl_labeler *l);

/* The selector of pool k as a labelSelector ("a=b,c=d"; new, NULL on
 * out-of-memory). Keys and values are label syntax: no ',' or '=' in them. */
static char *selector_text(const json_t *sel)
{
    size_t n = 1;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)sel, k, v) n += strlen(k) + strlen(json_string_value(v)) + 2;
    char *out = malloc(n);
    size_t len = 0;
    json_object_foreach((json_t *)sel, k, v)
    {
        if (out)
            len += (size_t)snprintf(out + len, n - len, "%s%s=%s", len ? "," : "", k,
                                    json_string_value(v));
    }
    if (out && !len)
        out[0] = '\0';
    return out;
}

static void lists_cancel(struct ctl_labeler *l)
{
    if (l->list_req)
        gpuop_kube_cancel(l->list_req); /* list_done clears it */
    free(l->list_continue);
    l->list_continue = NULL;
    gpuop_map_free(&l->building, NULL);
    gpuop_map_init(&l->building);
}

static void lists_start(struct ctl_labeler *l)
{
    lists_cancel(l);
    l->listed_at_ms = gpuop_clock_ms();
    l->listed_gpus = l->gpus;
    l->list_pool = 0;
    list_page(l);
}

static void on_list_timer(uv_timer_t *t)
{
    struct ctl_labeler *l = t->data;
    if (!l->stopped && l->pools.on && !l->list_req)
        lists_start(l);
}

/* Every pool listed: the answers replace the last ones; the policy is
 * queued so that its track picks the candidates. */
static void lists_done(struct ctl_labeler *l)
{
    gpuop_map_free(&l->listed, NULL);
    l->listed = l->building;
    gpuop_map_init(&l->building);
    l->listed_valid = true;
    uv_timer_start(&l->list_timer, on_list_timer, POOLS_RESYNC_MS, 0);
    if (l->queue && l->key)
        (void)gpuop_queue_add(l->queue, l->key);
}

/* The nodes of one page (body borrowed) into building, as pool k's. */
static int list_items(struct ctl_labeler *l, json_t *body, int k)
{
    size_t i;
    json_t *it;
    json_array_foreach(json_object_get(body, "items"), i, it)
    {
        const char *name =
            json_string_value(json_object_get(json_object_get(it, "metadata"), "name"));
        if (!name)
            continue;
        uintptr_t m = (uintptr_t)gpuop_map_get(&l->building, name) | POOLS_LISTED | (1u << k);
        if (gpuop_map_put(&l->building, name, (void *)m, NULL) < 0)
            return GPUOP_ENOMEM;
    }
    return 0;
}

static void list_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct ctl_labeler *l = arg;
    l->list_req = NULL;
    l->inflight--;
    if (rc == GPUOP_ECANCELED)
        return;
    if (rc >= 0) {
        rc = list_items(l, body, l->list_pool);
        const char *kind = json_string_value(json_object_get(body, "kind"));
        gpuop_debug("labeler", "LIST of driver pool %s's nodes: %zu in a page of %s",
                    l->pools.name[l->list_pool], json_array_size(json_object_get(body, "items")),
                    kind ? kind : "no kind");
    }
    free(l->list_continue);
    l->list_continue = NULL;
    if (rc < 0) { /* tried again after the gap */
        gpuop_warn("labeler", "LIST of driver pool %s's nodes failed: %s; retrying in %d ms",
                   l->pools.name[l->list_pool],
                   err && err->message[0] ? err->message : gpuop_strerror(rc), POOLS_LIST_GAP_MS);
        gpuop_map_free(&l->building, NULL);
        gpuop_map_init(&l->building);
        if (!l->stopped)
            uv_timer_start(&l->list_timer, on_list_timer, POOLS_LIST_GAP_MS, 0);
        return;
    }
    const char *next =
        json_string_value(json_object_get(json_object_get(body, "metadata"), "continue"));
    if (next && *next)
        l->list_continue = strdup(next); /* NULL: the pool's next page is lost; resync */
    else
        l->list_pool++;
    if (!l->stopped && !l->closing)
        list_page(l);
}

/* Asks for the next page of the pool being listed, or of the next pool
 * with a nodeSelector; after the last, lists_done. */
static void list_page(struct ctl_labeler *l)
{
    while (l->list_pool < l->pools.n && !l->pools.selector[l->list_pool])
        l->list_pool++;
    if (l->list_pool >= l->pools.n) {
        lists_done(l);
        return;
    }
    char *sel = selector_text(l->pools.selector[l->list_pool]);
    struct gpuop_kube_ref ref = {"v1", NULL, "nodes", NULL, NULL};
    struct gpuop_kube_param q[] = {{"labelSelector", sel ? sel : ""},
                                   {"limit", POOLS_LIST_LIMIT},
                                   {"continue", l->list_continue}};
    char *path = sel ? gpuop_kube_path(&ref, q, l->list_continue ? 3 : 2) : NULL;
    struct gpuop_kube_opts o = {
        .verb = GPUOP_KUBE_GET, .path = path, .accept = GPUOP_ACCEPT_METADATA_LIST};
    if (path && gpuop_kube_request(l->kube, &o, list_done, l, &l->list_req) == 0) {
        l->inflight++;
    } else {
        l->list_req = NULL; /* out of memory: tried again after the gap */
        uv_timer_start(&l->list_timer, on_list_timer, POOLS_LIST_GAP_MS, 0);
    }
    free(path);
    free(sel);
}

/* GPU node n (borrowed) carries the value gpuop wrote in its driver pool
 * label and the value names no pool of p (borrowed) any more. */
static bool gone_ours(const struct gpuop_policy *p, const struct gpuop_node *n)
{
    const char *dp = n && n->gpu && n->up.pool_ours ? gpuop_node_os(n, GPUOP_OS_DRIVER_POOL) : NULL;
    int d = gpuop_operand_by_key("driver");
    return dp && *dp && p && d >= 0 && p->operands[d].enabled && !p->operands[d].held &&
           gpuop_policy_driver_pool(p, dp) < 0;
}

/* The pools of policy p (borrowed) and the GPU nodes' number: the LISTs
 * start again when the pools change, the number changes (after the gap)
 * or the resync is due. */
static int pools_track(struct ctl_labeler *l, const struct gpuop_policy *p,
                       const struct gpuop_node *const *nodes, size_t n)
{
    struct gpuop_pool_facts f;
    int rc = gpuop_labeling_pools_of(p, &f);
    if (rc < 0)
        return rc;
    l->gpus = 0;
    for (size_t i = 0; i < n; i++) {
        l->gpus += nodes[i] && nodes[i]->gpu;
        f.on |= !f.on && gone_ours(p, nodes[i]); /* a label of a pool gone to remove */
    }
    bool changed = !gpuop_labeling_pools_same(&f, &l->pools);
    if (changed) {
        lists_cancel(l);
        gpuop_labeling_pools_free(&l->pools);
        l->pools = f; /* steals its selectors */
        l->listed_valid = false;
        gpuop_map_free(&l->listed, NULL);
        gpuop_map_init(&l->listed);
    } else {
        gpuop_labeling_pools_free(&f);
    }
    if (p && p->name && (!l->key || strcmp(l->key, p->name))) {
        free(l->key);
        l->key = strdup(p->name); /* NULL: not queued when the LISTs answer */
    }
    if (!l->pools.on) {
        lists_cancel(l);
        uv_timer_stop(&l->list_timer);
        return 0;
    }
    uint64_t now = gpuop_clock_ms(), since = now - l->listed_at_ms;
    if (!l->list_req && (changed || !l->listed_at_ms || since >= POOLS_RESYNC_MS ||
                         (l->gpus != l->listed_gpus && since >= POOLS_LIST_GAP_MS)))
        lists_start(l);
    return 0;
}

/* Node n (borrowed, the cache's) has a pool label or conflict annotation
 * the last LISTs say is wrong. */
static bool pool_candidate(const struct ctl_labeler *l, const struct gpuop_node *n)
{
    if (!l->pools.on || !l->listed_valid || !n->gpu)
        return false;
    struct gpuop_pool_plan plan;
    unsigned m = (unsigned)(uintptr_t)gpuop_map_get(&l->listed, n->name) & ~POOLS_LISTED;
    struct gpuop_pool_node now = {
        gpuop_node_os(n, GPUOP_OS_DRIVER_POOL), gpuop_node_os(n, GPUOP_OS_POOL_CONFLICT),
        gpuop_node_os(n, GPUOP_OS_POOL_WANTED),
        l->has_driver && l->has_driver(l->driver_arg, n->name), n->up.pool_ours};
    return gpuop_labeling_pool_plan(&l->pools, m, &now, &plan);
}

void gpuop_ctl_labeler_drivers(struct ctl_labeler *l, bool (*has)(void *arg, const char *node),
                               void *arg)
{
    l->has_driver = has;
    l->driver_arg = arg;
}

/* A driver pod that may serve GPU jobs: Ready, restarted (it may have
 * been Ready, its module loaded) or terminating. One starting for the
 * first time serves nothing yet (the device plugin waits for the driver),
 * so a node just installed whose default pool's pod came before its pool
 * label is relabelled at once, not upgraded. */
static bool driver_serving(const struct gpuop_pod *p)
{
    bool ready = p->gate == GPUOP_GATE_NONE && p->ready_since;
    return ready || p->restarts > 0 || p->deleted;
}

bool gpuop_ctl_labeler_caches_driver(void *caches, const char *node)
{
    const struct gpuop_pod *pods[GPUOP_CACHES_NODE_PODS_MAX];
    size_t n = 0;
    int d = gpuop_operand_by_key("driver");
    if (gpuop_caches_node_pods(caches, node, pods, GPUOP_CACHES_NODE_PODS_MAX, &n) < 0)
        return true; /* cannot tell: the node moves through the upgrade, never at once */
    for (size_t i = 0; i < n; i++)
        if (pods[i] && pods[i]->operand == d && driver_serving(pods[i]))
            return true;
    return false;
}

int gpuop_ctl_labeler_new(uv_loop_t *loop, struct gpuop_kube *kube, struct gpuop_queue *queue,
                          struct ctl_labeler **out)
{
    struct ctl_labeler *l = calloc(1, sizeof(*l));
    if (!l)
        return GPUOP_ENOMEM;
    l->loop = loop;
    l->kube = kube;
    l->queue = queue;
    gpuop_map_init(&l->recs);
    gpuop_map_init(&l->listed);
    gpuop_map_init(&l->building);
    uv_timer_init(loop, &l->timer);
    l->timer.data = l;
    uv_timer_init(loop, &l->list_timer);
    l->list_timer.data = l;
    *out = l;
    return 0;
}

/* Forgets every candidate the last track did not want (cancelling its
 * request). The map cannot change while it is walked: the walk collects,
 * then forgets. */
static int forget_unseen(struct ctl_labeler *l)
{
    size_t n = 0, it = 0;
    void *v;
    while (gpuop_map_next(&l->recs, &it, NULL, &v))
        n += ((struct rec *)v)->seen != l->tracks;
    if (!n)
        return 0;
    struct rec **gone = malloc(n * sizeof(*gone));
    if (!gone)
        return GPUOP_ENOMEM; /* kept until the next track */
    size_t k = 0;
    it = 0;
    while (k < n && gpuop_map_next(&l->recs, &it, NULL, &v))
        if (((struct rec *)v)->seen != l->tracks)
            gone[k++] = v;
    for (size_t i = 0; i < k; i++)
        rec_forget(l, gone[i]);
    free(gone);
    return 0;
}

int gpuop_ctl_labeler_track(struct ctl_labeler *l, const struct gpuop_policy *p,
                            const struct gpuop_node *const *nodes, size_t n)
{
    if (l->closing)
        return 0;
    l->facts = gpuop_labeling_of(p);
    l->tracks++;
    l->stopped = false;
    int rc = pools_track(l, p, nodes, n);
    for (size_t i = 0; (l->facts.on || l->pools.on) && i < n; i++) {
        struct gpuop_label_plan plan;
        if (!nodes[i] ||
            (!gpuop_labeling_plan(&l->facts, nodes[i], &plan) && !pool_candidate(l, nodes[i])))
            continue;
        struct rec *r = gpuop_map_get(&l->recs, nodes[i]->name);
        if (!r) {
            size_t len = strlen(nodes[i]->name);
            if (!(r = calloc(1, sizeof(*r) + len + 1)) ||
                gpuop_map_put(&l->recs, nodes[i]->name, r, NULL) < 0) {
                free(r);
                rc = GPUOP_ENOMEM; /* not labelled this time */
                continue;
            }
            memcpy(r->name, nodes[i]->name, len + 1);
            r->l = l;
        }
        r->seen = l->tracks;
        r->dropped = false; /* wanted again while its PATCH was let finish */
    }
    /* the nodes that no longer want labels: forgotten, with their backoff */
    if (forget_unseen(l) < 0)
        rc = GPUOP_ENOMEM;
    pump(l);
    return rc;
}

void gpuop_ctl_labeler_stop(struct ctl_labeler *l)
{
    l->stopped = true;
    l->tracks++; /* nothing is wanted now */
    (void)forget_unseen(l);
    uv_timer_stop(&l->timer);
    lists_cancel(l);
    uv_timer_stop(&l->list_timer);
}

uint64_t gpuop_ctl_labeler_patches(const struct ctl_labeler *l)
{
    return l->patches;
}

static void timer_closed(uv_handle_t *h)
{
    struct ctl_labeler *l = h->data;
    void (*cb)(void *) = l->close_cb;
    void *arg = l->close_arg;
    gpuop_map_free(&l->recs, NULL); /* empty: stop forgot every node */
    gpuop_map_free(&l->listed, NULL);
    gpuop_map_free(&l->building, NULL);
    gpuop_labeling_pools_free(&l->pools);
    free(l->key);
    free(l);
    if (cb)
        cb(arg);
}

static void list_timer_closed(uv_handle_t *h)
{
    struct ctl_labeler *l = h->data;
    uv_close((uv_handle_t *)&l->timer, timer_closed);
}

void gpuop_ctl_labeler_close(struct ctl_labeler *l, void (*cb)(void *), void *arg)
{
    l->closing = true;
    l->close_cb = cb;
    l->close_arg = arg;
    gpuop_ctl_labeler_stop(l);
    uv_close((uv_handle_t *)&l->list_timer, list_timer_closed);
}
