/*
 * metrics.h - a small metrics registry rendered in the Prometheus text
 * exposition format 0.0.4.
 *
 * A registry holds families (counter, gauge, histogram), each with a fixed
 * list of label names; a series is one combination of label values, made
 * on first use. Label values are copied and escaped on output (\\, \", \n);
 * HELP text is escaped too (\\, \n). Every family has a cap on its number
 * of series (GPUOP_METRICS_MAX_SERIES): updates for a new series beyond it
 * fail with GPUOP_ETOOBIG instead of growing memory without bound.
 *
 * Counters only go up through gpuop_metric_add; gpuop_metric_set is allowed
 * on counters too, for values collected from elsewhere at scrape time
 * (an informer's own counters). One thread: no locking.
 */
#ifndef GPUOP_METRICS_H
#define GPUOP_METRICS_H

#include <stddef.h>
#include <stdio.h>

#define GPUOP_METRICS_MAX_LABELS  4
#define GPUOP_METRICS_MAX_BUCKETS 32
#define GPUOP_METRICS_MAX_SERIES  4096

enum gpuop_metric_type { GPUOP_COUNTER, GPUOP_GAUGE, GPUOP_HISTOGRAM };

struct gpuop_metrics;
struct gpuop_metric;

/* *out is new; free with gpuop_metrics_free. Returns 0 or GPUOP_ENOMEM. */
int gpuop_metrics_new(struct gpuop_metrics **out);
void gpuop_metrics_free(struct gpuop_metrics *m);

/* A family's description: labels is an array of nlabels label names (at
 * most GPUOP_METRICS_MAX_LABELS). For a histogram, buckets are the upper
 * bounds, strictly increasing, at most GPUOP_METRICS_MAX_BUCKETS (+Inf is
 * implied). */
struct gpuop_metric_def {
    enum gpuop_metric_type type;
    const char *name, *help;
    int nlabels;
    const char *const *labels;
    const double *buckets;
    int nbuckets;
};

/* Registers the family d describes (borrowed: its name, help and labels
 * are copied). Returns a borrowed handle owned by the registry, or NULL
 * (bad name, duplicate, out of memory). */
struct gpuop_metric *gpuop_metrics_add(struct gpuop_metrics *m, const struct gpuop_metric_def *d);

/* values: nlabels label values (borrowed, copied when a series is made;
 * may be NULL when the family has no labels). Return 0, GPUOP_EINVAL (wrong
 * type, negative counter increment, NULL value), GPUOP_ETOOBIG (series
 * cap) or GPUOP_ENOMEM. */
int gpuop_metric_add(struct gpuop_metric *f, const char *const *values, double v);
int gpuop_metric_set(struct gpuop_metric *f, const char *const *values, double v);
int gpuop_metric_observe(struct gpuop_metric *f, const char *const *values, double v);

/* The current value of a counter or gauge series, or the count of a
 * histogram series; 0 when the series does not exist. For tests. */
double gpuop_metric_value(const struct gpuop_metric *f, const char *const *values);

/* Drops every series of the family (for gauges rebuilt from a snapshot). */
void gpuop_metric_clear(struct gpuop_metric *f);

/* Writes every family, in registration order, series in creation order.
 * Returns 0 or GPUOP_EIO. */
int gpuop_metrics_render(const struct gpuop_metrics *m, FILE *out);

/* Writes s escaped as a label value (\\ \" \n) to out. */
void gpuop_metrics_escape_label(FILE *out, const char *s);

#endif
