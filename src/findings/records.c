/*
 * records.c - the node as the unit of derived state: one record per node,
 * kept between reconciles, and the policy-wide sums they add up to.
 *
 * A record (struct record) is what judging one node made: its result,
 * its tally (findings_int.h) and its findings, with owned copies of what
 * their details and messages name (the pod, the taint, the label value:
 * gpuop_findings_ref_own), in one allocation. Nothing in it points into
 * the inputs, so a record stays readable however the caches change: no
 * rule ties its lifetime to theirs. A pod is copied once however many
 * findings name it, packed (detail.c: 16 bytes, its name, its waiting
 * reason and message only when a finding's detail reads them), and read
 * out through gpuop_findings_ref_pod.
 *
 * The records live in an array sorted by name (what the status, the
 * Events' diff and the stranded view read in order, and where a node's
 * record is found by binary search); each is one block, its node's name
 * in it too, bump-allocated in the records' own chunks (struct chunk),
 * each of pages of its own (pages.h): a chunk among the heap's
 * short-lived blocks kept their pages resident (0.25 to 0.5 MiB of the
 * 5,000-node rollout's peak).
 * A rollout replaces a record at every event of its node while the
 * status documents of its reconciles come and go: one malloc each, the
 * records ended up scattered among the documents' freed holes, each
 * pinning its page (0.6 MiB resident for 0.3 MiB of records at 1,000
 * nodes, bench_analysis); from gpuop_pool's slabs the slabs of every
 * size a record had during the rollout stayed (1.1 MiB). A replaced
 * record's bytes are counted dead instead; once they pass an eighth of
 * the live ones (and COMPACT_MIN), the next view first copies each old
 * chunk's live records into new chunks and frees it, one chunk after
 * the other.
 *
 * The records whose judgement the clock moves (a tally's next_change)
 * are also in a min-heap on it (due; a record knows its place, at), kept
 * as records are replaced, swept and moved: gpuop_records_due walks only
 * the heap's entries that came, not every record.
 *
 * The header (hdr, a
 * struct gpuop_findings without nodes) holds what every node is judged
 * against (gpuop_findings_setup) and the sums: judging a node takes its
 * old record's contribution back (gpuop_findings_count_node, sign -1)
 * and adds the new one's. There is one way to judge: a node at a time
 * (gpuop_records_judge, the same gpuop_findings_judge_node gpuop_analyze
 * calls); "every node" is every node judged so, then the records of nodes
 * no longer there swept.
 *
 * gpuop_records_view shows the records as a struct gpuop_findings for
 * the readers of a findings set (the status, the Events, the stranded
 * pods, `gpuop check`'s report): its nodes are copies of the records'
 * results in name order (idle_s aged to now, first the set's ordinal),
 * each pointing at its record's findings (nodes[i].findings; the view has
 * no items array: a second copy of every finding was the 5,000-node
 * rollout's peak), numbered there with the node's index in this view;
 * next_change the earliest of the records', the stranded pods counted.
 * Its nodes array is reused from one view to the next, and given back
 * when far larger than the view.
 *
 * A view is valid until the next gpuop_records_view, gpuop_records_setup
 * (which frees the texts the header's operands borrow) or
 * gpuop_records_free, and the judging in between leaves it as it was:
 * a replaced record's bytes are only counted dead, and the one place
 * chunks are freed (compact) runs at the start of the next view, which
 * overwrites the nodes array anyway. The controller takes the view and
 * reads it within one status reconcile (controller.c,
 * findings_and_status); nothing keeps it (test_view_outlives_judging).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuop/analysis.h"
#include "gpuop/pages.h"
#include "gpuop/sort.h"

#include "findings_int.h"

/* Most findings one node can have: per operand one of each table that
 * finds (not running, advertises, unexpected, ordering). */
#define NODE_FINDINGS_MAX (4 * GPUOP_OPERAND_MAX)

/* The records' chunks: the first and smallest one's bytes, and a new
 * one's share of the live records' bytes (1 / CHUNK_SHARE_DIV) when
 * larger. Records are CHUNK_ALIGN-aligned. */
#define CHUNK_MIN       ((size_t)4096)
#define CHUNK_SHARE_DIV 8
#define CHUNK_ALIGN     8
/* The chunks are compacted once their dead bytes pass a share of the
 * live ones (1 / COMPACT_DEAD_DIV) and COMPACT_MIN: a rollout replaces
 * records at every reconcile, and the chunks stay within about 1.125
 * times the live records (the 5,000-node rollout's peak is mostly
 * records: an eighth rather than a quarter took 0.27 MiB off
 * bench_analysis's largest live heap, for twice the compactions). */
#define COMPACT_DEAD_DIV 8
#define COMPACT_MIN      ((size_t)16384)

/* The view's arrays are given back when their room is more than this
 * many times what the view needs, plus VIEW_SLACK_MIN. */
#define VIEW_SLACK_TIMES 2
#define VIEW_SLACK_MIN   64

struct record {
    struct gpuop_node_result r; /* r.name: the copy after the items' */
    struct gpuop_node_tally t;
    uint32_t mark;                /* the sweep's epoch it was judged in */
    uint32_t size;                /* bytes in its chunk */
    uint32_t at;                  /* its index in due, NOT_DUE when none, DEAD replaced */
    struct gpuop_finding items[]; /* r.nfindings, then the copies their refs point at,
                                     then the name */
};

_Static_assert(sizeof(struct record) <= 96, "a record is 96 bytes before its findings");

/* struct record's at when it is not in the heap (no next_change), and
 * when it was replaced (its bytes dead). */
#define NOT_DUE UINT32_MAX
#define DEAD    (UINT32_MAX - 1)

/* Where records are bump-allocated; whole pages of its own (pages.h),
 * given back whole. */
struct chunk {
    struct chunk *next; /* older */
    size_t size, used;  /* bytes of data */
    max_align_t data[];
};

struct gpuop_records {
    struct gpuop_findings hdr; /* the setup and the sums; items: one node's, scratch */
    struct record **sorted;    /* by name (borrowed from chunks) */
    size_t n, cap;
    struct chunk *chunks; /* newest first (new) */
    size_t live, dead;    /* bytes of records in sorted, of records replaced */
    size_t moving;        /* a compaction's live bytes still to copy; 0 none */
    struct record **due;  /* the records with a next_change, a min-heap on it */
    size_t ndue, due_cap;
    uint64_t fp;                  /* gpuop_findings_setup's, of the last setup */
    bool said[GPUOP_OPERAND_MAX]; /* its controller said why it creates no pod */
    bool set_up;                  /* a setup was read */
    uint32_t epoch;               /* of the last gpuop_records_begin_all */
    struct gpuop_findings view;   /* gpuop_records_view's; borrows from the records */
    size_t view_cap;              /* view.nodes' room */
};

int gpuop_records_new(struct gpuop_records **out)
{
    struct gpuop_records *rec = calloc(1, sizeof(*rec));
    if (!rec)
        return GPUOP_ENOMEM;
    *out = rec;
    return 0;
}

void gpuop_records_free(struct gpuop_records *rec)
{
    if (!rec)
        return;
    while (rec->chunks) {
        struct chunk *c = rec->chunks;
        rec->chunks = c->next;
        gpuop_pages_free(c, sizeof(*c) + c->size);
    }
    free(rec->sorted);
    free(rec->due);
    free(rec->hdr.items);
    gpuop_arena_free(&rec->hdr.names);
    free(rec->view.nodes);
    free(rec);
}

size_t gpuop_records_count(const struct gpuop_records *rec)
{
    return rec->n;
}

/* gpuop_sort_find's order of a name against a record (sorted holds
 * pointers). */
static int name_vs_record(const void *key, const void *item)
{
    return strcmp(key, (*(const struct record *const *)item)->r.name);
}

/* Position of name in sorted: found, or where it goes. */
static bool sorted_pos(const struct gpuop_records *rec, const char *name, size_t *pos)
{
    return gpuop_sort_find(rec->sorted, rec->n, sizeof(*rec->sorted), name, name_vs_record, pos);
}

int gpuop_records_setup(struct gpuop_records *rec, const struct gpuop_policy *p,
                        const struct gpuop_ds *const *ds, size_t nds,
                        gpuop_analysis_rejudge_fn rejudge, void *arg)
{
    struct gpuop_findings *f = &rec->hdr;
    uint64_t fp;
    gpuop_arena_free(&f->names); /* last setup's texts: the records hold copies */
    int rc = gpuop_findings_setup(f, p, ds, nds, &fp);
    for (int o = 0; rc == 0 && o < f->noperands; o++) { /* owned, not the DaemonSet's */
        const char *says = f->operands[o].controller_says;
        if (says && !(f->operands[o].controller_says = gpuop_arena_strdup(&f->names, says)))
            rc = GPUOP_ENOMEM;
    }
    if (rc < 0) {
        rec->set_up = false;
        return rc;
    }
    bool all = !rec->set_up || fp != rec->fp;
    rec->set_up = true;
    rec->fp = fp;
    bool moved[GPUOP_OPERAND_MAX] = {0}, any = false;
    for (int o = 0; o < f->noperands; o++) {
        bool said = f->operands[o].controller_says != NULL;
        any |= moved[o] = said != rec->said[o];
        rec->said[o] = said;
    }
    /* the steps finding_progress judges on what the controller says */
    for (size_t i = 0; rejudge && !all && any && i < rec->n; i++) {
        const struct record *r = rec->sorted[i];
        for (uint32_t k = 0; k < r->r.nfindings; k++)
            if (r->items[k].reason == GPUOP_REASON_POD_NOT_CREATED && moved[r->items[k].operand]) {
                rejudge(r->r.name, arg);
                break;
            }
    }
    return all ? 1 : 0;
}

/* ---- the heap of records on their next_change ---- */

static long long due_key(const struct gpuop_records *rec, size_t i)
{
    return rec->due[i]->t.next_change;
}

static void due_set(struct gpuop_records *rec, size_t i, struct record *rd)
{
    rec->due[i] = rd;
    rd->at = (uint32_t)i;
}

static void due_swap(struct gpuop_records *rec, size_t i, size_t j)
{
    struct record *x = rec->due[i];
    due_set(rec, i, rec->due[j]);
    due_set(rec, j, x);
}

/* The entry at i moved to where its key belongs. */
static void due_fix(struct gpuop_records *rec, size_t i)
{
    while (i > 0 && due_key(rec, (i - 1) / 2) > due_key(rec, i)) {
        due_swap(rec, (i - 1) / 2, i);
        i = (i - 1) / 2;
    }
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < rec->ndue && due_key(rec, l) < due_key(rec, m))
            m = l;
        if (l + 1 < rec->ndue && due_key(rec, l + 1) < due_key(rec, m))
            m = l + 1;
        if (m == i)
            return;
        due_swap(rec, i, m);
        i = m;
    }
}

/* Room in the heap for one more: 0 or GPUOP_ENOMEM. */
static int due_room(struct gpuop_records *rec)
{
    if (rec->ndue < rec->due_cap)
        return 0;
    size_t cap = rec->due_cap ? 2 * rec->due_cap : 64;
    struct record **d = realloc(rec->due, cap * sizeof(*d));
    if (!d)
        return GPUOP_ENOMEM;
    rec->due = d;
    rec->due_cap = cap;
    return 0;
}

/* Record old (NULL: none) leaves the heap and rd (NULL: none) enters it,
 * each if it has a next_change; rd in old's place when both do. The
 * room for rd was made (due_room). */
static void due_replace(struct gpuop_records *rec, struct record *old, struct record *rd)
{
    bool in = rd && rd->t.next_change;
    if (old && old->at != NOT_DUE) {
        size_t i = old->at;
        old->at = NOT_DUE;
        if (!in) {
            struct record *last = rec->due[--rec->ndue];
            if (i == rec->ndue)
                return;
            due_set(rec, i, last);
        } else {
            due_set(rec, i, rd);
        }
        due_fix(rec, i);
    } else if (in) {
        due_set(rec, rec->ndue++, rd);
        due_fix(rec, rec->ndue - 1);
    }
}

/* due for the heap's entries from i on whose next_change came. */
static void due_walk(const struct gpuop_records *rec, size_t i, long long now,
                     gpuop_analysis_rejudge_fn due, void *arg)
{
    if (i >= rec->ndue || due_key(rec, i) > now)
        return; /* nor any below it */
    due(rec->due[i]->r.name, arg);
    due_walk(rec, 2 * i + 1, now, due, arg);
    due_walk(rec, 2 * i + 2, now, due, arg);
}

void gpuop_records_due(const struct gpuop_records *rec, long long now,
                       gpuop_analysis_rejudge_fn due, void *arg)
{
    due_walk(rec, 0, now, due, arg);
}

void gpuop_records_begin_all(struct gpuop_records *rec)
{
    rec->epoch++;
}

/* A new chunk of at least size bytes, first in rec's; NULL when out of
 * memory. */
static struct chunk *chunk_new(struct gpuop_records *rec, size_t size)
{
    size_t want = rec->live / CHUNK_SHARE_DIV;
    if (rec->moving && rec->moving < want)
        want = rec->moving; /* a compaction's last chunk: no room left over */
    if (want < CHUNK_MIN)
        want = CHUNK_MIN;
    if (want < size)
        want = size;
    size_t got;
    struct chunk *c = gpuop_pages_alloc(sizeof(*c) + want, &got);
    if (!c)
        return NULL;
    c->size = got - sizeof(*c); /* the pages' rest is room too */
    c->used = 0;
    c->next = rec->chunks;
    rec->chunks = c;
    return c;
}

/* size bytes for a record, borrowed from rec's chunks (counted live),
 * or NULL when out of memory. */
static struct record *record_alloc(struct gpuop_records *rec, size_t size)
{
    size = (size + CHUNK_ALIGN - 1) / CHUNK_ALIGN * CHUNK_ALIGN;
    struct chunk *c = rec->chunks;
    if ((!c || c->size - c->used < size) && !(c = chunk_new(rec, size)))
        return NULL;
    struct record *rd = (struct record *)(void *)((char *)c->data + c->used);
    c->used += size;
    rec->live += size;
    rd->size = (uint32_t)size;
    return rd;
}

/* Record rd (NULL: none) is replaced (out of the heap): its bytes are
 * dead. */
static void record_drop(struct gpuop_records *rec, struct record *rd)
{
    if (rd) {
        rec->live -= rd->size;
        rec->dead += rd->size;
        rd->at = DEAD;
    }
}

/* Whether items[k] is the first of items to name its pod (or names
 * none), and then, in *waits, whether any of them reads the pod's
 * waiting reason (its copy keeps it). */
static bool pod_first(const struct gpuop_finding *items, size_t n, size_t k, bool *waits)
{
    const void *key = gpuop_findings_ref_key(&items[k]);
    *waits = false;
    for (size_t j = 0; key && j < k; j++)
        if (gpuop_findings_ref_key(&items[j]) == key)
            return false;
    for (size_t j = k; key && j < n; j++)
        *waits |= gpuop_findings_ref_key(&items[j]) == key && gpuop_findings_ref_waits(&items[j]);
    return true;
}

/* A record of node name, r, t and items (n of them, borrowing from the
 * inputs, or a record's own), in rec's chunks, with owned copies of what
 * they borrow, one a pod however many findings name it; NULL when out of
 * memory. */
static struct record *record_make(struct gpuop_records *rec, const char *name,
                                  const struct gpuop_node_result *r,
                                  const struct gpuop_node_tally *t,
                                  const struct gpuop_finding *items, size_t n)
{
    size_t structs = 0, chars = 0, len = strlen(name) + 1;
    bool waits;
    for (size_t k = 0; k < n; k++)
        if (pod_first(items, n, k, &waits))
            gpuop_findings_ref_size(&items[k], waits, &structs, &chars);
    size_t head = sizeof(struct record) + n * sizeof(*items);
    struct record *rd = record_alloc(rec, head + structs + chars + len);
    if (!rd)
        return NULL;
    rd->r = *r;
    rd->r.findings = rd->items;
    rd->r.first = 0;
    rd->t = *t;
    char *at = (char *)rd + head, *ch = at + structs;
    rd->r.name = memcpy(ch + chars, name, len);
    rd->at = NOT_DUE;
    for (size_t k = 0; k < n; k++) {
        rd->items[k] = items[k];
        rd->items[k].node = 0;
        if (pod_first(items, n, k, &waits)) {
            gpuop_findings_ref_own(&rd->items[k], waits, &at, &ch);
            continue;
        }
        size_t j = 0; /* the pod an earlier finding named: its copy */
        while (gpuop_findings_ref_key(&items[j]) != gpuop_findings_ref_key(&items[k]))
            j++;
        rd->items[k].ref = rd->items[j].ref;
        rd->items[k].owned = rd->items[j].owned;
    }
    return rd;
}

/* Record rd (new; NULL: the node has none now) replaces the one at pos
 * in sorted (found: there is one; else pos is where rd goes). 0 or
 * GPUOP_ENOMEM. */
static int place(struct gpuop_records *rec, size_t pos, bool found, struct record *rd)
{
    struct record *old = found ? rec->sorted[pos] : NULL;
    if (rd && rd->t.next_change && due_room(rec) < 0)
        return GPUOP_ENOMEM;
    if (old && rd) {
        rec->sorted[pos] = rd;
    } else if (old) {
        memmove(rec->sorted + pos, rec->sorted + pos + 1,
                (rec->n - pos - 1) * sizeof(*rec->sorted));
        rec->n--;
    } else if (rd) {
        if (rec->n == rec->cap) {
            size_t cap = rec->cap ? 2 * rec->cap : 64;
            struct record **s = realloc(rec->sorted, cap * sizeof(*s));
            if (!s)
                return GPUOP_ENOMEM;
            rec->sorted = s;
            rec->cap = cap;
        }
        memmove(rec->sorted + pos + 1, rec->sorted + pos, (rec->n - pos) * sizeof(*rec->sorted));
        rec->sorted[pos] = rd;
        rec->n++;
    }
    due_replace(rec, old, rd);
    record_drop(rec, old);
    return 0;
}

/* Takes back the kinds and reasons push counted for hdr's scratch items. */
static void uncount_scratch(struct gpuop_findings *f)
{
    for (size_t k = 0; k < f->nitems; k++)
        f->by_kind[f->items[k].kind]--, f->by_reason[f->items[k].reason]--;
    f->nitems = 0;
}

int gpuop_records_judge(struct gpuop_records *rec, const char *name, const struct gpuop_node *node,
                        const struct gpuop_pod *const *pods, size_t npods, long long now)
{
    struct gpuop_findings *f = &rec->hdr;
    if (!rec->set_up || !name || (node && (!node->name || strcmp(node->name, name))))
        return GPUOP_EINVAL;
    size_t pos;
    bool found = sorted_pos(rec, name, &pos);
    struct record *old = found ? rec->sorted[pos] : NULL, *rd = NULL;
    struct gpuop_node_result r = {0};
    struct gpuop_node_tally t = {0};
    f->nitems = 0;
    if (node) {
        const struct gpuop_pod *bp[GPUOP_OPERAND_MAX];
        gpuop_findings_best_pods(name, pods, npods, f->noperands, bp);
        int rc = gpuop_findings_judge_node(f, 0, node, bp, now, &r, &t);
        if (rc < 0 || f->nitems > NODE_FINDINGS_MAX) {
            uncount_scratch(f);
            return rc < 0 ? rc : GPUOP_EINVAL;
        }
        if (gpuop_findings_listed(&r) &&
            !(rd = record_make(rec, name, &r, &t, f->items, f->nitems))) {
            uncount_scratch(f);
            return GPUOP_ENOMEM;
        }
    }
    if (rd)
        rd->mark = rec->epoch;
    if (old)
        gpuop_findings_count_node(f, &old->r, &old->t, old->items, -1);
    if (rd)
        gpuop_findings_count_node(f, &rd->r, &rd->t, NULL, 1); /* push counted its items */
    f->nitems = 0;
    int rc = place(rec, pos, found, rd);
    if (rc < 0)
        record_drop(rec, rd);
    return rc; /* after a failure the sums are off: the caller starts again */
}

void gpuop_records_sweep(struct gpuop_records *rec)
{
    struct gpuop_findings *f = &rec->hdr;
    size_t kept = 0;
    for (size_t i = 0; i < rec->n; i++) {
        struct record *rd = rec->sorted[i];
        if (rd->mark == rec->epoch) {
            rec->sorted[kept++] = rd;
            continue;
        }
        gpuop_findings_count_node(f, &rd->r, &rd->t, rd->items, -1);
        due_replace(rec, rd, NULL);
        record_drop(rec, rd);
    }
    rec->n = kept;
}

static int by_pod_node(const void *a, const void *b)
{
    const struct gpuop_pod *x = *(const struct gpuop_pod *const *)a;
    const struct gpuop_pod *y = *(const struct gpuop_pod *const *)b;
    return strcmp(x->node, y->node);
}

/* The pods of in with a node, sorted by it (new, *n of them), or NULL. */
static const struct gpuop_pod **pods_by_node(const struct gpuop_analysis_in *in, size_t *n)
{
    const struct gpuop_pod **s = malloc((in->npods ? in->npods : 1) * sizeof(*s));
    *n = 0;
    for (size_t i = 0; s && i < in->npods; i++)
        if (in->pods && in->pods[i] && in->pods[i]->node)
            s[(*n)++] = in->pods[i];
    if (s)
        gpuop_sort(s, *n, sizeof(*s), by_pod_node);
    return s;
}

/* Where node name's pods begin among sorted pods s (n). */
static size_t pods_from(const struct gpuop_pod *const *s, size_t n, const char *name)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(s[mid]->node, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int gpuop_records_judge_all(struct gpuop_records *rec, const struct gpuop_analysis_in *in)
{
    const struct gpuop_pod **all = NULL;
    size_t nall = 0;
    if (!in->pods_of && !(all = pods_by_node(in, &nall)))
        return GPUOP_ENOMEM;
    int rc = 0;
    gpuop_records_begin_all(rec);
    for (size_t i = 0; rc == 0 && i < in->nnodes; i++) {
        const struct gpuop_node *nd = in->nodes ? in->nodes[i] : NULL;
        if (!nd || !nd->name)
            continue;
        const struct gpuop_pod *mine[GPUOP_ANALYSIS_NODE_PODS_MAX];
        const struct gpuop_pod *const *pods = mine;
        size_t n = 0;
        if (in->pods_of) {
            rc = in->pods_of(in->pods_arg, nd->name, mine, GPUOP_ANALYSIS_NODE_PODS_MAX, &n);
        } else {
            size_t at = pods_from(all, nall, nd->name);
            while (at + n < nall && !strcmp(all[at + n]->node, nd->name))
                n++;
            pods = all + at;
        }
        if (rc == 0)
            rc = gpuop_records_judge(rec, nd->name, nd, pods, n, in->now);
    }
    free(all);
    if (rc == 0)
        gpuop_records_sweep(rec);
    return rc;
}

/* Room for n nodes in the view: grown when short, given back when far
 * larger (a failed shrink keeps it). 0 or GPUOP_ENOMEM. */
static int view_room(struct gpuop_records *rec, size_t n)
{
    bool shrink = rec->view_cap > VIEW_SLACK_TIMES * n + VIEW_SLACK_MIN;
    if (n <= rec->view_cap && !shrink)
        return 0;
    struct gpuop_node_result *a = realloc(rec->view.nodes, n * sizeof(*a));
    if (!a)
        return shrink ? 0 : GPUOP_ENOMEM;
    rec->view.nodes = a;
    rec->view_cap = n;
    return 0;
}

/* Chunk c's records kept where they are (a compaction that could not go
 * on): c and the chunks after it back in rec's, their dead bytes
 * counted again. */
static void keep(struct gpuop_records *rec, struct chunk *c)
{
    struct chunk **tail = &rec->chunks;
    while (*tail)
        tail = &(*tail)->next;
    *tail = c;
    for (; c; c = c->next)
        for (size_t off = 0; off < c->used;) {
            const struct record *rd = (const struct record *)(const void *)((char *)c->data + off);
            off += rd->size;
            rec->dead += rd->at == DEAD ? rd->size : 0;
        }
}

/* Once the chunks' dead bytes passed their share: each old chunk's live
 * records copied into new chunks, then the old chunk freed, one after
 * the other (the old chunks and the new ones hold about 1.25 times the
 * live records at most, where one new chunk for all would need 2.125);
 * kept where they are when a new chunk cannot be had. */
static void compact(struct gpuop_records *rec)
{
    if (rec->dead <= rec->live / COMPACT_DEAD_DIV || rec->dead < COMPACT_MIN)
        return;
    struct chunk *old = rec->chunks;
    size_t live = rec->live; /* the same after: record_alloc counts the copies */
    rec->chunks = NULL;
    rec->dead = 0;
    rec->moving = live;
    while (old) {
        struct chunk *c = old;
        for (size_t off = 0; off < c->used;) {
            struct record *rd = (struct record *)(void *)((char *)c->data + off);
            off += rd->size;
            if (rd->at == DEAD)
                continue;
            struct record *copy =
                record_make(rec, rd->r.name, &rd->r, &rd->t, rd->items, rd->r.nfindings);
            if (!copy) {
                rec->live = live;
                rec->moving = 0;
                keep(rec, c);
                return;
            }
            rec->moving -= rd->size;
            size_t pos;
            copy->mark = rd->mark;
            if (rd->at != NOT_DUE)
                due_set(rec, rd->at, copy);
            if (sorted_pos(rec, rd->r.name, &pos))
                rec->sorted[pos] = copy;
            rd->at = DEAD;
        }
        old = c->next;
        gpuop_pages_free(c, sizeof(*c) + c->size);
    }
    rec->live = live;
    rec->moving = 0;
}

int gpuop_records_view(struct gpuop_records *rec, const struct gpuop_stranded *st, size_t nst,
                       long long now, struct gpuop_findings **out)
{
    compact(rec);
    int rc = view_room(rec, rec->n ? rec->n : 1);
    if (rc < 0)
        return rc;
    struct gpuop_findings *v = &rec->view;
    struct gpuop_node_result *nodes = v->nodes;
    *v = rec->hdr; /* the sums and the setup; the nodes are the view's own */
    memset(&v->names, 0, sizeof(v->names));
    v->nodes = nodes;
    v->items = NULL; /* each node's are its record's */
    v->nnodes = rec->n;
    v->nitems = 0;
    for (size_t i = 0; i < rec->n; i++) {
        struct record *rd = rec->sorted[i];
        struct gpuop_node_result *r = &v->nodes[i];
        *r = rd->r;
        r->first = (uint32_t)v->nitems;
        r->idle_s = gpuop_findings_idle_since(rd->t.idle_from, now);
        for (uint32_t k = 0; k < rd->r.nfindings; k++)
            rd->items[k].node = (uint32_t)i; /* the view's index of its node */
        v->nitems += rd->r.nfindings;
    }
    v->next_change = rec->ndue ? due_key(rec, 0) : 0; /* the earliest of the records' */
    gpuop_findings_set_stranded(v, st, nst);
    gpuop_findings_set_claim_pods(v, NULL, 0); /* the controller's, set after */
    *out = v;
    return 0;
}

/* ---- the verify oracle's comparison: a view against a full pass ---- */

#define SAME(what, x, y)                                                                           \
    do {                                                                                           \
        if ((long long)(x) != (long long)(y)) {                                                    \
            snprintf(why, size, "%s: %lld != %lld", what, (long long)(x), (long long)(y));         \
            return false;                                                                          \
        }                                                                                          \
    } while (0)

static const char *str(const char *s)
{
    return s ? s : "(null)";
}

#define SAME_STR(what, x, y)                                                                       \
    do {                                                                                           \
        if (strcmp(str(x), str(y))) {                                                              \
            snprintf(why, size, "%s: \"%s\" != \"%s\"", what, str(x), str(y));                     \
            return false;                                                                          \
        }                                                                                          \
    } while (0)

/* Are node p of a's findings those of node q of b (of as many)? */
static bool same_findings(const struct gpuop_findings *a, const struct gpuop_findings *b,
                          const struct gpuop_node_result *p, const struct gpuop_node_result *q,
                          char *why, size_t size)
{
    char ma[GPUOP_FINDING_MESSAGE_MAX], mb[GPUOP_FINDING_MESSAGE_MAX], what[96];
    for (uint32_t k = 0; k < q->nfindings; k++) {
        const struct gpuop_finding *x = &p->findings[k], *y = &q->findings[k];
        snprintf(what, sizeof(what), "finding %zu (%s %s)", (size_t)q->first + k, q->name,
                 gpuop_reason_get(y->reason)->name);
        SAME(what, x->node, y->node);
        SAME(what, x->operand, y->operand);
        SAME(what, x->kind, y->kind);
        SAME(what, x->reason, y->reason);
        SAME(what, x->prereq, y->prereq);
        SAME(what, gpuop_finding_since(x), gpuop_finding_since(y));
        gpuop_finding_detail(x, ma, sizeof(ma));
        gpuop_finding_detail(y, mb, sizeof(mb));
        SAME_STR(what, ma, mb);
        gpuop_finding_message(a, x, ma, sizeof(ma));
        gpuop_finding_message(b, y, mb, sizeof(mb));
        SAME_STR(what, ma, mb);
    }
    return true;
}

bool gpuop_findings_same(const struct gpuop_findings *a, const struct gpuop_findings *b, char *why,
                         size_t size)
{
    char what[96];
    SAME("nnodes", a->nnodes, b->nnodes);
    SAME("nitems", a->nitems, b->nitems);
    SAME("noperands", a->noperands, b->noperands);
    SAME("gpu_nodes", a->gpu_nodes, b->gpu_nodes);
    SAME("complete_nodes", a->complete_nodes, b->complete_nodes);
    SAME("violations", a->violations, b->violations);
    SAME("finding_nodes", a->finding_nodes, b->finding_nodes);
    SAME("progressing_nodes", a->progressing_nodes, b->progressing_nodes);
    SAME("advertised_gpus", a->advertised_gpus, b->advertised_gpus);
    SAME("stranded_pods", a->stranded_pods, b->stranded_pods);
    SAME("next_change", a->next_change, b->next_change);
    SAME("terminating_grace_s", a->terminating_grace_s, b->terminating_grace_s);
    for (int k = 0; k < GPUOP_KIND_COUNT; k++)
        SAME(gpuop_kind_name(k), a->by_kind[k], b->by_kind[k]);
    for (int k = 0; k < GPUOP_REASON_COUNT; k++)
        SAME(gpuop_reason_get(k)->name, a->by_reason[k], b->by_reason[k]);
    for (int o = 0; o < a->noperands; o++) {
        const struct gpuop_operand_result *x = &a->operands[o], *y = &b->operands[o];
        snprintf(what, sizeof(what), "operand %s", gpuop_operand_get(o)->name);
        SAME(what, x->enabled, y->enabled);
        SAME(what, x->ds_present, y->ds_present);
        SAME(what, x->expected_nodes, y->expected_nodes);
        SAME(what, x->running_nodes, y->running_nodes);
        SAME(what, x->desired, y->desired);
        SAME(what, x->ready, y->ready);
        SAME_STR(what, x->controller_says, y->controller_says);
        SAME_STR(what, x->daemonsets, y->daemonsets);
    }
    for (size_t i = 0; i < a->nnodes; i++) {
        const struct gpuop_node_result *x = &a->nodes[i], *y = &b->nodes[i];
        SAME_STR("node name", x->name, y->name);
        snprintf(what, sizeof(what), "node %s", y->name);
        SAME(what, x->gpu, y->gpu);
        SAME(what, x->progressing, y->progressing);
        SAME(what, x->idle_s, y->idle_s);
        SAME(what, x->upgrade, y->upgrade);
        SAME(what, x->host_provided, y->host_provided);
        SAME(what, x->preinstalled, y->preinstalled);
        SAME(what, x->first, y->first);
        SAME(what, x->nfindings, y->nfindings);
        SAME(what, memcmp(x->cell, y->cell, sizeof(x->cell)), 0);
        SAME(what, memcmp(&x->gpus, &y->gpus, sizeof(x->gpus)), 0);
    }
    for (size_t i = 0; i < a->nnodes; i++)
        if (!same_findings(a, b, &a->nodes[i], &b->nodes[i], why, size))
            return false;
    return true;
}
