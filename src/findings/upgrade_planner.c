/*
 * upgrade_planner.c - the driver upgrade's planner (upgrade.h, docs/upgrade.md).
 *
 * Level-triggered and pure: each call recomputes every node's state from
 * what the cluster holds, in three passes.
 *
 * 1. The state each node is in. The label is trusted only where gpuop
 *    wrote it: an in-progress state with gpuop's since annotation, a
 *    failure with gpuop's failed annotation at the generation being rolled
 *    out. Anything else (absent, upgrade-done, upgrade-required, a stale
 *    value another operator left, a failure cleared by removing the
 *    annotation or outdated by a new spec) is recomputed from the driver
 *    pod: on the target generation it is upgrade-done (uncordon-required
 *    while gpuop's cordon or pause is still on it), else upgrade-required.
 * 2. The step of each node in progress (cordon-required ..
 *    uncordon-required, and a failure to roll back): one action, or what
 *    it waits for.
 * 3. Which upgrade-required nodes start, in name order: none while a live
 *    failure stops the upgrade or autoUpgrade is off; never one someone
 *    else cordoned; only while a maxParallelUpgrades slot is free and the
 *    unavailable GPU nodes stay within maxUnavailable. Every node left
 *    waiting says why.
 *
 * The GPU Operator's rules taken (facts, k8s-operator-libs pkg/upgrade/
 * common_manager.go GetUpgradesAvailable, GetCurrentUnavailableNodes):
 * nodes in progress are those past upgrade-required and not done;
 * unavailable nodes are the cordoned and the NotReady ones plus those
 * about to be cordoned; maxUnavailable a percentage of the managed nodes
 * rounded up. What differs is in docs/upgrade.md.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuop/clock.h"
#include "gpuop/names.h"
#include "gpuop/upgrade.h"
#include "gpuop/status.h"
#include "gpuop/sort.h"

static const char *const ACTIONS[GPUOP_UA_COUNT] = {
    [GPUOP_UA_NONE] = "none",
    [GPUOP_UA_LABEL] = "label",
    [GPUOP_UA_CORDON] = "cordon",
    [GPUOP_UA_LIST] = "list pods",
    [GPUOP_UA_EVICT] = "evict",
    [GPUOP_UA_PAUSE] = "pause dependents",
    [GPUOP_UA_DELETE_DRIVER] = "delete driver pod",
    [GPUOP_UA_DELETE_VALIDATOR] = "delete validator pod",
    [GPUOP_UA_RESTORE] = "restore dependents",
    [GPUOP_UA_RESTORE_VALIDATOR] = "restore the validator",
    [GPUOP_UA_UNCORDON] = "uncordon",
    [GPUOP_UA_FAIL] = "fail",
    [GPUOP_UA_ROLLBACK] = "roll back",
    [GPUOP_UA_ROLLBACK_END] = "end the rollback",
    [GPUOP_UA_ROLLBACK_CLEAR] = "clear the rollback",
    [GPUOP_UA_FORGET_CORDON] = "forget its cordon",
    [GPUOP_UA_MOVE_POOL] = "move to its driver pool",
};

const char *gpuop_upgrade_action_name(int a)
{
    return a >= 0 && a < GPUOP_UA_COUNT ? ACTIONS[a] : "?";
}

/* ---- facts ------------------------------------------------------------- */

static bool in_progress(int s)
{
    return s >= GPUOP_US_CORDON && s <= GPUOP_US_UNCORDON;
}

static bool driver_ready(const struct gpuop_pod *d)
{
    return d && d->ready_since && d->gate == GPUOP_GATE_NONE && !d->deleted;
}

/* The driver pool the node is in: its label, else the default; borrowed. */
static const char *pool_of(const struct gpuop_upgrade_node_in *x)
{
    const char *now = gpuop_node_os(x->node, GPUOP_OS_DRIVER_POOL);
    return now && *now ? now : GPUOP_DRIVER_POOL_DEFAULT;
}

/* The driver pool a moving node is to go to (its wanted annotation, when
 * that names another pool than its label: GPUOP_DRIVER_POOL_DEFAULT for no
 * label), borrowed; NULL: it stays. */
static const char *move_to(const struct gpuop_upgrade_node_in *x)
{
    const char *want = gpuop_node_os(x->node, GPUOP_OS_POOL_WANTED);
    return want && *want && strcmp(want, pool_of(x)) ? want : NULL;
}

/* The driver pod is on the DaemonSet's current template (and not going):
 * its template generation is the DaemonSet's, or its controller revision
 * is the DaemonSet's newest, as the GPU Operator judges it (k8s-operator-libs
 * common_manager.go: controller-revision-hash against the newest
 * ControllerRevision), so a template changed back (X -> Y -> X) finds the
 * pods still on X current. */
static bool in_sync(const struct gpuop_upgrade_node_in *x)
{
    if (!x->driver || x->driver->deleted || x->driver_elsewhere || move_to(x))
        return false; /* a moving node's driver is not its new pool's */
    return gpuop_pod_template_gen(x->driver) == x->target_gen ||
           (x->target_rev && gpuop_pod_revision(x->driver) == x->target_rev);
}

/* The driver's template changed but not its install configuration
 * (DRIVER_CONFIG_DIGEST: the pod's equals the DaemonSet's): the GPU
 * Operator's restart-only path (gpu-operator v26.7.0
 * internal/predicates/restart_only.go; k8s-operator-libs
 * upgrade_inplace.go): the node is cordoned and its driver pod replaced,
 * with no wait for jobs, no eviction and no drain. NVIDIA's driver
 * container keeps the loaded module (the digest it stored matches) and
 * refreshes its userspace only. */
static bool restart_only(const struct gpuop_upgrade_node_in *x)
{
    uint32_t d = x->driver ? gpuop_pod_driver_digest(x->driver) : 0;
    /* another pool's driver is replaced as a version change is */
    return d && d == x->target_digest && !in_sync(x) && !x->driver_elsewhere && !move_to(x);
}

/* The node's driver is gpuop's to upgrade: its deploy label is "true"
 * (only then does a driver DaemonSet select it). "false", "pre-installed"
 * (a host driver), absent or any other value: not managed, and not counted
 * for maxUnavailable. */
static bool wanted(const struct gpuop_upgrade_in *in, const struct gpuop_upgrade_node_in *x)
{
    int d = gpuop_operand_by_key("driver");
    return in->driver_enabled && x->node && x->node->gpu && x->target_gen &&
           x->node->operands_label != GPUOP_LABEL_FALSE &&
           (d < 0 || x->node->deploy[d] == GPUOP_LABEL_TRUE);
}

/* In the plan: wanted, or not any more (opted out, the driver disabled)
 * while gpuop's cordon or pause is still on it: that is undone first. With
 * the driver disabled (or the policy gone: the controller plans so) every
 * mark of gpuop's goes too, its state label and annotations included, so
 * that a policy made later resumes nothing stale. */
static bool managed(const struct gpuop_upgrade_in *in, const struct gpuop_upgrade_node_in *x)
{
    const struct gpuop_node_upgrade *u = x->node ? &x->node->up : NULL;
    return wanted(in, x) ||
           (u && (u->cordoned || u->paused ||
                  (!in->driver_enabled && (u->since || u->failed_gen || u->rollback))));
}

/* Whether a new driver pod fails by itself: not Ready and restarted more
 * than GPUOP_UPGRADE_FAIL_RESTARTS times (the GPU Operator's rule; an image
 * pull error or a crash loop alone is not a failure: it fails once it is
 * not Ready past driverReadyTimeoutSeconds, step_restart). */
static bool driver_failing(const struct gpuop_pod *d)
{
    return d && !driver_ready(d) && d->restarts > GPUOP_UPGRADE_FAIL_RESTARTS;
}

/* What a failing pod says: its waiting reason, else "not Ready"; static
 * or borrowed. */
static const char *failing_words(const struct gpuop_pod *d)
{
    return d && d->waiting_reason ? d->waiting_reason : "not Ready";
}

/* ---- words ------------------------------------------------------------- */

struct words {
    char buf[GPUOP_UPGRADE_WAIT_MAX];
    size_t len;
};

static void say(struct words *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct words *w, const char *fmt, ...)
{
    if (w->len >= sizeof(w->buf) - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(w->buf + w->len, sizeof(w->buf) - w->len, fmt, ap);
    va_end(ap);
    if (k > 0)
        w->len = w->len + (size_t)k < sizeof(w->buf) ? w->len + (size_t)k : sizeof(w->buf) - 1;
}

/* "N <what>: ns/a, ns/b and 3 more" of the pods sel picks. */
static size_t say_pods(struct words *w, const struct gpuop_upgrade_node_in *x, const char *what,
                       bool (*sel)(const struct gpuop_upgrade_pod *, const void *), const void *arg)
{
    size_t n = 0, named = 0;
    for (size_t i = 0; i < x->npods; i++)
        n += sel(&x->pods[i], arg);
    if (!n)
        return 0;
    say(w, "%zu %s%s: ", n, what, n == 1 ? "" : "s");
    for (size_t i = 0; i < x->npods && named < GPUOP_UPGRADE_NAMED_MAX; i++)
        if (sel(&x->pods[i], arg))
            say(w, "%s%s/%s", named++ ? ", " : "", x->pods[i].ns ? x->pods[i].ns : "",
                x->pods[i].name ? x->pods[i].name : "?");
    if (n > named)
        say(w, " and %zu more", n - named);
    return n;
}

static bool sel_job(const struct gpuop_upgrade_pod *p, const void *arg)
{
    (void)arg;
    return p->job && !p->terminal;
}

static bool sel_gpu(const struct gpuop_upgrade_pod *p, const void *arg)
{
    (void)arg;
    return p->gpu && !p->terminal;
}

static bool sel_ds_gpu(const struct gpuop_upgrade_pod *p, const void *arg)
{
    (void)arg;
    return p->gpu && p->daemonset && !p->terminal && !p->deleting;
}

static bool sel_drain(const struct gpuop_upgrade_pod *p, const void *arg)
{
    (void)arg;
    return p->drain && !p->terminal;
}

/* The PDB words of the pods whose eviction was refused. */
static void say_blocked(struct words *w, const struct gpuop_upgrade_node_in *x,
                        bool (*sel)(const struct gpuop_upgrade_pod *, const void *))
{
    size_t n = 0;
    const char *why = NULL;
    for (size_t i = 0; i < x->npods; i++)
        if (sel(&x->pods[i], NULL) && x->pods[i].blocked) {
            n++;
            why = why ? why : x->pods[i].blocked_why;
        }
    if (n)
        say(w, " (%s%s%s)",
            n == 1 ? "a PodDisruptionBudget refuses its eviction"
                   : "PodDisruptionBudgets refuse their evictions",
            why ? ": " : "", why ? why : "");
}

static void set_wait(struct gpuop_upgrade_node_out *o, const struct words *w, int *oom)
{
    free(o->waiting);
    o->waiting = w->len ? strdup(w->buf) : NULL;
    if (w->len && !o->waiting)
        *oom = 1;
}

static void wake_at(struct gpuop_upgrade_plan *p, long long t)
{
    if (t > 0 && (!p->wake || t < p->wake))
        p->wake = t;
}

/* ---- pass 1: the state a node is in ----------------------------------- */

/* A node gpuop is upgrading (wanted) whose state label says nothing
 * gpuop can trust. gpuop's cordon or pause on it means an upgrade of
 * gpuop's is under way (its label removed or changed by someone): it is in
 * progress, never done, until its new driver is Ready and validated. */
static int recompute(const struct gpuop_upgrade_node_in *x)
{
    const struct gpuop_node_upgrade *u = &x->node->up;
    bool marked = u->cordoned || u->paused;
    /* a terminating driver pod outside the upgrade is going for another
       reason (its node left the DaemonSet): no driver to upgrade */
    bool none = !x->driver || x->driver->deleted;
    if (none && u->rollback)
        return GPUOP_US_REQUIRED; /* its previous driver went: the new one takes its turn */
    if (none)
        return marked ? GPUOP_US_POD_RESTART : GPUOP_US_NONE; /* the new one is coming */
    if (in_sync(x) && marked)
        return driver_ready(x->driver) ? GPUOP_US_VALIDATION : GPUOP_US_POD_RESTART;
    if (in_sync(x))
        return GPUOP_US_DONE;
    /* the old driver still there under gpuop's marks: from the start of
       the node's steps (GPU pods may have come back meanwhile) */
    return marked ? GPUOP_US_CORDON : GPUOP_US_REQUIRED;
}

static int state_of(const struct gpuop_upgrade_in *in, const struct gpuop_upgrade_node_in *x,
                    bool *live_failure)
{
    const struct gpuop_node_upgrade *u = &x->node->up;
    *live_failure = false;
    if (!wanted(in, x))
        return GPUOP_US_UNCORDON; /* left the upgrade: gpuop's marks go, nothing else */
    if (in_progress(u->state) && u->since)
        return u->state;
    /* a failed node whose new driver became Ready by itself recovers: it
       is validated, its dependents restored and (if gpuop cordoned it)
       uncordoned, and the upgrade goes on */
    if (u->state == GPUOP_US_FAILED && in_sync(x) && driver_ready(x->driver) && !u->rollback)
        return GPUOP_US_VALIDATION;
    if (u->state == GPUOP_US_FAILED && u->failed_gen && u->failed_gen == x->target_gen) {
        *live_failure = true;
        return GPUOP_US_FAILED;
    }
    /* a failure cleared while the new driver is not Ready: judged again
       (it fails again past the timeout), not taken for done */
    if (u->state == GPUOP_US_FAILED && in_sync(x))
        return GPUOP_US_POD_RESTART;
    return recompute(x);
}

/* ---- pass 2: the step of a node in progress ---------------------------- */

struct ctx {
    const struct gpuop_upgrade_in *in;
    const struct gpuop_upgrade_policy *u;
    struct gpuop_upgrade_plan *p;
    int oom;
    bool stuck_drain; /* sel_stuck's step: the drain's (else pod deletion's) */
};

static void to(struct gpuop_upgrade_node_out *o, int action, int next)
{
    o->action = (uint8_t)action;
    o->next = (uint8_t)next;
}

static long long elapsed(const struct ctx *c, uint32_t since)
{
    return since ? c->in->now - (long long)since : 0;
}

/* A step's timeout: true when it passed; else the plan wakes then. */
static bool timed_out(struct ctx *c, uint32_t since, long timeout_s)
{
    if (timeout_s <= 0 || !since)
        return false;
    if (elapsed(c, since) >= timeout_s)
        return true;
    wake_at(c->p, (long long)since + timeout_s);
    return false;
}

static void fail(struct ctx *c, struct gpuop_upgrade_node_out *o, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail(struct ctx *c, struct gpuop_upgrade_node_out *o, const char *fmt, ...)
{
    char buf[GPUOP_UPGRADE_WAIT_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    free(o->fail_reason);
    if (!(o->fail_reason = strdup(buf)))
        c->oom = 1;
    to(o, GPUOP_UA_FAIL, GPUOP_US_FAILED);
}

static void step_wait_jobs(struct ctx *c, const struct gpuop_upgrade_node_in *x,
                           struct gpuop_upgrade_node_out *o, struct words *w)
{
    if (!c->u->wait_selector || !*c->u->wait_selector)
        return to(o, GPUOP_UA_LABEL, GPUOP_US_POD_DELETION);
    if (!x->pods_known) {
        say(w, "listing its pods");
        return to(o, GPUOP_UA_LIST, o->state);
    }
    if (!say_pods(w, x, "job pod", sel_job, NULL))
        return to(o, GPUOP_UA_LABEL, GPUOP_US_POD_DELETION);
    if (timed_out(c, o->since, c->u->wait_timeout_s)) {
        w->len = 0;
        return to(o, GPUOP_UA_LABEL, GPUOP_US_POD_DELETION);
    }
    char tmp[GPUOP_UPGRADE_WAIT_MAX];
    snprintf(tmp, sizeof(tmp), "%s", w->buf);
    w->len = 0;
    say(w, "waiting for %s to finish (waitForCompletion.podSelector %s; ", tmp,
        c->u->wait_selector);
    if (c->u->wait_timeout_s > 0)
        say(w, "timeoutSeconds %ld)", c->u->wait_timeout_s);
    else
        say(w, "no timeout)");
}

/* Why a pod the step must remove cannot be evicted (the GPU Operator's,
 * through kubectl's drain filters: k8s-operator-libs pod_manager.go,
 * drain_manager.go), or NULL: evictable. Static. */
static const char *not_evictable(const struct gpuop_upgrade_policy *u, bool drain,
                                 const struct gpuop_upgrade_pod *p)
{
    if (!drain && p->daemonset)
        return "owned by a DaemonSet (evicted, it would come straight back)";
    if (!drain && p->mirror)
        return "a static (mirror) pod";
    if (p->unmanaged && !(drain ? u->drain_force : u->delete_force))
        return drain ? "no controller and drain.force is false"
                     : "no controller and gpuPodDeletion.force is false";
    if (p->empty_dir && !(drain ? u->drain_empty_dir : u->delete_empty_dir))
        return drain ? "emptyDir data and drain.deleteEmptyDir is false"
                     : "emptyDir data and gpuPodDeletion.deleteEmptyDir is false";
    return NULL;
}

bool gpuop_upgrade_evicts(const struct gpuop_upgrade_policy *u, int state,
                          const struct gpuop_upgrade_pod *pod)
{
    if (pod->terminal || pod->deleting)
        return false;
    if (state == GPUOP_US_POD_DELETION)
        return pod->gpu && !not_evictable(u, false, pod);
    if (state == GPUOP_US_DRAIN)
        return pod->drain && !not_evictable(u, true, pod);
    return false;
}

static bool sel_stuck(const struct gpuop_upgrade_pod *p, const void *arg)
{
    const struct ctx *c = arg;
    bool drain = c->stuck_drain;
    return (drain ? p->drain : p->gpu) && !p->terminal && !p->deleting &&
           not_evictable(c->u, drain, p);
}

/* The step cannot remove every pod it must (or ran out of time): a pod
 * deletion goes on to the drain when drain.enable, else fails; a drain
 * fails. Nothing is evicted then (the GPU Operator's updateNodeToDrainOrFailed). */
static void give_up(struct ctx *c, struct gpuop_upgrade_node_out *o, bool drain, const char *why,
                    struct words *w)
{
    if (!drain && c->u->drain) {
        say(w, "pod deletion could not remove every GPU pod (%s): draining the node", why);
        return to(o, GPUOP_UA_LABEL, GPUOP_US_DRAIN);
    }
    fail(c, o, "%s could not remove every pod: %s", drain ? "the drain" : "pod deletion", why);
}

/* Pod deletion and drain: evict what the step takes, until none is left.
 * A pod the step must remove and cannot (not_evictable) ends it at once,
 * naming the pod, with nothing evicted; so does its timeout. Evictions go
 * through the Eviction API only: a PodDisruptionBudget always holds. */
static void step_evict(struct ctx *c, const struct gpuop_upgrade_node_in *x,
                       struct gpuop_upgrade_node_out *o, struct words *w)
{
    bool drain = o->state == GPUOP_US_DRAIN;
    int after = drain || !c->u->drain ? GPUOP_US_POD_RESTART : GPUOP_US_DRAIN;
    if (drain && !c->u->drain)
        return to(o, GPUOP_UA_LABEL, GPUOP_US_POD_RESTART);
    if (!x->pods_known) {
        say(w, "listing its pods");
        return to(o, GPUOP_UA_LIST, o->state);
    }
    bool (*sel)(const struct gpuop_upgrade_pod *, const void *) = drain ? sel_drain : sel_gpu;
    struct words list = {0}, why = {0};
    if (!say_pods(&list, x, drain ? "pod" : "GPU pod", sel, NULL))
        return to(o, GPUOP_UA_LABEL, after);
    /* a DaemonSet's GPU pod comes straight back after an eviction: the
       node fails and names it, never a loop (and never a drain, which
       leaves DaemonSet pods alone) */
    list.len = 0;
    if (!drain && say_pods(&list, x, "GPU pod", sel_ds_gpu, NULL))
        return fail(c, o,
                    "%s owned by a DaemonSet: evicted it would come straight back (keep its "
                    "DaemonSet off the node, or stop it requesting a GPU)",
                    list.buf);
    c->stuck_drain = drain;
    list.len = 0;
    if (say_pods(&list, x, drain ? "pod" : "GPU pod", sel_stuck, c)) {
        const struct gpuop_upgrade_pod *first = NULL;
        for (size_t i = 0; !first && i < x->npods; i++)
            if (sel_stuck(&x->pods[i], c))
                first = &x->pods[i];
        const char *because = first ? not_evictable(c->u, drain, first) : NULL;
        say(&why, "%s not evictable: %s", list.buf, because ? because : "");
        return give_up(c, o, drain, why.buf, w);
    }
    size_t evictable = 0, deleting = 0;
    for (size_t i = 0; i < x->npods; i++) {
        const struct gpuop_upgrade_pod *q = &x->pods[i];
        if (!sel(q, NULL))
            continue;
        evictable += gpuop_upgrade_evicts(c->u, o->state, q);
        deleting += q->deleting;
    }
    list.len = 0;
    say_pods(&list, x, drain ? "pod" : "GPU pod", sel, NULL);
    long timeout = drain ? c->u->drain_timeout_s : c->u->delete_timeout_s;
    if (timed_out(c, o->since, timeout)) {
        say(&why, "%s.timeoutSeconds (%ld s) passed with %s left",
            drain ? "drain" : "gpuPodDeletion", timeout, list.buf);
        return give_up(c, o, drain, why.buf, w);
    }
    say(w, "waiting for %s", list.buf);
    say_blocked(w, x, sel);
    if (deleting)
        say(w, "; %zu terminating", deleting);
    to(o, evictable ? GPUOP_UA_EVICT : GPUOP_UA_NONE, o->state);
}

/* A rolled-back node (its previous driver run by the rollback DaemonSet)
 * upgrades again: the old pod leaves before the new one comes. The label
 * goes to "ending" (neither DaemonSet selects the node, the rollback one
 * takes its pod off), then, once that pod is gone, away (the pool's
 * DaemonSet brings the new driver). */
static void step_end_rollback(const struct gpuop_upgrade_node_in *x,
                              struct gpuop_upgrade_node_out *o, struct words *w)
{
    const struct gpuop_pod *d = x->driver;
    if (!x->node->up.rollback_ending) {
        say(w, "taking the previous driver off (label %s=%s)", GPUOP_LABEL_DRIVER_ROLLBACK,
            GPUOP_DRIVER_ROLLBACK_ENDING);
        return to(o, GPUOP_UA_ROLLBACK_END, o->state);
    }
    if (d) {
        say(w, "waiting for the previous driver pod %s to leave", d->name);
        return to(o, GPUOP_UA_NONE, o->state);
    }
    say(w, "letting the driver's DaemonSet bring the new driver (label %s removed)",
        GPUOP_LABEL_DRIVER_ROLLBACK);
    to(o, GPUOP_UA_ROLLBACK_CLEAR, o->state);
}

static void step_restart(struct ctx *c, const struct gpuop_upgrade_node_in *x,
                         struct gpuop_upgrade_node_out *o, struct words *w)
{
    const struct gpuop_pod *d = x->driver;
    bool old = d && !d->deleted; /* the driver pod to replace is still there */
    if (!in_sync(x)) {
        /* never a driver pod deleted under a GPU pod, unless only its
           userspace restarts (the module stays loaded): one that came back
           is evicted again; one pod deletion cannot remove (the drain
           passed it over) fails the node, naming it, instead of a loop */
        if (old && !restart_only(x) && !x->pods_known) {
            say(w, "listing its pods");
            return to(o, GPUOP_UA_LIST, o->state);
        }
        struct words gpu = {0};
        c->stuck_drain = false;
        if (old && !restart_only(x) &&
            (say_pods(&gpu, x, "GPU pod", sel_stuck, c) ||
             say_pods(&gpu, x, "GPU pod", sel_ds_gpu, NULL)))
            return fail(c, o, "%s still on the node, and pod deletion cannot remove %s", gpu.buf,
                        "them");
        if (old && !restart_only(x) && say_pods(&gpu, x, "GPU pod", sel_gpu, NULL)) {
            say(w, "%s came back: evicting again", gpu.buf);
            return to(o, GPUOP_UA_LABEL, GPUOP_US_POD_DELETION);
        }
        if (!x->node->up.paused) {
            say(w, "pausing the driver's dependents");
            return to(o, GPUOP_UA_PAUSE, o->state);
        }
        if (old && x->dependents) {
            say(w, "waiting for %u dependent operand pod%s to leave (%s%s)", x->dependents,
                x->dependents == 1 ? "" : "s", x->dependent ? x->dependent : "",
                x->dependents > 1 ? " ..." : "");
            return to(o, GPUOP_UA_NONE, o->state);
        }
        if (x->node->up.rollback)
            return step_end_rollback(x, o, w);
        if (move_to(x)) {
            say(w,
                "moving it from driver pool %s to %s (label %s): the old pool's DaemonSet "
                "takes its driver pod off, the new pool's brings its driver",
                pool_of(x), move_to(x), GPUOP_LABEL_DRIVER_POOL);
            return to(o, GPUOP_UA_MOVE_POOL, o->state);
        }
        if (old) {
            say(w, "deleting the old driver pod %s%s", d->name,
                restart_only(x) ? " (its install configuration is unchanged: the module "
                                  "stays loaded, no GPU pod is evicted)"
                                : "");
            return to(o, GPUOP_UA_DELETE_DRIVER, o->state);
        }
        if (timed_out(c, o->since, c->u->ready_timeout_s))
            return fail(c, o, "no new driver pod within driverReadyTimeoutSeconds (%ld s)",
                        c->u->ready_timeout_s);
        say(w, "waiting for the DaemonSet controller to %s",
            d ? "remove the old driver pod" : "create the new driver pod");
        return to(o, GPUOP_UA_NONE, o->state);
    }
    if (driver_ready(d))
        return to(o, GPUOP_UA_LABEL, GPUOP_US_VALIDATION);
    const char *msg = d->waiting_message && *d->waiting_message ? d->waiting_message : NULL;
    if (driver_failing(d))
        return fail(c, o, "new driver pod %s: %s after %u restarts%s%s%s", d->name,
                    failing_words(d), (unsigned)d->restarts, msg ? " (" : "", msg ? msg : "",
                    msg ? ")" : "");
    if (d->created && timed_out(c, d->created, c->u->ready_timeout_s))
        return fail(c, o,
                    "new driver pod %s not Ready within driverReadyTimeoutSeconds (%ld s)%s%s",
                    d->name, c->u->ready_timeout_s, d->waiting_reason ? ": " : "",
                    d->waiting_reason ? d->waiting_reason : "");
    say(w, "waiting for the new driver pod %s to become Ready%s%s%s", d->name,
        d->waiting_reason ? " (" : "", d->waiting_reason ? d->waiting_reason : "",
        d->waiting_reason ? ")" : "");
    to(o, GPUOP_UA_NONE, o->state);
}

static void step_validation(struct ctx *c, const struct gpuop_upgrade_node_in *x,
                            struct gpuop_upgrade_node_out *o, struct words *w)
{
    const struct gpuop_pod *d = x->driver, *v = x->validator;
    if (!in_sync(x) || driver_failing(d))
        return fail(c, o, "the new driver pod %s %s after it was Ready", d ? d->name : "",
                    in_sync(x) ? failing_words(d) : "went");
    if (!c->in->validator_enabled)
        return to(o, GPUOP_UA_RESTORE, GPUOP_US_UNCORDON);
    int vi = gpuop_operand_by_key("validator");
    const char *vl = vi >= 0 ? gpuop_node_deploy_value(x->node, vi) : NULL;
    if (vl && !strcmp(vl, GPUOP_LABEL_PAUSED_FOR_UPGRADE)) {
        say(w, "bringing the validator back to validate the new driver");
        return to(o, GPUOP_UA_RESTORE_VALIDATOR, o->state);
    }
    if (vi >= 0 && x->node->deploy[vi] != GPUOP_LABEL_TRUE)
        return to(o, GPUOP_UA_RESTORE, GPUOP_US_UNCORDON); /* no validator runs here */
    uint32_t ready = d->ready_since > GPUOP_TIME_UNREADABLE ? d->ready_since : d->created;
    if (v && !v->deleted && v->created && ready && v->created < ready) {
        say(w, "making the validator validate the new driver again (deleting %s)", v->name);
        return to(o, GPUOP_UA_DELETE_VALIDATOR, o->state);
    }
    if (v && !v->deleted && v->ready_since && v->gate == GPUOP_GATE_NONE)
        return to(o, GPUOP_UA_RESTORE, GPUOP_US_UNCORDON);
    if (timed_out(c, o->since, c->u->ready_timeout_s))
        return fail(c, o,
                    "the validator did not validate the new driver within "
                    "driverReadyTimeoutSeconds (%ld s)",
                    c->u->ready_timeout_s);
    say(w, "waiting for the validator%s%s to validate the new driver", v ? " pod " : "",
        v ? v->name : "");
    to(o, GPUOP_UA_NONE, o->state);
}

static void step_failed(struct ctx *c, const struct gpuop_upgrade_node_in *x,
                        struct gpuop_upgrade_node_out *o, struct words *w)
{
    const struct gpuop_pod *d = x->driver;
    char why[GPUOP_UPGRADE_WAIT_MAX];
    if (x->failed_why && *x->failed_why)
        snprintf(why, sizeof(why), "%s", x->failed_why);
    else if (driver_failing(d))
        snprintf(why, sizeof(why), "driver pod %s: %s after %u restarts", d->name, failing_words(d),
                 (unsigned)d->restarts);
    else if (d && in_sync(x) && !driver_ready(d))
        snprintf(why, sizeof(why), "driver pod %s not Ready", d->name);
    else
        snprintf(why, sizeof(why), "see annotation %s", GPUOP_ANNOTATION_UPGRADE_FAILED);
    if (!(o->fail_reason = strdup(why)))
        c->oom = 1;
    say(w, "upgrade-failed at driver generation %u (%s): ", x->target_gen, why);
    to(o, GPUOP_UA_NONE, GPUOP_US_FAILED);
    const struct gpuop_node_upgrade *u = &x->node->up;
    if (c->u->on_failure == GPUOP_ON_FAILURE_ROLLBACK) {
        if (!u->rollback || u->rollback_ending) {
            say(w, "rolling back to the previous driver; ");
            o->action = GPUOP_UA_ROLLBACK;
        } else if (!d || in_sync(x)) {
            say(w, "waiting for the previous driver's pod (DaemonSet of label %s); ",
                GPUOP_LABEL_DRIVER_ROLLBACK);
        } else if (!driver_ready(d)) {
            say(w, "waiting for the previous driver pod %s to become Ready; ", d->name);
        } else if (u->paused) {
            o->action = GPUOP_UA_RESTORE;
        } else if (u->cordoned) {
            o->action = GPUOP_UA_UNCORDON;
        } else {
            say(w, "rolled back: the previous driver runs again (pod %s); ", d->name);
        }
    } else {
        say(w, "left cordoned; ");
    }
    say(w,
        "no other node starts until the driver's spec changes or this is cleared: "
        "kubectl annotate node %s %s-",
        x->node->name, GPUOP_ANNOTATION_UPGRADE_FAILED);
}

/* A node past its cordon that is schedulable: someone uncordoned it. gpuop
 * forgets its cordon at once (so a cordon made later by a person is never
 * removed by gpuop), then goes on with the node's steps, saying so. */
static bool uncordoned_midway(const struct gpuop_upgrade_node_out *o,
                              const struct gpuop_node_upgrade *u)
{
    return o->state >= GPUOP_US_WAIT_JOBS && o->state <= GPUOP_US_VALIDATION && !u->unschedulable;
}

/* Words before a schedulable node's step (uncordoned_midway). */
#define UNCORDONED_WORDS                                                                           \
    "uncordoned by someone else mid-upgrade (gpuop will not cordon or uncordon it again; GPU "     \
    "pods may be scheduled onto it): "

/* cordon-required: cordon (or, cordoned by gpuop already, label) towards
 * the next step; a node someone else cordoned meanwhile goes back. */
static void step_cordon(const struct gpuop_upgrade_node_in *x, struct gpuop_upgrade_node_out *o,
                        struct words *w)
{
    const struct gpuop_node_upgrade *u = &x->node->up;
    if (u->unschedulable && !u->cordoned) {
        say(w, "cordoned by someone else meanwhile: not touched until it is uncordoned");
        to(o, GPUOP_UA_LABEL, GPUOP_US_REQUIRED);
        return;
    }
    /* restart only: straight to the driver pod's replacement */
    to(o, u->cordoned && u->unschedulable ? GPUOP_UA_LABEL : GPUOP_UA_CORDON,
       restart_only(x) ? GPUOP_US_POD_RESTART : GPUOP_US_WAIT_JOBS);
    if (restart_only(x))
        say(w,
            "restarting its driver pod in place: the install configuration is "
            "unchanged (%s), no GPU pod is evicted",
            GPUOP_DRIVER_DIGEST_ENV);
}

/* uncordon-required: the dependents restored, then uncordon, then the
 * label of where it ends. */
static void step_uncordon(struct ctx *c, const struct gpuop_upgrade_node_in *x,
                          struct gpuop_upgrade_node_out *o, struct words *w)
{
    const struct gpuop_node_upgrade *u = &x->node->up;
    /* a node that left the upgrade loses the state label too */
    bool left = !wanted(c->in, x);
    int after = left ? GPUOP_US_NONE : in_sync(x) ? GPUOP_US_DONE : GPUOP_US_REQUIRED;
    if (left)
        say(w, "left the upgrade (deploy label false, or the driver disabled): undoing "
               "gpuop's pause and cordon");
    if (u->paused)
        to(o, GPUOP_UA_RESTORE, GPUOP_US_UNCORDON);
    else if (u->cordoned)
        to(o, GPUOP_UA_UNCORDON, after);
    else
        to(o, GPUOP_UA_LABEL, after);
}

/* A moving node's words say so first, naming both pools: "waiting to
 * move" before it starts, "moving" in its steps. */
static void say_move(const struct gpuop_upgrade_node_in *x, struct words *w, const char *verb)
{
    if (!move_to(x) || !w->len)
        return;
    struct words m = {0};
    say(&m, "%s from driver pool %s to %s: %s", verb, pool_of(x), move_to(x), w->buf);
    *w = m;
}

static void step(struct ctx *c, const struct gpuop_upgrade_node_in *x,
                 struct gpuop_upgrade_node_out *o, bool live_failure)
{
    struct words w = {0};
    const struct gpuop_node_upgrade *u = &x->node->up;
    to(o, GPUOP_UA_NONE, o->state);
    bool midway = uncordoned_midway(o, u);
    if (midway && u->cordoned) /* this plan forgets gpuop's cordon, nothing else */
        to(o, GPUOP_UA_FORGET_CORDON, o->state);
    else
        switch (o->state) {
        case GPUOP_US_NONE:
            if (move_to(x)) { /* no driver pod: nothing to take off under a job */
                say(&w, "no driver pod: moving it to driver pool %s at once", move_to(x));
                to(o, GPUOP_UA_MOVE_POOL, o->state);
                break;
            }
            say(&w, "waiting for its driver pod to be created");
            break;
        case GPUOP_US_DONE:
            /* the label only replaces another state: a node that never
               upgraded (none) stays unlabelled, done in the plan and the status */
            if (u->state != GPUOP_US_DONE && u->state != GPUOP_US_NONE)
                to(o, GPUOP_UA_LABEL, GPUOP_US_DONE);
            break;
        case GPUOP_US_REQUIRED:
            if (x->node->up.state != GPUOP_US_REQUIRED)
                to(o, GPUOP_UA_LABEL, GPUOP_US_REQUIRED); /* pass 3 may start it instead */
            break;
        case GPUOP_US_CORDON:
            step_cordon(x, o, &w);
            break;
        case GPUOP_US_WAIT_JOBS:
            step_wait_jobs(c, x, o, &w);
            break;
        case GPUOP_US_POD_DELETION:
        case GPUOP_US_DRAIN:
            step_evict(c, x, o, &w);
            break;
        case GPUOP_US_POD_RESTART:
            step_restart(c, x, o, &w);
            break;
        case GPUOP_US_VALIDATION:
            step_validation(c, x, o, &w);
            break;
        case GPUOP_US_UNCORDON:
            step_uncordon(c, x, o, &w);
            break;
        case GPUOP_US_FAILED:
            if (live_failure)
                step_failed(c, x, o, &w);
            break;
        default:
            break;
        }
    if (o->action == GPUOP_UA_FAIL) {
        w.len = 0;
        say(&w, "upgrade-failed: %s", o->fail_reason ? o->fail_reason : "");
    }
    if (in_progress(o->state))
        say_move(x, &w, "moving");
    if (midway) {
        struct words pre = {0};
        say(&pre, "%s%s", UNCORDONED_WORDS, w.len ? w.buf : "going on with its steps");
        w = pre;
    }
    set_wait(o, &w, &c->oom);
}

/* ---- pass 3: who starts ------------------------------------------------ */

/* Unavailable now, or about to be cordoned (the GPU Operator counts
 * cordon-required nodes the same way). */
static bool unavailable(const struct gpuop_upgrade_node_in *x,
                        const struct gpuop_upgrade_node_out *o)
{
    const struct gpuop_node_upgrade *u = &x->node->up;
    return u->unschedulable || u->not_ready || !driver_ready(x->driver) ||
           o->state == GPUOP_US_CORDON || o->next == GPUOP_US_CORDON ||
           o->action == GPUOP_UA_CORDON;
}

static void starts(struct ctx *c)
{
    struct gpuop_upgrade_plan *p = c->p;
    const struct gpuop_upgrade_policy *u = c->u;
    size_t maxu = p->max_unavailable > 0 ? (size_t)p->max_unavailable : 0;
    bool held = false; /* a node before in name order waits for its label */
    for (size_t i = 0; i < p->n; i++) {
        struct gpuop_upgrade_node_out *o = &p->nodes[i];
        const struct gpuop_upgrade_node_in *x = &c->in->nodes[o->in];
        if (o->state != GPUOP_US_REQUIRED)
            continue;
        struct words w = {0};
        bool labelled = x->node->up.state == GPUOP_US_REQUIRED; /* the GPU Operator's order */
        if (o->waiting) /* pass 2 said something (cordoned meanwhile) */
            say(&w, "%s", o->waiting);
        else if (x->node->up.skip) {
            say(&w,
                "skipped: label %s=true keeps it out of every driver upgrade (remove the label "
                "to upgrade it)",
                GPUOP_LABEL_UPGRADE_SKIP);
            p->skipped++;
            say_move(x, &w, "waiting to move");
            set_wait(o, &w, &c->oom);
            continue;
        } else if (p->failed != SIZE_MAX)
            say(&w,
                "upgrade stopped: node %s failed (%s); the failed version is not tried "
                "again until the driver's spec changes or the failure is cleared",
                c->in->nodes[p->nodes[p->failed].in].node->name,
                p->nodes[p->failed].fail_reason ? p->nodes[p->failed].fail_reason : "");
        else if (!u->auto_upgrade && move_to(x))
            say(&w,
                "upgradePolicy.autoUpgrade is false: gpuop moves no node (to move it by hand, "
                "drain its GPU pods first, then set its label %s to the new pool's name, or "
                "remove it for the default pool)",
                GPUOP_LABEL_DRIVER_POOL);
        else if (!u->auto_upgrade)
            say(&w, "upgradePolicy.autoUpgrade is false: gpuop upgrades no node (to upgrade it "
                    "by hand, drain its GPU pods first, then delete its driver pod)");
        else if (x->node->up.unschedulable && !x->node->up.cordoned)
            say(&w, "cordoned by someone else (not gpuop): not touched until it is uncordoned");
        else if (u->max_parallel && p->in_progress >= (size_t)u->max_parallel)
            say(&w, "waiting for a free slot: %zu node%s in progress, maxParallelUpgrades %d",
                p->in_progress, p->in_progress == 1 ? "" : "s", u->max_parallel);
        else if (!o->unavailable && p->unavailable + 1 > maxu)
            say(&w, "waiting: %zu of %zu GPU nodes unavailable, maxUnavailable %d", p->unavailable,
                p->n, p->max_unavailable);
        else if (!labelled) {
            say(&w, "labelling it upgrade-required first");
            held = true;
        } else if (held) /* its label landed first: the order is the names' */
            say(&w, "waiting for the nodes before it in name order to be labelled "
                    "upgrade-required");
        else {
            if (p->nnext < GPUOP_UPGRADE_NEXT_MAX) /* next until its label says it started */
                p->next[p->nnext++] = i;
            to(o, GPUOP_UA_LABEL, GPUOP_US_CORDON);
            p->in_progress++;
            if (!o->unavailable) {
                o->unavailable = true;
                p->unavailable++;
            }
            set_wait(o, &w, &c->oom);
            continue;
        }
        if (p->nnext < GPUOP_UPGRADE_NEXT_MAX &&
            !(x->node->up.unschedulable && !x->node->up.cordoned))
            p->next[p->nnext++] = i;
        say_move(x, &w, "waiting to move");
        set_wait(o, &w, &c->oom);
    }
}

/* ---- the plan ---------------------------------------------------------- */

static const struct gpuop_upgrade_in *sort_in;

static int by_name(const void *a, const void *b)
{
    const struct gpuop_upgrade_node_out *x = a, *y = b;
    return strcmp(sort_in->nodes[x->in].node->name, sort_in->nodes[y->in].node->name);
}

/* One more node at gen in p's counts (at most GPUOP_UPGRADE_GENS_MAX, by
 * gen): more generations than anyone runs at once are not counted. */
static void count_gen(struct gpuop_upgrade_plan *p, uint32_t gen)
{
    size_t i = 0;
    while (i < p->ngens && p->gens[i].gen < gen)
        i++;
    if (i < p->ngens && p->gens[i].gen == gen) {
        p->gens[i].n++;
        return;
    }
    if (p->ngens == GPUOP_UPGRADE_GENS_MAX)
        return;
    memmove(&p->gens[i + 1], &p->gens[i], (p->ngens - i) * sizeof(p->gens[0]));
    p->gens[i].gen = gen;
    p->gens[i].n = 1;
    p->ngens++;
}

int gpuop_upgrade_plan(const struct gpuop_upgrade_in *in, struct gpuop_upgrade_plan *out)
{
    memset(out, 0, sizeof(*out));
    out->failed = SIZE_MAX;
    size_t m = 0;
    for (size_t i = 0; i < in->n; i++)
        m += managed(in, &in->nodes[i]);
    if (!m)
        return 0;
    if (!(out->nodes = calloc(m, sizeof(*out->nodes))))
        return GPUOP_ENOMEM;
    for (size_t i = 0; i < in->n; i++)
        if (managed(in, &in->nodes[i]))
            out->nodes[out->n++].in = i;
    sort_in = in;
    gpuop_sort(out->nodes, out->n, sizeof(*out->nodes), by_name); /* usually in order */
    sort_in = NULL;

    struct ctx c = {.in = in, .u = in->policy, .p = out};
    out->max_unavailable = gpuop_policy_max_unavailable(in->policy, (int)out->n);
    bool *live = calloc(out->n, sizeof(*live));
    if (!live) {
        gpuop_upgrade_plan_free(out);
        return GPUOP_ENOMEM;
    }
    /* pass 1 */
    for (size_t i = 0; i < out->n; i++) {
        struct gpuop_upgrade_node_out *o = &out->nodes[i];
        const struct gpuop_upgrade_node_in *x = &in->nodes[o->in];
        o->state = (uint8_t)state_of(in, x, &live[i]);
        o->since = o->state == x->node->up.state ? x->node->up.since : 0;
        if (x->target_gen > out->target_gen)
            out->target_gen = x->target_gen;
        if (live[i] && out->failed == SIZE_MAX)
            out->failed = i;
    }
    /* pass 2 */
    for (size_t i = 0; i < out->n; i++) {
        struct gpuop_upgrade_node_out *o = &out->nodes[i];
        const struct gpuop_upgrade_node_in *x = &in->nodes[o->in];
        step(&c, x, o, live[i]);
        if (o->action == GPUOP_UA_FAIL && out->failed == SIZE_MAX)
            out->failed = i;
        /* a node holds its slot until its label leaves the range: the
           PATCH that ends it and the one that starts the next may land in
           either order */
        if (in_progress(o->next) || in_progress(o->state))
            out->in_progress++;
        o->unavailable = unavailable(x, o);
        out->unavailable += o->unavailable;
    }
    free(live);
    /* pass 3 */
    starts(&c);
    for (size_t i = 0; i < out->n; i++) {
        const struct gpuop_upgrade_node_out *o = &out->nodes[i];
        const struct gpuop_upgrade_node_in *x = &in->nodes[o->in];
        out->counts[o->next]++;
        if (x->driver && gpuop_pod_template_gen(x->driver)) /* 0: a rollback's */
            count_gen(out, gpuop_pod_template_gen(x->driver));
    }
    if (c.oom) {
        gpuop_upgrade_plan_free(out);
        return GPUOP_ENOMEM;
    }
    return 0;
}

void gpuop_upgrade_plan_free(struct gpuop_upgrade_plan *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++) {
        free(p->nodes[i].waiting);
        free(p->nodes[i].fail_reason);
    }
    free(p->nodes);
    memset(p, 0, sizeof(*p));
    p->failed = SIZE_MAX;
}

/* ---- a quiet plan ------------------------------------------------------ */

/* A node's part of a quiet plan: done, or waiting for its first driver
 * pod, with nothing to do. */
static bool out_quiet(const struct gpuop_upgrade_node_out *o)
{
    return o->action == GPUOP_UA_NONE && o->next == o->state && !o->fail_reason &&
           (o->state == GPUOP_US_DONE || o->state == GPUOP_US_NONE);
}

bool gpuop_upgrade_plan_quiet(const struct gpuop_upgrade_plan *p)
{
    if (p->failed != SIZE_MAX || p->nnext || p->wake || p->in_progress)
        return false;
    for (size_t i = 0; i < p->n; i++)
        if (!out_quiet(&p->nodes[i]))
            return false;
    return true;
}

/* ---- GPU pods ---------------------------------------------------------- */

static bool gpu_resources(json_t *rl)
{
    const char *k;
    json_t *v;
    const size_t mlen = strlen(GPUOP_RESOURCE_MIG_PREFIX), glen = strlen(GPUOP_RESOURCE_GPU);
    json_object_foreach(rl, k, v)
    {
        /* prefixes, as the GPU Operator's gpuPodSpecFilter: nvidia.com/gpu,
           nvidia.com/gpu.shared ... and every MIG resource */
        if (!strncmp(k, GPUOP_RESOURCE_GPU, glen) || !strncmp(k, GPUOP_RESOURCE_MIG_PREFIX, mlen)) {
            const char *s = json_string_value(v);
            if ((s && strcmp(s, "0") != 0) || (json_is_integer(v) && json_integer_value(v) > 0))
                return true;
        }
    }
    return false;
}

bool gpuop_upgrade_pod_uses_gpu(json_t *pod)
{
    json_t *spec = json_object_get(pod, "spec");
    static const char *const lists[] = {"containers", "initContainers"};
    for (size_t l = 0; l < 2; l++) {
        size_t i;
        json_t *ctr;
        json_array_foreach(json_object_get(spec, lists[l]), i, ctr)
        {
            json_t *res = json_object_get(ctr, "resources");
            if (gpu_resources(json_object_get(res, "requests")) ||
                gpu_resources(json_object_get(res, "limits")))
                return true;
        }
    }
    return false;
}

/* ---- status.upgrade ---------------------------------------------------- */

int gpuop_upgrade_status_add(json_t *status, const struct gpuop_upgrade_plan *plan,
                             const struct gpuop_upgrade_in *in)
{
    if (!plan || !plan->n || !in || !json_is_object(status))
        return 0;
    json_t *up = json_object(), *counts = json_object(), *gens = json_object(),
           *nodes = json_array(), *next = json_array(), *skipped = json_array();
    int oom = !up || !counts || !gens || !nodes || !next || !skipped;
    char t[32], g[16];
    for (int s = 0; !oom && s < GPUOP_US_COUNT; s++)
        if (plan->counts[s] && gpuop_upgrade_state_name(s))
            oom |= json_object_set_new(counts, gpuop_upgrade_state_name(s),
                                       json_integer((json_int_t)plan->counts[s]));
    for (size_t i = 0; !oom && i < plan->ngens; i++) {
        snprintf(g, sizeof(g), "%u", plan->gens[i].gen);
        oom |= json_object_set_new(gens, g, json_integer((json_int_t)plan->gens[i].n));
    }
    size_t listed = 0, omitted = 0;
    for (size_t i = 0; !oom && plan->nodes && i < plan->n; i++) {
        const struct gpuop_upgrade_node_out *o = &plan->nodes[i];
        const struct gpuop_node *node = in->nodes[o->in].node;
        if (node->up.skip && o->next == GPUOP_US_REQUIRED &&
            json_array_size(skipped) < GPUOP_STATUS_MAX_NODES)
            oom |= json_array_append_new(skipped, json_string(node->name));
        /* done, or no driver pod yet (a rollout, not an upgrade: the
           findings say why): not listed; the rest up to the cap */
        if (o->next == GPUOP_US_DONE || o->next == GPUOP_US_NONE)
            continue;
        if (listed == GPUOP_STATUS_MAX_NODES) {
            omitted++;
            continue;
        }
        listed++;
        const char *st = gpuop_upgrade_state_name(o->next);
        json_t *e =
            json_pack("{s:s, s:s}", "name", in->nodes[o->in].node->name, "state", st ? st : "none");
        if (e && o->since && o->next == o->state) {
            gpuop_time_format(t, sizeof(t), (int64_t)o->since * GPUOP_US_PER_S, GPUOP_TIME_S);
            json_object_set_new(e, "since", json_string(t));
        }
        if (e && o->waiting)
            json_object_set_new(e, "waitingFor", json_string(o->waiting));
        oom |= !e || json_array_append_new(nodes, e);
    }
    for (size_t i = 0; !oom && i < plan->nnext; i++)
        oom |= json_array_append_new(
            next, json_string(in->nodes[plan->nodes[plan->next[i]].in].node->name));
    if (!oom) {
        oom |= json_object_set_new(up, "revision", json_integer(plan->target_gen));
        if (in->version)
            oom |= json_object_set_new(up, "version", json_string(in->version));
        oom |= json_object_set(up, "counts", counts) || json_object_set(up, "versions", gens);
        if (json_array_size(nodes))
            oom |= json_object_set(up, "nodes", nodes);
        if (omitted)
            oom |= json_object_set_new(up, "nodesOmitted", json_integer((json_int_t)omitted));
        if (json_array_size(next))
            oom |= json_object_set(up, "next", next);
        if (json_array_size(skipped))
            oom |= json_object_set(up, "skipped", skipped);
    }
    if (!oom && plan->failed != SIZE_MAX) {
        const struct gpuop_upgrade_node_out *o = &plan->nodes[plan->failed];
        const struct gpuop_upgrade_node_in *x = &in->nodes[o->in];
        json_t *f =
            json_pack("{s:s, s:I}", "node", x->node->name, "revision", (json_int_t)x->target_gen);
        if (f && in->version)
            json_object_set_new(f, "version", json_string(in->version));
        if (f && o->fail_reason)
            json_object_set_new(f, "reason", json_string(o->fail_reason));
        oom |= !f || json_object_set_new(up, "failed", f);
    }
    if (!oom)
        oom |= json_object_set(status, "upgrade", up);
    json_decref(up);
    json_decref(counts);
    json_decref(gens);
    json_decref(nodes);
    json_decref(next);
    json_decref(skipped);
    return oom ? GPUOP_ENOMEM : 0;
}
