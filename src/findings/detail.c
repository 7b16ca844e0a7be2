/*
 * detail.c - what a finding says beyond its reason, read from the inputs it
 * borrows: its detail (an untolerated taint, a label's value, a pod's
 * state), since when its situation holds, its node's name; and the
 * stranded GPU pods of a node (gathered by the controller, only shown
 * here), and on a node with GpusAdvertisedTwice the GPUs its pods hold
 * against its GPUs (the over-admission, from the same gatherings). Pure reads of a findings set;
 * the judgement is analysis.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuop/clock.h"
#include "gpuop/analysis.h"
#include "gpuop/sharing.h"

#include "findings_int.h"

/* What a finding's ref points at, by reason. */
enum ref_type {
    REF_NONE,
    REF_TAINT,
    REF_LABEL,
    REF_POD_NAME,  /* the pod, its name the detail */
    REF_POD_STATE, /* the pod, its state the detail */
    REF_POD        /* the running pod, no detail (what the templates say of it) */
};

static enum ref_type ref_type(int reason)
{
    switch (reason) {
    case GPUOP_REASON_TAINT_NOT_TOLERATED:
        return REF_TAINT;
    case GPUOP_REASON_DAEMONSET_ABSENT:  /* a per-OS pool's DaemonSet name, or NULL */
    case GPUOP_REASON_OS_LABELS_MISSING: /* the labels the node lacks */
    case GPUOP_REASON_LABEL_EMPTY:
    case GPUOP_REASON_LABEL_PAUSED:
    case GPUOP_REASON_LABEL_PAUSED_LEFT_OVER:
    case GPUOP_REASON_LABEL_INVALID:
    case GPUOP_REASON_HELD_BY_PREREQUISITE:
    case GPUOP_REASON_LABEL_CHANGED:
    case GPUOP_REASON_DRIVER_POOL_CONFLICT:       /* the pools, "a100,h100" */
    case GPUOP_REASON_SHARING_CONFIG_KEY_MISSING: /* the node's config label's value */
        return REF_LABEL;
    case GPUOP_REASON_OPERAND_DISABLED:
    case GPUOP_REASON_NODE_OPTED_OUT:
    case GPUOP_REASON_LABEL_NOT_TRUE:
    case GPUOP_REASON_NOT_GPU_NODE:
    case GPUOP_REASON_POD_STUCK_TERMINATING:
    case GPUOP_REASON_DEVICE_PLUGIN_ADVERTISES_NOTHING:
    case GPUOP_REASON_NO_SLICES_PUBLISHED:
    case GPUOP_REASON_SHARED_ALLOCATABLE_DIFFERS:
    case GPUOP_REASON_WAITING_FOR_GATE:
    case GPUOP_REASON_DRA_PLUGIN_STALE:
        return REF_POD_NAME;
    case GPUOP_REASON_POD_UNSCHEDULABLE:
    case GPUOP_REASON_IMAGE_PULL_FAILED:
    case GPUOP_REASON_CRASH_LOOP:
    case GPUOP_REASON_POD_PENDING:
    case GPUOP_REASON_POD_NOT_READY:
    case GPUOP_REASON_POD_FAILED:
    case GPUOP_REASON_POD_TERMINATING:
        return REF_POD_STATE;
    case GPUOP_REASON_DEVICE_PLUGIN_WITHOUT_TOOLKIT:
    case GPUOP_REASON_PREREQUISITE_NOT_RUNNING:
    case GPUOP_REASON_DEVICE_PLUGIN_WITHOUT_MPS_DAEMON:
        return REF_POD;
    default:
        return REF_NONE;
    }
}

void gpuop_findings_fmt_time(long long t, char *buf, size_t size)
{
    if (t <= GPUOP_TIME_UNREADABLE)
        snprintf(buf, size, "an unreadable time");
    else
        gpuop_time_format(buf, size, (int64_t)t * GPUOP_US_PER_S, GPUOP_TIME_S);
}

int gpuop_finding_detail(const struct gpuop_finding *x, char *buf, size_t size)
{
    if (size)
        buf[0] = '\0';
    if (!x || !x->ref || gpuop_reason_holds_since(x->reason))
        return 0;
    const struct gpuop_taint *t = x->ref;
    struct gpuop_pod_copy copy;
    const struct gpuop_pod *pod = gpuop_findings_ref_pod(x, &copy);
    const char *wr, *wm, *phase;
    char since[64] = "";
    switch (ref_type(x->reason)) {
    case REF_TAINT:
        return snprintf(buf, size, "%s%s%s:%s", t->key ? t->key : "",
                        t->value && *t->value ? "=" : "", t->value && *t->value ? t->value : "",
                        t->effect ? t->effect : "");
    case REF_LABEL:
        return snprintf(buf, size, "%s", (const char *)x->ref);
    case REF_POD_NAME:
        return snprintf(buf, size, "%s", pod->name ? pod->name : "?");
    case REF_POD_STATE:
        wr = pod->waiting_reason;
        wm = pod->waiting_message;
        phase = gpuop_phase_name(pod->phase);
        if (pod->deleted) {
            char when[32];
            gpuop_findings_fmt_time(pod->deleted, when, sizeof(when));
            snprintf(since, sizeof(since), "terminating since %s, ", when);
        }
        return snprintf(buf, size, "%s is %s%s%s%s%s%s%s, %d restart%s",
                        pod->name ? pod->name : "?", since, phase ? phase : "without phase",
                        !pod->bound ? " (not bound to the node yet)" : "", wr ? ": " : "",
                        wr ? wr : "", wm && *wm ? " - " : "", wm ? wm : "", (int)pod->restarts,
                        pod->restarts == 1 ? "" : "s");
    default:
        return 0;
    }
}

long long gpuop_finding_since(const struct gpuop_finding *x)
{
    if (!x)
        return 0;
    if (x->reason == GPUOP_REASON_POD_NOT_CREATED)
        return x->since;
    if (x->reason == GPUOP_REASON_SHARING_CONFIG_NOT_APPLIED) /* findings_int.h */
        return (long long)(uint32_t)x->since;
    struct gpuop_pod_copy copy;
    const struct gpuop_pod *pod = gpuop_findings_ref_pod(x, &copy);
    if (!pod)
        return 0;
    switch (x->reason) {
    case GPUOP_REASON_POD_STUCK_TERMINATING:
        return pod->deleted;
    case GPUOP_REASON_DEVICE_PLUGIN_ADVERTISES_NOTHING:
    case GPUOP_REASON_NO_SLICES_PUBLISHED:
    case GPUOP_REASON_SHARED_ALLOCATABLE_DIFFERS:
    case GPUOP_REASON_DRA_PLUGIN_STALE: /* the plugin Ready since */
        return pod->ready_since;
    case GPUOP_REASON_WAITING_FOR_GATE:
        return pod->gate_since;
    default:
        return ref_type(x->reason) == REF_POD_STATE ? pod->created : 0;
    }
}

/* ---- owned copies of what a finding borrows (records.c) ---- */

static size_t str_size(const char *s)
{
    return s ? strlen(s) + 1 : 0;
}

/* s copied at *chars (advanced), or NULL for NULL. */
static char *str_own(const char *s, char **chars)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = memcpy(*chars, s, n);
    *chars += n;
    return d;
}

/* ---- a record's packed pod ----
 *
 * A record keeps, for each pod its findings name, what their details and
 * messages read of it, packed among its strings (unaligned, read with
 * memcpy): struct packed, a byte saying whose DaemonSet's name the pod's
 * name starts with, the rest of the name, then, when the pod waits and a
 * finding's detail reads it (gpuop_findings_ref_waits), the waiting
 * reason (unless one of the kubelet's usual ones, then only its number in
 * wait_names[]) and message. A DaemonSet's pod is named "<its
 * DaemonSet>-<5 characters>" (a per-OS pool's "<ds_name>-<tag>-<5>"), and
 * the operand table has the DaemonSet's name: 17 bytes and about 10 of
 * name where a struct gpuop_pod was 48 and the whole name: the 5,000-node
 * rollout's peak is mostly records (docs/internals/memory.md). */

struct packed {        /* 16 bytes */
    uint32_t created;  /* struct gpuop_pod's */
    uint32_t deleted;  /* struct gpuop_pod's */
    uint32_t since;    /* ready_since or gate_since (one union) */
    uint16_t restarts; /* struct gpuop_pod's */
    uint8_t bits;      /* phase (4 bits), bound (1), gate (3) */
    uint8_t wait;      /* the waiting reason: WAIT_NONE, its index in wait_names[], or
                          WAIT_OWN (its string follows the name) */
};

_Static_assert(sizeof(struct packed) == 16, "a packed pod is 16 bytes before its name");

#define WAIT_NONE 0    /* no waiting reason kept (none, or not read) */
#define WAIT_OWN  0xff /* the reason's string follows the name */

/* The byte after struct packed: the operand (< GPUOP_OPERAND_MAX) whose
 * ds_name and a '-' the name's string leaves out, or: */
#define BY_NONE     0xff /* the name is whole */
#define NAME_NONE   0xfe /* the pod had no name (no string for it) */
#define PACKED_HEAD (sizeof(struct packed) + 1)

_Static_assert(GPUOP_OPERAND_MAX < NAME_NONE, "an operand's index in a byte below NAME_NONE");

/* The kubelet's waiting reasons a GPU operand's pod shows most (and the
 * scheduler's, model.h): numbers 1.., kept as one byte. */
static const char *const wait_names[] = {NULL,
                                         "ContainerCreating",
                                         "PodInitializing",
                                         "ErrImagePull",
                                         "ImagePullBackOff",
                                         "CrashLoopBackOff",
                                         "CreateContainerConfigError",
                                         "CreateContainerError",
                                         "InvalidImageName",
                                         "RunContainerError",
                                         "ErrImageNeverPull",
                                         "Unschedulable"};

_Static_assert(sizeof(wait_names) / sizeof(wait_names[0]) < WAIT_OWN,
               "a wait's number below WAIT_OWN");

/* reason's number in wait_names[], WAIT_OWN when it is not there. */
static uint8_t wait_code(const char *reason)
{
    for (size_t i = 1; i < sizeof(wait_names) / sizeof(wait_names[0]); i++)
        if (!strcmp(reason, wait_names[i]))
            return (uint8_t)i;
    return WAIT_OWN;
}

/* The byte after struct packed for pod, and in *skip how many bytes of
 * its name that leaves out. */
static uint8_t name_by(const struct gpuop_pod *pod, size_t *skip)
{
    *skip = 0;
    if (!pod->name)
        return NAME_NONE;
    if (pod->operand < 0 || pod->operand >= gpuop_operand_count() ||
        strlen(pod->name) >= GPUOP_POD_COPY_NAME_MAX)
        return BY_NONE;
    const char *ds = gpuop_operand_get(pod->operand)->ds_name;
    size_t n = strlen(ds);
    if (strncmp(pod->name, ds, n) || pod->name[n] != '-')
        return BY_NONE;
    *skip = n + 1;
    return (uint8_t)pod->operand;
}

/* Bytes of pod packed, waits or not. */
static size_t pack_size(const struct gpuop_pod *pod, bool waits)
{
    size_t skip;
    size_t n = PACKED_HEAD + (name_by(pod, &skip) == NAME_NONE ? 0 : strlen(pod->name) + 1 - skip);
    if (waits && pod->waiting_reason) {
        n += str_size(pod->waiting_message ? pod->waiting_message : "");
        if (wait_code(pod->waiting_reason) == WAIT_OWN)
            n += str_size(pod->waiting_reason);
    }
    return n;
}

/* Bytes of the packed pod at p. */
static size_t packed_size(const char *p)
{
    struct packed h;
    memcpy(&h, p, sizeof(h));
    const char *s = p + PACKED_HEAD;
    if ((uint8_t)p[sizeof(h)] != NAME_NONE)
        s += strlen(s) + 1;
    if (h.wait == WAIT_OWN)
        s += strlen(s) + 1;
    if (h.wait != WAIT_NONE)
        s += strlen(s) + 1;
    return (size_t)(s - p);
}

/* pod packed at *chars (advanced). */
static void pack(const struct gpuop_pod *pod, bool waits, char **chars)
{
    struct packed h = {
        .created = pod->created,
        .deleted = pod->deleted,
        .since = pod->ready_since,
        .restarts = pod->restarts,
        .bits = (uint8_t)(pod->phase | (pod->bound ? 1u << 4 : 0) | (unsigned)pod->gate << 5),
        .wait = waits && pod->waiting_reason ? wait_code(pod->waiting_reason) : WAIT_NONE,
    };
    size_t skip;
    uint8_t by = name_by(pod, &skip);
    memcpy(*chars, &h, sizeof(h));
    (*chars)[sizeof(h)] = (char)by;
    *chars += PACKED_HEAD;
    if (by != NAME_NONE)
        str_own(pod->name + skip, chars);
    if (h.wait == WAIT_OWN)
        str_own(pod->waiting_reason, chars);
    if (h.wait != WAIT_NONE)
        str_own(pod->waiting_message ? pod->waiting_message : "", chars);
}

/* The packed pod at p read out into *copy (its strings there or borrowed
 * from p); operand: the finding's, for a pod whose own is not kept. */
static void unpack(const char *p, int operand, struct gpuop_pod_copy *copy)
{
    struct packed h;
    memcpy(&h, p, sizeof(h));
    uint8_t by = (uint8_t)p[sizeof(h)];
    const char *s = p + PACKED_HEAD;
    struct gpuop_pod *pod = &copy->pod;
    *pod = (struct gpuop_pod){
        .created = h.created,
        .deleted = h.deleted,
        .ready_since = h.since,
        .restarts = h.restarts,
        .operand = (int8_t)(by < GPUOP_OPERAND_MAX ? by : operand),
        .phase = h.bits & 0xf,
        .bound = (h.bits >> 4) & 1,
        .gate = h.bits >> 5,
    };
    if (by < GPUOP_OPERAND_MAX) {
        snprintf(copy->name, sizeof(copy->name), "%s-%s", gpuop_operand_get(by)->ds_name, s);
        pod->name = copy->name;
    } else if (by == BY_NONE) {
        pod->name = (char *)s;
    }
    if (by != NAME_NONE)
        s += strlen(s) + 1;
    if (h.wait == WAIT_NONE)
        return;
    if (h.wait == WAIT_OWN) {
        pod->waiting_reason = (char *)s;
        s += strlen(s) + 1;
    } else {
        pod->waiting_reason = (char *)wait_names[h.wait];
    }
    pod->waiting_message = (char *)s;
}

static bool is_pod_ref(int reason)
{
    int t = ref_type(reason);
    return t == REF_POD_NAME || t == REF_POD_STATE || t == REF_POD;
}

const struct gpuop_pod *gpuop_findings_ref_pod(const struct gpuop_finding *x,
                                               struct gpuop_pod_copy *copy)
{
    if (!x->ref || gpuop_reason_holds_since(x->reason) || !is_pod_ref(x->reason))
        return NULL;
    if (!x->owned)
        return x->ref;
    unpack(x->ref, x->operand, copy);
    return &copy->pod;
}

const void *gpuop_findings_ref_key(const struct gpuop_finding *x)
{
    return x->ref && !gpuop_reason_holds_since(x->reason) && is_pod_ref(x->reason) ? x->ref : NULL;
}

bool gpuop_findings_ref_waits(const struct gpuop_finding *x)
{
    return ref_type(x->reason) == REF_POD_STATE;
}

void gpuop_findings_ref_size(const struct gpuop_finding *x, bool waits, size_t *structs,
                             size_t *chars)
{
    const struct gpuop_pod *pod = x->ref;
    const struct gpuop_taint *t = x->ref;
    if (gpuop_reason_holds_since(x->reason) || !x->ref)
        return;
    switch (ref_type(x->reason)) {
    case REF_TAINT:
        *structs += sizeof(*t);
        *chars += str_size(t->key) + str_size(t->value) + str_size(t->effect);
        break;
    case REF_LABEL:
        *chars += str_size(x->ref);
        break;
    case REF_POD_NAME:
    case REF_POD_STATE:
    case REF_POD:
        *chars += x->owned ? packed_size(x->ref) : pack_size(pod, waits);
        break;
    default:
        break;
    }
}

void gpuop_findings_ref_own(struct gpuop_finding *x, bool waits, char **structs, char **chars)
{
    if (gpuop_reason_holds_since(x->reason) || !x->ref)
        return;
    const struct gpuop_taint *t = x->ref;
    char *pc = *chars;
    size_t n;
    struct gpuop_taint *tc = (struct gpuop_taint *)(void *)*structs;
    switch (ref_type(x->reason)) {
    case REF_TAINT:
        *structs += sizeof(*tc);
        tc->key = str_own(t->key, chars);
        tc->value = str_own(t->value, chars);
        tc->effect = str_own(t->effect, chars);
        x->ref = tc;
        break;
    case REF_LABEL:
        x->ref = str_own(x->ref, chars);
        break;
    case REF_POD_NAME:
    case REF_POD_STATE:
    case REF_POD:
        if (x->owned) { /* a record's, copied as it is (records.c's compaction) */
            n = packed_size(x->ref);
            memcpy(pc, x->ref, n);
            *chars += n;
        } else {
            pack(x->ref, waits, chars);
        }
        x->ref = pc;
        x->owned = true;
        break;
    default:
        x->ref = NULL; /* read by no detail, no message */
        break;
    }
}

const char *gpuop_finding_node(const struct gpuop_findings *f, const struct gpuop_finding *x)
{
    return (f && x && x->node < f->nnodes) ? f->nodes[x->node].name : "";
}

void gpuop_sbuf_add(struct gpuop_sbuf *b, const char *s, size_t n)
{
    if (b->len < b->size) {
        size_t room = b->size - 1 - b->len;
        memcpy(b->buf + b->len, s, n < room ? n : room);
        b->buf[b->len + (n < room ? n : room)] = '\0';
    }
    b->len += n;
}

/* ---- stranded GPU pods (gathered by the controller, rendered here) ---- */

bool gpuop_findings_violates(const struct gpuop_node_result *r)
{
    for (uint32_t k = 0; k < r->nfindings; k++)
        if (r->findings[k].kind == GPUOP_KIND_ORDERING)
            return true;
    return false;
}

static int stranded_cmp(const void *key, const void *elem)
{
    return strcmp(key, ((const struct gpuop_stranded *)elem)->node);
}

const struct gpuop_stranded *gpuop_findings_stranded(const struct gpuop_findings *f,
                                                     const struct gpuop_node_result *r)
{
    if (!f || !r || !f->stranded || !f->nstranded || !r->name || !gpuop_findings_violates(r))
        return NULL;
    return bsearch(r->name, f->stranded, f->nstranded, sizeof(*f->stranded), stranded_cmp);
}

void gpuop_findings_set_stranded(struct gpuop_findings *f, const struct gpuop_stranded *s, size_t n)
{
    f->stranded = s;
    f->nstranded = s ? n : 0;
    f->stranded_pods = 0;
    for (size_t i = 0; i < f->nnodes; i++) {
        const struct gpuop_stranded *e = gpuop_findings_stranded(f, &f->nodes[i]);
        if (e)
            f->stranded_pods += e->count;
    }
}

void gpuop_findings_set_claim_pods(struct gpuop_findings *f, const struct gpuop_stranded *s,
                                   size_t n)
{
    f->claim_pods = s;
    f->nclaim_pods = s ? n : 0;
}

const struct gpuop_stranded *gpuop_findings_claim_pods(const struct gpuop_findings *f,
                                                       const struct gpuop_node_result *r)
{
    if (!f || !r || !f->claim_pods || !f->nclaim_pods || !r->name)
        return NULL;
    return bsearch(r->name, f->claim_pods, f->nclaim_pods, sizeof(*f->claim_pods), stranded_cmp);
}

/* Adds name (borrowed) to o's pods, once. */
static void overadmit_add(struct gpuop_overadmit *o, const char *name)
{
    struct gpuop_stranded *p = &o->pods;
    for (uint32_t k = 0; k < p->nnames; k++)
        if (strcmp(p->names[k], name) == 0)
            return; /* a pod holding both ways: counted once */
    p->count++;
    if (p->nnames < GPUOP_STRANDED_NAMES_MAX)
        p->names[p->nnames++] = name;
}

/* Adds entry e's pods (beyond its kept names: counted only) to o. */
static void overadmit_add_all(struct gpuop_overadmit *o, const struct gpuop_stranded *e)
{
    uint32_t n = e->nnames < GPUOP_STRANDED_NAMES_MAX ? e->nnames : GPUOP_STRANDED_NAMES_MAX;
    for (uint32_t k = 0; k < n; k++)
        if (e->names[k])
            overadmit_add(o, e->names[k]);
    if (e->count > n)
        o->pods.count += e->count - n;
}

bool gpuop_findings_overadmit(const struct gpuop_findings *f, const struct gpuop_node_result *r,
                              const struct gpuop_finding *x, struct gpuop_overadmit *o)
{
    memset(o, 0, sizeof(*o));
    unsigned devices, slices;
    if (!f || !r || !r->name || !x || x->reason != GPUOP_REASON_GPUS_ADVERTISED_TWICE ||
        !gpuop_finding_dra(x, &devices, &slices))
        return false;
    /* GFD's count, unless absent or saturated (then at least that many:
     * the slices' devices, which the plugin publishes one per GPU) */
    bool counted = r->gpu_count && r->gpu_count < GPUOP_SHARING_COUNT_MAX;
    o->gpus = counted ? r->gpu_count : devices;
    const struct gpuop_stranded *req =
        f->stranded && f->nstranded
            ? bsearch(r->name, f->stranded, f->nstranded, sizeof(*f->stranded), stranded_cmp)
            : NULL;
    const struct gpuop_stranded *cl = gpuop_findings_claim_pods(f, r);
    o->by_requests = req ? req->gpus : 0;
    o->by_claims = cl ? cl->gpus : 0;
    if (!o->gpus || (uint64_t)o->by_requests + o->by_claims <= o->gpus)
        return false;
    o->pods.node = r->name;
    if (req)
        overadmit_add_all(o, req);
    if (cl)
        overadmit_add_all(o, cl);
    return true;
}

int gpuop_stranded_text(const struct gpuop_stranded *s, char *buf, size_t size)
{
    struct gpuop_sbuf b = {buf, size, 0};
    if (size)
        buf[0] = '\0';
    if (!s || !s->count)
        return 0;
    uint32_t n = s->nnames < GPUOP_STRANDED_NAMES_MAX ? s->nnames : GPUOP_STRANDED_NAMES_MAX;
    for (uint32_t i = 0; i < n; i++) {
        if (i)
            gpuop_sbuf_add(&b, ", ", 2);
        const char *name = s->names[i] ? s->names[i] : "?";
        gpuop_sbuf_add(&b, name, strlen(name));
    }
    if (s->count > n) {
        char more[40];
        int k = snprintf(more, sizeof(more), "%s%u more", n ? " and " : "", s->count - n);
        gpuop_sbuf_add(&b, more, (size_t)k);
    }
    return (int)b.len;
}
