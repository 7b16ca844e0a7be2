/*
 * events.c - Events for findings that appear or clear (see events_int.h).
 *
 * What the Events remember of the findings is one 8-byte record per
 * present finding (struct ev_rec), in the findings' own order (node name,
 * operand, kind, reason), with the nodes' names beside them: the memo.
 * Each observation walks the memo and the new findings together (one
 * merge, a strcmp per node), which decides what appeared and what
 * cleared, and builds the next memo aligned with the new set, so that
 * record i is the one of the set's finding i (node result r's finding k
 * is r->first + k) and nothing is looked up by key. A
 * record's state:
 *   pending  a finding of a transient reason (the reasons table's column)
 *            that appeared less than the grace period ago, or any finding
 *            of the first observation of a policy (new or old, it cannot
 *            tell), with when it was first seen. The policy's key is
 *            requeued for the moment the earliest grace ends
 *            (gpuop_queue_add_after), so the reconcile that posts it comes
 *            even when nothing else changes; its message is then built
 *            from that reconcile's findings, as for any other Event. A
 *            pending finding that clears was never said and is forgotten
 *            without an Event.
 *   waiting  the same for a rollout step (GPUOP_WAIT_STALL: a pod being
 *            created, starting, held in its gate, an operand up before its
 *            prerequisite): said only once it has lasted the grace and its
 *            node (gpuop_node_result.progressing) has not progressed for
 *            the grace; never while the node progresses.
 *   shown    its Warning was posted: only these get a "<Reason>Cleared".
 *   quiet    present, and nothing more to say of it (its Warning was held
 *            back by flap suppression or the burst).
 * Beside the memo, two hash -> time sets (flap.h, 16 bytes a slot):
 *   stalled  per node (hash of its name) with a waiting step that does not
 *            progress: since when (the last Ready of one of its pods, else
 *            the first observation that saw it so). Rebuilt at each
 *            observation from the nodes that are stalled then, so a node
 *            that progresses again, or is gone, is forgotten.
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
#include "gpuop/pages.h"
#include "gpuop/policy.h"
#include "gpuop/recorder.h"
#include "queue_int.h"

/* The source and reporting component of gpuop's Events. */
#define EVENTS_COMPONENT "gpuop"

/* How long after the earliest grace ends the recheck comes: the queue's
 * clock is the loop's, cached at the start of an iteration, and may lag
 * the wall clock by a reconcile's length. */
#define RECHECK_SLACK_MS 500

enum rec_state { REC_QUIET, REC_PENDING, REC_WAITING, REC_SHOWN };

/* One present finding: its key (with the node's) and what is said of it. */
struct ev_rec {
    uint32_t seen; /* pending, waiting: when it was first seen (seconds since the epoch) */
    uint8_t operand, kind, reason;
    uint8_t state; /* enum rec_state */
};
_Static_assert(sizeof(struct ev_rec) == 8, "a record is 8 bytes: one per present finding");

struct ev_node {
    uint32_t name;     /* offset in the memo's names */
    uint32_t first, n; /* its records */
};

struct ev_memo {
    struct ev_rec *recs;   /* nrecs, recs[i] the record of the set's finding i */
    struct ev_node *nodes; /* the nodes with findings, by name */
    char *names;           /* their names, each after the other */
    void *block;           /* new: the three above, pages of their own (pages.h) */
    size_t block_size;
    size_t nrecs, nnodes;
    size_t pending, waiting, shown; /* records in those states */
};

struct gpuop_events {
    struct gpuop_recorder *rec; /* new: posts what is said */
    struct gpuop_queue *queue;  /* borrowed, may be NULL: rechecks when a grace ends */
    struct ev_memo memo;
    bool have_memo;
    char *prev_policy;
    struct gpuop_flap last;    /* hash of "A|key" / "C|key" -> time said */
    struct gpuop_flap stalled; /* hash of node -> not progressing since */
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
    ev->stalled = (struct gpuop_flap)GPUOP_FLAP_INIT;
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

/* Whether a change may be said now: not said in this direction within
 * the flap window, and the burst not spent. If so it is remembered as
 * said. */
static bool may_say(struct gpuop_events *ev, bool appeared, const char *node, const char *operand,
                    const char *reason)
{
    char key[512];
    snprintf(key, sizeof(key), "%c|%s|%s|%s", appeared ? 'A' : 'C', node, operand, reason);
    uint64_t h = gpuop_hash_str(key);
    long long last = gpuop_flap_get(&ev->last, h);
    if (last && ev->tnow - last < GPUOP_EVENTS_QUIET_S) {
        ev->suppressed++;
        return false; /* flapping: said recently */
    }
    if (ev->burst >= GPUOP_EVENTS_BURST) {
        ev->suppressed++;
        return false; /* not said, so not remembered either */
    }
    (void)gpuop_flap_put(&ev->last, h, ev->tnow); /* ENOMEM: said, not remembered */
    ev->burst++;
    return true;
}

/* Posts the Warning of a finding of f that appeared, unless it flaps or
 * the burst is spent; whether it was posted. */
static bool say_appeared(struct gpuop_events *ev, const struct gpuop_findings *f,
                         const struct gpuop_finding *x)
{
    const char *node = gpuop_finding_node(f, x);
    const char *operand = gpuop_operand_get(x->operand)->name;
    const char *reason = gpuop_reason_get(x->reason)->name;
    if (!may_say(ev, true, node, operand, reason))
        return false;
    char text[GPUOP_FINDING_MESSAGE_MAX];
    char msg[GPUOP_FINDING_MESSAGE_MAX + 128];
    gpuop_finding_message(f, x, text, sizeof(text));
    snprintf(msg, sizeof(msg), "node %s, %s: %s", node, operand, text);
    post(ev, "Warning", reason, msg);
    return true;
}

/* Posts the Normal "<Reason>Cleared" of a shown finding that went, unless
 * it flaps or the burst is spent. */
static void say_cleared(struct gpuop_events *ev, const char *node, const struct ev_rec *r)
{
    const char *operand = gpuop_operand_get(r->operand)->name;
    const char *reason = gpuop_reason_get(r->reason)->name;
    if (!may_say(ev, false, node, operand, reason))
        return;
    char msg[GPUOP_FINDING_MESSAGE_MAX + 128];
    snprintf(msg, sizeof(msg), "node %s, %s: %s cleared", node, operand, reason);
    char creason[96];
    snprintf(creason, sizeof(creason), "%sCleared", reason);
    post(ev, "Normal", creason, msg);
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

static void memo_free(struct ev_memo *m)
{
    gpuop_pages_free(m->block, m->block_size);
    memset(m, 0, sizeof(*m));
}

/* The next memo's memory for f, all of it before anything is said (so an
 * allocation that fails changes nothing): 0 or GPUOP_ENOMEM. */
static int memo_alloc(struct ev_memo *m, const struct gpuop_findings *f)
{
    size_t nn = 0, bytes = 0;
    memset(m, 0, sizeof(*m));
    for (size_t i = 0; i < f->nnodes; i++)
        if (f->nodes[i].nfindings) {
            nn++;
            bytes += strlen(f->nodes[i].name) + 1;
        }
    if (bytes > UINT32_MAX || f->nitems > UINT32_MAX)
        return GPUOP_ENOMEM; /* past what an offset holds: not kept */
    /* One block of pages of its own: a memo lives from one observation to
     * the next, and among the heap's short-lived blocks it kept their
     * pages resident (as the records' chunks did, records.c). */
    size_t recs = f->nitems * sizeof(*m->recs), nodes = nn * sizeof(*m->nodes);
    if (recs + nodes + bytes == 0)
        return 0;
    char *b = gpuop_pages_alloc(recs + nodes + bytes, &m->block_size);
    if (!b)
        return GPUOP_ENOMEM;
    m->block = b;
    m->recs = f->nitems ? (struct ev_rec *)(void *)b : NULL; /* zeroed */
    m->nodes = nn ? (struct ev_node *)(void *)(b + recs) : NULL;
    m->names = bytes ? b + recs + nodes : NULL;
    m->nrecs = f->nitems;
    return 0;
}

static void count(struct ev_memo *m, const struct ev_rec *r, int by)
{
    size_t *n = r->state == REC_PENDING   ? &m->pending
                : r->state == REC_WAITING ? &m->waiting
                : r->state == REC_SHOWN   ? &m->shown
                                          : NULL;
    if (n)
        *n += (size_t)by;
}

/* Record r of the next memo after its Warning was said (shown) or held
 * back (quiet). */
static void said(struct ev_memo *m, struct ev_rec *r, bool posted)
{
    count(m, r, -1);
    r->state = posted ? REC_SHOWN : REC_QUIET;
    count(m, r, 1);
}

/* Finding x of f (the set's finding i) that appeared: it waits (pending
 * or waiting), or its Warning is said now. */
static void appeared(struct gpuop_events *ev, const struct gpuop_findings *f,
                     const struct gpuop_finding *x, size_t i, struct ev_memo *next)
{
    struct ev_rec *r = &next->recs[i];
    *r = (struct ev_rec){0, x->operand, x->kind, x->reason, REC_QUIET};
    if (ev->learning || (ev->grace > 0 && transient(x))) {
        r->state = ev->grace > 0 && step(x) ? REC_WAITING : REC_PENDING;
        r->seen = (uint32_t)ev->tnow; /* said when it outlasts the grace */
        count(next, r, 1);
        return;
    }
    said(next, r, say_appeared(ev, f, x));
}

/* A remembered finding that went: a shown one's clearing is said; one
 * still waiting passed within its grace, or while its node progressed,
 * and is never said. */
static void cleared(struct gpuop_events *ev, const char *node, const struct ev_rec *r)
{
    if (r->state == REC_SHOWN)
        say_cleared(ev, node, r);
}

static int rec_cmp(const struct ev_rec *r, const struct gpuop_finding *x)
{
    if (r->operand != x->operand)
        return r->operand < x->operand ? -1 : 1;
    if (r->kind != x->kind)
        return r->kind < x->kind ? -1 : 1;
    if (r->reason != x->reason)
        return r->reason < x->reason ? -1 : 1;
    return 0;
}

/* Node r of f (with findings) into the next memo, its findings merged
 * with what was remembered of it (o, or NULL: a node new to the
 * findings). */
static void walk_node(struct gpuop_events *ev, const struct gpuop_findings *f,
                      const struct gpuop_node_result *r, const struct ev_memo *old,
                      const struct ev_node *o, struct ev_memo *next, size_t *name_at)
{
    size_t len = strlen(r->name) + 1;
    memcpy(next->names + *name_at, r->name, len);
    next->nodes[next->nnodes++] = (struct ev_node){(uint32_t)*name_at, r->first, r->nfindings};
    *name_at += len;
    size_t i = 0, j = 0, on = o ? o->n : 0;
    while (i < on || j < r->nfindings) {
        const struct ev_rec *was = i < on ? &old->recs[o->first + i] : NULL;
        size_t at = r->first + j;
        int c = !was ? 1 : j >= r->nfindings ? -1 : rec_cmp(was, &r->findings[j]);
        if (c < 0) {
            cleared(ev, r->name, was);
            i++;
        } else if (c > 0) {
            appeared(ev, f, &r->findings[j], at, next);
            j++;
        } else {
            next->recs[at] = *was;
            count(next, was, 1);
            i++, j++;
        }
    }
}

/* Compares f with the memo (old, borrowed; empty on a first observation),
 * says what appeared and what cleared as decided above, and fills next
 * (from memo_alloc) with f's records. */
static void walk(struct gpuop_events *ev, const struct ev_memo *old, const struct gpuop_findings *f,
                 struct ev_memo *next)
{
    size_t i = 0, j = 0, name_at = 0;
    while (i < old->nnodes || j < f->nnodes) {
        if (j < f->nnodes && !f->nodes[j].nfindings) {
            j++; /* a GPU node with nothing to say */
            continue;
        }
        const char *was = i < old->nnodes ? old->names + old->nodes[i].name : NULL;
        int c = !was ? 1 : j >= f->nnodes ? -1 : strcmp(was, f->nodes[j].name);
        if (c < 0) { /* a node whose findings all cleared (or gone) */
            for (uint32_t k = 0; k < old->nodes[i].n; k++)
                cleared(ev, was, &old->recs[old->nodes[i].first + k]);
            i++;
        } else {
            walk_node(ev, f, &f->nodes[j], old, c == 0 ? &old->nodes[i] : NULL, next, &name_at);
            i += c == 0;
            j++;
        }
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
static long long post_stalled(struct gpuop_events *ev, const struct gpuop_findings *f,
                              struct ev_memo *m)
{
    struct gpuop_flap next = GPUOP_FLAP_INIT;
    long long due = 0;
    for (size_t i = 0; m->waiting && i < f->nnodes; i++) {
        const struct gpuop_node_result *r = &f->nodes[i];
        const struct gpuop_finding *x = r->findings;
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
            struct ev_rec *rec = &m->recs[r->first + k];
            if (!step(&x[k]) || rec->state != REC_WAITING)
                continue; /* said already, or appeared with grace 0 */
            long long seen = rec->seen;
            long long at = (seen > since ? seen : since) + ev->grace;
            if (at > ev->tnow) {
                earliest(&due, at);
                continue;
            }
            said(m, rec, say_appeared(ev, f, &x[k]));
        }
    }
    gpuop_flap_free(&ev->stalled);
    ev->stalled = next;
    return due;
}

/* Says the pending findings of f whose grace has ended, and has the policy
 * reconciled again when the next one's will, or at stalled_due (when the
 * next waiting rollout step is due; 0 none). */
static void post_due(struct gpuop_events *ev, const struct gpuop_findings *f, struct ev_memo *m,
                     long long stalled_due)
{
    long long first = 0;
    for (size_t i = 0; m->pending && i < f->nnodes; i++) {
        const struct gpuop_node_result *nr = &f->nodes[i];
        for (uint32_t k = 0; k < nr->nfindings; k++) {
            struct ev_rec *r = &m->recs[nr->first + k];
            if (r->state != REC_PENDING)
                continue;
            if ((long long)r->seen + ev->grace <= ev->tnow)
                said(m, r, say_appeared(ev, f, &nr->findings[k]));
            else
                earliest(&first, r->seen);
        }
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
                    m->pending, m->waiting, ev->stalled.len, (unsigned long long)ms);
    }
}

void gpuop_events_observe(struct gpuop_events *ev, const char *policy, const char *uid,
                          long long grace_s, const struct gpuop_findings *f)
{
    bool same = ev->have_memo && ev->prev_policy && strcmp(ev->prev_policy, policy) == 0;
    if (!same) {
        /* another policy (or the first): what was remembered was about
         * the old one */
        memo_free(&ev->memo);
        ev->have_memo = false;
        gpuop_flap_free(&ev->stalled);
    }
    ev->policy = policy;
    ev->uid = uid;
    ev->grace = grace_s;
    ev->tnow = gpuop_clock_wall();
    ev->burst = 0;
    ev->suppressed = 0;
    struct ev_memo next;
    if (memo_alloc(&next, f) < 0) { /* nothing said; the next call learns again */
        gpuop_warn("events", "out of memory remembering the findings: the next ones wait their "
                             "grace");
        memo_free(&ev->memo);
        ev->have_memo = false;
        return;
    }
    /* The first observation of a policy cannot tell new findings from old
     * ones (gpuop restarted, or the policy became active): every one
     * waits out the grace, and what lasts is said once. */
    ev->learning = !same;
    walk(ev, &ev->memo, f, &next);
    ev->learning = false;
    memo_free(&ev->memo);
    ev->memo = next;
    ev->have_memo = true;
    post_due(ev, f, &ev->memo, post_stalled(ev, f, &ev->memo));
    prune(ev, ev->tnow);
    if (ev->burst >= GPUOP_EVENTS_BURST && ev->suppressed > 0) {
        char msg[128];
        snprintf(msg, sizeof(msg),
                 "%d more finding changes not posted as events; see the GpuPolicy status",
                 ev->suppressed);
        post(ev, "Normal", "FindingsSummarized", msg);
    }
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
    return ev->memo.pending + ev->memo.waiting;
}

size_t gpuop_events_stalled(const struct gpuop_events *ev)
{
    return ev->stalled.len;
}

size_t gpuop_events_shown(const struct gpuop_events *ev)
{
    return ev->memo.shown;
}

void gpuop_events_close(struct gpuop_events *ev, void (*cb)(void *), void *arg)
{
    gpuop_recorder_close(ev->rec); /* cancels the post in flight */
    memo_free(&ev->memo);
    gpuop_flap_free(&ev->last);
    gpuop_flap_free(&ev->stalled);
    free(ev->prev_policy);
    free(ev);
    if (cb)
        cb(arg);
}
