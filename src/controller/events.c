/*
 * events.c - Events for findings that appear or clear (see events.h).
 * The previous findings are kept (moved in by observe, details dropped)
 * and walked against the new ones with gpuop_findings_diff_next; a set of
 * "key -> last post time" (keys as 64-bit hashes, see flap.h) does the
 * flap suppression. Events wait in a FIFO
 * and are POSTed one at a time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpuop/hash.h"
#include "gpuop/events.h"
#include "gpuop/jsonarena.h"
#include "gpuop/log.h"
#include "gpuop/flap.h"
#include "gpuop/policy.h"

/* The GpuPolicy is cluster-scoped, and the API server requires an Event's
 * namespace to match its involvedObject's: events of cluster-scoped objects
 * live in "default" (as the kubelet's Node events do). */
#define EVENTS_NS "default"

/* An Event waiting to be posted, or being posted (the head). */
struct post {
    struct post *next;
    char *body; /* the Event, JSON (json_dumps: release with gpuop_json_free) */
};

struct gpuop_events {
    struct gpuop_kube *kube;
    char host[64];
    struct gpuop_findings prev;
    bool have_prev;
    char *prev_policy;
    struct gpuop_flap last; /* hash of "A|node|operand|reason" -> time posted */
    long long last_prune;
    long long (*now)(void);
    struct post *head, *tail; /* posted one at a time, in order */
    size_t queued;
    struct gpuop_kube_req *req; /* the head's POST in flight, or NULL */
    uint64_t posted, dropped;
    void (*on_drained)(void *);
    void *drained_arg;
    bool closing;
    /* during one observe */
    const char *policy, *uid;
    int burst;
    int suppressed;
};

static long long wall_clock(void)
{
    return (long long)time(NULL);
}

int gpuop_events_new(struct gpuop_kube *kube, struct gpuop_events **out)
{
    struct gpuop_events *ev = calloc(1, sizeof(*ev));
    if (!ev)
        return GPUOP_ENOMEM;
    ev->kube = kube;
    if (gethostname(ev->host, sizeof(ev->host)) != 0)
        snprintf(ev->host, sizeof(ev->host), "gpuop");
    ev->host[sizeof(ev->host) - 1] = 0;
    ev->last = (struct gpuop_flap)GPUOP_FLAP_INIT;
    ev->now = wall_clock;
    *out = ev;
    return 0;
}

static void send_next(struct gpuop_events *ev);

/* Drops the queue's head (posted, or it could not be). */
static void pop(struct gpuop_events *ev)
{
    struct post *p = ev->head;
    ev->head = p->next;
    if (!ev->head)
        ev->tail = NULL;
    ev->queued--;
    gpuop_json_free(p->body);
    free(p);
}

static void post_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct gpuop_events *ev = arg;
    (void)body;
    ev->req = NULL;
    if (rc < 0 && rc != GPUOP_ECANCELED)
        gpuop_warn("events", "cannot post event: %s", err->message);
    if (ev->head)
        pop(ev);
    if (rc != GPUOP_ECANCELED && !ev->closing) {
        send_next(ev);
        if (!ev->head && ev->on_drained)
            ev->on_drained(ev->drained_arg);
    }
}

/* Starts the POST of the queue's head unless one is in flight: Events go
 * out one at a time, as client-go's recorder sends them, so a burst is one
 * connection, not one each. */
static void send_next(struct gpuop_events *ev)
{
    while (ev->head && !ev->req) {
        if (gpuop_kube_request(ev->kube, "POST", "/api/v1/namespaces/" EVENTS_NS "/events",
                               GPUOP_CT_JSON, ev->head->body, strlen(ev->head->body), 0, post_done,
                               ev, &ev->req) == 0)
            return;
        ev->req = NULL;
        pop(ev); /* cannot start: drop it, try the next */
    }
}

static void post(struct gpuop_events *ev, const char *type, const char *reason, const char *msg)
{
    if (ev->queued >= GPUOP_EVENTS_QUEUE_MAX) {
        ev->dropped++;
        return;
    }
    char ts[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
    char gen[300];
    snprintf(gen, sizeof(gen), "%s.", ev->policy);
    json_t *e = json_pack(
        "{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s, s:s, s:s}, s:s, s:s, s:s, s:{s:s, s:s}, s:s, "
        "s:s, s:i, s:s, s:s}",
        "apiVersion", "v1", "kind", "Event", "metadata", "generateName", gen, "namespace",
        EVENTS_NS, "involvedObject", "apiVersion", GPUOP_API_VERSION, "kind", GPUOP_KIND, "name",
        ev->policy, "uid", ev->uid ? ev->uid : "", "reason", reason, "message", msg, "type", type,
        "source", "component", "gpuop", "host", ev->host, "firstTimestamp", ts, "lastTimestamp", ts,
        "count", 1, "reportingComponent", "gpuop", "reportingInstance", ev->host);
    char *body = e ? json_dumps(e, JSON_COMPACT) : NULL;
    json_decref(e);
    struct post *p = body ? malloc(sizeof(*p)) : NULL;
    if (!p) {
        gpuop_json_free(body);
        return;
    }
    p->next = NULL;
    p->body = body;
    if (ev->tail)
        ev->tail->next = p;
    else
        ev->head = p;
    ev->tail = p;
    ev->queued++;
    ev->posted++;
    send_next(ev);
}

/* Forgets what was posted longer ago than the flap window. */
static void prune(struct gpuop_events *ev, long long now)
{
    if (now - ev->last_prune < 60)
        return;
    ev->last_prune = now;
    gpuop_flap_prune(&ev->last, now - GPUOP_EVENTS_QUIET_S + 1);
}

static void on_change(struct gpuop_events *ev, const struct gpuop_finding_change *c)
{
    const struct gpuop_findings *f = c->set;
    const struct gpuop_finding *x = c->item;
    bool appeared = c->appeared;
    const char *node = c->node;
    const char *operand = gpuop_operand_get(x->operand)->name;
    const char *reason = gpuop_reason_get(x->reason)->name;
    char key[512];
    snprintf(key, sizeof(key), "%c|%s|%s|%s", appeared ? 'A' : 'C', node, operand, reason);
    long long now = ev->now();
    uint64_t h = gpuop_hash_str(key);
    long long last = gpuop_flap_get(&ev->last, h);
    if (last && now - last < GPUOP_EVENTS_QUIET_S) {
        ev->suppressed++;
        return; /* flapping: said recently */
    }
    if (ev->burst >= GPUOP_EVENTS_BURST) {
        ev->suppressed++;
        return; /* not said, so not remembered either */
    }
    (void)gpuop_flap_put(&ev->last, h, now); /* ENOMEM: said, not remembered */
    ev->burst++;
    char msg[GPUOP_FINDING_MESSAGE_MAX + 128];
    if (appeared) {
        char text[GPUOP_FINDING_MESSAGE_MAX];
        gpuop_finding_message(f, x, text, sizeof(text));
        snprintf(msg, sizeof(msg), "node %s, %s: %s", node, operand, text);
        post(ev, "Warning", reason, msg);
    } else {
        snprintf(msg, sizeof(msg), "node %s, %s: %s cleared", node, operand, reason);
        char creason[96];
        snprintf(creason, sizeof(creason), "%sCleared", reason);
        post(ev, "Normal", creason, msg);
    }
}

void gpuop_events_observe(struct gpuop_events *ev, const char *policy, const char *uid,
                          struct gpuop_findings *f)
{
    if (ev->have_prev && ev->prev_policy && strcmp(ev->prev_policy, policy) == 0) {
        ev->policy = policy;
        ev->uid = uid;
        ev->burst = 0;
        ev->suppressed = 0;
        struct gpuop_findings_diff d;
        struct gpuop_finding_change c;
        gpuop_findings_diff_begin(&d, &ev->prev, f);
        while (gpuop_findings_diff_next(&d, &c))
            on_change(ev, &c);
        prune(ev, ev->now());
        if (ev->burst >= GPUOP_EVENTS_BURST && ev->suppressed > 0) {
            char msg[128];
            snprintf(msg, sizeof(msg),
                     "%d more finding changes not posted as events; see the GpuPolicy status",
                     ev->suppressed);
            post(ev, "Normal", "FindingsSummarized", msg);
        }
    }
    if (ev->have_prev)
        gpuop_findings_free(&ev->prev);
    ev->prev = *f;
    memset(f, 0, sizeof(*f));
    (void)gpuop_findings_keep_keys(&ev->prev); /* only diffed against, never printed */
    ev->have_prev = true;
    if (!ev->prev_policy || strcmp(ev->prev_policy, policy) != 0) {
        free(ev->prev_policy);
        ev->prev_policy = strdup(policy);
    }
}

uint64_t gpuop_events_posted(const struct gpuop_events *ev)
{
    return ev->posted;
}

void gpuop_events_set_on_drained(struct gpuop_events *ev, void (*cb)(void *), void *arg)
{
    ev->on_drained = cb;
    ev->drained_arg = arg;
}

uint64_t gpuop_events_dropped(const struct gpuop_events *ev)
{
    return ev->dropped;
}

size_t gpuop_events_queued(const struct gpuop_events *ev)
{
    return ev->queued;
}

size_t gpuop_events_remembered(const struct gpuop_events *ev)
{
    return ev->last.len;
}

void gpuop_events_set_clock(struct gpuop_events *ev, long long (*now)(void))
{
    ev->now = now ? now : wall_clock;
}

void gpuop_events_close(struct gpuop_events *ev, void (*cb)(void *), void *arg)
{
    ev->closing = true;
    if (ev->req)
        gpuop_kube_cancel(ev->req); /* post_done frees the head */
    while (ev->head)
        pop(ev);
    if (ev->have_prev)
        gpuop_findings_free(&ev->prev);
    gpuop_flap_free(&ev->last);
    free(ev->prev_policy);
    free(ev);
    if (cb)
        cb(arg);
}
