/*
 * recorder.c - the Event recorder (see recorder.h): aggregation, the FIFO,
 * one POST or PATCH at a time.
 *
 * An Event's aggregation key is a hash of its involved object, type,
 * reason and message; its object's name is the involved object's name and
 * that key mixed with this process's nonce (host, pid, start time), so two
 * gpuop processes never count up each other's objects. The aggregation
 * memory is a flat array searched linearly: it holds at most
 * GPUOP_RECORDER_AGG_MAX records, and Events are rare (the caller bounds
 * them: a burst limit and flap suppression in controller/events.c).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpuop/clock.h"
#include "gpuop/hash.h"
#include "gpuop/jsonarena.h"
#include "gpuop/log.h"
#include "gpuop/recorder.h"

/* The API server requires an Event's namespace to match its
 * involvedObject's: events of cluster-scoped objects live in "default"
 * (as the kubelet's Node events do). */
#define CLUSTER_EVENTS_NS "default"

/* Longest object name kept in an Event's name (253 at most, with the dot
 * and 16 hex digits of the hash). */
#define NAME_OBJECT_MAX 200
#define HOST_MAX        64

/* An Event waiting to be posted, or being posted (the head). */
struct post {
    struct post *next;
    char *coll;  /* the namespace's events collection: the POST target (new) */
    char *path;  /* the Event object: the PATCH target when patch is set (new) */
    char *patch; /* the count and lastTimestamp update, or NULL: POST body (new) */
    char *body;  /* the whole Event, JSON (json_dumps: release with gpuop_json_free) */
};

/* One Event object posted, for aggregation: its key, its count, when last
 * posted. */
struct agg {
    uint64_t key;
    long long last;
    long long count;
};

struct gpuop_recorder {
    struct gpuop_kube *kube; /* borrowed */
    const char *component;   /* borrowed, static */
    char host[HOST_MAX];
    uint64_t nonce;   /* this process's part of Event names */
    struct agg *aggs; /* new memory, up to GPUOP_RECORDER_AGG_MAX */
    size_t naggs;
    struct post *head, *tail; /* posted one at a time, in order */
    size_t queued;
    struct gpuop_kube_req *req; /* the head's request in flight, or NULL */
    uint64_t posted, dropped;
    void (*on_drained)(void *);
    void *drained_arg;
    bool closing;
};

int gpuop_recorder_new(struct gpuop_kube *kube, const char *component, struct gpuop_recorder **out)
{
    struct gpuop_recorder *r = calloc(1, sizeof(*r));
    if (!r)
        return GPUOP_ENOMEM;
    r->kube = kube;
    r->component = component;
    if (gethostname(r->host, sizeof(r->host)) != 0)
        snprintf(r->host, sizeof(r->host), "%s", component);
    r->host[sizeof(r->host) - 1] = 0;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char seed[160];
    snprintf(seed, sizeof(seed), "%s|%ld|%lld.%09ld", r->host, (long)getpid(), (long long)ts.tv_sec,
             ts.tv_nsec);
    r->nonce = gpuop_hash_str(seed);
    *out = r;
    return 0;
}

static void send_next(struct gpuop_recorder *r);

/* Drops the queue's head (posted, or it could not be). */
static void pop(struct gpuop_recorder *r)
{
    struct post *p = r->head;
    r->head = p->next;
    if (!r->head)
        r->tail = NULL;
    r->queued--;
    free(p->coll);
    free(p->path);
    free(p->patch);
    gpuop_json_free(p->body);
    free(p);
}

static void post_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct gpuop_recorder *r = arg;
    (void)body;
    r->req = NULL;
    bool retry = false;
    if (rc == GPUOP_ENOTFOUND && r->head && r->head->patch) {
        /* The Event to count up has expired (or was deleted): create it. */
        free(r->head->patch);
        r->head->patch = NULL;
        retry = true;
    } else if (rc < 0 && rc != GPUOP_ECANCELED) {
        gpuop_warn("events", "cannot post event: %s", err->message);
    }
    if (r->head && !retry)
        pop(r);
    if (rc != GPUOP_ECANCELED && !r->closing) {
        send_next(r);
        if (!r->head && r->on_drained)
            r->on_drained(r->drained_arg);
    }
}

/* Starts the request of the queue's head unless one is in flight: Events go
 * out one at a time, as client-go's recorder sends them, so a burst is one
 * connection, not one each. */
static void send_next(struct gpuop_recorder *r)
{
    while (r->head && !r->req) {
        struct post *p = r->head;
        struct gpuop_kube_opts o = p->patch
                                       ? (struct gpuop_kube_opts){.verb = GPUOP_KUBE_PATCH,
                                                                  .path = p->path,
                                                                  .content_type = GPUOP_CT_MERGE,
                                                                  .body = p->patch,
                                                                  .body_len = strlen(p->patch)}
                                       : (struct gpuop_kube_opts){.verb = GPUOP_KUBE_POST,
                                                                  .path = p->coll,
                                                                  .content_type = GPUOP_CT_JSON,
                                                                  .body = p->body,
                                                                  .body_len = strlen(p->body)};
        if (gpuop_kube_request(r->kube, &o, post_done, r, &r->req) == 0)
            return;
        r->req = NULL;
        pop(r); /* cannot start: drop it, try the next */
    }
}

/* The aggregation record for key, or a slot for it (the oldest one evicted
 * when full), or NULL on out-of-memory. Records older than the Event TTL
 * count as gone. */
static struct agg *agg_slot(struct gpuop_recorder *r, uint64_t key, long long now, bool *found)
{
    struct agg *oldest = NULL;
    *found = false;
    for (size_t i = 0; i < r->naggs; i++) {
        struct agg *a = &r->aggs[i];
        if (a->key == key && now - a->last < GPUOP_RECORDER_AGG_TTL_S) {
            *found = true;
            return a;
        }
        if (!oldest || a->last < oldest->last)
            oldest = a;
    }
    if (r->naggs < GPUOP_RECORDER_AGG_MAX) {
        if (!r->aggs) {
            r->aggs = malloc(GPUOP_RECORDER_AGG_MAX * sizeof(*r->aggs));
            if (!r->aggs)
                return NULL;
        }
        r->aggs[r->naggs] = (struct agg){0, 0, 0}; /* the oldest until filled */
        return &r->aggs[r->naggs++];
    }
    return oldest;
}

/* The aggregation key of an Event: NUL separates the parts. */
static uint64_t event_key(const struct gpuop_recorder_object *obj, const char *type,
                          const char *reason, const char *msg)
{
    const char *parts[] = {obj->api_version,
                           obj->kind,
                           obj->ns ? obj->ns : "",
                           obj->name,
                           obj->uid ? obj->uid : "",
                           type,
                           reason,
                           msg};
    uint64_t key = GPUOP_HASH_INIT;
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
        key = gpuop_hash_bytes(key, parts[i], strlen(parts[i]) + 1);
    return gpuop_hash_mix(key);
}

/* One Event of an object: its namespace and name, what it says, when
 * (first and last) and how often (all borrowed). */
struct event_in {
    const char *ns, *name, *type, *reason, *msg, *ts;
    long long count;
};

/* The Event in of obj as JSON (new, json_dumps: gpuop_json_free), or NULL. */
static char *event_body(const struct gpuop_recorder *r, const struct gpuop_recorder_object *obj,
                        const struct event_in *in)
{
    const char *ns = in->ns, *name = in->name, *type = in->type, *reason = in->reason,
               *msg = in->msg, *ts = in->ts;
    long long count = in->count;
    json_t *e = json_pack(
        "{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s, s:s, s:s}, s:s, s:s, s:s, s:{s:s, s:s}, s:s, "
        "s:s, s:I, s:s, s:s}",
        "apiVersion", "v1", "kind", "Event", "metadata", "name", name, "namespace", ns,
        "involvedObject", "apiVersion", obj->api_version, "kind", obj->kind, "name", obj->name,
        "uid", obj->uid ? obj->uid : "", "reason", reason, "message", msg, "type", type, "source",
        "component", r->component, "host", r->host, "firstTimestamp", ts, "lastTimestamp", ts,
        "count", (json_int_t)count, "reportingComponent", r->component, "reportingInstance",
        r->host);
    if (e && obj->ns && *obj->ns)
        json_object_set_new(json_object_get(e, "involvedObject"), "namespace",
                            json_string(obj->ns));
    char *body = e ? json_dumps(e, JSON_COMPACT) : NULL;
    json_decref(e);
    return body;
}

void gpuop_recorder_event(struct gpuop_recorder *r, const struct gpuop_recorder_object *obj,
                          const char *type, const char *reason, const char *msg)
{
    if (r->queued >= GPUOP_RECORDER_QUEUE_MAX) {
        r->dropped++;
        return;
    }
    long long now = gpuop_clock_wall();
    uint64_t key = event_key(obj, type, reason, msg);
    bool found;
    struct agg *a = agg_slot(r, key, now, &found);
    long long count = found ? a->count + 1 : 1;
    const char *ns = obj->ns && *obj->ns ? obj->ns : CLUSTER_EVENTS_NS;

    char name[256];
    int plen = snprintf(name, sizeof(name), "%.*s", NAME_OBJECT_MAX, obj->name);
    while (plen > 0 && (name[plen - 1] == '-' || name[plen - 1] == '.'))
        plen--; /* a truncated name must still end in a letter or digit */
    snprintf(name + plen, sizeof(name) - (size_t)plen, ".%016llx",
             (unsigned long long)(key ^ r->nonce));

    char ts[GPUOP_TIME_MAX];
    gpuop_time_format(ts, sizeof(ts), (int64_t)now * GPUOP_US_PER_S, GPUOP_TIME_S);
    struct event_in in = {.ns = ns,
                          .name = name,
                          .type = type,
                          .reason = reason,
                          .msg = msg,
                          .ts = ts,
                          .count = count};
    char *body = event_body(r, obj, &in);
    struct post *p = body ? calloc(1, sizeof(*p)) : NULL;
    if (p)
        p->coll =
            gpuop_kube_path(&(struct gpuop_kube_ref){.ns = ns, .resource = "events"}, NULL, 0);
    if (!p || !p->coll) {
        free(p);
        gpuop_json_free(body);
        return;
    }
    p->body = body;
    if (count > 1) {
        char patch[96];
        snprintf(patch, sizeof(patch), "{\"count\":%lld,\"lastTimestamp\":\"%s\"}", count, ts);
        p->patch = strdup(patch);
        p->path = gpuop_kube_path(
            &(struct gpuop_kube_ref){.ns = ns, .resource = "events", .name = name}, NULL, 0);
        if (!p->patch || !p->path) { /* cannot count it up: create it again */
            free(p->patch);
            free(p->path);
            p->patch = p->path = NULL;
        }
    }
    if (a)
        *a = (struct agg){key, now, count};
    if (r->tail)
        r->tail->next = p;
    else
        r->head = p;
    r->tail = p;
    r->queued++;
    r->posted++;
    send_next(r);
}

uint64_t gpuop_recorder_posted(const struct gpuop_recorder *r)
{
    return r->posted;
}

uint64_t gpuop_recorder_dropped(const struct gpuop_recorder *r)
{
    return r->dropped;
}

size_t gpuop_recorder_queued(const struct gpuop_recorder *r)
{
    return r->queued;
}

void gpuop_recorder_set_on_drained(struct gpuop_recorder *r, void (*cb)(void *), void *arg)
{
    r->on_drained = cb;
    r->drained_arg = arg;
}

void gpuop_recorder_close(struct gpuop_recorder *r)
{
    if (!r)
        return;
    r->closing = true;
    if (r->req)
        gpuop_kube_cancel(r->req); /* post_done frees the head */
    while (r->head)
        pop(r);
    free(r->aggs);
    free(r);
}
