/*
 * events_int.h - Kubernetes Events on the GpuPolicy when a finding appears or
 * clears (docs/findings.md, "Event reasons").
 *
 * - A Warning, reason = the finding's reason, when a finding appears; a
 *   Normal "<Reason>Cleared" when a finding whose Warning was posted goes.
 * - Grace: a finding whose reason is transient (the reasons table's
 *   column: DaemonSet just applied, pulling, a pod left behind) is posted
 *   only once it has lasted grace_s seconds (the policy's
 *   spec.findings.eventGracePeriodSeconds); one that passes sooner posts
 *   nothing, Cleared included. The status shows it at once. When the
 *   grace of a waiting finding ends, the policy's key is requeued on the
 *   controller's queue, so it is posted on time even when nothing else
 *   changes.
 * - Rollout steps (GPUOP_WAIT_STALL: a pod not created yet, pending,
 *   starting, held in its gate, terminating; an operand up before its
 *   prerequisite) wait also for their node: posted only once the node has
 *   not progressed for grace_s (gpuop_node_result.progressing, analysis.h),
 *   never while it progresses, however long a healthy rollout takes. The
 *   stall begins at the last Ready of one of the node's pods, or when a
 *   failure appears there; the key is requeued for when it has lasted.
 * - Deduplicated: the same finding (node, operand, reason) flapping posts
 *   at most one event per direction per GPUOP_EVENTS_QUIET_S, and one
 *   observation posts at most GPUOP_EVENTS_BURST events plus one summary,
 *   so a cluster-wide change does not flood the event stream.
 * - Posted through the kube layer's Event recorder (gpuop/recorder.h),
 *   which aggregates as client-go's does (one Event object per type,
 *   reason and message; the same Event again raises its count), queues at
 *   most GPUOP_RECORDER_QUEUE_MAX and posts one at a time. This file
 *   decides what is said and when; the recorder, how.
 *
 * Memory: one 8-byte record per present finding, in the findings' order,
 * and the names of the nodes that have findings (mid-rollout on 5,000
 * nodes, about 33,000 findings: 0.4 MiB, twice that while one
 * observation builds the next from the last); only findings that were
 * posted are remembered for flap suppression, and a memory older than
 * GPUOP_EVENTS_QUIET_S is dropped (checked at most once a minute); the
 * recorder's aggregation memory is at most GPUOP_RECORDER_AGG_MAX records
 * of 24 bytes.
 */
#ifndef GPUOP_EVENTS_INT_H
#define GPUOP_EVENTS_INT_H

#include <stdint.h>

#include "gpuop/analysis.h"
#include "gpuop/kube.h"
#include "queue_int.h"

#define GPUOP_EVENTS_QUIET_S 600
#define GPUOP_EVENTS_BURST   10

struct gpuop_events;

/* Events go to namespace "default", where the API server wants the events of
 * a cluster-scoped object. queue (borrowed, may be NULL) is where the
 * policy's key is requeued when a grace period ends. */
int gpuop_events_new(struct gpuop_kube *kube, struct gpuop_queue *queue, struct gpuop_events **out);

/* Compares f with the findings of the previous call for the same policy and
 * posts Events for the differences, transient ones after grace_s (0: at
 * once), their messages made from f (borrowed) with its details; a record
 * of each of f's findings is kept for the next call (events.c). The first
 * call after start, or after another policy, or after no memory for those
 * records (nothing is posted then), cannot tell new findings from old: it
 * posts nothing at once, and each of its findings that lasts grace_s is
 * posted then (a restart re-announces what is still wrong, once). */
void gpuop_events_observe(struct gpuop_events *ev, const char *policy, const char *uid,
                          long long grace_s, const struct gpuop_findings *f);

/* Posts one Event about the policy (borrowed names, copied into the
 * Event) outside the findings' diff: a change that is no finding of its
 * own (the stranded GPU pods of a node, stranded.c). Aggregated and
 * bounded like the findings' Events; never transient. */
void gpuop_events_say(struct gpuop_events *ev, const char *policy, const char *uid,
                      const char *type, const char *reason, const char *msg);

/* Events queued to be posted (since start); Events dropped because the
 * recorder's queue was full (GPUOP_RECORDER_QUEUE_MAX); Events waiting or
 * in flight now. */
uint64_t gpuop_events_posted(const struct gpuop_events *ev);
uint64_t gpuop_events_dropped(const struct gpuop_events *ev);
size_t gpuop_events_queued(const struct gpuop_events *ev);

/* Findings remembered for flap suppression now; findings waiting out their
 * grace or their node's stall; nodes that stopped progressing with a
 * rollout step waiting; present findings whose Warning was posted. */
size_t gpuop_events_remembered(const struct gpuop_events *ev);
size_t gpuop_events_pending(const struct gpuop_events *ev);
size_t gpuop_events_stalled(const struct gpuop_events *ev);
size_t gpuop_events_shown(const struct gpuop_events *ev);

/* cb(arg) runs each time the queue empties (the last waiting Event has
 * been posted): the controller trims the heap then, as after a reconcile. */
void gpuop_events_set_on_drained(struct gpuop_events *ev, void (*cb)(void *arg), void *arg);

/* Cancels posts in flight; cb(arg) runs when freed. */
void gpuop_events_close(struct gpuop_events *ev, void (*cb)(void *arg), void *arg);

#endif
