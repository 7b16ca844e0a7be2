/*
 * caches.c - the informers gpuop watches, their converters into the
 * compact model structs, and "no difference" filters so heartbeats and
 * unrelated status churn do not wake the controller: a GpuPolicy whose
 * status alone changed (gpuop's own status write coming back through the
 * watch) wakes nobody, or a failing reconcile would feed itself past its
 * backoff.
 *
 * The Warning Events of DaemonSets are kept as "<reason>: <message>" with
 * the DaemonSet's name and the Event's time; the view lends each DaemonSet
 * the newest one while it has fewer pods scheduled than desired.
 *
 * Nodes, pods, DaemonSets and Events keep their cached item when an
 * update is the same (keep_same), so a pointer into the caches stays
 * valid until a change names its key (the DaemonSet controller repeats
 * a Warning within a second with only its count moved: no change to
 * deliver); while asked
 * (gpuop_caches_index_pods) the pods are also indexed by node
 * (nodepods.c), and on_node names each node whose
 * object or pods changed: what the controller's per-node update of the
 * findings reads. The nodes are kept in name order (nodelist.c), which the
 * view lends.
 *
 * The DRA ResourceSlices' informer exists only while the slice watch is
 * asked for (gpuop_caches_watch_slices). It streams (informer.h: no
 * store): each slice goes into the slice table (slicetab_int.h, 12 bytes
 * a slice), which moves its node's fold (slicefold_int.h) in the cached
 * Node itself; a Node's update carries the fold over to its replacement,
 * a new Node gets it from the table, a deleted one leaves its slices
 * there. A stopped slice informer closes on its own while the others
 * run; the caches are freed once every informer made has closed.
 *
 * The device plugin's sharing ConfigMap is watched the same way, made when
 * asked (gpuop_caches_watch_plugin_cm) with its name in the field
 * selector, and replaced when the name changes: one object at most, kept
 * as what sharing.h reads of it. Its first list, which may find nothing,
 * is a change too (the ConfigMap is then known absent).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "gpuop/clock.h"
#include "gpuop/hash.h"
#include "gpuop/log.h"
#include "gpuop/names.h"
#include "gpuop/pool.h"
#include "gpuop/caches.h"

#include "nodelist_int.h"
#include "nodepods_int.h"
#include "ospools_int.h"
#include "slicefold_int.h"
#include "slicetab_int.h"

struct gpuop_caches {
    struct gpuop_informer *inf[GPUOP_CACHES_KINDS];
    struct gpuop_caches_config cfg;
    struct gpuop_ospools pools;  /* the GPU nodes' OS pools, counted (ospools.c) */
    struct gpuop_nodelist nodes; /* the cached nodes in name order (nodelist.c) */
    struct gpuop_nodepods pods_by_node;
    struct gpuop_slicetab slices; /* the ResourceSlices, while watched */
    uv_loop_t *loop;              /* borrowed: the slice informer is made on it when asked */
    struct gpuop_kube *kube;      /* borrowed: ... with this client */
    bool indexed;                 /* pods_by_node is kept */
    bool index_whole;             /* and holds every pod with a node (no overflow since built) */
    char *ns;
    int nsynced;
    int open;           /* informers made and not yet closed (a stopped slice one included) */
    bool closing;       /* gpuop_caches_close was called */
    bool slices_synced; /* the slice informer (inf[GPUOP_CACHES_SLICE]) has listed */
    bool claims_synced; /* the claim informer (inf[GPUOP_CACHES_CLAIM]) has listed */
    int slices_error;   /* its last list failed with this code; 0 */
    bool cm_synced;     /* the ConfigMap's informer (inf[GPUOP_CACHES_PLUGIN_CM]) has listed */
    char cm_name[GPUOP_SHARING_CM_NAME_MAX + 1];      /* the ConfigMap it watches ("" none) */
    char cm_selector[GPUOP_SHARING_CM_NAME_MAX + 16]; /* its field selector */
    void (*close_cb)(void *);
    void *close_arg;
};

/* One trampoline argument per informer, so events know their kind. */
struct tramp {
    struct gpuop_caches *caches;
    enum gpuop_caches_kind kind;
};

uint64_t gpuop_caches_meta_hash(json_t *obj)
{
    static const char *const keys[] = {"labels", "annotations", "ownerReferences"};
    json_t *md = json_object_get(obj, "metadata");
    uint64_t h = GPUOP_HASH_INIT;
    for (size_t i = 0; i < 3; i++) {
        h = gpuop_hash_bytes(h, keys[i], strlen(keys[i]));
        h = gpuop_hash_json_bytes(h, json_object_get(md, keys[i]));
    }
    return h;
}

/* ---- converters ---- */

/* Nodes, pods and DaemonSets are keyed by name (cluster-scoped, or one
 * namespace), so the cached structs borrow the store's key as their name. */
static void *node_convert(json_t *obj, const char *key, struct gpuop_err *err)
{
    return gpuop_node_new(obj, key, err); /* one pool block */
}

static void node_free(void *n)
{
    gpuop_node_free(n);
}

static bool node_same(const void *a, const void *b)
{
    return gpuop_node_equal(a, b);
}

static void *pod_convert(json_t *obj, const char *key, struct gpuop_err *err)
{
    return gpuop_pod_new(obj, key, err); /* one pool block */
}

static void pod_free(void *p)
{
    gpuop_pod_free(p);
}

static bool pod_same(const void *a, const void *b)
{
    return gpuop_pod_equal(a, b);
}

static void *ds_convert(json_t *obj, const char *key, struct gpuop_err *err)
{
    (void)key; /* six of them: not worth borrowing */
    struct gpuop_caches_ds *d = calloc(1, sizeof(*d));
    if (!d)
        return NULL;
    if (gpuop_ds_from_json(obj, &d->ds, err) < 0) {
        gpuop_ds_free(&d->ds);
        free(d);
        return NULL;
    }
    d->meta_hash = gpuop_caches_meta_hash(obj);
    return d;
}

static void ds_free(void *p)
{
    struct gpuop_caches_ds *d = p;
    gpuop_ds_free(&d->ds);
    free(d);
}

static bool ds_same(const void *pa, const void *pb)
{
    const struct gpuop_caches_ds *a = pa, *b = pb;
    return a->meta_hash == b->meta_hash && gpuop_ds_equal(&a->ds, &b->ds);
}

/* The fields of a GpuPolicy the controller reads: its spec, and of its
 * metadata what identifies it and decides which policy is active. Its
 * status, resourceVersion and managedFields are left out. */
static bool policy_same(const void *pa, const void *pb)
{
    static const char *const md_keys[] = {"name", "uid", "generation", "creationTimestamp",
                                          "deletionTimestamp"};
    json_t *a = (json_t *)pa, *b = (json_t *)pb;
    if (!json_equal(json_object_get(a, "spec"), json_object_get(b, "spec")))
        return false;
    json_t *ma = json_object_get(a, "metadata"), *mb = json_object_get(b, "metadata");
    for (size_t i = 0; i < sizeof(md_keys) / sizeof(md_keys[0]); i++) {
        json_t *x = json_object_get(ma, md_keys[i]), *y = json_object_get(mb, md_keys[i]);
        if ((x || y) && !json_equal(x, y))
            return false;
    }
    return true;
}

/* ---- the operands' ServiceAccount, DaemonSets' Warning Events ---- */

static void *sa_convert(json_t *obj, const char *key, struct gpuop_err *err)
{
    (void)obj;
    (void)key;
    (void)err;
    return malloc(1); /* only its presence matters */
}

static bool sa_same(const void *a, const void *b)
{
    (void)a;
    (void)b;
    return true;
}

struct cached_event {
    long long t; /* lastTimestamp, else eventTime, else firstTimestamp */
    char *ds;    /* involvedObject.name; the text follows it in the block */
    char *text;  /* "<reason>: <message>", at most GPUOP_CACHES_EVENT_TEXT_MAX bytes */
};

static void *event_convert(json_t *obj, const char *key, struct gpuop_err *err)
{
    (void)key;
    const char *ds =
        json_string_value(json_object_get(json_object_get(obj, "involvedObject"), "name"));
    const char *reason = json_string_value(json_object_get(obj, "reason"));
    const char *msg = json_string_value(json_object_get(obj, "message"));
    static const char *const times[] = {"lastTimestamp", "eventTime", "firstTimestamp"};
    long long t = -1;
    for (size_t i = 0; t < 0 && i < sizeof(times) / sizeof(times[0]); i++) {
        const char *ts = json_string_value(json_object_get(obj, times[i]));
        t = ts ? gpuop_parse_time(ts) : -1; /* eventTime has microseconds: parsed to the second */
    }
    if (!ds) {
        gpuop_err_set(err, GPUOP_EINVAL, "involvedObject.name", "Event without an object");
        return NULL;
    }
    char text[GPUOP_CACHES_EVENT_TEXT_MAX];
    snprintf(text, sizeof(text), "%s: %s", reason ? reason : "Warning", msg ? msg : "");
    size_t nds = strlen(ds) + 1, ntext = strlen(text) + 1;
    struct cached_event *e = malloc(sizeof(*e) + nds + ntext);
    if (!e) {
        gpuop_err_set(err, GPUOP_ENOMEM, NULL, "out of memory reading an Event");
        return NULL;
    }
    e->t = t;
    e->ds = (char *)(e + 1);
    e->text = e->ds + nds;
    memcpy(e->ds, ds, nds);
    memcpy(e->text, text, ntext);
    return e;
}

static bool event_same(const void *pa, const void *pb)
{
    const struct cached_event *a = pa, *b = pb;
    return a->t == b->t && strcmp(a->ds, b->ds) == 0 && strcmp(a->text, b->text) == 0;
}

/* The newest Warning Event text of DaemonSet ds (borrowed), or NULL. */
static const char *newest_warning(const struct gpuop_caches *caches, const char *ds)
{
    const struct cached_event *best = NULL;
    size_t it = 0;
    void *v;
    while (gpuop_informer_next(caches->inf[GPUOP_CACHES_EVENT], &it, NULL, &v)) {
        const struct cached_event *e = v;
        if (strcmp(e->ds, ds) == 0 && (!best || e->t > best->t))
            best = e;
    }
    return best ? best->text : NULL;
}

/* ---- DRA ResourceSlices ---- */

static void *slice_convert(json_t *obj, const char *key, struct gpuop_err *err)
{
    (void)key;
    return gpuop_slice_new(obj, err); /* one pool block */
}

static void slice_free(void *p)
{
    gpuop_slice_free(p);
}

/* ---- DRA ResourceClaims ---- */

static void *claim_convert(json_t *obj, const char *key, struct gpuop_err *err)
{
    return gpuop_claim_new(obj, key, err); /* one pool block, or the shared none */
}

static void claim_free(void *p)
{
    gpuop_claim_free(p);
}

static bool claim_same(const void *a, const void *b)
{
    return gpuop_claim_equal(a, b);
}

static struct gpuop_node *fold_node(const struct gpuop_caches *caches, const char *name);

/* n's claims recounted from every cached claim but skip (one on its way
 * out, or NULL). */
static void refold_claims(const struct gpuop_caches *caches, struct gpuop_node *n,
                          const struct gpuop_claim *skip)
{
    n->dra.claims = 0;
    const struct gpuop_claim *c;
    size_t it = 0;
    while (gpuop_caches_next_claim(caches, &it, &c))
        if (c != skip && strcmp(c->node, n->name) == 0)
            gpuop_slicefold_claim_add(&n->dra, c);
}

/* A claim came (old NULL), changed or went (c NULL): the fold of the
 * node(s) it is allocated on follows (the store holds c already, and old
 * until a delete has been told), and they are named. */
static void claim_moved(struct gpuop_caches *caches, const struct gpuop_claim *old,
                        const struct gpuop_claim *c)
{
    old = old == &GPUOP_CLAIM_NONE ? NULL : old;
    c = c == &GPUOP_CLAIM_NONE ? NULL : c;
    bool counted = false; /* a recount of old's node took c in */
    struct gpuop_node *n = old ? fold_node(caches, old->node) : NULL;
    if (n && !gpuop_slicefold_claim_del(&n->dra, old)) {
        refold_claims(caches, n, c ? NULL : old);
        counted = c && strcmp(c->node, old->node) == 0;
    }
    n = c && !counted ? fold_node(caches, c->node) : NULL;
    if (n)
        gpuop_slicefold_claim_add(&n->dra, c);
    if (!caches->cfg.on_node)
        return;
    const char *was = old ? old->node : NULL, *now = c ? c->node : NULL;
    if (was)
        caches->cfg.on_node(caches->cfg.arg, was);
    if (now && !(was && strcmp(was, now) == 0))
        caches->cfg.on_node(caches->cfg.arg, now);
}

/* The cached Node of that name, to fold into: the caches own it. */
static struct gpuop_node *fold_node(const struct gpuop_caches *caches, const char *name)
{
    return gpuop_informer_get(caches->inf[GPUOP_CACHES_NODE], name);
}

/* The sharing ConfigMap (sharing.h): its key is its name (one namespace). */
static void *cm_convert(json_t *obj, const char *key, struct gpuop_err *err)
{
    struct gpuop_sharing_cm *cm = malloc(sizeof(*cm));
    if (!cm)
        return NULL;
    if (gpuop_sharing_cm_read(obj, key, cm) < 0) {
        gpuop_err_set(err, GPUOP_EINVAL, NULL, "a ConfigMap that is not an object");
        free(cm);
        return NULL;
    }
    return cm;
}

static bool cm_same(const void *a, const void *b)
{
    /* read whole (memset first), up to the caches' stamps */
    return memcmp(a, b, GPUOP_SHARING_CM_READ_BYTES) == 0;
}

/* A key whose config does not read is said once per change of it; cm
 * (the store's item, ours) stamps when each key's config came
 * (sharing.h: the finding SharingConfigNotApplied counts its grace from
 * there). */
static void cm_moved(struct gpuop_caches *caches, const struct gpuop_sharing_cm *old,
                     const struct gpuop_sharing_cm *cm)
{
    char obj[GPUOP_SHARING_CM_NAME_MAX + 64];
    if (cm)
        gpuop_sharing_cm_stamp((struct gpuop_sharing_cm *)cm, old, gpuop_clock_wall());
    if (!cm || !cm->problem[0] || (old && !strcmp(old->problem, cm->problem)))
        return;
    snprintf(obj, sizeof(obj), "configmap/%s/%s", caches->ns, cm->name);
    gpuop_warn(obj,
               "the device plugin's config %s: no node is judged by that key's sharing "
               "settings; fix its YAML (the device plugin cannot read it either)",
               cm->problem);
}

/* The slice table's view of the Nodes (struct gpuop_slicetab_ops). */
static struct gpuop_node_dra *tab_fold(void *arg, const char *name)
{
    struct gpuop_node *n = fold_node(arg, name);
    return n ? &n->dra : NULL;
}

static struct gpuop_node_dra *tab_fold_h32(void *arg, uint32_t h, const char *skip,
                                           const char **name)
{
    const struct gpuop_caches *caches = arg;
    struct gpuop_node *n = gpuop_informer_get_h32(caches->inf[GPUOP_CACHES_NODE], h, skip, name);
    return n ? &n->dra : NULL;
}

static void tab_moved(void *arg, const char *name)
{
    const struct gpuop_caches *caches = arg;
    if (caches->cfg.on_node)
        caches->cfg.on_node(caches->cfg.arg, name);
}

/* A slice came or changed (PUT) or went (DEL): into the table, which
 * moves its node's fold and names the node. A refused one (PUT, NULL)
 * leaves what the table had. */
static void on_slice(void *arg, enum gpuop_informer_op op, const char *key, const void *item)
{
    struct tramp *t = arg;
    struct gpuop_caches *caches = t->caches;
    const struct gpuop_slice *sl = item;
    int changed;
    if (op == GPUOP_INFORMER_DEL)
        changed = gpuop_slicetab_del(&caches->slices, key);
    else
        changed = sl ? gpuop_slicetab_put(&caches->slices, key, sl->node, sl->devices) : 0;
    if (changed > 0 && caches->cfg.on_change)
        caches->cfg.on_change(caches->cfg.arg, GPUOP_CACHES_SLICE, key,
                              op == GPUOP_INFORMER_DEL ? GPUOP_CACHES_GONE : 0);
}

/* A slice list begins (the table sized for a slice a GPU node, once) or
 * ends (what it did not hold leaves the folds). */
static void on_slice_list(void *arg, enum gpuop_informer_list what)
{
    struct tramp *t = arg;
    struct gpuop_caches *caches = t->caches;
    if (what == GPUOP_INFORMER_LIST_END) {
        /* gone while the watch was away: one change for them all (the
         * table keeps no names) */
        if (gpuop_slicetab_list_end(&caches->slices) && caches->cfg.on_change)
            caches->cfg.on_change(caches->cfg.arg, GPUOP_CACHES_SLICE, "", 0);
        return;
    }
    if (!caches->slices.cap) {
        size_t gpus = 0, it = 0;
        void *v;
        while (gpuop_informer_next(caches->inf[GPUOP_CACHES_NODE], &it, NULL, &v))
            gpus += ((const struct gpuop_node *)v)->gpu;
        (void)gpuop_slicetab_reserve(&caches->slices, gpus); /* ENOMEM: grows as it goes */
    }
    gpuop_slicetab_list_begin(&caches->slices);
}

/* Every cached node's watched set to on (the slices listed, or the watch
 * stopped: then their folds emptied); each node that changed is named. */
static void slices_mark(struct gpuop_caches *caches, bool on)
{
    size_t it = 0;
    const char *key;
    void *v;
    while (gpuop_informer_next(caches->inf[GPUOP_CACHES_NODE], &it, &key, &v)) {
        struct gpuop_node *n = v;
        struct gpuop_node_dra was = n->dra;
        if (on)
            n->dra.watched = 1;
        else
            n->dra = (struct gpuop_node_dra){0};
        if (memcmp(&was, &n->dra, sizeof(was)) != 0 && caches->cfg.on_node)
            caches->cfg.on_node(caches->cfg.arg, key);
    }
}

/* A Node came or was replaced: its fold, which no Node object holds,
 * comes from the one it replaces, or from the slices; its sharing labels'
 * time from the one it replaces where they are the same, else now. */
static void node_fold(struct gpuop_caches *caches, const struct gpuop_node *old,
                      struct gpuop_node *n)
{
    n->sharing_since =
        old && gpuop_node_sharing_equal(old, n) ? old->sharing_since : (uint32_t)gpuop_clock_wall();
    if (old) {
        n->dra = old->dra;
        return;
    }
    if (caches->inf[GPUOP_CACHES_SLICE]) {
        n->dra.watched = caches->slices_synced;
        gpuop_slicetab_node_added(&caches->slices, n->name);
    }
    if (caches->inf[GPUOP_CACHES_CLAIM])
        refold_claims(caches, n, NULL);
}

/* ---- events ---- */

/* Whether a change of kind (old_item or new_item NULL: an add or a
 * delete) is GPUOP_CACHES_SPEC: for a DaemonSet only its
 * presence, generation, applied metadata and deletion (not its status
 * counters);
 * for policies, nodes and the ServiceAccount every change the informer
 * reports (their same ops filter what nobody reads); pods and Events
 * never. */
static bool spec_change(enum gpuop_caches_kind kind, const void *old_item, const void *new_item)
{
    switch (kind) {
    case GPUOP_CACHES_POLICY:
    case GPUOP_CACHES_NODE:
    case GPUOP_CACHES_SA:
        return true;
    case GPUOP_CACHES_DS: {
        const struct gpuop_caches_ds *a = old_item, *b = new_item;
        return !a || !b || a->ds.generation != b->ds.generation || a->meta_hash != b->meta_hash ||
               a->ds.deleting != b->ds.deleting;
    }
    default:
        return false;
    }
}

/* A pod changed: the index follows, and its node(s) are named. */
static void pod_moved(struct gpuop_caches *caches, const struct gpuop_pod *old,
                      const struct gpuop_pod *p)
{
    if (caches->indexed) {
        if (old)
            gpuop_nodepods_del(&caches->pods_by_node, old);
        if (p && gpuop_nodepods_add(&caches->pods_by_node, p) < 0)
            caches->index_whole = false;
    }
    if (!caches->cfg.on_node)
        return;
    if (old && old->node)
        caches->cfg.on_node(caches->cfg.arg, old->node);
    if (p && p->node && !(old && old->node && strcmp(old->node, p->node) == 0))
        caches->cfg.on_node(caches->cfg.arg, p->node);
}

static void on_event(void *arg, const char *key, const void *old_item, const void *new_item)
{
    struct tramp *t = arg;
    unsigned what = new_item ? 0 : GPUOP_CACHES_GONE;
    if (spec_change(t->kind, old_item, new_item))
        what |= GPUOP_CACHES_SPEC | (t->kind != GPUOP_CACHES_NODE ? GPUOP_CACHES_RENDER : 0);
    if (t->kind == GPUOP_CACHES_NODE && new_item) /* ours: the store's item */
        node_fold(t->caches, old_item, (struct gpuop_node *)new_item);
    if (t->kind == GPUOP_CACHES_NODE && !new_item && t->caches->inf[GPUOP_CACHES_SLICE])
        gpuop_slicetab_node_deleted(&t->caches->slices, key); /* still in the store */
    if (t->kind == GPUOP_CACHES_CLAIM)
        claim_moved(t->caches, old_item, new_item);
    if (t->kind == GPUOP_CACHES_PLUGIN_CM)
        cm_moved(t->caches, old_item, new_item);
    if (t->kind == GPUOP_CACHES_NODE && gpuop_ospools_move(&t->caches->pools, old_item, new_item))
        what |= GPUOP_CACHES_RENDER;
    if (t->kind == GPUOP_CACHES_POD)
        pod_moved(t->caches, old_item, new_item);
    if (t->kind == GPUOP_CACHES_NODE) {
        if (new_item)
            (void)gpuop_nodelist_put(&t->caches->nodes, new_item); /* ENOMEM: not whole */
        else
            gpuop_nodelist_del(&t->caches->nodes, key);
    }
    if (t->kind == GPUOP_CACHES_NODE && t->caches->cfg.on_node)
        t->caches->cfg.on_node(t->caches->cfg.arg, key);
    if (t->caches->cfg.on_change)
        t->caches->cfg.on_change(t->caches->cfg.arg, t->kind, key, what);
}

static void on_list_error(void *arg, int rc)
{
    struct tramp *t = arg;
    if (t->kind != GPUOP_CACHES_SLICE)
        return;
    t->caches->slices_error = rc;
    if (t->caches->cfg.on_slices)
        t->caches->cfg.on_slices(t->caches->cfg.arg);
}

static void on_synced(void *arg)
{
    struct tramp *t = arg;
    if (t->kind == GPUOP_CACHES_SLICE) {
        t->caches->slices_synced = true;
        t->caches->slices_error = 0;
        slices_mark(t->caches, true);
        if (t->caches->cfg.on_slices)
            t->caches->cfg.on_slices(t->caches->cfg.arg);
    }
    if (t->kind == GPUOP_CACHES_CLAIM)
        t->caches->claims_synced = true;
    if (t->kind == GPUOP_CACHES_PLUGIN_CM) { /* known now, there or absent */
        t->caches->cm_synced = true;
        if (t->caches->cfg.on_change)
            t->caches->cfg.on_change(t->caches->cfg.arg, t->kind, t->caches->cm_name,
                                     GPUOP_CACHES_SPEC);
    }
    if (t->kind >= GPUOP_CACHES_MAIN)
        return;
    if (++t->caches->nsynced == GPUOP_CACHES_MAIN && t->caches->cfg.on_synced)
        t->caches->cfg.on_synced(t->caches->cfg.arg);
}

/* ---- lifecycle ---- */

/* The operands' objects gpuop made (DaemonSets, their pods). */
#define OWN_SELECTOR GPUOP_LABEL_MANAGED_BY "=" GPUOP_MANAGER

/* The six informers (informer.h), one a kind: what each lists and
 * watches, and how it keeps its items. informer_config adds what is known
 * at run time: the operator namespace of all but policies and nodes, the
 * policy's digested members, the pods' unread ones, the callbacks. */
static const struct gpuop_informer_config INFORMERS[GPUOP_CACHES_KINDS] = {
    [GPUOP_CACHES_POLICY] = {.name = "gpupolicies",
                             .res = {.group_version = GPUOP_API_VERSION, .resource = GPUOP_PLURAL},
                             .same = policy_same},
    [GPUOP_CACHES_NODE] = {.name = "nodes",
                           .res = {.group_version = "v1", .resource = "nodes"},
                           .convert = node_convert,
                           .scratch = true,
                           .free_item = node_free,
                           .same = node_same,
                           .keep_same = true},
    [GPUOP_CACHES_DS] = {.name = "daemonsets",
                         .res = {.group_version = "apps/v1", .resource = "daemonsets"},
                         .label_selector = OWN_SELECTOR,
                         .convert = ds_convert,
                         .scratch = true,
                         .free_item = ds_free,
                         .same = ds_same,
                         .keep_same = true},
    [GPUOP_CACHES_POD] = {.name = "pods",
                          .res = {.group_version = "v1", .resource = "pods"},
                          .label_selector = OWN_SELECTOR,
                          .convert = pod_convert,
                          .scratch = true,
                          .free_item = pod_free,
                          .same = pod_same,
                          .keep_same = true},
    [GPUOP_CACHES_SA] = {.name = "serviceaccounts",
                         .res = {.group_version = "v1", .resource = "serviceaccounts"},
                         .field_selector = "metadata.name=" GPUOP_OPERAND_SA,
                         .convert = sa_convert,
                         .scratch = true,
                         .free_item = free,
                         .same = sa_same},
    [GPUOP_CACHES_EVENT] = {.name = "events",
                            .res = {.group_version = "v1", .resource = "events"},
                            .field_selector = "involvedObject.kind=DaemonSet,type=Warning",
                            .convert = event_convert,
                            .scratch = true,
                            .free_item = free,
                            .same = event_same,
                            .keep_same = true}, /* a repeat moves only its count */
    [GPUOP_CACHES_SLICE] = {.name = "resourceslices",
                            .res = {.group_version = GPUOP_SLICE_API,
                                    .resource = GPUOP_SLICE_RESOURCE},
                            .field_selector = "spec.driver=" GPUOP_DRA_GPU_DRIVER,
                            .max_line = GPUOP_SLICE_MAX_BYTES,
                            .convert = slice_convert,
                            .scratch = true,
                            .free_item = slice_free,
                            .stream = true}, /* kept in the slice table */
    [GPUOP_CACHES_CLAIM] = {.name = "resourceclaims",
                            .res = {.group_version = GPUOP_SLICE_API,
                                    .resource = GPUOP_CLAIM_RESOURCE},
                            .max_line = GPUOP_CLAIM_MAX_BYTES,
                            .convert = claim_convert,
                            .scratch = true,
                            .free_item = claim_free,
                            .same = claim_same,
                            .keep_same = true},
    /* not scratch: each key's config is parsed (a YAML document of up to
       GPUOP_SHARING_CONF_BYTES) while it is converted */
    [GPUOP_CACHES_PLUGIN_CM] = {.name = "configmaps",
                                .res = {.group_version = "v1", .resource = "configmaps"},
                                .max_line = GPUOP_SHARING_CM_MAX_BYTES,
                                .convert = cm_convert,
                                .free_item = free,
                                .same = cm_same,
                                .keep_same = true}, /* its stamps stay */
};

struct caches_alloc {
    struct gpuop_caches caches;
    struct tramp tramps[GPUOP_CACHES_KINDS];
};

/* The informer of kind k of a's caches into *ic: INFORMERS' row and what
 * is known at run time. */
static void informer_config(struct caches_alloc *a, enum gpuop_caches_kind k,
                            struct gpuop_informer_config *ic)
{
    struct gpuop_caches *caches = &a->caches;
    *ic = INFORMERS[k];
    if (k != GPUOP_CACHES_POLICY && k != GPUOP_CACHES_NODE && k != GPUOP_CACHES_SLICE &&
        k != GPUOP_CACHES_CLAIM) /* slices are cluster-scoped, claims read in every namespace */
        ic->res.ns = caches->ns;
    if (k == GPUOP_CACHES_SLICE)
        ic->unread = gpuop_slice_unread();
    if (k == GPUOP_CACHES_CLAIM)
        ic->unread = gpuop_claim_unread();
    if (k == GPUOP_CACHES_PLUGIN_CM)
        ic->field_selector = caches->cm_selector;
    if (k == GPUOP_CACHES_POLICY)
        ic->digested = gpuop_caches_policy_digested();
    if (k == GPUOP_CACHES_POD)
        ic->unread = gpuop_pod_unread();
    a->tramps[k] = (struct tramp){caches, k};
    ic->on_event = on_event;
    if (k == GPUOP_CACHES_SLICE) {
        ic->on_event = NULL;
        ic->on_object = on_slice;
        ic->on_list = on_slice_list;
    }
    ic->on_synced = on_synced;
    ic->on_list_error = on_list_error;
    ic->arg = &a->tramps[k];
}

int gpuop_caches_new(uv_loop_t *loop, struct gpuop_kube *kube,
                     const struct gpuop_caches_config *cfg, struct gpuop_caches **out)
{
    struct caches_alloc *a = calloc(1, sizeof(*a));
    if (!a)
        return GPUOP_ENOMEM;
    struct gpuop_caches *caches = &a->caches;
    caches->cfg = *cfg;
    caches->ns = strdup(cfg->namespace);
    if (!caches->ns) {
        free(a);
        return GPUOP_ENOMEM;
    }
    caches->cfg.namespace = caches->ns;
    gpuop_nodelist_init(&caches->nodes);
    gpuop_ospools_init(&caches->pools);
    gpuop_nodepods_init(&caches->pods_by_node);
    gpuop_slicetab_init(&caches->slices, &(struct gpuop_slicetab_ops){.fold = tab_fold,
                                                                      .fold_h32 = tab_fold_h32,
                                                                      .moved = tab_moved,
                                                                      .arg = caches});

    int rc = 0;
    for (int k = 0; k < GPUOP_CACHES_KINDS; k++) {
        struct gpuop_informer_config ic;
        if (k >= GPUOP_CACHES_SLICE)
            continue; /* made when asked: gpuop_caches_watch_slices, _plugin_cm */
        informer_config(a, (enum gpuop_caches_kind)k, &ic);
        if (rc == 0)
            rc = gpuop_informer_new(loop, kube, &ic, &caches->inf[k]);
        if (rc < 0) {
            /* Informers never started: closing them frees synchronously
             * enough once the loop runs; count them for the close cb. */
            for (int j = 0; j < k; j++)
                if (caches->inf[j])
                    gpuop_informer_close(caches->inf[j], NULL, NULL);
            free(caches->ns);
            free(a);
            return rc;
        }
        caches->open++;
    }
    caches->loop = loop;
    caches->kube = kube;
    *out = caches;
    return 0;
}

int gpuop_caches_start(struct gpuop_caches *caches)
{
    for (int k = 0; k < GPUOP_CACHES_KINDS; k++) {
        if (!caches->inf[k])
            continue; /* the slices' and the ConfigMap's: started when asked */
        int rc = gpuop_informer_start(caches->inf[k]);
        if (rc < 0)
            return rc;
    }
    return 0;
}

bool gpuop_caches_synced(const struct gpuop_caches *caches)
{
    return caches->nsynced == GPUOP_CACHES_MAIN;
}

bool gpuop_caches_sa_present(const struct gpuop_caches *caches)
{
    return gpuop_informer_get(caches->inf[GPUOP_CACHES_SA], GPUOP_OPERAND_SA) != NULL;
}

const char *const *gpuop_caches_policy_digested(void)
{
    static const char *const digested[] = {"status.nodes", NULL};
    return digested;
}

json_t *gpuop_caches_policy(const struct gpuop_caches *caches, const char *name)
{
    return gpuop_informer_get(caches->inf[GPUOP_CACHES_POLICY], name);
}

int gpuop_caches_next_policy(const struct gpuop_caches *caches, size_t *iter, const char **name,
                             json_t **obj)
{
    return gpuop_informer_next(caches->inf[GPUOP_CACHES_POLICY], iter, name, (void **)obj);
}

const char *gpuop_caches_active(const struct gpuop_caches *caches)
{
    const char *best = NULL, *best_ts = NULL, *key;
    json_t *v;
    size_t it = 0;
    while (gpuop_caches_next_policy(caches, &it, &key, &v)) {
        const char *ts =
            json_string_value(json_object_get(json_object_get(v, "metadata"), "creationTimestamp"));
        if (!ts)
            ts = "";
        /* RFC 3339 UTC timestamps of one format compare as strings. */
        int c = best ? strcmp(ts, best_ts) : -1;
        if (!best || c < 0 || (c == 0 && strcmp(key, best) < 0)) {
            best = key;
            best_ts = ts;
        }
    }
    return best;
}

const struct gpuop_caches_ds *gpuop_caches_ds(const struct gpuop_caches *caches, const char *name)
{
    return gpuop_informer_get(caches->inf[GPUOP_CACHES_DS],
                              name); /* one namespace: keyed by name */
}

int gpuop_caches_index_pods(struct gpuop_caches *caches, bool on)
{
    if (on == caches->indexed)
        return 0;
    gpuop_nodepods_free(&caches->pods_by_node);
    caches->indexed = caches->index_whole = on;
    if (!on)
        return 0;
    size_t it = 0;
    void *v;
    while (gpuop_informer_next(caches->inf[GPUOP_CACHES_POD], &it, NULL, &v))
        if (gpuop_nodepods_add(&caches->pods_by_node, v) < 0)
            caches->index_whole = false;
    return caches->index_whole ? 0 : GPUOP_ETOOBIG;
}

const struct gpuop_node *gpuop_caches_node(const struct gpuop_caches *caches, const char *name)
{
    return gpuop_informer_get(caches->inf[GPUOP_CACHES_NODE], name);
}

int gpuop_caches_node_pods(const struct gpuop_caches *caches, const char *node,
                           const struct gpuop_pod **buf, size_t max, size_t *n)
{
    *n = 0;
    if (!caches->indexed || !caches->index_whole)
        return GPUOP_EINVAL;
    return gpuop_nodepods_get(&caches->pods_by_node, node, buf, max, n);
}

static void **collect(const struct gpuop_informer *inf, size_t *n, size_t offset)
{
    size_t len = gpuop_informer_len(inf);
    void **arr = malloc((len ? len : 1) * sizeof(*arr));
    if (!arr)
        return NULL;
    size_t it = 0, k = 0;
    void *v;
    while (gpuop_informer_next(inf, &it, NULL, &v))
        arr[k++] = (char *)v + offset;
    *n = k;
    return arr;
}

int gpuop_caches_view(const struct gpuop_caches *caches, struct gpuop_caches_view *v)
{
    memset(v, 0, sizeof(*v));
    if (caches->nodes.whole) { /* lent, in name order */
        v->nodes = caches->nodes.a;
        v->nnodes = caches->nodes.n;
        v->nodes_lent = true;
    } else {
        v->nodes =
            (const struct gpuop_node **)collect(caches->inf[GPUOP_CACHES_NODE], &v->nnodes, 0);
    }
    v->ds = (const struct gpuop_ds **)collect(caches->inf[GPUOP_CACHES_DS], &v->nds,
                                              offsetof(struct gpuop_caches_ds, ds));
    v->from = caches;
    if ((!v->nodes && !v->nodes_lent) || !v->ds) {
        gpuop_caches_view_free(v);
        return GPUOP_ENOMEM;
    }
    for (size_t i = 0; i < v->nds; i++) {
        struct gpuop_ds *d = (struct gpuop_ds *)v->ds[i]; /* a cache item: ours to mark */
        d->controller_says = d->desired > d->current ? newest_warning(caches, d->name) : NULL;
    }
    return 0;
}

int gpuop_caches_view_pods(const struct gpuop_caches *caches, struct gpuop_caches_view *v)
{
    if (v->pods)
        return 0;
    v->pods = (const struct gpuop_pod **)collect(caches->inf[GPUOP_CACHES_POD], &v->npods, 0);
    return v->pods ? 0 : GPUOP_ENOMEM;
}

bool gpuop_caches_pods_indexed(const struct gpuop_caches *caches)
{
    return caches->indexed && caches->index_whole;
}

void gpuop_caches_view_free(struct gpuop_caches_view *v)
{
    if (!v->nodes_lent)
        free(v->nodes);
    free(v->ds);
    free(v->pods);
    memset(v, 0, sizeof(*v));
}

void gpuop_caches_stats(const struct gpuop_caches *caches, enum gpuop_caches_kind kind,
                        struct gpuop_informer_stats *out)
{
    if (caches->inf[kind])
        gpuop_informer_stats(caches->inf[kind], out);
    else
        memset(out, 0, sizeof(*out)); /* the slices', claims' or ConfigMap's while not watched */
}

static void informer_closed(void *arg)
{
    struct gpuop_caches *caches = arg;
    if (--caches->open > 0 || !caches->closing)
        return; /* another still open, or a stopped slice informer while the rest run */
    void (*cb)(void *) = caches->close_cb;
    void *carg = caches->close_arg;
    free(caches->ns);
    gpuop_nodelist_free(&caches->nodes);
    gpuop_ospools_free(&caches->pools);
    gpuop_nodepods_free(&caches->pods_by_node);
    gpuop_slicetab_free(&caches->slices);
    free((struct caches_alloc *)caches);
    gpuop_pool_trim(); /* the caches are gone: give their slabs back */
    if (cb)
        cb(carg);
}

void gpuop_caches_close(struct gpuop_caches *caches, void (*cb)(void *), void *arg)
{
    caches->close_cb = cb;
    caches->close_arg = arg;
    caches->closing = true;
    caches->cfg.on_change = NULL;
    caches->cfg.on_node = NULL;
    caches->cfg.on_synced = NULL;
    caches->cfg.on_slices = NULL;
    for (int k = 0; k < GPUOP_CACHES_KINDS; k++)
        if (caches->inf[k])
            gpuop_informer_close(caches->inf[k], informer_closed, caches);
}

/* Starts (on) or stops DRA informer k (the slices' or the claims'). */
static int watch_dra(struct gpuop_caches *caches, enum gpuop_caches_kind k, bool on)
{
    struct gpuop_informer **inf = &caches->inf[k];
    if (!on) {
        gpuop_informer_close(*inf, informer_closed, caches); /* frees its items */
        *inf = NULL;
        gpuop_info(INFORMERS[k].name, "not watched any more");
        return 0;
    }
    struct gpuop_informer_config ic;
    informer_config((struct caches_alloc *)caches, k, &ic);
    int rc = gpuop_informer_new(caches->loop, caches->kube, &ic, inf);
    if (rc < 0)
        return rc;
    caches->open++;
    rc = gpuop_informer_start(*inf);
    if (k == GPUOP_CACHES_SLICE)
        gpuop_info(INFORMERS[k].name, "watching the ResourceSlices of driver %s",
                   GPUOP_DRA_GPU_DRIVER);
    else
        gpuop_info(INFORMERS[k].name,
                   "watching the ResourceClaims (those holding a device of "
                   "driver %s kept)",
                   GPUOP_DRA_GPU_DRIVER);
    return rc;
}

int gpuop_caches_watch_slices(struct gpuop_caches *caches, bool on)
{
    struct gpuop_informer *const *inf = caches->inf;
    if (caches->closing || (!on && !inf[GPUOP_CACHES_SLICE] && !inf[GPUOP_CACHES_CLAIM]) ||
        (on && inf[GPUOP_CACHES_SLICE] && inf[GPUOP_CACHES_CLAIM]))
        return 0;
    if (!on) {
        if (inf[GPUOP_CACHES_SLICE])
            (void)watch_dra(caches, GPUOP_CACHES_SLICE, false);
        if (inf[GPUOP_CACHES_CLAIM])
            (void)watch_dra(caches, GPUOP_CACHES_CLAIM, false);
        caches->slices_synced = caches->claims_synced = false;
        caches->slices_error = 0;
        gpuop_slicetab_free(&caches->slices);
        slices_mark(caches, false);
        return 0;
    }
    int rc = inf[GPUOP_CACHES_SLICE] ? 0 : watch_dra(caches, GPUOP_CACHES_SLICE, true);
    if (rc == 0 && !inf[GPUOP_CACHES_CLAIM])
        rc = watch_dra(caches, GPUOP_CACHES_CLAIM, true);
    return rc;
}

bool gpuop_caches_slices_synced(const struct gpuop_caches *caches)
{
    return caches->slices_synced;
}

int gpuop_caches_slices_error(const struct gpuop_caches *caches)
{
    return caches->inf[GPUOP_CACHES_SLICE] ? caches->slices_error : 0;
}

bool gpuop_caches_claims_synced(const struct gpuop_caches *caches)
{
    return caches->claims_synced;
}

bool gpuop_caches_next_claim(const struct gpuop_caches *caches, size_t *iter,
                             const struct gpuop_claim **out)
{
    const struct gpuop_informer *inf = caches->inf[GPUOP_CACHES_CLAIM];
    void *v;
    while (inf && gpuop_informer_next(inf, iter, NULL, &v)) {
        if (v != &GPUOP_CLAIM_NONE) {
            *out = v;
            return true;
        }
    }
    return false;
}

int gpuop_caches_watch_plugin_cm(struct gpuop_caches *caches, const char *name)
{
    struct gpuop_informer **inf = &caches->inf[GPUOP_CACHES_PLUGIN_CM];
    if (!name)
        name = "";
    if (caches->closing || (!strcmp(name, caches->cm_name) && (*inf != NULL) == (*name != '\0')))
        return 0;
    char obj[GPUOP_SHARING_CM_NAME_MAX + 64];
    snprintf(obj, sizeof(obj), "configmap/%s/%s", caches->ns, caches->cm_name);
    if (*inf) {
        gpuop_informer_close(*inf, informer_closed, caches); /* frees its item */
        *inf = NULL;
        gpuop_info(obj, "not watched any more");
    }
    caches->cm_synced = false;
    snprintf(caches->cm_name, sizeof(caches->cm_name), "%s", name);
    if (!*name || strlen(name) > GPUOP_SHARING_CM_NAME_MAX) {
        caches->cm_name[0] = '\0';
        return 0;
    }
    snprintf(caches->cm_selector, sizeof(caches->cm_selector), "metadata.name=%s", name);
    struct gpuop_informer_config ic;
    informer_config((struct caches_alloc *)caches, GPUOP_CACHES_PLUGIN_CM, &ic);
    int rc = gpuop_informer_new(caches->loop, caches->kube, &ic, inf);
    if (rc < 0) {
        caches->cm_name[0] = '\0';
        return rc;
    }
    caches->open++;
    rc = gpuop_informer_start(*inf);
    snprintf(obj, sizeof(obj), "configmap/%s/%s", caches->ns, name);
    gpuop_info(obj, "watching the device plugin's sharing ConfigMap");
    return rc;
}

void gpuop_caches_plugin_cm(const struct gpuop_caches *caches, struct gpuop_sharing_cm *out)
{
    const struct gpuop_informer *inf = caches->inf[GPUOP_CACHES_PLUGIN_CM];
    const struct gpuop_sharing_cm *cm =
        inf && caches->cm_synced ? gpuop_informer_get(inf, caches->cm_name) : NULL;
    if (cm) {
        *out = *cm;
        return;
    }
    memset(out, 0, sizeof(*out));
    snprintf(out->name, sizeof(out->name), "%s", caches->cm_name);
    if (inf && caches->cm_synced)
        out->state = GPUOP_SHARING_CM_ABSENT;
}
