/*
 * report.c - `gpuop check` output (see report.h).
 *
 * Text is built for a terminal a person reads: a matrix first (one symbol
 * per node and operand, so a broken chain shows as a column of M or V), the
 * findings with their messages under it, host-provided operands as
 * information, and one summary line. Large clusters fold: identical rows
 * become one row with a count, and many findings are grouped by operand and
 * reason with example nodes. JSON and YAML reuse the status builder so the
 * two outputs never disagree on shape.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuop/clock.h"
#include "gpuop/report.h"
#include "gpuop/status.h"
#include "gpuop/yaml.h"

#define NAME_COL_MAX   48
#define EXAMPLES       3
#define TAINTS_COL_MAX 80 /* a longer TAINTS cell ends in "..." */
#define POOL_NAMES_MAX 10 /* nodes named a driver pool in text; the rest counted */

static const struct {
    const char *sym, *legend, *color;
} cells[GPUOP_CELL_COUNT] = {
    [GPUOP_CELL_NA] = {"-", "not applicable", ""},
    [GPUOP_CELL_RUNNING] = {"+", "running", "\033[32m"},
    [GPUOP_CELL_MISSING] = {"M", "missing", "\033[31m"},
    [GPUOP_CELL_NOT_SCHEDULED] = {"N", "not scheduled (label not true, false, pre-installed)",
                                  "\033[33m"},
    [GPUOP_CELL_HOST_PROVIDED] = {"h", "host-provided (label \"false\" or \"pre-installed\")",
                                  "\033[36m"},
    [GPUOP_CELL_DISABLED] = {"d", "disabled in the policy (host-provided)", "\033[36m"},
    [GPUOP_CELL_UNEXPECTED] = {"U", "running but not expected", "\033[35m"},
    [GPUOP_CELL_VIOLATION] = {"V", "running (or advertising GPUs) without a prerequisite",
                              "\033[1;31m"},
    [GPUOP_CELL_HELD] = {"H", "held by a prerequisite's label (ordering: enforce)", "\033[33m"},
};

#define RESET "\033[0m"

const char *gpuop_report_symbol(int cell)
{
    return cell >= 0 && cell < GPUOP_CELL_COUNT ? cells[cell].sym : "?";
}

const char *gpuop_report_legend(int cell)
{
    return cell >= 0 && cell < GPUOP_CELL_COUNT ? cells[cell].legend : "";
}

int gpuop_report_exit_code(const struct gpuop_findings *f)
{
    return !f || f->nitems > 0 || f->gpu_nodes == 0 ? 1 : 0;
}

static bool shown(const struct gpuop_report_opts *o, const char *name)
{
    return !o->node_filter || !*o->node_filter || strstr(name, o->node_filter);
}

/* ---- wide columns ---- */

struct wide {
    char pods[24];
    char taints[TAINTS_COL_MAX + 1];
};

/* The index of node `name` in f->nodes (sorted by name), or -1. */
static long node_index(const struct gpuop_findings *f, const char *name)
{
    size_t lo = 0, hi = f->nnodes;
    while (name && lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(f->nodes[mid].name, name);
        if (!c)
            return (long)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* PODS and TAINTS of every node of f (new array, f->nnodes entries), or
 * NULL on out-of-memory. */
static struct wide *wide_columns(const struct gpuop_findings *f, const struct gpuop_report_opts *o)
{
    struct wide *w = calloc(f->nnodes ? f->nnodes : 1, sizeof(*w));
    size_t *count = calloc(2 * (f->nnodes ? f->nnodes : 1), sizeof(*count));
    if (!w || !count) {
        free(w);
        free(count);
        return NULL;
    }
    for (size_t i = 0; i < o->npods; i++) {
        const struct gpuop_pod *p = o->pods ? o->pods[i] : NULL;
        long ni = p && p->operand >= 0 ? node_index(f, p->node) : -1;
        if (ni < 0)
            continue;
        count[2 * ni]++;
        if (gpuop_pod_running(p))
            count[2 * ni + 1]++;
    }
    for (size_t i = 0; i < f->nnodes; i++) {
        snprintf(w[i].pods, sizeof(w[i].pods), "%zu/%zu", count[2 * i + 1], count[2 * i]);
        snprintf(w[i].taints, sizeof(w[i].taints), "<none>");
    }
    for (size_t i = 0; i < o->nnodes; i++) {
        const struct gpuop_node *n = o->nodes ? o->nodes[i] : NULL;
        long ni = n ? node_index(f, n->name) : -1;
        if (ni < 0 || !n->ntaints)
            continue;
        char *b = w[ni].taints;
        size_t len = 0, cap = sizeof(w[ni].taints);
        for (size_t t = 0; t < n->ntaints && len < cap; t++) {
            const struct gpuop_taint *x = &n->taints[t];
            int k = snprintf(b + len, cap - len, "%s%s%s%s:%s", t ? "," : "", x->key ? x->key : "",
                             x->value && *x->value ? "=" : "", x->value ? x->value : "",
                             x->effect ? x->effect : "");
            len += k > 0 ? (size_t)k : 0;
        }
        if (len >= cap)
            memcpy(b + cap - 4, "...", 4);
    }
    free(count);
    return w;
}

/* ---- matrix ---- */

struct row {
    size_t node;  /* first node of the group */
    size_t count; /* nodes in the group */
};

static void pad(FILE *out, size_t n)
{
    while (n-- > 0)
        fputc(' ', out);
}

/* The shown nodes as rows (into rows, room for every shown node): one a
 * node, or with group one for all nodes alike (their cells, GPU and, with
 * wide, pods and taints). Returns how many rows. */
static size_t group_rows(const struct gpuop_findings *f, const struct gpuop_report_opts *o,
                         const struct wide *wide, bool group, struct row *rows)
{
    size_t nrows = 0;
    for (size_t i = 0; i < f->nnodes; i++) {
        const struct gpuop_node_result *r = &f->nodes[i];
        if (!shown(o, r->name))
            continue;
        size_t g = nrows;
        if (group)
            for (g = 0; g < nrows; g++)
                if (memcmp(f->nodes[rows[g].node].cell, r->cell, (size_t)f->noperands) == 0 &&
                    f->nodes[rows[g].node].gpu == r->gpu &&
                    (!wide || (!strcmp(wide[rows[g].node].pods, wide[i].pods) &&
                               !strcmp(wide[rows[g].node].taints, wide[i].taints))))
                    break;
        if (g == nrows)
            rows[nrows++] = (struct row){i, 0};
        rows[g].count++;
    }
    return nrows;
}

/* The matrix's legend: every cell's symbol and words. */
static void legend(FILE *out)
{
    static const int order[] = {
        GPUOP_CELL_RUNNING,       GPUOP_CELL_MISSING,    GPUOP_CELL_NOT_SCHEDULED,
        GPUOP_CELL_VIOLATION,     GPUOP_CELL_UNEXPECTED, GPUOP_CELL_HELD,
        GPUOP_CELL_HOST_PROVIDED, GPUOP_CELL_DISABLED,   GPUOP_CELL_NA};
    _Static_assert(sizeof(order) / sizeof(order[0]) == GPUOP_CELL_COUNT,
                   "every cell in the legend");
    fputs("\nlegend: ", out);
    for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++)
        fprintf(out, "%s%s %s",
                k && k % 3 == 0 ? ";\n        "
                : k             ? "; "
                                : "",
                cells[order[k]].sym, cells[order[k]].legend);
    fputc('\n', out);
}

static int matrix(FILE *out, const struct gpuop_findings *f, const struct gpuop_report_opts *o,
                  size_t nshown)
{
    const int nops = f->noperands;
    struct row *rows = malloc((nshown ? nshown : 1) * sizeof(*rows));
    size_t nrows = 0, namew = 4, colw[GPUOP_OPERAND_MAX];
    bool group = nshown > o->max_rows;
    struct wide *wide = o->wide ? wide_columns(f, o) : NULL;
    size_t podw = 4; /* "PODS" */

    if (!rows || (o->wide && !wide)) {
        free(rows);
        free(wide);
        return GPUOP_ENOMEM;
    }
    nrows = group_rows(f, o, wide, group, rows);
    for (size_t g = 0; g < nrows; g++) {
        char more[32] = "";
        if (rows[g].count > 1)
            snprintf(more, sizeof(more), " +%zu like it", rows[g].count - 1);
        size_t w = strlen(f->nodes[rows[g].node].name) + strlen(more) +
                   (f->nodes[rows[g].node].gpu ? 0 : strlen(" (no GPU)"));
        if (w > namew)
            namew = w;
        if (wide && strlen(wide[rows[g].node].pods) > podw)
            podw = strlen(wide[rows[g].node].pods);
    }
    if (namew > NAME_COL_MAX)
        namew = NAME_COL_MAX;

    fprintf(out, "%-*s", (int)namew, "NODE");
    for (int c = 0; c < nops; c++) {
        colw[c] = strlen(gpuop_operand_get(c)->key);
        fprintf(out, "  %s", gpuop_operand_get(c)->key);
    }
    if (wide)
        fprintf(out, "  %-*s  TAINTS", (int)podw, "PODS");
    fputc('\n', out);
    for (size_t g = 0; g < nrows; g++) {
        const struct gpuop_node_result *r = &f->nodes[rows[g].node];
        int w = fprintf(out, "%s%s", r->name, r->gpu ? "" : " (no GPU)");
        if (rows[g].count > 1)
            w += fprintf(out, " +%zu like it", rows[g].count - 1);
        pad(out, w >= 0 && (size_t)w < namew ? namew - (size_t)w : 0);
        for (int c = 0; c < nops; c++) {
            int cell = r->cell[c] < GPUOP_CELL_COUNT ? r->cell[c] : GPUOP_CELL_NA;
            bool col = o->color && *cells[cell].color;
            fprintf(out, "  %s%s%s", col ? cells[cell].color : "", cells[cell].sym,
                    col ? RESET : "");
            if (c + 1 < nops || wide)
                pad(out, colw[c] - strlen(cells[cell].sym));
        }
        if (wide)
            fprintf(out, "  %-*s  %s", (int)podw, wide[rows[g].node].pods,
                    wide[rows[g].node].taints);
        fputc('\n', out);
    }
    legend(out);
    free(rows);
    free(wide);
    return 0;
}

/* ---- findings ---- */

static void finding_head(FILE *out, const struct gpuop_finding *x,
                         const struct gpuop_report_opts *o)
{
    bool red = x->kind == GPUOP_KIND_MISSING || x->kind == GPUOP_KIND_ORDERING;
    fprintf(out, "%s%s/%s%s", o->color ? (red ? "\033[31m" : "\033[33m") : "",
            gpuop_kind_name(x->kind), gpuop_reason_get(x->reason)->name, o->color ? RESET : "");
}

struct fgroup {
    size_t count;
    const struct gpuop_finding *ex[EXAMPLES]; /* borrowed from the set */
};

static int findings(FILE *out, const struct gpuop_findings *f, const struct gpuop_report_opts *o,
                    size_t nitems)
{
    char msg[GPUOP_FINDING_MESSAGE_MAX];

    if (!nitems)
        return 0;
    fprintf(out, "\nFindings (%zu):\n", nitems);
    if (nitems <= o->max_findings) {
        for (size_t i = 0; i < f->nnodes; i++)
            for (uint32_t k = 0; shown(o, f->nodes[i].name) && k < f->nodes[i].nfindings; k++) {
                const struct gpuop_finding *x = &f->nodes[i].findings[k];
                fprintf(out, "  %s  %s  ", f->nodes[i].name, gpuop_operand_get(x->operand)->name);
                finding_head(out, x, o);
                gpuop_finding_message(f, x, msg, sizeof(msg));
                fprintf(out, "\n      %s\n", msg);
            }
        return 0;
    }
    /* Too many to list: group by (operand, reason), table order. */
    size_t ng = (size_t)f->noperands * GPUOP_REASON_COUNT;
    struct fgroup *g = calloc(ng, sizeof(*g));
    if (!g)
        return GPUOP_ENOMEM;
    for (size_t i = 0; i < f->nnodes; i++)
        for (uint32_t k = 0; shown(o, f->nodes[i].name) && k < f->nodes[i].nfindings; k++) {
            const struct gpuop_finding *x = &f->nodes[i].findings[k];
            struct fgroup *e = &g[(size_t)x->operand * GPUOP_REASON_COUNT + x->reason];
            if (e->count < EXAMPLES)
                e->ex[e->count] = x;
            e->count++;
        }
    for (size_t k = 0; k < ng; k++) {
        if (!g[k].count)
            continue;
        const struct gpuop_finding *x = g[k].ex[0];
        fprintf(out, "  %zu x %s  ", g[k].count, gpuop_operand_get(x->operand)->name);
        finding_head(out, x, o);
        fputs("  (", out);
        for (size_t e = 0; e < g[k].count && e < EXAMPLES; e++)
            fprintf(out, "%s%s", e ? ", " : "", gpuop_finding_node(f, g[k].ex[e]));
        fprintf(out, "%s)\n", g[k].count > EXAMPLES ? ", ..." : "");
        gpuop_finding_message(f, x, msg, sizeof(msg));
        fprintf(out, "      e.g. %s: %s\n", gpuop_finding_node(f, x), msg);
    }
    free(g);
    return 0;
}

static void host_info(FILE *out, const struct gpuop_findings *f, const struct gpuop_report_opts *o)
{
    bool any = false;
    for (int c = 0; c < f->noperands; c++) {
        size_t disabled = 0, labelled = 0, preinstalled = 0;
        for (size_t i = 0; i < f->nnodes; i++) {
            const struct gpuop_node_result *r = &f->nodes[i];
            if (!shown(o, r->name) || !((r->host_provided >> c) & 1))
                continue;
            if (r->cell[c] == GPUOP_CELL_DISABLED ||
                (r->cell[c] != GPUOP_CELL_HOST_PROVIDED && !f->operands[c].enabled))
                disabled++;
            else if ((r->preinstalled >> c) & 1)
                preinstalled++;
            else
                labelled++;
        }
        if (!disabled && !labelled && !preinstalled)
            continue;
        if (!any)
            fputs("\nHost-provided (information, not findings):\n", out);
        any = true;
        const char *name = gpuop_operand_get(c)->name;
        int fo = gpuop_operand_follows(c);
        if (disabled)
            fprintf(out, "  %s on %zu node%s (spec.%s.enabled=false)\n", name, disabled,
                    disabled == 1 ? "" : "s", gpuop_operand_get(fo >= 0 ? fo : c)->key);
        const struct gpuop_operand_follow *fw = gpuop_operand_follow(c);
        if (labelled && fw) /* no label of its own (operand.h) */
            fprintf(out, "  %s on %zu node%s (it runs only where %s%s=true and %s=true)\n", name,
                    labelled, labelled == 1 ? "" : "s", GPUOP_LABEL_PREFIX, fw->follows,
                    fw->also ? fw->also : GPUOP_LABEL_OPERANDS);
        else if (labelled)
            fprintf(out, "  %s on %zu node%s (label %s%s=false: excluded on purpose by a person)\n",
                    name, labelled, labelled == 1 ? "" : "s", GPUOP_LABEL_PREFIX, name);
        if (preinstalled)
            fprintf(out,
                    "  %s on %zu node%s (label %s%s=%s: NVIDIA's driver container found a "
                    "driver on the host)\n",
                    name, preinstalled, preinstalled == 1 ? "" : "s", GPUOP_LABEL_PREFIX, name,
                    GPUOP_LABEL_VALUE_PREINSTALLED);
    }
}

/* GPU sharing (issue 41): the shown GPU nodes whose GFD strategy is not
 * "none", grouped (gpuop_status_sharing). */
static int sharing_text(FILE *out, const struct gpuop_findings *f,
                        const struct gpuop_report_opts *o)
{
    json_t *groups = gpuop_status_sharing(f, o->node_filter);
    size_t i;
    json_t *g;
    if (!groups)
        return GPUOP_ENOMEM;
    if (json_array_size(groups))
        fputs("\nGPU sharing (GFD's nvidia.com/gpu.sharing-strategy and gpu.replicas):\n", out);
    json_array_foreach(groups, i, g)
    {
        long long n = json_integer_value(json_object_get(g, "nodes"));
        long long rep = json_integer_value(json_object_get(g, "replicas"));
        json_t *names = json_object_get(g, "nodeNames");
        fprintf(out, "  %s", json_string_value(json_object_get(g, "strategy")));
        if (rep)
            fprintf(out, ", %lld replicas", rep);
        fprintf(out, ": %lld node%s (", n, n == 1 ? "" : "s");
        for (size_t k = 0; k < json_array_size(names); k++)
            fprintf(out, "%s%s", k ? ", " : "", json_string_value(json_array_get(names, k)));
        if ((long long)json_array_size(names) < n)
            fprintf(out, " and %lld more", n - (long long)json_array_size(names));
        fputs(")\n", out);
    }
    json_decref(groups);
    return 0;
}

static void summary(FILE *out, const struct gpuop_findings *f, const struct gpuop_report_opts *o,
                    size_t nshown)
{
    fputc('\n', out);
    if (f->gpu_nodes == 0) {
        fprintf(out,
                "No GPU node: no node is labelled %s=true, %s=true or %s<operand>. Nothing to "
                "check.\n",
                GPUOP_LABEL_GPU_PRESENT, GPUOP_LABEL_NFD_NVIDIA, GPUOP_LABEL_PREFIX);
        if (!f->nitems)
            return;
    }
    char held[32] = "";
    if (f->by_kind[GPUOP_KIND_HELD])
        snprintf(held, sizeof(held), ", Held %zu", f->by_kind[GPUOP_KIND_HELD]);
    fprintf(out, "Summary: %zu GPU node%s, %zu complete", f->gpu_nodes,
            f->gpu_nodes == 1 ? "" : "s", f->complete_nodes);
    if (f->nitems)
        fprintf(out,
                ", %zu node%s with findings (Missing %zu, NotScheduled %zu, Unexpected %zu, "
                "OrderingViolation %zu%s)",
                f->finding_nodes, f->finding_nodes == 1 ? "" : "s", f->by_kind[GPUOP_KIND_MISSING],
                f->by_kind[GPUOP_KIND_NOT_SCHEDULED], f->by_kind[GPUOP_KIND_UNEXPECTED],
                f->by_kind[GPUOP_KIND_ORDERING], held);
    if (f->violations)
        fprintf(out, "; operand chain broken on %zu node%s", f->violations,
                f->violations == 1 ? "" : "s");
    fputs(".", out);
    if (o->node_filter && *o->node_filter)
        fprintf(out, " Shown: %zu node%s matching \"%s\".", nshown, nshown == 1 ? "" : "s",
                o->node_filter);
    fputc('\n', out);
}

static struct gpuop_report_opts defaults(const struct gpuop_report_opts *o)
{
    struct gpuop_report_opts d = {0};
    if (o)
        d = *o;
    if (!d.max_rows)
        d.max_rows = GPUOP_REPORT_MAX_ROWS;
    if (!d.max_findings)
        d.max_findings = GPUOP_REPORT_MAX_FINDINGS;
    if (!d.now)
        d.now = gpuop_clock_wall();
    return d;
}

/* The driver upgrade (status.upgrade, docs/upgrade.md): nodes per state
 * and per driver revision, each node not done with its step and what it
 * waits for, the next in line, a failure. */
static void upgrade_text(FILE *out, json_t *up, const struct gpuop_report_opts *o)
{
    const char *k;
    json_t *v;
    if (!json_is_object(up))
        return;
    fprintf(out, "Driver upgrade to revision %" JSON_INTEGER_FORMAT " (%s):",
            json_integer_value(json_object_get(up, "revision")),
            json_string_value(json_object_get(up, "version"))
                ? json_string_value(json_object_get(up, "version"))
                : "?");
    int n = 0;
    json_object_foreach(json_object_get(up, "counts"), k, v)
        fprintf(out, "%s %" JSON_INTEGER_FORMAT " %s", n++ ? "," : "", json_integer_value(v), k);
    fprintf(out, "\n  nodes per driver revision:");
    n = 0;
    json_object_foreach(json_object_get(up, "versions"), k, v)
        fprintf(out, "%s %s: %" JSON_INTEGER_FORMAT, n++ ? "," : "", k, json_integer_value(v));
    fputc('\n', out);
    size_t i;
    json_array_foreach(json_object_get(up, "nodes"), i, v)
    {
        const char *name = json_string_value(json_object_get(v, "name"));
        if (!shown(o, name ? name : ""))
            continue;
        const char *since = json_string_value(json_object_get(v, "since"));
        const char *w = json_string_value(json_object_get(v, "waitingFor"));
        fprintf(out, "  %s: %s%s%s%s%s\n", name ? name : "?",
                json_string_value(json_object_get(v, "state"))
                    ? json_string_value(json_object_get(v, "state"))
                    : "?",
                since ? " since " : "", since ? since : "", w ? ", " : "", w ? w : "");
    }
    json_int_t omitted = json_integer_value(json_object_get(up, "nodesOmitted"));
    if (omitted > 0)
        fprintf(out, "  and %" JSON_INTEGER_FORMAT " more node%s in the upgrade\n", omitted,
                omitted == 1 ? "" : "s");
    static const char *const lists[][2] = {
        {"next", "next"}, {"skipped", "skipped (label nvidia.com/gpu-driver-upgrade.skip=true)"}};
    for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++) {
        json_t *names = json_object_get(up, lists[l][0]);
        if (!json_array_size(names))
            continue;
        fprintf(out, "  %s:", lists[l][1]);
        json_array_foreach(names, i, v) fprintf(out, "%s %s", i ? "," : "", json_string_value(v));
        fputc('\n', out);
    }
    json_t *f = json_object_get(up, "failed");
    if (json_is_object(f))
        fprintf(out, "  FAILED on node %s (version %s): %s\n",
                json_string_value(json_object_get(f, "node")),
                json_string_value(json_object_get(f, "version"))
                    ? json_string_value(json_object_get(f, "version"))
                    : "?",
                json_string_value(json_object_get(f, "reason"))
                    ? json_string_value(json_object_get(f, "reason"))
                    : "");
    fputc('\n', out);
}

/* The shown GPU nodes whose driver pool label names a pool the policy has
 * not (none of its pools, or a draining one) and is not the value gpuop
 * wrote: a person's, which gpuop leaves as it is (issue 38). */
static void persons_text(FILE *out, const struct gpuop_policy *p, const struct gpuop_report_opts *o)
{
    size_t listed = 0;
    for (size_t i = 0; p && i < o->nnodes; i++) {
        const struct gpuop_node *n = o->nodes[i];
        const char *dp = n && n->gpu ? gpuop_node_os(n, GPUOP_OS_DRIVER_POOL) : NULL;
        if (!dp || !*dp || n->up.pool_ours || gpuop_policy_driver_pool(p, dp) >= 0 ||
            !shown(o, n->name))
            continue;
        if (!listed)
            fputs("\ndriver pool labels set by a person for a pool the policy no longer has "
                  "(left as they are: a draining pool keeps its driver there; remove the label "
                  "once the node's jobs are done):\n",
                  out);
        if (listed++ < POOL_NAMES_MAX)
            fprintf(out, "  %s: %s=%s\n", n->name, GPUOP_LABEL_DRIVER_POOL, dp);
    }
    if (listed > POOL_NAMES_MAX)
        fprintf(out, "  and %zu more\n", listed - POOL_NAMES_MAX);
}

/* Driver pools (SPEC 4f): each pool's version and the shown GPU nodes in it. */
static int pools_text(FILE *out, const struct gpuop_policy *p, const struct gpuop_report_opts *o)
{
    json_t *pools = gpuop_status_driver_pools(p, o->nodes, o->nnodes, true), *e;
    size_t i, j;
    if (!pools)
        return p && p->ndriver_pools + p->ndraining_pools > 0 && o->nnodes ? GPUOP_ENOMEM : 0;
    fputs("\ndriver pools (spec.driver.pools; a node's pool is its gpuop.dev/driver-pool label):\n",
          out);
    json_array_foreach(pools, i, e)
    {
        json_t *names = json_object_get(e, "nodeNames"), *nm;
        size_t shown_n = 0, listed = 0;
        json_array_foreach(names, j, nm) shown_n += shown(o, json_string_value(nm));
        bool draining = json_is_true(json_object_get(e, "draining"));
        fprintf(out, "  %-24s %-16s %zu node%s%s", json_string_value(json_object_get(e, "name")),
                draining ? "draining" : json_string_value(json_object_get(e, "version")), shown_n,
                shown_n == 1 ? "" : "s", draining ? " left to move (removed from the policy)" : "");
        json_array_foreach(names, j, nm)
        {
            if (!shown(o, json_string_value(nm)))
                continue;
            if (listed == POOL_NAMES_MAX) {
                fprintf(out, " and %zu more", shown_n - listed);
                break;
            }
            fprintf(out, "%s%s", listed ? ", " : ": ", json_string_value(nm));
            listed++;
        }
        fputc('\n', out);
    }
    json_decref(pools);
    return 0;
}

/* ---- which path advertises a node's GPUs (issue 42) ---- */

enum path { PATH_NONE, PATH_PLUGIN, PATH_DRA, PATH_BOTH, PATH_COUNT };
static const char *const PATHS[PATH_COUNT] = {"none", "plugin", "DRA", "both"};

/* The device plugin (nvidia.com/gpu or MIG devices allocatable), DRA (a
 * ResourceSlice of driver gpu.nvidia.com with devices), both or none;
 * -1 when the node's slices were not read (gpuop_node.dra.watched). */
static int advertised_by(const struct gpuop_node *n)
{
    if (!n || !n->dra.watched)
        return -1;
    bool plugin = n->gpus.allocatable || n->gpus.mig_allocatable || n->shared.allocatable,
         dra = n->dra.devices > 0;
    return plugin && dra ? PATH_BOTH : dra ? PATH_DRA : plugin ? PATH_PLUGIN : PATH_NONE;
}

/* One line a path: how many shown GPU nodes it advertises, the first
 * EXAMPLES of them named; nothing when the slices were not read. */
static void paths_text(FILE *out, const struct gpuop_report_opts *o)
{
    size_t count[PATH_COUNT] = {0};
    const char *examples[PATH_COUNT][EXAMPLES];
    bool any = false;
    for (size_t i = 0; i < o->nnodes; i++) {
        const struct gpuop_node *n = o->nodes ? o->nodes[i] : NULL;
        int k = n && n->gpu && shown(o, n->name) ? advertised_by(n) : -1;
        if (k < 0)
            continue;
        any = true;
        if (count[k] < EXAMPLES)
            examples[k][count[k]] = n->name;
        count[k]++;
    }
    if (!any)
        return;
    fprintf(out, "GPUs advertised by (device plugin's nvidia.com/gpu, DRA's ResourceSlices):\n");
    for (int k = PATH_PLUGIN; k < PATH_COUNT + PATH_PLUGIN; k++) {
        int path = k % PATH_COUNT; /* none last */
        if (!count[path])
            continue;
        fprintf(out, "  %-6s %zu node%s:", PATHS[path], count[path], count[path] == 1 ? "" : "s");
        for (size_t e = 0; e < count[path] && e < EXAMPLES; e++)
            fprintf(out, "%s %s", e ? "," : "", examples[path][e]);
        fprintf(out, "%s%s\n", count[path] > EXAMPLES ? ", ..." : "",
                path == PATH_BOTH ? " (advertised twice: GpusAdvertisedTwice)" : "");
    }
    fputc('\n', out);
}

/* {"<node>": "plugin" | "DRA" | "both" | "none"} of the shown GPU nodes
 * whose slices were read, or NULL when none was (new). */
static json_t *paths_json(const struct gpuop_report_opts *o)
{
    json_t *by = NULL;
    for (size_t i = 0; i < o->nnodes; i++) {
        const struct gpuop_node *n = o->nodes ? o->nodes[i] : NULL;
        int k = n && n->gpu && shown(o, n->name) ? advertised_by(n) : -1;
        if (k < 0)
            continue;
        if (!by && !(by = json_object()))
            return NULL;
        json_object_set_new(by, n->name, json_string(PATHS[k]));
    }
    return by;
}

int gpuop_report_text(FILE *out, const struct gpuop_policy *p, const struct gpuop_findings *f,
                      const struct gpuop_report_opts *opts)
{
    struct gpuop_report_opts o = defaults(opts);
    size_t nshown = 0, nitems = 0;
    int rc;

    if (!out || !f)
        return GPUOP_EINVAL;
    for (size_t i = 0; i < f->nnodes; i++)
        if (shown(&o, f->nodes[i].name)) {
            nshown++;
            nitems += f->nodes[i].nfindings;
        }
    const char *pname = o.policy_name ? o.policy_name : p && p->name ? p->name : NULL;
    fprintf(out, "GpuPolicy %s%s%s", pname ? "\"" : "", pname ? pname : "(none)",
            pname ? "\"" : "");
    if (o.namespace)
        fprintf(out, ", operands in namespace %s", o.namespace);
    fprintf(out, ": %zu GPU node%s\n\n", f->gpu_nodes, f->gpu_nodes == 1 ? "" : "s");
    if (nshown && (rc = matrix(out, f, &o, nshown)) < 0)
        return rc;
    if ((rc = findings(out, f, &o, nitems)) < 0)
        return rc;
    host_info(out, f, &o);
    paths_text(out, &o);
    if ((rc = sharing_text(out, f, &o)) < 0)
        return rc;
    if ((rc = pools_text(out, p, &o)) < 0)
        return rc;
    persons_text(out, p, &o);
    upgrade_text(out, o.upgrade, &o);
    summary(out, f, &o, nshown);
    return ferror(out) ? GPUOP_EIO : 0;
}

/* ---- structured ---- */

json_t *gpuop_report_json(const struct gpuop_policy *p, const struct gpuop_findings *f,
                          const struct gpuop_report_opts *opts)
{
    struct gpuop_report_opts o = defaults(opts);
    struct gpuop_status_input in = {
        .namespace = o.namespace, .max_nodes = SIZE_MAX, .empty_lists = true};

    if (!f)
        return NULL;
    in.driver_pools = gpuop_status_driver_pools(p, o.nodes, o.nnodes, true); /* SPEC 4f */
    json_t *st = gpuop_status_build(p, f, NULL, &in, o.now);
    json_decref(in.driver_pools);
    json_t *doc = json_object();
    if (!st || !doc)
        goto fail;
    const char *pname = o.policy_name ? o.policy_name : p && p->name ? p->name : "";
    if (json_object_set_new(doc, "policy", json_string(pname)) < 0)
        goto fail;
    /* a one-shot check applies nothing: Reconciled does not apply */
    json_t *conds = json_object_get(st, "conditions");
    for (size_t i = json_array_size(conds); i-- > 0;) {
        const char *t = json_string_value(json_object_get(json_array_get(conds, i), "type"));
        if (t && strcmp(t, "Reconciled") == 0)
            json_array_remove(conds, i);
    }
    if (o.node_filter && *o.node_filter) {
        json_t *nodes = json_object_get(st, "nodes");
        for (size_t i = json_array_size(nodes); i-- > 0;) {
            const char *n = json_string_value(json_object_get(json_array_get(nodes, i), "name"));
            if (!n || !strstr(n, o.node_filter))
                json_array_remove(nodes, i);
        }
        json_t *sharing = gpuop_status_sharing(f, o.node_filter); /* the shown nodes' */
        if (!sharing)
            goto fail;
        if (json_array_size(sharing))
            json_object_set(st, "sharing", sharing);
        else
            json_object_del(st, "sharing");
        json_decref(sharing);
    }
    const char *key;
    json_t *v;
    json_object_foreach(st, key, v)
    {
        if (json_object_set(doc, key, v) < 0)
            goto fail;
    }
    if (json_is_object(o.upgrade) && json_object_set(doc, "upgrade", o.upgrade) < 0)
        goto fail;               /* the leader's view of the driver upgrade */
    json_t *by = paths_json(&o); /* issue 42: plugin, DRA or both, where slices were read */
    if (by && json_object_set_new(doc, "gpusAdvertisedBy", by) < 0)
        goto fail;
    json_decref(st);
    return doc;
fail:
    json_decref(st);
    json_decref(doc);
    return NULL;
}

int gpuop_report_structured(FILE *out, const struct gpuop_policy *p, const struct gpuop_findings *f,
                            const struct gpuop_report_opts *o, bool yaml)
{
    json_t *doc = gpuop_report_json(p, f, o);
    int rc = 0;
    if (!doc)
        return GPUOP_ENOMEM;
    if (yaml) {
        char *text = gpuop_yaml_dump(doc);
        if (!text)
            rc = GPUOP_ENOMEM;
        else if (fputs(text, out) < 0)
            rc = GPUOP_EIO;
        free(text);
    } else {
        if (json_dumpf(doc, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0 ||
            fputc('\n', out) == EOF)
            rc = GPUOP_EIO;
    }
    json_decref(doc);
    if (!rc && ferror(out))
        rc = GPUOP_EIO;
    return rc;
}
