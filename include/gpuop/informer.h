/*
 * informer.h - a watch cache for one kind of object: LIST (paged) then
 * WATCH from the list's resourceVersion, kept in a store of compact items.
 *
 * Semantics follow client-go's reflector:
 * - a watch that ends normally is re-opened from the last resourceVersion,
 *   without a list; BOOKMARK events only advance the resourceVersion;
 * - 410 Gone (an HTTP 410, or an ERROR event carrying a Status with code
 *   410 inside a 200 response) forces a relist; after a relist, items the
 *   list no longer has get synthetic deletes;
 * - connection failures back off exponentially (0.8 s doubling to 30 s,
 *   with jitter), reset once a watch has stayed healthy for a while;
 * - watch timeouts are randomised (5-10 min) so watchers do not reconnect
 *   at once; an event line, and an item of a LIST page, is bounded
 *   (max_line, default GPUOP_INFORMER_MAX_LINE);
 * - neither a LIST page nor a watch is held whole: a page streams through
 *   the jsonlist splitter and each item is parsed alone as it arrives, so
 *   the memory of a (re)list is one item, whatever the page size;
 * - an object's metadata.managedFields, and the members the config calls
 *   unread, are cut from its bytes before they are parsed: neither convert
 *   nor a stored JSON item ever sees them; the members it calls digested
 *   are cut too and come back as a digest of their bytes.
 *
 * Items are whatever the convert op makes of an object (a compact struct,
 * or the json_t itself); the store owns them. Event callbacks run after
 * the store changed and must not keep old_item. The informer never trims
 * the heap: the controller does, when its work is done (trim.h).
 *
 * In stream mode (cfg.stream) there is no store: each object is handed to
 * on_object as it comes, then freed, and a list is bracketed by on_list's
 * BEGIN and END instead of being compared with the store; the owner keeps
 * what it needs (the ResourceSlices' fold, cache/slicetab_int.h).
 */
#ifndef GPUOP_INFORMER_H
#define GPUOP_INFORMER_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>
#include <uv.h>

#include "gpuop/error.h"
#include "gpuop/kube.h"
#include "gpuop/map.h"

#define GPUOP_INFORMER_MAX_LINE (8u << 20)
/* Objects per LIST page (limit=): a page streams in item by item, so this
 * sets how much one request carries and how often a list round-trips,
 * not the memory a list needs. */
#define GPUOP_INFORMER_PAGE 100
/* Most members a config may call unread, and most keys in one's path. */
#define GPUOP_INFORMER_UNREAD_MAX  7
#define GPUOP_INFORMER_UNREAD_KEYS 6

struct gpuop_informer;

/* What on_object is told (stream mode). */
enum gpuop_informer_op {
    GPUOP_INFORMER_PUT, /* added or modified (listed, or a watch event) */
    GPUOP_INFORMER_DEL, /* deleted (a watch event; item NULL) */
};

/* Where a list is (stream mode). */
enum gpuop_informer_list {
    GPUOP_INFORMER_LIST_BEGIN, /* a fresh list starts (its first page asked for) */
    GPUOP_INFORMER_LIST_END,   /* it completed: every object it held was PUT */
};

struct gpuop_informer_config {
    const char *name; /* for logs and metrics: "nodes"; NULL: res.resource */
    /* The collection, as gpuop_kube_path takes it (name and subresource
     * NULL): {"v1", NULL, "nodes"}, {"apps/v1", "gpu", "daemonsets"}. */
    struct gpuop_kube_ref res;
    const char *label_selector; /* or NULL */
    const char *field_selector; /* or NULL ("involvedObject.kind=DaemonSet") */
    size_t max_line; /* bytes of one watch event or list item; 0: GPUOP_INFORMER_MAX_LINE */
    /* obj (borrowed) -> new item, or NULL on failure (err says why; the
     * object is then skipped and logged). NULL op: the item is obj itself
     * (a new reference). key is the store's own copy of the object's key
     * (see on_event), stable for as long as the object stays in the store:
     * the item may point at it instead of copying the name. */
    void *(*convert)(json_t *obj, const char *key, struct gpuop_err *err);
    void (*free_item)(void *item); /* NULL op: json_decref */
    /* Members of an object that convert never reads, as paths from the
     * object ("spec.containers": keys without dots), NULL-terminated, or
     * NULL: cut from its bytes before it is parsed, as metadata.managedFields
     * always is. At most GPUOP_INFORMER_UNREAD_MAX, each of at most
     * GPUOP_INFORMER_UNREAD_KEYS keys (GPUOP_EINVAL otherwise); copied. */
    const char *const *unread;
    /* Members cut the same way but put back as a digest of their bytes
     * (a string, "digest:" and 16 hex digits), NULL-terminated, or NULL:
     * the item then shows whether such a member changed, not what it
     * holds. They count with unread against GPUOP_INFORMER_UNREAD_MAX;
     * copied. */
    const char *const *digested;
    /* Parse each list item and watch event in the JSON scratch window
     * (jsonarena.h) instead of the heap: for kinds converted to structs
     * (needs convert; GPUOP_EINVAL otherwise), whose convert copies out all
     * it keeps. The window covers parsing and convert only; it is closed
     * before the store changes and on_event runs, so a callback may keep
     * whatever jansson allocates for it. */
    bool scratch;
    /* Optional: true when the change makes no difference to the operator
     * (heartbeats); the item is replaced but on_event is not called. */
    bool (*same)(const void *old_item, const void *new_item);
    /* With same: an update it calls the same keeps the cached item and
     * frees the new one, so a pointer to an item stays valid until an
     * on_event names its key (for converted items whose same compares
     * everything they hold: a reader cannot tell the two apart). */
    bool keep_same;
    /* key: the store key: "name" for cluster-scoped objects and for an
     * informer of one namespace (res.ns set), else "namespace/name";
     * old_item NULL on add, new_item NULL on delete; all
     * borrowed, valid during the call only. */
    void (*on_event)(void *arg, const char *key, const void *old_item, const void *new_item);
    /* Stream mode: no store. Each object goes to on_object (required) once
     * converted, the scratch window closed, and is freed when it returns:
     * key and item are borrowed for the call (convert's key too, so an
     * item must not keep it). PUT with a NULL item: convert refused the
     * object (the owner keeps what it had, as the store would). DEL names
     * the key only; it may be one the owner never saw. on_list (optional)
     * is told BEGIN each time a list starts from its first page (a retry
     * and an expired continue included) and END when one completes,
     * before on_synced: an owner that marks what BEGIN..END PUT and drops
     * the rest at END mirrors the store's synthetic deletes. GPUOP_EINVAL
     * with on_event, same or keep_same; gpuop_informer_len stays 0 and
     * gpuop_informer_get finds nothing. */
    bool stream;
    void (*on_object)(void *arg, enum gpuop_informer_op op, const char *key, const void *item);
    void (*on_list)(void *arg, enum gpuop_informer_list what);
    /* Called once, after the first complete list. */
    void (*on_synced)(void *arg);
    /* Optional: a list failed with rc (GPUOP_ENOTFOUND: the server does not
     * serve the collection), called before the informer backs off to list
     * again. */
    void (*on_list_error)(void *arg, int rc);
    void *arg;
};

struct gpuop_informer_stats {
    uint64_t lists;    /* complete lists (the first one included) */
    uint64_t relists;  /* lists forced by 410 Gone */
    uint64_t watches;  /* watch streams opened */
    uint64_t restarts; /* watch streams that ended in an error */
    uint64_t events;   /* watch events applied */
};

/* cfg strings are copied. *out is new; close with gpuop_informer_close.
 * GPUOP_EINVAL without res.resource, with a res.name, with scratch but no
 * convert, with keep_same but no same, with unread paths beyond their
 * limits, or in stream mode without on_object or with a store's ops. */
int gpuop_informer_new(uv_loop_t *loop, struct gpuop_kube *kube,
                       const struct gpuop_informer_config *cfg, struct gpuop_informer **out);
int gpuop_informer_start(struct gpuop_informer *inf);
bool gpuop_informer_synced(const struct gpuop_informer *inf);
/* Borrowed item or NULL; key as in on_event. */
void *gpuop_informer_get(const struct gpuop_informer *inf, const char *key);
/* Borrowed item of the one key other than skip whose 32-bit hash
 * (gpuop_map_h32) is h, its key in *key, or NULL (none, or several):
 * gpuop_map_get_h32 on the store. */
void *gpuop_informer_get_h32(const struct gpuop_informer *inf, uint32_t h, const char *skip,
                             const char **key);
/* Number of items in the store. */
size_t gpuop_informer_len(const struct gpuop_informer *inf);
/* Iterates the store: for (size_t i = 0; gpuop_informer_next(inf, &i, &k, &v);).
 * key and item are borrowed; the store must not change meanwhile. */
int gpuop_informer_next(const struct gpuop_informer *inf, size_t *iter, const char **key,
                        void **item);
const char *gpuop_informer_resource_version(const struct gpuop_informer *inf);
void gpuop_informer_stats(const struct gpuop_informer *inf, struct gpuop_informer_stats *out);
/* Test hook: backoff base and cap in ms (defaults: client-go's 800 ms and
 * 30 s). */
void gpuop_informer_set_backoff(struct gpuop_informer *inf, uint64_t base_ms, uint64_t max_ms);

/* Cancels requests and timers; cb(arg) runs once everything is closed and
 * freed (items too). */
void gpuop_informer_close(struct gpuop_informer *inf, void (*cb)(void *arg), void *arg);

/* The store key of a Kubernetes object (borrowed obj): "ns/name" or
 * "name"; writes into buf, returns 0 or GPUOP_EINVAL without a name. */
int gpuop_object_key(json_t *obj, char *buf, size_t len);

#endif
