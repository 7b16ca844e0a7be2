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
 */
#include <stdlib.h>
#include <string.h>

#include "gpuop/clock.h"
#include "gpuop/jsonarena.h"
#include "gpuop/kube.h"
#include "gpuop/labeling.h"
#include "gpuop/log.h"
#include "gpuop/map.h"
#include "gpuop/names.h"

#include "controller_int.h"

#define LABELER_IN_FLIGHT_MAX    4
#define LABELER_BACKOFF_FIRST_MS 1000
#define LABELER_BACKOFF_MAX_MS   300000
#define LABELER_SETTLE_MS        3000
/* "gpuop.dev/node-labels" of a node, as gpuop writes it: a few labels. */
#define LABELER_NOTE_MAX GPUOP_MODEL_NOTE_MAX

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

/* The merge patch for node obj (borrowed) and plan (new JSON text, NULL on
 * out-of-memory); the labels it sets are listed into said. */
static char *patch_body(json_t *obj, const struct gpuop_label_plan *plan, char *said, size_t size)
{
    json_t *meta = json_object_get(obj, "metadata");
    const char *rv = json_string_value(json_object_get(meta, "resourceVersion"));
    const char *old = json_string_value(
        json_object_get(json_object_get(meta, "annotations"), GPUOP_ANNOTATION_NODE_LABELS));
    json_t *note = old && strlen(old) <= LABELER_NOTE_MAX ? json_loads(old, 0, NULL) : NULL;
    if (!json_is_object(note)) { /* none (a BAD one is never written over: plan) */
        json_decref(note);
        note = json_object();
    }
    json_t *labels = json_object();
    char at[GPUOP_TIME_MAX], key[128];
    gpuop_time_format(at, sizeof(at), gpuop_clock_wall_us(), GPUOP_TIME_S);
    size_t len = 0;
    said[0] = '\0';
    for (int i = -1; i < gpuop_operand_count(); i++) {
        if (i < 0 ? !plan->present : !((plan->deploy >> i) & 1u))
            continue;
        if (i < 0)
            snprintf(key, sizeof(key), "%s", GPUOP_LABEL_GPU_PRESENT);
        else
            snprintf(key, sizeof(key), "%s%s", GPUOP_LABEL_PREFIX, gpuop_operand_get(i)->name);
        json_object_set_new(labels, key, json_string("true"));
        json_object_set_new(note, key, json_pack("{s:s,s:s}", "value", "true", "at", at));
        int k = snprintf(said + len, size - len, "%s%s=true", len ? ", " : "", key);
        len += k > 0 && (size_t)k < size - len ? (size_t)k : 0;
    }
    char *note_s = json_dumps(note, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(note);
    json_t *patch = NULL;
    if (note_s && strlen(note_s) <= LABELER_NOTE_MAX && rv)
        patch = json_pack("{s:{s:s,s:O,s:{s:s}}}", "metadata", "resourceVersion", rv, "labels",
                          labels, "annotations", GPUOP_ANNOTATION_NODE_LABELS, note_s);
    gpuop_json_free(note_s);
    json_decref(labels);
    char *body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
    json_decref(patch);
    return body;
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
    struct gpuop_node *n = gpuop_node_new(body, NULL, &e);
    struct gpuop_label_plan plan;
    bool want = n && gpuop_labeling_plan(&l->facts, n, &plan);
    gpuop_node_free(n);
    r->retry_at_ms = gpuop_clock_ms() + LABELER_SETTLE_MS;
    if (!want)
        goto out; /* someone labelled it, or our PATCH is not in the cache yet */
    char said[1024];
    char *patch = patch_body(body, &plan, said, sizeof(said));
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

int gpuop_ctl_labeler_new(uv_loop_t *loop, struct gpuop_kube *kube, struct ctl_labeler **out)
{
    struct ctl_labeler *l = calloc(1, sizeof(*l));
    if (!l)
        return GPUOP_ENOMEM;
    l->loop = loop;
    l->kube = kube;
    gpuop_map_init(&l->recs);
    uv_timer_init(loop, &l->timer);
    l->timer.data = l;
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
    int rc = 0;
    for (size_t i = 0; l->facts.on && i < n; i++) {
        struct gpuop_label_plan plan;
        if (!nodes[i] || !gpuop_labeling_plan(&l->facts, nodes[i], &plan))
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
    free(l);
    if (cb)
        cb(arg);
}

void gpuop_ctl_labeler_close(struct ctl_labeler *l, void (*cb)(void *), void *arg)
{
    l->closing = true;
    l->close_cb = cb;
    l->close_arg = arg;
    gpuop_ctl_labeler_stop(l);
    uv_close((uv_handle_t *)&l->timer, timer_closed);
}
