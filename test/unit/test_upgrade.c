/*
 * test_upgrade.c - the driver upgrade's planner (findings/upgrade_planner.c).
 *
 * A small fake cluster (nodes, their driver and validator pods, GPU
 * workload pods, PodDisruptionBudgets that refuse evictions) is driven by
 * the plan the way the controller drives the real one: every action is
 * applied, the DaemonSet controller recreates a deleted driver pod on the
 * target generation, and the plan is made again. After every plan the
 * invariants are checked over the whole cluster: at most
 * maxParallelUpgrades nodes in progress, never more unavailable than
 * maxUnavailable (beyond those unavailable before), no driver pod deleted
 * under a GPU pod, a hand-cordoned node never touched, deploy.driver=false
 * never planned, at most one node failed at a time and none started after.
 */
#define _DEFAULT_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "gpuop/model.h"
#include "gpuop/operand.h"
#include "gpuop/policy.h"
#include "gpuop/status.h"
#include "gpuop/upgrade.h"

#define NMAX 16
#define PMAX 4
#define T0   1800000000LL

struct fnode {
    char name[16];
    struct gpuop_node n;
    struct gpuop_pod *driver, *validator;
    uint32_t gen; /* the driver pod's */
    bool crash;   /* a new driver pod crash-loops here */
    bool hand;    /* cordoned by hand before the upgrade */
    bool listed;
    struct gpuop_upgrade_pod pods[PMAX];
    bool pdb[PMAX]; /* its eviction is refused */
    size_t npods;
    int deleted_under_gpu;           /* driver deleted while a GPU pod ran */
    int cordons;                     /* CORDON actions taken here */
    char *others[GPUOP_OPERAND_MAX]; /* deploy label values (the validator's when paused) */
    /* driver pools: its pool label and wanted annotation, as the node's strings */
    char osbuf[64];
    int linger;          /* ticks the old pool's driver pod stays after a move */
    int moved_under_gpu; /* MOVE_POOL while a GPU pod ran */
};

static const char paused_value[] = GPUOP_LABEL_PAUSED_FOR_UPGRADE;

/* The controller's pause and restore of the validator's deploy label: a
 * "false" label is left alone (pause_node, restore_get_done). */
static void set_validator_paused(struct fnode *f, bool paused)
{
    int vi = gpuop_operand_by_key("validator");
    if (f->n.deploy[vi] == GPUOP_LABEL_FALSE)
        return;
    f->n.deploy[vi] = paused ? GPUOP_LABEL_OTHER : GPUOP_LABEL_TRUE;
    f->others[vi] = paused ? (char *)paused_value : NULL;
    f->n.deploy_other = paused ? f->others : NULL;
}

/* deploy.driver not "true" (false, pre-installed, absent) or
 * deploy.operands=false: no driver DaemonSet selects the node. */
static bool opted_out(const struct fnode *f)
{
    return f->n.deploy[gpuop_operand_by_key("driver")] != GPUOP_LABEL_TRUE ||
           f->n.operands_label == GPUOP_LABEL_FALSE;
}

static bool validator_paused(const struct fnode *f)
{
    return f->n.deploy[gpuop_operand_by_key("validator")] == GPUOP_LABEL_OTHER;
}

struct world {
    struct fnode nodes[NMAX];
    size_t n;
    uint32_t target;
    long long now;
    struct gpuop_upgrade_policy u;
    bool validator;
    bool disabled;   /* spec.driver.enabled false, or the policy gone */
    uint32_t digest; /* the driver template's install configuration digest; 0 none */
    int max_in_progress, max_unavailable_seen, base_unavailable;
    int fails, starts_after_fail;
};

/* The install configuration digest the next pods made carry (label
 * GPUOP_LABEL_DRIVER_DIGEST; 0: none). */
static uint32_t next_digest;
/* ... and controller revision (label controller-revision-hash; NULL none). */
static const char *next_rev;

static struct gpuop_pod *mkpod(const char *name, const char *node, const char *component,
                               uint32_t gen, bool ready, const char *waiting, long long created)
{
    char buf[1024], ts[32], rd[256] = "", wt[256] = "";
    time_t t = (time_t)created;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (ready)
        snprintf(rd, sizeof(rd),
                 ",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\","
                 "\"lastTransitionTime\":\"%s\"}]",
                 ts);
    /* a crash loop that fails the node has restarted more than
       GPUOP_UPGRADE_FAIL_RESTARTS times; "CrashLoopBackOff-young" has not */
    bool loop = waiting && !strcmp(waiting, "CrashLoopBackOff");
    if (waiting)
        snprintf(wt, sizeof(wt),
                 ",\"containerStatuses\":[{\"name\":\"c\",\"restartCount\":%d,\"state\":"
                 "{\"waiting\":{\"reason\":\"%.*s\",\"message\":\"back-off\"}}}]",
                 loop ? GPUOP_UPGRADE_FAIL_RESTARTS + 1 : 3, (int)strcspn(waiting, "-"), waiting);
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"%s\",\"creationTimestamp\":\"%s\",\"labels\":"
             "{\"app.kubernetes.io/component\":\"%s\",\"pod-template-generation\":\"%u\","
             "\"" GPUOP_LABEL_DRIVER_DIGEST "\":\"%u\",\"" GPUOP_LABEL_REVISION_HASH "\":\"%s\"}},"
             "\"spec\":{\"nodeName\":\"%s\"},\"status\":{\"phase\":\"Running\"%s%s}}",
             name, ts, component, gen, next_digest, next_rev ? next_rev : "", node, rd, wt);
    json_t *j = json_loads(buf, 0, NULL);
    assert_non_null(j);
    struct gpuop_pod *p = gpuop_pod_new(j, NULL, NULL);
    json_decref(j);
    assert_non_null(p);
    return p;
}

static void set_driver(struct world *w, struct fnode *f, uint32_t gen, bool ready,
                       const char *waiting)
{
    char name[64];
    gpuop_pod_free(f->driver);
    snprintf(name, sizeof(name), "gpuop-driver-%s-g%u", f->name, gen);
    next_digest = w->digest;
    f->driver = mkpod(name, f->name, "driver", gen, ready, waiting, w->now);
    next_digest = 0;
    f->gen = gen;
}

static void set_validator(struct world *w, struct fnode *f)
{
    char name[64];
    gpuop_pod_free(f->validator);
    snprintf(name, sizeof(name), "gpuop-validator-%s", f->name);
    f->validator = mkpod(name, f->name, "operator-validator", 1, true, NULL, w->now);
}

static void world_init(struct world *w, size_t n, uint32_t old)
{
    memset(w, 0, sizeof(*w));
    w->now = T0;
    w->target = old;
    w->validator = true;
    w->u = (struct gpuop_upgrade_policy){.auto_upgrade = true,
                                         .max_parallel = 1,
                                         .max_unavailable = 25,
                                         .max_unavailable_pct = true,
                                         .delete_timeout_s = 300,
                                         .drain_timeout_s = 300,
                                         .ready_timeout_s = 600,
                                         .wait_selector = "",
                                         .drain_selector = ""};
    w->n = n;
    for (size_t i = 0; i < n; i++) {
        struct fnode *f = &w->nodes[i];
        snprintf(f->name, sizeof(f->name), "gpu-%02zu", i);
        f->n.name = f->name;
        f->n.gpu = true;
        f->n.deploy[gpuop_operand_by_key("driver")] = GPUOP_LABEL_TRUE;
        f->n.deploy[gpuop_operand_by_key("validator")] = GPUOP_LABEL_TRUE;
        set_driver(w, f, old, true, NULL);
        w->now -= 10; /* the validator is older than any new driver */
        set_validator(w, f);
        w->now += 10;
    }
}

static void world_free(struct world *w)
{
    for (size_t i = 0; i < w->n; i++) {
        gpuop_pod_free(w->nodes[i].driver);
        gpuop_pod_free(w->nodes[i].validator);
    }
}

static void add_gpu_pod(struct fnode *f, const char *name, bool pdb)
{
    struct gpuop_upgrade_pod *p = &f->pods[f->npods];
    memset(p, 0, sizeof(*p));
    p->ns = "team-a";
    p->name = name;
    p->gpu = true;
    p->drain = true;
    f->pdb[f->npods++] = pdb;
}

/* The node's driver pool label and wanted annotation (NULL: absent). */
static void set_pools(struct fnode *f, const char *label, const char *wanted)
{
    const char *v[GPUOP_OS_FIELDS] = {0};
    v[GPUOP_OS_DRIVER_POOL] = label;
    v[GPUOP_OS_POOL_WANTED] = wanted;
    char buf[sizeof(f->osbuf)];
    size_t at = 0;
    f->n.os_labels = 0;
    for (int k = 0; k < GPUOP_OS_FIELDS; k++) {
        if (v[k])
            f->n.os_labels |= (uint8_t)GPUOP_OS_HAS(k);
        int len = snprintf(buf + at, sizeof(buf) - at, "%s", v[k] ? v[k] : "");
        at += (size_t)len + 1;
    }
    memcpy(f->osbuf, buf, at);
    f->n.os = f->n.os_labels ? f->osbuf : NULL;
}

static void build_in(struct world *w, struct gpuop_upgrade_in *in, struct gpuop_upgrade_node_in *xs)
{
    for (size_t i = 0; i < w->n; i++) {
        struct fnode *f = &w->nodes[i];
        xs[i] =
            (struct gpuop_upgrade_node_in){.node = &f->n,
                                           .driver = f->driver,
                                           .validator = f->validator,
                                           .target_gen = w->target,
                                           .target_digest = w->digest,
                                           .dependents = f->validator ? 1 : 0,
                                           .dependent = f->validator ? f->validator->name : NULL,
                                           .pods_known = f->listed,
                                           .pods = f->pods,
                                           .npods = f->npods,
                                           .driver_elsewhere = f->linger > 0};
    }
    *in = (struct gpuop_upgrade_in){.policy = &w->u,
                                    .driver_enabled = !w->disabled,
                                    .validator_enabled = w->validator,
                                    .version = "595.91.07",
                                    .now = w->now,
                                    .nodes = xs,
                                    .n = w->n};
}

static struct fnode *fnode_of(struct world *w, const struct gpuop_upgrade_in *in,
                              const struct gpuop_upgrade_node_out *o)
{
    return (struct fnode *)((char *)in->nodes[o->in].node - offsetof(struct fnode, n));
}

static bool gpu_running(const struct fnode *f)
{
    for (size_t i = 0; i < f->npods; i++)
        if (f->pods[i].gpu && !f->pods[i].terminal)
            return true;
    return false;
}

static int count_unavailable(struct world *w)
{
    int u = 0;
    for (size_t i = 0; i < w->n; i++) {
        struct fnode *f = &w->nodes[i];
        if (f->n.gpu && !opted_out(f) &&
            (f->n.up.unschedulable || !f->driver || !f->driver->ready_since))
            u++;
    }
    return u;
}

static void remove_pod(struct fnode *f, size_t i)
{
    memmove(&f->pods[i], &f->pods[i + 1], (f->npods - i - 1) * sizeof(f->pods[0]));
    memmove(&f->pdb[i], &f->pdb[i + 1], (f->npods - i - 1) * sizeof(f->pdb[0]));
    f->npods--;
}

/* The node's driver pod has the template's install configuration. */
static bool restart_only_here(const struct world *w, const struct fnode *f)
{
    return w->digest && f->driver && gpuop_pod_driver_digest(f->driver) == w->digest;
}

/* The controller's part: one action. */
static void apply(struct world *w, struct fnode *f, const struct gpuop_upgrade_node_out *o)
{
    struct gpuop_node_upgrade *u = &f->n.up;
    bool label = true;
    switch (o->action) {
    case GPUOP_UA_NONE:
        label = false;
        break;
    case GPUOP_UA_CORDON:
        assert_false(f->hand);
        f->cordons++;
        u->unschedulable = u->cordoned = true;
        break;
    case GPUOP_UA_LIST:
        f->listed = true;
        break;
    case GPUOP_UA_EVICT:
        for (size_t i = f->npods; i-- > 0;) {
            if (!gpuop_upgrade_evicts(&w->u, o->state, &f->pods[i]))
                continue;
            if (f->pdb[i])
                f->pods[i].blocked = true, f->pods[i].blocked_why = "PDB team-a/train allows 0";
            else
                remove_pod(f, i);
        }
        break;
    case GPUOP_UA_PAUSE:
        u->paused = true;
        set_validator_paused(f, true);
        break;
    case GPUOP_UA_RESTORE_VALIDATOR:
        set_validator_paused(f, false);
        break;
    case GPUOP_UA_DELETE_DRIVER:
        assert_false(u->rollback); /* the rollback DaemonSet would bring it back */
        if (gpu_running(f) && !restart_only_here(w, f))
            f->deleted_under_gpu++;
        assert_null(f->validator); /* the dependents left first */
        gpuop_pod_free(f->driver);
        f->driver = NULL; /* the DaemonSet controller makes the new one (tick) */
        f->linger = 0;    /* the old pool's pod, gone sooner */
        break;
    case GPUOP_UA_DELETE_VALIDATOR:
        set_validator(w, f);
        break;
    case GPUOP_UA_RESTORE: /* only once the new one is Ready, or the node left the upgrade */
        assert_true(w->disabled || opted_out(f) || (f->driver && f->driver->ready_since));
        assert_int_equal(f->linger, 0); /* never the old pool's pod taken for the new one */
        u->paused = false;
        set_validator_paused(f, false);
        break;
    case GPUOP_UA_UNCORDON:
        assert_false(f->hand);
        assert_true(u->cordoned); /* only a cordon gpuop made */
        u->unschedulable = u->cordoned = false;
        break;
    case GPUOP_UA_FORGET_CORDON:
        assert_true(u->cordoned && !u->unschedulable);
        u->cordoned = false;
        break;
    case GPUOP_UA_FAIL:
        u->failed_gen = w->target;
        w->fails++;
        break;
    case GPUOP_UA_ROLLBACK: /* the pool's pod leaves, the rollback DaemonSet's comes (tick) */
        u->rollback = true;
        u->rollback_ending = false;
        break;
    case GPUOP_UA_ROLLBACK_END:
        assert_true(u->rollback);
        assert_null(f->validator); /* the dependents left first */
        u->rollback_ending = true;
        break;
    case GPUOP_UA_MOVE_POOL: { /* the label moves; the old pool's pod goes (tick) */
        const char *to = gpuop_node_os(&f->n, GPUOP_OS_POOL_WANTED);
        char want[32];
        assert_non_null(to);
        snprintf(want, sizeof(want), "%s", to);
        if (gpu_running(f) && f->driver)
            f->moved_under_gpu++;
        if (f->driver)
            assert_null(f->validator); /* the dependents left first */
        set_pools(f, strcmp(want, "default") ? want : NULL, NULL);
        f->linger = f->driver ? 8 : 0; /* long enough that taking it for the new pool's would
                                          show */
        break;
    }
    case GPUOP_UA_ROLLBACK_CLEAR:
        assert_true(u->rollback_ending);
        assert_null(f->driver); /* the old pod left before the new one comes */
        u->rollback = u->rollback_ending = false;
        break;
    }
    if (label && o->next != u->state) {
        u->state = o->next;
        u->since = o->next == GPUOP_US_NONE ? 0 : (uint32_t)w->now; /* the label removed */
    }
    if (label && o->next == GPUOP_US_NONE) /* patch_node: every mark of gpuop's goes */
        u->failed_gen = 0, u->rollback = u->rollback_ending = false;
}

/* Plans once, checks the invariants, applies every action. Returns the
 * number of actions taken. */
static int tick(struct world *w, struct gpuop_upgrade_plan *keep)
{
    struct gpuop_upgrade_in in;
    struct gpuop_upgrade_node_in xs[NMAX];
    struct gpuop_upgrade_plan p;
    build_in(w, &in, xs);
    assert_int_equal(gpuop_upgrade_plan(&in, &p), 0);
    int in_progress = 0, holding = 0, acted = 0, failed_now = 0;
    bool failure_before = false;
    for (size_t i = 0; i < p.n; i++) {
        const struct gpuop_upgrade_node_out *o = &p.nodes[i];
        if (o->next >= GPUOP_US_CORDON && o->next <= GPUOP_US_UNCORDON)
            in_progress++;
        /* its label in the range now or after this plan: the PATCHes of one
           plan land in any order */
        if ((o->next >= GPUOP_US_CORDON && o->next <= GPUOP_US_UNCORDON) ||
            (o->state >= GPUOP_US_CORDON && o->state <= GPUOP_US_UNCORDON))
            holding++;
        if (o->state == GPUOP_US_FAILED)
            failure_before = true;
        struct fnode *f = fnode_of(w, &in, o);
        /* a node nobody is done with says why */
        if (o->next != GPUOP_US_DONE && o->action == GPUOP_UA_NONE && !o->waiting)
            fail_msg("%s waits silently in %s", f->name, gpuop_upgrade_state_name(o->next));
        if (f->hand)
            assert_true(o->next == GPUOP_US_REQUIRED || o->next == GPUOP_US_DONE);
        if (opted_out(f)) /* only what gpuop did is undone */
            assert_true((o->action == GPUOP_UA_RESTORE || o->action == GPUOP_UA_UNCORDON ||
                         o->action == GPUOP_UA_LABEL) &&
                        (o->next == GPUOP_US_UNCORDON || o->next == GPUOP_US_NONE));
        /* unless only its userspace restarts (the digests match) */
        if (o->action == GPUOP_UA_DELETE_DRIVER && !restart_only_here(w, f))
            assert_false(gpu_running(f));
    }
    for (size_t i = 0; i < p.n; i++) {
        const struct gpuop_upgrade_node_out *o = &p.nodes[i];
        if (o->state == GPUOP_US_REQUIRED && o->next == GPUOP_US_CORDON && failure_before)
            w->starts_after_fail++;
        failed_now += o->action == GPUOP_UA_FAIL;
    }
    assert_true(failed_now <= 1);
    if (w->u.max_parallel && holding > w->u.max_parallel && !w->disabled) /* not a release */
        fail_msg("%d nodes in progress at once, maxParallelUpgrades %d", holding,
                 w->u.max_parallel);
    if (in_progress > w->max_in_progress)
        w->max_in_progress = in_progress;
    for (size_t i = 0; i < p.n; i++) {
        const struct gpuop_upgrade_node_out *o = &p.nodes[i];
        acted += o->action != GPUOP_UA_NONE;
        apply(w, fnode_of(w, &in, o), o);
    }
    /* the DaemonSet controller: a deleted driver pod comes back on the
       target; a node labelled for the rollback gets the rollback DaemonSet's
       pod (generation 0: of no pool) instead, one labelled "ending" none */
    for (size_t i = 0; i < w->n; i++) {
        struct fnode *f = &w->nodes[i];
        if (f->linger && --f->linger == 0) { /* the old pool's DaemonSet took it off */
            gpuop_pod_free(f->driver);
            f->driver = NULL;
        }
        if (f->linger) {
        } else if (opted_out(f)) {
            gpuop_pod_free(f->driver);
            f->driver = NULL;
        } else if (f->n.up.rollback_ending && f->driver) {
            gpuop_pod_free(f->driver);
            f->driver = NULL;
        } else if (f->n.up.rollback && !f->n.up.rollback_ending && (!f->driver || f->gen)) {
            set_driver(w, f, 0, true, NULL);
        } else if (!f->driver && f->n.gpu && !f->n.up.rollback) {
            set_driver(w, f, w->target, !f->crash, f->crash ? "CrashLoopBackOff" : NULL);
        }
        if (validator_paused(f) && f->validator) { /* its pod leaves the paused node */
            gpuop_pod_free(f->validator);
            f->validator = NULL;
        } else if (f->n.deploy[gpuop_operand_by_key("validator")] == GPUOP_LABEL_TRUE &&
                   !f->validator && f->n.gpu) {
            set_validator(w, f);
        }
    }
    int unav = count_unavailable(w);
    int maxu = gpuop_policy_max_unavailable(&w->u, (int)p.n);
    if (unav > maxu && unav > w->base_unavailable && !w->disabled)
        fail_msg("%d GPU nodes unavailable, maxUnavailable %d", unav, maxu);
    if (unav > w->max_unavailable_seen)
        w->max_unavailable_seen = unav;
    w->now += 5;
    if (keep)
        *keep = p;
    else
        gpuop_upgrade_plan_free(&p);
    return acted;
}

/* Ticks until a node fails: *p is that plan (free it). */
static void until_fail(struct world *w, struct gpuop_upgrade_plan *p)
{
    for (int t = 0; t < 200; t++) {
        tick(w, p);
        for (size_t i = 0; i < p->n; i++)
            if (p->nodes[i].action == GPUOP_UA_FAIL)
                return;
        gpuop_upgrade_plan_free(p);
    }
    fail_msg("no node failed");
}

static int run(struct world *w, int max_ticks)
{
    int t = 0;
    while (t < max_ticks && tick(w, NULL))
        t++;
    return t;
}

static void assert_all(struct world *w, int state, uint32_t gen)
{
    for (size_t i = 0; i < w->n; i++) {
        struct fnode *f = &w->nodes[i];
        if (f->hand)
            continue;
        if (f->n.up.state != state || f->gen != gen)
            fail_msg("%s: %s at generation %u, want %s at %u", f->name,
                     gpuop_upgrade_state_name(f->n.up.state), f->gen,
                     gpuop_upgrade_state_name(state), gen);
        assert_false(f->n.up.unschedulable);
        assert_false(f->n.up.paused);
        assert_false(validator_paused(f));
        assert_false(f->n.up.rollback);
        if (f->n.deploy[gpuop_operand_by_key("validator")] == GPUOP_LABEL_TRUE)
            assert_non_null(f->validator);
    }
}

/* The planner's input is made for every node at every status reconcile
 * of the active policy (5,000 of them at once at 5,000 nodes): its size
 * is what upgrade.h says, on a 64-bit build. */
static void test_node_in_size(void **state)
{
    (void)state;
    if (sizeof(void *) == 8)
        assert_int_equal(sizeof(struct gpuop_upgrade_node_in), 72);
}

/* Eight nodes, one version change: every node done, one at a time, in name
 * order; nothing is left cordoned or paused. */
static void test_full_upgrade(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, 8, 1);
    /* settles on generation 1 without a single label: a node that never
       upgraded is upgrade-done in the plan and the status, not on the node
       (1,000 PATCHes saved at install, issue 24) */
    struct gpuop_upgrade_plan p;
    assert_int_equal(run(&w, 50), 0);
    tick(&w, &p);
    assert_int_equal(p.counts[GPUOP_US_DONE], 8);
    gpuop_upgrade_plan_free(&p);
    assert_all(&w, GPUOP_US_NONE, 1);
    w.target = 2;
    int order[NMAX], norder = 0;
    for (int t = 0; t < 400; t++) {
        for (size_t i = 0; i < w.n; i++)
            if (w.nodes[i].n.up.state == GPUOP_US_CORDON &&
                (norder == 0 || order[norder - 1] != (int)i))
                order[norder++] = (int)i;
        if (!tick(&w, NULL))
            break;
    }
    assert_all(&w, GPUOP_US_DONE, 2);
    assert_int_equal(norder, 8);
    for (int i = 0; i < 8; i++)
        assert_int_equal(order[i], i); /* in name order */
    assert_int_equal(w.max_in_progress, 1);
    assert_true(w.max_unavailable_seen <= 2);
    world_free(&w);
}

/* Nodes start in name order even when their upgrade-required labels land
 * in another order: a node labelled before an earlier one waits for it
 * (the status promised the earlier one next). */
static void test_start_order_labels(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, 4, 1);
    w.u.max_parallel = 0;
    w.u.max_unavailable = 100;
    run(&w, 50);
    w.target = 2;
    w.nodes[2].n.up.state = GPUOP_US_REQUIRED; /* its PATCH landed first */
    w.nodes[2].n.up.since = (uint32_t)w.now;
    struct gpuop_upgrade_plan p;
    tick(&w, &p);
    assert_int_equal(p.nodes[2].next, GPUOP_US_REQUIRED);
    assert_int_equal(p.nodes[2].action, GPUOP_UA_NONE);
    assert_non_null(strstr(p.nodes[2].waiting, "name order"));
    assert_int_equal(p.nodes[0].action, GPUOP_UA_LABEL);
    assert_int_equal(p.nodes[0].next, GPUOP_US_REQUIRED);
    assert_int_equal(p.nnext, 4);
    gpuop_upgrade_plan_free(&p);
    tick(&w, &p); /* every label there: all four start, in order */
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(p.nodes[i].next, GPUOP_US_CORDON);
    gpuop_upgrade_plan_free(&p);
    run(&w, 300);
    assert_all(&w, GPUOP_US_DONE, 2);
    world_free(&w);
}

/* A node whose driver pod is going away for another reason than the
 * upgrade (deploy.operands=false opts the node out; the DaemonSet removes
 * its pod) is not started: a terminating old pod is no driver to upgrade,
 * and an opted-out node is not managed. */
static void test_driver_leaving(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, 3, 1);
    run(&w, 50);
    w.target = 2;
    w.nodes[1].driver->deleted = true; /* terminating, old generation */
    w.nodes[2].n.operands_label = GPUOP_LABEL_FALSE;
    struct gpuop_upgrade_plan p;
    tick(&w, &p);
    assert_int_equal(p.n, 2); /* gpu-02 opted out */
    assert_int_equal(p.nodes[1].state, GPUOP_US_NONE);
    assert_int_equal(p.nodes[1].next, GPUOP_US_NONE);
    assert_int_equal(p.nodes[1].action, GPUOP_UA_NONE);
    assert_int_equal(p.nodes[0].state, GPUOP_US_REQUIRED);
    gpuop_upgrade_plan_free(&p);
    world_free(&w);
}

/* maxParallelUpgrades 0 is no limit: maxUnavailable (25% of 8 = 2) rules. */
static void test_parallel_and_unavailable(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, 8, 1);
    w.u.max_parallel = 0;
    run(&w, 50);
    w.target = 2;
    run(&w, 400);
    assert_all(&w, GPUOP_US_DONE, 2);
    assert_int_equal(w.max_in_progress, 2);
    assert_int_equal(w.max_unavailable_seen, 2);
    world_free(&w);

    /* a node already unavailable (driver not Ready) counts: one more may go; the
       unavailable one may start too, as it makes nobody more unavailable */
    world_init(&w, 8, 1);
    w.u.max_parallel = 3;
    run(&w, 50);
    w.target = 2;
    w.base_unavailable = 2;
    set_driver(&w, &w.nodes[7], 1, false, NULL);
    struct gpuop_upgrade_plan p;
    tick(&w, NULL); /* labelled upgrade-required first, as the GPU Operator does */
    tick(&w, &p);
    assert_int_equal(p.nodes[0].next, GPUOP_US_CORDON);
    assert_int_equal(p.nodes[7].next, GPUOP_US_CORDON);
    for (size_t i = 1; i < 7; i++) {
        assert_int_equal(p.nodes[i].next, GPUOP_US_REQUIRED);
        assert_non_null(
            strstr(p.nodes[i].waiting, "2 of 8 GPU nodes unavailable, maxUnavailable 2"));
    }
    assert_int_equal(p.nnext, 5);
    gpuop_upgrade_plan_free(&p);
    world_free(&w);

    /* maxUnavailable as a count */
    world_init(&w, 4, 1);
    w.u.max_parallel = 0;
    w.u.max_unavailable = 3;
    w.u.max_unavailable_pct = false;
    run(&w, 50);
    w.target = 2;
    run(&w, 400);
    assert_all(&w, GPUOP_US_DONE, 2);
    assert_int_equal(w.max_in_progress, 3);
    world_free(&w);
}

/* GPU pods are evicted first; a PDB that refuses holds the node in
 * pod-deletion-required and says so; the driver is not deleted under it. */
static void test_gpu_pods_and_pdb(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, 2, 1);
    run(&w, 50);
    add_gpu_pod(&w.nodes[0], "train-0", true);
    add_gpu_pod(&w.nodes[0], "train-1", true);
    add_gpu_pod(&w.nodes[1], "infer-0", false);
    w.target = 2;
    run(&w, 60);
    struct gpuop_upgrade_plan p;
    tick(&w, &p);
    assert_int_equal(w.nodes[0].n.up.state, GPUOP_US_POD_DELETION);
    assert_int_equal(w.nodes[0].gen, 1);
    assert_int_equal(w.nodes[0].deleted_under_gpu, 0);
    const char *why = p.nodes[0].waiting;
    assert_non_null(why);
    assert_non_null(strstr(why, "waiting for 2 GPU pods: team-a/train-0, team-a/train-1"));
    assert_non_null(strstr(why, "PodDisruptionBudgets refuse"));
    assert_non_null(strstr(why, "allows 0"));
    /* the second node waits for the slot, and says so */
    assert_int_equal(p.nodes[1].next, GPUOP_US_REQUIRED);
    assert_non_null(strstr(p.nodes[1].waiting, "maxParallelUpgrades 1"));
    assert_int_equal(p.nnext, 1);
    gpuop_upgrade_plan_free(&p);
    /* the timeout passes: the node fails (drain off), nothing deleted */
    w.now += 400;
    tick(&w, &p);
    assert_int_equal(p.nodes[0].action, GPUOP_UA_FAIL);
    assert_non_null(strstr(p.nodes[0].fail_reason, "gpuPodDeletion.timeoutSeconds (300 s) passed"));
    assert_non_null(strstr(p.nodes[0].fail_reason, "team-a/train-0"));
    gpuop_upgrade_plan_free(&p);
    run(&w, 50);
    assert_int_equal(w.nodes[0].gen, 1);
    assert_int_equal(w.nodes[0].npods, 2);
    assert_int_equal(w.nodes[0].n.up.state, GPUOP_US_FAILED);
    world_free(&w);

    /* force changes nothing for a PDB: evictions only, never a DELETE past
       it, whatever gpuPodDeletion.force says; with drain.enable the node
       goes on to the drain, which the PDB holds the same way */
    for (int drain = 0; drain < 2; drain++) {
        world_init(&w, 1, 1);
        w.u.delete_force = true;
        w.u.drain = drain;
        w.u.drain_force = true;
        run(&w, 20);
        add_gpu_pod(&w.nodes[0], "train-0", true);
        w.target = 2;
        for (int i = 0; i < 200; i++) {
            tick(&w, NULL);
            w.now += 10;
        }
        assert_int_equal(w.nodes[0].npods, 1);
        assert_int_equal(w.nodes[0].gen, 1);
        assert_int_equal(w.nodes[0].deleted_under_gpu, 0);
        assert_int_equal(w.nodes[0].n.up.state, GPUOP_US_FAILED);
        world_free(&w);
    }
}

/* Pods pod deletion must not evict (the GPU Operator's rules): a GPU pod
 * with no controller without gpuPodDeletion.force, and a DaemonSet's GPU
 * pod, end the step naming the pod, with nothing evicted; the node fails
 * (or, with drain.enable, goes on to the drain); force lets the bare pod be
 * evicted (never deleted). */
static void test_unevictable_gpu_pods(void **state)
{
    (void)state;
    struct world w;
    struct gpuop_upgrade_plan p;
    /* a bare GPU pod, no force: the node fails naming it, the pod stays */
    world_init(&w, 2, 1);
    run(&w, 20);
    add_gpu_pod(&w.nodes[0], "bare-0", false);
    w.nodes[0].pods[0].unmanaged = true;
    add_gpu_pod(&w.nodes[0], "train-0", false);
    w.target = 2;
    until_fail(&w, &p);
    assert_non_null(strstr(p.nodes[0].fail_reason, "team-a/bare-0 not evictable: no controller"));
    assert_null(strstr(p.nodes[0].fail_reason, "train-0"));
    gpuop_upgrade_plan_free(&p);
    run(&w, 60);
    assert_int_equal(w.nodes[0].n.up.state, GPUOP_US_FAILED);
    assert_int_equal(w.nodes[0].npods, 2); /* nothing evicted */
    assert_int_equal(w.nodes[0].gen, 1);
    world_free(&w);

    /* with force: evicted (the Eviction API), and the upgrade goes on */
    world_init(&w, 2, 1);
    w.u.delete_force = true;
    run(&w, 20);
    add_gpu_pod(&w.nodes[0], "bare-0", false);
    w.nodes[0].pods[0].unmanaged = true;
    w.target = 2;
    run(&w, 200);
    assert_all(&w, GPUOP_US_DONE, 2);
    assert_int_equal(w.nodes[0].npods, 0);
    world_free(&w);

    /* a bare pod without force, drain.enable with drain.force: the drain
       takes it */
    world_init(&w, 1, 1);
    w.u.drain = true;
    w.u.drain_force = true;
    run(&w, 20);
    add_gpu_pod(&w.nodes[0], "bare-0", false);
    w.nodes[0].pods[0].unmanaged = true;
    w.target = 2;
    run(&w, 200);
    assert_all(&w, GPUOP_US_DONE, 2);
    assert_int_equal(w.nodes[0].npods, 0);
    world_free(&w);

    /* a DaemonSet's GPU pod: the node fails naming it, even with force and
       drain, and does not loop */
    world_init(&w, 2, 1);
    w.u.delete_force = true;
    w.u.drain = true;
    run(&w, 20);
    add_gpu_pod(&w.nodes[0], "ds-gpu-0", false);
    w.nodes[0].pods[0].daemonset = true;
    w.nodes[0].pods[0].drain = false; /* the controller never drains a DaemonSet's pod */
    w.target = 2;
    until_fail(&w, &p);
    assert_non_null(strstr(p.nodes[0].fail_reason, "team-a/ds-gpu-0 owned by a DaemonSet"));
    gpuop_upgrade_plan_free(&p);
    run(&w, 200);
    assert_int_equal(w.fails, 1);
    assert_int_equal(w.nodes[0].n.up.state, GPUOP_US_FAILED);
    assert_int_equal(w.nodes[0].npods, 1);
    assert_int_equal(w.nodes[0].gen, 1);
    assert_int_equal(w.starts_after_fail, 0);
    world_free(&w);
}

/* waitForCompletion: the selected jobs are waited for, up to the timeout. */
static void test_wait_for_jobs(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, 1, 1);
    w.u.wait_selector = "app=job";
    w.u.wait_timeout_s = 100;
    run(&w, 10);
    add_gpu_pod(&w.nodes[0], "job-0", false);
    w.nodes[0].pods[0].job = true;
    w.target = 2;
    struct gpuop_upgrade_plan p;
    for (int i = 0; i < 6; i++)
        tick(&w, NULL);
    tick(&w, &p);
    assert_int_equal(p.nodes[0].next, GPUOP_US_WAIT_JOBS);
    assert_non_null(strstr(p.nodes[0].waiting, "waiting for 1 job pod: team-a/job-0 to finish"));
    assert_true(p.wake > 0);
    gpuop_upgrade_plan_free(&p);
    w.nodes[0].pods[0].terminal = true; /* the job finished */
    w.nodes[0].pods[0].gpu = false;
    run(&w, 100);
    assert_all(&w, GPUOP_US_DONE, 2);
    world_free(&w);
}

/* A new driver pod that crash-loops: that node is upgrade-failed, stays
 * cordoned, the others keep the old version and stay schedulable; the
 * failure is remembered until the spec changes; clearing it is removing
 * the annotation. */
static void test_crash_loop_stops(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, 8, 1);
    run(&w, 50);
    w.nodes[0].crash = true;
    w.target = 2;
    run(&w, 200);
    assert_int_equal(w.fails, 1);
    assert_int_equal(w.starts_after_fail, 0);
    assert_int_equal(w.nodes[0].n.up.state, GPUOP_US_FAILED);
    assert_int_equal(w.nodes[0].n.up.failed_gen, 2);
    assert_true(w.nodes[0].n.up.unschedulable);
    for (size_t i = 1; i < 8; i++) {
        assert_int_equal(w.nodes[i].gen, 1);
        assert_false(w.nodes[i].n.up.unschedulable);
        assert_int_equal(w.nodes[i].n.up.state, GPUOP_US_REQUIRED);
    }
    struct gpuop_upgrade_plan p;
    tick(&w, &p);
    assert_int_equal(p.failed, 0);
    assert_non_null(strstr(p.nodes[0].waiting, "kubectl annotate node gpu-00 "
                                               "gpuop.dev/driver-upgrade-failed-"));
    assert_non_null(strstr(p.nodes[1].waiting, "upgrade stopped: node gpu-00 failed"));
    assert_non_null(strstr(p.nodes[0].fail_reason, "CrashLoopBackOff"));
    json_t *st = json_object();
    struct gpuop_upgrade_in in;
    struct gpuop_upgrade_node_in xs[NMAX];
    build_in(&w, &in, xs);
    assert_int_equal(gpuop_upgrade_status_add(st, &p, &in), 0);
    json_t *up = json_object_get(st, "upgrade");
    assert_string_equal(json_string_value(json_object_get(json_object_get(up, "failed"), "node")),
                        "gpu-00");
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(up, "counts"), "upgrade-failed")), 1);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(up, "versions"), "1")), 7);
    json_decref(st);
    gpuop_upgrade_plan_free(&p);

    /* cleared while the new driver still crash-loops: it fails again, not done */
    w.nodes[0].n.up.failed_gen = 0;
    run(&w, 20);
    assert_int_equal(w.fails, 2);
    assert_int_equal(w.nodes[0].n.up.state, GPUOP_US_FAILED);
    assert_int_equal(w.nodes[0].n.up.failed_gen, 2);
    assert_true(w.nodes[0].n.up.unschedulable);
    assert_int_equal(w.starts_after_fail, 0);

    /* cleared (annotation removed) after the image was fixed: it goes on */
    w.nodes[0].crash = false;
    w.nodes[0].n.up.failed_gen = 0;
    set_driver(&w, &w.nodes[0], 2, true, NULL); /* someone fixed the pull */
    run(&w, 400);
    assert_all(&w, GPUOP_US_DONE, 2);
    world_free(&w);

    /* a spec change (generation 3) outdates the failure: it is tried again */
    world_init(&w, 2, 1);
    run(&w, 50);
    w.nodes[0].crash = true;
    w.target = 2;
    run(&w, 100);
    assert_int_equal(w.nodes[0].n.up.state, GPUOP_US_FAILED);
    w.nodes[0].crash = false;
    w.target = 3;
    run(&w, 200);
    assert_all(&w, GPUOP_US_DONE, 3);
    world_free(&w);
}

/* A new driver pod never Ready: failed after driverReadyTimeoutSeconds. */
static void test_ready_timeout(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, 2, 1);
    run(&w, 50);
    w.target = 2;
    w.nodes[0].crash = true; /* never Ready: no waiting reason at all */
    for (int i = 0; i < 20 && w.nodes[0].n.up.state != GPUOP_US_POD_RESTART; i++)
        tick(&w, NULL);
    tick(&w, NULL); /* deletes the driver; recreated not Ready */
    set_driver(&w, &w.nodes[0], 2, false, "ContainerCreating");
    struct gpuop_upgrade_plan p;
    tick(&w, &p);
    assert_non_null(strstr(p.nodes[0].waiting, "to become Ready (ContainerCreating)"));
    gpuop_upgrade_plan_free(&p);
    w.now += 700;
    tick(&w, &p);
    assert_int_equal(p.nodes[0].action, GPUOP_UA_FAIL);
    assert_non_null(strstr(p.nodes[0].fail_reason, "not Ready within"));
    gpuop_upgrade_plan_free(&p);
    world_free(&w);
}

/* onFailure rollback: the node gets the previous driver back (the rollback
 * DaemonSet's pod) and is uncordoned, its dependents restored; it stays
 * upgrade-failed (remembered) and no other node starts. Cleared while the
 * new driver still fails, it fails and rolls back again; cleared once the
 * image is fixed, or outdated by a new spec, the old pod leaves before the
 * new one comes and every node ends on the target. */
/* others: the generation every other node is at (0: not checked) */
static void rolled_back(struct world *w, int fails, uint32_t others)
{
    struct fnode *f = &w->nodes[0];
    assert_int_equal(w->fails, fails);
    assert_int_equal(f->n.up.state, GPUOP_US_FAILED);
    assert_int_equal(f->n.up.failed_gen, w->target);
    assert_true(f->n.up.rollback);
    assert_int_equal(f->gen, 0);
    assert_true(f->driver && f->driver->ready_since);
    assert_false(f->n.up.unschedulable);
    assert_false(f->n.up.paused);
    assert_false(validator_paused(f));
    assert_int_equal(w->starts_after_fail, 0);
    for (size_t i = 1; others && i < w->n; i++)
        if (w->nodes[i].gen != others)
            fail_msg("%s at generation %u, want %u", w->nodes[i].name, w->nodes[i].gen, others);
    struct gpuop_upgrade_plan p;
    tick(w, &p);
    assert_int_equal(p.failed, 0);
    assert_non_null(strstr(p.nodes[0].waiting, "rolled back: the previous driver runs again"));
    assert_int_equal(p.nodes[0].action, GPUOP_UA_NONE);
    gpuop_upgrade_plan_free(&p);
}

static void test_rollback(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, 4, 1);
    w.u.on_failure = GPUOP_ON_FAILURE_ROLLBACK;
    run(&w, 50);
    w.nodes[0].crash = true;
    w.target = 2;
    run(&w, 200);
    rolled_back(&w, 1, 1);

    /* the clear command while the image still crash-loops: the upgrade
       goes on (gpu-01, already labelled upgrade-required, first), the node
       takes its turn again, fails again and stops it again */
    w.nodes[0].n.up.failed_gen = 0;
    run(&w, 400);
    rolled_back(&w, 2, 0);

    w.nodes[0].crash = false; /* fixed, then cleared */
    w.nodes[0].n.up.failed_gen = 0;
    run(&w, 400);
    assert_all(&w, GPUOP_US_DONE, 2);
    world_free(&w);

    /* a new spec outdates the failure of a rolled-back node */
    world_init(&w, 3, 1);
    w.u.on_failure = GPUOP_ON_FAILURE_ROLLBACK;
    run(&w, 50);
    w.nodes[0].crash = true;
    w.target = 2;
    run(&w, 200);
    rolled_back(&w, 1, 1);
    w.nodes[0].crash = false;
    w.target = 3;
    run(&w, 400);
    assert_all(&w, GPUOP_US_DONE, 3);
    world_free(&w);
}

/* A node whose validator does not run (its deploy label false) is not
 * held in validation-required for a validator that never comes. */
static void test_no_validator_on_node(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, 3, 1);
    struct fnode *f = &w.nodes[1];
    f->n.deploy[gpuop_operand_by_key("validator")] = GPUOP_LABEL_FALSE;
    gpuop_pod_free(f->validator);
    f->validator = NULL;
    run(&w, 50);
    w.target = 2;
    run(&w, 300);
    assert_int_equal(w.fails, 0);
    assert_all(&w, GPUOP_US_DONE, 2);
    assert_null(f->validator);
    world_free(&w);
}

/* A node someone cordoned is never cordoned, uncordoned or started by
 * gpuop, and says what it waits for; the others go on. */
static void test_hand_cordoned(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, 8, 1); /* maxUnavailable 2: the hand-cordoned one and one more */
    run(&w, 50);
    w.nodes[1].hand = true;
    w.nodes[1].n.up.unschedulable = true;
    w.base_unavailable = 1;
    w.target = 2;
    struct gpuop_upgrade_plan p;
    tick(&w, &p);
    assert_non_null(strstr(p.nodes[1].waiting, "cordoned by someone else"));
    gpuop_upgrade_plan_free(&p);
    run(&w, 400);
    assert_all(&w, GPUOP_US_DONE, 2);
    assert_true(w.nodes[1].n.up.unschedulable);
    assert_int_equal(w.nodes[1].gen, 1);
    assert_int_equal(w.nodes[1].n.up.state, GPUOP_US_REQUIRED);
    world_free(&w);
}

/* The skip label (k8s-operator-libs SkipNodeUpgrade): a node labelled
 * nvidia.com/gpu-driver-upgrade.skip=true is never started, cordoned or
 * evicted while the others upgrade; status.upgrade names it and why. Only
 * "true" counts; a node already past upgrade-required finishes. */
static void test_skip_label(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, 4, 1);
    run(&w, 50);
    w.nodes[1].n.up.skip = true;
    add_gpu_pod(&w.nodes[1], "train-long", false);
    w.target = 2;
    run(&w, 400);
    assert_int_equal(w.nodes[1].cordons, 0);
    assert_int_equal(w.nodes[1].gen, 1);
    assert_int_equal(w.nodes[1].npods, 1);
    assert_int_equal(w.nodes[1].n.up.state, GPUOP_US_REQUIRED);
    for (size_t i = 0; i < 4; i++)
        if (i != 1)
            assert_int_equal(w.nodes[i].gen, 2);
    struct gpuop_upgrade_plan p;
    struct gpuop_upgrade_in in;
    struct gpuop_upgrade_node_in xs[NMAX];
    tick(&w, &p);
    assert_non_null(
        strstr(p.nodes[1].waiting, "skipped: label nvidia.com/gpu-driver-upgrade.skip"));
    assert_int_equal(p.skipped, 1);
    assert_int_equal(p.nnext, 0);
    json_t *st = json_object();
    build_in(&w, &in, xs);
    assert_int_equal(gpuop_upgrade_status_add(st, &p, &in), 0);
    json_t *sk = json_object_get(json_object_get(st, "upgrade"), "skipped");
    assert_int_equal(json_array_size(sk), 1);
    assert_string_equal(json_string_value(json_array_get(sk, 0)), "gpu-01");
    json_decref(st);
    gpuop_upgrade_plan_free(&p);
    /* the label removed: it takes its turn */
    w.nodes[1].n.up.skip = false;
    w.nodes[1].npods = 0;
    run(&w, 200);
    assert_all(&w, GPUOP_US_DONE, 2);
    world_free(&w);

    /* set once the node is past upgrade-required: it finishes */
    world_init(&w, 1, 1);
    run(&w, 20);
    w.target = 2;
    for (int i = 0; i < 20 && w.nodes[0].n.up.state != GPUOP_US_WAIT_JOBS; i++)
        tick(&w, NULL);
    assert_int_equal(w.nodes[0].n.up.state, GPUOP_US_WAIT_JOBS);
    w.nodes[0].n.up.skip = true;
    run(&w, 100);
    assert_all(&w, GPUOP_US_DONE, 2);
    world_free(&w);
}

/* The GPU Operator's failure rule: a new driver pod fails the node when it
 * is not Ready after more than GPUOP_UPGRADE_FAIL_RESTARTS restarts, or not
 * Ready past driverReadyTimeoutSeconds; an image pull error or a young
 * crash loop alone does not. A failed node whose driver becomes Ready by
 * itself leaves upgrade-failed, is uncordoned and the upgrade goes on. */
static void test_failure_rules(void **state)
{
    (void)state;
    struct world w;
    struct gpuop_upgrade_plan p;
    static const char *const transient[] = {"ErrImagePull", "ImagePullBackOff",
                                            "CrashLoopBackOff-young"};
    for (size_t k = 0; k < sizeof(transient) / sizeof(transient[0]); k++) {
        world_init(&w, 2, 1);
        run(&w, 20);
        w.target = 2;
        for (int i = 0; i < 30 && !(w.nodes[0].driver && w.nodes[0].gen == 2); i++)
            tick(&w, NULL);
        set_driver(&w, &w.nodes[0], 2, false, transient[k]);
        for (int i = 0; i < 20; i++)
            tick(&w, NULL);
        assert_int_equal(w.fails, 0);
        assert_int_equal(w.nodes[0].n.up.state, GPUOP_US_POD_RESTART);
        tick(&w, &p);
        assert_non_null(strstr(p.nodes[0].waiting, "to become Ready"));
        gpuop_upgrade_plan_free(&p);
        set_driver(&w, &w.nodes[0], 2, true, NULL); /* the registry answered */
        run(&w, 200);
        assert_int_equal(w.fails, 0);
        assert_all(&w, GPUOP_US_DONE, 2);
        world_free(&w);
    }

    /* a crash loop past 10 restarts fails the node; Ready later, it leaves
       upgrade-failed by itself, uncordoned, and the next node starts */
    world_init(&w, 3, 1);
    run(&w, 20);
    w.nodes[0].crash = true;
    w.target = 2;
    run(&w, 100);
    assert_int_equal(w.fails, 1);
    assert_int_equal(w.nodes[0].n.up.state, GPUOP_US_FAILED);
    assert_true(w.nodes[0].n.up.unschedulable);
    assert_int_equal(w.nodes[1].gen, 1);
    w.nodes[0].crash = false;
    set_driver(&w, &w.nodes[0], 2, true, NULL);
    run(&w, 300);
    assert_int_equal(w.fails, 1);
    assert_all(&w, GPUOP_US_DONE, 2);
    world_free(&w);
}

/* Probe findings: a node carrying gpuop's marks (cordon, pause) whose
 * state label someone removed is in progress, never done, until its new
 * driver is Ready; a node someone uncordons mid-upgrade loses gpuop's
 * cordon mark at once, so a later cordon of theirs is never removed. */
static void test_marks_without_label(void **state)
{
    (void)state;
    struct world w;
    struct gpuop_upgrade_plan p;
    world_init(&w, 2, 1);
    run(&w, 20);
    w.target = 2;
    /* up to the old driver's deletion */
    for (int i = 0; i < 40 && w.nodes[0].driver && w.nodes[0].gen == 1; i++)
        tick(&w, NULL);
    assert_int_equal(w.nodes[0].n.up.state, GPUOP_US_POD_RESTART);
    /* the new pod is Pending (not Ready), and the label goes */
    set_driver(&w, &w.nodes[0], 2, false, "ContainerCreating");
    w.nodes[0].n.up.state = GPUOP_US_NONE;
    w.nodes[0].n.up.since = 0;
    for (int i = 0; i < 20; i++) {
        tick(&w, &p);
        assert_int_not_equal(p.nodes[0].next, GPUOP_US_DONE);
        assert_int_not_equal(p.nodes[0].action, GPUOP_UA_UNCORDON);
        assert_int_not_equal(p.nodes[0].action, GPUOP_UA_RESTORE);
        assert_int_not_equal(p.nodes[1].next, GPUOP_US_CORDON); /* no next node */
        gpuop_upgrade_plan_free(&p);
    }
    assert_true(w.nodes[0].n.up.unschedulable);
    set_driver(&w, &w.nodes[0], 2, true, NULL);
    run(&w, 200);
    assert_all(&w, GPUOP_US_DONE, 2);
    world_free(&w);

    /* the label removed with no driver pod at all (deleted, not yet made) */
    world_init(&w, 1, 1);
    run(&w, 20);
    w.target = 2;
    for (int i = 0; i < 40 && w.nodes[0].driver && w.nodes[0].gen == 1; i++)
        tick(&w, NULL);
    gpuop_pod_free(w.nodes[0].driver);
    w.nodes[0].driver = NULL;
    w.nodes[0].n.up.state = GPUOP_US_NONE;
    tick(&w, &p);
    assert_int_equal(p.nodes[0].next, GPUOP_US_POD_RESTART);
    assert_true(p.nodes[0].action == GPUOP_UA_NONE || p.nodes[0].action == GPUOP_UA_LIST);
    gpuop_upgrade_plan_free(&p);
    world_free(&w);

    /* someone uncordons it mid-upgrade, then cordons it again: gpuop forgets
       its cordon at once, says so, and leaves their cordon on at the end */
    world_init(&w, 1, 1);
    run(&w, 20);
    add_gpu_pod(&w.nodes[0], "train-0", true); /* a PDB holds it a while */
    w.target = 2;
    for (int i = 0; i < 20 && w.nodes[0].n.up.state != GPUOP_US_POD_DELETION; i++)
        tick(&w, NULL);
    assert_true(w.nodes[0].n.up.cordoned);
    w.nodes[0].n.up.unschedulable = false; /* kubectl uncordon */
    tick(&w, &p);
    assert_int_equal(p.nodes[0].action, GPUOP_UA_FORGET_CORDON);
    assert_non_null(strstr(p.nodes[0].waiting, "uncordoned by someone else mid-upgrade"));
    gpuop_upgrade_plan_free(&p);
    assert_false(w.nodes[0].n.up.cordoned);
    w.nodes[0].n.up.unschedulable = true; /* kubectl cordon, theirs */
    w.nodes[0].pdb[0] = false;
    w.nodes[0].pods[0].blocked = false;
    run(&w, 200);
    assert_int_equal(w.nodes[0].gen, 2);
    assert_int_equal(w.nodes[0].n.up.state, GPUOP_US_DONE);
    assert_true(w.nodes[0].n.up.unschedulable); /* theirs, kept */
    assert_false(w.nodes[0].n.up.cordoned);
    world_free(&w);
}

/* Nodes whose driver is host-provided ("false", "pre-installed") or whose
 * driver label is absent are not managed: they do not count for
 * maxUnavailable (two such nodes of five once stalled a 25 % upgrade). */
static void test_host_driver_not_counted(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, 5, 1);
    int d = gpuop_operand_by_key("driver");
    for (size_t i = 3; i < 5; i++) {
        struct fnode *f = &w.nodes[i];
        f->n.deploy[d] = i == 3 ? GPUOP_LABEL_PREINSTALLED : GPUOP_LABEL_ABSENT;
        gpuop_pod_free(f->driver);
        f->driver = NULL; /* no driver DaemonSet selects it */
    }
    w.target = 2;
    struct gpuop_upgrade_plan p;
    tick(&w, &p);
    assert_int_equal(p.n, 3);
    assert_int_equal(p.max_unavailable, 1);
    gpuop_upgrade_plan_free(&p);
    run(&w, 400);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(w.nodes[i].gen, 2);
        assert_int_equal(w.nodes[i].n.up.state, GPUOP_US_DONE);
    }
    assert_null(w.nodes[3].driver);
    world_free(&w);
}

/* "In sync" is the GPU Operator's: the pod's controller revision against
 * the DaemonSet's newest. A template changed X -> Y -> X (generation 3,
 * revision X again) upgrades no node still on X (generation 1); a node
 * already on Y (generation 2) goes back to X like any upgrade. */
static void test_revision_back(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, 3, 1);
    next_rev = "rev-x";
    for (size_t i = 0; i < w.n; i++)
        set_driver(&w, &w.nodes[i], 1, true, NULL);
    next_rev = "rev-y";
    set_driver(&w, &w.nodes[2], 2, true, NULL); /* gpu-02 upgraded to Y already */
    next_rev = NULL;
    run(&w, 20);
    w.target = 3; /* back to X */
    struct gpuop_upgrade_in in;
    struct gpuop_upgrade_node_in xs[NMAX];
    struct gpuop_upgrade_plan p;
    build_in(&w, &in, xs);
    for (size_t i = 0; i < w.n; i++)
        xs[i].target_rev = gpuop_revision_hash("rev-x");
    assert_int_equal(gpuop_upgrade_plan(&in, &p), 0);
    assert_int_equal(p.nodes[0].next, GPUOP_US_DONE);
    assert_int_equal(p.nodes[1].next, GPUOP_US_DONE);
    assert_int_equal(p.nodes[2].next, GPUOP_US_REQUIRED); /* on Y: it goes back to X */
    assert_int_equal(p.counts[GPUOP_US_DONE], 2);
    gpuop_upgrade_plan_free(&p);
    /* without the revision (unknown) it is generation alone: all three */
    build_in(&w, &in, xs);
    assert_int_equal(gpuop_upgrade_plan(&in, &p), 0);
    assert_int_equal(p.counts[GPUOP_US_REQUIRED], 3);
    gpuop_upgrade_plan_free(&p);
    world_free(&w);
}

/* A template change that leaves the install configuration alone (the
 * pods' DRIVER_CONFIG_DIGEST equals the DaemonSet's, the GPU Operator's
 * restart-only path): every driver pod is replaced node by node, cordoned
 * but with no job wait, no eviction (a PDB that refuses everything is never
 * asked) and no drain; a configuration change is a full upgrade again. */
static void test_restart_only(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, 3, 1);
    w.digest = 4242;
    for (size_t i = 0; i < w.n; i++)
        set_driver(&w, &w.nodes[i], 1, true, NULL);
    w.u.drain = true;
    w.u.wait_selector = "app=job";
    run(&w, 20);
    for (size_t i = 0; i < w.n; i++) {
        add_gpu_pod(&w.nodes[i], "train", true); /* a PDB refuses its eviction */
        w.nodes[i].pods[0].job = true;
    }
    w.target = 2; /* tolerations changed: a new template, the same digest */
    struct gpuop_upgrade_plan p;
    bool said = false;
    for (int t = 0; t < 200; t++) {
        tick(&w, &p);
        for (size_t i = 0; i < p.n; i++) {
            assert_int_not_equal(p.nodes[i].action, GPUOP_UA_EVICT);
            assert_int_not_equal(p.nodes[i].action, GPUOP_UA_LIST);
            assert_int_not_equal(p.nodes[i].next, GPUOP_US_WAIT_JOBS);
            assert_int_not_equal(p.nodes[i].next, GPUOP_US_POD_DELETION);
            assert_int_not_equal(p.nodes[i].next, GPUOP_US_DRAIN);
            said |= p.nodes[i].waiting && strstr(p.nodes[i].waiting, "install configuration");
        }
        gpuop_upgrade_plan_free(&p);
    }
    assert_true(said);
    assert_all(&w, GPUOP_US_DONE, 2);
    for (size_t i = 0; i < w.n; i++) {
        assert_int_equal(w.nodes[i].npods, 1); /* the job kept its GPU */
        assert_int_equal(w.nodes[i].cordons, 1);
    }
    /* the configuration changes (a new version): the full upgrade, which
       waits for the job (no timeout) */
    w.digest = 4343;
    w.target = 3;
    run(&w, 50);
    assert_int_equal(w.nodes[0].n.up.state, GPUOP_US_WAIT_JOBS);
    assert_int_equal(w.nodes[0].gen, 2);
    world_free(&w);
}

/* deploy.driver=false nodes and nodes no driver DaemonSet covers are not
 * planned; a node added during the upgrade starts on the new version. */
static void test_unmanaged_and_new_nodes(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, 3, 1);
    int d = gpuop_operand_by_key("driver");
    w.nodes[2].n.deploy[d] = GPUOP_LABEL_FALSE;
    run(&w, 50);
    w.target = 2;
    struct gpuop_upgrade_plan p;
    tick(&w, &p);
    assert_int_equal(p.n, 2);
    gpuop_upgrade_plan_free(&p);
    /* a new node: the DaemonSet gives it the new version at once */
    w.n = 4;
    struct fnode *f = &w.nodes[3];
    memset(f, 0, sizeof(*f));
    snprintf(f->name, sizeof(f->name), "gpu-new");
    f->n.name = f->name;
    f->n.gpu = true;
    f->n.deploy[d] = GPUOP_LABEL_TRUE;
    set_driver(&w, f, 2, true, NULL);
    set_validator(&w, f);
    tick(&w, &p);
    assert_int_equal(p.n, 3);
    assert_int_equal(p.nodes[2].in, 3); /* gpu-new, last by name of the managed */
    assert_int_equal(p.nodes[2].state, GPUOP_US_DONE);
    assert_int_equal(p.nodes[2].action, GPUOP_UA_NONE); /* nothing to write */
    gpuop_upgrade_plan_free(&p);
    assert_false(f->n.up.unschedulable);
    run(&w, 300);
    assert_int_equal(w.nodes[2].n.up.state, GPUOP_US_NONE); /* never labelled */
    assert_int_equal(w.nodes[2].gen, 1);
    assert_int_equal(w.nodes[0].gen, 2);
    world_free(&w);
}

/* A node opted out (deploy.driver=false: host-provided from now on, or
 * deploy.operands=false) while gpuop has it cordoned and its dependents
 * paused: gpuop puts back what it did (the dependents' labels, the
 * cordon), removes its state label, and touches nothing else there; the
 * other nodes go on. */
static void test_opted_out_mid_upgrade(void **state)
{
    (void)state;
    for (int how = 0; how < 2; how++) {
        struct world w;
        world_init(&w, 3, 1);
        run(&w, 50);
        w.target = 2;
        struct fnode *f = &w.nodes[0];
        for (int t = 0; t < 100 && !f->n.up.paused; t++)
            tick(&w, NULL);
        assert_true(f->n.up.paused && f->n.up.cordoned);
        assert_int_equal(f->n.up.state, GPUOP_US_POD_RESTART);
        if (how == 0)
            f->n.deploy[gpuop_operand_by_key("driver")] = GPUOP_LABEL_FALSE;
        else
            f->n.operands_label = GPUOP_LABEL_FALSE;
        run(&w, 400);
        assert_false(f->n.up.unschedulable);
        assert_false(f->n.up.cordoned);
        assert_false(f->n.up.paused);
        assert_false(validator_paused(f));
        assert_int_equal(f->n.up.state, GPUOP_US_NONE);
        assert_null(f->driver);
        for (size_t i = 1; i < w.n; i++) {
            assert_int_equal(w.nodes[i].n.up.state, GPUOP_US_DONE);
            assert_int_equal(w.nodes[i].gen, 2);
            assert_false(w.nodes[i].n.up.unschedulable);
        }
        struct gpuop_upgrade_plan p;
        tick(&w, &p);
        assert_int_equal(p.n, 2); /* out of the plan once gpuop's marks are gone */
        gpuop_upgrade_plan_free(&p);
        world_free(&w);
    }
}

/* The driver disabled, or the last policy gone (the controller plans with
 * the driver disabled then), mid-upgrade: every node gpuop marked is let
 * go: dependents restored, uncordoned where gpuop cordoned it, no state
 * label, since or failed annotation left for a later policy to resume. */
static void test_released_when_gone(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, 4, 1);
    w.u.max_parallel = 2;
    w.u.max_unavailable = 100;
    run(&w, 50);
    w.nodes[1].crash = true;
    add_gpu_pod(&w.nodes[0], "train-0", true); /* held in pod deletion by its PDB */
    w.target = 2;
    for (int t = 0; t < 100 && !w.fails; t++)
        tick(&w, NULL);
    assert_int_equal(w.nodes[0].n.up.state, GPUOP_US_POD_DELETION);
    assert_int_equal(w.nodes[1].n.up.state, GPUOP_US_FAILED);
    assert_true(w.nodes[1].n.up.paused);
    assert_int_equal(w.nodes[2].n.up.state, GPUOP_US_REQUIRED);
    w.disabled = true;
    run(&w, 100);
    for (size_t i = 0; i < w.n; i++) {
        const struct gpuop_node_upgrade *u = &w.nodes[i].n.up;
        if (u->state || u->since || u->failed_gen || u->cordoned || u->paused || u->unschedulable ||
            validator_paused(&w.nodes[i]))
            fail_msg("%s still marked: state %d since %u failed %u cordoned %d paused %d",
                     w.nodes[i].name, u->state, u->since, u->failed_gen, u->cordoned, u->paused);
    }
    assert_int_equal(w.nodes[0].npods, 1); /* its GPU pod untouched */
    struct gpuop_upgrade_plan p;
    tick(&w, &p);
    assert_int_equal(p.n, 0);
    gpuop_upgrade_plan_free(&p);
    world_free(&w);
}

/* status.upgrade.nodes lists the nodes in the upgrade, not every GPU node
 * still waiting for its first driver pod (a rollout: at 5,000 nodes that
 * was 5,000 entries in every status write; the findings say why), and at
 * most GPUOP_STATUS_MAX_NODES of them, the rest counted in nodesOmitted. */
static void test_status_nodes_capped(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, 3, 1);
    gpuop_pod_free(w.nodes[0].driver); /* its first driver pod not created yet */
    w.nodes[0].driver = NULL;
    w.u.auto_upgrade = false;
    w.target = 2; /* the other two: upgrade-required, waiting (autoUpgrade off) */
    struct gpuop_upgrade_in in;
    struct gpuop_upgrade_node_in xs[NMAX];
    struct gpuop_upgrade_plan p;
    build_in(&w, &in, xs);
    assert_int_equal(gpuop_upgrade_plan(&in, &p), 0);
    json_t *st = json_object();
    assert_int_equal(gpuop_upgrade_status_add(st, &p, &in), 0);
    json_t *nodes = json_object_get(json_object_get(st, "upgrade"), "nodes");
    assert_int_equal(json_array_size(nodes), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(nodes, 0), "name")),
                        "gpu-01");
    json_decref(st);
    gpuop_upgrade_plan_free(&p);
    world_free(&w);

    /* more waiting nodes than the cap */
    enum { MANY = GPUOP_STATUS_MAX_NODES + 7 };
    struct gpuop_node *ns = calloc(MANY, sizeof(*ns));
    struct gpuop_upgrade_node_in *xin = calloc(MANY, sizeof(*xin));
    struct gpuop_upgrade_node_out *outs = calloc(MANY, sizeof(*outs));
    char(*names)[16] = calloc(MANY, sizeof(*names));
    assert_true(ns && xin && outs && names);
    for (size_t i = 0; i < MANY; i++) {
        snprintf(names[i], sizeof(names[i]), "n-%03zu", i);
        ns[i].name = names[i];
        xin[i].node = &ns[i];
        outs[i].in = i;
        outs[i].state = outs[i].next = GPUOP_US_REQUIRED;
    }
    struct gpuop_upgrade_in many = {.policy = &w.u, .nodes = xin, .n = MANY};
    struct gpuop_upgrade_plan mp = {.nodes = outs, .n = MANY, .failed = SIZE_MAX};
    st = json_object();
    assert_int_equal(gpuop_upgrade_status_add(st, &mp, &many), 0);
    json_t *up = json_object_get(st, "upgrade");
    assert_int_equal(json_array_size(json_object_get(up, "nodes")), GPUOP_STATUS_MAX_NODES);
    assert_int_equal(json_integer_value(json_object_get(up, "nodesOmitted")), 7);
    json_decref(st);
    free(ns);
    free(xin);
    free(outs);
    free(names);
}

/* A stale upgrade-done (or upgrade-required) label is read, not trusted:
 * the driver pod's generation decides. An in-progress label without
 * gpuop's since annotation (another operator's) is recomputed too. */
static void test_stale_labels(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, 3, 1);
    w.target = 2;
    w.nodes[0].n.up.state = GPUOP_US_DONE;  /* stale: its pod is on 1 */
    w.nodes[1].n.up.state = GPUOP_US_DRAIN; /* another operator's, no since */
    set_driver(&w, &w.nodes[2], 2, true, NULL);
    w.nodes[2].n.up.state = GPUOP_US_REQUIRED; /* stale: its pod is on 2 */
    struct gpuop_upgrade_plan p;
    tick(&w, &p);
    assert_int_equal(p.nodes[0].state, GPUOP_US_REQUIRED);
    assert_int_equal(p.nodes[1].state, GPUOP_US_REQUIRED);
    assert_int_equal(p.nodes[2].state, GPUOP_US_DONE);
    assert_int_equal(p.counts[GPUOP_US_CORDON] + p.counts[GPUOP_US_REQUIRED], 2);
    gpuop_upgrade_plan_free(&p);
    run(&w, 300);
    assert_all(&w, GPUOP_US_DONE, 2);
    world_free(&w);
}

/* Each state resumes from the cluster alone: the plan made from a copy of
 * the nodes (a restart, a new leader) is the plan made before. */
static void test_resume_each_state(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, 2, 1);
    w.u.drain = true;
    run(&w, 50);
    w.target = 2;
    int seen[GPUOP_US_COUNT] = {0};
    for (int t = 0; t < 300; t++) {
        struct gpuop_upgrade_in in;
        struct gpuop_upgrade_node_in xs[NMAX];
        struct gpuop_upgrade_plan a, b;
        build_in(&w, &in, xs);
        assert_int_equal(gpuop_upgrade_plan(&in, &a), 0);
        assert_int_equal(gpuop_upgrade_plan(&in, &b), 0);
        for (size_t i = 0; i < a.n; i++) {
            assert_int_equal(a.nodes[i].next, b.nodes[i].next);
            assert_int_equal(a.nodes[i].action, b.nodes[i].action);
            seen[a.nodes[i].state]++;
        }
        gpuop_upgrade_plan_free(&a);
        gpuop_upgrade_plan_free(&b);
        /* a restart forgets what was listed */
        if (t % 3 == 0)
            for (size_t i = 0; i < w.n; i++)
                w.nodes[i].listed = false;
        if (!tick(&w, NULL))
            break;
    }
    assert_all(&w, GPUOP_US_DONE, 2);
    for (int s = GPUOP_US_REQUIRED; s <= GPUOP_US_DONE; s++)
        if (!seen[s])
            fail_msg("state %s never seen", gpuop_upgrade_state_name(s));
    world_free(&w);
}

/* autoUpgrade false: no node starts, each says why. */
static void test_auto_upgrade_off(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, 2, 1);
    w.u.auto_upgrade = false;
    run(&w, 50);
    w.target = 2;
    run(&w, 50);
    struct gpuop_upgrade_plan p;
    tick(&w, &p);
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(p.nodes[i].next, GPUOP_US_REQUIRED);
        assert_non_null(strstr(p.nodes[i].waiting, "autoUpgrade is false"));
    }
    assert_int_equal(w.nodes[0].gen, 1);
    gpuop_upgrade_plan_free(&p);
    world_free(&w);
}

/* A node moving between driver pools (its wanted annotation) takes the
 * upgrade's steps: cordoned, its job waited for, dependents paused, then
 * its pool label moved instead of its driver pod deleted; the old pool's
 * pod (of the same generation number: another DaemonSet's) is never taken
 * for the new one. Never moved under a GPU job. */
static void test_pool_move(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, 2, 1);
    w.u.wait_selector = "app=job";
    set_pools(&w.nodes[0], "a100", NULL);
    set_pools(&w.nodes[1], "a100", NULL);
    assert_int_equal(run(&w, 20), 0); /* in place: nothing to do */
    add_gpu_pod(&w.nodes[0], "job-0", false);
    w.nodes[0].pods[0].job = true;
    set_pools(&w.nodes[0], "a100", "h100"); /* the labeler: a100's selector lost it */
    struct gpuop_upgrade_plan p;
    for (int i = 0; i < 8; i++)
        tick(&w, NULL);
    tick(&w, &p);
    assert_int_equal(p.nodes[0].next, GPUOP_US_WAIT_JOBS);
    assert_true(w.nodes[0].n.up.unschedulable);
    assert_non_null(strstr(p.nodes[0].waiting, "team-a/job-0 to finish"));
    assert_non_null(strstr(p.nodes[0].waiting, "moving from driver pool a100 to h100: "));
    assert_int_equal(p.nodes[1].next, GPUOP_US_DONE); /* staying: nothing */
    gpuop_upgrade_plan_free(&p);
    assert_string_equal(gpuop_node_os(&w.nodes[0].n, GPUOP_OS_DRIVER_POOL), "a100");
    assert_non_null(w.nodes[0].driver);
    w.nodes[0].pods[0].terminal = true; /* the job finished */
    w.nodes[0].pods[0].gpu = false;
    run(&w, 100);
    assert_int_equal(w.nodes[0].n.up.state, GPUOP_US_DONE);
    assert_string_equal(gpuop_node_os(&w.nodes[0].n, GPUOP_OS_DRIVER_POOL), "h100");
    assert_null(gpuop_node_os(&w.nodes[0].n, GPUOP_OS_POOL_WANTED));
    assert_int_equal(w.nodes[0].moved_under_gpu, 0);
    assert_int_equal(w.nodes[0].deleted_under_gpu, 0);
    assert_non_null(w.nodes[0].driver); /* the new pool's */
    assert_string_equal(gpuop_node_os(&w.nodes[1].n, GPUOP_OS_DRIVER_POOL), "a100");

    /* to the default pool: the label goes */
    set_pools(&w.nodes[1], "a100", "default");
    run(&w, 100);
    assert_null(gpuop_node_os(&w.nodes[1].n, GPUOP_OS_DRIVER_POOL));
    assert_null(gpuop_node_os(&w.nodes[1].n, GPUOP_OS_POOL_WANTED));
    assert_int_equal(w.nodes[1].n.up.state, GPUOP_US_DONE);
    assert_false(w.nodes[1].n.up.unschedulable);

    /* no driver pod at all (the labeler could not tell): moved at once */
    set_pools(&w.nodes[1], NULL, "h100");
    gpuop_pod_free(w.nodes[1].driver);
    w.nodes[1].driver = NULL;
    struct gpuop_upgrade_plan q;
    tick(&w, &q);
    assert_int_equal(q.nodes[1].action, GPUOP_UA_MOVE_POOL);
    assert_false(w.nodes[1].n.up.unschedulable);
    gpuop_upgrade_plan_free(&q);
    assert_string_equal(gpuop_node_os(&w.nodes[1].n, GPUOP_OS_DRIVER_POOL), "h100");
    world_free(&w);
}

/* autoUpgrade off: a node waiting to move stays in its pool, and says so,
 * naming both pools. */
static void test_pool_move_auto_off(void **state)
{
    (void)state;
    struct world w;
    world_init(&w, 1, 1);
    w.u.auto_upgrade = false;
    set_pools(&w.nodes[0], NULL, "a100");
    run(&w, 50);
    struct gpuop_upgrade_plan p;
    tick(&w, &p);
    assert_int_equal(p.nodes[0].next, GPUOP_US_REQUIRED);
    assert_non_null(strstr(p.nodes[0].waiting, "waiting to move from driver pool default to a100"));
    assert_non_null(strstr(p.nodes[0].waiting, "autoUpgrade is false"));
    gpuop_upgrade_plan_free(&p);
    assert_null(gpuop_node_os(&w.nodes[0].n, GPUOP_OS_DRIVER_POOL));
    assert_false(w.nodes[0].n.up.unschedulable);
    world_free(&w);
}

static void test_gpu_pod_detection(void **state)
{
    (void)state;
    static const struct {
        const char *json;
        bool gpu;
    } cases[] = {
        {"{\"spec\":{\"containers\":[{\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}",
         true},
        {"{\"spec\":{\"containers\":[{\"resources\":{\"requests\":{\"nvidia.com/mig-1g.10gb\":"
         "\"2\"}}}]}}",
         true},
        {"{\"spec\":{\"initContainers\":[{\"resources\":{\"limits\":{\"nvidia.com/gpu\":1}}}]}}",
         true},
        {"{\"spec\":{\"containers\":[{\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"0\"}}}]}}",
         false},
        {"{\"spec\":{\"containers\":[{\"resources\":{\"limits\":{\"cpu\":\"1\"}}}]}}", false},
        {"{\"spec\":{\"containers\":5}}", false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *j = json_loads(cases[i].json, 0, NULL);
        assert_non_null(j);
        if (gpuop_upgrade_pod_uses_gpu(j) != cases[i].gpu)
            fail_msg("case %zu: want %d", i, cases[i].gpu);
        json_decref(j);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_in_size),
        cmocka_unit_test(test_full_upgrade),
        cmocka_unit_test(test_start_order_labels),
        cmocka_unit_test(test_driver_leaving),
        cmocka_unit_test(test_parallel_and_unavailable),
        cmocka_unit_test(test_gpu_pods_and_pdb),
        cmocka_unit_test(test_unevictable_gpu_pods),
        cmocka_unit_test(test_skip_label),
        cmocka_unit_test(test_failure_rules),
        cmocka_unit_test(test_marks_without_label),
        cmocka_unit_test(test_host_driver_not_counted),
        cmocka_unit_test(test_released_when_gone),
        cmocka_unit_test(test_restart_only),
        cmocka_unit_test(test_revision_back),
        cmocka_unit_test(test_wait_for_jobs),
        cmocka_unit_test(test_crash_loop_stops),
        cmocka_unit_test(test_ready_timeout),
        cmocka_unit_test(test_rollback),
        cmocka_unit_test(test_no_validator_on_node),
        cmocka_unit_test(test_hand_cordoned),
        cmocka_unit_test(test_unmanaged_and_new_nodes),
        cmocka_unit_test(test_stale_labels),
        cmocka_unit_test(test_resume_each_state),
        cmocka_unit_test(test_auto_upgrade_off),
        cmocka_unit_test(test_gpu_pod_detection),
        cmocka_unit_test(test_pool_move),
        cmocka_unit_test(test_pool_move_auto_off),
        cmocka_unit_test(test_opted_out_mid_upgrade),
        cmocka_unit_test(test_status_nodes_capped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
