/*
 * apply.c - the apply stage of a reconcile: the operands' ServiceAccount
 * and each operand's DaemonSet by server-side apply, disabled operands'
 * DaemonSets deleted.
 *
 * Prerequisites first: an enabled operand is applied only once its
 * prerequisite (by the operand table) is settled, and not at all when the
 * prerequisite could not be applied, directly or transitively (a disabled
 * prerequisite is host-provided and passes on its own prerequisite's
 * verdict). Such an operand's DaemonSet is neither created nor changed; an
 * existing one stays as it is. So gpuop never builds a device plugin
 * without its toolkit itself.
 *
 * Drift without a request per reconcile: for each DaemonSet the controller
 * remembers the hash of the body last applied and the generation and
 * metadata hash the server answered with; it applies again only when the
 * body changed, the cached DaemonSet's generation or metadata hash moved
 * (someone edited it), or it was deleted (seen by the watch: a DaemonSet
 * just applied and not yet in the cache is not applied twice). A body the
 * server refused is not
 * sent again before the key's backoff has passed (a changed body is sent at
 * once), so a rejected policy costs one PATCH per backoff step, not one per
 * event.
 *
 * Deleted in any way, re-created once gone: a DaemonSet the caches hold
 * with a deletionTimestamp (a finalizer, as --cascade=orphan's, keeps it a
 * while) is not there: nothing is applied onto it (nor deleted again), and
 * the watch's DELETED, which forgets its record and queues the policy,
 * re-creates it. An answer to an apply sent before the watch saw the
 * object gone is of that gone object: it is not recorded (answer_stale),
 * or the next stage would take the DaemonSet for one the watch has not
 * brought yet and never re-create it. The ServiceAccount likewise: applied when its body changed or
 * the watch saw it deleted. The objects beside the DaemonSets (RuntimeClass,
 * MIG config, the DCGM Services, the exporter's ServiceMonitor) are
 * applied or deleted at each reconcile's start when their body changed
 * (see apply_extra).
 *
 * The driver per OS (SPEC 4b): when its image takes the node's OS tag, the
 * driver operand is one DaemonSet per OS pool among the GPU nodes of the
 * node cache (gpuop-driver-ubuntu24.04, gpuop-driver-rhel9), each with its
 * own record (pool_applied); a pool no GPU node is in any more has its
 * DaemonSet deleted, and so has the plain gpuop-driver. The other way round
 * (a full reference or a digest) the pools' DaemonSets are deleted and the
 * one gpuop-driver is applied. The operand's result sums the pools up.
 * With precompiled drivers a pool is an OS pool and a kernel
 * (gpuop-driver-6.8.0-45-generic-ubuntu24.04): the same records, the
 * same deletes when a kernel's last GPU node goes.
 *
 * The DRA driver's kubelet plugin outlives the claims it must unprepare:
 * switched off, its DaemonSet is deleted only once draclaims.c finds no
 * claim holder on its nodes. A policy being deleted is applied as if
 * spec.draDriver were switched off (begin_apply); the stage's last op,
 * once every other answer is in, adds or removes gpuop's finalizer
 * (finalizer_end, finalizer.c), so the garbage collector takes the
 * operands only after the plugin's DaemonSet went that way.
 *
 * The stage is its own reconcile ("apply:<policy>", controller.c), queued
 * only when what it reads may have changed: the policy, the caches'
 * DaemonSets (presence, generation, metadata, deletion), the
 * ServiceAccount and the OS pools of the GPU nodes, each a cache change
 * the caches call GPUOP_CACHES_RENDER (a node only when the pools may
 * have moved). A pod event, most of a rollout's, or a node that comes, goes
 * or changes within the pools there are, queues only the status
 * reconcile, which reads the results the last stage left (c->apply.res, c->apply.sa).
 * A new input of the render must be such a change (or the policy).
 */
#include <stdlib.h>
#include <string.h>

#include "gpuop/clock.h"
#include "gpuop/hash.h"
#include "gpuop/jsonarena.h"
#include "gpuop/log.h"
#include "gpuop/names.h"
#include "gpuop/render.h"

#include "controller_int.h"

/* The queue read the clock for the key's due time a moment before the
 * backoff below reads it (two readings, not libuv's one cached time): the
 * backoff ends this much early, so the key's requeue always finds it passed
 * (a tenth of the shortest backoff, GPUOP_QUEUE_BACKOFF_BASE_MS). */
#define BACKOFF_CLOCK_SLACK_MS 10

static const char *ds_obj(const struct gpuop_controller *c, int operand, char *buf, size_t len)
{
    snprintf(buf, len, "daemonset/%s/%s", c->ns, gpuop_operand_get(operand)->ds_name);
    return buf;
}

char *gpuop_ctl_apply_path(const char *gv, const char *ns, const char *res, const char *name,
                           const char *sub)
{
    const struct gpuop_kube_ref ref = {
        .group_version = gv, .ns = ns, .resource = res, .name = name, .subresource = sub};
    static const struct gpuop_kube_param q[] = {{"fieldManager", GPUOP_MANAGER}, {"force", "true"}};
    return gpuop_kube_path(&ref, q, sizeof(q) / sizeof(q[0]));
}

static void set_failed(struct gpuop_apply_result *r, int state, const struct gpuop_err *e)
{
    r->state = (unsigned char)state;
    r->blocked_by = -1;
    snprintf(r->reason, sizeof(r->reason), "%s", e && e->reason[0] ? e->reason : "Failed");
    snprintf(r->message, sizeof(r->message), "%s",
             e && e->message[0] ? e->message : gpuop_strerror(e ? e->rc : GPUOP_EHTTP));
}

void gpuop_ctl_apply_reset(struct gpuop_controller *c)
{
    /* A different policy object (re-created, or another became active):
     * what was applied before says nothing about this one. */
    const char *uid = c->policy.uid ? c->policy.uid : "";
    if (strcmp(uid, c->apply.applied_uid) != 0) {
        memset(c->apply.applied, 0, sizeof(c->apply.applied));
        memset(c->apply.pool_applied, 0, sizeof(c->apply.pool_applied));
        memset(&c->apply.sa_applied, 0, sizeof(c->apply.sa_applied));
        snprintf(c->apply.applied_uid, sizeof(c->apply.applied_uid), "%s", uid);
    }
    memset(c->apply.res, 0, sizeof(c->apply.res));
    memset(c->apply.started, 0, sizeof(c->apply.started));
    memset(&c->apply.sa, 0, sizeof(c->apply.sa));
    c->apply.sa_started = false;
    for (int i = 0; i < GPUOP_OPERAND_MAX; i++) {
        c->apply.res[i].blocked_by = -1;
        c->apply.applied[i].rejected_now = false;
    }
    c->apply.sa_applied.rejected_now = false;
    c->apply.sa.blocked_by = -1;
    c->apply.extras_started = false;
    c->apply.fin_started = false;
    for (int i = 0; i < GPUOP_RENDER_EXTRA_MAX; i++)
        c->apply.extras_applied[i].rejected_now = false;
    for (int k = 0; k < CTL_POOLS_MAX; k++)
        c->apply.pool_applied[k].a.rejected_now = false;
    c->apply.pool_pending = 0;
    c->apply.pool_failed = false;
    c->apply.pool_operand = -1;
}

const struct gpuop_apply_result *gpuop_ctl_apply_results(const struct ctl_apply *a, const char *uid,
                                                         const struct gpuop_apply_result **sa)
{
    bool ours = uid && strcmp(uid, a->applied_uid) == 0;
    *sa = ours ? &a->sa : NULL;
    return ours ? a->res : NULL;
}

unsigned gpuop_ctl_apply_absent_crds(const struct ctl_apply *a)
{
    unsigned bits = 0;
    for (int i = 0; i < GPUOP_RENDER_EXTRA_MAX; i++)
        bits |= (unsigned)a->extras_absent[i] << i;
    return bits;
}

bool gpuop_ctl_apply_dra_served(const struct ctl_apply *a)
{
    for (int i = 0; i < gpuop_render_extra_count() && i < GPUOP_RENDER_EXTRA_MAX; i++) {
        const struct gpuop_render_extra *x = gpuop_render_extra_get(i);
        if (strcmp(x->kind, "DeviceClass") || strcmp(x->name, GPUOP_DRA_GPU_DRIVER))
            continue;
        uint64_t h = a->extras_applied[i].body_hash;
        return !a->extras_absent[i] && h != 0 && h != CTL_EXTRA_DELETED;
    }
    return false;
}

/* Remembers a refused body: not resent before the key's backoff. */
static void remember_refusal(struct ctl_applied *a, uint64_t h, const struct gpuop_apply_result *r)
{
    a->rejected_hash = h;
    a->rejected_now = true;
    memcpy(a->reason, r->reason, sizeof(a->reason));
    memcpy(a->message, r->message, sizeof(a->message));
}

/* True (and r filled as the server answered) when body hash h was refused
 * and the key's backoff has not passed yet: the same answer, unasked. */
static bool still_refused(const struct gpuop_controller *c, const struct ctl_applied *a, uint64_t h,
                          struct gpuop_apply_result *r, struct gpuop_err *e)
{
    if (a->rejected_hash != h || gpuop_clock_ms() >= a->retry_at_ms)
        return false;
    memset(e, 0, sizeof(*e));
    e->rc = GPUOP_EHTTP;
    snprintf(e->reason, sizeof(e->reason), "%s", a->reason);
    snprintf(e->message, sizeof(e->message), "%s", a->message);
    set_failed(r, GPUOP_APPLY_FAILED, e);
    return true;
}

/* Forgets what was applied of the object record a is for (the watch saw
 * it gone, or another policy object): the next stage applies it again.
 * Its count of gones goes on. */
static void forget_applied(struct ctl_applied *a)
{
    unsigned gone = a->gone + 1;
    memset(a, 0, sizeof(*a));
    a->gone = gone;
}

/* True when the object of record a was seen gone after op o was sent: o's
 * answer is of an object that is no more, and is not recorded. */
static bool answer_stale(const struct ctl_op *o, const struct ctl_applied *a)
{
    return o->gone != a->gone;
}

/* Some DaemonSet is being deleted (a deletionTimestamp): not there for the
 * apply stage, which waits for the watch's DELETED to re-create it. */
static bool being_deleted(const struct gpuop_caches_ds *live, const char *obj)
{
    if (!live || !live->ds.deleting)
        return false;
    gpuop_debug(obj, "being deleted; applied again once the deletion completes");
    return true;
}

/* Sends operand i's DaemonSet name: a server-side apply of body
 * (borrowed), or its delete when body is NULL; counted in the stats, the
 * op in *op when op is not NULL. 0 or a negative code. */
static int ds_send(struct gpuop_controller *c, int i, const char *name, uint64_t h,
                   const char *body, gpuop_kube_done_cb done, struct ctl_op **op)
{
    const struct gpuop_kube_ref ref = {
        .group_version = "apps/v1", .ns = c->ns, .resource = "daemonsets", .name = name};
    char *path = body ? gpuop_ctl_apply_path("apps/v1", c->ns, "daemonsets", name, NULL)
                      : gpuop_kube_path(&ref, NULL, 0);
    if (!path)
        return GPUOP_ENOMEM;
    if (body)
        c->stats.applies++;
    else
        c->stats.deletes++;
    int rc = gpuop_ctl_send(c,
                            &(struct ctl_send){.kind = body ? OP_APPLY : OP_DELETE,
                                               .operand = i,
                                               .body_hash = h,
                                               .verb = body ? GPUOP_KUBE_PATCH : GPUOP_KUBE_DELETE,
                                               .path = path,
                                               .ctype = body ? GPUOP_CT_APPLY : NULL,
                                               .body = body,
                                               .done = done},
                            op);
    free(path);
    return rc;
}

/* ---- DaemonSets ---- */

static void apply_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct ctl_op *o = arg;
    struct gpuop_controller *c = o->c;
    struct ctl_applied *a = &c->apply.applied[o->operand];
    char obj[CTL_OBJ_MAX];
    ds_obj(c, o->operand, obj, sizeof(obj));
    if (rc == 0 && answer_stale(o, a)) {
        c->apply.res[o->operand].state =
            GPUOP_APPLY_CURRENT; /* the deletion queued the next stage */
        gpuop_info(obj, "applied DaemonSet, deleted since: applied again");
    } else if (rc == 0) {
        a->body_hash = o->body_hash;
        a->generation =
            json_integer_value(json_object_get(json_object_get(body, "metadata"), "generation"));
        a->meta_hash = gpuop_caches_meta_hash(body);
        a->rejected_hash = 0;
        c->apply.res[o->operand].state = GPUOP_APPLY_CURRENT;
        gpuop_info(obj, "applied DaemonSet (generation %lld)", a->generation);
    } else if (rc != GPUOP_ECANCELED) {
        set_failed(&c->apply.res[o->operand], GPUOP_APPLY_FAILED, err);
        remember_refusal(a, o->body_hash, &c->apply.res[o->operand]);
        gpuop_debug(obj, "apply failed: %s", err->message); /* logged once in status */
        gpuop_ctl_fail(c, gpuop_operand_get(o->operand)->ds_name, err);
    }
    gpuop_ctl_op_end(o);
}

static void delete_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct ctl_op *o = arg;
    struct gpuop_controller *c = o->c;
    char obj[CTL_OBJ_MAX];
    (void)body;
    if (rc == 0 || rc == GPUOP_ENOTFOUND) {
        forget_applied(&c->apply.applied[o->operand]);
        c->apply.res[o->operand].state = GPUOP_APPLY_ABSENT;
        gpuop_info(ds_obj(c, o->operand, obj, sizeof(obj)), "deleted DaemonSet (operand disabled)");
    } else if (rc != GPUOP_ECANCELED) {
        set_failed(&c->apply.res[o->operand], GPUOP_APPLY_DELETE_FAILED, err);
        gpuop_ctl_fail(c, gpuop_operand_get(o->operand)->ds_name, err);
    }
    gpuop_ctl_op_end(o);
}

/* Settles operand i at once with rc (a request that could not start). */
static void fail_now(struct gpuop_controller *c, int i, int state, int rc)
{
    struct gpuop_err e;
    gpuop_err_set(&e, rc, NULL, "%s", gpuop_strerror(rc));
    set_failed(&c->apply.res[i], state, &e);
    gpuop_ctl_fail(c, gpuop_operand_get(i)->ds_name, &e);
}

static void apply_operand(struct gpuop_controller *c, int i)
{
    const struct gpuop_operand *od = gpuop_operand_get(i);
    struct ctl_applied *a = &c->apply.applied[i];
    json_t *ds = gpuop_render_daemonset(&c->policy, i, c->ns);
    char *body = ds ? json_dumps(ds, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(ds);
    if (!body) {
        fail_now(c, i, GPUOP_APPLY_FAILED, GPUOP_ENOMEM);
        return;
    }
    uint64_t h = gpuop_hash_str(body);
    const struct gpuop_caches_ds *live = gpuop_caches_ds(c->caches, od->ds_name);
    char obj[CTL_OBJ_MAX];
    /* Absent from the cache but applied with this body: the watch has not
     * brought it yet (a delete clears the record, gpuop_ctl_apply_gone).
     * Being deleted: re-created once gone. */
    if (being_deleted(live, ds_obj(c, i, obj, sizeof(obj))) ||
        (a->body_hash == h &&
         (!live || (live->ds.generation == a->generation && live->meta_hash == a->meta_hash)))) {
        gpuop_json_free(body);
        c->apply.res[i].state = GPUOP_APPLY_CURRENT; /* in line with the policy */
        return;
    }
    struct gpuop_err e;
    if (still_refused(c, a, h, &c->apply.res[i], &e)) {
        gpuop_json_free(body);
        gpuop_ctl_fail(c, od->ds_name, &e);
        gpuop_debug(ds_obj(c, i, obj, sizeof(obj)), "refused body not resent before the backoff");
        return;
    }
    if (live && a->body_hash == h)
        gpuop_info(ds_obj(c, i, obj, sizeof(obj)),
                   "DaemonSet changed outside the policy; putting it back");
    struct ctl_op *op = NULL;
    int rc = ds_send(c, i, od->ds_name, h, body, apply_done, &op);
    if (rc == 0)
        op->gone = a->gone;
    gpuop_json_free(body);
    if (rc < 0)
        fail_now(c, i, GPUOP_APPLY_FAILED, rc);
}

static void delete_operand(struct gpuop_controller *c, int i)
{
    const struct gpuop_operand *od = gpuop_operand_get(i);
    const struct gpuop_caches_ds *live = gpuop_caches_ds(c->caches, od->ds_name);
    if (!live || live->ds.deleting) {
        c->apply.res[i].state = GPUOP_APPLY_ABSENT;
        return;
    }
    int rc = ds_send(c, i, od->ds_name, 0, NULL, delete_done, NULL);
    if (rc < 0)
        fail_now(c, i, GPUOP_APPLY_DELETE_FAILED, rc);
}

static int cmp_node(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The DRA driver switched off: may its kubelet plugin's DaemonSet go
 * now? Only once no pod on the nodes where its pods run holds a resource
 * claim it must unprepare (draclaims.c, NVIDIA's order). Kept meanwhile:
 * its apply result says nothing (the DraPluginDeletion condition does). */
static bool dra_plugin_may_go(struct gpuop_controller *c, int i)
{
    const struct gpuop_operand *od = gpuop_operand_get(i);
    const struct gpuop_caches_ds *live = gpuop_caches_ds(c->caches, od->ds_name);
    if (!live || live->ds.deleting) {
        gpuop_ctl_draclaims_reset(c->draclaims);
        return true; /* nothing to keep: delete_operand says absent */
    }
    struct gpuop_caches_view v = {0};
    const char **nodes = NULL;
    size_t n = 0;
    bool go = false;
    if (gpuop_caches_view(c->caches, &v) == 0 && gpuop_caches_view_pods(c->caches, &v) == 0 &&
        (nodes = calloc(v.npods + 1, sizeof(*nodes)))) {
        for (size_t k = 0; k < v.npods; k++)
            if (v.pods[k]->operand == i && v.pods[k]->node)
                nodes[n++] = v.pods[k]->node;
        qsort(nodes, n, sizeof(*nodes), cmp_node); /* each node once (a pod replaced) */
        size_t u = 0;
        for (size_t k = 0; k < n; k++)
            if (!u || strcmp(nodes[u - 1], nodes[k]))
                nodes[u++] = nodes[k];
        go = gpuop_ctl_draclaims_clear(c->draclaims, c->key, c->deleting, nodes, u);
    }
    free(nodes);
    gpuop_caches_view_free(&v);
    char obj[CTL_OBJ_MAX];
    if (!go)
        gpuop_debug(ds_obj(c, i, obj, sizeof(obj)), "kept until no pod on its nodes holds a claim");
    return go;
}

/* ---- the per-OS DaemonSets of one operand (SPEC 4b) ---- */

/* The record of DaemonSet name, made when make is set; NULL when there is
 * none (or no room: then the DaemonSet is applied every reconcile). */
static struct ctl_pool_applied *pool_rec(struct gpuop_controller *c, const char *name, bool make)
{
    struct ctl_pool_applied *free_rec = NULL;
    for (int k = 0; k < CTL_POOLS_MAX; k++) {
        if (!strcmp(c->apply.pool_applied[k].name, name))
            return &c->apply.pool_applied[k];
        if (!free_rec && !c->apply.pool_applied[k].name[0])
            free_rec = &c->apply.pool_applied[k];
    }
    if (!make || !free_rec)
        return NULL;
    memset(free_rec, 0, sizeof(*free_rec));
    snprintf(free_rec->name, sizeof(free_rec->name), "%s", name);
    return free_rec;
}

/* One pool op ended: the operand is settled when the last one has. */
static void pool_settle(struct gpuop_controller *c)
{
    int i = c->apply.pool_operand;
    if (c->apply.pool_pending > 0 || i < 0)
        return;
    if (!c->apply.pool_failed)
        c->apply.res[i].state = GPUOP_APPLY_CURRENT;
    c->apply.pool_operand = -1;
}

static void pool_failed(struct gpuop_controller *c, int state, const char *name,
                        const struct gpuop_err *e)
{
    int i = c->apply.pool_operand;
    if (i >= 0 && !c->apply.pool_failed)
        set_failed(&c->apply.res[i], state, e); /* the first failure is the one said */
    c->apply.pool_failed = true;
    gpuop_ctl_fail(c, name, e);
}

static void pool_apply_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct ctl_op *o = arg;
    struct gpuop_controller *c = o->c;
    struct ctl_pool_applied *r = &c->apply.pool_applied[o->slot];
    char obj[CTL_OBJ_MAX];
    snprintf(obj, sizeof(obj), "daemonset/%s/%s", c->ns, r->name);
    c->apply.pool_pending--;
    if (rc == 0 && answer_stale(o, &r->a)) {
        gpuop_info(obj, "applied DaemonSet, deleted since: applied again");
    } else if (rc == 0) {
        r->a.body_hash = o->body_hash;
        r->a.generation =
            json_integer_value(json_object_get(json_object_get(body, "metadata"), "generation"));
        r->a.meta_hash = gpuop_caches_meta_hash(body);
        r->a.rejected_hash = 0;
        gpuop_info(obj, "applied DaemonSet (generation %lld)", r->a.generation);
    } else if (rc != GPUOP_ECANCELED) {
        struct gpuop_apply_result tmp;
        set_failed(&tmp, GPUOP_APPLY_FAILED, err);
        remember_refusal(&r->a, o->body_hash, &tmp);
        gpuop_debug(obj, "apply failed: %s", err->message);
        pool_failed(c, GPUOP_APPLY_FAILED, r->name, err);
    }
    pool_settle(c);
    gpuop_ctl_op_end(o);
}

static void pool_delete_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct ctl_op *o = arg;
    struct gpuop_controller *c = o->c;
    struct ctl_pool_applied *r = &c->apply.pool_applied[o->slot];
    char obj[CTL_OBJ_MAX];
    (void)body;
    snprintf(obj, sizeof(obj), "daemonset/%s/%s", c->ns, r->name);
    c->apply.pool_pending--;
    if (rc == 0 || rc == GPUOP_ENOTFOUND) {
        gpuop_info(obj, "deleted DaemonSet (no GPU node of its OS pool, or the driver image "
                        "changed between per-OS and one reference)");
        forget_applied(&r->a);
        r->deleted = true; /* the record goes when the watch shows it gone */
    } else if (rc != GPUOP_ECANCELED) {
        pool_failed(c, GPUOP_APPLY_DELETE_FAILED, r->name, err);
    }
    pool_settle(c);
    gpuop_ctl_op_end(o);
}

/* Applies one DaemonSet (new ds, released here) of operand i under its
 * pool record; as apply_operand, by the record. */
static void pool_apply(struct gpuop_controller *c, int i, json_t *ds, const char *name)
{
    struct gpuop_err e;
    char *body = ds ? json_dumps(ds, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(ds);
    struct ctl_pool_applied *r = pool_rec(c, name, true);
    if (!body || !r) {
        gpuop_err_set(&e, body ? GPUOP_ETOOBIG : GPUOP_ENOMEM, NULL, "%s",
                      body ? "too many OS pools' DaemonSets" : gpuop_strerror(GPUOP_ENOMEM));
        gpuop_json_free(body);
        pool_failed(c, GPUOP_APPLY_FAILED, name, &e);
        return;
    }
    r->deleted = false; /* wanted again: applied (its record was cleared by the delete) */
    uint64_t h = gpuop_hash_str(body);
    const struct gpuop_caches_ds *live = gpuop_caches_ds(c->caches, name);
    char obj[CTL_OBJ_MAX];
    snprintf(obj, sizeof(obj), "daemonset/%s/%s", c->ns, name);
    if (being_deleted(live, obj) ||
        (r->a.body_hash == h && (!live || (live->ds.generation == r->a.generation &&
                                           live->meta_hash == r->a.meta_hash)))) {
        gpuop_json_free(body);
        return; /* in line with the policy, or re-created once gone */
    }
    struct gpuop_apply_result tmp;
    if (still_refused(c, &r->a, h, &tmp, &e)) {
        gpuop_json_free(body);
        pool_failed(c, GPUOP_APPLY_FAILED, name, &e);
        return;
    }
    if (live && r->a.body_hash == h)
        gpuop_info(obj, "DaemonSet changed outside the policy; putting it back");
    struct ctl_op *op = NULL;
    int rc = ds_send(c, i, name, h, body, pool_apply_done, &op);
    gpuop_json_free(body);
    if (rc < 0) {
        gpuop_err_set(&e, rc, NULL, "%s", gpuop_strerror(rc));
        pool_failed(c, GPUOP_APPLY_FAILED, name, &e);
        return;
    }
    op->slot = (int)(r - c->apply.pool_applied);
    op->gone = r->a.gone;
    c->apply.pool_pending++;
}

static void pool_delete(struct gpuop_controller *c, int i, const char *name)
{
    struct gpuop_err e;
    struct ctl_pool_applied *r = pool_rec(c, name, true);
    struct ctl_op *op = NULL;
    int rc = r ? ds_send(c, i, name, 0, NULL, pool_delete_done, &op) : GPUOP_ETOOBIG;
    if (rc < 0) {
        gpuop_err_set(&e, rc, NULL, "%s", gpuop_strerror(rc));
        pool_failed(c, GPUOP_APPLY_DELETE_FAILED, name, &e);
        return;
    }
    op->slot = (int)(r - c->apply.pool_applied);
    c->apply.pool_pending++;
}

/* Operand i's DaemonSets by OS pool, or (per_os false, or the operand
 * disabled: want false) its pools' DaemonSets deleted. Every cached
 * DaemonSet of the operand that is not wanted is deleted, the plain one
 * included when per_os (not when !per_os: apply_operand and delete_operand
 * look after it). Returns true when operand i is settled here (the
 * per-OS case); false leaves the plain DaemonSet to the caller. */
static bool pools_step(struct gpuop_controller *c, int i, bool want)
{
    const struct gpuop_operand *od = gpuop_operand_get(i);
    bool per_os = want && gpuop_render_per_os(&c->policy, i);
    struct gpuop_caches_view v = {0};
    struct gpuop_ospool pools[GPUOP_OSPOOL_MAX];
    size_t npools = 0, dropped = 0;
    char name[GPUOP_RENDER_NAME_MAX], obj[CTL_OBJ_MAX];

    if (!od->per_os)
        return false;
    if (gpuop_caches_view(c->caches, &v) < 0) {
        if (per_os)
            fail_now(c, i, GPUOP_APPLY_FAILED, GPUOP_ENOMEM);
        return per_os;
    }
    if (per_os) {
        c->apply.pool_operand = i;
        c->apply.pool_failed = false;
        npools = gpuop_ospool_collect_by(v.nodes, v.nnodes, gpuop_render_kernel_wanted, &c->policy,
                                         pools, GPUOP_OSPOOL_MAX, &dropped);
        npools = gpuop_render_pools(&c->policy, pools, npools); /* the driver pools' */
        if (dropped)
            gpuop_warn(c->kobj,
                       "%zu GPU node(s) are in OS pools beyond the first %d: no %s "
                       "DaemonSet for them",
                       dropped, GPUOP_OSPOOL_MAX, od->ds_name);
    }
    /* the unwanted ones first: a pool gone, or the other way of naming */
    for (size_t k = 0; k < v.nds; k++) {
        const char *dn = v.ds[k]->name;
        if (gpuop_operand_by_ds(dn) != i || (!per_os && !strcmp(dn, od->ds_name)))
            continue;
        bool keep = false;
        for (size_t j = 0; per_os && j < npools && !keep; j++) {
            gpuop_render_ds_name(&c->policy, i, &pools[j], name, sizeof(name));
            keep = !strcmp(name, dn);
        }
        const struct ctl_pool_applied *rec = pool_rec(c, dn, false);
        if (!keep && !(rec && rec->deleted) && !v.ds[k]->deleting) {
            if (per_os || strcmp(dn, od->ds_name))
                pool_delete(c, i, dn);
        }
    }
    for (size_t j = 0; j < npools; j++) {
        if (gpuop_policy_pool_draining(&c->policy, pools[j].dpool))
            continue; /* kept as it runs: its spec is gone (draining.c) */
        gpuop_render_ds_name(&c->policy, i, &pools[j], name, sizeof(name));
        pool_apply(c, i, gpuop_render_daemonset_os(&c->policy, i, &pools[j], c->ns), name);
    }
    gpuop_caches_view_free(&v);
    if (per_os) {
        snprintf(obj, sizeof(obj), "daemonset/%s/%s-*", c->ns, od->ds_name);
        gpuop_debug(obj, "%zu OS pool(s)", npools);
        pool_settle(c);
    }
    return per_os;
}

/* ---- the operands' ServiceAccount ---- */

static void sa_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct ctl_op *o = arg;
    struct gpuop_controller *c = o->c;
    char obj[CTL_OBJ_MAX];
    (void)body;
    snprintf(obj, sizeof(obj), "serviceaccount/%s/%s", c->ns, GPUOP_OPERAND_SA);
    if (rc == 0 && answer_stale(o, &c->apply.sa_applied)) {
        c->apply.sa.state = GPUOP_APPLY_CURRENT; /* the deletion queued the next stage */
        gpuop_info(obj, "applied ServiceAccount, deleted since: applied again");
    } else if (rc == 0) {
        c->apply.sa_applied.body_hash = o->body_hash;
        c->apply.sa_applied.rejected_hash = 0;
        c->apply.sa.state = GPUOP_APPLY_CURRENT;
        gpuop_info(obj, "applied ServiceAccount");
    } else if (rc != GPUOP_ECANCELED) {
        set_failed(&c->apply.sa, GPUOP_APPLY_FAILED, err);
        remember_refusal(&c->apply.sa_applied, o->body_hash, &c->apply.sa);
        gpuop_ctl_fail(c, "ServiceAccount " GPUOP_OPERAND_SA, err);
    }
    gpuop_ctl_op_end(o);
}

/* The ServiceAccount operand pods run as, owned by the policy (new), or
 * NULL on out-of-memory. */
static json_t *render_sa(const struct gpuop_controller *c)
{
    json_t *labels =
        json_pack("{s:s, s:s, s:s}", GPUOP_LABEL_NAME, GPUOP_MANAGER, GPUOP_LABEL_MANAGED_BY,
                  GPUOP_MANAGER, GPUOP_LABEL_PART_OF, GPUOP_MANAGER);
    json_t *md = labels ? json_pack("{s:s, s:s, s:o}", "name", GPUOP_OPERAND_SA, "namespace", c->ns,
                                    "labels", labels)
                        : NULL;
    if (md && c->policy.uid && c->policy.name) {
        json_t *ref = json_pack("[{s:s, s:s, s:s, s:s, s:b, s:b}]", "apiVersion", GPUOP_API_VERSION,
                                "kind", GPUOP_KIND, "name", c->policy.name, "uid", c->policy.uid,
                                "controller", 1, "blockOwnerDeletion", 1);
        if (!ref || json_object_set_new(md, "ownerReferences", ref) < 0) {
            json_decref(md);
            md = NULL;
        }
    }
    return md ? json_pack("{s:s, s:s, s:o, s:b}", "apiVersion", "v1", "kind", "ServiceAccount",
                          "metadata", md, "automountServiceAccountToken", 0)
              : NULL;
}

static void apply_sa(struct gpuop_controller *c)
{
    json_t *sa = render_sa(c);
    char *body = sa ? json_dumps(sa, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(sa);
    struct gpuop_err e;
    if (!body) {
        gpuop_err_set(&e, GPUOP_ENOMEM, NULL, "%s", gpuop_strerror(GPUOP_ENOMEM));
        set_failed(&c->apply.sa, GPUOP_APPLY_FAILED, &e);
        gpuop_ctl_fail(c, "ServiceAccount " GPUOP_OPERAND_SA, &e);
        return;
    }
    uint64_t h = gpuop_hash_str(body);
    if (h == c->apply.sa_applied.body_hash) { /* a delete clears it: gpuop_ctl_apply_gone */
        gpuop_json_free(body);
        c->apply.sa.state = GPUOP_APPLY_CURRENT;
        return;
    }
    if (still_refused(c, &c->apply.sa_applied, h, &c->apply.sa, &e)) {
        gpuop_json_free(body);
        gpuop_ctl_fail(c, "ServiceAccount " GPUOP_OPERAND_SA, &e);
        return;
    }
    char *path = gpuop_ctl_apply_path("v1", c->ns, "serviceaccounts", GPUOP_OPERAND_SA, NULL);
    struct ctl_op *op = NULL;
    int rc = path ? gpuop_ctl_send(c,
                                   &(struct ctl_send){.kind = OP_SA,
                                                      .operand = -1,
                                                      .body_hash = h,
                                                      .verb = GPUOP_KUBE_PATCH,
                                                      .path = path,
                                                      .ctype = GPUOP_CT_APPLY,
                                                      .body = body,
                                                      .done = sa_done},
                                   &op)
                  : GPUOP_ENOMEM;
    if (rc == 0)
        op->gone = c->apply.sa_applied.gone;
    free(path);
    gpuop_json_free(body);
    if (rc < 0) {
        gpuop_err_set(&e, rc, NULL, "%s", gpuop_strerror(rc));
        set_failed(&c->apply.sa, GPUOP_APPLY_FAILED, &e);
        gpuop_ctl_fail(c, "ServiceAccount " GPUOP_OPERAND_SA, &e);
    }
}

/* ---- the objects beside the DaemonSets (gpuop_render_extra) ---- */

/* The RuntimeClass, the default MIG config, the DCGM Services and the
 * exporter's ServiceMonitor: applied by server-side apply when the policy wants one and its body
 * changed since the last answer, deleted once when it does not and this
 * process applied it (a 404 is as good as a delete). They are not watched:
 * one deleted by hand comes back when its body changes or gpuop restarts,
 * and one left from before a restart stays until the policy, its owner, is
 * deleted. A refused body waits for
 * the key's backoff, as a DaemonSet's does. The ServiceMonitor's kind may
 * not exist (no Prometheus Operator): its 404 is no failure, the status
 * says so (extras_absent), and it is tried again. */

static void extra_label(const struct gpuop_render_extra *x, const char *name, char *buf, size_t len)
{
    snprintf(buf, len, "%s %s", x->kind, name);
}

/* The name extra i was last applied under by this process (borrowed). */
static const char *extra_applied_name(const struct gpuop_controller *c, int i)
{
    return c->apply.extras_name[i][0] ? c->apply.extras_name[i] : gpuop_render_extra_get(i)->name;
}

/* Sends the DELETE of extra i under name; body_hash CTL_EXTRA_DELETED (not
 * wanted) or CTL_EXTRA_RENAMED (its old name). Returns 0 or a negative
 * code. */
static int extra_delete(struct gpuop_controller *c, int i, const char *name, uint64_t body_hash);

static void extra_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct ctl_op *o = arg;
    struct gpuop_controller *c = o->c;
    int i = o->operand;
    const struct gpuop_render_extra *x = gpuop_render_extra_get(i);
    struct ctl_applied *a = &c->apply.extras_applied[i];
    bool renamed = o->body_hash == CTL_EXTRA_RENAMED;
    bool del = renamed || o->body_hash == CTL_EXTRA_DELETED;
    char what[CTL_OBJ_MAX];
    (void)body;
    extra_label(x,
                renamed ? c->apply.extras_old[i]
                : del   ? extra_applied_name(c, i)
                        : c->apply.extras_sending[i],
                what, sizeof(what));
    if (renamed) {
        if (rc == 0 || rc == GPUOP_ENOTFOUND) {
            if (rc == 0)
                gpuop_info(what, "deleted (spec.operator.runtimeClass names another)");
        } else if (rc != GPUOP_ECANCELED) {
            gpuop_ctl_fail(c, what, err);
        }
    } else if (!del && rc == GPUOP_ENOTFOUND && x->crd) {
        /* its kind is unknown to the API server: the CRD is not installed;
           no failure, a condition says so, tried again later */
        if (!c->apply.extras_absent[i])
            gpuop_info(what,
                       "not applied: the API server does not serve %s; trying again every %d s",
                       x->crd, CTL_CRD_RECHECK_MS / 1000);
        c->apply.extras_absent[i] = true;
        if (c->key) /* the apply reconcile's */
            (void)gpuop_queue_add_after(c->queue, c->key, CTL_CRD_RECHECK_MS);
    } else if (rc == 0 || (del && rc == GPUOP_ENOTFOUND)) {
        c->apply.extras_absent[i] = false;
        bool was_ours = a->body_hash != 0 && a->body_hash != CTL_EXTRA_DELETED;
        char old[GPUOP_RENDER_NAME_MAX];
        snprintf(old, sizeof(old), "%s", extra_applied_name(c, i));
        memset(a, 0, sizeof(*a));
        a->body_hash = o->body_hash;
        if (rc == 0)
            gpuop_info(what, del ? "deleted (not wanted by the policy)" : "applied");
        if (del) {
            c->apply.extras_name[i][0] = '\0';
        } else {
            memcpy(c->apply.extras_name[i], c->apply.extras_sending[i],
                   sizeof(c->apply.extras_name[i]));
            /* applied under a new name: the one this process applied before
             * goes (its answer is logged under the old name) */
            if (was_ours && strcmp(old, c->apply.extras_name[i])) {
                memcpy(c->apply.extras_old[i], old, sizeof(c->apply.extras_old[i]));
                int drc = extra_delete(c, i, old, CTL_EXTRA_RENAMED);
                if (drc < 0) {
                    struct gpuop_err e;
                    gpuop_err_set(&e, drc, NULL, "%s", gpuop_strerror(drc));
                    gpuop_ctl_fail(c, what, &e);
                }
            }
        }
    } else if (rc != GPUOP_ECANCELED) {
        struct gpuop_apply_result r;
        set_failed(&r, GPUOP_APPLY_FAILED, err);
        if (!del)
            remember_refusal(a, o->body_hash, &r);
        gpuop_ctl_fail(c, what, err);
    }
    gpuop_ctl_op_end(o);
}

static int extra_delete(struct gpuop_controller *c, int i, const char *name, uint64_t body_hash)
{
    const struct gpuop_render_extra *x = gpuop_render_extra_get(i);
    const struct gpuop_kube_ref ref = {.group_version = x->group_version,
                                       .ns = x->namespaced ? c->ns : NULL,
                                       .resource = x->resource,
                                       .name = name};
    char *path = gpuop_kube_path(&ref, NULL, 0);
    int rc = !path ? GPUOP_ENOMEM
                   : gpuop_ctl_send(c,
                                    &(struct ctl_send){.kind = OP_EXTRA,
                                                       .operand = i,
                                                       .body_hash = body_hash,
                                                       .verb = GPUOP_KUBE_DELETE,
                                                       .path = path,
                                                       .done = extra_done},
                                    NULL);
    free(path);
    return rc;
}

static void apply_extra(struct gpuop_controller *c, int i)
{
    const struct gpuop_render_extra *x = gpuop_render_extra_get(i);
    struct ctl_applied *a = &c->apply.extras_applied[i];
    char what[CTL_OBJ_MAX], name[GPUOP_RENDER_NAME_MAX];
    json_t *obj = NULL;
    struct gpuop_err e;
    if (gpuop_render_extra_held(&c->policy, i))
        return; /* kept as it is: a problem in its operand's spec holds it */
    int rc = gpuop_render_extra(&c->policy, c->ns, i, &obj);
    const char *want = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
    /* wanted: the name it is rendered under; not wanted: the name applied */
    snprintf(name, sizeof(name), "%s", want ? want : extra_applied_name(c, i));
    extra_label(x, name, what, sizeof(what));
    char *body = obj ? json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    if (rc == 0 && obj && !body)
        rc = GPUOP_ENOMEM;
    json_decref(obj);
    uint64_t h = body ? gpuop_hash_str(body) : CTL_EXTRA_DELETED;
    if (h <= CTL_EXTRA_RENAMED && body)
        h = CTL_EXTRA_RENAMED + 1; /* a body never hashes to a mark */
    struct gpuop_apply_result refused;
    /* deleted only when this process applied it: a ConfigMap of that name
     * that a person made while gpuop did not want its own stays theirs */
    bool ours = a->body_hash != 0 && a->body_hash != CTL_EXTRA_DELETED;
    if (!body && !ours)
        h = a->body_hash; /* nothing to do */
    if (!body)
        c->apply.extras_absent[i] = false; /* not wanted: nothing to say of its CRD */
    if (rc == 0 && a->body_hash != h && !(body && still_refused(c, a, h, &refused, &e))) {
        if (body) {
            char *path = gpuop_ctl_apply_path(x->group_version, x->namespaced ? c->ns : NULL,
                                              x->resource, name, NULL);
            snprintf(c->apply.extras_sending[i], sizeof(c->apply.extras_sending[i]), "%s", name);
            rc = !path ? GPUOP_ENOMEM
                       : gpuop_ctl_send(c,
                                        &(struct ctl_send){.kind = OP_EXTRA,
                                                           .operand = i,
                                                           .body_hash = h,
                                                           .verb = GPUOP_KUBE_PATCH,
                                                           .path = path,
                                                           .ctype = GPUOP_CT_APPLY,
                                                           .body = body,
                                                           .done = extra_done},
                                        NULL);
            free(path);
        } else {
            rc = extra_delete(c, i, name, CTL_EXTRA_DELETED);
        }
    } else if (rc == 0 && a->body_hash != h) {
        gpuop_ctl_fail(c, what, &e); /* refused before; not resent before the backoff */
    }
    gpuop_json_free(body);
    if (rc < 0) {
        gpuop_err_set(&e, rc, NULL, "%s", gpuop_strerror(rc));
        gpuop_ctl_fail(c, what, &e);
    }
}

/* ---- the stage ---- */

enum gate { GATE_WAIT, GATE_OPEN, GATE_BLOCKED };

/* Whether operand i may be applied now; *root: the operand whose failure
 * blocks it. */
static enum gate gate(const struct gpuop_controller *c, int i, int *root)
{
    for (int depth = 0; depth < GPUOP_OPERAND_MAX; depth++) {
        int p = gpuop_policy_prereq(&c->policy, i);
        if (p < 0)
            return GATE_OPEN;
        if (!c->policy.operands[p].enabled) {
            i = p; /* host-provided: its own prerequisite decides */
            continue;
        }
        switch (c->apply.res[p].state) {
        case GPUOP_APPLY_CURRENT:
            return GATE_OPEN;
        case GPUOP_APPLY_FAILED:
            *root = p;
            return GATE_BLOCKED;
        case GPUOP_APPLY_BLOCKED:
            *root = c->apply.res[p].blocked_by;
            return GATE_BLOCKED;
        default:
            return GATE_WAIT;
        }
    }
    return GATE_OPEN; /* a cycle in the table: not reachable */
}

/* Some DaemonSet of operand i is in the caches (a per-OS operand's pools
 * included). */
static bool operand_runs(const struct gpuop_controller *c, int i)
{
    struct gpuop_caches_view v = {0};
    bool found = false;
    if (gpuop_caches_view(c->caches, &v) < 0)
        return true; /* when in doubt, touch nothing */
    for (size_t k = 0; k < v.nds && !found; k++)
        found = v.ds[k] && v.ds[k]->name && gpuop_operand_by_ds(v.ds[k]->name) == i;
    gpuop_caches_view_free(&v);
    return found;
}

/* One record's DaemonSet (name) is in the caches at its applied generation. */
static bool seen_at(const struct gpuop_controller *c, const char *name, const struct ctl_applied *a)
{
    if (!a->body_hash || a->generation <= 0)
        return true; /* nothing applied (or no answer yet): nothing to wait for */
    const struct gpuop_caches_ds *live = gpuop_caches_ds(c->caches, name);
    return live && live->ds.generation >= a->generation;
}

bool gpuop_ctl_apply_driver_seen(const struct gpuop_controller *c)
{
    int d = gpuop_operand_by_key("driver");
    if (d < 0 || !seen_at(c, gpuop_operand_get(d)->ds_name, &c->apply.applied[d]))
        return d < 0;
    for (size_t k = 0; k < sizeof(c->apply.pool_applied) / sizeof(c->apply.pool_applied[0]); k++)
        if (c->apply.pool_applied[k].name[0] && !c->apply.pool_applied[k].deleted &&
            !seen_at(c, c->apply.pool_applied[k].name, &c->apply.pool_applied[k].a))
            return false;
    return true;
}

/* The stage's end, every other answer in: GPUOP_FINALIZER_DRA wanted
 * while the DRA driver is enabled or its plugin's DaemonSet is still
 * there (kept while it is being switched off, or the policy deleted:
 * begin_apply switches it off then); not wanted once that DaemonSet is
 * gone, or its delete was answered in this stage (finalizer.c). */
static void finalizer_end(struct gpuop_controller *c)
{
    int i = gpuop_operand_by_name("dra-driver");
    json_t *obj = gpuop_caches_policy(c->caches, c->name);
    if (i < 0 || !obj)
        return;
    const struct gpuop_caches_ds *live = gpuop_caches_ds(c->caches, gpuop_operand_get(i)->ds_name);
    bool there = live && !live->ds.deleting && c->apply.res[i].state != GPUOP_APPLY_ABSENT;
    bool want = there || c->policy.operands[i].enabled;
    if (c->deleting && want)
        return; /* being deleted: only ever removed (no new finalizer is taken then) */
    gpuop_ctl_finalizer_set(c, obj, want);
}

void gpuop_ctl_apply_step(struct gpuop_controller *c)
{
    if (!c->leader)
        return; /* a follower observes only: every result stays NONE */
    if (!c->apply.sa_started) {
        c->stats.apply_stages++;
        c->apply.sa_started = true;
        apply_sa(c);
    }
    if (!c->apply.extras_started) {
        c->apply.extras_started = true;
        for (int i = 0; i < gpuop_render_extra_count(); i++)
            apply_extra(c, i);
    }
    bool progress = true;
    while (progress && !c->closing) {
        progress = false;
        for (int i = 0; i < gpuop_operand_count(); i++) {
            if (c->apply.started[i])
                continue;
            if (!c->policy.operands[i].enabled) {
                c->apply.started[i] = progress = true;
                pools_step(c, i, false);
                if (i != gpuop_operand_by_name("dra-driver") || dra_plugin_may_go(c, i))
                    delete_operand(c, i);
                continue;
            }
            if (i == gpuop_operand_by_name("dra-driver"))
                gpuop_ctl_draclaims_reset(c->draclaims); /* on: nothing waits */
            int root = -1;
            enum gate g = gate(c, i, &root);
            if (g == GATE_WAIT)
                continue;
            c->apply.started[i] = progress = true;
            if (g == GATE_BLOCKED) {
                c->apply.res[i].state = GPUOP_APPLY_BLOCKED;
                c->apply.res[i].blocked_by = (signed char)root;
                c->ops.failed++;
            } else if (c->policy.operands[i].held &&
                       (c->policy.operands[i].hold_absent || operand_runs(c, i))) {
                /* an image field refused: its DaemonSets kept as they run,
                   never the default rolled out (the problem names it); the
                   DRA driver's not created either (hold_absent) */
                c->apply.res[i].state = GPUOP_APPLY_CURRENT;
            } else if (!pools_step(c, i, true)) {
                apply_operand(c, i);
            }
        }
    }
    if (!c->apply.fin_started && !c->closing && c->ops.pending == 0) {
        c->apply.fin_started = true; /* every answer in: the stage's last op */
        finalizer_end(c);
    }
}

void gpuop_ctl_apply_backoff(struct gpuop_controller *c, int64_t delay_ms)
{
    uint64_t d =
        delay_ms > BACKOFF_CLOCK_SLACK_MS ? (uint64_t)delay_ms - BACKOFF_CLOCK_SLACK_MS : 0;
    uint64_t at = gpuop_clock_ms() + d;
    for (int i = 0; i < gpuop_operand_count(); i++)
        if (c->apply.applied[i].rejected_now)
            c->apply.applied[i].retry_at_ms = at;
    if (c->apply.sa_applied.rejected_now)
        c->apply.sa_applied.retry_at_ms = at;
    for (int i = 0; i < GPUOP_RENDER_EXTRA_MAX; i++)
        if (c->apply.extras_applied[i].rejected_now)
            c->apply.extras_applied[i].retry_at_ms = at;
    for (int k = 0; k < CTL_POOLS_MAX; k++)
        if (c->apply.pool_applied[k].a.rejected_now)
            c->apply.pool_applied[k].a.retry_at_ms = at;
}

void gpuop_ctl_apply_gone(struct gpuop_controller *c, enum gpuop_caches_kind kind, const char *key)
{
    int op = kind == GPUOP_CACHES_DS ? gpuop_operand_by_ds(key) : -1;
    struct ctl_pool_applied *r = op >= 0 ? pool_rec(c, key, false) : NULL;
    if (r && r->deleted) {
        unsigned gone = r->a.gone + 1;
        memset(r, 0, sizeof(*r)); /* deleted by gpuop and now gone: the slot is free */
        r->a.gone = gone;
    } else if (r) {
        forget_applied(&r->a); /* an OS pool's: applied again if still wanted */
    }
    if (op >= 0 && !strcmp(key, gpuop_operand_get(op)->ds_name))
        forget_applied(&c->apply.applied[op]);
    else if (kind == GPUOP_CACHES_SA)
        forget_applied(&c->apply.sa_applied);
}
