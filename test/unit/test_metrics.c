/*
 * test_metrics.c - the metrics registry and its Prometheus text output:
 * HELP/TYPE lines, label escaping, counters that refuse to go down,
 * cumulative histogram buckets with +Inf, _sum and _count, the series cap,
 * and registration errors.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpuop/error.h"
#include "gpuop/metrics.h"

/* Renders m into a new string. */
static char *render(struct gpuop_metrics *m)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    assert_int_equal(gpuop_metrics_render(m, f), 0);
    fclose(f);
    return text;
}

static void assert_has(const char *text, const char *want)
{
    if (!strstr(text, want))
        fail_msg("missing line: %s\n--- in ---\n%s", want, text);
}

static void test_counter_gauge_text(void **state)
{
    struct gpuop_metrics *m;
    assert_int_equal(gpuop_metrics_new(&m), 0);
    const char *ln[] = {"verb", "code"};
    struct gpuop_metric *c =
        gpuop_metrics_add(m, &(struct gpuop_metric_def){GPUOP_COUNTER, "x_requests_total",
                                                        "Requests.", 2, ln, NULL, 0});
    struct gpuop_metric *g = gpuop_metrics_add(
        m, &(struct gpuop_metric_def){GPUOP_GAUGE, "x_nodes", "Nodes\nwith a \\ in help.", 0, NULL,
                                      NULL, 0});
    assert_non_null(c);
    assert_non_null(g);
    const char *v1[] = {"GET", "200"}, *v2[] = {"PUT", "409"};
    assert_int_equal(gpuop_metric_add(c, v1, 1), 0);
    assert_int_equal(gpuop_metric_add(c, v1, 2), 0);
    assert_int_equal(gpuop_metric_add(c, v2, 1), 0);
    assert_int_equal(gpuop_metric_add(c, v1, -1), GPUOP_EINVAL); /* counters only go up */
    assert_int_equal(gpuop_metric_observe(c, v1, 1), GPUOP_EINVAL);
    assert_int_equal(gpuop_metric_set(g, NULL, -2.5), 0);
    assert_true(gpuop_metric_value(c, v1) == 3);
    assert_true(gpuop_metric_value(c, v2) == 1);

    char *t = render(m);
    assert_has(t, "# HELP x_requests_total Requests.\n# TYPE x_requests_total counter\n");
    assert_has(t, "x_requests_total{verb=\"GET\",code=\"200\"} 3\n");
    assert_has(t, "x_requests_total{verb=\"PUT\",code=\"409\"} 1\n");
    assert_has(t,
               "# HELP x_nodes Nodes\\nwith a \\\\ in help.\n# TYPE x_nodes gauge\nx_nodes -2.5\n");
    /* registration order */
    assert_true(strstr(t, "x_requests_total") < strstr(t, "x_nodes"));
    free(t);
    gpuop_metrics_free(m);
}

static void test_label_escaping(void **state)
{
    struct gpuop_metrics *m;
    assert_int_equal(gpuop_metrics_new(&m), 0);
    const char *ln[] = {"policy"};
    struct gpuop_metric *g =
        gpuop_metrics_add(m, &(struct gpuop_metric_def){GPUOP_GAUGE, "x_p", "P.", 1, ln, NULL, 0});
    const char *v[] = {"a\"b\\c\nd"};
    assert_int_equal(gpuop_metric_set(g, v, 1), 0);
    char *t = render(m);
    assert_has(t, "x_p{policy=\"a\\\"b\\\\c\\nd\"} 1\n");
    free(t);
    /* clear drops series */
    gpuop_metric_clear(g);
    t = render(m);
    assert_null(strstr(t, "x_p{"));
    free(t);
    gpuop_metrics_free(m);
}

static void test_histogram(void **state)
{
    struct gpuop_metrics *m;
    assert_int_equal(gpuop_metrics_new(&m), 0);
    const double b[] = {0.125, 1, 10};
    struct gpuop_metric *h = gpuop_metrics_add(
        m, &(struct gpuop_metric_def){GPUOP_HISTOGRAM, "x_seconds", "Durations.", 0, NULL, b, 3});
    assert_non_null(h);
    /* a label-less family renders from the start, with zero counts */
    char *t = render(m);
    assert_has(t, "x_seconds_bucket{le=\"+Inf\"} 0\nx_seconds_sum 0\nx_seconds_count 0\n");
    free(t);
    assert_int_equal(gpuop_metric_observe(h, NULL, 0.0625), 0);
    assert_int_equal(gpuop_metric_observe(h, NULL, 0.125), 0); /* le is inclusive */
    assert_int_equal(gpuop_metric_observe(h, NULL, 5), 0);
    assert_int_equal(gpuop_metric_observe(h, NULL, 50), 0);
    assert_int_equal(gpuop_metric_set(h, NULL, 1), GPUOP_EINVAL);
    t = render(m);
    assert_has(t, "# TYPE x_seconds histogram\n");
    assert_has(t, "x_seconds_bucket{le=\"0.125\"} 2\n");
    assert_has(t, "x_seconds_bucket{le=\"1\"} 2\n");
    assert_has(t, "x_seconds_bucket{le=\"10\"} 3\n");
    assert_has(t, "x_seconds_bucket{le=\"+Inf\"} 4\n");
    assert_has(t, "x_seconds_sum 55.1875\n");
    assert_has(t, "x_seconds_count 4\n");
    free(t);

    const char *ln[] = {"op"};
    struct gpuop_metric *h2 = gpuop_metrics_add(
        m, &(struct gpuop_metric_def){GPUOP_HISTOGRAM, "y_seconds", "Y.", 1, ln, b, 3});
    const char *v[] = {"apply"};
    assert_int_equal(gpuop_metric_observe(h2, v, 2), 0);
    t = render(m);
    assert_has(t, "y_seconds_bucket{op=\"apply\",le=\"1\"} 0\n");
    assert_has(t, "y_seconds_bucket{op=\"apply\",le=\"10\"} 1\n");
    assert_has(t, "y_seconds_count{op=\"apply\"} 1\n");
    free(t);
    gpuop_metrics_free(m);
}

static void test_registration_errors(void **state)
{
    struct gpuop_metrics *m;
    assert_int_equal(gpuop_metrics_new(&m), 0);
    const char *bad[] = {"1abc"}, *dup[] = {"a", "a"}, *le[] = {"le"}, *rsv[] = {"__x"};
    const double up[] = {1, 2}, down[] = {2, 1};
    assert_null(gpuop_metrics_add(
        m, &(struct gpuop_metric_def){GPUOP_GAUGE, "9bad", "", 0, NULL, NULL, 0}));
    assert_null(gpuop_metrics_add(
        m, &(struct gpuop_metric_def){GPUOP_GAUGE, "bad-name", "", 0, NULL, NULL, 0}));
    assert_null(
        gpuop_metrics_add(m, &(struct gpuop_metric_def){GPUOP_GAUGE, "x", "", 1, bad, NULL, 0}));
    assert_null(
        gpuop_metrics_add(m, &(struct gpuop_metric_def){GPUOP_GAUGE, "x", "", 2, dup, NULL, 0}));
    assert_null(
        gpuop_metrics_add(m, &(struct gpuop_metric_def){GPUOP_GAUGE, "x", "", 1, rsv, NULL, 0}));
    assert_null(
        gpuop_metrics_add(m, &(struct gpuop_metric_def){GPUOP_HISTOGRAM, "x", "", 1, le, up, 2}));
    assert_null(gpuop_metrics_add(
        m, &(struct gpuop_metric_def){GPUOP_HISTOGRAM, "x", "", 0, NULL, down, 2}));
    assert_null(
        gpuop_metrics_add(m, &(struct gpuop_metric_def){GPUOP_HISTOGRAM, "x", "", 0, NULL, up, 0}));
    assert_non_null(
        gpuop_metrics_add(m, &(struct gpuop_metric_def){GPUOP_GAUGE, "x", "", 0, NULL, NULL, 0}));
    assert_null(gpuop_metrics_add(
        m, &(struct gpuop_metric_def){GPUOP_COUNTER, "x", "", 0, NULL, NULL, 0})); /* duplicate */
    gpuop_metrics_free(m);
}

static void test_series_cap(void **state)
{
    struct gpuop_metrics *m;
    assert_int_equal(gpuop_metrics_new(&m), 0);
    const char *ln[] = {"k"};
    struct gpuop_metric *c = gpuop_metrics_add(
        m, &(struct gpuop_metric_def){GPUOP_COUNTER, "x_total", "", 1, ln, NULL, 0});
    char buf[32];
    const char *v[] = {buf};
    for (int i = 0; i < GPUOP_METRICS_MAX_SERIES; i++) {
        snprintf(buf, sizeof(buf), "v%d", i);
        assert_int_equal(gpuop_metric_add(c, v, 1), 0);
    }
    snprintf(buf, sizeof(buf), "one-too-many");
    assert_int_equal(gpuop_metric_add(c, v, 1), GPUOP_ETOOBIG);
    snprintf(buf, sizeof(buf), "v7"); /* existing series still count */
    assert_int_equal(gpuop_metric_add(c, v, 1), 0);
    assert_true(gpuop_metric_value(c, v) == 2);
    const char *nul[] = {NULL};
    assert_int_equal(gpuop_metric_add(c, nul, 1), GPUOP_EINVAL);
    assert_int_equal(gpuop_metric_add(c, NULL, 1), GPUOP_EINVAL);
    gpuop_metrics_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counter_gauge_text), cmocka_unit_test(test_label_escaping),
        cmocka_unit_test(test_histogram),          cmocka_unit_test(test_registration_errors),
        cmocka_unit_test(test_series_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
