/*
 * caches.c - the four informers gpuop watches, their converters into the
 * compact model structs, and "no difference" filters so heartbeats and
 * unrelated status churn do not wake the controller.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "gpuop/hash.h"
#include "gpuop/jsonarena.h"
#include "gpuop/log.h"
#include "gpuop/names.h"
#include "gpuop/pool.h"
#include "gpuop/caches.h"

struct gpuop_caches {
    struct gpuop_informer *inf[GPUOP_CACHES_KINDS];
    struct gpuop_caches_config cfg;
    char *ns;
    int nsynced;
    int open;
    void (*close_cb)(void *);
    void *close_arg;
};

/* One trampoline argument per informer, so events know their kind. */
struct tramp {
    struct gpuop_caches *w;
    enum gpuop_caches_kind kind;
};

uint64_t gpuop_caches_meta_hash(json_t *obj)
{
    static const char *const keys[] = {"labels", "annotations", "ownerReferences"};
    json_t *md = json_object_get(obj, "metadata");
    uint64_t h = GPUOP_HASH_INIT;
    for (size_t i = 0; i < 3; i++) {
        char *s = json_dumps(json_object_get(md, keys[i]),
                             JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
        h = gpuop_hash_bytes(h, keys[i], strlen(keys[i]));
        if (s) {
            h = gpuop_hash_bytes(h, s, strlen(s));
            gpuop_json_free(s); /* may come from the JSON scratch arena */
        }
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

static bool policy_same(const void *pa, const void *pb)
{
    return json_equal((json_t *)pa, (json_t *)pb);
}

/* ---- events ---- */

static void on_event(void *arg, const char *key, const void *old_item, const void *new_item)
{
    struct tramp *t = arg;
    if (t->w->cfg.on_change)
        t->w->cfg.on_change(t->w->cfg.arg, t->kind, key);
}

static void on_synced(void *arg)
{
    struct tramp *t = arg;
    if (++t->w->nsynced == GPUOP_CACHES_KINDS && t->w->cfg.on_synced)
        t->w->cfg.on_synced(t->w->cfg.arg);
}

/* ---- lifecycle ---- */

struct world_alloc {
    struct gpuop_caches w;
    struct tramp tramps[GPUOP_CACHES_KINDS];
};

int gpuop_caches_new(uv_loop_t *loop, struct gpuop_kube *kube,
                     const struct gpuop_caches_config *cfg, struct gpuop_caches **out)
{
    struct world_alloc *a = calloc(1, sizeof(*a));
    if (!a)
        return GPUOP_ENOMEM;
    struct gpuop_caches *w = &a->w;
    w->cfg = *cfg;
    w->ns = strdup(cfg->namespace);
    if (!w->ns) {
        free(a);
        return GPUOP_ENOMEM;
    }
    w->cfg.namespace = w->ns;

    const char *sel = GPUOP_LABEL_MANAGED_BY "=" GPUOP_MANAGER;
    struct gpuop_informer_config ic[GPUOP_CACHES_KINDS] = {
        [GPUOP_CACHES_POLICY] = {.name = "gpupolicies",
                                 .res = {.group_version = GPUOP_API_VERSION,
                                         .resource = GPUOP_PLURAL},
                                 .same = policy_same},
        [GPUOP_CACHES_NODE] = {.name = "nodes",
                               .res = {.group_version = "v1", .resource = "nodes"},
                               .convert = node_convert,
                               .free_item = node_free,
                               .same = node_same},
        [GPUOP_CACHES_DS] = {.name = "daemonsets",
                             .res = {.group_version = "apps/v1",
                                     .ns = w->ns,
                                     .resource = "daemonsets"},
                             .label_selector = sel,
                             .convert = ds_convert,
                             .free_item = ds_free,
                             .same = ds_same},
        [GPUOP_CACHES_POD] = {.name = "pods",
                              .res = {.group_version = "v1", .ns = w->ns, .resource = "pods"},
                              .label_selector = sel,
                              .convert = pod_convert,
                              .free_item = pod_free,
                              .same = pod_same},
    };
    for (int k = 0; k < GPUOP_CACHES_KINDS; k++) {
        a->tramps[k] = (struct tramp){w, (enum gpuop_caches_kind)k};
        ic[k].on_event = on_event;
        ic[k].on_synced = on_synced;
        ic[k].arg = &a->tramps[k];
        int rc = gpuop_informer_new(loop, kube, &ic[k], &w->inf[k]);
        if (rc < 0) {
            /* Informers never started: closing them frees synchronously
             * enough once the loop runs; count them for the close cb. */
            for (int j = 0; j < k; j++)
                gpuop_informer_close(w->inf[j], NULL, NULL);
            free(w->ns);
            free(a);
            return rc;
        }
    }
    *out = w;
    return 0;
}

int gpuop_caches_start(struct gpuop_caches *w)
{
    for (int k = 0; k < GPUOP_CACHES_KINDS; k++) {
        int rc = gpuop_informer_start(w->inf[k]);
        if (rc < 0)
            return rc;
    }
    return 0;
}

bool gpuop_caches_synced(const struct gpuop_caches *w)
{
    return w->nsynced == GPUOP_CACHES_KINDS;
}

json_t *gpuop_caches_policy(const struct gpuop_caches *w, const char *name)
{
    return gpuop_informer_get(w->inf[GPUOP_CACHES_POLICY], name);
}

int gpuop_caches_next_policy(const struct gpuop_caches *w, size_t *iter, const char **name,
                             json_t **obj)
{
    return gpuop_informer_next(w->inf[GPUOP_CACHES_POLICY], iter, name, (void **)obj);
}

const char *gpuop_caches_active(const struct gpuop_caches *w)
{
    const char *best = NULL, *best_ts = NULL, *key;
    json_t *v;
    size_t it = 0;
    while (gpuop_caches_next_policy(w, &it, &key, &v)) {
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

const struct gpuop_caches_ds *gpuop_caches_ds(const struct gpuop_caches *w, const char *name)
{
    return gpuop_informer_get(w->inf[GPUOP_CACHES_DS], name); /* one namespace: keyed by name */
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

int gpuop_caches_view(const struct gpuop_caches *w, struct gpuop_caches_view *v)
{
    memset(v, 0, sizeof(*v));
    v->nodes = (const struct gpuop_node **)collect(w->inf[GPUOP_CACHES_NODE], &v->nnodes, 0);
    v->ds = (const struct gpuop_ds **)collect(w->inf[GPUOP_CACHES_DS], &v->nds,
                                              offsetof(struct gpuop_caches_ds, ds));
    v->pods = (const struct gpuop_pod **)collect(w->inf[GPUOP_CACHES_POD], &v->npods, 0);
    if (!v->nodes || !v->ds || !v->pods) {
        gpuop_caches_view_free(v);
        return GPUOP_ENOMEM;
    }
    return 0;
}

void gpuop_caches_view_free(struct gpuop_caches_view *v)
{
    free(v->nodes);
    free(v->ds);
    free(v->pods);
    memset(v, 0, sizeof(*v));
}

void gpuop_caches_stats(const struct gpuop_caches *w, enum gpuop_caches_kind kind,
                        struct gpuop_informer_stats *out)
{
    gpuop_informer_stats(w->inf[kind], out);
}

static void informer_closed(void *arg)
{
    struct gpuop_caches *w = arg;
    if (--w->open > 0)
        return;
    void (*cb)(void *) = w->close_cb;
    void *carg = w->close_arg;
    free(w->ns);
    free((struct world_alloc *)w);
    gpuop_pool_trim(); /* the caches are gone: give their slabs back */
    if (cb)
        cb(carg);
}

void gpuop_caches_close(struct gpuop_caches *w, void (*cb)(void *), void *arg)
{
    w->close_cb = cb;
    w->close_arg = arg;
    w->open = GPUOP_CACHES_KINDS;
    w->cfg.on_change = NULL;
    w->cfg.on_synced = NULL;
    for (int k = 0; k < GPUOP_CACHES_KINDS; k++)
        gpuop_informer_close(w->inf[k], informer_closed, w);
}
