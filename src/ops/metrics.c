/*
 * metrics.c - the metrics registry of metrics.h.
 *
 * Families live in a singly linked list in registration order; each holds
 * its series in a typed array (buf.h) searched linearly (gpuop has tens
 * of series per family, and the array's limit bounds the worst case). A histogram series
 * keeps one non-cumulative count per bucket; rendering accumulates them
 * into the cumulative `le` buckets the format wants.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuop/buf.h"
#include "gpuop/error.h"
#include "gpuop/metrics.h"

struct series {
    char *values[GPUOP_METRICS_MAX_LABELS]; /* owned */
    double value;                           /* counter, gauge */
    uint64_t *buckets;                      /* histogram: nbuckets + 1 (+Inf), owned */
    double sum;
    uint64_t count;
};

/* The series array's first size; its limit is GPUOP_METRICS_MAX_SERIES. */
#define SERIES_FIRST 8

GPUOP_ARRAY(series_array, struct series);

struct gpuop_metric {
    enum gpuop_metric_type type;
    char *name, *help;
    int nlabels;
    char *labels[GPUOP_METRICS_MAX_LABELS];
    double bounds[GPUOP_METRICS_MAX_BUCKETS];
    int nbuckets;
    struct series_array series;
    struct gpuop_metric *next;
};

struct gpuop_metrics {
    struct gpuop_metric *first, *last;
};

int gpuop_metrics_new(struct gpuop_metrics **out)
{
    *out = calloc(1, sizeof(**out));
    return *out ? 0 : GPUOP_ENOMEM;
}

static void series_free(struct gpuop_metric *f, struct series *s)
{
    for (int i = 0; i < f->nlabels; i++)
        free(s->values[i]);
    free(s->buckets);
}

void gpuop_metric_clear(struct gpuop_metric *f)
{
    for (size_t i = 0; i < series_array_len(&f->series); i++)
        series_free(f, &series_array_items(&f->series)[i]);
    series_array_clear(&f->series);
}

static void family_free(struct gpuop_metric *f)
{
    gpuop_metric_clear(f);
    series_array_free(&f->series);
    for (int i = 0; i < f->nlabels; i++)
        free(f->labels[i]);
    free(f->name);
    free(f->help);
    free(f);
}

void gpuop_metrics_free(struct gpuop_metrics *m)
{
    if (!m)
        return;
    struct gpuop_metric *f = m->first;
    while (f) {
        struct gpuop_metric *n = f->next;
        family_free(f);
        f = n;
    }
    free(m);
}

static int get(struct gpuop_metric *f, const char *const *values, struct series **out);

static int valid_name(const char *s, int colon)
{
    if (!s || !*s)
        return 0;
    for (const char *p = s; *p; p++) {
        char c = *p;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                 (colon && c == ':') || (p != s && c >= '0' && c <= '9');
        if (!ok)
            return 0;
    }
    return 1;
}

struct gpuop_metric *gpuop_metrics_add(struct gpuop_metrics *m, const struct gpuop_metric_def *d)
{
    enum gpuop_metric_type type = d->type;
    const char *name = d->name, *help = d->help;
    const char *const *labels = d->labels;
    const double *buckets = d->buckets;
    int nlabels = d->nlabels, nbuckets = d->nbuckets;
    if (!valid_name(name, 1) || nlabels < 0 || nlabels > GPUOP_METRICS_MAX_LABELS ||
        (nlabels > 0 && !labels))
        return NULL;
    if (type == GPUOP_HISTOGRAM &&
        (nbuckets < 1 || nbuckets > GPUOP_METRICS_MAX_BUCKETS || !buckets))
        return NULL;
    for (struct gpuop_metric *f = m->first; f; f = f->next)
        if (strcmp(f->name, name) == 0)
            return NULL;
    for (int i = 0; i < nlabels; i++) {
        if (!valid_name(labels[i], 0) || strncmp(labels[i], "__", 2) == 0 ||
            (type == GPUOP_HISTOGRAM && strcmp(labels[i], "le") == 0))
            return NULL;
        for (int j = 0; j < i; j++)
            if (strcmp(labels[i], labels[j]) == 0)
                return NULL;
    }
    if (type == GPUOP_HISTOGRAM)
        for (int i = 0; i < nbuckets; i++)
            if (isnan(buckets[i]) || (i > 0 && !(buckets[i] > buckets[i - 1])))
                return NULL;

    struct gpuop_metric *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    f->type = type;
    series_array_init(&f->series, SERIES_FIRST, GPUOP_METRICS_MAX_SERIES);
    f->name = strdup(name);
    f->help = strdup(help ? help : "");
    int ok = f->name && f->help;
    for (int i = 0; i < nlabels && ok; i++) {
        f->labels[i] = strdup(labels[i]);
        f->nlabels = i + 1;
        ok = f->labels[i] != NULL;
    }
    if (!ok) {
        family_free(f);
        return NULL;
    }
    if (type == GPUOP_HISTOGRAM) {
        memcpy(f->bounds, buckets, sizeof(double) * (size_t)nbuckets);
        f->nbuckets = nbuckets;
    }
    struct series *s;
    if (nlabels == 0 && get(f, NULL, &s) < 0) {
        family_free(f);
        return NULL; /* a family without labels has its one series from the start */
    }
    if (m->last)
        m->last->next = f;
    else
        m->first = f;
    m->last = f;
    return f;
}

static struct series *find(const struct gpuop_metric *f, const char *const *values)
{
    struct series *s = series_array_items(&f->series);
    for (size_t i = 0; i < series_array_len(&f->series); i++) {
        int j = 0;
        while (j < f->nlabels && strcmp(s[i].values[j], values[j]) == 0)
            j++;
        if (j == f->nlabels)
            return &s[i];
    }
    return NULL;
}

/* The series for values, made when absent. */
static int get(struct gpuop_metric *f, const char *const *values, struct series **out)
{
    if (f->nlabels > 0 && !values)
        return GPUOP_EINVAL;
    for (int i = 0; i < f->nlabels; i++)
        if (!values[i])
            return GPUOP_EINVAL;
    struct series *s = find(f, values);
    if (s) {
        *out = s;
        return 0;
    }
    struct series n = {0};
    int ok = 1;
    for (int i = 0; i < f->nlabels && ok; i++)
        ok = (n.values[i] = strdup(values[i])) != NULL;
    if (ok && f->type == GPUOP_HISTOGRAM)
        ok = (n.buckets = calloc((size_t)f->nbuckets + 1, sizeof(uint64_t))) != NULL;
    int rc = ok ? series_array_push(&f->series, n) : GPUOP_ENOMEM; /* ETOOBIG at the limit */
    if (rc < 0) {
        series_free(f, &n);
        return rc;
    }
    *out = &series_array_items(&f->series)[series_array_len(&f->series) - 1];
    return 0;
}

int gpuop_metric_add(struct gpuop_metric *f, const char *const *values, double v)
{
    if (f->type == GPUOP_HISTOGRAM || isnan(v) || (f->type == GPUOP_COUNTER && v < 0))
        return GPUOP_EINVAL;
    struct series *s;
    int rc = get(f, values, &s);
    if (rc == 0)
        s->value += v;
    return rc;
}

int gpuop_metric_set(struct gpuop_metric *f, const char *const *values, double v)
{
    if (f->type == GPUOP_HISTOGRAM)
        return GPUOP_EINVAL;
    struct series *s;
    int rc = get(f, values, &s);
    if (rc == 0)
        s->value = v;
    return rc;
}

int gpuop_metric_observe(struct gpuop_metric *f, const char *const *values, double v)
{
    if (f->type != GPUOP_HISTOGRAM || isnan(v))
        return GPUOP_EINVAL;
    struct series *s;
    int rc = get(f, values, &s);
    if (rc < 0)
        return rc;
    int b = 0;
    while (b < f->nbuckets && v > f->bounds[b])
        b++;
    s->buckets[b]++;
    s->sum += v;
    s->count++;
    return 0;
}

double gpuop_metric_value(const struct gpuop_metric *f, const char *const *values)
{
    if (f->nlabels > 0 && !values)
        return 0;
    for (int i = 0; i < f->nlabels; i++)
        if (!values[i])
            return 0;
    const struct series *s = find(f, values);
    if (!s)
        return 0;
    return f->type == GPUOP_HISTOGRAM ? (double)s->count : s->value;
}

/* ---- rendering ---- */

void gpuop_metrics_escape_label(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\')
            fputs("\\\\", out);
        else if (*s == '"')
            fputs("\\\"", out);
        else if (*s == '\n')
            fputs("\\n", out);
        else
            fputc(*s, out);
    }
}

static void escape_help(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\')
            fputs("\\\\", out);
        else if (*s == '\n')
            fputs("\\n", out);
        else
            fputc(*s, out);
    }
}

static void put_value(FILE *out, double v)
{
    if (isnan(v))
        fputs("NaN", out);
    else if (isinf(v))
        fputs(v > 0 ? "+Inf" : "-Inf", out);
    else if (v == floor(v) && fabs(v) < 1e15)
        fprintf(out, "%.0f", v);
    else {
        char buf[32];
        for (int prec = 15; prec <= 17; prec++) { /* shortest that reads back the same */
            snprintf(buf, sizeof(buf), "%.*g", prec, v);
            if (strtod(buf, NULL) == v)
                break;
        }
        fputs(buf, out);
    }
}

/* {a="x",b="y"[,le="..."]}; nothing when there is no label at all. */
static void put_labels(FILE *out, const struct gpuop_metric *f, const struct series *s,
                       const double *le)
{
    if (f->nlabels == 0 && !le)
        return;
    fputc('{', out);
    for (int i = 0; i < f->nlabels; i++) {
        fprintf(out, "%s%s=\"", i ? "," : "", f->labels[i]);
        gpuop_metrics_escape_label(out, s->values[i]);
        fputc('"', out);
    }
    if (le) {
        fprintf(out, "%sle=\"", f->nlabels ? "," : "");
        put_value(out, *le);
        fputc('"', out);
    }
    fputc('}', out);
}

int gpuop_metrics_render(const struct gpuop_metrics *m, FILE *out)
{
    static const char *const types[] = {"counter", "gauge", "histogram"};
    for (const struct gpuop_metric *f = m->first; f; f = f->next) {
        fprintf(out, "# HELP %s ", f->name);
        escape_help(out, f->help);
        fprintf(out, "\n# TYPE %s %s\n", f->name, types[f->type]);
        for (size_t i = 0; i < series_array_len(&f->series); i++) {
            const struct series *s = &series_array_items(&f->series)[i];
            if (f->type != GPUOP_HISTOGRAM) {
                fputs(f->name, out);
                put_labels(out, f, s, NULL);
                fputc(' ', out);
                put_value(out, s->value);
                fputc('\n', out);
                continue;
            }
            uint64_t acc = 0;
            for (int b = 0; b <= f->nbuckets; b++) {
                double le = b < f->nbuckets ? f->bounds[b] : INFINITY;
                acc += s->buckets[b];
                fprintf(out, "%s_bucket", f->name);
                put_labels(out, f, s, &le);
                fprintf(out, " %llu\n", (unsigned long long)acc);
            }
            fprintf(out, "%s_sum", f->name);
            put_labels(out, f, s, NULL);
            fputc(' ', out);
            put_value(out, s->sum);
            fprintf(out, "\n%s_count", f->name);
            put_labels(out, f, s, NULL);
            fprintf(out, " %llu\n", (unsigned long long)s->count);
        }
    }
    return ferror(out) ? GPUOP_EIO : 0;
}
