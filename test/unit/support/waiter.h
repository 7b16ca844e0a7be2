/*
 * waiter.h - bounded waits for unit tests that drive a libuv loop: run the
 * loop with uv_run(UV_RUN_ONCE) and look at a condition after each
 * iteration, failing after a deadline.
 *
 * The waiter's timer repeats every WAITER_WAKE_MS and stops the iteration
 * it fires in: libuv polls without a timeout when the only timer has
 * already fired at the top of an iteration (which happens when a loaded
 * machine runs the loop late), so a one-shot watchdog could leave a wait
 * blocked for good. The deadline is a time, checked at each wake.
 *
 * The waiter is embedded in the test's fixture; waiter_close() closes its
 * timer with no callback, so the fixture's loop must run once more before
 * the fixture's memory goes (as every fixture's teardown already does).
 */
#ifndef GPUOP_TEST_WAITER_H
#define GPUOP_TEST_WAITER_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#define WAITER_WAKE_MS 10

struct waiter {
    uv_timer_t timer;
    uint64_t deadline; /* of the wait in progress (uv_now) */
    bool expired;
};

void waiter_init(struct waiter *w, uv_loop_t *loop);
/* Starts a wait of ms milliseconds from now. */
void waiter_begin(struct waiter *w, uint64_t ms);
void waiter_end(struct waiter *w);
void waiter_close(struct waiter *w);
/* Runs the loop for ms milliseconds (until the wait expires). */
void waiter_run_for(struct waiter *w, uint64_t ms);

/* Runs w's loop until cond holds; fails the cmocka test after ms. */
#define WAITER_RUN_UNTIL(w, cond, ms)                                                              \
    do {                                                                                           \
        waiter_begin((w), (ms));                                                                   \
        while (!(cond) && !(w)->expired)                                                           \
            uv_run((w)->timer.loop, UV_RUN_ONCE);                                                  \
        waiter_end(w);                                                                             \
        if (!(cond))                                                                               \
            fail_msg("timed out waiting for %s", #cond);                                           \
    } while (0)

#endif
