/*
 * queue.c - work queue with dirty/processing sets, per-key backoff and a
 * delay heap (see queue.h for the semantics).
 *
 * Data: a FIFO array of ready keys; three maps (dirty, processing,
 * failures); a binary min-heap of (due time, key) served by one uv_timer_t.
 * Readiness is signalled through a uv_idle_t that fires once and stops, so
 * on_ready never runs re-entrantly inside gpuop_queue_add().
 */
#include <stdlib.h>
#include <string.h>

#include "gpuop/error.h"
#include "gpuop/map.h"
#include "queue_int.h"

struct delayed {
    uint64_t due;
    char *key; /* owned */
};

struct gpuop_queue {
    uv_loop_t *loop;
    uv_timer_t timer;
    uv_idle_t kick;
    int open_handles;
    void (*on_ready)(void *);
    void *arg;
    void (*close_cb)(void *);
    void *close_arg;

    char **fifo; /* owned keys, ready */
    size_t head, len, cap;

    struct gpuop_map dirty;      /* key -> (void *)1 */
    struct gpuop_map processing; /* key -> (void *)1 */
    struct gpuop_map failures;   /* key -> (void *)(intptr_t)count */

    struct delayed *heap;
    size_t hlen, hcap;
};

static void kick_cb(uv_idle_t *h)
{
    struct gpuop_queue *q = h->data;
    uv_idle_stop(&q->kick);
    if (q->len && q->on_ready)
        q->on_ready(q->arg);
}

static void kick(struct gpuop_queue *q)
{
    if (q->len && !q->close_cb)
        uv_idle_start(&q->kick, kick_cb);
}

static int fifo_push(struct gpuop_queue *q, const char *key)
{
    if (q->head + q->len == q->cap) {
        if (q->head > 0) {
            memmove(q->fifo, q->fifo + q->head, q->len * sizeof(*q->fifo));
            q->head = 0;
        } else {
            size_t ncap = q->cap ? q->cap * 2 : 16;
            char **nf = realloc(q->fifo, ncap * sizeof(*nf));
            if (!nf)
                return GPUOP_ENOMEM;
            q->fifo = nf;
            q->cap = ncap;
        }
    }
    char *k = strdup(key);
    if (!k)
        return GPUOP_ENOMEM;
    q->fifo[q->head + q->len++] = k;
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
    if (!q->len)
        return NULL;
    char *k = q->fifo[q->head]; /* ownership passes to the caller */
    if (gpuop_map_put(&q->processing, k, (void *)1, NULL) < 0)
        return NULL; /* stays queued; retried at the next get */
    q->head++;
    if (!--q->len)
        q->head = 0;
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
    uint64_t now = uv_now(q->loop);
    while (q->hlen && q->heap[0].due <= now) {
        char *key = q->heap[0].key;
        q->heap[0] = q->heap[--q->hlen];
        heap_down(q->heap, q->hlen, 0);
        gpuop_queue_add(q, key);
        free(key);
    }
    arm_timer(q);
}

static void arm_timer(struct gpuop_queue *q)
{
    if (q->close_cb)
        return;
    if (!q->hlen) {
        uv_timer_stop(&q->timer);
        return;
    }
    uint64_t now = uv_now(q->loop);
    uint64_t due = q->heap[0].due;
    uv_timer_start(&q->timer, timer_cb, due > now ? due - now : 0, 0);
}

int gpuop_queue_add_after(struct gpuop_queue *q, const char *key, uint64_t delay_ms)
{
    if (delay_ms == 0)
        return gpuop_queue_add(q, key);
    /* A key already waiting keeps its earlier due time. */
    uint64_t due = uv_now(q->loop) + delay_ms;
    for (size_t i = 0; i < q->hlen; i++)
        if (strcmp(q->heap[i].key, key) == 0) {
            if (due < q->heap[i].due) {
                q->heap[i].due = due;
                heap_up(q->heap, i);
                arm_timer(q);
            }
            return 0;
        }
    if (q->hlen == q->hcap) {
        size_t ncap = q->hcap ? q->hcap * 2 : 8;
        struct delayed *nh = realloc(q->heap, ncap * sizeof(*nh));
        if (!nh)
            return GPUOP_ENOMEM;
        q->heap = nh;
        q->hcap = ncap;
    }
    char *k = strdup(key);
    if (!k)
        return GPUOP_ENOMEM;
    q->heap[q->hlen] = (struct delayed){due, k};
    heap_up(q->heap, q->hlen++);
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
    return q->len;
}

size_t gpuop_queue_delayed(const struct gpuop_queue *q)
{
    return q->hlen;
}

int gpuop_queue_new(uv_loop_t *loop, void (*on_ready)(void *), void *arg, struct gpuop_queue **out)
{
    struct gpuop_queue *q = calloc(1, sizeof(*q));
    if (!q)
        return GPUOP_ENOMEM;
    q->loop = loop;
    q->on_ready = on_ready;
    q->arg = arg;
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
    for (size_t i = 0; i < q->len; i++)
        free(q->fifo[q->head + i]);
    free(q->fifo);
    for (size_t i = 0; i < q->hlen; i++)
        free(q->heap[i].key);
    free(q->heap);
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
