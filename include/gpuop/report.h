/*
 * report.h - the `gpuop check` output: a node x operand matrix with the
 * findings under it and a summary line (text), or the status-shaped object
 * (JSON / YAML).
 *
 * Text: one row per node, one short symbol per operand (legend printed
 * under the matrix); with more rows than max_rows, nodes with identical rows
 * are grouped ("gpu-0001 +1199 like it"); with more findings than
 * max_findings, findings are grouped by (operand, reason) with a count and
 * example nodes. Colour only when opts->color (the caller decides isatty).
 * Wide (`-o wide`) adds two columns per node, from the model structs the
 * findings were computed from: PODS (operand pods on the node running as
 * the analysis counts it, gpuop_pod_running, of all) and TAINTS (its NoSchedule and NoExecute
 * taints); rows fold only when those agree too.
 *
 * Structured: gpuop_status_build's shape without a node cap and without the
 * Reconciled condition (a one-shot check applies nothing), plus "policy".
 */
#ifndef GPUOP_REPORT_H
#define GPUOP_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <jansson.h>

#include "gpuop/analysis.h"
#include "gpuop/policy.h"

#define GPUOP_REPORT_MAX_ROWS     60 /* default opts->max_rows */
#define GPUOP_REPORT_MAX_FINDINGS 60 /* default opts->max_findings */

struct gpuop_report_opts {
    const char *policy_name; /* shown in the header / "policy"; may be NULL */
    const char *namespace;   /* may be NULL */
    bool color;              /* ANSI colours in text */
    const char *node_filter; /* only nodes whose name contains this; NULL or "" = all */
    size_t max_rows;         /* 0: GPUOP_REPORT_MAX_ROWS; SIZE_MAX: never group */
    size_t max_findings;     /* 0: GPUOP_REPORT_MAX_FINDINGS; SIZE_MAX: never group */
    long long now;           /* for condition times; 0: the current time */
    /* the analysis's inputs (borrowed; NULL entries skipped): in text the
     * PODS and TAINTS columns (wide); in both which path advertises each
     * GPU node's GPUs (plugin, DRA, both), where its ResourceSlices were
     * read (gpuop_node.dra.watched) */
    bool wide;
    const struct gpuop_node *const *nodes;
    size_t nnodes;
    const struct gpuop_pod *const *pods;
    size_t npods;
    /* the driver upgrade as the leader last wrote it (the policy's
     * status.upgrade, docs/upgrade.md), borrowed; NULL: none */
    json_t *upgrade;
};

/* Symbol of a matrix cell ("+", "M", ...) and its legend text; static. */
const char *gpuop_report_symbol(int cell);
const char *gpuop_report_legend(int cell);

/* Writes the text report to out. p, f, o borrowed (o may be NULL).
 * Returns 0, GPUOP_ENOMEM or GPUOP_EIO. */
int gpuop_report_text(FILE *out, const struct gpuop_policy *p, const struct gpuop_findings *f,
                      const struct gpuop_report_opts *o);

/* New JSON object (see above), NULL on out-of-memory. Borrows its inputs. */
json_t *gpuop_report_json(const struct gpuop_policy *p, const struct gpuop_findings *f,
                          const struct gpuop_report_opts *o);

/* Writes gpuop_report_json to out as indented JSON, or as YAML when yaml.
 * Returns 0, GPUOP_ENOMEM or GPUOP_EIO. */
int gpuop_report_structured(FILE *out, const struct gpuop_policy *p, const struct gpuop_findings *f,
                            const struct gpuop_report_opts *o, bool yaml);

/* Exit code of `gpuop check`: 0 no finding, 1 findings (2, errors, is the
 * caller's). */
int gpuop_report_exit_code(const struct gpuop_findings *f);

#endif
