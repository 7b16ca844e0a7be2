/*
 * upgrade_actor.c - the driver upgrade's actions (docs/upgrade.md), leader only.
 *
 * Driven by the reconcile of the active policy: gpuop_ctl_upgrade_track()
 * builds the planner's input from the caches (each GPU node, its driver
 * and validator pod, the template generation of the driver DaemonSet of
 * its OS pool) plus what this file listed of the nodes whose step needs
 * their pods, asks the pure planner (findings/upgrade_planner.c) and takes each
 * node's one action, at most one request chain per node at a time:
 *
 *   label / cordon / uncordon / fail: one merge PATCH of the node (the
 *     state label, the since annotation, spec.unschedulable with the
 *     cordoned annotation, the failed annotation); a failure also posts
 *     one Event DriverUpgradeFailed on the policy
 *   pause: one PATCH setting the dependents' deploy labels to
 *     paused-for-driver-upgrade, their values before in the paused
 *     annotation (from the cache); restore: GET the node, PATCH the
 *     labels back from that annotation (resourceVersion as precondition)
 *   list: GET pods?fieldSelector=spec.nodeName=<node> (with the step's
 *     labelSelector: waitForCompletion's or drain's)
 *   evict: POST pods/<name>/eviction for each pod the step takes; a 429
 *     (a PodDisruptionBudget) is remembered for the words and retried
 *     after a backoff (EVICT_BACKOFF_FIRST_MS doubling to _MAX_MS)
 *   delete pods / driver / validator: DELETE the pod
 *   move pool: one PATCH of the node's driver pool label to the pool its
 *     wanted annotation names (removed for the default pool), the
 *     annotation removed: the old pool's DaemonSet takes its driver pod
 *     off, the new pool's brings its driver (a node moving between driver
 *     pools, in place of delete driver)
 *
 * After an action the node settles for SETTLE_MS: the same action in the
 * same state towards the same next state is not sent again before the
 * cache shows its effect (the reconcile that follows the cache's event
 * plans from it). Starts (upgrade-required -> cordon-required) go one at a
 * time in name order: the next once the one before is answered, none while
 * an earlier one waits. Everything is
 * state in the cluster; this file only keeps the pod lists, the eviction
 * answers and the backoffs, which a restart rebuilds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuop/clock.h"
#include "gpuop/jsonarena.h"
#include "gpuop/kube.h"
#include "gpuop/log.h"
#include "gpuop/map.h"
#include "gpuop/names.h"
#include "gpuop/ospool.h"
#include "gpuop/render.h"
#include "gpuop/upgrade.h"

#include "controller_int.h"

/* Pods labelled so are never drained (gpu-operator v26.7.0
 * controllers/upgrade_controller.go UpgradeSkipDrainLabelSelector, appended
 * to drain.podSelector). */
#define DRAIN_SKIP_SELECTOR    "nvidia.com/gpu-driver-upgrade-drain.skip!=true"
#define SETTLE_MS              3000
#define LIST_TTL_MS            5000 /* a pod list older than this is listed again */
#define EVICT_BACKOFF_FIRST_MS 2000
#define EVICT_BACKOFF_MAX_MS   60000
#define ERROR_BACKOFF_MS       5000
#define NOTE_MAX               GPUOP_MODEL_NOTE_MAX /* the paused annotation */
#define WHY_MAX                256
/* Most upgrade requests in flight at once. Each may be a connection of its
 * own (a TLS handshake and its buffers): the first plan of a 1,000-node
 * upgrade labels every node upgrade-required, and sent at once those
 * PATCHes took gpuop from 10 to 80 MiB for 18 s. The rest go as answers
 * come back (req_end requeues). */
#define INFLIGHT_MAX 16

/* The newest ControllerRevision of a driver DaemonSet (the GPU Operator's
 * "in sync", docs/upgrade.md): read by one LIST when a node's driver pod
 * is not on the DaemonSet's template generation, for that generation, and
 * only once the DaemonSet controller has seen the template
 * (status.observedGeneration): its revision of the template exists then. */
#define REVS_MAX (GPUOP_OSPOOL_MAX + 1)
struct rev {
    char ds[GPUOP_RENDER_NAME_MAX];
    uint32_t tgen; /* the template generation it was read for */
    uint32_t hash; /* gpuop_revision_hash of its controller-revision-hash; 0 none */
    bool asked;    /* a LIST for it is in flight */
};

/* One node gpuop acts on or lists pods of: in the map by name. */
struct rec {
    struct ctl_upgrader *u;
    int inflight;       /* requests in flight for it */
    uint64_t seen;      /* the track that last wanted it */
    bool dropped;       /* no longer wanted: freed when inflight reaches 0 */
    uint8_t listed_for; /* the state its pods were listed in; 0 none */
    uint64_t listed_at; /* gpuop_clock_ms */
    struct gpuop_upgrade_pod *pods;
    size_t npods;
    char *strs;           /* the pods' names and namespaces, copied (new): a LIST body of
                             full pods is kept by nobody */
    uint8_t claims_state; /* the state the pods were listed in, while their ResourceClaims
                             are read (GETs in flight); listed_for is set once all answered */
    uint32_t list_seq;    /* bumped by each pod list: a claim answer of an older one is
                             dropped */
    uint64_t retry_at_ms; /* nothing sent before */
    uint64_t backoff_ms;
    uint8_t last_action, last_state, last_next;
    bool clear_failed; /* the node carries a failure it is leaving: PATCHes remove it */
    uint64_t settle_until;
    bool blocked_round; /* an eviction of the round in flight was refused */
    char blocked_why[WHY_MAX];
    char name[];
};

struct ureq {
    struct rec *r;
    struct gpuop_kube_req *req;
    int kind;                       /* enum gpuop_upgrade_action */
    int next;                       /* the state written */
    size_t pod;                     /* EVICT: index into r->pods */
    bool start;                     /* counted in starts_inflight (is_start) */
    char ds[GPUOP_RENDER_NAME_MAX]; /* ROLLBACK: the pool\'s driver DaemonSet */
    struct ureq *prev, *nextq;
};

struct ctl_upgrader {
    uv_loop_t *loop;
    struct gpuop_kube *kube;
    struct gpuop_queue *queue;
    struct gpuop_map recs; /* node name -> struct rec * */
    struct ureq *reqs;     /* in flight */
    size_t ninflight;      /* how many, at most about INFLIGHT_MAX */
    uint64_t tracks;
    bool stopped;
    char policy[254];
    /* the last plan and its input (status.upgrade) */
    struct gpuop_upgrade_in in;
    struct gpuop_upgrade_node_in *nodes;
    struct gpuop_upgrade_plan plan;
    bool have_plan;
    struct gpuop_map failed;   /* node name -> why it failed (new strings): the failure
                                  annotation's words, for the status */
    int starts_inflight;       /* start PATCHes (upgrade-required -> cordon-required) in flight */
    struct rev revs[REVS_MAX]; /* the driver DaemonSets' newest revisions */
    size_t nrevs;
    struct gpuop_kube_req *rev_req; /* their LIST in flight, or NULL */
    bool revs_due;                  /* a revision is wanted: LIST them */
    bool hold;                      /* plan, act on nothing (gpuop_ctl_upgrade_hold) */
    size_t revs_missing;            /* nodes this track could not judge for want of one */
    char version[GPUOP_RENDER_IMAGE_MAX];
    uint64_t actions;
    /* during a track (borrowed): the policy, for the rollback's names */
    const struct gpuop_policy *pol;
    char ns[254], uid[64];
    /* the caches of the last track (borrowed; they outlive the upgrader):
       the ResourceClaims they watch mark claim holders as GPU pods */
    const struct gpuop_caches *caches;
};

/* onFailure rollback (docs/upgrade.md): the rollback DaemonSet of a pool
 * DaemonSet is named after it with this suffix; it runs the previous driver
 * on the nodes labelled GPUOP_LABEL_DRIVER_ROLLBACK=<pool DaemonSet>. */
#define ROLLBACK_SUFFIX "-rollback"

static long long now_s(void)
{
    return gpuop_clock_wall();
}

static void rec_free(struct rec *r)
{
    free(r->pods);
    free(r->strs);
    free(r);
}

static void requeue(struct ctl_upgrader *u, uint64_t ms)
{
    if (u->policy[0] && !u->stopped)
        (void)(ms ? gpuop_queue_add_after(u->queue, u->policy, ms)
                  : gpuop_queue_add(u->queue, u->policy));
}

/* ---- requests ---------------------------------------------------------- */

static void req_unlink(struct ctl_upgrader *u, struct ureq *q)
{
    if (q->prev)
        q->prev->nextq = q->nextq;
    else
        u->reqs = q->nextq;
    if (q->nextq)
        q->nextq->prev = q->prev;
}

/* A request of r ended: true when r is still wanted. */
static bool req_end(struct ureq *q)
{
    struct rec *r = q->r;
    struct ctl_upgrader *u = r->u;
    req_unlink(u, q);
    free(q);
    r->inflight--;
    if (u->ninflight-- == INFLIGHT_MAX)
        requeue(u, 0); /* the window has room again */
    if (r->dropped) {
        if (!r->inflight)
            rec_free(r);
        return false;
    }
    return true;
}

/* What a request of a node is for: its action (enum gpuop_upgrade_action),
 * the state it writes (or the pod list's sequence), the pod it is about
 * (EVICT: an index into the rec's pods). */
struct up_what {
    int kind;
    int next;
    size_t pod;
};

/* Sends o (borrowed, for the call; its path NULL: out of memory) for r as
 * w says, done called with its struct ureq. */
static int up_send(struct rec *r, const struct up_what *w, const struct gpuop_kube_opts *o,
                   gpuop_kube_done_cb done)
{
    struct ctl_upgrader *u = r->u;
    struct ureq *q = calloc(1, sizeof(*q));
    if (!q || !o->path)
        goto oom;
    q->r = r;
    q->kind = w->kind;
    q->next = w->next;
    q->pod = w->pod;
    if (gpuop_kube_request(u->kube, o, done, q, &q->req) < 0)
        goto oom;
    q->nextq = u->reqs;
    if (u->reqs)
        u->reqs->prev = q;
    u->reqs = q;
    u->ninflight++;
    r->inflight++;
    return 0;
oom:
    free(q);
    r->retry_at_ms = gpuop_clock_ms() + ERROR_BACKOFF_MS;
    return GPUOP_ENOMEM;
}

static void failed(struct rec *r, const char *what, int rc, const struct gpuop_err *err)
{
    struct ctl_upgrader *u = r->u;
    r->retry_at_ms = gpuop_clock_ms() + ERROR_BACKOFF_MS;
    r->settle_until = 0;
    gpuop_warn("upgrade", "%s of node %s failed: %s; retrying in %d ms", what, r->name,
               err && err->message[0] ? err->message : gpuop_strerror(rc), ERROR_BACKOFF_MS);
    requeue(u, ERROR_BACKOFF_MS);
}

static void now_rfc3339(char *buf, size_t size)
{
    gpuop_time_format(buf, size, gpuop_clock_wall_us(), GPUOP_TIME_S);
}

/* ---- node patches ------------------------------------------------------ */

/* A start: the PATCH that takes a node from upgrade-required into the
 * upgrade. One at a time, in name order: the labels of one plan's starts
 * would otherwise land in any order (the status promised the names'). */
static bool is_start(int kind, int state, int next)
{
    return kind == GPUOP_UA_LABEL && state == GPUOP_US_REQUIRED && next == GPUOP_US_CORDON;
}

static void patch_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct ureq *q = arg;
    struct rec *r = q->r;
    int kind = q->kind, next = q->next;
    (void)body;
    if (q->start)
        r->u->starts_inflight--;
    if (!req_end(q) || rc == GPUOP_ECANCELED)
        return;
    if (rc < 0) {
        failed(r, gpuop_upgrade_action_name(kind), rc, err);
        return;
    }
    r->u->actions++;
    gpuop_info("upgrade", "node %s: %s%s%s", r->name, gpuop_upgrade_action_name(kind),
               gpuop_upgrade_state_name(next) ? ", now " : "",
               gpuop_upgrade_state_name(next) ? gpuop_upgrade_state_name(next) : "");
    r->listed_for = 0; /* a step changed: list again */
    requeue(r->u, 0);
}

/* A state between the start and the end of gpuop's work on a node
 * (cordon-required ... uncordon-required). */
static bool upgrading(int state)
{
    return state >= GPUOP_US_CORDON && state <= GPUOP_US_UNCORDON;
}

/* PATCH node r with metadata labels/annotations (steal; may be NULL) and
 * spec (steals; may be NULL), the state label next and the since time
 * (GPUOP_US_NONE: both removed). */
static int patch_node(struct rec *r, int kind, int next, json_t *labels, json_t *annotations,
                      json_t *spec, const char *rv)
{
    char at[32];
    now_rfc3339(at, sizeof(at));
    if (!labels)
        labels = json_object();
    if (!annotations)
        annotations = json_object();
    if (r->clear_failed && next != GPUOP_US_FAILED && annotations &&
        !json_object_get(annotations, GPUOP_ANNOTATION_UPGRADE_FAILED))
        json_object_set_new(annotations, GPUOP_ANNOTATION_UPGRADE_FAILED, json_null());
    const char *st = gpuop_upgrade_state_name(next);
    if (st) {
        json_object_set_new(labels, GPUOP_LABEL_UPGRADE_STATE, json_string(st));
        json_object_set_new(annotations, GPUOP_ANNOTATION_UPGRADE_SINCE, json_string(at));
        /* while gpuop upgrades the node, the driver pod's k8s-driver-manager
           leaves evictions to it; otherwise it evicts GPU pods itself */
        json_object_set_new(annotations, GPUOP_ANNOTATION_DRIVER_UPGRADE_ENABLED,
                            upgrading(next) ? json_string("true") : json_null());
    } else if (next == GPUOP_US_NONE) { /* the node left the upgrade: no state at all */
        json_object_set_new(labels, GPUOP_LABEL_UPGRADE_STATE, json_null());
        json_object_set_new(labels, GPUOP_LABEL_DRIVER_ROLLBACK, json_null());
        json_object_set_new(annotations, GPUOP_ANNOTATION_UPGRADE_SINCE, json_null());
        json_object_set_new(annotations, GPUOP_ANNOTATION_UPGRADE_FAILED, json_null());
        json_object_set_new(annotations, GPUOP_ANNOTATION_DRIVER_UPGRADE_ENABLED, json_null());
    }
    json_t *meta = json_pack("{s:o, s:o}", "labels", labels, "annotations", annotations);
    if (meta && rv)
        json_object_set_new(meta, "resourceVersion", json_string(rv));
    json_t *patch = meta ? json_pack("{s:o}", "metadata", meta) : NULL;
    if (patch && spec)
        json_object_set_new(patch, "spec", spec);
    else
        json_decref(spec);
    char *body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
    json_decref(patch);
    struct gpuop_kube_ref ref = {"v1", NULL, "nodes", r->name, NULL};
    char *path = gpuop_kube_path(&ref, NULL, 0);
    int rc = body ? up_send(r, &(struct up_what){.kind = kind, .next = next},
                            &(struct gpuop_kube_opts){.verb = GPUOP_KUBE_PATCH,
                                                      .path = path,
                                                      .content_type = GPUOP_CT_MERGE,
                                                      .body = body},
                            patch_done)
                  : GPUOP_ENOMEM;
    gpuop_json_free(body);
    free(path);
    return rc;
}

/* The dependents' deploy labels paused; their values before in the
 * annotation (null: absent). From the cache's node. */
static int pause_node(struct rec *r, const struct gpuop_node *n, int state)
{
    json_t *labels = json_object(), *note = json_object();
    char key[128];
    int d = gpuop_operand_by_key("driver");
    for (int i = 0; i < gpuop_operand_count(); i++) {
        if (i == d || gpuop_label_host_provided(n->deploy[i])) /* false, pre-installed: kept */
            continue;
        if (gpuop_operand_follows(i) >= 0)
            continue; /* no label of its own: it goes with the one it follows */
        snprintf(key, sizeof(key), "%s%s", GPUOP_LABEL_PREFIX, gpuop_operand_get(i)->name);
        const char *old = n->deploy[i] == GPUOP_LABEL_TRUE     ? "true"
                          : n->deploy[i] == GPUOP_LABEL_ABSENT ? NULL
                                                               : gpuop_node_deploy_value(n, i);
        if (old && !strcmp(old, GPUOP_LABEL_PAUSED_FOR_UPGRADE))
            old = "true"; /* paused already (by the GPU Operator's driver manager) */
        json_object_set_new(note, key, old ? json_string(old) : json_null());
        json_object_set_new(labels, key, json_string(GPUOP_LABEL_PAUSED_FOR_UPGRADE));
    }
    char *note_s = json_dumps(note, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(note);
    if (!note_s) {
        json_decref(labels);
        return GPUOP_ENOMEM;
    }
    json_t *ann = json_pack("{s:s}", GPUOP_ANNOTATION_UPGRADE_PAUSED, note_s);
    gpuop_json_free(note_s);
    return patch_node(r, GPUOP_UA_PAUSE, state, labels, ann, NULL, NULL);
}

static void restore_get_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct ureq *q = arg;
    struct rec *r = q->r;
    int next = q->next, kind = q->kind;
    if (!req_end(q) || rc == GPUOP_ECANCELED)
        return;
    if (rc < 0) {
        failed(r, "GET (restore)", rc, err);
        return;
    }
    char vkey[128];
    int vi = gpuop_operand_by_key("validator");
    snprintf(vkey, sizeof(vkey), "%s%s", GPUOP_LABEL_PREFIX,
             vi >= 0 ? gpuop_operand_get(vi)->name : "operator-validator");
    json_t *meta = json_object_get(body, "metadata");
    const char *rv = json_string_value(json_object_get(meta, "resourceVersion"));
    const char *s = json_string_value(
        json_object_get(json_object_get(meta, "annotations"), GPUOP_ANNOTATION_UPGRADE_PAUSED));
    json_t *note = s && strlen(s) <= NOTE_MAX ? json_loads(s, 0, NULL) : NULL;
    json_t *labels = json_object();
    const char *key;
    json_t *v;
    json_object_foreach(note, key, v)
    {
        if (strncmp(key, GPUOP_LABEL_PREFIX, strlen(GPUOP_LABEL_PREFIX)) != 0)
            continue; /* only deploy labels are ever restored */
        if (kind == GPUOP_UA_RESTORE_VALIDATOR && strcmp(key, vkey) != 0)
            continue;
        json_object_set_new(labels, key, json_is_string(v) ? json_incref(v) : json_null());
    }
    json_t *ann = NULL;
    if (kind == GPUOP_UA_RESTORE_VALIDATOR) { /* the others stay paused */
        json_object_del(note, vkey);
        char *rest = json_is_object(note) ? json_dumps(note, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        ann = rest ? json_pack("{s:s}", GPUOP_ANNOTATION_UPGRADE_PAUSED, rest) : json_object();
        gpuop_json_free(rest);
    }
    if (s && !json_is_object(note))
        gpuop_warn("upgrade", "node %s: annotation %s unreadable; the deploy labels stay paused",
                   r->name, GPUOP_ANNOTATION_UPGRADE_PAUSED);
    json_decref(note);
    if (!ann)
        ann = json_pack("{s:n}", GPUOP_ANNOTATION_UPGRADE_PAUSED);
    if (patch_node(r, kind, next, labels, ann, NULL, rv) < 0)
        failed(r, "PATCH (restore)", GPUOP_ENOMEM, NULL);
}

/* ---- why a node failed ------------------------------------------------ */

static struct rec *rec_get(struct ctl_upgrader *u, const char *name);

/* Keeps why (borrowed; "" while it is being read) as the failure of node. */
static void remember_failure(struct ctl_upgrader *u, const char *node, const char *why)
{
    char *was = gpuop_map_get(&u->failed, node), *s = strdup(why ? why : "");
    if (!s || gpuop_map_put(&u->failed, node, s, NULL) < 0) {
        free(s);
        return;
    }
    free(was);
}

/* A GET of a failed node gpuop knows no reason of (after a restart): the
 * words of its failure annotation, "<generation> <why>". */
static void failed_get_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct ureq *q = arg;
    struct rec *r = q->r;
    struct ctl_upgrader *u = r->u;
    char node[GPUOP_RENDER_NAME_MAX * 2];
    snprintf(node, sizeof(node), "%s", r->name);
    bool wanted = req_end(q); /* r may be gone after this */
    (void)err;
    if (rc == GPUOP_ECANCELED)
        return;
    const char *s = json_string_value(
        json_object_get(json_object_get(json_object_get(body, "metadata"), "annotations"),
                        GPUOP_ANNOTATION_UPGRADE_FAILED));
    const char *why = s ? strchr(s, ' ') : NULL;
    remember_failure(u, node, why ? why + 1 : "unreadable failure annotation");
    if (wanted || !u->stopped)
        requeue(u, 0);
}

/* The failure words of each failed node into its input; a failed node
 * whose words are unknown is read once. Forgets the nodes that are not
 * failed any more. */
static void failures_in(struct ctl_upgrader *u, const struct gpuop_caches_view *v)
{
    const char *name;
    void *val;
    size_t it = 0, ngone = 0;
    const char *gone[GPUOP_UPGRADE_NAMED_MAX * 4];
    while (v->from && gpuop_map_next(&u->failed, &it, &name, &val)) {
        const struct gpuop_node *n = gpuop_caches_node(v->from, name);
        if ((!n || !n->up.failed_gen) && ngone < sizeof(gone) / sizeof(*gone))
            gone[ngone++] = name;
    }
    for (size_t i = 0; i < ngone; i++)
        free(gpuop_map_del(&u->failed, gone[i]));
    for (size_t i = 0; i < u->in.n; i++) {
        struct gpuop_upgrade_node_in *x = &u->nodes[i];
        if (!x->node || !x->node->up.failed_gen || x->node->up.state != GPUOP_US_FAILED)
            continue;
        const char *why = gpuop_map_get(&u->failed, x->node->name);
        if (why) {
            x->failed_why = why;
            continue;
        }
        struct rec *r = rec_get(u, x->node->name);
        if (!r || r->inflight)
            continue;
        r->seen = u->tracks;
        remember_failure(u, x->node->name, ""); /* being read: once */
        struct gpuop_kube_ref ref = {"v1", NULL, "nodes", r->name, NULL};
        char *path = gpuop_kube_path(&ref, NULL, 0);
        (void)up_send(r, &(struct up_what){.kind = GPUOP_UA_NONE, .next = 0},
                      &(struct gpuop_kube_opts){.verb = GPUOP_KUBE_GET, .path = path},
                      failed_get_done);
        free(path);
    }
}

/* ---- pods ------------------------------------------------------------ */

static bool has_owner(json_t *meta, const char *kind, bool *controller)
{
    size_t i;
    json_t *o;
    bool found = false;
    json_array_foreach(json_object_get(meta, "ownerReferences"), i, o)
    {
        if (json_is_true(json_object_get(o, "controller")))
            *controller = true;
        const char *k = json_string_value(json_object_get(o, "kind"));
        if (kind && k && !strcmp(k, kind))
            found = true;
    }
    return found;
}

/* ---- DRA: pods holding a GPU through a ResourceClaim ------------------ */

/* The pod list counts (the claims are all answered). */
static void claims_listed(struct rec *r)
{
    r->listed_for = r->claims_state;
    r->listed_at = gpuop_clock_ms();
    requeue(r->u, 0);
}

/* A ResourceClaim's answer for pod index `pod` of list `seq`: a GPU pod when
 * the claim is allocated a device of NVIDIA's GPU DRA driver, not for admin
 * access; a read error other than 404 counts as one too, as the GPU
 * Operator's PodHasNVIDIAGPUClaim (controllers/nodelabeling_controller.go). */
static void claim_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct ureq *q = arg;
    struct rec *r = q->r;
    size_t pod = q->pod;
    uint32_t seq = (uint32_t)q->next;
    (void)err;
    if (!req_end(q) || rc == GPUOP_ECANCELED || seq != r->list_seq)
        return;
    bool gpu = rc < 0 && rc != GPUOP_ENOTFOUND;
    size_t i;
    json_t *res;
    json_array_foreach(
        json_object_get(
            json_object_get(json_object_get(json_object_get(body, "status"), "allocation"),
                            "devices"),
            "results"),
        i, res)
    {
        const char *drv = json_string_value(json_object_get(res, "driver"));
        gpu |= drv && !strcmp(drv, GPUOP_DRA_GPU_DRIVER) &&
               !json_is_true(json_object_get(res, "adminAccess"));
    }
    if (gpu && pod < r->npods)
        r->pods[pod].gpu = true;
    if (!r->inflight)
        claims_listed(r);
}

/* With the ResourceClaims watched (the caches', while the DRA driver's
 * DeviceClass is applied), a pod of r's list (items, JSON, borrowed; one
 * r->pods entry each) that reserves a claim allocated on r's node with a
 * device of GPUOP_DRA_GPU_DRIVER, not for admin access only, is a GPU pod,
 * in every step: marked here, before any GET (claims_get asks only for
 * the pods left, whose claims the cache may not know yet). */
static void claim_holders(struct rec *r, json_t *items)
{
    const struct gpuop_caches *caches = r->u->caches;
    const struct gpuop_claim *c;
    size_t it = 0;
    while (caches && gpuop_caches_next_claim(caches, &it, &c)) {
        if (!c->devices || !c->npods || strcmp(c->node, r->name) != 0)
            continue;
        size_t nslen = strcspn(c->key, "/");
        for (size_t i = 0; i < r->npods; i++) {
            struct gpuop_upgrade_pod *x = &r->pods[i];
            bool own = x->ns && r->u->ns[0] && !strcmp(x->ns, r->u->ns);
            if (x->gpu || x->terminal || own || !x->ns || !x->name || strlen(x->ns) != nslen ||
                strncmp(x->ns, c->key, nslen) != 0)
                continue;
            json_t *meta = json_object_get(json_array_get(items, i), "metadata");
            x->gpu = gpuop_claim_reserved_by(c, x->name,
                                             json_string_value(json_object_get(meta, "uid")));
        }
    }
}

/* GETs the ResourceClaims pod `idx` (JSON p, borrowed) refers to; returns
 * how many were asked for. */
static size_t claims_get(struct rec *r, size_t idx, json_t *p)
{
    json_t *meta = json_object_get(p, "metadata");
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    json_t *sts = json_object_get(json_object_get(p, "status"), "resourceClaimStatuses");
    size_t i, j, n = 0;
    json_t *c, *s;
    json_array_foreach(json_object_get(json_object_get(p, "spec"), "resourceClaims"), i, c)
    {
        const char *name = json_string_value(json_object_get(c, "resourceClaimName"));
        const char *ref = json_string_value(json_object_get(c, "name"));
        json_array_foreach(sts, j, s) /* a claim made from a template */
        {
            const char *sn = json_string_value(json_object_get(s, "name"));
            if (!name && ref && sn && !strcmp(sn, ref))
                name = json_string_value(json_object_get(s, "resourceClaimName"));
        }
        if (!name || !ns)
            continue; /* not made yet: holds nothing */
        struct gpuop_kube_ref kr = {"resource.k8s.io/v1", ns, "resourceclaims", name, NULL};
        char *path = gpuop_kube_path(&kr, NULL, 0);
        if (path &&
            up_send(
                r, &(struct up_what){.kind = GPUOP_UA_LIST, .next = (int)r->list_seq, .pod = idx},
                &(struct gpuop_kube_opts){.verb = GPUOP_KUBE_GET, .path = path}, claim_done) == 0)
            n++;
        free(path);
    }
    return n;
}

/* Pod p (JSON, borrowed) of r's list in state into *x: its names borrow
 * p until pods_own_names copies them. */
static void pod_of(const struct rec *r, int state, json_t *p, struct gpuop_upgrade_pod *x)
{
    json_t *meta = json_object_get(p, "metadata"), *spec = json_object_get(p, "spec");
    const char *phase = json_string_value(json_object_get(json_object_get(p, "status"), "phase"));
    x->ns = json_string_value(json_object_get(meta, "namespace"));
    x->name = json_string_value(json_object_get(meta, "name"));
    x->gpu = gpuop_upgrade_pod_uses_gpu(p);
    x->terminal = phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"));
    x->deleting = json_object_get(meta, "deletionTimestamp") &&
                  !json_is_null(json_object_get(meta, "deletionTimestamp"));
    bool controller = false;
    bool ds = has_owner(meta, "DaemonSet", &controller);
    bool mirror = json_object_get(json_object_get(meta, "annotations"),
                                  "kubernetes.io/config.mirror") != NULL;
    /* gpuop's own pods (its namespace: the controller, the operands)
       are never evicted, drained or waited for */
    bool own = x->ns && r->u->ns[0] && !strcmp(x->ns, r->u->ns);
    x->unmanaged = !controller;
    x->daemonset = ds;
    x->mirror = mirror;
    x->gpu = x->gpu && !own;
    x->job = state == GPUOP_US_WAIT_JOBS && !own;
    x->drain = state == GPUOP_US_DRAIN && !ds && !mirror && !own;
    size_t j;
    json_t *vol;
    json_array_foreach(json_object_get(spec, "volumes"), j, vol) x->empty_dir |=
        json_object_get(vol, "emptyDir") != NULL;
    if (r->blocked_why[0] && x->name && strstr(r->blocked_why, x->name)) {
        x->blocked = true;
        x->blocked_why = r->blocked_why;
    }
}

/* Only the names outlive the body: copied into one block for all of them
 * (*strs, new; NULL when there is none). Returns 0 or GPUOP_ENOMEM. */
static int pods_own_names(struct gpuop_upgrade_pod *pods, size_t k, char **strs)
{
    size_t total = 0;
    for (size_t m = 0; m < k; m++)
        total += (pods[m].ns ? strlen(pods[m].ns) + 1 : 0) +
                 (pods[m].name ? strlen(pods[m].name) + 1 : 0);
    *strs = total ? malloc(total) : NULL;
    if (total && !*strs)
        return GPUOP_ENOMEM;
    for (size_t m = 0, at = 0; m < k; m++) {
        const char **f[2] = {&pods[m].ns, &pods[m].name};
        for (int w = 0; w < 2; w++) {
            if (!*f[w])
                continue;
            size_t len = strlen(*f[w]) + 1;
            memcpy(*strs + at, *f[w], len);
            *f[w] = *strs + at;
            at += len;
        }
    }
    return 0;
}

static void list_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct ureq *q = arg;
    struct rec *r = q->r;
    int state = q->next;
    if (!req_end(q) || rc == GPUOP_ECANCELED)
        return;
    if (rc < 0) {
        failed(r, "pod LIST", rc, err);
        return;
    }
    json_t *items = json_object_get(body, "items");
    size_t n = json_array_size(items), k = 0;
    if (n > GPUOP_UPGRADE_PODS_MAX) { /* the planner counts them in 32 bits */
        failed(r, "pod LIST", GPUOP_ETOOBIG, NULL);
        return;
    }
    struct gpuop_upgrade_pod *pods = n ? calloc(n, sizeof(*pods)) : NULL;
    if (n && !pods) {
        failed(r, "pod LIST", GPUOP_ENOMEM, NULL);
        return;
    }
    size_t i;
    json_t *p;
    json_array_foreach(items, i, p)
    {
        pod_of(r, state, p, &pods[k++]);
    }
    char *strs;
    if (pods_own_names(pods, k, &strs) < 0) {
        free(pods);
        failed(r, "pod LIST", GPUOP_ENOMEM, NULL);
        return;
    }
    free(r->pods);
    free(r->strs);
    r->pods = pods;
    r->npods = k;
    r->strs = strs;
    r->list_seq++;
    /* a pod holding a GPU through a DRA claim is a GPU pod too: its claims
       are read before the list counts (claims_get) */
    r->claims_state = (uint8_t)state;
    claim_holders(r, items);
    size_t asked = 0;
    json_array_foreach(items, i, p)
    {
        if (i < k && !pods[i].gpu && !pods[i].terminal &&
            (state == GPUOP_US_POD_DELETION || state == GPUOP_US_POD_RESTART))
            asked += claims_get(r, i, p);
    }
    if (!asked)
        claims_listed(r);
    else
        gpuop_debug("upgrade", "node %s: reading %zu ResourceClaim(s) of its pods", r->name, asked);
}

static void pod_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct ureq *q = arg;
    struct rec *r = q->r;
    int kind = q->kind;
    size_t pod = q->pod;
    if (!req_end(q) || rc == GPUOP_ECANCELED)
        return;
    struct ctl_upgrader *u = r->u;
    if (rc < 0 && rc != GPUOP_ENOTFOUND) {
        if (kind == GPUOP_UA_EVICT && err && err->http_code == 429) {
            /* a PodDisruptionBudget: the words say so, retried after a backoff */
            json_t *causes = json_object_get(json_object_get(body, "details"), "causes");
            const char *m =
                json_string_value(json_object_get(json_array_get(causes, 0), "message"));
            if (!r->blocked_round)
                r->blocked_why[0] = '\0';
            r->blocked_round = true;
            size_t len = strlen(r->blocked_why);
            snprintf(r->blocked_why + len, sizeof(r->blocked_why) - len, "%s%s: %s",
                     len ? "; " : "", pod < r->npods && r->pods[pod].name ? r->pods[pod].name : "?",
                     m ? m : err->message);
            if (pod < r->npods) {
                r->pods[pod].blocked = true;
                r->pods[pod].blocked_why = r->blocked_why;
            }
        } else {
            failed(r, gpuop_upgrade_action_name(kind), rc, err);
        }
    }
    if (r->inflight)
        return; /* the round goes on */
    if (r->blocked_round) {
        r->backoff_ms = r->backoff_ms ? r->backoff_ms * 2 : EVICT_BACKOFF_FIRST_MS;
        if (r->backoff_ms > EVICT_BACKOFF_MAX_MS)
            r->backoff_ms = EVICT_BACKOFF_MAX_MS;
        r->retry_at_ms = gpuop_clock_ms() + r->backoff_ms;
        r->blocked_round = false;
        gpuop_info("upgrade", "node %s: eviction refused (%s); retrying in %llu ms", r->name,
                   r->blocked_why, (unsigned long long)r->backoff_ms);
        requeue(u, r->backoff_ms);
        return;
    }
    r->backoff_ms = 0;
    r->blocked_why[0] = '\0';
    u->actions++;
    r->listed_for = 0;
    requeue(u, 0);
}

static int pod_request(struct rec *r, int kind, size_t pod, const char *ns, const char *name,
                       bool evict)
{
    struct gpuop_kube_ref ref = {"v1", ns, "pods", name, evict ? "eviction" : NULL};
    char *path = gpuop_kube_path(&ref, NULL, 0);
    char *body = NULL;
    if (evict) {
        json_t *e = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "policy/v1", "kind",
                              "Eviction", "metadata", "name", name, "namespace", ns);
        body = e ? json_dumps(e, JSON_COMPACT) : NULL;
        json_decref(e);
    }
    int rc =
        evict && !body
            ? GPUOP_ENOMEM
            : up_send(r, &(struct up_what){.kind = kind, .next = 0, .pod = pod},
                      &(struct gpuop_kube_opts){.verb = evict ? GPUOP_KUBE_POST : GPUOP_KUBE_DELETE,
                                                .path = path,
                                                .content_type = GPUOP_CT_JSON,
                                                .body = body},
                      pod_done);
    gpuop_json_free(body);
    free(path);
    return rc;
}

/* ---- the driver DaemonSets' newest revisions ------------------------ */

/* The newest revision of ds at its current template (the caches'), or 0
 * when it is not known (then asked for, once the DaemonSet controller has
 * seen that template). */
static uint32_t rev_of(struct ctl_upgrader *u, const struct gpuop_ds *ds)
{
    if (!ds || ds->template_gen <= 0 || ds->template_gen > UINT32_MAX)
        return 0;
    uint32_t tgen = (uint32_t)ds->template_gen;
    struct rev *r = NULL;
    for (size_t i = 0; i < u->nrevs && !r; i++)
        if (!strcmp(u->revs[i].ds, ds->name))
            r = &u->revs[i];
    if (r && r->tgen == tgen && !r->asked)
        return r->hash; /* 0: it has none, judged by generation alone */
    u->revs_missing++;
    if (r && r->asked)
        return 0;
    if (ds->observed != ds->generation)
        return 0; /* the DaemonSet controller has not made its revision yet */
    if (!r && u->nrevs == REVS_MAX)
        return 0;
    if (!r)
        r = &u->revs[u->nrevs++];
    snprintf(r->ds, sizeof(r->ds), "%s", ds->name);
    r->tgen = tgen;
    r->hash = 0;
    r->asked = true;
    u->revs_due = true;
    return 0;
}

static void revs_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct ctl_upgrader *u = arg;
    u->rev_req = NULL;
    if (rc == GPUOP_ECANCELED)
        return;
    for (size_t k = 0; k < u->nrevs; k++) {
        struct rev *r = &u->revs[k];
        if (!r->asked)
            continue;
        r->asked = false;
        if (rc < 0) { /* asked again by the next track */
            r->tgen = 0;
            continue;
        }
        long long best = -1;
        size_t i, j;
        json_t *cr, *o;
        json_array_foreach(json_object_get(body, "items"), i, cr)
        {
            bool mine = false;
            json_array_foreach(json_object_get(json_object_get(cr, "metadata"), "ownerReferences"),
                               j, o) mine |=
                json_is_string(json_object_get(o, "name")) &&
                !strcmp(json_string_value(json_object_get(o, "name")), r->ds);
            long long rev = json_integer_value(json_object_get(cr, "revision"));
            if (!mine || rev <= best)
                continue;
            best = rev;
            r->hash = gpuop_revision_hash(json_string_value(
                json_object_get(json_object_get(json_object_get(cr, "metadata"), "labels"),
                                GPUOP_LABEL_REVISION_HASH)));
        }
    }
    if (rc < 0)
        gpuop_warn("upgrade", "listing the driver DaemonSets' revisions: %s",
                   err && err->message[0] ? err->message : gpuop_strerror(rc));
    requeue(u, rc < 0 ? ERROR_BACKOFF_MS : 0);
}

/* One LIST of the driver DaemonSets' ControllerRevisions, when wanted. */
static void revs_list(struct ctl_upgrader *u)
{
    if (!u->revs_due || u->rev_req)
        return;
    u->revs_due = false;
    char sel[256];
    snprintf(sel, sizeof(sel), "%s=%s,%s=%s", GPUOP_LABEL_NAME, "driver", GPUOP_LABEL_MANAGED_BY,
             GPUOP_MANAGER);
    struct gpuop_kube_param q[] = {{"labelSelector", sel}};
    struct gpuop_kube_ref ref = {"apps/v1", u->ns, "controllerrevisions", NULL, NULL};
    char *path = gpuop_kube_path(&ref, q, 1);
    struct gpuop_kube_opts o = {.verb = GPUOP_KUBE_GET, .path = path};
    if (!path || gpuop_kube_request(u->kube, &o, revs_done, u, &u->rev_req) < 0) {
        u->rev_req = NULL;
        for (size_t k = 0; k < u->nrevs; k++)
            if (u->revs[k].asked)
                u->revs[k].asked = false, u->revs[k].tgen = 0;
        requeue(u, ERROR_BACKOFF_MS);
    }
    free(path);
}

/* ---- onFailure rollback ---------------------------------------------- */

/* The previous template of DaemonSet ds among the ControllerRevisions
 * (borrowed list): the revision before the newest one it owns. */
static json_t *previous_template(json_t *list, const char *ds)
{
    json_t *best = NULL, *second = NULL;
    long long b = -1, s2 = -1;
    size_t i, j;
    json_t *cr, *o;
    json_array_foreach(json_object_get(list, "items"), i, cr)
    {
        bool mine = false;
        json_array_foreach(json_object_get(json_object_get(cr, "metadata"), "ownerReferences"), j,
                           o) mine |= json_is_string(json_object_get(o, "name")) &&
                                      !strcmp(json_string_value(json_object_get(o, "name")), ds);
        long long rev = json_integer_value(json_object_get(cr, "revision"));
        if (!mine)
            continue;
        if (rev > b) {
            second = best, s2 = b;
            best = cr, b = rev;
        } else if (rev > s2) {
            second = cr, s2 = rev;
        }
    }
    return second ? json_object_get(json_object_get(json_object_get(second, "data"), "spec"),
                                    "template")
                  : NULL;
}

static void rollback_ds_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct ureq *q = arg;
    struct rec *r = q->r;
    char ds[GPUOP_RENDER_NAME_MAX];
    snprintf(ds, sizeof(ds), "%s", q->ds);
    (void)body;
    if (!req_end(q) || rc == GPUOP_ECANCELED)
        return;
    if (rc < 0) {
        failed(r, "rollback DaemonSet apply", rc, err);
        return;
    }
    /* the pool's DaemonSet leaves the node (its affinity), the rollback one comes */
    json_t *labels = json_pack("{s:s}", GPUOP_LABEL_DRIVER_ROLLBACK, ds);
    if (patch_node(r, GPUOP_UA_ROLLBACK, GPUOP_US_FAILED, labels, NULL, NULL, NULL) < 0)
        failed(r, "rollback PATCH", GPUOP_ENOMEM, NULL);
}

static void rollback_list_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct ureq *q = arg;
    struct rec *r = q->r;
    struct ctl_upgrader *u = r->u;
    char ds[GPUOP_RENDER_NAME_MAX];
    snprintf(ds, sizeof(ds), "%s", q->ds);
    if (!req_end(q) || rc == GPUOP_ECANCELED)
        return;
    if (rc < 0) {
        failed(r, "ControllerRevision LIST", rc, err);
        return;
    }
    json_t *tmpl = previous_template(body, ds);
    if (!tmpl) {
        gpuop_warn("upgrade", "node %s: no previous revision of %s to roll back to", r->name, ds);
        r->retry_at_ms = gpuop_clock_ms() + EVICT_BACKOFF_MAX_MS;
        return;
    }
    char name[GPUOP_RENDER_NAME_MAX + sizeof(ROLLBACK_SUFFIX)];
    snprintf(name, sizeof(name), "%s%s", ds, ROLLBACK_SUFFIX);
    json_t *t = json_deep_copy(tmpl);
    json_object_del(t, "$patch"); /* the revision's strategic-merge marker */
    json_t *tm = json_object_get(t, "metadata"), *ts = json_object_get(t, "spec");
    if (!json_is_object(json_object_get(tm, "labels")))
        json_object_set_new(tm, "labels", json_object());
    json_object_set_new(json_object_get(tm, "labels"), GPUOP_LABEL_DRIVER_ROLLBACK,
                        json_string(ds));
    json_object_set_new(ts, "nodeSelector", json_pack("{s:s}", GPUOP_LABEL_DRIVER_ROLLBACK, ds));
    /* the pool's node affinity keeps drivers off a rolled-back node: not this one */
    json_object_del(json_object_get(ts, "affinity"), "nodeAffinity");
    json_t *obj = json_pack(
        "{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s}, s:[{s:s, s:s, s:s, s:s}]}, s:{s:{s:{s:s}}, "
        "s:{s:s}, s:o}}",
        "apiVersion", "apps/v1", "kind", "DaemonSet", "metadata", "name", name, "namespace", u->ns,
        "labels", "app.kubernetes.io/part-of", "gpuop", GPUOP_LABEL_DRIVER_ROLLBACK, ds,
        "ownerReferences", "apiVersion", GPUOP_API_VERSION, "kind", "GpuPolicy", "name", u->policy,
        "uid", u->uid, "spec", "selector", "matchLabels", GPUOP_LABEL_DRIVER_ROLLBACK, ds,
        "updateStrategy", "type", "OnDelete", "template", t);
    char *b = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
    json_decref(obj);
    char *path = gpuop_ctl_apply_path("apps/v1", u->ns, "daemonsets", name, NULL);
    int k = b && path
                ? up_send(r, &(struct up_what){.kind = GPUOP_UA_ROLLBACK, .next = GPUOP_US_FAILED},
                          &(struct gpuop_kube_opts){.verb = GPUOP_KUBE_PATCH,
                                                    .path = path,
                                                    .content_type = GPUOP_CT_APPLY,
                                                    .body = b},
                          rollback_ds_done)
                : GPUOP_ENOMEM;
    if (k == 0)
        snprintf(u->reqs->ds, sizeof(u->reqs->ds), "%s", ds);
    else
        failed(r, "rollback DaemonSet apply", k, NULL);
    gpuop_json_free(b);
    free(path);
}

/* The name of the driver DaemonSet covering node n into ds; -1 when none
 * does (per-OS DaemonSets and n in no OS pool). */
static int driver_ds_of(const struct ctl_upgrader *u, const struct gpuop_node *n, char *ds,
                        size_t size)
{
    int d = gpuop_operand_by_key("driver");
    struct gpuop_ospool pool;
    unsigned missing = 0;
    bool per_os = gpuop_render_per_os(u->pol, d);
    if (per_os && gpuop_ospool_of_node(n, &pool, &missing) < 0)
        return -1;
    gpuop_render_ds_name(u->pol, d, per_os ? &pool : NULL, ds, size);
    return 0;
}

static void rollback_delete_done(void *arg, int rc, json_t *body, const struct gpuop_err *err)
{
    struct ureq *q = arg;
    struct rec *r = q->r;
    (void)body;
    if (!req_end(q) || rc == GPUOP_ECANCELED)
        return;
    if (rc < 0 && rc != GPUOP_ENOTFOUND) /* gone already, or next time no node uses it */
        gpuop_warn("upgrade", "deleting the rollback DaemonSet after node %s: %s", r->name,
                   err && err->message[0] ? err->message : gpuop_strerror(rc));
}

/* The rollback label leaves node x: its rollback DaemonSet is deleted
 * when no other node of the last plan's input carries the label for the
 * same pool. (Killed in between, the empty DaemonSet stays until the next
 * rollback of that pool re-applies it, or the GpuPolicy goes.) */
static int rollback_clear(struct ctl_upgrader *u, struct rec *r,
                          const struct gpuop_upgrade_node_in *x, int next, const char *ns)
{
    int rc = patch_node(r, GPUOP_UA_ROLLBACK_CLEAR, next,
                        json_pack("{s:n}", GPUOP_LABEL_DRIVER_ROLLBACK), NULL, NULL, NULL);
    char ds[GPUOP_RENDER_NAME_MAX], other[GPUOP_RENDER_NAME_MAX];
    if (rc < 0 || driver_ds_of(u, x->node, ds, sizeof(ds)) < 0)
        return rc;
    for (size_t i = 0; i < u->in.n; i++) {
        const struct gpuop_node *n = u->nodes[i].node;
        if (n && n != x->node && n->up.rollback && driver_ds_of(u, n, other, sizeof(other)) == 0 &&
            !strcmp(other, ds))
            return 0;
    }
    char name[GPUOP_RENDER_NAME_MAX + sizeof(ROLLBACK_SUFFIX)];
    snprintf(name, sizeof(name), "%s%s", ds, ROLLBACK_SUFFIX);
    struct gpuop_kube_ref ref = {"apps/v1", ns, "daemonsets", name, NULL};
    char *path = gpuop_kube_path(&ref, NULL, 0);
    rc = up_send(r, &(struct up_what){.kind = GPUOP_UA_ROLLBACK_CLEAR, .next = next},
                 &(struct gpuop_kube_opts){.verb = GPUOP_KUBE_DELETE, .path = path},
                 rollback_delete_done);
    free(path);
    gpuop_info("upgrade", "node %s: the last rolled-back node of %s; deleting %s", r->name, ds,
               name);
    return rc;
}

/* ---- one node's action ----------------------------------------------- */

/* Where an action is taken: the operator namespace, the Events of the
 * policy (NULL: none) and its uid (all borrowed). */
struct act_ctx {
    const char *ns;
    struct gpuop_events *ev;
    const char *uid;
};

/* FAIL: the failed annotation, the log line and the Event DriverUpgradeFailed. */
static int act_fail(struct ctl_upgrader *u, struct rec *r, const struct gpuop_upgrade_node_in *x,
                    const struct gpuop_upgrade_node_out *o, const struct act_ctx *c)
{
    const struct gpuop_upgrade_policy *pol = u->in.policy;
    char val[GPUOP_UPGRADE_WAIT_MAX + 16], msg[GPUOP_UPGRADE_WAIT_MAX + 384];
    snprintf(val, sizeof(val), "%u %s", x->target_gen, o->fail_reason ? o->fail_reason : "");
    int rc = patch_node(r, o->action, o->next, NULL,
                        json_pack("{s:s}", GPUOP_ANNOTATION_UPGRADE_FAILED, val), NULL, NULL);
    snprintf(msg, sizeof(msg),
             "Driver upgrade failed on node %s (version %s, driver generation %u): %s. %s"
             "No other node starts; clear with: kubectl annotate node %s %s-",
             r->name, u->in.version ? u->in.version : "?", x->target_gen,
             o->fail_reason ? o->fail_reason : "",
             pol->on_failure == GPUOP_ON_FAILURE_ROLLBACK
                 ? "onFailure rollback: the previous driver goes back on the node, which "
                   "is then uncordoned. "
                 : "The node stays cordoned. ",
             r->name, GPUOP_ANNOTATION_UPGRADE_FAILED);
    gpuop_warn("upgrade", "%s", msg);
    if (rc == 0)
        remember_failure(u, r->name, o->fail_reason);
    if (rc == 0 && c->ev)
        gpuop_events_say(c->ev, u->policy, c->uid, "Warning", "DriverUpgradeFailed", msg);
    return rc;
}

/* LIST: the node's pods, with the step's label selector. */
static int act_list(struct rec *r, const struct gpuop_upgrade_node_out *o,
                    const struct gpuop_upgrade_policy *pol)
{
    char field[300], drain[GPUOP_UPGRADE_SELECTOR_MAX + sizeof(DRAIN_SKIP_SELECTOR) + 2];
    snprintf(field, sizeof(field), "spec.nodeName=%s", r->name);
    /* the drain never takes a pod labelled to skip it (the GPU
       Operator appends the same to drain.podSelector) */
    snprintf(drain, sizeof(drain), "%s%s%s", pol->drain_selector ? pol->drain_selector : "",
             pol->drain_selector && *pol->drain_selector ? "," : "", DRAIN_SKIP_SELECTOR);
    const char *sel = o->state == GPUOP_US_WAIT_JOBS ? pol->wait_selector
                      : o->state == GPUOP_US_DRAIN   ? drain
                                                     : NULL;
    struct gpuop_kube_param q[] = {{"fieldSelector", field},
                                   {"labelSelector", sel && *sel ? sel : NULL},
                                   {"resourceVersion", "0"}}; /* the watch cache */
    struct gpuop_kube_ref ref = {"v1", NULL, "pods", NULL, NULL};
    char *path = gpuop_kube_path(&ref, q, 3);
    int rc = up_send(r, &(struct up_what){.kind = o->action, .next = o->state},
                     &(struct gpuop_kube_opts){.verb = GPUOP_KUBE_GET, .path = path}, list_done);
    free(path);
    return rc;
}

/* RESTORE, RESTORE_VALIDATOR: GET the node, for its paused annotation
 * (restore_get_done PATCHes the labels back). */
static int act_restore(struct rec *r, const struct gpuop_upgrade_node_out *o)
{
    struct gpuop_kube_ref ref = {"v1", NULL, "nodes", r->name, NULL};
    char *path = gpuop_kube_path(&ref, NULL, 0);
    int rc =
        up_send(r, &(struct up_what){.kind = o->action, .next = o->next},
                &(struct gpuop_kube_opts){.verb = GPUOP_KUBE_GET, .path = path}, restore_get_done);
    free(path);
    return rc;
}

/* ROLLBACK: the ControllerRevisions of the driver, for the pool's
 * previous template (rollback_list_done). */
static int act_rollback(struct ctl_upgrader *u, struct rec *r,
                        const struct gpuop_upgrade_node_in *x,
                        const struct gpuop_upgrade_node_out *o, const char *ns)
{
    char ds[GPUOP_RENDER_NAME_MAX], sel[512];
    if (driver_ds_of(u, x->node, ds, sizeof(ds)) < 0)
        return 0;
    snprintf(sel, sizeof(sel), "%s=%s,%s=%s", GPUOP_LABEL_NAME, "driver", GPUOP_LABEL_MANAGED_BY,
             GPUOP_MANAGER);
    struct gpuop_kube_param q[] = {{"labelSelector", sel}};
    struct gpuop_kube_ref ref = {"apps/v1", ns, "controllerrevisions", NULL, NULL};
    char *path = gpuop_kube_path(&ref, q, 1);
    int rc = up_send(r, &(struct up_what){.kind = o->action, .next = o->next},
                     &(struct gpuop_kube_opts){.verb = GPUOP_KUBE_GET, .path = path},
                     rollback_list_done);
    if (rc == 0)
        snprintf(u->reqs->ds, sizeof(u->reqs->ds), "%s", ds);
    free(path);
    gpuop_info("upgrade", "node %s: rolling back to the previous template of %s", r->name, ds);
    return rc;
}

/* MOVE_POOL: the pool label to the wanted pool (removed for the default
 * pool), the wanted annotation removed, the value written recorded
 * (GPUOP_ANNOTATION_DRIVER_POOL_SET, removed with the label), the state
 * label kept. */
static int act_move(struct rec *r, const struct gpuop_upgrade_node_in *x,
                    const struct gpuop_upgrade_node_out *o)
{
    const char *to = gpuop_node_os(x->node, GPUOP_OS_POOL_WANTED);
    if (!to || !*to)
        return 0;
    bool dflt = !strcmp(to, GPUOP_DRIVER_POOL_DEFAULT);
    gpuop_info("upgrade", "node %s: moving it to driver pool %s", r->name, to);
    return patch_node(
        r, o->action, o->next,
        json_pack("{s:o}", GPUOP_LABEL_DRIVER_POOL, dflt ? json_null() : json_string(to)),
        json_pack("{s:n, s:o}", GPUOP_ANNOTATION_DRIVER_POOL_WANTED,
                  GPUOP_ANNOTATION_DRIVER_POOL_SET, dflt ? json_null() : json_string(to)),
        NULL, NULL);
}

/* Takes node x's one action o (planned) through r, in c. */
static void act(struct ctl_upgrader *u, struct rec *r, const struct gpuop_upgrade_node_in *x,
                const struct gpuop_upgrade_node_out *o, const struct act_ctx *c)
{
    const struct gpuop_upgrade_policy *pol = u->in.policy;
    const char *ns = c->ns;
    int rc = 0;
    /* a node recovered (its new driver Ready by itself) or moving on from
       an outdated failure leaves upgrade-failed: its failure annotation goes */
    r->clear_failed = x->node->up.failed_gen && o->next != GPUOP_US_FAILED;
    switch (o->action) {
    case GPUOP_UA_LABEL:
        rc = patch_node(r, o->action, o->next, NULL, NULL, NULL, NULL);
        if (rc == 0 && is_start(o->action, o->state, o->next)) {
            u->reqs->start = true; /* patch_node's request, first in the list */
            u->starts_inflight++;
        }
        break;
    case GPUOP_UA_CORDON:
        rc = patch_node(r, o->action, o->next, NULL,
                        json_pack("{s:s}", GPUOP_ANNOTATION_UPGRADE_CORDONED, "true"),
                        json_pack("{s:b}", "unschedulable", 1), NULL);
        break;
    case GPUOP_UA_UNCORDON:
        rc = patch_node(r, o->action, o->next, NULL,
                        json_pack("{s:n}", GPUOP_ANNOTATION_UPGRADE_CORDONED),
                        json_pack("{s:n}", "unschedulable"), NULL);
        break;
    case GPUOP_UA_FORGET_CORDON: /* someone uncordoned it: never gpuop's cordon again */
        rc = patch_node(r, o->action, o->next, NULL,
                        json_pack("{s:n}", GPUOP_ANNOTATION_UPGRADE_CORDONED), NULL, NULL);
        break;
    case GPUOP_UA_FAIL:
        rc = act_fail(u, r, x, o, c);
        break;
    case GPUOP_UA_PAUSE:
        rc = pause_node(r, x->node, o->next);
        break;
    case GPUOP_UA_RESTORE:
    case GPUOP_UA_RESTORE_VALIDATOR:
        rc = act_restore(r, o);
        break;
    case GPUOP_UA_LIST:
        rc = act_list(r, o, pol);
        break;
    case GPUOP_UA_EVICT: /* the Eviction API only: a PodDisruptionBudget always holds */
        for (size_t i = 0; rc == 0 && i < r->npods; i++) {
            const struct gpuop_upgrade_pod *p = &r->pods[i];
            if (gpuop_upgrade_evicts(pol, o->state, p) && p->ns && p->name)
                rc = pod_request(r, o->action, i, p->ns, p->name, true);
        }
        break;
    case GPUOP_UA_DELETE_DRIVER:
    case GPUOP_UA_DELETE_VALIDATOR: {
        const struct gpuop_pod *p = o->action == GPUOP_UA_DELETE_DRIVER ? x->driver : x->validator;
        if (p)
            rc = pod_request(r, o->action, SIZE_MAX, ns, p->name, false);
        break;
    }
    case GPUOP_UA_ROLLBACK: /* the pool's previous template, on this node only */
        rc = act_rollback(u, r, x, o, ns);
        break;
    case GPUOP_UA_ROLLBACK_END: /* neither DaemonSet selects it: the old pod leaves */
        rc = patch_node(
            r, o->action, o->next,
            json_pack("{s:s}", GPUOP_LABEL_DRIVER_ROLLBACK, GPUOP_DRIVER_ROLLBACK_ENDING), NULL,
            NULL, NULL);
        break;
    case GPUOP_UA_ROLLBACK_CLEAR: /* the pool's DaemonSet brings the new driver */
        rc = rollback_clear(u, r, x, o->next, ns);
        break;
    case GPUOP_UA_MOVE_POOL: /* in place of delete driver: the new pool's DaemonSet */
        rc = act_move(r, x, o);
        break;
    default:
        break;
    }
    if (rc < 0)
        failed(r, gpuop_upgrade_action_name(o->action), rc, NULL);
    r->last_action = o->action;
    r->last_state = o->state;
    r->last_next = o->next;
    r->settle_until = gpuop_clock_ms() + SETTLE_MS;
}

/* ---- track ----------------------------------------------------------- */

static const struct gpuop_ds *find_ds(const struct gpuop_caches_view *v, const char *name)
{
    for (size_t i = 0; i < v->nds; i++)
        if (v->ds[i] && v->ds[i]->name && !strcmp(v->ds[i]->name, name))
            return v->ds[i];
    return NULL;
}

/* The better driver pod of two: not being deleted, then the newest. */
static bool better(const struct gpuop_pod *a, const struct gpuop_pod *b)
{
    if (!b)
        return true;
    if (!a->deleted != !b->deleted)
        return !a->deleted;
    return a->created > b->created;
}

/* What pod tells of its node's upgrade: its driver, its validator, the
 * dependents that must leave before the driver goes. */
static void take_pod(struct gpuop_upgrade_node_in *x, const struct gpuop_pod *pod, int d, int val)
{
    if (!pod || !pod->node || pod->operand < 0)
        return;
    if (pod->operand == d && better(pod, x->driver))
        x->driver = pod;
    else if (pod->operand == val && better(pod, x->validator))
        x->validator = pod;
    if (pod->operand != d && !x->dependents++)
        x->dependent = pod->name; /* must leave before the driver goes */
}

static struct rec *rec_get(struct ctl_upgrader *u, const char *name)
{
    struct rec *r = gpuop_map_get(&u->recs, name);
    if (r)
        return r;
    size_t len = strlen(name);
    if (!(r = calloc(1, sizeof(*r) + len + 1)))
        return NULL;
    memcpy(r->name, name, len + 1);
    r->u = u;
    if (gpuop_map_put(&u->recs, r->name, r, NULL) < 0) {
        free(r);
        return NULL;
    }
    return r;
}

static void forget_unseen(struct ctl_upgrader *u)
{
    size_t it = 0, n = 0;
    void *v;
    while (gpuop_map_next(&u->recs, &it, NULL, &v))
        n += ((struct rec *)v)->seen != u->tracks;
    if (!n)
        return;
    struct rec **gone = malloc(n * sizeof(*gone));
    if (!gone)
        return;
    size_t k = 0;
    it = 0;
    while (k < n && gpuop_map_next(&u->recs, &it, NULL, &v))
        if (((struct rec *)v)->seen != u->tracks)
            gone[k++] = v;
    for (size_t i = 0; i < k; i++) {
        gpuop_map_del(&u->recs, gone[i]->name);
        if (gone[i]->inflight)
            gone[i]->dropped = true;
        else
            rec_free(gone[i]);
    }
    free(gone);
}

/* The plan's arrays go. */
static void plan_release(struct ctl_upgrader *u)
{
    gpuop_upgrade_plan_free(&u->plan); /* nothing when there is none */
    u->have_plan = false;
    free(u->nodes);
    u->nodes = NULL;
    memset(&u->in, 0, sizeof(u->in));
}

/* The driver DaemonSet for pool (NULL: the one for every node); borrowed,
 * NULL when there is none. */
static const struct gpuop_ds *target_ds(const struct gpuop_policy *p, int d,
                                        const struct gpuop_ospool *pool,
                                        const struct gpuop_caches_view *v)
{
    char name[GPUOP_RENDER_NAME_MAX];
    gpuop_render_ds_name(p, d, pool, name, sizeof(name));
    return find_ds(v, name);
}

/* The template generation (and the install configuration digest, *digest)
 * of the driver DaemonSet for pool (NULL: the one for every node); 0 when
 * there is none. */
static uint32_t target_gen_of(const struct gpuop_policy *p, int d, const struct gpuop_ospool *pool,
                              const struct gpuop_caches_view *v, uint32_t *digest)
{
    const struct gpuop_ds *ds = target_ds(p, d, pool, v);
    bool ok = ds && ds->template_gen > 0 && ds->template_gen <= UINT32_MAX;
    *digest = ok ? ds->driver_digest : 0;
    return ok ? (uint32_t)ds->template_gen : 0;
}

/* The node's target revision, when its driver pod is not on the target
 * generation (else it needs none): asked for when unknown. */
static void target_rev(struct ctl_upgrader *u, struct gpuop_upgrade_node_in *x,
                       const struct gpuop_ds *ds)
{
    uint32_t g = x->driver ? gpuop_pod_template_gen(x->driver) : 0;
    x->target_rev = g && x->target_gen && g != x->target_gen ? rev_of(u, ds) : 0;
}

/* The plan's input but its nodes. */
static void in_globals(struct ctl_upgrader *u, const struct gpuop_policy *p, int d, int val)
{
    u->in = (struct gpuop_upgrade_in){.policy = &p->upgrade,
                                      .driver_enabled = p->operands[d].enabled,
                                      .validator_enabled = val >= 0 && p->operands[val].enabled,
                                      .version = u->version,
                                      .now = now_s()};
}

/* The version the driver's image (of policy p, operand d) names: its tag
 * (before the OS is appended), or digest. */
static void set_version(struct ctl_upgrader *u, const struct gpuop_policy *p, int d)
{
    const char *img = p->operands[d].image, *at = strrchr(img, '@'), *colon = strrchr(img, ':');
    const char *slash = strrchr(img, '/');
    snprintf(u->version, sizeof(u->version), "%s",
             at                                   ? at + 1
             : colon && (!slash || colon > slash) ? colon + 1
                                                  : img);
}

/* u->nodes (v->nnodes of them) from the view: each GPU node, its driver
 * (operand d) and validator (val) pod, its target generation. Returns 0
 * or GPUOP_ENOMEM (every node filled as far as it goes). */
static int nodes_in(struct ctl_upgrader *u, const struct gpuop_policy *p,
                    const struct gpuop_caches_view *v, int d, int val)
{
    /* Each GPU node's pods: from the caches' index when it is whole (the
     * node records keep it on), else joined by name here. */
    const struct gpuop_pod *pp[GPUOP_CACHES_NODE_PODS_MAX];
    size_t npp;
    bool indexed = v->from && gpuop_caches_pods_indexed(v->from);
    struct gpuop_map idx;
    gpuop_map_init(&idx);
    int rc = 0;
    /* the target generation: one for all, or per OS pool (few, and nodes
     * of one pool mostly follow each other) */
    bool per_os = gpuop_render_per_os(p, d), have_gen = false;
    struct gpuop_ospool_memo memo = {0};
    uint32_t gen = 0, digest = 0;
    for (size_t i = 0; i < v->nnodes; i++) {
        const struct gpuop_node *n = v->nodes[i];
        u->nodes[i].node = n;
        if (!n || !n->gpu)
            continue;
        if (indexed &&
            gpuop_caches_node_pods(v->from, n->name, pp, GPUOP_CACHES_NODE_PODS_MAX, &npp) == 0)
            for (size_t k = 0; k < npp; k++)
                take_pod(&u->nodes[i], pp[k], d, val);
        else if (gpuop_map_put(&idx, n->name, &u->nodes[i], NULL) < 0)
            rc = GPUOP_ENOMEM;
        struct gpuop_ospool pool;
        bool hit = false;
        if (per_os && gpuop_ospool_of_node_memo(n, &memo, &pool, NULL, &hit) < 0)
            continue;                        /* no pool: no driver DaemonSet covers it */
        if (!have_gen || (per_os && !hit)) { /* the last node's pool's, else its own */
            gen = target_gen_of(p, d, per_os ? &pool : NULL, v, &digest);
            have_gen = true;
        }
        u->nodes[i].target_gen = gen;
        u->nodes[i].target_digest = digest;
    }
    for (size_t i = 0; !indexed && i < v->npods; i++) {
        const struct gpuop_pod *pod = v->pods[i];
        struct gpuop_upgrade_node_in *x = pod && pod->node ? gpuop_map_get(&idx, pod->node) : NULL;
        if (x)
            take_pod(x, pod, d, val);
    }
    gpuop_map_free(&idx, NULL);
    return rc;
}

/* The names the DaemonSet controller gives a DaemonSet's pods: generateName
 * "<ds>-" (cut to DS_POD_PREFIX_MAX) and 5 characters. Made once per
 * DaemonSet name, not once per node. */
#define DS_POD_PREFIX_MAX 58
#define DS_POD_SUFFIX_LEN 5
struct ds_pods {
    char prefix[GPUOP_RENDER_NAME_MAX + 2];
    size_t len; /* of prefix as compared */
};

static void ds_pods_of(struct ds_pods *dp, const char *ds)
{
    int k = snprintf(dp->prefix, sizeof(dp->prefix), "%s-", ds);
    dp->len = k > DS_POD_PREFIX_MAX ? DS_POD_PREFIX_MAX : (size_t)(k > 0 ? k : 0);
}

/* Pod name pod was made by the DaemonSet dp describes. */
static bool pod_of_ds(const char *pod, const struct ds_pods *dp)
{
    return strncmp(pod, dp->prefix, dp->len) == 0 && strlen(pod + dp->len) == DS_POD_SUFFIX_LEN;
}

/* Each node's driver pod of another DaemonSet than the one covering it (a
 * pool's it moved from): not on the target, whatever its generation. A
 * rollback DaemonSet's pod (no generation) is the rollback's to judge. */
static void drivers_elsewhere(struct ctl_upgrader *u, const struct gpuop_policy *p, size_t n, int d)
{
    bool per_os = gpuop_render_per_os(p, d);
    struct gpuop_ospool_memo memo = {0};
    char ds[GPUOP_RENDER_NAME_MAX] = "";
    struct ds_pods dp = {.len = 0};
    for (size_t i = 0; i < n; i++) {
        struct gpuop_upgrade_node_in *x = &u->nodes[i];
        if (!x->target_gen || !x->driver || !x->driver->name || !gpuop_pod_template_gen(x->driver))
            continue;
        struct gpuop_ospool pool;
        bool hit = false;
        if (per_os && gpuop_ospool_of_node_memo(x->node, &memo, &pool, NULL, &hit) < 0)
            continue;
        if (!hit || !ds[0]) {
            gpuop_render_ds_name(p, d, per_os ? &pool : NULL, ds, sizeof(ds));
            ds_pods_of(&dp, ds);
        }
        x->driver_elsewhere = !pod_of_ds(x->driver->name, &dp);
    }
}

/* What this file knows of u->nodes beyond the view: each one's target
 * revision (asked for when unknown) and its pods listed for its state
 * within LIST_TTL_MS (before now). */
static void nodes_known(struct ctl_upgrader *u, const struct gpuop_policy *p,
                        const struct gpuop_caches_view *v, int d, uint64_t now)
{
    bool per_os = gpuop_render_per_os(p, d);
    u->revs_missing = 0;
    for (size_t i = 0; i < v->nnodes; i++) {
        struct gpuop_upgrade_node_in *x = &u->nodes[i];
        struct gpuop_ospool pool;
        if (x->target_gen && x->driver && gpuop_pod_template_gen(x->driver) != x->target_gen &&
            (!per_os || gpuop_ospool_of_node(x->node, &pool, NULL) == 0))
            target_rev(u, x, target_ds(p, d, per_os ? &pool : NULL, v));
        struct rec *r = x->node ? gpuop_map_get(&u->recs, x->node->name) : NULL;
        if (r && r->listed_for && r->listed_for == x->node->up.state &&
            now - r->listed_at < LIST_TTL_MS) {
            x->pods_known = true;
            x->pods = r->pods;
            x->npods = (uint32_t)r->npods; /* <= GPUOP_UPGRADE_PODS_MAX: the LIST's check */
        }
    }
}

/* Each node's action of the plan, as far as the window, the starts' order
 * and each node's settling and backoff allow (the rest requeued). */
static void act_all(struct ctl_upgrader *u, uint64_t now, const struct act_ctx *c)
{
    bool held = false; /* a start not sent: the later ones (by name) wait too */
    for (size_t i = 0; i < u->plan.n; i++) {
        const struct gpuop_upgrade_node_out *o = &u->plan.nodes[i];
        const struct gpuop_upgrade_node_in *x = &u->nodes[o->in];
        bool keep = o->action != GPUOP_UA_NONE ||
                    (o->next >= GPUOP_US_CORDON && o->next <= GPUOP_US_UNCORDON);
        if (!keep)
            continue;
        bool start = is_start(o->action, o->state, o->next);
        struct rec *r = rec_get(u, x->node->name);
        if (!r) {
            held |= start;
            continue;
        }
        r->seen = u->tracks;
        if (o->action == GPUOP_UA_NONE && o->next >= GPUOP_US_CORDON &&
            o->next <= GPUOP_US_UNCORDON)
            requeue(u, LIST_TTL_MS); /* workload pods are not watched: look again */
        if (o->action == GPUOP_UA_NONE)
            continue;
        /* a start waits for the one in flight: patch_done's requeue */
        bool wait =
            r->inflight || u->ninflight >= INFLIGHT_MAX || (start && (held || u->starts_inflight));
        uint64_t due = r->retry_at_ms > now ? r->retry_at_ms : 0;
        if (!due && r->last_action == o->action && r->last_state == o->state &&
            r->last_next == o->next && r->settle_until > now)
            due = r->settle_until;
        if (!wait && due)
            requeue(u, due - now);
        if (wait || due) {
            held |= start;
            continue;
        }
        act(u, r, x, o, c);
    }
}

int gpuop_ctl_upgrade_track(struct ctl_upgrader *u, const struct gpuop_policy *p,
                            const struct gpuop_caches_view *v, const char *ns,
                            struct gpuop_events *ev, const char *policy, const char *uid)
{
    plan_release(u);
    u->stopped = false;
    u->tracks++;
    snprintf(u->policy, sizeof(u->policy), "%s", policy ? policy : "");
    snprintf(u->ns, sizeof(u->ns), "%s", ns ? ns : "");
    snprintf(u->uid, sizeof(u->uid), "%s", uid ? uid : "");
    u->pol = p;
    u->caches = v->from;
    int d = gpuop_operand_by_key("driver"), val = gpuop_operand_by_key("validator");
    if (d < 0 || !v->nnodes) {
        forget_unseen(u);
        return 0;
    }
    set_version(u, p, d);
    uint64_t now = gpuop_clock_ms();
    in_globals(u, p, d, val);
    if (!(u->nodes = calloc(v->nnodes, sizeof(*u->nodes))))
        return GPUOP_ENOMEM;
    int rc = nodes_in(u, p, v, d, val);
    drivers_elsewhere(u, p, v->nnodes, d);
    nodes_known(u, p, v, d, now);
    u->in.nodes = u->nodes;
    u->in.n = v->nnodes;
    failures_in(u, v);
    if (rc == 0)
        rc = gpuop_upgrade_plan(&u->in, &u->plan);
    if (rc < 0) {
        plan_release(u);
        return rc;
    }
    u->have_plan = true;
    /* quiet (no node in progress, failed or to start): nothing to do */
    if (gpuop_upgrade_plan_quiet(&u->plan)) {
        forget_unseen(u);
        return 0;
    }
    revs_list(u);
    /* judged by generation only: act once the revisions are known; and
       nothing against a driver template the caches do not hold yet */
    if (u->revs_missing || u->hold) {
        forget_unseen(u);
        return 0;
    }
    act_all(u, now, &(struct act_ctx){.ns = ns, .ev = ev, .uid = uid});
    forget_unseen(u);
    if (u->plan.wake > now_s())
        requeue(u, (uint64_t)(u->plan.wake - now_s()) * 1000);
    return 0;
}

const struct gpuop_upgrade_plan *gpuop_ctl_upgrade_plan(const struct ctl_upgrader *u,
                                                        const struct gpuop_upgrade_in **in)
{
    *in = u->have_plan ? &u->in : NULL;
    return u->have_plan ? &u->plan : NULL;
}

void gpuop_ctl_upgrade_release(struct ctl_upgrader *u)
{
    plan_release(u);
}

uint64_t gpuop_ctl_upgrade_actions(const struct ctl_upgrader *u)
{
    return u->actions;
}

void gpuop_ctl_upgrade_hold(struct ctl_upgrader *u, bool on)
{
    u->hold = on;
}

int gpuop_ctl_upgrade_new(uv_loop_t *loop, struct gpuop_kube *kube, struct gpuop_queue *queue,
                          struct ctl_upgrader **out)
{
    struct ctl_upgrader *u = calloc(1, sizeof(*u));
    if (!u)
        return GPUOP_ENOMEM;
    u->loop = loop;
    u->kube = kube;
    u->queue = queue;
    gpuop_map_init(&u->recs);
    gpuop_map_init(&u->failed);
    *out = u;
    return 0;
}

void gpuop_ctl_upgrade_stop(struct ctl_upgrader *u)
{
    u->stopped = true;
    while (u->reqs)
        gpuop_kube_cancel(u->reqs->req); /* its done callback unlinks it */
    if (u->rev_req)
        gpuop_kube_cancel(u->rev_req); /* revs_done clears it */
    u->nrevs = 0;
    u->tracks++;
    forget_unseen(u);
    plan_release(u);
}

void gpuop_ctl_upgrade_free(struct ctl_upgrader *u)
{
    if (!u)
        return;
    gpuop_ctl_upgrade_stop(u);
    gpuop_map_free(&u->recs, NULL);
    gpuop_map_free(&u->failed, free);
    free(u);
}
