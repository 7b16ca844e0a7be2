/*
 * diff.c - what appeared and what cleared between two findings sets, by
 * the key (node, operand, kind, reason): both sets are in that order, so
 * one merge walk, driven by the caller, allocating nothing.
 */
#include <string.h>

#include "gpuop/analysis.h"

static int key_cmp(const struct gpuop_findings *a, const struct gpuop_finding *x,
                   const struct gpuop_findings *b, const struct gpuop_finding *y)
{
    int c = strcmp(gpuop_finding_node(a, x), gpuop_finding_node(b, y));
    if (c)
        return c;
    if (x->operand != y->operand)
        return x->operand < y->operand ? -1 : 1;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    if (x->reason != y->reason)
        return x->reason < y->reason ? -1 : 1;
    return 0;
}

void gpuop_findings_diff_begin(struct gpuop_findings_diff *d, const struct gpuop_findings *prev,
                               const struct gpuop_findings *cur)
{
    *d = (struct gpuop_findings_diff){prev, cur, 0, 0};
}

static void change(struct gpuop_finding_change *out, const struct gpuop_findings *set,
                   const struct gpuop_finding *x, bool appeared)
{
    *out = (struct gpuop_finding_change){appeared,   set,     x,        gpuop_finding_node(set, x),
                                         x->operand, x->kind, x->reason};
}

bool gpuop_findings_diff_next(struct gpuop_findings_diff *d, struct gpuop_finding_change *out)
{
    const struct gpuop_findings *prev = d->prev, *cur = d->cur;
    size_t np = prev ? prev->nitems : 0, nc = cur ? cur->nitems : 0;

    while (d->i < np || d->j < nc) {
        int c = d->i >= np   ? 1
                : d->j >= nc ? -1
                             : key_cmp(prev, &prev->items[d->i], cur, &cur->items[d->j]);
        if (c < 0) {
            change(out, prev, &prev->items[d->i++], false);
            return true;
        }
        if (c > 0) {
            change(out, cur, &cur->items[d->j++], true);
            return true;
        }
        d->i++;
        d->j++;
    }
    return false;
}
