/*
 * events.h - Kubernetes Events on the GpuPolicy when a finding appears or
 * clears. Deduplicated: the same finding (node, operand, reason) flapping
 * posts at most one event per direction per GPUOP_EVENTS_QUIET_S, and one
 * observation posts at most GPUOP_EVENTS_BURST events plus one summary,
 * so a cluster-wide change does not flood the event stream.
 *
 * Memory: only findings that were posted are remembered, and a memory older
 * than GPUOP_EVENTS_QUIET_S is dropped (checked at most once a minute), so
 * what is kept is bounded by the events posted in the last ten minutes,
 * not by every finding the cluster ever had.
 */
#ifndef GPUOP_EVENTS_H
#define GPUOP_EVENTS_H

#include <stdint.h>

#include "gpuop/analysis.h"
#include "gpuop/kube.h"

#define GPUOP_EVENTS_QUIET_S 600
#define GPUOP_EVENTS_BURST   10

/* Events wait in a queue and are posted one at a time; more than this many
 * waiting (an API server that stopped answering) and new ones are dropped
 * (counted in gpuop_events_dropped). */
#define GPUOP_EVENTS_QUEUE_MAX 200

struct gpuop_events;

/* Events go to namespace "default", where the API server wants the events of
 * a cluster-scoped object. */
int gpuop_events_new(struct gpuop_kube *kube, struct gpuop_events **out);

/* Compares f with the findings of the previous call for the same policy and
 * posts Events for the differences. Steals f's contents (f is zeroed). The
 * first call after start posts nothing: it only learns the current state. */
void gpuop_events_observe(struct gpuop_events *ev, const char *policy, const char *uid,
                          struct gpuop_findings *f);

/* Events queued to be posted (since start); Events dropped because the
 * queue was full; Events waiting or in flight now. */
uint64_t gpuop_events_posted(const struct gpuop_events *ev);
uint64_t gpuop_events_dropped(const struct gpuop_events *ev);
size_t gpuop_events_queued(const struct gpuop_events *ev);

/* Findings remembered for flap suppression now. */
size_t gpuop_events_remembered(const struct gpuop_events *ev);

/* cb(arg) runs each time the queue empties (the last waiting Event has
 * been posted): the controller trims the heap then, as after a reconcile. */
void gpuop_events_set_on_drained(struct gpuop_events *ev, void (*cb)(void *arg), void *arg);

/* Test hook: the clock (seconds since the epoch); NULL restores time(). */
void gpuop_events_set_clock(struct gpuop_events *ev, long long (*now)(void));

/* Cancels posts in flight; cb(arg) runs when freed. */
void gpuop_events_close(struct gpuop_events *ev, void (*cb)(void *arg), void *arg);

#endif
