/*
 * message.c - a finding's message: its reason's two templates (reasons.c)
 * with their placeholders filled in for the finding. Nothing is worded
 * here but the detail of a pod, taint or label.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuop/analysis.h"

#include "findings_int.h"
#include "gpuop/gate.h"

struct vars {
    const struct gpuop_findings *f;
    const struct gpuop_finding *x;
    const struct gpuop_operand *op, *prereq;
    char detail[GPUOP_FINDING_MESSAGE_MAX];
};

/* The DaemonSet a finding is about: a per-OS operand's pool's (an absent
 * one named in the ref, a present one by its index in the operand's
 * list), else the operand's. */
static void pool_ds_name(const struct vars *v, char *buf, size_t size)
{
    const struct gpuop_finding *x = v->x;
    const char *list = v->f->operands[x->operand].daemonsets;
    bool pooled =
        x->reason == GPUOP_REASON_TAINT_NOT_TOLERATED || x->reason == GPUOP_REASON_POD_NOT_CREATED;
    if (x->reason == GPUOP_REASON_DAEMONSET_ABSENT && x->ref) {
        snprintf(buf, size, "%s", v->detail);
        return;
    }
    for (int k = 0; pooled && list && x->prereq >= 0 && *list; k++) {
        size_t n = strcspn(list, ",");
        if (k == x->prereq) {
            snprintf(buf, size, "%.*s", (int)n, list);
            return;
        }
        list += n + (list[n] == ',');
    }
    snprintf(buf, size, "%s", v->op->ds_name);
}

/* Writes the value of placeholder name (n bytes) into buf; false when
 * there is no such placeholder. */
static bool var(const struct vars *v, const char *name, size_t n, char *buf, size_t size)
{
#define IS(s) (n == sizeof(s) - 1 && memcmp(name, s, n) == 0)
    const struct gpuop_node_result *r = v->x->node < v->f->nnodes ? &v->f->nodes[v->x->node] : NULL;
    const struct gpuop_pod *pod = gpuop_findings_ref_pod(v->x);
    buf[0] = '\0';
    if (IS("operand"))
        snprintf(buf, size, "%s", v->op->name);
    else if (IS("key"))
        snprintf(buf, size, "%s", v->op->key);
    else if (IS("ds")) /* a per-OS pool's DaemonSet: named by the ref, or by its index */
        pool_ds_name(v, buf, size);
    else if (IS("prereq"))
        snprintf(buf, size, "%s", v->prereq ? v->prereq->name : "?");
    else if (IS("detail"))
        snprintf(buf, size, "%s", v->detail);
    else if (IS("since")) {
        if (gpuop_finding_since(v->x) > 0)
            gpuop_findings_fmt_time(gpuop_finding_since(v->x), buf, size);
    } else if (IS("terminating")) {
        if (pod && pod->deleted)
            gpuop_findings_fmt_time(pod->deleted, buf, size);
    } else if (IS("label-state")) /* enabled operand: host-provided here means "false" */
        snprintf(buf, size, "%s",
                 r && (r->host_provided >> v->x->operand) & 1 ? "\"false\"" : "not \"true\"");
    else if (IS("chain")) {
        int direct = gpuop_operand_prereq(v->x->operand);
        size_t len = 0;
        for (int c = v->x->operand, hops = 0; v->prereq && direct >= 0 && direct != v->x->prereq &&
                                              c >= 0 && hops < GPUOP_OPERAND_MAX && len < size;
             hops++, c = gpuop_operand_prereq(c)) {
            int k = snprintf(buf + len, size - len, "%s%s", hops ? " -> " : "",
                             gpuop_operand_get(c)->name);
            len += k > 0 ? (size_t)k : 0;
            if (c == v->x->prereq)
                break;
        }
    } else if (IS("prereq-label") || IS("label-now")) { /* ref: a label's value, NULL absent */
        if (v->x->ref)
            snprintf(buf, size, "\"%.512s\"", v->detail);
        else
            snprintf(buf, size, "absent");
    } else if (IS("controller")) { /* what the DaemonSet controller says (caches.h) */
        const char *says = v->f->operands[v->x->operand].controller_says;
        size_t len = says ? strlen(says) : 0;
        if (len)
            snprintf(buf, size, "%s%s", says, says[len - 1] == '.' ? "" : ".");
    } else if (IS("node"))
        snprintf(buf, size, "%s", r && r->name ? r->name : "");
    else if (IS("grace"))
        snprintf(buf, size, "%ld", v->f->terminating_grace_s);
    else if (IS("gate") || IS("gate-file") || IS("gate-what")) { /* a pod's gate (gate.h) */
        const struct gpuop_gate_info *g = pod ? gpuop_gate_get(pod->gate) : NULL;
        snprintf(buf, size, "%s",
                 !g                ? ""
                 : IS("gate")      ? g->container
                 : IS("gate-file") ? g->file
                                   : g->what);
    } else if (IS("upgrade-state")) {
        static const char *const states[] = {[GPUOP_UPGRADE_ABSENT] = "absent",
                                             [GPUOP_UPGRADE_DONE] = "\"upgrade-done\"",
                                             [GPUOP_UPGRADE_FAILED] = "\"upgrade-failed\"",
                                             [GPUOP_UPGRADE_ACTIVE] = "set"};
        snprintf(buf, size, "%s",
                 r && r->upgrade <= GPUOP_UPGRADE_ACTIVE ? states[r->upgrade] : "?");
    } else if (IS("capacity"))
        snprintf(buf, size, "%u", r ? r->gpus.capacity : 0u);
    else if (IS("allocatable"))
        snprintf(buf, size, "%u", r ? r->gpus.allocatable : 0u);
    else if (IS("advertised") || IS("unadvertised")) /* the node's nvidia.com/gpu: some, none */
        snprintf(buf, size, "%s", (r && r->gpus.allocatable) == IS("advertised") ? "yes" : "");
    else if (IS("mig"))
        snprintf(buf, size, "%s", r && r->gpus.mig_allocatable ? "yes" : "");
    else if (IS("stranded")) /* GPU pods bound here (the controller's LIST) */
        gpuop_stranded_text(gpuop_findings_stranded(v->f, r), buf, size);
    else if (IS("stranded-count")) {
        const struct gpuop_stranded *st = gpuop_findings_stranded(v->f, r);
        if (st && st->count)
            snprintf(buf, size, "%u", st->count);
    } else
        return false;
    return true;
#undef IS
}

/* Appends template text (reasons.h), at most depth levels of [name:text]. */
static void render(struct gpuop_sbuf *b, const struct vars *v, const char *text, const char *end,
                   int depth)
{
    char val[GPUOP_FINDING_MESSAGE_MAX];
    while (text < end) {
        const char *lt = memchr(text, '<', (size_t)(end - text));
        const char *br = depth ? memchr(text, '[', (size_t)(end - text)) : NULL;
        const char *at = lt && (!br || lt < br) ? lt : br;
        if (!at) {
            gpuop_sbuf_add(b, text, (size_t)(end - text));
            return;
        }
        gpuop_sbuf_add(b, text, (size_t)(at - text));
        const char *close = memchr(at, at == lt ? '>' : ']', (size_t)(end - at));
        const char *colon = at == br && close ? memchr(at, ':', (size_t)(close - at)) : NULL;
        if (at == lt && close && var(v, at + 1, (size_t)(close - at - 1), val, sizeof(val))) {
            gpuop_sbuf_add(b, val, strlen(val));
            text = close + 1;
        } else if (at == br && colon &&
                   var(v, at + 1, (size_t)(colon - at - 1), val, sizeof(val))) {
            if (*val)
                render(b, v, colon + 1, close, depth - 1);
            text = close + 1;
        } else { /* not a placeholder: literal */
            gpuop_sbuf_add(b, at, 1);
            text = at + 1;
        }
    }
}

int gpuop_finding_message(const struct gpuop_findings *f, const struct gpuop_finding *x, char *buf,
                          size_t size)
{
    struct gpuop_sbuf b = {buf, size, 0};
    const struct gpuop_reason_info *ri = x ? gpuop_reason_get(x->reason) : NULL;
    struct vars v = {.f = f, .x = x, .op = x ? gpuop_operand_get(x->operand) : NULL};

    if (size)
        buf[0] = '\0';
    if (!f || !ri || !v.op)
        return 0;
    v.prereq =
        x->reason == GPUOP_REASON_TAINT_NOT_TOLERATED || x->reason == GPUOP_REASON_POD_NOT_CREATED
            ? NULL /* prereq holds a pool's DaemonSet index there */
            : gpuop_operand_get(x->prereq);
    gpuop_finding_detail(x, v.detail, sizeof(v.detail));
    render(&b, &v, ri->message, ri->message + strlen(ri->message), 1);
    gpuop_sbuf_add(&b, " ", 1);
    render(&b, &v, ri->action, ri->action + strlen(ri->action), 1);
    return (int)b.len;
}
