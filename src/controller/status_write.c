/*
 * status_write.c - whether to write a GpuPolicy's status, and writing it.
 *
 * The status is compared with what gpuop last wrote for the key (a hash
 * of it, keys sorted), not with the cached object: the GpuPolicy watch may
 * be down (after an API-server restart it is refused longer than the
 * others), so the cache may still hold a status older than the last
 * write, and a cluster that flipped back would then look unchanged. The
 * cache is still read for one thing: when its object moved on past the
 * write (a resourceVersion neither the write's answer nor the one cached
 * when it was sent: a cache that has not caught up is no change) and its
 * status is not what the server answered the write with, someone else
 * changed the status, and it is written again. Both hold status.nodes as
 * a digest of its bytes (gpuop_caches_policy_digested), the cache and the
 * write's answer alike, so the two hashes compare.
 *
 * What is compared is the hash of the document built (gpuop_hash_json,
 * keys sorted): built at every reconcile, written only when its hash is
 * not what was last written (no second description of its inputs to keep
 * in step with the builder).
 *
 * Pacing: under churn a key's status is written at most once per
 * CTL_STATUS_WRITE_INTERVAL_MS. A change when the last write is older than
 * that goes out at once (the first change after a quiet interval is not
 * delayed); a change sooner is held: the key is queued again for the end
 * of the interval, and that reconcile writes whatever the state is then,
 * so the last state is never lost, however many changes came between.
 * Nothing is held while not leading; gpuop_controller_close writes a held
 * status before it stops (gpuop_ctl_status_held). The controller reads the
 * same pacing to queue a findings-only event for the interval's end
 * (gpuop_ctl_status_wait, controller.c on_change).
 *
 * Per key: the hash of the document sent, the hash of the status the server answered with,
 * that answer's resourceVersion, the conditions sent (lastTransitionTime
 * is carried from them), the hash of the problems last logged, when the
 * last write was sent and whether a change is held. A handful of policies:
 * a few hundred bytes each.
 */
#include <stdlib.h>
#include <string.h>

#include "gpuop/hash.h"
#include "gpuop/jsonarena.h"
#include "gpuop/log.h"
#include "gpuop/names.h"

#include "controller_int.h"

struct ctl_status_rec {
    bool written;       /* sent, server, rv and prev are known */
    uint64_t sent;      /* hash of the status sent */
    uint64_t server;    /* hash of the status the server answered with */
    char rv[64];        /* the answer's metadata.resourceVersion */
    char rv_before[64]; /* the cached object's when the write was sent (the
                           cache may still hold it: not a change by anyone) */
    json_t *prev;       /* {"conditions": [...]} as sent (new reference), or NULL */
    uint64_t problems;  /* hash of the problems last logged; 0: none */
    bool paced;         /* a write was sent at sent_ms (the pacing's clock) */
    uint64_t sent_ms;
    bool held; /* a change waits for the interval's end */
};

static void rec_free(void *p)
{
    struct ctl_status_rec *r = p;
    json_decref(r->prev);
    free(r);
}

static struct ctl_status_rec *rec_get(struct gpuop_controller *c, const char *key, bool create)
{
    struct ctl_status_rec *r = gpuop_map_get(&c->status_recs, key);
    if (r || !create)
        return r;
    r = calloc(1, sizeof(*r));
    if (r && gpuop_map_put(&c->status_recs, key, r, NULL) < 0) {
        free(r);
        r = NULL;
    }
    return r;
}

static const char *rv_of(json_t *obj)
{
    const char *rv =
        json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
    return rv ? rv : "";
}

json_t *gpuop_ctl_status_prev(struct gpuop_controller *c, const char *key, json_t *obj)
{
    struct ctl_status_rec *r = rec_get(c, key, false);
    if (r && r->written && r->prev)
        return r->prev;
    return json_object_get(obj, "status");
}

bool gpuop_ctl_problems_changed(struct gpuop_controller *c, const char *key, uint64_t h)
{
    struct ctl_status_rec *r = rec_get(c, key, true);
    if (!r)
        return true;
    bool changed = r->problems != h;
    r->problems = h;
    return changed;
}

void gpuop_ctl_status_forget(struct gpuop_controller *c, const char *key)
{
    if (key) {
        struct ctl_status_rec *r = gpuop_map_del(&c->status_recs, key);
        if (r)
            rec_free(r);
        return;
    }
    size_t it = 0;
    const char *k;
    void *v;
    while (gpuop_map_next(&c->status_recs, &it, &k, &v)) {
        struct ctl_status_rec *r = v;
        r->written = false;
        r->paced = r->held = false;
        json_decref(r->prev);
        r->prev = NULL;
    }
}

uint64_t gpuop_ctl_status_pace(bool paced, uint64_t sent_ms, uint64_t now_ms)
{
    if (!paced || now_ms < sent_ms || now_ms - sent_ms >= CTL_STATUS_WRITE_INTERVAL_MS)
        return 0;
    return CTL_STATUS_WRITE_INTERVAL_MS - (now_ms - sent_ms);
}

uint64_t gpuop_ctl_status_wait(struct gpuop_controller *c, const char *key, uint64_t now_ms)
{
    if (!c->leader || c->flushing)
        return 0;
    const struct ctl_status_rec *r = gpuop_map_get(&c->status_recs, key);
    return r ? gpuop_ctl_status_pace(r->paced, r->sent_ms, now_ms) : 0;
}

bool gpuop_ctl_status_held(struct gpuop_controller *c)
{
    size_t it = 0;
    const char *k;
    void *v;
    while (gpuop_map_next(&c->status_recs, &it, &k, &v))
        if (((struct ctl_status_rec *)v)->held)
            return true;
    return false;
}

void gpuop_ctl_status_requeue_held(struct gpuop_controller *c)
{
    size_t it = 0;
    const char *k;
    void *v;
    while (gpuop_map_next(&c->status_recs, &it, &k, &v))
        if (((struct ctl_status_rec *)v)->held)
            (void)gpuop_queue_add(c->queue, k);
}

void gpuop_ctl_status_answered(struct gpuop_controller *c, const char *key, uint64_t digest,
                               json_t *body, const char *rv_before, json_t *conds)
{
    struct ctl_status_rec *r = rec_get(c, key, true);
    if (!r)
        return;
    r->written = true;
    r->sent = digest;
    r->server = gpuop_hash_json(json_object_get(body, "status"));
    snprintf(r->rv, sizeof(r->rv), "%s", rv_of(body));
    snprintf(r->rv_before, sizeof(r->rv_before), "%s", rv_before ? rv_before : "");
    json_decref(r->prev);
    r->prev = conds ? json_pack("{s:O}", "conditions", conds) : NULL;
}

void gpuop_ctl_status_sent(struct gpuop_controller *c, const char *key, uint64_t now_ms)
{
    struct ctl_status_rec *r = rec_get(c, key, true);
    if (r) {
        r->paced = true;
        r->sent_ms = now_ms;
        r->held = false;
    }
}

static void status_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct ctl_op *o = arg;
    struct gpuop_controller *c = o->c;
    if (rc == 0) {
        if (c->key)
            gpuop_ctl_status_answered(c, c->key, o->body_hash, body, o->rv_before, o->conds);
    } else if (rc != GPUOP_ECANCELED) {
        gpuop_warn(c->kobj, "status update failed: %s", err->message);
        gpuop_ctl_fail(c, "status", err);
    }
    json_decref(o->conds);
    o->conds = NULL;
    gpuop_ctl_op_end(o);
}

enum ctl_status_due gpuop_ctl_status_due(struct gpuop_controller *c, json_t *obj, uint64_t digest,
                                         uint64_t now_ms, uint64_t *wait_ms)
{
    struct ctl_status_rec *r = rec_get(c, c->key, true);
    *wait_ms = 0;
    if (!r)
        return c->leader ? CTL_STATUS_NOW : CTL_STATUS_SAME;
    bool need = !r->written || r->sent != digest;
    const char *rv = rv_of(obj);
    if (!need && strcmp(rv, r->rv) != 0 && strcmp(rv, r->rv_before) != 0)
        need = gpuop_hash_json(json_object_get(obj, "status")) != r->server;
    if (!need || !c->leader) {
        r->held = false; /* what is written is the state: nothing waits */
        return CTL_STATUS_SAME;
    }
    uint64_t wait = c->flushing ? 0 : gpuop_ctl_status_pace(r->paced, r->sent_ms, now_ms);
    if (wait > 0) {
        r->held = true;
        *wait_ms = wait;
        return CTL_STATUS_HELD;
    }
    return CTL_STATUS_NOW;
}

int gpuop_ctl_status_write(struct gpuop_controller *c, json_t *obj, json_t *status /* steals */,
                           uint64_t digest, uint64_t now_ms)
{
    if (!c->leader) {
        json_decref(status);
        return 0;
    }
    json_t *conds = json_incref(json_object_get(status, "conditions"));
    json_t *patch = json_pack("{s:s, s:s, s:{s:s}, s:o}", "apiVersion", GPUOP_API_VERSION, "kind",
                              GPUOP_KIND, "metadata", "name", c->key, "status", status);
    char *body = patch ? json_dumps(patch, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(patch);
    char *full = gpuop_ctl_apply_path(GPUOP_API_VERSION, NULL, GPUOP_PLURAL, c->key, "status");
    int rc = body && full ? 0 : GPUOP_ENOMEM;
    struct ctl_op *o = NULL;
    if (rc == 0) {
        c->stats.status_writes++;
        gpuop_info(c->kobj, "writing status");
        rc = gpuop_ctl_send(c,
                            &(struct ctl_send){.kind = OP_STATUS,
                                               .operand = -1,
                                               .body_hash = digest,
                                               .verb = GPUOP_KUBE_PATCH,
                                               .path = full,
                                               .ctype = GPUOP_CT_APPLY,
                                               .body = body,
                                               .done = status_done},
                            &o);
    }
    if (o) {
        o->conds = conds;
        snprintf(o->rv_before, sizeof(o->rv_before), "%s", rv_of(obj));
        gpuop_ctl_status_sent(c, c->key, now_ms);
    } else
        json_decref(conds);
    free(full);
    gpuop_json_free(body);
    return rc;
}

void gpuop_ctl_status_free(struct gpuop_controller *c)
{
    gpuop_map_free(&c->status_recs, rec_free);
}
