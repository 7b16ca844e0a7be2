/*
 * test_queue.c - work queue semantics (dedup, dirty-while-processing,
 * backoff, delayed adds) and the hash map under it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpuop/clock.h"
#include "gpuop/map.h"
#include "queue_int.h"

static int ready_calls;

static void on_ready(void *arg)
{
    (void)arg;
    ready_calls++;
}

static void closed(void *arg)
{
    *(int *)arg = 1;
}

static void close_queue(uv_loop_t *loop, struct gpuop_queue *q)
{
    int done = 0;
    gpuop_queue_close(q, closed, &done);
    uv_run(loop, UV_RUN_DEFAULT);
    assert_int_equal(done, 1);
}

static void test_dedup_and_processing(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct gpuop_queue *q;
    assert_int_equal(gpuop_queue_new(&loop, on_ready, NULL, &q), 0);

    gpuop_queue_add(q, "a");
    gpuop_queue_add(q, "a");
    gpuop_queue_add(q, "b");
    assert_int_equal(gpuop_queue_len(q), 2);

    ready_calls = 0;
    uv_run(&loop, UV_RUN_NOWAIT);
    assert_int_equal(ready_calls, 1);

    char *k = gpuop_queue_get(q);
    assert_string_equal(k, "a");
    /* Added while processing: not handed out again until done. */
    gpuop_queue_add(q, "a");
    assert_int_equal(gpuop_queue_len(q), 1);
    char *k2 = gpuop_queue_get(q);
    assert_string_equal(k2, "b");
    assert_null(gpuop_queue_get(q));
    gpuop_queue_done(q, k);
    assert_int_equal(gpuop_queue_len(q), 1);
    char *k3 = gpuop_queue_get(q);
    assert_string_equal(k3, "a");
    gpuop_queue_done(q, k3);
    gpuop_queue_done(q, k2);
    assert_int_equal(gpuop_queue_len(q), 0);
    free(k);
    free(k2);
    free(k3);
    close_queue(&loop, q);
    uv_loop_close(&loop);
}

static void test_backoff(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct gpuop_queue *q;
    assert_int_equal(gpuop_queue_new(&loop, on_ready, NULL, &q), 0);

    assert_int_equal(gpuop_queue_add_rate_limited(q, "k"), GPUOP_QUEUE_BACKOFF_BASE_MS);
    assert_int_equal(gpuop_queue_add_rate_limited(q, "k"), 2 * GPUOP_QUEUE_BACKOFF_BASE_MS);
    assert_int_equal(gpuop_queue_add_rate_limited(q, "k"), 4 * GPUOP_QUEUE_BACKOFF_BASE_MS);
    assert_int_equal(gpuop_queue_failures(q, "k"), 3);
    /* One heap entry per key, keeping the earliest due time. */
    assert_int_equal(gpuop_queue_delayed(q), 1);
    for (int i = 0; i < 40; i++)
        gpuop_queue_add_rate_limited(q, "cap");
    assert_int_equal(gpuop_queue_add_rate_limited(q, "cap"), GPUOP_QUEUE_BACKOFF_MAX_MS);
    gpuop_queue_forget(q, "k");
    assert_int_equal(gpuop_queue_failures(q, "k"), 0);
    assert_int_equal(gpuop_queue_add_rate_limited(q, "k"), GPUOP_QUEUE_BACKOFF_BASE_MS);
    close_queue(&loop, q);
    uv_loop_close(&loop);
}

struct stopper {
    struct gpuop_queue *q;
    uv_loop_t *loop;
    uint64_t fired_at;
};

/* Times are the queue's clock (gpuop_clock_ms), not the loop's cached
 * uv_now: the queue arms its timer from gpuop_clock_ms relative to the
 * loop's time, which a loaded machine (valgrind) leaves behind, so an item
 * due in 200 ms on the clock can fire at a loop time under 200 ms later. */
static void stop_on_ready(void *arg)
{
    struct stopper *s = arg;
    s->fired_at = gpuop_clock_ms();
    uv_stop(s->loop);
}

static void test_add_after(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct stopper s = {.loop = &loop};
    assert_int_equal(gpuop_queue_new(&loop, stop_on_ready, &s, &s.q), 0);

    uint64_t start = gpuop_clock_ms();
    gpuop_queue_add_after(s.q, "late", 200);
    gpuop_queue_add_after(s.q, "early", 30);
    assert_int_equal(gpuop_queue_len(s.q), 0);
    assert_int_equal(gpuop_queue_delayed(s.q), 2);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_true(s.fired_at - start >= 30);
    assert_int_equal(gpuop_queue_len(s.q), 1);
    char *k = gpuop_queue_get(s.q);
    assert_string_equal(k, "early");
    gpuop_queue_done(s.q, k);
    free(k);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_true(s.fired_at - start >= 200);
    k = gpuop_queue_get(s.q);
    assert_string_equal(k, "late");
    free(k);
    close_queue(&loop, s.q);
    uv_loop_close(&loop);
}

static void test_map(void **state)
{
    struct gpuop_map m;
    gpuop_map_init(&m);
    char key[32];
    for (intptr_t i = 0; i < 5000; i++) {
        snprintf(key, sizeof(key), "node-%ld", (long)i);
        assert_int_equal(gpuop_map_put(&m, key, (void *)(i + 1), NULL), 0);
    }
    assert_int_equal(m.len, 5000);
    /* Delete every third; the rest must stay reachable (backward shift). */
    for (intptr_t i = 0; i < 5000; i += 3) {
        snprintf(key, sizeof(key), "node-%ld", (long)i);
        assert_ptr_equal(gpuop_map_del(&m, key), (void *)(i + 1));
    }
    for (intptr_t i = 0; i < 5000; i++) {
        snprintf(key, sizeof(key), "node-%ld", (long)i);
        void *v = gpuop_map_get(&m, key);
        if (i % 3 == 0)
            assert_null(v);
        else
            assert_ptr_equal(v, (void *)(i + 1));
    }
    /* Tags: 0 for a new key, kept across a replace and a neighbour's
     * deletion (nodes move between slots, not in memory), gone with the key. */
    assert_null(gpuop_map_tag(&m, "node-0"));
    assert_int_equal(*gpuop_map_tag(&m, "node-1"), 0);
    *gpuop_map_tag(&m, "node-1") = 42;
    *gpuop_map_tag(&m, "node-2") = 43;
    void *old;
    assert_int_equal(gpuop_map_put(&m, "node-1", (void *)7, &old), 0);
    assert_ptr_equal(old, (void *)2);
    assert_int_equal(*gpuop_map_tag(&m, "node-1"), 42);
    assert_ptr_equal(gpuop_map_del(&m, "node-4"), (void *)5);
    assert_int_equal(*gpuop_map_tag(&m, "node-2"), 43);
    size_t it = 0, n = 0, tagged = 0;
    const char *k;
    void *v;
    uint32_t tag;
    while (gpuop_map_next_tag(&m, &it, &k, &v, &tag)) {
        n++;
        assert_ptr_equal(gpuop_map_get(&m, k), v);
        if (tag) {
            tagged++;
            assert_int_equal(tag, strcmp(k, "node-1") == 0 ? 42 : 43);
        }
    }
    assert_int_equal(n, m.len);
    assert_int_equal(tagged, 2);
    assert_ptr_equal(gpuop_map_del(&m, "node-1"), (void *)7);
    assert_null(gpuop_map_tag(&m, "node-1"));
    assert_int_equal(gpuop_map_put(&m, "node-1", (void *)8, NULL), 0);
    assert_int_equal(*gpuop_map_tag(&m, "node-1"), 0);
    gpuop_map_free(&m, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dedup_and_processing),
        cmocka_unit_test(test_backoff),
        cmocka_unit_test(test_add_after),
        cmocka_unit_test(test_map),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
