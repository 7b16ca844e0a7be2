/*
 * controller_int.h - what the controller's files share (controller.c runs
 * the reconcile, apply.c applies and deletes the operands' objects,
 * status_write.c decides whether and writes the status). Not a public
 * header: only src/controller/ includes it.
 *
 * One reconcile runs at a time, of one of two kinds, each keyed by what it
 * reads and with one exit:
 *
 *   apply  ("apply:<policy>", queued only when what the render reads
 *          changed: a cache change of GPUOP_CACHES_RENDER; only the active
 *          policy)
 *          begin -> STAGE_APPLY (apply.c: ServiceAccount, then each operand
 *          once its prerequisite is settled; deletes) -> finish, which
 *          queues the policy's status reconcile
 *   status ("<policy>", queued by every change)
 *          begin -> STAGE_STATUS (findings from the caches, the apply's
 *          last results -> status -> write) -> finish
 *
 * finish forgets or backs off the key and takes the next one.
 *
 * Every API operation of a reconcile is a struct ctl_op; when the last one
 * in flight ends (gpuop_ctl_op_end), the reconcile moves on.
 */
#ifndef GPUOP_CONTROLLER_INT_H
#define GPUOP_CONTROLLER_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>
#include <uv.h>

#include "gpuop/caches.h"
#include "gpuop/controller.h"
#include "gpuop/hash.h"
#include "events_int.h"
#include "gpuop/analysis.h"
#include "gpuop/arena.h"
#include "gpuop/map.h"
#include "gpuop/ospool.h"
#include "gpuop/policy.h"
#include "gpuop/render.h"
#include "queue_int.h"
#include "gpuop/status.h"
#include "gpuop/upgrade.h"

/* Children closed asynchronously by gpuop_controller_close: the trim
 * and flush timers, the events poster, the caches, the queue, the stranded
 * pods' lister and the node labeler. */
#define CTL_CHILDREN 7
/* What failed, as the log's first failure names it ("gpuop-driver"). */
#define CTL_WHAT_MAX 120
/* "gpupolicy/<name>" and "daemonset/<ns>/<name>" log subjects. */
#define CTL_OBJ_MAX 300

/* What the controller remembers of one operand's DaemonSet (or of the
 * operands' ServiceAccount) across reconciles, for the policy object
 * applied_uid names. */
struct ctl_applied {
    uint64_t body_hash; /* of the body last applied; 0: nothing applied yet */
    long long generation;
    uint64_t meta_hash;
    /* The last body the API server refused, and when it may be sent again
     * (the key's backoff): a rejected body is not resent before then. */
    uint64_t rejected_hash;
    uint64_t retry_at_ms; /* gpuop_clock_ms */
    bool rejected_now;    /* refused in the reconcile in progress */
    /* Times the watch saw the object gone (kept when the rest is cleared):
     * an answer to a request sent before the last of them is of an object
     * that is gone since, and is not recorded (apply.c, answer_stale). */
    unsigned gone;
    char reason[64];
    char message[GPUOP_APPLY_MESSAGE_MAX];
};

/* An OS pool's DaemonSet's record: room for the pools applied plus as
 * many being deleted. */
#define CTL_POOLS_MAX (2 * GPUOP_OSPOOL_MAX)
struct ctl_pool_applied {
    char name[GPUOP_RENDER_NAME_MAX]; /* "gpuop-driver-ubuntu24.04"; "" free */
    struct ctl_applied a;
    bool deleted; /* its DELETE was answered; the watch has not shown it gone yet,
                     so a reconcile meanwhile does not delete it again */
};

enum ctl_op_kind { OP_APPLY, OP_DELETE, OP_SA, OP_STATUS, OP_EXTRA, OP_FINALIZER };
/* How often an extra whose CRD is not installed is tried again while
 * nothing else makes the apply stage run (ms). */
#define CTL_CRD_RECHECK_MS 30000
#define CTL_EXTRA_DELETED  1 /* extras_applied[].body_hash: not there */
#define CTL_EXTRA_RENAMED                                                                          \
    2 /* an OP_EXTRA's body_hash: the delete of a renamed extra's                                  \
         old name, which leaves extras_applied[] alone */

struct ctl_op {
    struct gpuop_controller *c;
    struct gpuop_kube_req *req;
    enum ctl_op_kind kind;
    int operand;
    int slot; /* OP_APPLY/OP_DELETE of an OS pool's DaemonSet: its
                 pool_applied index (apply.c); -1 otherwise */
    uint64_t body_hash;
    unsigned gone;      /* OP_APPLY, OP_SA: its record's ctl_applied.gone when sent */
    json_t *conds;      /* OP_STATUS: the conditions sent (new reference) */
    char rv_before[64]; /* OP_STATUS: the cached resourceVersion when sent */
    struct ctl_op *next;
};

enum ctl_stage { STAGE_APPLY, STAGE_STATUS, STAGE_DONE };

/* The reconcile's API operations (ops.c): each request in flight, counted
 * until its answer ends it; the failures counted, the first kept. */
struct ctl_ops {
    struct ctl_op *head;  /* in flight */
    int pending;          /* how many */
    int failed;           /* failures (apply, delete, status write, parse) since reset */
    struct gpuop_err err; /* the first failure, for the log */
    /* called after an op ends, unless the controller is closing: moves
       the reconcile on (controller.c) */
    void (*ended)(struct gpuop_controller *c);
};

/* One API operation of the reconcile, as gpuop_ctl_send starts it. */
struct ctl_send {
    enum ctl_op_kind kind;
    int operand; /* the operand's index, or -1 */
    uint64_t body_hash;
    enum gpuop_kube_verb verb;
    const char *path;  /* copied */
    const char *ctype; /* the body's content type, or NULL */
    const char *body;  /* copied; NULL: none */
    gpuop_kube_done_cb done;
};

/* The node records between reconciles and the nodes to judge again
 * (judge.c). */
struct ctl_judge {
    bool verify;               /* the test oracle (gpuop_controller_config.verify) */
    struct gpuop_records *rec; /* new; NULL: none (every node is judged next) */
    char key[254];             /* the policy rec was judged for */
    struct gpuop_map dirty;    /* names of nodes whose object or pods changed since */
    bool all_due;              /* the dirty set outgrew its share: every node */
    struct {
        uint64_t fulls, updates, mismatches; /* every-node judgements, dirty nodes judged,
                                                oracle differences */
    } stats;
};

/* The apply reconcile's state (apply.c): what each object was last
 * applied as, and what this reconcile did; the controller reads it only
 * through apply.c's functions. */
struct ctl_apply {
    /* per operand index: what this reconcile did (status facts) */
    struct gpuop_apply_result res[GPUOP_OPERAND_MAX];
    bool started[GPUOP_OPERAND_MAX]; /* its apply or delete was decided */
    struct gpuop_apply_result sa;    /* the operands' ServiceAccount */
    bool sa_started;

    struct ctl_applied applied[GPUOP_OPERAND_MAX];
    /* the per-OS driver's DaemonSets, one per OS pool (SPEC 4b), by name;
       the operand's res[] sums them up: current once all are, failed when
       one failed (apply.c) */
    struct ctl_pool_applied pool_applied[CTL_POOLS_MAX];
    int pool_pending;              /* pool applies and deletes in flight */
    bool pool_failed;              /* one of them failed in this reconcile */
    int pool_operand;              /* the per-OS operand being applied, -1 none */
    struct ctl_applied sa_applied; /* the ServiceAccount's (generation unused) */
    /* the objects beside the DaemonSets, by gpuop_render_extra index
     * (apply.c): body_hash of the body applied, CTL_EXTRA_DELETED once a
     * delete was answered, 0 unknown */
    struct ctl_applied extras_applied[GPUOP_RENDER_EXTRA_MAX];
    /* the name each extra was last applied under by this process ("": the
     * table's), and the name of the apply in flight: the RuntimeClass's
     * follows the policy, and one renamed is deleted under its old name
     * (extras_old) once the new one is applied (apply.c) */
    char extras_name[GPUOP_RENDER_EXTRA_MAX][GPUOP_RENDER_NAME_MAX];
    char extras_sending[GPUOP_RENDER_EXTRA_MAX][GPUOP_RENDER_NAME_MAX];
    char extras_old[GPUOP_RENDER_EXTRA_MAX][GPUOP_RENDER_NAME_MAX]; /* the renamed one's
                                                                       delete in flight */
    bool extras_started;
    bool fin_started; /* the stage's end decided the finalizer (finalizer.c) */
    /* an extra whose kind's CRD the API server lacked at its last apply
     * (gpuop_render_extra.crd: the ServiceMonitor without the Prometheus
     * Operator): no failure, a condition says so (status.c), and it is
     * sent again at every apply reconcile, and its answer queues one in
     * CTL_CRD_RECHECK_MS */
    bool extras_absent[GPUOP_RENDER_EXTRA_MAX];
    char applied_uid[64]; /* policy uid the applied[] records are for */
};

/* The last finalizer patch this process sent (finalizer.c): the policy's
 * uid and the resourceVersion it was sent against, and whether it added
 * GPUOP_FINALIZER_DRA; uid "" when none is outstanding. While the cache
 * still holds that resourceVersion it has not seen the write: nothing is
 * sent again. */
struct ctl_finalizer {
    char uid[64];
    char rv[64];
    bool on;
};

/* The pods reserving GPU claims on the nodes of ClaimWithoutPlugin and
 * GpusAdvertisedTwice findings (DRA), as the findings borrow them: entries
 * sorted by node (their names borrowed from the findings), names in an
 * arena; kind[i] what entry i is for (claimpods.c). */
struct ctl_claim_pods {
    struct gpuop_stranded *a;
    unsigned char *kind;
    size_t n;
    struct gpuop_arena names;
};

struct gpuop_controller {
    uv_loop_t *loop;
    uv_timer_t trim; /* the heap trim a busy moment had to put off (trim.h) */
    struct gpuop_kube *kube;
    char *ns;
    bool leader; /* this replica leads: it writes (apply, status, labels, Events) */
    bool closing;
    bool flushing;    /* closing: held statuses go out first, unpaced */
    uv_timer_t flush; /* the flush's deadline (CTL_STATUS_FLUSH_MAX_MS) */
    struct gpuop_caches *caches;
    struct gpuop_queue *queue;
    struct gpuop_events *events;
    struct ctl_stranded *stranded;    /* stranded.c */
    struct ctl_labeler *labeler;      /* labeler.c */
    struct ctl_upgrader *upgrader;    /* upgrade_actor.c */
    struct ctl_draclaims *draclaims;  /* draclaims.c */
    struct ctl_finalizer fin;         /* finalizer.c */
    struct ctl_claim_pods claim_pods; /* claimpods.c: rebuilt each status reconcile */

    /* the reconcile in progress: key is the queue's, name the policy's
     * (key itself for a status reconcile, after CTL_APPLY_PREFIX for an
     * apply reconcile) */
    char *key;
    const char *name;
    bool applying; /* an apply reconcile (STAGE_APPLY), else a status one */
    enum ctl_stage stage;
    struct gpuop_policy policy;
    bool have_policy;
    bool inactive;         /* this policy is not the active one (its status says "ignored") */
    bool deleting;         /* it has a deletionTimestamp (finalizer.c: its DRA plugin goes
                              first, the nodes of its driver upgrade are let go) */
    bool problems_changed; /* the problems differ from the last reconcile's */
    uint64_t started_ns;
    uint64_t origin_ns; /* of the reconcile in progress; 0: none */
    char kobj[CTL_OBJ_MAX];
    struct ctl_apply apply; /* the apply reconcile's state (apply.c) */
    bool apply_queued;      /* the active policy's apply reconcile is queued to run now: its
                               status waits for it (the apply queues it when done) */
    struct ctl_judge judge; /* the node records between reconciles (judge.c) */
    struct ctl_ops ops;     /* the reconcile's API operations in flight (ops.c) */

    /* key -> struct ctl_status_rec * (status_write.c) */
    struct gpuop_map status_recs;

    struct gpuop_controller_stats stats;
    struct gpuop_controller_summary summary;
    gpuop_controller_reconciled_cb on_reconciled;
    void *cb_arg;
    /* key -> uint64_t * (uv_hrtime of the first event that dirtied it
     * since its last successful reconcile) */
    struct gpuop_map dirty_since;
    int open; /* children still closing */
    void (*close_cb)(void *);
    void *close_arg;
};

/* ---- ops.c ---- */

/* Starts the API operation s (borrowed) says; its op is *out when out is
 * not NULL. The op ends in s->done (which must call gpuop_ctl_op_end), or
 * here when the request cannot start (0 or that code). */
int gpuop_ctl_send(struct gpuop_controller *c, const struct ctl_send *s, struct ctl_op **out);
/* Ends op o (frees it) and calls the ops' ended callback. */
void gpuop_ctl_op_end(struct ctl_op *o);
/* Counts a failure of the reconcile; the first one is kept for the log. */
void gpuop_ctl_fail(struct gpuop_controller *c, const char *what, const struct gpuop_err *e);
/* A new reconcile: no failure counted or kept (nothing may be in flight). */
void gpuop_ctl_ops_reset(struct ctl_ops *ops);
/* Cancels every op in flight: each ends through its done callback. */
void gpuop_ctl_ops_cancel(struct ctl_ops *ops);

/* ---- judge.c ---- */

void gpuop_ctl_judge_init(struct ctl_judge *j, bool verify);
/* Node node (borrowed) or one of its pods changed in the caches: the
 * next reconcile judges it again. */
void gpuop_ctl_judge_touch(struct ctl_judge *j, const char *node);

/* What one status reconcile judges from, every pointer borrowed. */
struct ctl_judge_in {
    struct gpuop_caches *caches;
    const char *key;                   /* the policy's */
    const struct gpuop_policy *policy; /* the reconcile's */
    struct gpuop_caches_view *view;    /* the caches' view; the pods are added when needed */
    const struct gpuop_stranded *st;   /* the stranded pods' view, nst entries */
    size_t nst;
    long long now;
};

/* The findings of policy in->key at in->now: the records with the dirty
 * nodes judged again, or every node (see judge.c for when), as one set.
 * *out is borrowed: valid until the next call or drop (never
 * gpuop_findings_free it). 0 or a negative code (*out then not set;
 * the records are dropped). */
int gpuop_ctl_judge_run(struct ctl_judge *j, const struct ctl_judge_in *in,
                        struct gpuop_findings **out);
/* No records (the policy gone): the next run judges every node. */
void gpuop_ctl_judge_drop(struct ctl_judge *j);
void gpuop_ctl_judge_free(struct ctl_judge *j);

/* ---- apply.c ---- */

/* The path of a server-side apply (gpuop_kube_path, then
 * ?fieldManager=gpuop&force=true): new string, NULL on out-of-memory. */
char *gpuop_ctl_apply_path(const char *gv, const char *ns, const char *res, const char *name,
                           const char *sub);

/* Resets the apply results for a new apply reconcile (begin_apply): they
 * stay until the next one, for the status reconciles to read. The
 * records of what was applied are forgotten when c->policy is another
 * object than theirs (re-created, or another became active). */
void gpuop_ctl_apply_reset(struct gpuop_controller *c);
/* c->policy's draining pools from the caches (draining.c): driver pools
 * gone from the policy whose DaemonSets still run on a node labelled with
 * their name. Called once the policy is parsed. */
void gpuop_ctl_pools_draining(struct gpuop_controller *c);
/* The last apply's results, per operand (and *sa the ServiceAccount's),
 * when they are for the policy of uid (borrowed), else NULL; borrowed
 * from a. */
const struct gpuop_apply_result *gpuop_ctl_apply_results(const struct ctl_apply *a, const char *uid,
                                                         const struct gpuop_apply_result **sa);
/* The extras whose kind's CRD the API server lacked, a bit per
 * gpuop_render_extra index (the status's conditions say so). */
unsigned gpuop_ctl_apply_absent_crds(const struct ctl_apply *a);
/* DRA: this process applied the DRA driver's DeviceClass gpu.nvidia.com
 * (resource.k8s.io/v1) and the API server took it: it serves
 * resource.k8s.io/v1, whose ResourceSlices the caches may then watch. */
bool gpuop_ctl_apply_dra_served(const struct ctl_apply *a);
/* Starts every apply or delete whose prerequisite is settled and marks
 * blocked the operands whose prerequisite could not be applied; called
 * again whenever an operation ends. Nothing in flight afterwards: the
 * stage is over. */
void gpuop_ctl_apply_step(struct gpuop_controller *c);
/* True when the caches hold every driver DaemonSet at least at the
 * generation its last apply was answered with: the driver upgrade plans
 * from the template the policy asks for, not the one before it. */
bool gpuop_ctl_apply_driver_seen(const struct gpuop_controller *c);
/* The caches saw kind/key deleted: a DaemonSet or the ServiceAccount gone
 * forgets what was applied, so the next reconcile applies it again. */
void gpuop_ctl_apply_gone(struct gpuop_controller *c, enum gpuop_caches_kind kind, const char *key);
/* After finish computed the key's backoff delay: a body refused in this
 * reconcile is not resent before it has passed. */
void gpuop_ctl_apply_backoff(struct gpuop_controller *c, int64_t delay_ms);

/* ---- stranded.c ---- */

struct ctl_stranded;
int gpuop_ctl_stranded_new(uv_loop_t *loop, struct gpuop_kube *kube, struct gpuop_queue *queue,
                           struct ctl_stranded **out);
/* Tracks exactly the nodes of f (borrowed) with an OrderingViolation that
 * are not only mid-rollout (progressing, unless tracked already):
 * new ones are listed soon, gone ones forgotten; says in an Event (ev may
 * be NULL: nothing said) each node whose stranded pods changed since last
 * said. policy (requeued when a list changes) and uid are copied. Returns
 * 0 or GPUOP_ENOMEM. */
int gpuop_ctl_stranded_track(struct ctl_stranded *s, const struct gpuop_findings *f,
                             struct gpuop_events *ev, const char *policy, const char *uid);
/* The lists of the tracked nodes with stranded pods (a count above 0),
 * sorted by node (borrowed): valid until the next track or LIST answer,
 * i.e. within the reconcile that tracked. NULL and *n 0 when none. */
const struct gpuop_stranded *gpuop_ctl_stranded_view(const struct ctl_stranded *s, size_t *n);
/* Nodes tracked (each with an OrderingViolation at the last track). */
size_t gpuop_ctl_stranded_tracked(const struct ctl_stranded *s);
/* LISTs sent since start, and of them not answered yet. */
uint64_t gpuop_ctl_stranded_lists(const struct ctl_stranded *s);
size_t gpuop_ctl_stranded_inflight(const struct ctl_stranded *s);
/* Test hook: the tick and the re-list interval in ms (defaults
 * STRANDED_TICK_MS and STRANDED_RELIST_MS in stranded.c); call before the
 * first track. */
void gpuop_ctl_stranded_set_timing(struct ctl_stranded *s, uint64_t tick_ms, uint64_t relist_ms);
void gpuop_ctl_stranded_close(struct ctl_stranded *s, void (*cb)(void *), void *arg);

/* ---- draclaims.c ---- */

/* Claim holders named in the status's words, at most. */
#define DRACLAIMS_NAMES_MAX 3
struct ctl_draclaims;
int gpuop_ctl_draclaims_new(struct gpuop_kube *kube, struct gpuop_queue *queue,
                            struct ctl_draclaims **out);
/* spec.draDriver is switched off, or the policy being deleted (deleting:
 * the waiting words say so), and its plugin's DaemonSet exists: may
 * it be deleted now? True once a round of pod LISTs over nodes (borrowed:
 * where plugin pods run), started after the switch, found no pod holding
 * a resource claim there; else starts or continues a round (policy,
 * copied, is requeued at its end) and returns false. */
bool gpuop_ctl_draclaims_clear(struct ctl_draclaims *d, const char *policy, bool deleting,
                               const char *const *nodes, size_t n);
/* The DRA driver is on again, or its DaemonSet gone: forgets the rounds. */
void gpuop_ctl_draclaims_reset(struct ctl_draclaims *d);
/* What the plugin's deletion waits for, in words, into buf; "" when it
 * waits for nothing. Returns snprintf's count. */
int gpuop_ctl_draclaims_waiting(const struct ctl_draclaims *d, char *buf, size_t size);
/* Cancels its LIST (no handles). */
void gpuop_ctl_draclaims_free(struct ctl_draclaims *d);

/* ---- finalizer.c ---- */

/* Whether policy obj (borrowed) carries GPUOP_FINALIZER_DRA. */
bool gpuop_ctl_finalizer_has(json_t *obj);
/* Adds (on) or removes GPUOP_FINALIZER_DRA on policy obj (borrowed; the
 * cached one): one JSON merge patch of metadata.finalizers, the whole
 * list with every other finalizer as the cache holds it, and
 * metadata.resourceVersion as its precondition (409 when the policy moved
 * since: counted as the reconcile's failure, tried again on its backoff).
 * Nothing is sent when the finalizer already is as asked, or the last
 * patch sent for it is not in the cache yet. An op of the reconcile; a
 * patch that could not be sent counts as the reconcile's failure
 * (gpuop_ctl_fail). Leader only. */
void gpuop_ctl_finalizer_set(struct gpuop_controller *c, json_t *obj, bool on);

/* ---- claimpods.c ---- */

/* Gathers them for f (borrowed; the records' view) from the claims the
 * caches hold and gives them to f (gpuop_findings_set_claim_pods): valid
 * until the next build or free. 0 or GPUOP_ENOMEM (f then has none). */
int gpuop_ctl_claim_pods_build(struct ctl_claim_pods *cp, const struct gpuop_caches *caches,
                               struct gpuop_findings *f);
void gpuop_ctl_claim_pods_free(struct ctl_claim_pods *cp);

/* ---- labeler.c ---- */

struct ctl_labeler;
/* queue (borrowed, may be NULL): the tracked policy is queued on it when
 * the driver pools' LISTs answer. */
int gpuop_ctl_labeler_new(uv_loop_t *loop, struct gpuop_kube *kube, struct gpuop_queue *queue,
                          struct ctl_labeler **out);
/* The nodes (borrowed; the node cache) that policy p (borrowed; the
 * active one) says gpuop labels (SPEC 4a) become the candidates: each is
 * read fresh and patched once, in the background; the others are
 * forgotten. So do the GPU nodes whose driver pool label or conflict
 * annotation the last LISTs of the pools' nodeSelectors say is wrong
 * (SPEC 4f; labeler.c). Call it only while leading. Returns 0 or
 * GPUOP_ENOMEM. */
int gpuop_ctl_labeler_track(struct ctl_labeler *l, const struct gpuop_policy *p,
                            const struct gpuop_node *const *nodes, size_t n);
/* How the labeler tells whether a driver pod runs on a node (driver pools:
 * such a node is not relabelled, it moves through the driver upgrade);
 * has(arg, node name) true when one does or it cannot tell. Without one
 * (unit tests), no node has a driver pod. */
void gpuop_ctl_labeler_drivers(struct ctl_labeler *l, bool (*has)(void *arg, const char *node),
                               void *arg);
/* has() of gpuop_ctl_labeler_drivers from the caches (arg: struct
 * gpuop_caches *): a driver pod in the caches' pods of the node that may
 * serve GPU jobs (Ready, restarted or terminating: not one starting for
 * the first time), and true when the index of pods by node is not whole. */
bool gpuop_ctl_labeler_caches_driver(void *caches, const char *node);
/* Leadership lost: every candidate forgotten, requests in flight cancelled,
 * nothing started until the next track. */
void gpuop_ctl_labeler_stop(struct ctl_labeler *l);
/* Node PATCHes that succeeded since start. */
uint64_t gpuop_ctl_labeler_patches(const struct ctl_labeler *l);
void gpuop_ctl_labeler_close(struct ctl_labeler *l, void (*cb)(void *), void *arg);

/* ---- upgrade_actor.c ---- */

struct ctl_upgrader;
int gpuop_ctl_upgrade_new(uv_loop_t *loop, struct gpuop_kube *kube, struct gpuop_queue *queue,
                          struct ctl_upgrader **out);
/* Plans the driver upgrade (findings/upgrade_planner.c) from the view v (borrowed;
 * the caches) and policy p (borrowed; the active one) and takes each
 * node's action in the background; the pods of the operator namespace ns.
 * Call it only while leading. The plan stays until the next track or
 * release (gpuop_ctl_upgrade_plan). Returns 0 or GPUOP_ENOMEM. */
int gpuop_ctl_upgrade_track(struct ctl_upgrader *u, const struct gpuop_policy *p,
                            const struct gpuop_caches_view *v, const char *ns,
                            struct gpuop_events *ev, const char *policy, const char *uid);
/* The last track's plan and input (borrowed), NULL when none; valid until
 * the next track, release or stop, and only while the caches are (within
 * the reconcile). */
const struct gpuop_upgrade_plan *gpuop_ctl_upgrade_plan(const struct ctl_upgrader *u,
                                                        const struct gpuop_upgrade_in **in);
void gpuop_ctl_upgrade_release(struct ctl_upgrader *u);
/* Actions taken (node PATCHes, pod rounds) since start. */
uint64_t gpuop_ctl_upgrade_actions(const struct ctl_upgrader *u);
/* While on, tracks plan (and show the plan) but take no action: a driver
 * DaemonSet just applied is not in the caches yet (the plan would start
 * nodes against the template before it). */
void gpuop_ctl_upgrade_hold(struct ctl_upgrader *u, bool on);
/* Leadership lost: requests cancelled, nothing kept. */
void gpuop_ctl_upgrade_stop(struct ctl_upgrader *u);
void gpuop_ctl_upgrade_free(struct ctl_upgrader *u);

/* ---- status_write.c ---- */

/* The previous status to carry lastTransitionTime from (borrowed): what
 * was last written for key, else the cached one (obj's). */
json_t *gpuop_ctl_status_prev(struct gpuop_controller *c, const char *key, json_t *obj);
/* Under churn a key's status is written at most once per this interval;
 * a change after a quieter interval goes out at once (status_write.c). */
#define CTL_STATUS_WRITE_INTERVAL_MS 1000
/* An event that moves only the findings (a pod, an Event, a DaemonSet's
 * status) reconciles at most once per this gap after the last reconcile
 * began: under churn (a rollout's 500 pod events a second) one reconcile
 * judges the events of a gap instead of one each, every reconcile's cost
 * outside the analysis (the upgrade's inputs, the Events' diff, the
 * digest) with it. A change after a quieter gap reconciles at once. */
#define CTL_FINDINGS_RECONCILE_GAP_MS 250
/* How long gpuop_controller_close waits for the held statuses to go out
 * before it stops anyway. */
#define CTL_STATUS_FLUSH_MAX_MS 10000

enum ctl_status_due {
    CTL_STATUS_SAME, /* the server holds this state (or not leading): nothing to write */
    CTL_STATUS_NOW,  /* build the status and write it now */
    CTL_STATUS_HELD, /* changed, but written too recently: queue the key again in *wait_ms */
};
/* Whether the status of the reconcile's key, the document built hashing
 * to digest (gpuop_hash_json), must be written for the policy obj (borrowed) at
 * now_ms (the pacing's clock, ms): not when it equals what was last
 * written for the key and the server still holds that. */
enum ctl_status_due gpuop_ctl_status_due(struct gpuop_controller *c, json_t *obj, uint64_t digest,
                                         uint64_t now_ms, uint64_t *wait_ms);
/* The pacing alone, pure: 0 when a write may go out at now_ms, else the ms
 * until it may (a write was sent at sent_ms, if paced). */
uint64_t gpuop_ctl_status_pace(bool paced, uint64_t sent_ms, uint64_t now_ms);
/* Writes status (steals), which hashes to digest, for the policy obj
 * (borrowed), sent at now_ms. Returns 0 (sent, or not leading) or a
 * negative gpuop_rc. */
int gpuop_ctl_status_write(struct gpuop_controller *c, json_t *obj, json_t *status, uint64_t digest,
                           uint64_t now_ms);
/* A write of key's status was sent at now_ms (the pacing starts over). */
void gpuop_ctl_status_sent(struct gpuop_controller *c, const char *key, uint64_t now_ms);
/* The server answered that write (body, borrowed) of the status that
 * hashes to digest; rv_before is the cached resourceVersion when it
 * was sent, conds (borrowed, may be NULL) the conditions sent. */
void gpuop_ctl_status_answered(struct gpuop_controller *c, const char *key, uint64_t digest,
                               json_t *body, const char *rv_before, json_t *conds);
/* How long a write of key's status would be held at now_ms (the pacing's
 * interval since its last write), 0 when one may go out now (or not
 * leading, or flushing). */
uint64_t gpuop_ctl_status_wait(struct gpuop_controller *c, const char *key, uint64_t now_ms);
/* True when a key's changed status waits for its interval's end. */
bool gpuop_ctl_status_held(struct gpuop_controller *c);
/* Queues every key whose status is held (the close's flush). */
void gpuop_ctl_status_requeue_held(struct gpuop_controller *c);
/* True when the hash of the problems (spec problems, apply failures) of
 * key differs from the last call's; remembers the new one. */
bool gpuop_ctl_problems_changed(struct gpuop_controller *c, const char *key, uint64_t h);
/* Forgets what was written for key (policy gone), or for every key (NULL:
 * leadership changed, someone else may have written since). */
void gpuop_ctl_status_forget(struct gpuop_controller *c, const char *key);
/* Frees every record (close). */
void gpuop_ctl_status_free(struct gpuop_controller *c);

#endif
