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
 * Then what the records cost in memory after a rollout: every pod
 * appears Pending, then turns Running, in the lab's order (every ADDED,
 * then every Running, each in random order), RECONCILE_EVENTS events a
 * reconcile; a reconcile judges their nodes, lays out the view and builds
 * and prints the status from it (the short-lived heap blocks the
 * controller makes between judgements). After the last one and a trim,
 * the resident anonymous memory and the live heap bytes are read with the
 * records and again once they are freed (and trimmed): the difference is
 * what the records hold, the heap's holes they pin included.
 *
 * Build and run from the repository root (after building gpuopcore in build/):
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude test/bench/bench_analysis.c \
 *      build/libgpuopcore.a $(pkg-config --libs jansson libcurl yaml-0.1 libuv) -lm \
 *      -o /tmp/bench_analysis && /tmp/bench_analysis 5000
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuop/analysis.h"
#include "gpuop/status.h"
#include "gpuop/trim.h"
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

/* Pod events judged by one reconcile of the rollout (a 250 ms gap at the
 * lab's 500 events a second). */
#define RECONCILE_EVENTS 125

int main(int argc, char **argv)
{
    gpuop_trim_tune(); /* the allocator's thresholds as gpuop run has them */
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

/* RssAnon of this process (KiB), from /proc/self/status; -1 unread. */
static long rss_anon_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[128];
    long kib = -1;
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "RssAnon: %ld", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib;
}

/* Resident anonymous KiB and live heap bytes, after a trim. */
struct mem_at {
    long anon_kib;
    size_t heap;
};

static struct mem_at mem_now(void)
{
    malloc_trim(0);
    struct mallinfo2 mi = mallinfo2();
    return (struct mem_at){rss_anon_kib(), mi.uordblks + mi.hblkhd}; /* mmapped blocks too */
}

/* One reconcile of the rollout: the nodes of events ev[0..k) judged (the
 * pods present: state[] above 0), the view laid out, the status built
 * and printed, all freed but the records. 0 or negative. */
static int mem_reconcile(struct gpuop_records *rec, const struct gpuop_policy *pol,
                         struct gpuop_node *nodes, struct gpuop_pod *pods, const size_t *pods_of,
                         const unsigned char *state, const size_t *ev, size_t k)
{
    for (size_t e = 0; e < k; e++) {
        size_t i = ev[e];
        const struct gpuop_pod *mine[GPUOP_OPERAND_MAX];
        size_t m = 0;
        for (size_t p = pods_of[i]; p < pods_of[i + 1]; p++)
            if (state[p])
                mine[m++] = &pods[p];
        int rc = gpuop_records_judge(rec, nodes[i].name, &nodes[i], mine, m, 0);
        if (rc < 0)
            return rc;
    }
    struct gpuop_findings *view;
    int rc = gpuop_records_view(rec, NULL, 0, 0, &view);
    if (rc < 0)
        return rc;
    json_t *st = gpuop_status_build(pol, view, NULL, NULL, 0);
    char *doc = st ? json_dumps(st, JSON_COMPACT) : NULL;
    rc = doc ? 0 : -1;
    free(doc);
    json_decref(st);
    return rc;
}

/* The records' memory after a rollout of the n nodes' pods (see the top
 * comment): printed. 0 or negative. */
static int bench_memory(const struct gpuop_policy *pol, struct gpuop_node *nodes, size_t n,
                        struct gpuop_pod *pods, const size_t *pods_of,
                        const struct gpuop_ds *const *dp, size_t nds)
{
    size_t npods = pods_of[n];
    unsigned char *state = calloc(npods ? npods : 1, 1); /* 0 absent, 1 Pending, 2 Running */
    size_t *order = malloc((npods ? npods : 1) * sizeof(*order));
    size_t *ev = malloc(RECONCILE_EVENTS * sizeof(*ev));
    struct gpuop_records *rec = NULL;
    int rc = state && order && ev ? gpuop_records_new(&rec) : -1;
    if (rc == 0 && gpuop_records_setup(rec, pol, dp, nds, NULL, NULL) < 0)
        rc = -1;
    size_t *node_of = malloc((npods ? npods : 1) * sizeof(*node_of));
    for (size_t i = 0; node_of && i < n; i++)
        for (size_t p = pods_of[i]; p < pods_of[i + 1]; p++)
            node_of[p] = i;
    for (size_t i = 0; rc == 0 && i < n; i += RECONCILE_EVENTS) { /* every node, no pod */
        size_t k = 0;
        for (; k < RECONCILE_EVENTS && i + k < n; k++)
            ev[k] = i + k;
        rc = mem_reconcile(rec, pol, nodes, pods, pods_of, state, ev, k);
    }
    struct mem_at start = mem_now();
    size_t peak = start.heap; /* live heap after a reconcile, the largest */
    unsigned long r = 4242;
    for (int phase = 1; rc == 0 && node_of && phase <= 2; phase++) {
        for (size_t p = 0; p < npods; p++)
            order[p] = p;
        for (size_t p = npods; p > 1; p--) { /* random order */
            r = r * 6364136223846793005UL + 1442695040888963407UL;
            size_t q = (size_t)(r >> 33) % p, t = order[p - 1];
            order[p - 1] = order[q], order[q] = t;
        }
        for (size_t at = 0; rc == 0 && at < npods; at += RECONCILE_EVENTS) {
            size_t k = 0;
            for (; k < RECONCILE_EVENTS && at + k < npods; k++) {
                struct gpuop_pod *pd = &pods[order[at + k]];
                state[order[at + k]] = (unsigned char)phase;
                pd->phase = phase == 2 ? GPUOP_PHASE_RUNNING : GPUOP_PHASE_PENDING;
                pd->ready_since = phase == 2 ? GPUOP_TIME_UNREADABLE : 0;
                ev[k] = node_of[order[at + k]];
            }
            rc = mem_reconcile(rec, pol, nodes, pods, pods_of, state, ev, k);
            struct mallinfo2 mi = mallinfo2();
            size_t heap = mi.uordblks + mi.hblkhd;
            if (heap > peak)
                peak = heap;
        }
    }
    struct mem_at with = mem_now();
    size_t nrec = rec ? gpuop_records_count(rec) : 0;
    gpuop_records_free(rec);
    struct mem_at without = mem_now();
    if (rc == 0)
        printf(
            "records memory after a rollout of %zu pods, %zu records: %ld KiB resident "
            "anonymous (%ld before the rollout), %zu KiB live heap (%zu KiB at most during it)\n",
            npods, nrec, with.anon_kib - without.anon_kib, start.anon_kib - without.anon_kib,
            (with.heap - without.heap) / 1024, (peak - without.heap) / 1024);
    free(node_of);
    free(state);
    free(order);
    free(ev);
    return rc;
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
            /* named as the DaemonSet controller names them: its name and
               five characters */
            snprintf(buf, sizeof(buf), "%s-%05zx", gpuop_operand_get(o)->ds_name, i & 0xfffff);
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
    if (bench_memory(&pol, nodes, n, pods, pods_of, dp, nds) < 0)
        return 2;

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
