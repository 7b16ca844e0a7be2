/*
 * claimpods.c - who a DRA claim strands: the pods reserving GPU claims
 * allocated on the nodes of ClaimWithoutPlugin findings, named from the
 * ResourceClaims the caches watch (status.reservedFor names them: no
 * LIST, unlike stranded.c's). Rebuilt at each status reconcile for the
 * nodes of those findings only (one walk of the cached claims when there
 * is one, none otherwise) and handed to the findings like the stranded
 * pods (gpuop_findings_set_claim_pods): the analysis stays pure.
 *
 * Per node: the number of pods reserving its claims and the first
 * GPUOP_STRANDED_NAMES_MAX "namespace/name", sorted. A pod reserving two
 * claims is counted once while its name is among those kept.
 *
 * The nodes of GpusAdvertisedTwice findings get an entry too (issue 42's
 * over-admission, gpuop_findings_overadmit): there the devices of the
 * claims reserved by pods are summed (gpus), and a claim holding no GPU
 * (only adminAccess devices, the DRA validator's) names no pod.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuop/sort.h"

#include "controller_int.h"

/* Longest "namespace/name" kept (63 + 1 + 253). */
#define CLAIM_POD_NAME_MAX 320

void gpuop_ctl_claim_pods_free(struct ctl_claim_pods *cp)
{
    free(cp->a);
    free(cp->kind);
    gpuop_arena_free(&cp->names);
    memset(cp, 0, sizeof(*cp));
}

static int by_node(const void *key, const void *elem)
{
    return strcmp(key, ((const struct gpuop_stranded *)elem)->node);
}

static int by_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Which entry node result r needs: ENTRY_CLAIMS for a
 * ClaimWithoutPlugin finding (every reserving pod named), else
 * ENTRY_HELD for GpusAdvertisedTwice (pods of claims holding GPUs), else
 * 0. */
enum { ENTRY_HELD = 1, ENTRY_CLAIMS = 2 };
static int entry_kind(const struct gpuop_node_result *r)
{
    int kind = 0;
    for (uint32_t k = 0; k < r->nfindings && r->findings; k++) {
        int reason = r->findings[k].reason; /* the records' view has no items array */
        if (reason == GPUOP_REASON_CLAIM_WITHOUT_PLUGIN)
            kind |= ENTRY_CLAIMS;
        else if (reason == GPUOP_REASON_GPUS_ADVERTISED_TWICE)
            kind |= ENTRY_HELD;
    }
    return kind & ENTRY_CLAIMS ? ENTRY_CLAIMS : kind;
}

/* One entry per node of f with a ClaimWithoutPlugin or GpusAdvertisedTwice
 * finding, in f's (name) order, its kind in cp->kind. */
static int entries(struct ctl_claim_pods *cp, const struct gpuop_findings *f)
{
    size_t cap = f->by_reason[GPUOP_REASON_CLAIM_WITHOUT_PLUGIN] +
                 f->by_reason[GPUOP_REASON_GPUS_ADVERTISED_TWICE];
    cp->a = calloc(cap ? cap : 1, sizeof(*cp->a));
    cp->kind = calloc(cap ? cap : 1, sizeof(*cp->kind));
    if (!cp->a || !cp->kind)
        return GPUOP_ENOMEM;
    for (size_t i = 0; i < f->nnodes && cp->n < cap; i++) {
        int kind = entry_kind(&f->nodes[i]);
        if (kind) {
            cp->kind[cp->n] = (unsigned char)kind;
            cp->a[cp->n++].node = f->nodes[i].name;
        }
    }
    return 0;
}

/* Adds pod name of claim c (its namespace the key's) to e. */
static int add_pod(struct ctl_claim_pods *cp, struct gpuop_stranded *e, const struct gpuop_claim *c,
                   const char *name)
{
    const char *slash = strchr(c->key, '/');
    int nslen = slash ? (int)(slash - c->key) : 0;
    char full[CLAIM_POD_NAME_MAX];
    snprintf(full, sizeof(full), "%.*s/%s", nslen, c->key, name);
    for (uint32_t k = 0; k < e->nnames; k++)
        if (strcmp(e->names[k], full) == 0)
            return 0; /* a second claim of the same pod */
    e->count++;
    if (e->nnames >= GPUOP_STRANDED_NAMES_MAX)
        return 0;
    const char *kept = gpuop_arena_strdup(&cp->names, full);
    if (!kept)
        return GPUOP_ENOMEM;
    e->names[e->nnames++] = kept;
    return 0;
}

int gpuop_ctl_claim_pods_build(struct ctl_claim_pods *cp, const struct gpuop_caches *caches,
                               struct gpuop_findings *f)
{
    gpuop_ctl_claim_pods_free(cp);
    gpuop_findings_set_claim_pods(f, NULL, 0);
    if (!f->by_reason[GPUOP_REASON_CLAIM_WITHOUT_PLUGIN] &&
        !f->by_reason[GPUOP_REASON_GPUS_ADVERTISED_TWICE])
        return 0;
    int rc = entries(cp, f);
    const struct gpuop_claim *c;
    size_t it = 0;
    while (rc == 0 && gpuop_caches_next_claim(caches, &it, &c)) {
        struct gpuop_stranded *e = bsearch(c->node, cp->a, cp->n, sizeof(*cp->a), by_node);
        if (e && c->npods && c->devices)
            e->gpus += c->devices;
        if (e && !c->devices && cp->kind[e - cp->a] == ENTRY_HELD)
            continue; /* holds no GPU: not among the pods holding them */
        for (size_t k = 0; e && rc == 0 && k < c->npods; k++)
            rc = add_pod(cp, e, c, gpuop_claim_pod(c, k, NULL));
    }
    if (rc < 0) {
        gpuop_ctl_claim_pods_free(cp);
        return rc;
    }
    for (size_t i = 0; i < cp->n; i++)
        gpuop_sort(cp->a[i].names, cp->a[i].nnames, sizeof(cp->a[i].names[0]), by_str);
    gpuop_findings_set_claim_pods(f, cp->a, cp->n);
    return 0;
}
