/*
 * controller.c - reconcile(key) for GpuPolicies (see controller.h), and
 * the wiring: caches -> queue -> one reconcile at a time.
 *
 * A reconcile is level-triggered and has one exit (finish):
 *
 *   begin: policy from cache -> active? -> parse/validate
 *   STAGE_APPLY  (apply.c): ServiceAccount, DaemonSets in prerequisite
 *                order, deletes of disabled operands
 *   STAGE_STATUS: findings from the caches -> status (status.c builds it
 *                from facts) -> write if changed (status_write.c)
 *   finish: forget or back off the key, take the next one.
 *
 * The problems of a reconcile (spec problems, apply failures) are logged
 * when they appear or change, not on every reconcile: a rejected policy
 * reconciled on every node event would otherwise repeat them endlessly.
 */
#include <stdlib.h>
#include <string.h>

#include "gpuop/analysis.h"
#include "gpuop/clock.h"
#include "gpuop/hash.h"
#include "gpuop/jsonarena.h"
#include "gpuop/log.h"
#include "gpuop/names.h"
#include "gpuop/trim.h"

#include "controller_int.h"

/* The apply reconcile's key of a policy: "apply:<name>" (a policy's name,
 * a DNS subdomain, has no ':'). */
#define CTL_APPLY_PREFIX "apply:"
#define CTL_KEY_MAX      (sizeof(CTL_APPLY_PREFIX) + 253)

static void next(struct gpuop_controller *c);
static void finish(struct gpuop_controller *c);
static void close_now(struct gpuop_controller *c);
static void advance(struct gpuop_controller *c);

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

/* ---- reconcile ---- */

static void on_trim(uv_timer_t *t)
{
    (void)t;
    gpuop_trim_maybe(gpuop_clock_ms());
}

/* The work's garbage back to the kernel (trim.h), once nothing is queued.
 * Trimmed too recently: later, or the last burst of a rollout would stay
 * resident. */
static void trim_after_work(struct gpuop_controller *c)
{
    if (gpuop_queue_len(c->queue) == 0 && !gpuop_trim_maybe(gpuop_clock_ms()) &&
        !uv_is_active((uv_handle_t *)&c->trim))
        uv_timer_start(&c->trim, on_trim, GPUOP_MEM_TRIM_EVERY_MS, 0);
}

/* The Events of the last reconciles have gone out after it: their bodies
 * and responses are garbage too. */
static void on_events_drained(void *arg)
{
    trim_after_work(arg);
}

/* The last apply reconcile's results when they are this reconcile's
 * policy's (the active one, applied while leading), else NULL; *sa the
 * ServiceAccount's. */
static const struct gpuop_apply_result *apply_results(const struct gpuop_controller *c,
                                                      const struct gpuop_apply_result **sa)
{
    bool ours = c->have_policy && !c->inactive && c->leader;
    *sa = NULL;
    return ours ? gpuop_ctl_apply_results(&c->apply, c->policy.uid ? c->policy.uid : "", sa) : NULL;
}

/* Hash of the reconcile's problems: spec problems and apply results. */
static uint64_t problems_hash(const struct gpuop_controller *c)
{
    const struct gpuop_apply_result *sa, *res = apply_results(c, &sa);
    uint64_t h = GPUOP_HASH_INIT;
    int n = c->have_policy ? c->policy.nproblems : 0;
    h = gpuop_hash_bytes(h, &n, sizeof(n));
    for (int i = 0; i < n && i < GPUOP_POLICY_PROBLEMS_MAX; i++) {
        const struct gpuop_policy_problem *pr = &c->policy.problems[i];
        h = gpuop_hash_bytes(h, pr->field, strlen(pr->field) + 1);
        h = gpuop_hash_bytes(h, pr->message, strlen(pr->message) + 1);
    }
    for (int i = 0; res && i <= gpuop_operand_count(); i++) {
        const struct gpuop_apply_result *r = i < gpuop_operand_count() ? &res[i] : sa;
        int failed = r->state == GPUOP_APPLY_FAILED || r->state == GPUOP_APPLY_BLOCKED ||
                     r->state == GPUOP_APPLY_DELETE_FAILED;
        h = gpuop_hash_bytes(h, &failed, sizeof(failed));
        if (failed) {
            h = gpuop_hash_bytes(h, &r->state, sizeof(r->state));
            h = gpuop_hash_bytes(h, &r->blocked_by, sizeof(r->blocked_by));
            h = gpuop_hash_bytes(h, r->message, strlen(r->message) + 1);
        }
    }
    return gpuop_hash_mix(h);
}

/* Logs the reconcile's problems, when they differ from the last ones. */
static void log_problems(struct gpuop_controller *c)
{
    c->problems_changed = gpuop_ctl_problems_changed(c, c->name, problems_hash(c));
    if (!c->problems_changed)
        return;
    const struct gpuop_apply_result *sa, *res = apply_results(c, &sa);
    for (int i = 0; c->have_policy && i < c->policy.nproblems && i < GPUOP_POLICY_PROBLEMS_MAX; i++)
        gpuop_warn(c->kobj, "invalid %s: %s", c->policy.problems[i].field,
                   c->policy.problems[i].message);
    for (int i = 0; res && i < gpuop_operand_count(); i++) {
        const struct gpuop_apply_result *r = &res[i];
        const char *ds = gpuop_operand_get(i)->ds_name;
        if (r->state == GPUOP_APPLY_FAILED || r->state == GPUOP_APPLY_DELETE_FAILED)
            gpuop_warn(c->kobj, "%s of DaemonSet %s failed: %s",
                       r->state == GPUOP_APPLY_FAILED ? "apply" : "delete", ds, r->message);
        else if (r->state == GPUOP_APPLY_BLOCKED)
            gpuop_warn(c->kobj, "DaemonSet %s not applied: its prerequisite %s was not", ds,
                       gpuop_operand_get(r->blocked_by) ? gpuop_operand_get(r->blocked_by)->name
                                                        : "?");
    }
    if (sa && sa->state == GPUOP_APPLY_FAILED)
        gpuop_warn(c->kobj, "apply of ServiceAccount %s failed: %s", GPUOP_OPERAND_SA, sa->message);
}

static void update_summary(struct gpuop_controller *c, const struct gpuop_findings *f)
{
    struct gpuop_controller_summary *s = &c->summary;
    memset(s, 0, sizeof(*s));
    s->valid = true;
    snprintf(s->policy, sizeof(s->policy), "%s", c->key);
    s->gpu_nodes = f->gpu_nodes;
    s->complete_nodes = f->complete_nodes;
    s->violations = f->violations;
    s->stranded_pods = f->stranded_pods;
    memcpy(s->by_kind, f->by_kind, sizeof(s->by_kind));
    memcpy(s->by_reason, f->by_reason, sizeof(s->by_reason));
    s->noperands = f->noperands;
    for (int i = 0; i < f->noperands && i < GPUOP_OPERAND_MAX; i++) {
        s->operands[i].enabled = f->operands[i].enabled;
        s->operands[i].expected = f->operands[i].expected_nodes;
        s->operands[i].running = f->operands[i].running_nodes;
    }
}

/* The last GpuPolicy went (kubectl delete, helm uninstall): every node
 * gpuop has marked for a driver upgrade is let go as driver.enabled=false
 * lets it go (docs/upgrade.md): the dependents' deploy labels restored,
 * uncordoned where gpuop cordoned it, its state label and gpuop's
 * annotations removed. The upgrader requeues the gone policy's key until
 * nothing is left to undo; a policy made meanwhile takes over. */
static void release_upgrades(struct gpuop_controller *c)
{
    json_t *gone = json_pack("{s:{s:s}, s:{s:{s:b}}}", "metadata", "name", c->key, "spec", "driver",
                             "enabled", 0);
    struct gpuop_policy p;
    struct gpuop_err err = {0};
    struct gpuop_caches_view v = {0};
    if (!gone || gpuop_policy_parse(gone, &p, &err) < 0) {
        json_decref(gone);
        gpuop_ctl_upgrade_stop(c->upgrader);
        return;
    }
    json_decref(gone);
    int rc = gpuop_caches_view(c->caches, &v);
    if (rc == 0 && !gpuop_caches_pods_indexed(c->caches))
        rc = gpuop_caches_view_pods(c->caches, &v);
    gpuop_ctl_upgrade_hold(c->upgrader, false);
    if (rc == 0)
        rc = gpuop_ctl_upgrade_track(c->upgrader, &p, &v, c->ns, NULL, c->key, NULL);
    gpuop_ctl_upgrade_release(c->upgrader); /* nothing borrows p after this */
    gpuop_caches_view_free(&v);
    gpuop_policy_free(&p);
    if (rc < 0)
        gpuop_warn(c->kobj, "releasing the nodes of a driver upgrade: %s", gpuop_strerror(rc));
}

/* The driver upgrade's track (upgrade_actor.c, leader only) from view v
 * (borrowed), and its status.upgrade in *up (new; NULL: none). The plan
 * and its input (about 104 bytes a GPU node) go at once, before the
 * status is built: they were resident through the status document and
 * its write, a reconcile's largest passing memory at 5,000 nodes. Returns
 * 0 or GPUOP_ENOMEM (the section could not be made: no status). */
static int upgrade_track(struct gpuop_controller *c, const struct gpuop_caches_view *v,
                         const char *uid, json_t **up)
{
    gpuop_ctl_upgrade_hold(c->upgrader, !gpuop_ctl_apply_driver_seen(c));
    (void)gpuop_ctl_upgrade_track(c->upgrader, &c->policy, v, c->ns, c->events, c->key, uid);
    const struct gpuop_upgrade_in *uin;
    const struct gpuop_upgrade_plan *plan = gpuop_ctl_upgrade_plan(c->upgrader, &uin);
    json_t *holder = json_object();
    int rc = holder ? gpuop_upgrade_status_add(holder, plan, uin) : GPUOP_ENOMEM;
    *up = rc == 0 ? json_incref(json_object_get(holder, "upgrade")) : NULL;
    json_decref(holder);
    gpuop_ctl_upgrade_release(c->upgrader);
    return rc;
}

/* The status of policy obj (borrowed) from f (borrowed; NULL: the
 * findings could not be made, a failure) and in: the document is built
 * and its hash compared with what was last written (status_write.c paces
 * the writes: a held write queues the key for the interval's end). */
static void build_and_write_status(struct gpuop_controller *c, json_t *obj,
                                   const struct gpuop_findings *f,
                                   const struct gpuop_status_input *in)
{
    json_t *status = NULL;
    enum ctl_status_due due = CTL_STATUS_SAME;
    uint64_t digest = 0, wait_ms = 0, now_ms = gpuop_clock_ms();
    if (f)
        status = gpuop_status_build(&c->policy, c->inactive ? NULL : f,
                                    gpuop_ctl_status_prev(c, c->key, obj), in, gpuop_clock_wall());
    bool built = status != NULL;
    if (built) {
        digest = gpuop_hash_json(status);
        due = gpuop_ctl_status_due(c, obj, digest, now_ms, &wait_ms);
    }
    if (due == CTL_STATUS_HELD) /* the interval's end writes the state then */
        (void)gpuop_queue_add_after(c->queue, c->key, wait_ms);
    if (due != CTL_STATUS_NOW) {
        json_decref(status);
        status = NULL;
    }
    struct gpuop_err e;
    if (!built) {
        gpuop_err_set(&e, GPUOP_ENOMEM, NULL, "out of memory building the status");
        gpuop_ctl_fail(c, "status", &e);
    } else if (due == CTL_STATUS_NOW) {
        int wrc = gpuop_ctl_status_write(c, obj, status, digest, now_ms);
        if (wrc < 0) {
            gpuop_err_set(&e, wrc, NULL, "cannot send the status: %s", gpuop_strerror(wrc));
            gpuop_ctl_fail(c, "status", &e);
        }
    }
}

/* STAGE_STATUS: findings, status, its write (maybe in flight after). */
static void findings_and_status(struct gpuop_controller *c)
{
    json_t *obj = gpuop_caches_policy(c->caches, c->key);
    if (!obj)
        return; /* deleted meanwhile: nothing to write to */
    log_problems(c);
    struct gpuop_status_input in = {
        .namespace = c->ns,
        .inactive = c->inactive,
        .active_policy = gpuop_caches_active(c->caches),
    };
    in.apply = apply_results(c, &in.sa);
    if (in.apply)
        in.absent_crds = gpuop_ctl_apply_absent_crds(&c->apply);
    char dra_waiting[GPUOP_STATUS_DRA_WAITING_MAX];
    gpuop_ctl_draclaims_waiting(c->draclaims, dra_waiting, sizeof(dra_waiting));
    in.dra_waiting = dra_waiting;
    if (!c->inactive) /* DRA: its slices are read once resource.k8s.io/v1 is known served */
        (void)gpuop_caches_watch_slices(c->caches, gpuop_ctl_apply_dra_served(&c->apply));
    struct gpuop_findings none = {0}, *fp = &none; /* an inactive policy's */
    struct gpuop_caches_view v;
    int rc = gpuop_caches_view(c->caches, &v);
    if (rc == 0 && !c->inactive) {
        size_t nst;
        const struct gpuop_stranded *st = gpuop_ctl_stranded_view(c->stranded, &nst);
        rc = gpuop_ctl_judge_run(&c->judge,
                                 &(struct ctl_judge_in){.caches = c->caches,
                                                        .key = c->key,
                                                        .policy = &c->policy,
                                                        .view = &v,
                                                        .st = st,
                                                        .nst = nst,
                                                        .now = gpuop_clock_wall()},
                                 &fp);
    }
    struct gpuop_findings *f = fp;            /* the records' view (judge.c) */
    if (rc == 0 && !c->inactive && c->leader) /* SPEC 4a: the leader labels new GPU nodes */
        (void)gpuop_ctl_labeler_track(c->labeler, &c->policy, v.nodes, v.nnodes);
    const char *uid = json_string_value(json_object_get(json_object_get(obj, "metadata"), "uid"));
    if (rc == 0 && !c->inactive && c->leader && !gpuop_caches_pods_indexed(c->caches))
        rc = gpuop_caches_view_pods(c->caches, &v); /* the upgrade joins them to nodes */
    if (rc == 0 && !c->inactive && c->leader && c->deleting) {
        /* being deleted (its finalizer keeps it while its DRA plugin
           waits for claims): its upgrade's nodes are let go now, as once
           it is gone (docs/upgrade.md, "When the policy goes") */
        release_upgrades(c);
    } else if (rc == 0 && !c->inactive && c->leader) {
        rc = upgrade_track(c, &v, uid, &in.upgrade);
    }
    if (rc == 0 && !c->inactive) /* each driver pool's nodes, counted (SPEC 4f) */
        in.driver_pools = gpuop_status_driver_pools(&c->policy, v.nodes, v.nnodes, false);
    gpuop_caches_view_free(&v);
    if (rc == 0 && !c->inactive && c->leader) { /* who is stranded: the controller lists them */
        (void)gpuop_ctl_stranded_track(c->stranded, f, c->events, c->key, uid);
        size_t ns;
        const struct gpuop_stranded *st = gpuop_ctl_stranded_view(c->stranded, &ns);
        gpuop_findings_set_stranded(f, st, ns);
    }
    if (rc == 0 && !c->inactive) /* who a DRA claim strands: named from the claims */
        (void)gpuop_ctl_claim_pods_build(&c->claim_pods, c->caches, f);
    if (rc == 0 && !c->inactive &&
        f->next_change > gpuop_clock_wall()) /* a grace period ends: judge again */
        (void)gpuop_queue_add_after(c->queue, c->key,
                                    (uint64_t)(f->next_change - gpuop_clock_wall()) * 1000);
    if (rc == 0 && !c->inactive)
        update_summary(c, f);
    else if (c->inactive && strcmp(c->summary.policy, c->key) == 0)
        c->summary.valid = false; /* no longer the active policy */
    build_and_write_status(c, obj, rc == 0 ? f : NULL, &in);
    json_decref(in.driver_pools);
    json_decref(in.upgrade);
    if (rc == 0 && !c->inactive && c->leader) {
        /* The Events diff against what they saw last, after the status
         * went out: the status is what a user waits for, and an Event
         * created first would be in the API server and etcd before it. */
        gpuop_events_observe(c->events, c->key, uid, c->policy.event_grace_s, f);
    }
}

/* Moves the reconcile on once nothing is in flight; the one path to
 * finish. */
static void advance(struct gpuop_controller *c)
{
    if (c->stage == STAGE_APPLY)
        gpuop_ctl_apply_step(c);
    if (c->ops.pending > 0 || c->stage == STAGE_DONE)
        return;
    c->stage = STAGE_DONE;
    finish(c);
}

/* Queues the apply reconcile of policy name (the active one) to run now;
 * its status waits for it (begin_status). */
static void queue_apply(struct gpuop_controller *c, const char *name)
{
    char key[CTL_KEY_MAX];
    snprintf(key, sizeof(key), CTL_APPLY_PREFIX "%s", name);
    if (gpuop_queue_add(c->queue, key) == 0)
        c->apply_queued = true;
}

/* The one exit of a reconcile: forget or back off the key, metrics, the
 * next key; an apply reconcile queues its policy's status. */
static void finish(struct gpuop_controller *c)
{
    bool ok = c->ops.failed == 0;
    char *key = c->key;
    if (c->applying && c->have_policy)
        log_problems(c); /* before "reconcile failed", which it decides */
    if (c->applying)
        (void)gpuop_queue_add(c->queue, c->name); /* the status says what was applied */
    c->key = NULL;
    c->name = NULL;
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
        if (c->applying)
            gpuop_ctl_apply_backoff(c, d);
        if (c->problems_changed)
            gpuop_warn(c->kobj, "reconcile failed (%s); retrying in %lld ms", c->ops.err.message,
                       (long long)d);
        else
            gpuop_debug(c->kobj, "reconcile failed (%s); retrying in %lld ms", c->ops.err.message,
                        (long long)d);
    }
    if (c->on_reconciled)
        c->on_reconciled(c->cb_arg, key, ok, c->stats.last_reconcile_ms / 1e3, latency);
    gpuop_queue_done(c->queue, key);
    free(key);
    if (c->flushing && (!ok || !gpuop_ctl_status_held(c))) { /* the close's flush is over */
        close_now(c);
        return;
    }
    trim_after_work(c);
    next(c);
}

/* Ends a reconcile that has nothing (more) to do. */
static void done_now(struct gpuop_controller *c)
{
    c->stage = STAGE_DONE;
    finish(c);
}

/* The reconcile's policy parsed from obj (borrowed) into c->policy;
 * false when it cannot be (the reconcile failed and is done). */
static bool parse_policy(struct gpuop_controller *c, json_t *obj)
{
    struct gpuop_err perr = {0};
    if (gpuop_policy_parse(obj, &c->policy, &perr) < 0) {
        gpuop_ctl_fail(c, "policy", &perr);
        done_now(c);
        return false;
    }
    c->have_policy = true;
    gpuop_ctl_pools_draining(c); /* a removed pool's nodes still on its driver */
    return true;
}

/* Policy obj (borrowed) has a deletionTimestamp: a finalizer keeps it. */
static bool policy_deleting(json_t *obj)
{
    return json_is_string(json_object_get(json_object_get(obj, "metadata"), "deletionTimestamp"));
}

/* An apply reconcile: the active policy's operands, while leading. A
 * policy being deleted is applied with spec.draDriver switched off: its
 * kubelet plugin's DaemonSet waits for the claims on its nodes, then goes,
 * then gpuop's finalizer (finalizer.c), and the garbage collector takes
 * the rest. */
static void begin_apply(struct gpuop_controller *c)
{
    json_t *obj = gpuop_caches_policy(c->caches, c->name);
    const char *active = gpuop_caches_active(c->caches);
    if (!obj || !active || strcmp(active, c->name) != 0 || !c->leader) {
        done_now(c); /* gone, not the active one, or a follower: nothing to apply */
        return;
    }
    if (!parse_policy(c, obj))
        return;
    c->deleting = policy_deleting(obj);
    int dra = gpuop_operand_by_name("dra-driver");
    if (c->deleting && dra >= 0) /* its DRA plugin goes first, as when switched off */
        c->policy.operands[dra].enabled = false;
    gpuop_ctl_apply_reset(c);
    c->stage = STAGE_APPLY;
    advance(c);
}

/* The policy went: what the controller holds for it goes too. */
static void policy_gone(struct gpuop_controller *c)
{
    if (strcmp(c->summary.policy, c->key) == 0)
        c->summary.valid = false;
    gpuop_ctl_status_forget(c, c->key);
    if (strcmp(c->judge.key, c->key) == 0)
        gpuop_ctl_judge_drop(&c->judge);
    gpuop_ctl_labeler_stop(c->labeler);  /* the active policy's reconcile tracks again */
    if (!gpuop_caches_active(c->caches)) /* no policy names a sharing ConfigMap */
        (void)gpuop_caches_watch_plugin_cm(c->caches, NULL);
    if (c->leader && !gpuop_caches_active(c->caches))
        release_upgrades(c); /* the last policy went mid-upgrade: let every node go */
    else
        gpuop_ctl_upgrade_stop(c->upgrader);
    gpuop_ctl_draclaims_reset(c->draclaims); /* the DRA plugin's goes with them */
    gpuop_debug(c->kobj, "policy gone; its DaemonSets go by garbage collection");
}

/* The device plugin's sharing ConfigMap (sharing.h), for the active
 * policy's status reconcile: the caches watch the one it names (and stop
 * when it names none), and its policy gets what they know of it, which
 * its findings judge the nodes' config labels by. An edit of it comes
 * back as a change (on_change), so it is judged at once. */
static void sharing_cm(struct gpuop_controller *c)
{
    int dp = gpuop_operand_by_key("devicePlugin");
    const char *name =
        dp >= 0 && c->policy.operands[dp].enabled ? c->policy.operands[dp].config_name : NULL;
    int rc = gpuop_caches_watch_plugin_cm(c->caches, name && *name ? name : NULL);
    if (rc < 0)
        gpuop_warn(c->kobj, "cannot watch the sharing ConfigMap %s: %s", name, gpuop_strerror(rc));
    if (name && *name)
        gpuop_caches_plugin_cm(c->caches, &c->policy.plugin_cm);
}

/* A status reconcile: findings, status, the helpers' tracks. */
static void begin_status(struct gpuop_controller *c)
{
    const char *active = gpuop_caches_active(c->caches);
    if (c->apply_queued && active && strcmp(active, c->key) == 0) {
        done_now(c); /* its apply reconcile comes first and queues it again */
        return;
    }
    uint64_t *since = gpuop_map_del(&c->dirty_since, c->key);
    c->origin_ns = since ? *since : 0;
    free(since);
    json_t *obj = gpuop_caches_policy(c->caches, c->key);
    if (!obj) {
        policy_gone(c);
        done_now(c);
        return;
    }
    if (!parse_policy(c, obj))
        return;
    c->inactive = !active || strcmp(active, c->key) != 0;
    c->deleting = policy_deleting(obj);
    if (!c->inactive)
        sharing_cm(c);
    else /* not the active one: nothing of gpuop's waits on it here */
        gpuop_ctl_finalizer_set(c, obj, false);
    c->stage = STAGE_STATUS;
    findings_and_status(c);
    advance(c);
}

static void begin(struct gpuop_controller *c)
{
    c->started_ns = uv_hrtime();
    c->stats.reconciles++;
    gpuop_ctl_ops_reset(&c->ops);
    c->problems_changed = true;
    c->inactive = false;
    c->deleting = false;
    c->applying = strncmp(c->key, CTL_APPLY_PREFIX, strlen(CTL_APPLY_PREFIX)) == 0;
    c->name = c->applying ? c->key + strlen(CTL_APPLY_PREFIX) : c->key;
    snprintf(c->kobj, sizeof(c->kobj), "gpupolicy/%s", c->name);
    if (c->applying) {
        c->apply_queued = false;
        begin_apply(c);
    } else {
        begin_status(c);
    }
}

/* Takes the next key if idle. */
static void next(struct gpuop_controller *c)
{
    if (c->closing || c->key || !gpuop_caches_synced(c->caches))
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

/* Every policy's status, the active one's after its apply. */
static void enqueue_all(struct gpuop_controller *c)
{
    const char *active = gpuop_caches_active(c->caches);
    if (active)
        queue_apply(c, active);
    size_t it = 0;
    const char *key;
    while (gpuop_caches_next_policy(c->caches, &it, &key, NULL))
        if (!active || strcmp(key, active) != 0)
            gpuop_queue_add(c->queue, key);
}

static void on_change(void *arg, enum gpuop_caches_kind kind, const char *key, unsigned what)
{
    struct gpuop_controller *c = arg;
    static const char *const knames[GPUOP_CACHES_KINDS] = {
        [GPUOP_CACHES_POLICY] = "gpupolicy",    [GPUOP_CACHES_NODE] = "node",
        [GPUOP_CACHES_DS] = "daemonset",        [GPUOP_CACHES_POD] = "pod",
        [GPUOP_CACHES_SA] = "serviceaccount",   [GPUOP_CACHES_EVENT] = "event",
        [GPUOP_CACHES_SLICE] = "resourceslice", [GPUOP_CACHES_CLAIM] = "resourceclaim",
        [GPUOP_CACHES_PLUGIN_CM] = "configmap"};
    const char *kname = knames[kind];
    if (gpuop_log_enabled(GPUOP_LOG_DEBUG)) {
        char obj[300];
        snprintf(obj, sizeof(obj), "%s/%s", kname, key);
        gpuop_debug(obj, "changed");
    }
    if (what & GPUOP_CACHES_GONE)
        gpuop_ctl_apply_gone(c, kind, key);
    /* An event that moved nothing the apply stage reads (a pod, an Event,
     * a DaemonSet's status: no GPUOP_CACHES_SPEC) changes at
     * most the findings, whose status cannot be written before the write
     * pacing's interval ends: while it runs, such an event queues the
     * policy for the interval's end, where one reconcile judges everything
     * that came meanwhile, instead of one full reconcile per event; and
     * while the interval does not run (the status stayed the same), it
     * waits for the end of CTL_FINDINGS_RECONCILE_GAP_MS after the last
     * reconcile began. The first change after a quiet interval, and
     * anything else, reconciles at once. */
    bool findings_only = !(what & GPUOP_CACHES_SPEC);
    /* What the apply reconcile reads (the render's inputs) moved: it runs,
     * and queues the active policy's status when done. */
    const char *active = what & GPUOP_CACHES_RENDER ? gpuop_caches_active(c->caches) : NULL;
    if (active)
        queue_apply(c, active);
    /* Every policy's state depends on the others (the oldest is active)
     * and on every node: enqueue them all; the queue deduplicates. */
    uint64_t t = uv_hrtime(), now_ms = gpuop_clock_ms();
    uint64_t gap = 0, since_ms = (t - c->started_ns) / 1000000;
    if (c->stats.reconciles && since_ms < CTL_FINDINGS_RECONCILE_GAP_MS)
        gap = CTL_FINDINGS_RECONCILE_GAP_MS - since_ms;
    size_t it = 0;
    const char *pkey;
    while (gpuop_caches_next_policy(c->caches, &it, &pkey, NULL)) {
        mark_dirty(c, pkey, t);
        if (active && strcmp(pkey, active) == 0)
            continue; /* its apply queues it */
        uint64_t wait = findings_only ? gpuop_ctl_status_wait(c, pkey, now_ms) : 0;
        if (findings_only && wait < gap)
            wait = gap;
        if (wait > 0)
            (void)gpuop_queue_add_after(c->queue, pkey, wait);
        else
            gpuop_queue_add(c->queue, pkey);
    }
}

static void on_node(void *arg, const char *node)
{
    struct gpuop_controller *c = arg;
    gpuop_ctl_judge_touch(&c->judge, node);
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
    c->leader = cfg->leader;
    c->on_reconciled = cfg->on_reconciled;
    c->cb_arg = cfg->arg;
    c->ops.ended = advance;
    gpuop_map_init(&c->dirty_since);
    gpuop_map_init(&c->status_recs);
    c->ns = strdup(cfg->namespace);
    gpuop_ctl_judge_init(&c->judge, cfg->verify);
    if (cfg->verify)
        gpuop_info("controller", "the verify oracle is on: each reconcile's findings are "
                                 "compared with a full pass (a test build)");
    struct gpuop_caches_config wc = {.namespace = cfg->namespace,
                                     .on_node = on_node,
                                     .on_change = on_change,
                                     .on_synced = on_synced,
                                     .arg = c};
    int rc = c->ns ? gpuop_caches_new(loop, kube, &wc, &c->caches) : GPUOP_ENOMEM;
    if (rc == 0)
        rc = gpuop_queue_new(loop, on_ready, c, &c->queue);
    if (rc == 0)
        rc = gpuop_events_new(kube, c->queue, &c->events);
    if (rc == 0)
        rc = gpuop_ctl_stranded_new(loop, kube, c->queue, &c->stranded);
    if (rc == 0)
        rc = gpuop_ctl_labeler_new(loop, kube, c->queue, &c->labeler);
    if (rc == 0) /* a node that runs a driver moves pools through the upgrade */
        gpuop_ctl_labeler_drivers(c->labeler, gpuop_ctl_labeler_caches_driver, c->caches);
    if (rc == 0)
        rc = gpuop_ctl_upgrade_new(loop, kube, c->queue, &c->upgrader);
    if (rc == 0)
        rc = gpuop_ctl_draclaims_new(kube, c->queue, &c->draclaims);
    if (rc < 0) {
        /* Only reachable on out-of-memory at start-up; the process exits. */
        free(c->ns);
        free(c);
        return rc;
    }
    gpuop_events_set_on_drained(c->events, on_events_drained, c);
    uv_timer_init(loop, &c->trim);
    c->trim.data = c;
    uv_timer_init(loop, &c->flush);
    c->flush.data = c;
    *out = c;
    return 0;
}

int gpuop_controller_start(struct gpuop_controller *c)
{
    return gpuop_caches_start(c->caches);
}

bool gpuop_controller_synced(const struct gpuop_controller *c)
{
    return gpuop_caches_synced(c->caches);
}

void gpuop_controller_set_leader(struct gpuop_controller *c, bool leader)
{
    bool was = c->leader;
    c->leader = leader;
    if (leader && !was)
        gpuop_ctl_status_forget(c, NULL); /* another leader may have written since */
    if (leader && !was && gpuop_caches_synced(c->caches))
        enqueue_all(c);
    if (!leader && was) {
        gpuop_ctl_labeler_stop(c->labeler);  /* only the leader labels */
        gpuop_ctl_upgrade_stop(c->upgrader); /* and upgrades */
        gpuop_ctl_draclaims_reset(c->draclaims);
    }
}

void gpuop_controller_stats(const struct gpuop_controller *c, struct gpuop_controller_stats *out)
{
    *out = c->stats;
    out->events = gpuop_events_posted(c->events);
    out->events_dropped = gpuop_events_dropped(c->events);
    out->stranded_lists = gpuop_ctl_stranded_lists(c->stranded);
    out->analysis_fulls = c->judge.stats.fulls;
    out->analysis_updates = c->judge.stats.updates;
    out->analysis_mismatches = c->judge.stats.mismatches;
}

const struct gpuop_controller_summary *gpuop_controller_summary(const struct gpuop_controller *c)
{
    return &c->summary;
}

const struct gpuop_caches *gpuop_controller_caches(const struct gpuop_controller *c)
{
    return c->caches;
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
    gpuop_ctl_judge_free(&c->judge);
    gpuop_ctl_claim_pods_free(&c->claim_pods);
    gpuop_ctl_status_free(c);
    void (*cb)(void *) = c->close_cb;
    void *carg = c->close_arg;
    free(c);
    if (cb)
        cb(carg);
}

static void on_flush_deadline(uv_timer_t *t)
{
    struct gpuop_controller *c = t->data;
    gpuop_warn("controller", "held status not written within %d ms; stopping anyway",
               CTL_STATUS_FLUSH_MAX_MS);
    close_now(c);
}

/* A status held for its interval's end is written before the controller
 * stops (still leading: the caller drops writes after the close), unpaced;
 * the reconcile in progress, if any, ends first. */
void gpuop_controller_close(struct gpuop_controller *c, void (*cb)(void *), void *arg)
{
    c->close_cb = cb;
    c->close_arg = arg;
    if (!c->closing && !c->flushing && c->leader && gpuop_caches_synced(c->caches) &&
        gpuop_ctl_status_held(c)) {
        c->flushing = true;
        gpuop_info("controller", "writing the held status before stopping");
        uv_timer_start(&c->flush, on_flush_deadline, CTL_STATUS_FLUSH_MAX_MS, 0);
        gpuop_ctl_status_requeue_held(c);
        next(c);
        return;
    }
    close_now(c);
}

static void close_now(struct gpuop_controller *c)
{
    if (c->closing)
        return;
    c->closing = true;
    c->flushing = false;
    gpuop_controller_set_leader(c, false);
    /* Cancel what is in flight; their callbacks see closing and stop. */
    gpuop_ctl_ops_cancel(&c->ops);
    gpuop_ctl_upgrade_free(c->upgrader); /* no handles: its requests cancelled now */
    c->upgrader = NULL;
    gpuop_ctl_draclaims_free(c->draclaims); /* no handles: its LIST cancelled now */
    c->draclaims = NULL;
    c->open = CTL_CHILDREN;
    uv_timer_stop(&c->trim);
    uv_close((uv_handle_t *)&c->trim, trim_closed);
    uv_timer_stop(&c->flush);
    uv_close((uv_handle_t *)&c->flush, trim_closed);
    gpuop_events_close(c->events, child_closed, c);
    gpuop_ctl_stranded_close(c->stranded, child_closed, c);
    gpuop_ctl_labeler_close(c->labeler, child_closed, c);
    gpuop_caches_close(c->caches, child_closed, c);
    gpuop_queue_close(c->queue, child_closed, c);
}
