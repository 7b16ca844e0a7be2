/*
 * waiter.c - bounded waits on a libuv loop for unit tests (see waiter.h).
 */
#include "waiter.h"

static void on_wake(uv_timer_t *t)
{
    struct waiter *w = t->data;
    if (uv_now(t->loop) >= w->deadline)
        w->expired = true;
    uv_stop(t->loop);
}

void waiter_init(struct waiter *w, uv_loop_t *loop)
{
    uv_timer_init(loop, &w->timer);
    w->timer.data = w;
    w->deadline = 0;
    w->expired = false;
}

void waiter_begin(struct waiter *w, uint64_t ms)
{
    uv_update_time(w->timer.loop);
    w->expired = false;
    w->deadline = uv_now(w->timer.loop) + ms;
    uv_timer_start(&w->timer, on_wake, WAITER_WAKE_MS, WAITER_WAKE_MS);
}

void waiter_end(struct waiter *w)
{
    uv_timer_stop(&w->timer);
}

void waiter_close(struct waiter *w)
{
    uv_close((uv_handle_t *)&w->timer, NULL);
}

void waiter_run_for(struct waiter *w, uint64_t ms)
{
    waiter_begin(w, ms);
    while (!w->expired)
        uv_run(w->timer.loop, UV_RUN_ONCE);
    waiter_end(w);
}
