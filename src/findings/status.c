/*
 * status.c - GpuPolicy .status from the findings (SPEC section 6).
 *
 * Pure and deterministic: keys are inserted in one fixed order, node lists
 * follow the findings' sorted order, messages hold counts and names but no
 * clock, and a condition's lastTransitionTime is copied from the previous
 * status unless its status flipped. So equal inputs give an equal status,
 * and the controller's "nothing changed, do not write" test is a hash.
 *
 * Every condition's text is written here; the controller passes facts
 * (struct gpuop_status_input: what each apply did), never sentences.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gpuop/clock.h"
#include "gpuop/hash.h"
#include "gpuop/names.h"
#include "gpuop/render.h"
#include "gpuop/status.h"

/* Longest condition message built here (bytes): six apply failures of
 * GPUOP_APPLY_MESSAGE_MAX each, the spec problem and the glue fit. */
#define STATUS_MESSAGE_MAX 4608

const char *gpuop_apply_state_name(int state)
{
    static const char *const names[GPUOP_APPLY_STATES] = {
        [GPUOP_APPLY_NONE] = "",         [GPUOP_APPLY_CURRENT] = "Current",
        [GPUOP_APPLY_FAILED] = "Failed", [GPUOP_APPLY_BLOCKED] = "Blocked",
        [GPUOP_APPLY_ABSENT] = "Absent", [GPUOP_APPLY_DELETE_FAILED] = "DeleteFailed"};
    return state >= 0 && state < GPUOP_APPLY_STATES ? names[state] : "";
}

/* Appends printf output to buf of size (NUL-terminated, truncated). */
static void cat(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void cat(char *buf, size_t size, const char *fmt, ...)
{
    size_t len = strnlen(buf, size);
    if (len + 1 >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, size - len, fmt, ap);
    va_end(ap);
}

/* True when an enabled operand's DaemonSet is not on the current spec. */
static bool not_applied(const struct gpuop_apply_result *a)
{
    return a && (a->state == GPUOP_APPLY_FAILED || a->state == GPUOP_APPLY_BLOCKED);
}

/* The sentence of one operand's apply result, "" when there is nothing to
 * say (current, absent, nothing tried). */
static void apply_sentence(const struct gpuop_apply_result *a, int o, char *buf, size_t size)
{
    const struct gpuop_operand *op = gpuop_operand_get(o);
    const struct gpuop_operand *root = a ? gpuop_operand_get(a->blocked_by) : NULL;
    buf[0] = '\0';
    if (!a || !op)
        return;
    switch (a->state) {
    case GPUOP_APPLY_FAILED:
        snprintf(buf, size, "DaemonSet %s was not applied: %s", op->ds_name,
                 a->message[0] ? a->message : "the request failed");
        break;
    case GPUOP_APPLY_BLOCKED:
        snprintf(buf, size,
                 "DaemonSet %s was not created or changed, because its prerequisite %s could "
                 "not be applied",
                 op->ds_name, root ? root->name : "?");
        break;
    case GPUOP_APPLY_DELETE_FAILED:
        snprintf(buf, size, "DaemonSet %s (operand disabled) was not deleted: %s", op->ds_name,
                 a->message[0] ? a->message : "the request failed");
        break;
    default:
        break;
    }
}

/* ---- conditions ---- */

static json_t *prev_condition(json_t *prev_status, const char *type)
{
    size_t i;
    json_t *c;
    json_t *conds = json_is_object(prev_status) ? json_object_get(prev_status, "conditions") : NULL;
    json_array_foreach(conds, i, c)
    {
        json_t *t = json_object_get(c, "type");
        if (json_is_string(t) && strcmp(json_string_value(t), type) == 0)
            return c;
    }
    return NULL;
}

/* One condition as the builders below say it: its status, reason and
 * message (the type is the caller's). */
struct cond {
    const char *status, *reason;
    char msg[STATUS_MESSAGE_MAX];
};

/* Appends the condition type c (borrowed) says to conds (a new object);
 * its lastTransitionTime is prev_status's while the status is the same.
 * 0 or -1. */
static int add_condition(json_t *conds, json_t *prev_status, const char *type, const struct cond *c,
                         long long gen, long long now)
{
    const char *status = c->status;
    char ts[GPUOP_TIME_MAX];
    const char *ltt = NULL;
    json_t *pc = prev_condition(prev_status, type);
    json_t *ps = pc ? json_object_get(pc, "status") : NULL;
    json_t *pt = pc ? json_object_get(pc, "lastTransitionTime") : NULL;

    if (json_is_string(ps) && strcmp(json_string_value(ps), status) == 0 && json_is_string(pt))
        ltt = json_string_value(pt);
    if (!ltt) {
        ltt = gpuop_time_format(ts, sizeof(ts), now * GPUOP_US_PER_S, GPUOP_TIME_S);
    }
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I}", "type", type, "status", status,
                          "reason", c->reason, "message", c->msg, "lastTransitionTime", ltt,
                          "observedGeneration", (json_int_t)gen);
    return o ? json_array_append_new(conds, o) : -1;
}

/* "ImagePullFailed 2, PodNotCreated 1" for the reasons of kind. */
static void reason_counts(const struct gpuop_findings *f, int kind, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int r = 0; r < GPUOP_REASON_COUNT; r++) {
        const struct gpuop_reason_info *ri = gpuop_reason_get(r);
        if (ri->kind != kind || !f->by_reason[r] || len >= size)
            continue;
        int n =
            snprintf(buf + len, size - len, "%s%s %zu", len ? ", " : "", ri->name, f->by_reason[r]);
        if (n > 0)
            len += (size_t)n;
    }
}

/* One condition's verdict: status, reason, message (into msg). */
/* The enabled operands whose DaemonSet is not on the current spec, as a
 * list of names into out; their number. */
static int unapplied_operands(const struct gpuop_status_input *in, char *out, size_t cap)
{
    int n = 0;
    out[0] = '\0';
    for (int o = 0; in->apply && o < gpuop_operand_count(); o++)
        if (not_applied(&in->apply[o]))
            cat(out, cap, "%s%s", n++ ? ", " : "", gpuop_operand_get(o)->name);
    return n;
}

static void cond_ready(const struct gpuop_findings *f, const struct gpuop_status_input *in,
                       struct cond *c)
{
    char unapplied[400];
    int napplied = unapplied_operands(in, unapplied, sizeof(unapplied));
    if (f->gpu_nodes == 0) {
        *c = (struct cond){"False", "NoGpuNodes", ""};
        snprintf(c->msg, sizeof(c->msg),
                 "No node is a GPU node: none is labelled %s=true, %s=true or %s<operand>.%s",
                 GPUOP_LABEL_GPU_PRESENT, GPUOP_LABEL_NFD_NVIDIA, GPUOP_LABEL_PREFIX,
                 f->nitems ? " Operand pods run on non-GPU nodes: see status.nodes." : "");
    } else if (napplied) {
        *c = (struct cond){"False", "OperandsNotApplied", ""};
        snprintf(c->msg, sizeof(c->msg),
                 "The DaemonSet%s of %s %s not on the current spec (see the Reconciled "
                 "condition); %zu of %zu GPU nodes are complete.",
                 napplied == 1 ? "" : "s", unapplied, napplied == 1 ? "is" : "are",
                 f->complete_nodes, f->gpu_nodes);
    } else if (f->nitems == 0) {
        *c = (struct cond){"True", "AllNodesComplete", ""};
        snprintf(c->msg, sizeof(c->msg), "All %zu GPU nodes run every expected operand, in order.",
                 f->gpu_nodes);
    } else {
        *c = (struct cond){"False", "FindingsPresent", ""};
        char held[32] = "";
        if (f->by_kind[GPUOP_KIND_HELD])
            snprintf(held, sizeof(held), ", Held %zu", f->by_kind[GPUOP_KIND_HELD]);
        snprintf(c->msg, sizeof(c->msg),
                 "%zu of %zu GPU nodes are complete; %zu node%s with findings (Missing %zu, "
                 "NotScheduled %zu, Unexpected %zu, OrderingViolation %zu%s): see "
                 "status.nodes.",
                 f->complete_nodes, f->gpu_nodes, f->finding_nodes,
                 f->finding_nodes == 1 ? "" : "s", f->by_kind[GPUOP_KIND_MISSING],
                 f->by_kind[GPUOP_KIND_NOT_SCHEDULED], f->by_kind[GPUOP_KIND_UNEXPECTED],
                 f->by_kind[GPUOP_KIND_ORDERING], held);
    }
}

static void cond_complete(const struct gpuop_findings *f, struct cond *c)
{
    size_t miss = f->by_kind[GPUOP_KIND_MISSING], nots = f->by_kind[GPUOP_KIND_NOT_SCHEDULED];
    if (f->gpu_nodes == 0) {
        *c =
            (struct cond){"True", "NoGpuNodes", "No GPU node, so no operand is expected anywhere."};
    } else if (!miss && !nots) {
        *c = (struct cond){"True", "Complete",
                           "Every expected operand runs, and every GPU node is labelled for every "
                           "enabled operand."};
    } else {
        char a[400], b[400];
        *c = (struct cond){"False", miss ? "OperandsMissing" : "OperandsNotScheduled", ""};
        reason_counts(f, GPUOP_KIND_MISSING, a, sizeof(a));
        reason_counts(f, GPUOP_KIND_NOT_SCHEDULED, b, sizeof(b));
        snprintf(c->msg, sizeof(c->msg), "Missing: %zu%s%s%s; NotScheduled: %zu%s%s%s.", miss,
                 miss ? " (" : "", a, miss ? ")" : "", nots, nots ? " (" : "", b, nots ? ")" : "");
    }
}

static void cond_ordering(const struct gpuop_findings *f, struct cond *c)
{
    if (!f->by_kind[GPUOP_KIND_ORDERING]) {
        *c = (struct cond){"True", "ChainIntact",
                           "No operand runs without its prerequisites (running or host-provided)."};
        return;
    }
    /* The silent GPU-less scheduling case names itself (SPEC 5). */
    const char *reason = "OrderingViolations";
    if (f->by_reason[GPUOP_REASON_DEVICE_PLUGIN_WITHOUT_TOOLKIT])
        reason = "DevicePluginWithoutToolkit";
    else if (f->by_reason[GPUOP_REASON_GPUS_ADVERTISED_WITHOUT_TOOLKIT])
        reason = "GpusAdvertisedWithoutToolkit";
    bool gpuless = strcmp(reason, "OrderingViolations") != 0;
    char a[400];
    *c = (struct cond){"False", reason, ""};
    reason_counts(f, GPUOP_KIND_ORDERING, a, sizeof(a));
    snprintf(c->msg, sizeof(c->msg), "The operand chain is broken on %zu node%s (%s).%s",
             f->violations, f->violations == 1 ? "" : "s", a,
             gpuless ? " GPU pods scheduled on those nodes fail to get a GPU." : "");
}

/* Reconciled: every apply failure, by operand in table order, then the
 * spec problems; the order is fixed so an unchanged cluster reads the same. */
static void cond_reconciled(const struct gpuop_policy *p, const struct gpuop_status_input *in,
                            struct cond *c)
{
    char spec[600] = "";
    if (p && p->nproblems > 0) {
        int more = p->nproblems - 1;
        snprintf(spec, sizeof(spec), "%s: %s", p->problems[0].field, p->problems[0].message);
        if (more > 0)
            cat(spec, sizeof(spec), " (and %d more problem%s)", more, more == 1 ? "" : "s");
    }
    c->msg[0] = '\0';
    int nfail = 0;
    for (int o = 0; in->apply && o < gpuop_operand_count(); o++) {
        char one[GPUOP_APPLY_MESSAGE_MAX + 200];
        apply_sentence(&in->apply[o], o, one, sizeof(one));
        if (one[0])
            cat(c->msg, sizeof(c->msg), "%s%s", nfail++ ? "; " : "", one);
    }
    if (in->sa && in->sa->state == GPUOP_APPLY_FAILED)
        cat(c->msg, sizeof(c->msg), "%sServiceAccount %s was not applied: %s", nfail++ ? "; " : "",
            GPUOP_OPERAND_SA, in->sa->message[0] ? in->sa->message : "the request failed");
    if (nfail) {
        c->status = "False";
        c->reason = "ApplyFailed";
        cat(c->msg, sizeof(c->msg), ".");
        if (spec[0])
            cat(c->msg, sizeof(c->msg), " Spec problems: %s.", spec);
    } else if (spec[0]) {
        c->status = "False";
        c->reason = "InvalidSpec";
        snprintf(c->msg, sizeof(c->msg), "%s", spec);
    } else {
        c->status = "True";
        c->reason = "Applied";
        snprintf(c->msg, sizeof(c->msg),
                 "The DaemonSets of all enabled operands are applied in namespace %s.",
                 in->namespace ? in->namespace : "?");
    }
}

/* ServiceMonitor: whether it is wanted (it is then conditions()'s fifth),
 * and whether its kind exists (in->absent_crds, by the extra that names its
 * CRD). */
static bool cond_service_monitor(const struct gpuop_policy *p, const struct gpuop_status_input *in,
                                 struct cond *c)
{
    int exporter = gpuop_operand_by_name("dcgm-exporter");
    if (!p || !p->service_monitor || exporter < 0 || !p->operands[exporter].enabled || !in->apply)
        return false;
    for (int i = 0; i < gpuop_render_extra_count(); i++) {
        const struct gpuop_render_extra *x = gpuop_render_extra_get(i);
        if (!x->crd || strcmp(x->kind, "ServiceMonitor") || !((in->absent_crds >> i) & 1))
            continue;
        *c = (struct cond){"False", "CRDNotInstalled", ""};
        snprintf(c->msg, sizeof(c->msg),
                 "spec.dcgmExporter.serviceMonitor is enabled, but the API server has no %s (the "
                 "Prometheus Operator's CRD): ServiceMonitor %s is not applied, and gpuop applies "
                 "it once the CRD is installed. Everything else is applied; Prometheus can scrape "
                 "the Service %s (annotation prometheus.io/scrape) meanwhile.",
                 x->crd, x->name, GPUOP_DCGM_SERVICE);
        return true;
    }
    *c = (struct cond){"True", "Applied", ""};
    snprintf(c->msg, sizeof(c->msg),
             "ServiceMonitor %s in namespace %s selects the Service %s (port gpu-metrics).",
             GPUOP_DCGM_SERVICEMONITOR, in->namespace ? in->namespace : "?", GPUOP_DCGM_SERVICE);
    return true;
}

/* DeviceClasses: whether it is wanted (while spec.draDriver is enabled,
 * not held by a problem in it, and gpuop applies), and whether the API
 * server serves resource.k8s.io/v1 DeviceClasses (in->absent_crds, by the
 * extras of kind DeviceClass). */
static bool cond_device_classes(const struct gpuop_policy *p, const struct gpuop_status_input *in,
                                struct cond *c)
{
    int dra = gpuop_operand_by_name("dra-driver");
    if (!p || dra < 0 || !p->operands[dra].enabled || p->operands[dra].hold_absent || !in->apply)
        return false;
    for (int i = 0; i < gpuop_render_extra_count(); i++) {
        const struct gpuop_render_extra *x = gpuop_render_extra_get(i);
        if (!x->crd || strcmp(x->kind, "DeviceClass") || !((in->absent_crds >> i) & 1))
            continue;
        *c = (struct cond){"False", "APINotServed", ""};
        snprintf(c->msg, sizeof(c->msg),
                 "spec.draDriver is enabled, but the API server does not serve %s (Kubernetes "
                 "1.34 and later serve it by default): the DeviceClasses gpu.nvidia.com, "
                 "mig.nvidia.com and vfio.gpu.nvidia.com are not applied, so no claim can ask "
                 "for a GPU through them; gpuop applies them once it is served. The kubelet "
                 "plugin's DaemonSet is applied.",
                 x->crd);
        return true;
    }
    *c = (struct cond){"True", "Applied", ""};
    snprintf(c->msg, sizeof(c->msg),
             "The DeviceClasses gpu.nvidia.com, mig.nvidia.com and vfio.gpu.nvidia.com are "
             "applied (resource.k8s.io/v1).");
    return true;
}

/* DraPluginDeletion: while spec.draDriver is switched off and its kubelet
 * plugin's DaemonSet is kept for the pods whose claims it must unprepare
 * (in->dra_waiting says for what). */
static bool cond_dra_plugin_deletion(const struct gpuop_status_input *in, struct cond *c)
{
    if (!in->dra_waiting || !in->dra_waiting[0])
        return false;
    *c = (struct cond){"False", "WaitingForClaims", ""};
    snprintf(c->msg, sizeof(c->msg), "%s", in->dra_waiting);
    return true;
}

/* The conditions (SPEC 6), in their fixed order, into conds (borrowed):
 * the four of every status, then ServiceMonitor, DeviceClasses and
 * DraPluginDeletion when each is wanted. */
#define STATUS_CONDITIONS 7
static int conditions(json_t *conds, const struct gpuop_policy *p, const struct gpuop_findings *f,
                      json_t *prev, const struct gpuop_status_input *in, long long now)
{
    const char *types[STATUS_CONDITIONS] = {"Ready", "OperandsComplete", "OrderingValid",
                                            "Reconciled"};
    size_t n = STATUS_CONDITIONS - 3;
    const long long gen = p ? p->generation : 0;
    struct cond c[STATUS_CONDITIONS];
    if (in->inactive) {
        c[0] = (struct cond){"False", "Ignored", ""};
        snprintf(c[0].msg, sizeof(c[0].msg),
                 "GpuPolicy \"%s\" is active (the oldest GpuPolicy); this one is ignored. Delete "
                 "it, or move its settings into \"%s\".",
                 in->active_policy ? in->active_policy : "?",
                 in->active_policy ? in->active_policy : "?");
        for (size_t i = 1; i < n; i++)
            c[i] = (struct cond){"Unknown", "Ignored",
                                 "This GpuPolicy is ignored; see the Ready condition."};
    } else {
        cond_ready(f, in, &c[0]);
        cond_complete(f, &c[1]);
        cond_ordering(f, &c[2]);
        cond_reconciled(p, in, &c[3]);
        if (cond_service_monitor(p, in, &c[n]))
            types[n++] = "ServiceMonitor";
        if (cond_device_classes(p, in, &c[n]))
            types[n++] = "DeviceClasses";
        if (cond_dra_plugin_deletion(in, &c[n]))
            types[n++] = "DraPluginDeletion";
    }
    for (size_t i = 0; i < n; i++)
        if (add_condition(conds, prev, types[i], &c[i], gen, now) < 0)
            return -1;
    return 0;
}

/* ---- operands, nodes, summary ---- */

/* New array of the names in a comma-separated list. */
static json_t *ds_list(const char *list)
{
    json_t *a = json_array();
    for (const char *s = list; a && s && *s;) {
        size_t n = strcspn(s, ",");
        if (json_array_append_new(a, json_stringn(s, n)) < 0) {
            json_decref(a);
            return NULL;
        }
        s += n + (s[n] == ',');
    }
    return a;
}

json_t *gpuop_status_operands(const struct gpuop_findings *f,
                              const struct gpuop_apply_result *apply)
{
    json_t *arr = json_array();
    for (int o = 0; arr && o < f->noperands; o++) {
        const struct gpuop_operand *op = gpuop_operand_get(o);
        const struct gpuop_operand_result *r = &f->operands[o];
        json_t *e = json_pack("{s:s, s:b, s:s, s:I, s:I, s:I, s:I}", "name", op->name, "enabled",
                              r->enabled, "daemonSet", op->ds_name, "expectedNodes",
                              (json_int_t)r->expected_nodes, "runningNodes",
                              (json_int_t)r->running_nodes, "desiredNumberScheduled",
                              (json_int_t)r->desired, "numberReady", (json_int_t)r->ready);
        const struct gpuop_apply_result *a = apply ? &apply[o] : NULL;
        char msg[GPUOP_APPLY_MESSAGE_MAX + 200];
        apply_sentence(a, o, msg, sizeof(msg));
        bool bad = !e;
        if (!bad && a && a->state != GPUOP_APPLY_NONE)
            bad =
                json_object_set_new(e, "apply", json_string(gpuop_apply_state_name(a->state))) < 0;
        if (!bad && msg[0])
            bad = json_object_set_new(e, "applyMessage", json_string(msg)) < 0;
        if (!bad && r->daemonsets) /* per OS pool (SPEC 4b): the one operand's DaemonSets */
            bad = json_object_set_new(e, "daemonSets", ds_list(r->daemonsets)) < 0;
        if (!bad && r->controller_says) /* why the DaemonSet controller makes no pod */
            bad = json_object_set_new(e, "controllerWarning", json_string(r->controller_says)) < 0;
        if (bad || json_array_append_new(arr, e) < 0) { /* append_new releases e */
            if (bad)
                json_decref(e);
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

/* ---- driver pools ---- */

/* The version an image reference runs: its tag or digest ("580.95.05"),
 * else the whole reference; into out. */
static void image_version(const char *image, char *out, size_t size)
{
    const char *at = image ? strrchr(image, '@') : NULL;
    const char *slash = image ? strrchr(image, '/') : NULL;
    const char *colon = image ? strrchr(image, ':') : NULL;
    const char *v = at ? at + 1 : colon && (!slash || colon > slash) ? colon + 1 : image;
    snprintf(out, size, "%s", v ? v : "");
}

/* One entry of gpuop_status_driver_pools: pool k of p (-1: the default). */
static json_t *pool_entry(const struct gpuop_policy *p, int k, bool names)
{
    int d = gpuop_operand_by_key("driver");
    char version[GPUOP_STATUS_POOL_VERSION_MAX];
    image_version(k < 0 ? p->operands[d].image : p->driver_pools[k].image, version,
                  sizeof(version));
    return json_pack("{s:s, s:s, s:I, s:o*}", "name", k < 0 ? "default" : p->driver_pools[k].name,
                     "version", version, "nodes", (json_int_t)0, "nodeNames",
                     names ? json_array() : NULL);
}

/* One entry of a draining pool: no version (its spec is gone), and its
 * nodes named in the status too, as those left to move. */
static json_t *draining_entry(const char *name)
{
    return json_pack("{s:s, s:s, s:b, s:I, s:[]}", "name", name, "version", "", "draining", 1,
                     "nodes", (json_int_t)0, "nodeNames");
}

/* The index in gpuop_status_driver_pools' array of the pool a node
 * labelled dp (borrowed, NULL: none) is in. */
static size_t pool_at(const struct gpuop_policy *p, const char *dp)
{
    int k = gpuop_policy_driver_pool(p, dp);
    for (int j = 0; k < 0 && dp && j < p->ndraining_pools; j++)
        if (!strcmp(p->draining_pools[j], dp))
            k = p->ndriver_pools + j;
    return k < 0 ? (size_t)(p->ndriver_pools + p->ndraining_pools) : (size_t)k;
}

json_t *gpuop_status_driver_pools(const struct gpuop_policy *p,
                                  const struct gpuop_node *const *nodes, size_t n, bool names)
{
    if (!p || p->ndriver_pools + p->ndraining_pools <= 0)
        return NULL;
    json_t *arr = json_array();
    bool bad = !arr;
    for (int k = 0; !bad && k < p->ndriver_pools; k++)
        bad = json_array_append_new(arr, pool_entry(p, k, names)) < 0;
    for (int k = 0; !bad && k < p->ndraining_pools; k++)
        bad = json_array_append_new(arr, draining_entry(p->draining_pools[k])) < 0;
    bad = bad || json_array_append_new(arr, pool_entry(p, -1, names)) < 0; /* the default last */
    for (size_t i = 0; !bad && i < n; i++) {
        if (!nodes[i] || !nodes[i]->gpu)
            continue;
        json_t *e = json_array_get(arr, pool_at(p, gpuop_node_os(nodes[i], GPUOP_OS_DRIVER_POOL)));
        json_t *cnt = json_object_get(e, "nodes"), *nm = json_object_get(e, "nodeNames");
        bad = json_integer_set(cnt, json_integer_value(cnt) + 1) < 0 ||
              (nm && json_array_append_new(nm, json_string(nodes[i]->name)) < 0);
    }
    if (bad) {
        json_decref(arr);
        return NULL;
    }
    return arr;
}

/* ---- GPU sharing (sharing.h): GFD's labels, grouped ---- */

/* The index in groups (sorted by strategy, then replicas) of r's group,
 * made when it is not there and there is room; -1 when there is none. */
static long sharing_group(json_t *groups, const struct gpuop_node_result *r)
{
    size_t at = 0;
    const char *name = gpuop_sharing_strategy_name(r->sharing);
    for (; at < json_array_size(groups); at++) {
        json_t *g = json_array_get(groups, at);
        int cmp = strcmp(json_string_value(json_object_get(g, "strategy")), name);
        long long rep = json_integer_value(json_object_get(g, "replicas"));
        if (cmp == 0 && rep == r->replicas)
            return (long)at;
        if (cmp > 0 || (cmp == 0 && rep > r->replicas))
            break;
    }
    if (json_array_size(groups) >= GPUOP_STATUS_SHARING_MAX)
        return -1;
    json_t *g =
        json_pack("{s:s, s:I, s:[]}", "strategy", name, "nodes", (json_int_t)0, "nodeNames");
    if (g && r->replicas &&
        json_object_set_new(g, "replicas", json_integer((json_int_t)r->replicas)) < 0) {
        json_decref(g);
        g = NULL;
    }
    return g && json_array_insert_new(groups, at, g) == 0 ? (long)at : -2;
}

json_t *gpuop_status_sharing(const struct gpuop_findings *f, const char *filter)
{
    json_t *groups = json_array();
    for (size_t i = 0; groups && i < f->nnodes; i++) {
        const struct gpuop_node_result *r = &f->nodes[i];
        if (!r->gpu || r->sharing == GPUOP_SHARING_NONE ||
            (filter && *filter && !strstr(r->name, filter)))
            continue;
        long k = sharing_group(groups, r);
        json_t *g = k >= 0 ? json_array_get(groups, (size_t)k) : NULL;
        json_t *cnt = json_object_get(g, "nodes"), *names = json_object_get(g, "nodeNames");
        if (k == -1)
            continue;
        if (!g || json_integer_set(cnt, json_integer_value(cnt) + 1) < 0 ||
            (json_array_size(names) < GPUOP_STATUS_SHARING_NAMES &&
             json_array_append_new(names, json_string(r->name)) < 0)) {
            json_decref(groups);
            return NULL;
        }
    }
    return groups;
}

static json_t *node_json(const struct gpuop_findings *f, const struct gpuop_node_result *r,
                         bool empty_lists)
{
    char msg[GPUOP_FINDING_MESSAGE_MAX];
    json_t *fs = json_array(), *hp = json_array();

    for (size_t k = 0; fs && k < r->nfindings; k++) {
        const struct gpuop_finding *x = &r->findings[k];
        gpuop_finding_message(f, x, msg, sizeof(msg));
        json_t *e = json_pack("{s:s, s:s, s:s, s:s}", "operand",
                              gpuop_operand_get(x->operand)->name, "kind", gpuop_kind_name(x->kind),
                              "reason", gpuop_reason_get(x->reason)->name, "message", msg);
        if (!e || json_array_append_new(fs, e) < 0)
            goto fail;
    }
    for (int o = 0; hp && o < f->noperands; o++)
        if ((r->host_provided >> o) & 1)
            if (json_array_append_new(hp, json_string(gpuop_operand_get(o)->name)) < 0)
                goto fail;
    if (!fs || !hp)
        goto fail;
    json_t *e = json_pack("{s:s, s:o}", "name", r->name, "findings", fs);
    if (!e) {
        json_decref(hp);
        return NULL;
    }
    if (json_array_size(hp) == 0 && !empty_lists) /* no dangling "Host Provided:" */
        json_decref(hp);
    else if (json_object_set_new(e, "hostProvided", hp) < 0)
        goto fail_e;
    if (json_object_set_new(e, "gpus",
                            json_pack("{s:i, s:i}", "capacity", (int)r->gpus.capacity,
                                      "allocatable", (int)r->gpus.allocatable)) < 0)
        goto fail_e;
    const struct gpuop_stranded *st = gpuop_findings_stranded(f, r);
    if (st && st->count) { /* the GPU pods bound here (issue 15 §2) */
        json_t *pods = json_array();
        for (uint32_t k = 0; pods && k < st->nnames && k < GPUOP_STRANDED_NAMES_MAX; k++)
            if (json_array_append_new(pods, json_string(st->names[k] ? st->names[k] : "?")) < 0) {
                json_decref(pods);
                pods = NULL;
            }
        if (!pods || json_object_set_new(
                         e, "strandedPods",
                         json_pack("{s:I, s:o}", "count", (json_int_t)st->count, "pods", pods)) < 0)
            goto fail_e;
    }
    if ((r->gpus.mig_capacity || r->gpus.mig_allocatable) &&
        json_object_set_new(e, "migDevices",
                            json_pack("{s:i, s:i}", "capacity", (int)r->gpus.mig_capacity,
                                      "allocatable", (int)r->gpus.mig_allocatable)) < 0)
        goto fail_e;
    return e;
fail_e:
    json_decref(e);
    return NULL;
fail:
    json_decref(fs);
    json_decref(hp);
    return NULL;
}

static json_t *nodes_json(const struct gpuop_findings *f, size_t max_nodes, size_t *omitted,
                          bool empty_lists)
{
    json_t *arr = json_array();
    size_t skipped = 0;

    for (size_t i = 0; arr && i < f->nnodes; i++) {
        const struct gpuop_node_result *r = &f->nodes[i];
        if (!r->nfindings)
            continue;
        if (json_array_size(arr) >= max_nodes) {
            skipped++;
            continue;
        }
        json_t *e = node_json(f, r, empty_lists);
        if (!e || json_array_append_new(arr, e) < 0) {
            json_decref(arr);
            return NULL;
        }
    }
    if (omitted)
        *omitted = skipped;
    return arr;
}

json_t *gpuop_status_nodes(const struct gpuop_findings *f, size_t max_nodes, size_t *omitted)
{
    return nodes_json(f, max_nodes, omitted, true);
}

json_t *gpuop_status_summary(const struct gpuop_findings *f, bool truncated)
{
    return json_pack("{s:I, s:I, s:I, s:I, s:b}", "gpuNodes", (json_int_t)f->gpu_nodes,
                     "completeNodes", (json_int_t)f->complete_nodes, "violations",
                     (json_int_t)f->violations, "advertisedGpus", (json_int_t)f->advertised_gpus,
                     "truncated", truncated);
}

json_t *gpuop_status_build(const struct gpuop_policy *p, const struct gpuop_findings *f,
                           json_t *prev_status, const struct gpuop_status_input *in, long long now)
{
    static const struct gpuop_status_input none = {0};
    if (!in)
        in = &none;
    if (!f && !in->inactive)
        return NULL;

    json_t *st = json_object(), *conds = json_array();
    if (!st || !conds)
        goto fail;
    if (json_object_set_new(st, "observedGeneration", json_integer(p ? p->generation : 0)) < 0 ||
        json_object_set_new(st, "state", json_string(in->inactive ? "ignored" : "notReady")) < 0 ||
        (in->active_policy &&
         json_object_set_new(st, "activePolicy", json_string(in->active_policy)) < 0) ||
        json_object_set_new(st, "namespace", json_string(in->namespace ? in->namespace : "")) < 0)
        goto fail;
    if (conditions(conds, p, f, prev_status, in, now) < 0)
        goto fail;
    json_t *ready = json_array_get(conds, 0);
    if (!in->inactive && strcmp(json_string_value(json_object_get(ready, "status")), "True") == 0 &&
        json_object_set_new(st, "state", json_string("ready")) < 0)
        goto fail;
    if (json_object_set_new(st, "conditions", conds) < 0) {
        conds = NULL;
        goto fail;
    }
    conds = NULL;
    if (in->inactive)
        return st;

    size_t omitted = 0, max = in->max_nodes ? in->max_nodes : GPUOP_STATUS_MAX_NODES;
    json_t *ops = gpuop_status_operands(f, in->apply);
    json_t *nodes = nodes_json(f, max, &omitted, in->empty_lists);
    json_t *sum = nodes ? gpuop_status_summary(f, omitted > 0) : NULL;
    if (!ops || !nodes || !sum) {
        json_decref(ops);
        json_decref(nodes);
        json_decref(sum);
        goto fail;
    }
    if (json_array_size(nodes) == 0 && !in->empty_lists) { /* no dangling "Nodes:" */
        json_decref(nodes);
        nodes = NULL;
    }
    json_t *drv = json_array_get(ops, (size_t)gpuop_operand_by_key("driver"));
    if (in->driver_pools && drv && json_object_set(drv, "pools", in->driver_pools) < 0) {
        json_decref(ops);
        json_decref(nodes);
        json_decref(sum);
        goto fail;
    }
    if (json_object_set_new(st, "operands", ops) < 0 ||
        (nodes && json_object_set_new(st, "nodes", nodes) < 0) ||
        json_object_set_new(st, "nodesOmitted", json_integer((json_int_t)omitted)) < 0 ||
        json_object_set_new(st, "summary", sum) < 0)
        goto fail;
    json_t *sharing = gpuop_status_sharing(f, NULL); /* issue 41 */
    if (!sharing || (json_array_size(sharing) && json_object_set(st, "sharing", sharing) < 0)) {
        json_decref(sharing);
        goto fail;
    }
    json_decref(sharing);
    if (in->upgrade && json_object_set(st, "upgrade", in->upgrade) < 0) /* docs/upgrade.md */
        goto fail;
    return st;
fail:
    json_decref(conds);
    json_decref(st);
    return NULL;
}
