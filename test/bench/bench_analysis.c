/*
 * bench_analysis.c - one analysis pass at scale (not a ctest: no timed
 * tests). Generates N GPU nodes (default 5,000) with every deploy label
 * "true" and a Running pod of each operand enabled by default (the sample
 * policy's six: 30,000 pods; MIG Manager is off), with
 * a sprinkle of broken nodes (missing toolkit, pending driver, tainted), then
 * times gpuop_analyze and gpuop_status_build, and one node's record
 * judged again (gpuop_records_judge of one node whose driver pod turns
 * Pending, or back to Running, so its findings come and go), averaged
 * over UPDATES random nodes, with the slowest; and gpuop_records_view,
 * the one pass over the records a reader of the set costs. Several sizes in one run: bench_analysis
 * 1000 5000 20000.
 *
 * Build and run from the repository root (after building gpuopcore in build/):
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude test/bench/bench_analysis.c \
 *      build/libgpuopcore.a $(pkg-config --libs jansson libcurl yaml-0.1 libuv) -lm \
 *      -o /tmp/bench_analysis && /tmp/bench_analysis 5000
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuop/analysis.h"
#include "gpuop/status.h"
#include "nodepods_int.h"

static double ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* CPU time of this thread (ms): on a loaded machine the wall clock also
 * counts the time others ran. */
static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Incremental updates timed per size. */
#define UPDATES 2000

static int bench(size_t n);

int main(int argc, char **argv)
{
    int rc = 0;
    for (int i = 1; i < argc && rc == 0; i++)
        rc = bench(strtoul(argv[i], NULL, 10));
    return argc > 1 ? rc : bench(5000);
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const struct gpuop_node *const *)a)->name,
                  (*(const struct gpuop_node *const *)b)->name);
}

static int index_pods_of(void *arg, const char *node, const struct gpuop_pod **buf, size_t max,
                         size_t *n)
{
    return gpuop_nodepods_get(arg, node, buf, max, n);
}

/* The controller's full pass: the nodes in name order (the caches lend
 * them so), each node's pods from the caches' index (nodepods.c), built
 * here once as the caches keep it; compared with the array pass ref. */
static void bench_by_node(const struct gpuop_policy *pol, const struct gpuop_node **np, size_t n,
                          const struct gpuop_ds *const *dp, size_t nds, const struct gpuop_pod **pp,
                          size_t npods, const struct gpuop_findings *ref)
{
    struct gpuop_nodepods ix;
    gpuop_nodepods_init(&ix);
    for (size_t i = 0; i < npods; i++)
        if (gpuop_nodepods_add(&ix, pp[i]) < 0)
            return;
    const struct gpuop_node **sorted = malloc(n * sizeof(*sorted));
    memcpy(sorted, np, n * sizeof(*sorted));
    qsort(sorted, n, sizeof(*sorted), by_name);
    struct gpuop_findings f;
    double best = 1e9, best_cpu = 1e9;
    bool same = false;
    for (int round = 0; round < 5; round++) {
        double t = ms(), c0 = cpu_ms();
        if (gpuop_analyze(&(struct gpuop_analysis_in){.policy = pol,
                                                      .nodes = sorted,
                                                      .nnodes = n,
                                                      .ds = dp,
                                                      .nds = nds,
                                                      .pods_of = index_pods_of,
                                                      .pods_arg = &ix},
                          &f) < 0)
            break;
        c0 = cpu_ms() - c0;
        t = ms() - t;
        best = t < best ? t : best;
        best_cpu = c0 < best_cpu ? c0 : best_cpu;
        char why[256];
        same = gpuop_findings_same(&f, ref, why, sizeof(why));
        gpuop_findings_free(&f);
    }
    printf("by node (sorted nodes, the caches' pod index): %.2f ms wall, %.2f ms CPU (best of 5), "
           "the same findings: %s\n",
           best, best_cpu, same ? "yes" : "NO");
    free(sorted);
    gpuop_nodepods_free(&ix);
}

static int bench(size_t n)
{
    int nops = gpuop_operand_count();
    struct gpuop_policy pol;
    memset(&pol, 0, sizeof(pol));
    for (int o = 0; o < nops; o++)
        pol.operands[o].enabled = gpuop_operand_get(o)->enabled; /* as the sample policy */

    struct gpuop_node *nodes = calloc(n, sizeof(*nodes));
    const struct gpuop_node **np = calloc(n, sizeof(*np));
    struct gpuop_pod *pods = calloc(n * nops, sizeof(*pods));
    const struct gpuop_pod **pp = calloc(n * nops, sizeof(*pp));
    size_t *pods_of = calloc(n + 1, sizeof(*pods_of)); /* node i's pods: pp[pods_of[i] ..] */
    struct gpuop_ds ds[GPUOP_OPERAND_MAX];
    const struct gpuop_ds *dp[GPUOP_OPERAND_MAX];
    size_t npods = 0, nds = 0;
    char buf[64];

    memset(ds, 0, sizeof(ds));
    for (int o = 0; o < nops; o++) {
        if (!pol.operands[o].enabled)
            continue; /* no DaemonSet */
        ds[nds].name = strdup(gpuop_operand_get(o)->ds_name);
        ds[nds].operand = o;
        dp[nds] = &ds[nds];
        nds++;
    }
    for (size_t i = 0; i < n; i++) {
        /* shuffled names so the sort has work to do */
        snprintf(buf, sizeof(buf), "gpu-node-%05zu", (i * 7919) % n);
        nodes[i].name = strdup(buf);
        nodes[i].gpu = true;
        for (int o = 0; o < nops; o++)
            if (pol.operands[o].enabled)
                nodes[i].deploy[o] = GPUOP_LABEL_TRUE;
        if (i % 97 == 0) { /* tainted */
            nodes[i].taints = calloc(1, sizeof(*nodes[i].taints));
            nodes[i].taints[0].key = strdup("dedicated");
            nodes[i].taints[0].effect = strdup("NoSchedule");
            nodes[i].ntaints = 1;
        }
        pods_of[i] = npods;
        for (int o = 0; o < nops; o++) {
            if (!pol.operands[o].enabled)
                continue;
            if (i % 101 == 0 && o == 1)
                continue; /* toolkit missing: device-plugin without toolkit */
            struct gpuop_pod *p = &pods[npods];
            snprintf(buf, sizeof(buf), "%s-%zu", gpuop_operand_get(o)->name, i);
            p->name = strdup(buf);
            p->node = strdup(nodes[i].name);
            p->bound = true;
            p->operand = o;
            p->phase = i % 89 == 0 && o == 0 ? GPUOP_PHASE_PENDING : GPUOP_PHASE_RUNNING;
            p->ready_since = i % 89 == 0 && o == 0 ? 0 : GPUOP_TIME_UNREADABLE;
            pp[npods] = p;
            npods++;
        }
        np[i] = &nodes[i];
    }
    pods_of[n] = npods;

    struct gpuop_analysis_in in = {
        .policy = &pol, .nodes = np, .nnodes = n, .ds = dp, .nds = nds, .pods = pp, .npods = npods};
    struct gpuop_findings f1, f2;
    double best = 1e9, best_cpu = 1e9, t, c0;
    for (int round = 0; round < 5; round++) {
        t = ms();
        c0 = cpu_ms();
        if (gpuop_analyze(&in, &f1) < 0)
            return 2;
        c0 = cpu_ms() - c0;
        t = ms() - t;
        if (t < best)
            best = t;
        if (c0 < best_cpu)
            best_cpu = c0;
        if (round < 4)
            gpuop_findings_free(&f1);
    }
    printf("nodes %zu, pods %zu: analyze %.2f ms wall, %.2f ms CPU (best of 5), %zu findings on "
           "%zu nodes\n",
           n, npods, best, best_cpu, f1.nitems, f1.finding_nodes);

    bench_by_node(&pol, np, n, dp, nds, pp, npods, &f1);

    t = ms();
    json_t *st = gpuop_status_build(&pol, &f1, NULL, NULL, 0);
    printf("status_build %.2f ms\n", ms() - t);
    pp[5] = NULL; /* node 1 loses its driver pod */
    gpuop_analyze(&in, &f2);

    /* one node again: its first pod (the driver) flips Pending <-> Running */
    pp[5] = &pods[5];
    gpuop_findings_free(&f2);
    struct gpuop_records *rec = NULL;
    if (gpuop_records_new(&rec) < 0 || gpuop_records_setup(rec, &pol, dp, nds, NULL, NULL) < 0)
        return 2;
    for (size_t i = 0; i < n; i++)
        if (gpuop_records_judge(rec, nodes[i].name, &nodes[i], pp + pods_of[i],
                                pods_of[i + 1] - pods_of[i], 0) < 0)
            return 2;
    double sum = 0, worst = 0, sum_cpu = 0;
    unsigned long r = 12345;
    for (int u = 0; u < UPDATES; u++) {
        r = r * 6364136223846793005UL + 1442695040888963407UL;
        size_t i = (size_t)(r >> 33) % n;
        struct gpuop_pod *p = &pods[pods_of[i]];
        bool up = p->phase != GPUOP_PHASE_RUNNING;
        p->phase = up ? GPUOP_PHASE_RUNNING : GPUOP_PHASE_PENDING;
        p->ready_since = up ? GPUOP_TIME_UNREADABLE : 0;
        t = ms();
        c0 = cpu_ms();
        if (gpuop_records_judge(rec, nodes[i].name, &nodes[i], pp + pods_of[i],
                                pods_of[i + 1] - pods_of[i], 0) < 0)
            return 2;
        sum_cpu += cpu_ms() - c0;
        t = ms() - t;
        sum += t;
        if (t > worst)
            worst = t;
    }
    struct gpuop_findings *view = NULL;
    t = ms();
    if (gpuop_records_view(rec, NULL, 0, 0, &view) < 0)
        return 2;
    printf("records_view %.4f ms\n", ms() - t);
    printf("records_judge %.4f ms wall, %.4f ms CPU mean, %.4f ms wall slowest (%d judgements, "
           "one node each), %zu findings after\n",
           sum / UPDATES, sum_cpu / UPDATES, worst, UPDATES, view->nitems);
    gpuop_records_free(rec);

    json_decref(st);
    gpuop_findings_free(&f1);
    /* built by hand, one allocation per string: freed by hand */
    for (size_t i = 0; i < n; i++) {
        free(nodes[i].name);
        for (size_t k = 0; k < nodes[i].ntaints; k++) {
            free(nodes[i].taints[k].key);
            free(nodes[i].taints[k].effect);
        }
        free(nodes[i].taints);
    }
    for (size_t i = 0; i < npods; i++) {
        free(pods[i].name);
        free(pods[i].node);
    }
    for (int o = 0; o < nops; o++)
        gpuop_ds_free(&ds[o]);
    free(nodes);
    free(np);
    free(pods);
    free(pp);
    free(pods_of);
    return 0;
}
