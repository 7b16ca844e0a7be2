/*
 * queue_int.h - the controller's work queue, with client-go's semantics:
 *
 * - it holds keys, not objects; a key is queued at most once (dirty set);
 * - a key being processed that is added again is marked dirty and queued
 *   once more when gpuop_queue_done() is called, never processed twice at
 *   the same time;
 * - per-key exponential backoff for failures (add_rate_limited / forget);
 * - add_after for delayed requeues: one libuv timer over a min-heap.
 *
 * When keys are ready the queue calls on_ready(arg) from the loop (never
 * from inside add), and the owner then drains it with gpuop_queue_get().
 */
#ifndef GPUOP_QUEUE_INT_H
#define GPUOP_QUEUE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

/* Per-key failure backoff: client-go's ItemExponentialFailureRateLimiter
 * baseDelay and maxDelay (client-go uses 5 ms and 1000 s; a reconcile here
 * sends whole DaemonSets, so it starts slower and stops at 5 minutes). */
#define GPUOP_QUEUE_BACKOFF_BASE_MS 100
#define GPUOP_QUEUE_BACKOFF_MAX_MS  (5 * 60 * 1000)

struct gpuop_queue;

/* *out is new; release with gpuop_queue_close(). */
int gpuop_queue_new(uv_loop_t *loop, void (*on_ready)(void *arg), void *arg,
                    struct gpuop_queue **out);

/* Key is copied. Returns 0 or GPUOP_ENOMEM. */
int gpuop_queue_add(struct gpuop_queue *q, const char *key);
int gpuop_queue_add_after(struct gpuop_queue *q, const char *key, uint64_t delay_ms);

/* Requeues after the key's backoff (base * 2^failures, capped) and counts a
 * failure. Returns the delay used in ms, or a negative gpuop_rc. */
int64_t gpuop_queue_add_rate_limited(struct gpuop_queue *q, const char *key);
/* Resets the key's failure count (after a success). */
void gpuop_queue_forget(struct gpuop_queue *q, const char *key);
int gpuop_queue_failures(const struct gpuop_queue *q, const char *key);

/* Next ready key (new string, caller frees) or NULL; marks it processing. */
char *gpuop_queue_get(struct gpuop_queue *q);
/* Ends processing of key; requeues it if it was added meanwhile. */
void gpuop_queue_done(struct gpuop_queue *q, const char *key);

/* Keys ready now (not counting delayed ones). */
size_t gpuop_queue_len(const struct gpuop_queue *q);
/* Keys waiting in add_after. */
size_t gpuop_queue_delayed(const struct gpuop_queue *q);

/* Stops the timers; cb(arg) runs once handles are closed and q is freed. */
void gpuop_queue_close(struct gpuop_queue *q, void (*cb)(void *arg), void *arg);

#endif
