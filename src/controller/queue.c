/*
 * queue.c - work queue with dirty/processing sets, per-key backoff and a
 * delay heap (see queue_int.h for the semantics).
 *
 * Data: a FIFO array of ready keys (served from head, compacted when it
 * would grow); three maps (dirty, processing, failures); a binary min-heap
 * of (due time on gpuop_clock_ms, key) served by one uv_timer_t. Both arrays are typed
 * arrays on gpuop_buf (buf.h).
 * Readiness is signalled through a uv_idle_t that fires once and stops, so
 * on_ready never runs re-entrantly inside gpuop_queue_add().
 */
#include <stdlib.h>
#include <string.h>

#include "gpuop/buf.h"
#include "gpuop/clock.h"
#include "gpuop/error.h"
#include "gpuop/map.h"
#include "queue_int.h"

struct delayed {
    uint64_t due;
    char *key; /* owned */
};

/* The arrays' first sizes, in elements (they double from there). */
#define QUEUE_FIFO_FIRST 16
#define QUEUE_HEAP_FIRST 8

GPUOP_ARRAY(key_array, char *); /* owned keys */
GPUOP_ARRAY(delay_heap, struct delayed);

struct gpuop_queue {
    uv_loop_t *loop;
    uv_timer_t timer;
    uv_idle_t kick;
    int open_handles;
    void (*on_ready)(void *);
    void *arg;
    void (*close_cb)(void *);
    void *close_arg;

    struct key_array fifo; /* owned keys; [head .. len) are ready */
    size_t head;

    struct gpuop_map dirty;      /* key -> (void *)1 */
    struct gpuop_map processing; /* key -> (void *)1 */
    struct gpuop_map failures;   /* key -> (void *)(intptr_t)count */

    struct delay_heap heap;
};

/* Keys ready to be handed out. */
static size_t ready(const struct gpuop_queue *q)
{
    return key_array_len(&q->fifo) - q->head;
}

static void kick_cb(uv_idle_t *h)
{
    struct gpuop_queue *q = h->data;
    uv_idle_stop(&q->kick);
    if (ready(q) && q->on_ready)
        q->on_ready(q->arg);
}

static void kick(struct gpuop_queue *q)
{
    if (ready(q) && !q->close_cb)
        uv_idle_start(&q->kick, kick_cb);
}

static int fifo_push(struct gpuop_queue *q, const char *key)
{
    if (q->head > 0 && q->fifo.buf.len == q->fifo.buf.cap) { /* full: reuse the served front */
        key_array_remove(&q->fifo, 0, q->head);
        q->head = 0;
    }
    char *k = strdup(key);
    if (!k)
        return GPUOP_ENOMEM;
    if (key_array_push(&q->fifo, k) < 0) {
        free(k);
        return GPUOP_ENOMEM;
    }
    return 0;
}

int gpuop_queue_add(struct gpuop_queue *q, const char *key)
{
    if (gpuop_map_get(&q->dirty, key))
        return 0;
    if (gpuop_map_put(&q->dirty, key, (void *)1, NULL) < 0)
        return GPUOP_ENOMEM;
    if (gpuop_map_get(&q->processing, key))
        return 0; /* requeued by done() */
    if (fifo_push(q, key) < 0) {
        gpuop_map_del(&q->dirty, key);
        return GPUOP_ENOMEM;
    }
    kick(q);
    return 0;
}

char *gpuop_queue_get(struct gpuop_queue *q)
{
    if (!ready(q))
        return NULL;
    char *k = key_array_items(&q->fifo)[q->head]; /* ownership passes to the caller */
    if (gpuop_map_put(&q->processing, k, (void *)1, NULL) < 0)
        return NULL; /* stays queued; retried at the next get */
    if (++q->head == key_array_len(&q->fifo)) {
        key_array_clear(&q->fifo);
        q->head = 0;
    }
    gpuop_map_del(&q->dirty, k);
    return k;
}

void gpuop_queue_done(struct gpuop_queue *q, const char *key)
{
    if (!gpuop_map_del(&q->processing, key))
        return;
    if (gpuop_map_get(&q->dirty, key)) {
        if (fifo_push(q, key) < 0) {
            /* Out of memory: retry through the delay heap later. */
            gpuop_map_del(&q->dirty, key);
            gpuop_queue_add_after(q, key, GPUOP_QUEUE_BACKOFF_BASE_MS);
            return;
        }
        kick(q);
    }
}

/* ---- delay heap ---- */

static void heap_swap(struct delayed *a, struct delayed *b)
{
    struct delayed t = *a;
    *a = *b;
    *b = t;
}

static void heap_up(struct delayed *h, size_t i)
{
    while (i > 0 && h[(i - 1) / 2].due > h[i].due) {
        heap_swap(&h[(i - 1) / 2], &h[i]);
        i = (i - 1) / 2;
    }
}

static void heap_down(struct delayed *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && h[l].due < h[m].due)
            m = l;
        if (r < n && h[r].due < h[m].due)
            m = r;
        if (m == i)
            return;
        heap_swap(&h[m], &h[i]);
        i = m;
    }
}

static void arm_timer(struct gpuop_queue *q);

static void timer_cb(uv_timer_t *t)
{
    struct gpuop_queue *q = t->data;
    uint64_t now = gpuop_clock_ms();
    struct delayed *h;
    while (delay_heap_len(&q->heap) && (h = delay_heap_items(&q->heap))[0].due <= now) {
        char *key = h[0].key;
        h[0] = delay_heap_pop(&q->heap);
        heap_down(h, delay_heap_len(&q->heap), 0);
        gpuop_queue_add(q, key);
        free(key);
    }
    arm_timer(q);
}

static void arm_timer(struct gpuop_queue *q)
{
    if (q->close_cb)
        return;
    if (!delay_heap_len(&q->heap)) {
        uv_timer_stop(&q->timer);
        return;
    }
    uint64_t now = gpuop_clock_ms();
    uint64_t due = delay_heap_items(&q->heap)[0].due;
    uv_timer_start(&q->timer, timer_cb, due > now ? due - now : 0, 0);
}

int gpuop_queue_add_after(struct gpuop_queue *q, const char *key, uint64_t delay_ms)
{
    if (delay_ms == 0)
        return gpuop_queue_add(q, key);
    /* A key already waiting keeps its earlier due time. */
    uint64_t due = gpuop_clock_ms() + delay_ms;
    struct delayed *h = delay_heap_items(&q->heap);
    for (size_t i = 0; i < delay_heap_len(&q->heap); i++)
        if (strcmp(h[i].key, key) == 0) {
            if (due < h[i].due) {
                h[i].due = due;
                heap_up(h, i);
                arm_timer(q);
            }
            return 0;
        }
    char *k = strdup(key);
    if (!k)
        return GPUOP_ENOMEM;
    if (delay_heap_push(&q->heap, (struct delayed){due, k}) < 0) {
        free(k);
        return GPUOP_ENOMEM;
    }
    heap_up(delay_heap_items(&q->heap), delay_heap_len(&q->heap) - 1);
    arm_timer(q);
    return 0;
}

int64_t gpuop_queue_add_rate_limited(struct gpuop_queue *q, const char *key)
{
    intptr_t n = (intptr_t)gpuop_map_get(&q->failures, key);
    uint64_t delay = GPUOP_QUEUE_BACKOFF_BASE_MS;
    for (intptr_t i = 0; i < n && delay < GPUOP_QUEUE_BACKOFF_MAX_MS; i++)
        delay *= 2;
    if (delay > GPUOP_QUEUE_BACKOFF_MAX_MS)
        delay = GPUOP_QUEUE_BACKOFF_MAX_MS;
    if (gpuop_map_put(&q->failures, key, (void *)(n + 1), NULL) < 0)
        return GPUOP_ENOMEM;
    int rc = gpuop_queue_add_after(q, key, delay);
    return rc < 0 ? rc : (int64_t)delay;
}

void gpuop_queue_forget(struct gpuop_queue *q, const char *key)
{
    gpuop_map_del(&q->failures, key);
}

int gpuop_queue_failures(const struct gpuop_queue *q, const char *key)
{
    return (int)(intptr_t)gpuop_map_get(&q->failures, key);
}

size_t gpuop_queue_len(const struct gpuop_queue *q)
{
    return ready(q);
}

size_t gpuop_queue_delayed(const struct gpuop_queue *q)
{
    return delay_heap_len(&q->heap);
}

int gpuop_queue_new(uv_loop_t *loop, void (*on_ready)(void *), void *arg, struct gpuop_queue **out)
{
    struct gpuop_queue *q = calloc(1, sizeof(*q));
    if (!q)
        return GPUOP_ENOMEM;
    q->loop = loop;
    q->on_ready = on_ready;
    q->arg = arg;
    key_array_init(&q->fifo, QUEUE_FIFO_FIRST, GPUOP_ARRAY_UNLIMITED);
    delay_heap_init(&q->heap, QUEUE_HEAP_FIRST, GPUOP_ARRAY_UNLIMITED);
    gpuop_map_init(&q->dirty);
    gpuop_map_init(&q->processing);
    gpuop_map_init(&q->failures);
    uv_timer_init(loop, &q->timer);
    uv_idle_init(loop, &q->kick);
    q->timer.data = q->kick.data = q;
    q->open_handles = 2;
    *out = q;
    return 0;
}

static void handle_closed(uv_handle_t *h)
{
    struct gpuop_queue *q = h->data;
    if (--q->open_handles > 0)
        return;
    for (size_t i = q->head; i < key_array_len(&q->fifo); i++)
        free(key_array_items(&q->fifo)[i]);
    key_array_free(&q->fifo);
    for (size_t i = 0; i < delay_heap_len(&q->heap); i++)
        free(delay_heap_items(&q->heap)[i].key);
    delay_heap_free(&q->heap);
    gpuop_map_free(&q->dirty, NULL);
    gpuop_map_free(&q->processing, NULL);
    gpuop_map_free(&q->failures, NULL);
    void (*cb)(void *) = q->close_cb;
    void *arg = q->close_arg;
    free(q);
    if (cb)
        cb(arg);
}

static void noop(void *arg)
{
    (void)arg;
}

void gpuop_queue_close(struct gpuop_queue *q, void (*cb)(void *), void *arg)
{
    q->close_cb = cb ? cb : noop;
    q->close_arg = arg;
    uv_close((uv_handle_t *)&q->timer, handle_closed);
    uv_close((uv_handle_t *)&q->kick, handle_closed);
}
