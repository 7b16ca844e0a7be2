/*
 * controller.c - reconcile(key) for GpuPolicies (see controller.h).
 *
 * One reconcile runs at a time; it is asynchronous because it talks to the
 * API server:
 *
 *   begin: policy from cache -> active? -> parse/validate
 *     -> apply each enabled operand's DaemonSet / delete disabled ones
 *   ops done: findings from the caches -> status -> patch /status if changed
 *   finish: forget or back off the key, take the next one.
 *
 * Drift detection without a request per reconcile: for each DaemonSet we
 * remember the hash of the body last applied and the generation and
 * metadata hash the server answered with. A reconcile applies again only
 * when the desired body changed, or the cached DaemonSet's generation or
 * metadata hash moved (someone edited it), or it is absent. A quiet cluster
 * therefore sees no request at all.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuop/hash.h"
#include "gpuop/analysis.h"
#include "gpuop/controller.h"
#include "gpuop/events.h"
#include "gpuop/log.h"
#include "gpuop/map.h"
#include "gpuop/trim.h"
#include "gpuop/policy.h"
#include "gpuop/queue.h"
#include "gpuop/render.h"
#include "gpuop/status.h"
#include "gpuop/caches.h"

struct applied {
    uint64_t body_hash; /* 0: nothing applied yet */
    long long generation;
    uint64_t meta_hash;
};

enum op_kind { OP_APPLY, OP_DELETE, OP_STATUS };

struct op {
    struct gpuop_controller *c;
    struct gpuop_kube_req *req;
    enum op_kind kind;
    int operand;
    uint64_t body_hash;
    struct op *next;
};

struct gpuop_controller {
    uv_loop_t *loop;
    uv_timer_t trim; /* the heap trim a busy moment had to put off (trim.h) */
    struct gpuop_kube *kube;
    char *ns;
    bool write;
    bool closing;
    struct gpuop_caches *world;
    struct gpuop_queue *queue;
    struct gpuop_events *events;

    /* the reconcile in progress */
    char *key;
    struct gpuop_policy policy;
    bool have_policy;
    bool ignored;
    int pending; /* API operations in flight */
    int failed;  /* of which failed */
    struct gpuop_err err;
    uint64_t started_ns;

    struct applied applied[GPUOP_OPERAND_MAX];
    char applied_uid[64]; /* policy uid the applied[] records are for */
    struct op *ops;       /* in flight */

    struct gpuop_controller_stats stats;
    struct gpuop_controller_summary summary;
    gpuop_controller_reconciled_cb on_reconciled;
    void *cb_arg;
    /* key -> uint64_t * (uv_hrtime of the first event that dirtied it
     * since its last successful reconcile) */
    struct gpuop_map dirty_since;
    uint64_t origin_ns; /* of the reconcile in progress; 0: none */
    char kobj[300];     /* "gpupolicy/<key>" for logs */
    int open;           /* children still closing */
    void (*close_cb)(void *);
    void *close_arg;
};

static void next(struct gpuop_controller *c);
static void finish(struct gpuop_controller *c, bool ok);
static void after_ops(struct gpuop_controller *c);

static uint64_t hash_str(const char *s)
{
    return gpuop_hash_str(s);
}

static long long now_s(void)
{
    return (long long)time(NULL);
}

/* "daemonset/<ns>/<name>" for logs. */
static const char *ds_obj(const struct gpuop_controller *c, int operand, char *buf, size_t len)
{
    snprintf(buf, len, "daemonset/%s/%s", c->ns, gpuop_operand_get(operand)->ds_name);
    return buf;
}

/* Remembers when key was first dirtied (keeps an earlier time). */
static void mark_dirty(struct gpuop_controller *c, const char *key, uint64_t t)
{
    uint64_t *v = gpuop_map_get(&c->dirty_since, key);
    if (v) {
        if (t < *v)
            *v = t;
        return;
    }
    v = malloc(sizeof(*v));
    if (!v)
        return;
    *v = t;
    if (gpuop_map_put(&c->dirty_since, key, v, NULL) < 0)
        free(v);
}

/* ---- operations in flight ---- */

static struct op *op_new(struct gpuop_controller *c, enum op_kind kind, int operand)
{
    struct op *o = calloc(1, sizeof(*o));
    if (!o)
        return NULL;
    o->c = c;
    o->kind = kind;
    o->operand = operand;
    o->next = c->ops;
    c->ops = o;
    c->pending++;
    return o;
}

static void op_end(struct op *o)
{
    struct gpuop_controller *c = o->c;
    for (struct op **p = &c->ops; *p; p = &(*p)->next)
        if (*p == o) {
            *p = o->next;
            break;
        }
    free(o);
    c->pending--;
}

/* Starts one API operation of the reconcile; body (may be NULL) is copied.
 * The op ends in done, or here when the request cannot start. */
static int send_op(struct gpuop_controller *c, enum op_kind kind, int operand, uint64_t body_hash,
                   const char *method, const char *path, const char *ctype, const char *body,
                   gpuop_kube_done_cb done)
{
    struct op *o = op_new(c, kind, operand);
    if (!o)
        return GPUOP_ENOMEM;
    o->body_hash = body_hash;
    int rc = gpuop_kube_request(c->kube, method, path, ctype, body, body ? strlen(body) : 0, 0,
                                done, o, &o->req);
    if (rc < 0)
        op_end(o);
    return rc;
}

static void note_failure(struct gpuop_controller *c, const char *what, const struct gpuop_err *e)
{
    c->failed++;
    if (c->err.rc == 0) {
        c->err = *e;
        c->err.rc = e->rc ? e->rc : GPUOP_EHTTP;
        char buf[sizeof(c->err.message) + 128];
        snprintf(buf, sizeof(buf), "%.120s: %s", what, e->message);
        size_t n = strnlen(buf, sizeof(c->err.message) - 1);
        memcpy(c->err.message, buf, n);
        c->err.message[n] = '\0';
    }
}

/* ---- DaemonSets ---- */

static void apply_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct op *o = arg;
    struct gpuop_controller *c = o->c;
    const struct gpuop_operand *od = gpuop_operand_get(o->operand);
    char obj[300];
    ds_obj(c, o->operand, obj, sizeof(obj));
    if (rc == 0) {
        struct applied *a = &c->applied[o->operand];
        a->body_hash = o->body_hash;
        a->generation =
            json_integer_value(json_object_get(json_object_get(body, "metadata"), "generation"));
        a->meta_hash = gpuop_caches_meta_hash(body);
        gpuop_info(obj, "applied DaemonSet (generation %lld)", a->generation);
    } else if (rc != GPUOP_ECANCELED) {
        char what[128];
        snprintf(what, sizeof(what), "apply of DaemonSet %s", od->ds_name);
        gpuop_warn(obj, "apply failed: %s", err->message);
        note_failure(c, what, err);
    }
    op_end(o);
    if (!c->closing && c->pending == 0)
        after_ops(c);
}

static void delete_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct op *o = arg;
    struct gpuop_controller *c = o->c;
    const struct gpuop_operand *od = gpuop_operand_get(o->operand);
    char obj[300];
    if (rc == 0 || rc == GPUOP_ENOTFOUND) {
        memset(&c->applied[o->operand], 0, sizeof(c->applied[0]));
        gpuop_info(ds_obj(c, o->operand, obj, sizeof(obj)), "deleted DaemonSet (operand disabled)");
    } else if (rc != GPUOP_ECANCELED) {
        char what[128];
        snprintf(what, sizeof(what), "delete of DaemonSet %s", od->ds_name);
        note_failure(c, what, err);
    }
    op_end(o);
    if (!c->closing && c->pending == 0)
        after_ops(c);
}

static int apply_operand(struct gpuop_controller *c, int i)
{
    const struct gpuop_operand *od = gpuop_operand_get(i);
    json_t *ds = gpuop_render_daemonset(&c->policy, i, c->ns);
    if (!ds)
        return GPUOP_ENOMEM;
    char *body = json_dumps(ds, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(ds);
    if (!body)
        return GPUOP_ENOMEM;
    uint64_t h = hash_str(body);
    const struct gpuop_caches_ds *live = gpuop_caches_ds(c->world, od->ds_name);
    const struct applied *a = &c->applied[i];
    if (live && a->body_hash == h && live->ds.generation == a->generation &&
        live->meta_hash == a->meta_hash) {
        free(body);
        return 0; /* in line with the policy */
    }
    char obj[300];
    if (live && a->body_hash == h)
        gpuop_info(ds_obj(c, i, obj, sizeof(obj)),
                   "DaemonSet changed outside the policy; putting it back");
    char path[512];
    snprintf(path, sizeof(path),
             "/apis/apps/v1/namespaces/%s/daemonsets/%s?fieldManager=" GPUOP_MANAGER "&force=true",
             c->ns, od->ds_name);
    c->stats.applies++;
    int rc = send_op(c, OP_APPLY, i, h, "PATCH", path, GPUOP_CT_APPLY, body, apply_done);
    free(body);
    return rc;
}

static int delete_operand(struct gpuop_controller *c, int i)
{
    const struct gpuop_operand *od = gpuop_operand_get(i);
    if (!gpuop_caches_ds(c->world, od->ds_name))
        return 0;
    char path[512];
    snprintf(path, sizeof(path), "/apis/apps/v1/namespaces/%s/daemonsets/%s", c->ns, od->ds_name);
    c->stats.deletes++;
    return send_op(c, OP_DELETE, i, 0, "DELETE", path, NULL, NULL, delete_done);
}

/* ---- status ---- */

static void status_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct op *o = arg;
    struct gpuop_controller *c = o->c;
    if (rc < 0 && rc != GPUOP_ECANCELED) {
        gpuop_warn(c->kobj, "status update failed: %s", err->message);
        note_failure(c, "status update", err);
    }
    op_end(o);
    if (!c->closing && c->pending == 0) {
        finish(c, c->failed == 0); /* status is the last step */
        next(c);
    }
}

static int write_status(struct gpuop_controller *c, json_t *obj, json_t *status /* steals */)
{
    json_t *prev = json_object_get(obj, "status");
    if (prev && json_equal(prev, status)) {
        json_decref(status);
        return 0;
    }
    if (!c->write) {
        json_decref(status);
        return 0;
    }
    json_t *patch = json_pack("{s:s, s:s, s:{s:s}, s:o}", "apiVersion", GPUOP_API_VERSION, "kind",
                              GPUOP_KIND, "metadata", "name", c->key, "status", status);
    char *body = patch ? json_dumps(patch, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(patch);
    if (!body)
        return GPUOP_ENOMEM;
    char path[512];
    snprintf(path, sizeof(path),
             "/apis/" GPUOP_API_VERSION "/" GPUOP_PLURAL "/%s/status?fieldManager=" GPUOP_MANAGER
             "&force=true",
             c->key);
    c->stats.status_writes++;
    gpuop_info(c->kobj, "writing status");
    int rc = send_op(c, OP_STATUS, -1, 0, "PATCH", path, GPUOP_CT_APPLY, body, status_done);
    free(body);
    return rc;
}

/* ---- reconcile ---- */

static void on_trim(uv_timer_t *t)
{
    struct gpuop_controller *c = t->data;
    gpuop_trim_trim_sometimes(uv_now(c->loop));
}

/* The work's garbage back to the kernel (trim.h), once nothing is queued.
 * Trimmed too recently: later, or the last burst of a rollout would stay
 * resident. */
static void trim_after_work(struct gpuop_controller *c)
{
    if (gpuop_queue_len(c->queue) == 0 && !gpuop_trim_trim_sometimes(uv_now(c->loop)) &&
        !uv_is_active((uv_handle_t *)&c->trim))
        uv_timer_start(&c->trim, on_trim, GPUOP_MEM_TRIM_EVERY_MS, 0);
}

/* The Events of the last reconciles have gone out after it: their bodies
 * and responses are garbage too. */
static void on_events_drained(void *arg)
{
    trim_after_work(arg);
}

static void finish(struct gpuop_controller *c, bool ok)
{
    char *key = c->key;
    c->key = NULL;
    if (c->have_policy) {
        gpuop_policy_free(&c->policy);
        c->have_policy = false;
    }
    uint64_t end = uv_hrtime();
    c->stats.last_reconcile_ms = (double)(end - c->started_ns) / 1e6;
    double latency = -1;
    if (ok && c->origin_ns)
        latency = (double)(end - c->origin_ns) / 1e9;
    else if (c->origin_ns)
        mark_dirty(c, key, c->origin_ns); /* the retry still answers that event */
    c->origin_ns = 0;
    if (ok) {
        gpuop_queue_forget(c->queue, key);
    } else {
        c->stats.reconcile_errors++;
        int64_t d = gpuop_queue_add_rate_limited(c->queue, key);
        gpuop_warn(c->kobj, "reconcile failed (%s); retrying in %lld ms", c->err.message,
                   (long long)d);
    }
    if (c->on_reconciled)
        c->on_reconciled(c->cb_arg, key, ok, c->stats.last_reconcile_ms / 1e3, latency);
    gpuop_queue_done(c->queue, key);
    free(key);
    trim_after_work(c);
}

/* After the DaemonSet operations: findings and status. */
static void after_ops(struct gpuop_controller *c)
{
    json_t *obj = gpuop_caches_policy(c->world, c->key);
    if (!obj) {
        finish(c, c->failed == 0);
        next(c);
        return;
    }
    struct gpuop_status_input in = {.namespace = c->ns};
    char reason[64] = "Applied", message[700] = "";
    if (c->ignored) {
        in.ignored = true;
        in.active_policy = gpuop_caches_active(c->world);
    } else if (c->policy.nproblems > 0) {
        const struct gpuop_policy_problem *pr = &c->policy.problems[0];
        snprintf(reason, sizeof(reason), "InvalidSpec");
        snprintf(message, sizeof(message), "%s: %s%s", pr->field, pr->message,
                 c->policy.nproblems > 1 ? " (and more problems: see the operator log)" : "");
        for (int i = 0; i < c->policy.nproblems && i < GPUOP_POLICY_PROBLEMS_MAX; i++)
            gpuop_warn(c->kobj, "invalid %s: %s", c->policy.problems[i].field,
                       c->policy.problems[i].message);
    } else if (c->failed) {
        snprintf(reason, sizeof(reason), "%s", c->err.reason[0] ? c->err.reason : "ApplyFailed");
        snprintf(message, sizeof(message), "%s", c->err.message);
    } else {
        snprintf(message, sizeof(message), "every operand DaemonSet is in line with the policy");
    }
    in.reconciled = !c->failed && c->policy.nproblems == 0;
    in.reconcile_reason = reason;
    in.reconcile_message = message;

    struct gpuop_findings f = {0};
    struct gpuop_caches_view v;
    int rc = gpuop_caches_view(c->world, &v);
    if (rc == 0 && !c->ignored)
        rc =
            gpuop_analyze(&c->policy, v.nodes, v.nnodes, v.ds, v.nds, v.pods, v.npods, now_s(), &f);
    gpuop_caches_view_free(&v);
    if (rc == 0 && !c->ignored && f.next_change > now_s()) /* a grace period ends: judge again */
        (void)gpuop_queue_add_after(c->queue, c->key, (uint64_t)(f.next_change - now_s()) * 1000);
    if (rc == 0 && !c->ignored) {
        struct gpuop_controller_summary *s = &c->summary;
        memset(s, 0, sizeof(*s));
        s->valid = true;
        snprintf(s->policy, sizeof(s->policy), "%s", c->key);
        s->gpu_nodes = f.gpu_nodes;
        s->complete_nodes = f.complete_nodes;
        s->violations = f.violations;
        memcpy(s->by_kind, f.by_kind, sizeof(s->by_kind));
        memcpy(s->by_reason, f.by_reason, sizeof(s->by_reason));
        s->noperands = f.noperands;
        for (int i = 0; i < f.noperands && i < GPUOP_OPERAND_MAX; i++) {
            s->operands[i].enabled = f.operands[i].enabled;
            s->operands[i].expected = f.operands[i].expected_nodes;
            s->operands[i].running = f.operands[i].running_nodes;
        }
    } else if (c->ignored && strcmp(c->summary.policy, c->key) == 0) {
        c->summary.valid = false; /* no longer the active policy */
    }
    json_t *status = NULL;
    if (rc == 0)
        status = gpuop_status_build(&c->policy, c->ignored ? NULL : &f,
                                    json_object_get(obj, "status"), &in, now_s());
    if (rc == 0 && !c->ignored && c->write)
        gpuop_events_observe(
            c->events, c->key,
            json_string_value(json_object_get(json_object_get(obj, "metadata"), "uid")),
            c->policy.event_grace_s, &f);
    gpuop_findings_free(&f);
    if (!status) {
        gpuop_err_set(&c->err, GPUOP_ENOMEM, NULL, "out of memory building the status");
        c->failed++;
        finish(c, false);
        next(c);
        return;
    }
    rc = write_status(c, obj, status);
    if (rc < 0)
        gpuop_err_set(&c->err, rc, NULL, "cannot send the status: %s", gpuop_strerror(rc));
    if (c->pending > 0) {
        /* status_done finishes; keep the policy until then. */
        gpuop_policy_free(&c->policy);
        c->have_policy = false;
        return;
    }
    finish(c, rc == 0 && c->failed == 0);
    next(c);
}

static void begin(struct gpuop_controller *c)
{
    c->started_ns = uv_hrtime();
    c->stats.reconciles++;
    c->pending = c->failed = 0;
    gpuop_err_clear(&c->err);
    c->ignored = false;
    snprintf(c->kobj, sizeof(c->kobj), "gpupolicy/%s", c->key);
    uint64_t *since = gpuop_map_del(&c->dirty_since, c->key);
    c->origin_ns = since ? *since : 0;
    free(since);
    json_t *obj = gpuop_caches_policy(c->world, c->key);
    if (!obj) {
        if (strcmp(c->summary.policy, c->key) == 0)
            c->summary.valid = false;
        gpuop_debug(c->kobj, "policy gone; its DaemonSets go by garbage collection");
        finish(c, true);
        next(c);
        return;
    }
    const char *active = gpuop_caches_active(c->world);
    struct gpuop_err perr = {0};
    int rc = gpuop_policy_parse(obj, &c->policy, &perr);
    if (rc < 0) {
        c->err = perr;
        c->failed++;
        finish(c, false);
        next(c);
        return;
    }
    c->have_policy = true;
    if (!active || strcmp(active, c->key) != 0) {
        c->ignored = true;
        after_ops(c);
        return;
    }
    /* A different policy object (re-created, or another became active):
     * what we applied before says nothing about this one. */
    const char *uid = c->policy.uid ? c->policy.uid : "";
    if (strcmp(uid, c->applied_uid) != 0) {
        memset(c->applied, 0, sizeof(c->applied));
        snprintf(c->applied_uid, sizeof(c->applied_uid), "%s", uid);
    }
    if (c->write) {
        for (int i = 0; i < gpuop_operand_count(); i++) {
            rc = c->policy.operands[i].enabled ? apply_operand(c, i) : delete_operand(c, i);
            if (rc < 0) {
                struct gpuop_err e;
                gpuop_err_set(&e, rc, NULL, "%s", gpuop_strerror(rc));
                note_failure(c, gpuop_operand_get(i)->ds_name, &e);
            }
        }
    }
    if (c->pending == 0)
        after_ops(c);
}

/* Takes the next key if idle. */
static void next(struct gpuop_controller *c)
{
    if (c->closing || c->key || !gpuop_caches_synced(c->world))
        return;
    c->key = gpuop_queue_get(c->queue);
    if (c->key)
        begin(c);
}

static void on_ready(void *arg)
{
    next(arg);
}

/* ---- wiring ---- */

static void enqueue_all(struct gpuop_controller *c)
{
    size_t it = 0;
    const char *key;
    while (gpuop_caches_next_policy(c->world, &it, &key, NULL))
        gpuop_queue_add(c->queue, key);
}

static void on_change(void *arg, enum gpuop_caches_kind kind, const char *key)
{
    struct gpuop_controller *c = arg;
    const char *kname = kind == GPUOP_CACHES_POLICY ? "gpupolicy"
                        : kind == GPUOP_CACHES_NODE ? "node"
                        : kind == GPUOP_CACHES_DS   ? "daemonset"
                                                    : "pod";
    if (gpuop_log_enabled(GPUOP_LOG_DEBUG)) {
        char obj[300];
        snprintf(obj, sizeof(obj), "%s/%s", kname, key);
        gpuop_debug(obj, "changed");
    }
    /* Every policy's state depends on the others (the oldest is active)
     * and on every node: enqueue them all; the queue deduplicates. */
    uint64_t t = uv_hrtime();
    size_t it = 0;
    const char *pkey;
    while (gpuop_caches_next_policy(c->world, &it, &pkey, NULL)) {
        mark_dirty(c, pkey, t);
        gpuop_queue_add(c->queue, pkey);
    }
}

static void on_synced(void *arg)
{
    struct gpuop_controller *c = arg;
    gpuop_info("controller", "caches synced");
    enqueue_all(c);
    next(c);
}

int gpuop_controller_new(uv_loop_t *loop, struct gpuop_kube *kube,
                         const struct gpuop_controller_config *cfg, struct gpuop_controller **out)
{
    struct gpuop_controller *c = calloc(1, sizeof(*c));
    if (!c)
        return GPUOP_ENOMEM;
    c->loop = loop;
    c->kube = kube;
    c->write = cfg->write;
    c->on_reconciled = cfg->on_reconciled;
    c->cb_arg = cfg->arg;
    gpuop_map_init(&c->dirty_since);
    c->ns = strdup(cfg->namespace);
    struct gpuop_caches_config wc = {
        .namespace = cfg->namespace, .on_change = on_change, .on_synced = on_synced, .arg = c};
    int rc = c->ns ? gpuop_caches_new(loop, kube, &wc, &c->world) : GPUOP_ENOMEM;
    if (rc == 0)
        rc = gpuop_queue_new(loop, on_ready, c, &c->queue);
    if (rc == 0)
        rc = gpuop_events_new(kube, c->queue, &c->events);
    if (rc < 0) {
        /* Only reachable on out-of-memory at start-up; the process exits. */
        free(c->ns);
        free(c);
        return rc;
    }
    gpuop_events_set_on_drained(c->events, on_events_drained, c);
    uv_timer_init(loop, &c->trim);
    c->trim.data = c;
    *out = c;
    return 0;
}

int gpuop_controller_start(struct gpuop_controller *c)
{
    return gpuop_caches_start(c->world);
}

bool gpuop_controller_synced(const struct gpuop_controller *c)
{
    return gpuop_caches_synced(c->world);
}

void gpuop_controller_set_write(struct gpuop_controller *c, bool write)
{
    bool was = c->write;
    c->write = write;
    if (write && !was && gpuop_caches_synced(c->world))
        enqueue_all(c);
}

void gpuop_controller_stats(const struct gpuop_controller *c, struct gpuop_controller_stats *out)
{
    *out = c->stats;
    out->events = gpuop_events_posted(c->events);
    out->events_dropped = gpuop_events_dropped(c->events);
}

const struct gpuop_controller_summary *gpuop_controller_summary(const struct gpuop_controller *c)
{
    return &c->summary;
}

const struct gpuop_caches *gpuop_controller_world(const struct gpuop_controller *c)
{
    return c->world;
}

static void child_closed(void *arg);

static void trim_closed(uv_handle_t *h)
{
    child_closed(h->data);
}

static void child_closed(void *arg)
{
    struct gpuop_controller *c = arg;
    if (--c->open > 0)
        return;
    if (c->have_policy)
        gpuop_policy_free(&c->policy);
    free(c->key);
    free(c->ns);
    gpuop_map_free(&c->dirty_since, free);
    void (*cb)(void *) = c->close_cb;
    void *carg = c->close_arg;
    free(c);
    if (cb)
        cb(carg);
}

void gpuop_controller_close(struct gpuop_controller *c, void (*cb)(void *), void *arg)
{
    c->closing = true;
    c->close_cb = cb;
    c->close_arg = arg;
    /* Cancel what is in flight; their callbacks see closing and stop. */
    while (c->ops) {
        struct op *o = c->ops;
        if (o->req)
            gpuop_kube_cancel(o->req); /* calls op_end via the done cb */
        else
            op_end(o);
    }
    c->open = 4;
    uv_timer_stop(&c->trim);
    uv_close((uv_handle_t *)&c->trim, trim_closed);
    gpuop_events_close(c->events, child_closed, c);
    gpuop_caches_close(c->world, child_closed, c);
    gpuop_queue_close(c->queue, child_closed, c);
}
