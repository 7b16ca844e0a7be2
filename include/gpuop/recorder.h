/*
 * recorder.h - a Kubernetes Event recorder, as client-go's EventRecorder
 * with its EventCorrelator's aggregation: what an Event says is the
 * caller's; how it reaches the API server is this.
 *
 * - Aggregated: one Event object per (involved object, type, reason,
 *   message), named "<object name>.<16 hex digits>" from a hash of them
 *   and this process; the same Event again PATCHes that object's count and
 *   lastTimestamp, and creates it anew when the PATCH finds it gone (its
 *   TTL passed, or someone deleted it). At most GPUOP_RECORDER_AGG_MAX
 *   objects are remembered to count up (24 bytes each), each for
 *   GPUOP_RECORDER_AGG_TTL_S; the oldest goes first.
 * - Queued: Events wait in a FIFO and are posted one at a time, in order,
 *   so a burst is one connection, not one each. More than
 *   GPUOP_RECORDER_QUEUE_MAX waiting (an API server that stopped
 *   answering) and new ones are dropped, and counted.
 * - An Event that cannot be posted is logged and dropped; nothing is
 *   retried but the create after a PATCH that found no object.
 * Layer: kube. It knows nothing of findings or policies: which changes
 * become Events, with what words, and how many of them, is the caller's
 * (src/controller/events.c).
 */
#ifndef GPUOP_RECORDER_H
#define GPUOP_RECORDER_H

#include <stddef.h>
#include <stdint.h>

#include "gpuop/kube.h"

/* Events waiting to be posted, at most. */
#define GPUOP_RECORDER_QUEUE_MAX 200

/* Event objects remembered to count up (client-go's correlator keeps
 * 4,096), and for how long: the API server's default --event-ttl, after
 * which the object is gone anyway. */
#define GPUOP_RECORDER_AGG_MAX   1024
#define GPUOP_RECORDER_AGG_TTL_S 3600

struct gpuop_recorder;

/* What an Event is about (its involvedObject). All borrowed, read while
 * gpuop_recorder_event runs. */
struct gpuop_recorder_object {
    const char *api_version; /* "gpuop.io/v1alpha1" */
    const char *kind;        /* "GpuPolicy" */
    const char *ns;          /* NULL or "": cluster-scoped (the Event goes to "default") */
    const char *name;
    const char *uid; /* NULL: unknown */
};

/* A recorder posting through kube (borrowed; must outlive it) as
 * component (borrowed, static: the Event's source and reporting
 * component). *out is new; free with gpuop_recorder_close. */
int gpuop_recorder_new(struct gpuop_kube *kube, const char *component, struct gpuop_recorder **out);

/* Records one Event about obj: type "Normal" or "Warning", a CamelCase
 * reason, a message a person reads. All borrowed (copied into the Event).
 * Counted in gpuop_recorder_posted once queued. */
void gpuop_recorder_event(struct gpuop_recorder *r, const struct gpuop_recorder_object *obj,
                          const char *type, const char *reason, const char *msg);

/* Events queued to be posted (since start); dropped because the queue was
 * full; waiting or in flight now. */
uint64_t gpuop_recorder_posted(const struct gpuop_recorder *r);
uint64_t gpuop_recorder_dropped(const struct gpuop_recorder *r);
size_t gpuop_recorder_queued(const struct gpuop_recorder *r);

/* cb(arg) runs each time the queue empties (the last waiting Event has
 * been posted, or could not be). */
void gpuop_recorder_set_on_drained(struct gpuop_recorder *r, void (*cb)(void *arg), void *arg);

/* Cancels the post in flight, drops what waits, frees r. */
void gpuop_recorder_close(struct gpuop_recorder *r);

#endif
