/*
 * events.c - Events for findings that appear or clear (see events_int.h).
 *
 * A copy of the previous findings' keys is kept (observe borrows the
 * set, whose details the messages are made from) and the walk of their
 * differences with the new ones
 * (gpuop_findings_diff_begin/next) decides. Per finding
 * (node, operand, reason), kept as 64-bit hashes in hash -> time sets
 * (flap.h, 16 bytes a slot):
 *   pending  a finding of a transient reason (the reasons table's column)
 *            that appeared less than the grace period ago, or any finding
 *            of the first observation of a policy (new or old, it cannot
 *            tell): when it was first seen. The policy's key is requeued for the moment the
 *            earliest grace ends (gpuop_queue_add_after), so the reconcile
 *            that posts it comes even when nothing else changes; its
 *            message is then built from that reconcile's findings, as for
 *            any other Event. A pending finding that clears was never said
 *            and is forgotten without an Event.
 *   waiting  the same for a rollout step (GPUOP_WAIT_STALL: a pod being
 *            created, starting, held in its gate, an operand up before its
 *            prerequisite): said only once it has lasted the grace and its
 *            node (gpuop_node_result.progressing) has not progressed for
 *            the grace; never while the node progresses.
 *   stalled  per node (hash of its name) with such a finding that does not
 *            progress: since when (the last Ready of one of its pods, else
 *            the first observation that saw it so). Rebuilt at each
 *            observation from the nodes that are stalled then, so a node
 *            that progresses again, or is gone, is forgotten.
 *   shown    a finding whose Warning was posted, until it clears: only
 *            these get a "<Reason>Cleared".
 *   last     "A|key" / "C|key" -> when it was last said: flap suppression.
 * What is decided here is what to say and when; the saying is the kube
 * layer's Event recorder (recorder.h: aggregation into one Event object
 * per message with a count, the FIFO, one POST or PATCH at a time).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "events_int.h"
#include "gpuop/clock.h"
#include "gpuop/flap.h"
#include "gpuop/hash.h"
#include "gpuop/log.h"
#include "gpuop/policy.h"
#include "gpuop/recorder.h"
#include "queue_int.h"

/* The source and reporting component of gpuop's Events. */
#define EVENTS_COMPONENT "gpuop"

/* How long after the earliest grace ends the recheck comes: the queue's
 * clock is the loop's, cached at the start of an iteration, and may lag
 * the wall clock by a reconcile's length. */
#define RECHECK_SLACK_MS 500

struct gpuop_events {
    struct gpuop_recorder *rec; /* new: posts what is said */
    struct gpuop_queue *queue;  /* borrowed, may be NULL: rechecks when a grace ends */
    struct gpuop_findings prev;
    bool have_prev;
    char *prev_policy;
    struct gpuop_flap last;    /* hash of "A|key" / "C|key" -> time said */
    struct gpuop_flap pending; /* hash of key -> first seen, transient, not said */
    struct gpuop_flap waiting; /* hash of key -> first seen, a rollout step, not said */
    struct gpuop_flap stalled; /* hash of node -> not progressing since */
    struct gpuop_flap shown;   /* hash of key -> time its Warning was posted */
    long long last_prune;
    /* during one observe */
    const char *policy, *uid;
    long long grace, tnow;
    bool learning; /* the first observation of this policy */
    int burst;
    int suppressed;
};

int gpuop_events_new(struct gpuop_kube *kube, struct gpuop_queue *queue, struct gpuop_events **out)
{
    struct gpuop_events *ev = calloc(1, sizeof(*ev));
    if (!ev)
        return GPUOP_ENOMEM;
    int rc = gpuop_recorder_new(kube, EVENTS_COMPONENT, &ev->rec);
    if (rc) {
        free(ev);
        return rc;
    }
    ev->queue = queue;
    ev->last = (struct gpuop_flap)GPUOP_FLAP_INIT;
    ev->pending = (struct gpuop_flap)GPUOP_FLAP_INIT;
    ev->waiting = (struct gpuop_flap)GPUOP_FLAP_INIT;
    ev->stalled = (struct gpuop_flap)GPUOP_FLAP_INIT;
    ev->shown = (struct gpuop_flap)GPUOP_FLAP_INIT;
    *out = ev;
    return 0;
}

/* One Event about the policy of this observe (or gpuop_events_say). */
static void post(struct gpuop_events *ev, const char *type, const char *reason, const char *msg)
{
    struct gpuop_recorder_object obj = {
        .api_version = GPUOP_API_VERSION, .kind = GPUOP_KIND, .name = ev->policy, .uid = ev->uid};
    gpuop_recorder_event(ev->rec, &obj, type, reason, msg);
}

/* Forgets what was said longer ago than the flap window. */
static void prune(struct gpuop_events *ev, long long now)
{
    if (now - ev->last_prune < 60)
        return;
    ev->last_prune = now;
    gpuop_flap_prune(&ev->last, now - GPUOP_EVENTS_QUIET_S + 1);
}

/* The hash of a finding's identity (node, operand, reason), without
 * formatting a string: it runs for every finding of a reconcile in which
 * some grace ends (30,000 of them mid-rollout on 5,000 nodes). */
static uint64_t finding_key(const struct gpuop_findings *f, const struct gpuop_finding *x)
{
    const char *node = gpuop_finding_node(f, x);
    const uint8_t what[2] = {x->operand, x->reason};
    uint64_t h = gpuop_hash_bytes(GPUOP_HASH_INIT, node, strlen(node) + 1); /* NUL separates */
    return gpuop_hash_mix(gpuop_hash_bytes(h, what, sizeof(what)));
}

/* Posts the Warning of an appeared finding or the Normal "...Cleared" of a
 * shown one, unless it flaps or the burst is spent. */
static void say(struct gpuop_events *ev, const struct gpuop_findings *f,
                const struct gpuop_finding *x, bool appeared, uint64_t fkey)
{
    const char *node = gpuop_finding_node(f, x);
    const char *operand = gpuop_operand_get(x->operand)->name;
    const char *reason = gpuop_reason_get(x->reason)->name;
    char key[512];
    snprintf(key, sizeof(key), "%c|%s|%s|%s", appeared ? 'A' : 'C', node, operand, reason);
    uint64_t h = gpuop_hash_str(key);
    long long last = gpuop_flap_get(&ev->last, h);
    if (last && ev->tnow - last < GPUOP_EVENTS_QUIET_S) {
        ev->suppressed++;
        return; /* flapping: said recently */
    }
    if (ev->burst >= GPUOP_EVENTS_BURST) {
        ev->suppressed++;
        return; /* not said, so not remembered either */
    }
    (void)gpuop_flap_put(&ev->last, h, ev->tnow); /* ENOMEM: said, not remembered */
    ev->burst++;
    char msg[GPUOP_FINDING_MESSAGE_MAX + 128];
    if (appeared) {
        /* ENOMEM: said, and its clearing will not be */
        (void)gpuop_flap_put(&ev->shown, fkey, ev->tnow);
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

static bool transient(const struct gpuop_finding *x)
{
    return gpuop_reason_get(x->reason)->transient != GPUOP_WAIT_NONE;
}

/* A rollout step: waits for its node to stop progressing. */
static bool step(const struct gpuop_finding *x)
{
    return gpuop_reason_get(x->reason)->transient == GPUOP_WAIT_STALL;
}

static void on_change(struct gpuop_events *ev, const struct gpuop_finding_change *c)
{
    const struct gpuop_findings *f = c->set;
    const struct gpuop_finding *x = c->item;
    uint64_t k = finding_key(f, x);
    if (c->appeared) {
        struct gpuop_flap *wait = ev->grace > 0 && step(x) ? &ev->waiting : &ev->pending;
        if ((ev->learning || (ev->grace > 0 && transient(x))) &&
            gpuop_flap_put(wait, k, ev->tnow) == 0)
            return; /* said when it outlasts the grace (ENOMEM: said now) */
        say(ev, f, x, true, k);
    } else if (gpuop_flap_del(&ev->pending, k) || gpuop_flap_del(&ev->waiting, k)) {
        return; /* passed within its grace, or while its node progressed: never said */
    } else if (gpuop_flap_del(&ev->shown, k)) {
        say(ev, f, x, false, k);
    }
}

static uint64_t node_key(const char *node)
{
    return gpuop_hash_mix(gpuop_hash_bytes(GPUOP_HASH_INIT, node, strlen(node) + 1));
}

static void earliest(long long *at, long long t)
{
    if (!*at || t < *at)
        *at = t;
}

/* Says the waiting rollout steps of f whose node has not progressed for
 * the grace and that have lasted it, and rebuilds the stalled set.
 * Returns when the next waiting one will be due, 0 when none is (a node
 * that progresses changes only with the cluster: its reconcile comes). */
static long long post_stalled(struct gpuop_events *ev, const struct gpuop_findings *f)
{
    struct gpuop_flap next = GPUOP_FLAP_INIT;
    long long due = 0;
    for (size_t i = 0; ev->waiting.len && i < f->nnodes; i++) {
        const struct gpuop_node_result *r = &f->nodes[i];
        const struct gpuop_finding *x = &f->items[r->first];
        if (!r->nfindings || r->progressing)
            continue;
        uint32_t k = 0;
        while (k < r->nfindings && !step(&x[k]))
            k++;
        if (k == r->nfindings)
            continue; /* no rollout step here: nothing waits on this node */
        uint64_t h = node_key(r->name);
        long long since = gpuop_flap_get(&ev->stalled, h);
        if (!since)
            since = ev->tnow - r->idle_s;      /* stalled since its last Ready, or now */
        (void)gpuop_flap_put(&next, h, since); /* ENOMEM: seen stalled anew next time */
        if (since + ev->grace > ev->tnow) {
            earliest(&due, since + ev->grace);
            continue;
        }
        for (; k < r->nfindings; k++) {
            if (!step(&x[k]))
                continue;
            uint64_t fk = finding_key(f, &x[k]);
            long long seen = gpuop_flap_get(&ev->waiting, fk);
            if (!seen)
                continue; /* said already, or appeared with grace 0 */
            long long at = (seen > since ? seen : since) + ev->grace;
            if (at > ev->tnow) {
                earliest(&due, at);
                continue;
            }
            gpuop_flap_del(&ev->waiting, fk);
            say(ev, f, &x[k], true, fk);
        }
    }
    gpuop_flap_free(&ev->stalled);
    ev->stalled = next;
    return due;
}

/* Says the pending findings of f whose grace has ended, and has the policy
 * reconciled again when the next one's will, or at stalled_due (when the
 * next waiting rollout step is due; 0 none). */
static void post_due(struct gpuop_events *ev, const struct gpuop_findings *f, long long stalled_due)
{
    long long first = gpuop_flap_min(&ev->pending);
    if (first && first + ev->grace <= ev->tnow) {
        for (size_t i = 0; i < f->nitems; i++) {
            const struct gpuop_finding *x = &f->items[i];
            uint64_t k = finding_key(f, x);
            long long seen = gpuop_flap_get(&ev->pending, k);
            if (seen && seen + ev->grace <= ev->tnow) {
                gpuop_flap_del(&ev->pending, k);
                say(ev, f, x, true, k);
            }
        }
        /* Any left overdue are of no present finding (a hash collision):
         * dropped, or they would requeue the policy at once, forever. */
        gpuop_flap_prune(&ev->pending, ev->tnow - ev->grace + 1);
        first = gpuop_flap_min(&ev->pending);
    }
    long long at = first ? first + ev->grace : 0;
    if (stalled_due)
        earliest(&at, stalled_due);
    if (at && ev->queue) {
        long long wait_s = at - ev->tnow;
        uint64_t ms = (uint64_t)(wait_s > 0 ? wait_s : 0) * 1000 + RECHECK_SLACK_MS;
        (void)gpuop_queue_add_after(ev->queue, ev->policy, ms); /* ENOMEM: at the next change */
        gpuop_debug("events",
                    "%zu findings in their grace period, %zu rollout steps on %zu stalled nodes "
                    "waiting; next recheck in %llu ms",
                    ev->pending.len, ev->waiting.len, ev->stalled.len, (unsigned long long)ms);
    }
}

void gpuop_events_observe(struct gpuop_events *ev, const char *policy, const char *uid,
                          long long grace_s, const struct gpuop_findings *f)
{
    bool same = ev->have_prev && ev->prev_policy && strcmp(ev->prev_policy, policy) == 0;
    if (!same) {
        /* another policy (or the first): what was pending or shown was
         * about the old one */
        gpuop_flap_free(&ev->pending);
        gpuop_flap_free(&ev->waiting);
        gpuop_flap_free(&ev->stalled);
        gpuop_flap_free(&ev->shown);
    }
    ev->policy = policy;
    ev->uid = uid;
    ev->grace = grace_s;
    ev->tnow = gpuop_clock_wall();
    ev->burst = 0;
    ev->suppressed = 0;
    /* The first observation of a policy cannot tell new findings from old
     * ones (gpuop restarted, or the policy became active): every one
     * waits out the grace, and what lasts is said once. */
    ev->learning = !same;
    struct gpuop_findings_diff d;
    struct gpuop_finding_change c;
    gpuop_findings_diff_begin(&d, same ? &ev->prev : NULL, f);
    while (gpuop_findings_diff_next(&d, &c))
        on_change(ev, &c);
    ev->learning = false;
    post_due(ev, f, post_stalled(ev, f));
    prune(ev, ev->tnow);
    if (ev->burst >= GPUOP_EVENTS_BURST && ev->suppressed > 0) {
        char msg[128];
        snprintf(msg, sizeof(msg),
                 "%d more finding changes not posted as events; see the GpuPolicy status",
                 ev->suppressed);
        post(ev, "Normal", "FindingsSummarized", msg);
    }
    if (ev->have_prev)
        gpuop_findings_free(&ev->prev);
    /* only diffed against, never printed: the keys, after the previous
     * ones are freed (one copy at a time) */
    ev->have_prev = gpuop_findings_copy_keys(f, &ev->prev) == 0;
    if (!ev->have_prev) /* the next call learns again */
        gpuop_warn("events", "out of memory keeping the findings: the next ones wait their grace");
    if (!same) {
        free(ev->prev_policy);
        ev->prev_policy = strdup(policy);
    }
}

void gpuop_events_say(struct gpuop_events *ev, const char *policy, const char *uid,
                      const char *type, const char *reason, const char *msg)
{
    const char *p = ev->policy, *u = ev->uid;
    ev->policy = policy; /* post() reads them only while it runs */
    ev->uid = uid;
    post(ev, type, reason, msg);
    ev->policy = p;
    ev->uid = u;
}

uint64_t gpuop_events_posted(const struct gpuop_events *ev)
{
    return gpuop_recorder_posted(ev->rec);
}

void gpuop_events_set_on_drained(struct gpuop_events *ev, void (*cb)(void *), void *arg)
{
    gpuop_recorder_set_on_drained(ev->rec, cb, arg);
}

uint64_t gpuop_events_dropped(const struct gpuop_events *ev)
{
    return gpuop_recorder_dropped(ev->rec);
}

size_t gpuop_events_queued(const struct gpuop_events *ev)
{
    return gpuop_recorder_queued(ev->rec);
}

size_t gpuop_events_remembered(const struct gpuop_events *ev)
{
    return ev->last.len;
}

size_t gpuop_events_pending(const struct gpuop_events *ev)
{
    return ev->pending.len + ev->waiting.len;
}

size_t gpuop_events_stalled(const struct gpuop_events *ev)
{
    return ev->stalled.len;
}

size_t gpuop_events_shown(const struct gpuop_events *ev)
{
    return ev->shown.len;
}

void gpuop_events_close(struct gpuop_events *ev, void (*cb)(void *), void *arg)
{
    gpuop_recorder_close(ev->rec); /* cancels the post in flight */
    if (ev->have_prev)
        gpuop_findings_free(&ev->prev);
    gpuop_flap_free(&ev->last);
    gpuop_flap_free(&ev->pending);
    gpuop_flap_free(&ev->waiting);
    gpuop_flap_free(&ev->stalled);
    gpuop_flap_free(&ev->shown);
    free(ev->prev_policy);
    free(ev);
    if (cb)
        cb(arg);
}
