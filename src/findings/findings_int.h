/*
 * findings_int.h - what the findings layer's files share and nobody else
 * sees: the pod a finding borrows, the one RFC 3339 formatter of its
 * messages, and a truncating string builder that still counts what it
 * wanted (snprintf's contract).
 */
#ifndef GPUOP_FINDINGS_INT_H
#define GPUOP_FINDINGS_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "gpuop/analysis.h"

/* Room for a pod's name read out of a record (Kubernetes names are at
 * most 253 bytes; a longer one is kept whole in the record). */
#define GPUOP_POD_COPY_NAME_MAX 256

/* A record's packed pod read out (gpuop_findings_ref_pod). */
struct gpuop_pod_copy {
    struct gpuop_pod pod;
    char name[GPUOP_POD_COPY_NAME_MAX];
};

/* The pod finding x is about, when it is one, or NULL: borrowed from the
 * inputs, or, when x holds a record's packed copy (x->owned), read out
 * into *copy (its strings in copy or borrowed from the record; node
 * NULL). */
const struct gpuop_pod *gpuop_findings_ref_pod(const struct gpuop_finding *x,
                                               struct gpuop_pod_copy *copy);

/* What names the pod finding x is about (the same for two findings about
 * one pod, borrowed or copied), or NULL when x is about none. */
const void *gpuop_findings_ref_key(const struct gpuop_finding *x);

/* Whether x's detail reads its pod's waiting reason and message (a copy
 * for x keeps them; other pod findings' copies leave them out). */
bool gpuop_findings_ref_waits(const struct gpuop_finding *x);

/* What finding x borrows from its inputs (the pod, the taint, the label
 * value or text), measured: bytes of pointer-aligned structs and of
 * strings a copy needs, added to *structs and *chars. A pod is packed
 * among the strings (17 bytes, its name without its DaemonSet's, and its
 * waiting reason and message when waits); an x that holds a copy already
 * is measured as it is. */
void gpuop_findings_ref_size(const struct gpuop_finding *x, bool waits, size_t *structs,
                             size_t *chars);

/* Copies what x borrows into *structs and *chars (advanced by what
 * gpuop_findings_ref_size measured, with the same waits) and points
 * x->ref at the copy: x then reads nothing of the inputs. A copy is
 * copied as it is. */
void gpuop_findings_ref_own(struct gpuop_finding *x, bool waits, char **structs, char **chars);

/* DRA findings that count the node's ResourceSlices (GpusAdvertisedTwice,
 * SlicesWithoutDriver, ClaimWithoutPlugin) hold the node's fold (model.h, gpuop_node_dra) in
 * the finding itself, where PodNotCreated holds its time: no ref to copy.
 * Whether reason's findings hold x->since (those and PodNotCreated), not
 * x->ref. */
static inline bool gpuop_reason_holds_since(int reason)
{
    return reason == GPUOP_REASON_POD_NOT_CREATED || reason == GPUOP_REASON_GPUS_ADVERTISED_TWICE ||
           reason == GPUOP_REASON_SLICES_WITHOUT_DRIVER ||
           reason == GPUOP_REASON_CLAIM_WITHOUT_PLUGIN ||
           reason == GPUOP_REASON_SHARING_CONFIG_NOT_APPLIED;
}

/* SharingConfigNotApplied holds since when (seconds since the epoch, 32
 * bits: until 2106) and the index of the node's key in the setup's
 * ConfigMap (sharing.h; the setup judges every node again when the
 * ConfigMap changes, so the index stays its key's). */
#define GPUOP_FINDING_APPLIED_SHIFT 32
static inline long long gpuop_finding_applied_pack(long long since, int key)
{
    return (long long)((uint64_t)(uint32_t)since | (uint64_t)(uint16_t)key
                                                       << GPUOP_FINDING_APPLIED_SHIFT);
}

/* The key index a SharingConfigNotApplied finding holds, or -1. */
static inline int gpuop_finding_applied_key(const struct gpuop_finding *x)
{
    if (x->reason != GPUOP_REASON_SHARING_CONFIG_NOT_APPLIED)
        return -1;
    return (int)(uint16_t)((uint64_t)x->since >> GPUOP_FINDING_APPLIED_SHIFT);
}

static inline long long gpuop_finding_dra_pack(unsigned devices, unsigned slices)
{
    return (long long)devices | (long long)slices << 16;
}

/* The devices and slices a DRA finding holds; false for other reasons. */
static inline bool gpuop_finding_dra(const struct gpuop_finding *x, unsigned *devices,
                                     unsigned *slices)
{
    if (!gpuop_reason_holds_since(x->reason) || x->reason == GPUOP_REASON_POD_NOT_CREATED ||
        x->reason == GPUOP_REASON_SHARING_CONFIG_NOT_APPLIED)
        return false;
    *devices = (unsigned)(x->since & 0xffff);
    *slices = (unsigned)((x->since >> 16) & 0xff);
    return true;
}

/* t (seconds since epoch) as "YYYY-MM-DDTHH:MM:SSZ" into buf. */
void gpuop_findings_fmt_time(long long t, char *buf, size_t size);

struct gpuop_sbuf {
    char *buf;
    size_t size, len; /* len: wanted length, may exceed size */
};

/* Appends n bytes of s, truncating (always NUL-terminated when size > 0). */
void gpuop_sbuf_add(struct gpuop_sbuf *b, const char *s, size_t n);

/* ---- shared by the full pass (analysis.c) and the node records (records.c) ---- */

/* What one listed node adds to the counters that its result does not say. */
struct gpuop_node_tally {  /* 24 bytes: a set holds one per listed node */
    long long next_change; /* its judgements' (0 never) */
    uint32_t idle_from;    /* idle_s counts from (a pod's Ready time; 0: not idle) */
    uint16_t expected;     /* bit per operand: expected(N,O) */
    uint16_t running;      /* bit per operand: running(N,O) */
    bool violation;        /* an OrderingViolation among its findings */
};
_Static_assert(GPUOP_OPERAND_MAX <= 16, "a tally's operand masks are 16 bits");
_Static_assert(sizeof(struct gpuop_node_tally) <= 24, "a node's tally is 24 bytes");

/* Judges node nd, its best pod per operand bp: pushes its findings (as
 * node index ni), fills *r but its name, and *t. */
int gpuop_findings_judge_node(struct gpuop_findings *f, uint32_t ni, const struct gpuop_node *nd,
                              const struct gpuop_pod *const *bp, long long now,
                              struct gpuop_node_result *r, struct gpuop_node_tally *t);

/* A node is listed when it is a GPU node or has findings. */
bool gpuop_findings_listed(const struct gpuop_node_result *r);

/* Adds (sign 1) or takes back (-1) what listed node r (its tally t)
 * feeds: the summary counters, the operands' expected and running nodes,
 * the stranded pods; with items (r's findings), its findings per kind and
 * reason too (push adds those). */
void gpuop_findings_count_node(struct gpuop_findings *f, const struct gpuop_node_result *r,
                               const struct gpuop_node_tally *t, const struct gpuop_finding *items,
                               int sign);

/* Reads again what every node is judged against into f (a records'
 * header: its sums stay): the policy p (borrowed, NULL: every operand
 * enabled), the DaemonSets chosen among ds (borrowed for the call) and the
 * operands' results they make. *fp: a hash of what a node's judgement
 * reads of it. 0 or GPUOP_ENOMEM. */
int gpuop_findings_setup(struct gpuop_findings *f, const struct gpuop_policy *p,
                         const struct gpuop_ds *const *ds, size_t nds, uint64_t *fp);

/* Of two pods of one (node, operand), is a the more telling one? */
bool gpuop_findings_pod_better(const struct gpuop_pod *a, const struct gpuop_pod *b);

/* Node name's best pod per operand (bp[nops], zeroed first) among pods
 * (borrowed, NULL entries and other nodes' pods skipped; name NULL: pods
 * are all the node's). */
void gpuop_findings_best_pods(const char *name, const struct gpuop_pod *const *pods, size_t npods,
                              int nops, const struct gpuop_pod **bp);

/* Remembers t as the next time a judgement made with `now` changes. */
void gpuop_findings_change_at(struct gpuop_findings *f, long long t);

/* idle_s of a node idle since `last` (0: it is not), at now. */
uint8_t gpuop_findings_idle_since(long long last, long long now);

#endif
