/*
 * message.c - a finding's message: its reason's two templates (reasons.c)
 * with their placeholders filled in for the finding.
 *
 * The placeholders are one table (name -> what it stands for -> the
 * function that writes its value), below; a template names them as
 * "<name>", or "[name:text]" for text shown only when name's value is not
 * empty (reasons.h). Adding a placeholder is one function and one row.
 * Nothing is worded here but the detail of a pod, taint or label.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuop/analysis.h"
#include "gpuop/gate.h"

#include "findings_int.h"

/* What a template's placeholders stand for, for one finding (reasons.h):
 * the finding, its operand and prerequisite, its node's result (NULL when
 * out of range), its pod (NULL when it is about none) and its detail. */
struct vars {
    const struct gpuop_findings *f;
    const struct gpuop_finding *x;
    const struct gpuop_operand *op, *prereq;
    const struct gpuop_node_result *r;
    const struct gpuop_pod *pod;    /* borrowed, or pod_copy */
    struct gpuop_pod_copy pod_copy; /* a record's packed pod, read out (gpuop_findings_ref_pod) */
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

/* ---- the placeholders' values: each writes into buf (empty when it has none) ---- */

static void ph_operand(const struct vars *v, char *buf, size_t size)
{
    snprintf(buf, size, "%s", v->op->name);
}

/* The spec key: an operand with none of its own (operand.h follows) is
 * switched by the one it follows (spec.devicePlugin for MPS's daemon). */
static void ph_key(const struct vars *v, char *buf, size_t size)
{
    const struct gpuop_operand *of =
        gpuop_operand_get(gpuop_operand_follows(gpuop_operand_by_name(v->op->name)));
    snprintf(buf, size, "%s", (of ? of : v->op)->key);
}

static void ph_prereq(const struct vars *v, char *buf, size_t size)
{
    snprintf(buf, size, "%s", v->prereq ? v->prereq->name : "?");
}

static void ph_detail(const struct vars *v, char *buf, size_t size)
{
    snprintf(buf, size, "%s", v->detail);
}

static void ph_since(const struct vars *v, char *buf, size_t size)
{
    if (gpuop_finding_since(v->x) > 0)
        gpuop_findings_fmt_time(gpuop_finding_since(v->x), buf, size);
}

static void ph_terminating(const struct vars *v, char *buf, size_t size)
{
    if (v->pod && v->pod->deleted)
        gpuop_findings_fmt_time(v->pod->deleted, buf, size);
}

/* enabled operand: host-provided here means "false" or "pre-installed" */
static void ph_label_state(const struct vars *v, char *buf, size_t size)
{
    static const char preinstalled[] = "\"" GPUOP_LABEL_VALUE_PREINSTALLED
                                       "\" (NVIDIA's driver container found a driver on the host)";
    int o = v->x->operand;
    const char *state = "not \"true\"";
    if (v->r && ((v->r->host_provided >> o) & 1))
        state = (v->r->preinstalled >> o) & 1 ? preinstalled : "\"false\"";
    snprintf(buf, size, "%s", state);
}

static void ph_chain(const struct vars *v, char *buf, size_t size)
{
    const int8_t *prereq = v->f->inc.prereq; /* the policy's chain (gpuop_policy_prereq) */
    int direct = prereq[v->x->operand];
    size_t len = 0;
    for (int c = v->x->operand, hops = 0; v->prereq && direct >= 0 && direct != v->x->prereq &&
                                          c >= 0 && hops < GPUOP_OPERAND_MAX && len < size;
         hops++, c = prereq[c]) {
        int k =
            snprintf(buf + len, size - len, "%s%s", hops ? " -> " : "", gpuop_operand_get(c)->name);
        len += k > 0 ? (size_t)k : 0;
        if (c == v->x->prereq)
            break;
    }
}

/* ref: a label's value, NULL absent */
static void ph_label_value(const struct vars *v, char *buf, size_t size)
{
    if (v->x->ref)
        snprintf(buf, size, "\"%.512s\"", v->detail);
    else
        snprintf(buf, size, "absent");
}

/* what the DaemonSet controller says (caches.h) */
static void ph_controller(const struct vars *v, char *buf, size_t size)
{
    const char *says = v->f->operands[v->x->operand].controller_says;
    size_t len = says ? strlen(says) : 0;
    if (len)
        snprintf(buf, size, "%s%s", says, says[len - 1] == '.' ? "" : ".");
}

static void ph_node(const struct vars *v, char *buf, size_t size)
{
    snprintf(buf, size, "%s", v->r && v->r->name ? v->r->name : "");
}

static void ph_grace(const struct vars *v, char *buf, size_t size)
{
    snprintf(buf, size, "%ld", v->f->terminating_grace_s);
}

/* a pod's gate (gate.h) */
static const struct gpuop_gate_info *gate_of(const struct vars *v)
{
    return v->pod ? gpuop_gate_get(v->pod->gate) : NULL;
}

static void ph_gate(const struct vars *v, char *buf, size_t size)
{
    snprintf(buf, size, "%s", gate_of(v) ? gate_of(v)->container : "");
}

static void ph_gate_file(const struct vars *v, char *buf, size_t size)
{
    snprintf(buf, size, "%s", gate_of(v) ? gate_of(v)->file : "");
}

static void ph_gate_what(const struct vars *v, char *buf, size_t size)
{
    snprintf(buf, size, "%s", gate_of(v) ? gate_of(v)->what : "");
}

static void ph_upgrade_state(const struct vars *v, char *buf, size_t size)
{
    static const char *const states[] = {[GPUOP_UPGRADE_ABSENT] = "absent",
                                         [GPUOP_UPGRADE_DONE] = "\"upgrade-done\"",
                                         [GPUOP_UPGRADE_FAILED] = "\"upgrade-failed\"",
                                         [GPUOP_UPGRADE_ACTIVE] = "set"};
    _Static_assert(GPUOP_UPGRADE_ACTIVE == 3, "the result's 2-bit upgrade indexes states");
    snprintf(buf, size, "%s", v->r ? states[v->r->upgrade] : "?");
}

static void ph_capacity(const struct vars *v, char *buf, size_t size)
{
    snprintf(buf, size, "%u", v->r ? v->r->gpus.capacity : 0u);
}

static void ph_allocatable(const struct vars *v, char *buf, size_t size)
{
    snprintf(buf, size, "%u", v->r ? v->r->gpus.allocatable : 0u);
}

static void ph_advertised(const struct vars *v, char *buf, size_t size)
{
    snprintf(buf, size, "%s", v->r && v->r->gpus.allocatable ? "yes" : "");
}

static void ph_unadvertised(const struct vars *v, char *buf, size_t size)
{
    snprintf(buf, size, "%s", v->r && v->r->gpus.allocatable ? "" : "yes");
}

static void ph_mig(const struct vars *v, char *buf, size_t size)
{
    snprintf(buf, size, "%s", v->r && v->r->gpus.mig_allocatable ? "yes" : "");
}

/* a DRA finding's ResourceSlices (findings_int.h) */
static void ph_dra_devices(const struct vars *v, char *buf, size_t size)
{
    unsigned devices, slices;
    if (gpuop_finding_dra(v->x, &devices, &slices))
        snprintf(buf, size, "%u", devices);
}

static void ph_dra_slices(const struct vars *v, char *buf, size_t size)
{
    unsigned devices, slices;
    if (gpuop_finding_dra(v->x, &devices, &slices))
        snprintf(buf, size, "%u", slices);
}

/* GPU pods bound here (the controller's LIST) */
static void ph_stranded(const struct vars *v, char *buf, size_t size)
{
    gpuop_stranded_text(gpuop_findings_stranded(v->f, v->r), buf, size);
}

static void ph_stranded_count(const struct vars *v, char *buf, size_t size)
{
    const struct gpuop_stranded *st = gpuop_findings_stranded(v->f, v->r);
    if (st && st->count)
        snprintf(buf, size, "%u", st->count);
}

/* pods reserving claims on a node without a DRA plugin (the controller's,
 * from the claims it watches) */
static void ph_claim_pods(const struct vars *v, char *buf, size_t size)
{
    gpuop_stranded_text(gpuop_findings_claim_pods(v->f, v->r), buf, size);
}

static void ph_claim_pods_count(const struct vars *v, char *buf, size_t size)
{
    const struct gpuop_stranded *st = gpuop_findings_claim_pods(v->f, v->r);
    if (st && st->count)
        snprintf(buf, size, "%u", st->count);
}

/* The over-admission of a GpusAdvertisedTwice node (detail.c): empty
 * unless its pods hold more GPUs than it has. */
static void ph_overadmit(const struct vars *v, char *buf, size_t size)
{
    struct gpuop_overadmit o;
    if (gpuop_findings_overadmit(v->f, v->r, v->x, &o))
        gpuop_stranded_text(&o.pods, buf, size);
}

static void ph_overadmit_held(const struct vars *v, char *buf, size_t size)
{
    struct gpuop_overadmit o;
    if (gpuop_findings_overadmit(v->f, v->r, v->x, &o))
        snprintf(buf, size, "%u", o.by_requests + o.by_claims);
}

static void ph_overadmit_requests(const struct vars *v, char *buf, size_t size)
{
    struct gpuop_overadmit o;
    if (gpuop_findings_overadmit(v->f, v->r, v->x, &o))
        snprintf(buf, size, "%u", o.by_requests);
}

static void ph_overadmit_claims(const struct vars *v, char *buf, size_t size)
{
    struct gpuop_overadmit o;
    if (gpuop_findings_overadmit(v->f, v->r, v->x, &o))
        snprintf(buf, size, "%u", o.by_claims);
}

static void ph_overadmit_gpus(const struct vars *v, char *buf, size_t size)
{
    struct gpuop_overadmit o;
    if (gpuop_findings_overadmit(v->f, v->r, v->x, &o))
        snprintf(buf, size, "%u", o.gpus);
}

static void ph_overadmit_count(const struct vars *v, char *buf, size_t size)
{
    struct gpuop_overadmit o;
    if (gpuop_findings_overadmit(v->f, v->r, v->x, &o))
        snprintf(buf, size, "%u", o.pods.count);
}

/* The device plugin's sharing ConfigMap as the setup read it (sharing.h). */
static void ph_config_map(const struct vars *v, char *buf, size_t size)
{
    snprintf(buf, size, "%s", v->f->inc.plugin_cm.name);
}

/* Most bytes of the ConfigMap's keys a message names; then "and N more". */
#define CONFIG_KEYS_SHOWN 384

static void ph_config_keys(const struct vars *v, char *buf, size_t size)
{
    const struct gpuop_sharing_cm *cm = &v->f->inc.plugin_cm;
    if (cm->state != GPUOP_SHARING_CM_READ)
        return;
    if (!cm->nkeys) {
        snprintf(buf, size, "none");
        return;
    }
    size_t n = strlen(cm->keys);
    if (n <= CONFIG_KEYS_SHOWN) {
        snprintf(buf, size, "%s", cm->keys);
        return;
    }
    size_t cut = CONFIG_KEYS_SHOWN; /* at a separator, the keys before it whole */
    while (cut > 0 && cm->keys[cut] != ',')
        cut--;
    unsigned shown = 0;
    for (size_t i = 0; i < cut; i++)
        shown += cm->keys[i] == ',';
    if (cut)
        shown++;
    snprintf(buf, size, "%.*s and %u more", (int)cut, cm->keys, (unsigned)cm->nkeys - shown);
}

static void ph_config_absent(const struct vars *v, char *buf, size_t size)
{
    snprintf(buf, size, "%s", v->f->inc.plugin_cm.state == GPUOP_SHARING_CM_ABSENT ? "yes" : "");
}

/* SharingConfigNotApplied's key (findings_int.h) and what its config says */
static void ph_config_key(const struct vars *v, char *buf, size_t size)
{
    char key[GPUOP_SHARING_CM_NAME_MAX + 1];
    gpuop_sharing_cm_key(&v->f->inc.plugin_cm, gpuop_finding_applied_key(v->x), key);
    snprintf(buf, size, "%s", key);
}

static const struct gpuop_sharing_conf *applied_conf(const struct vars *v)
{
    int i = gpuop_finding_applied_key(v->x);
    const struct gpuop_sharing_cm *cm = &v->f->inc.plugin_cm;
    return i >= 0 && i < cm->nkeys ? &cm->conf[i] : NULL;
}

static void ph_config_strategy(const struct vars *v, char *buf, size_t size)
{
    const struct gpuop_sharing_conf *c = applied_conf(v);
    if (c)
        snprintf(buf, size, "%s", gpuop_sharing_strategy_name(c->strategy));
}

static void ph_config_replicas(const struct vars *v, char *buf, size_t size)
{
    const struct gpuop_sharing_conf *c = applied_conf(v);
    if (c)
        snprintf(buf, size, "%u", (unsigned)c->replicas);
}

/* GFD's sharing labels of the node (sharing.h) */
static void ph_gpu_count(const struct vars *v, char *buf, size_t size)
{
    snprintf(buf, size, "%u", v->r ? v->r->gpu_count : 0u);
}

static void ph_replicas(const struct vars *v, char *buf, size_t size)
{
    snprintf(buf, size, "%u", v->r ? v->r->replicas : 0u);
}

static void ph_strategy(const struct vars *v, char *buf, size_t size)
{
    snprintf(buf, size, "%s", gpuop_sharing_strategy_name(v->r ? v->r->sharing : 0));
}

static void ph_shared(const struct vars *v, char *buf, size_t size)
{
    snprintf(buf, size, "%u", v->r ? (unsigned)v->r->gpu_count * v->r->replicas : 0u);
}

static void ph_gpu_resource(const struct vars *v, char *buf, size_t size)
{
    snprintf(buf, size, "%s",
             v->r && v->r->renamed ? GPUOP_RESOURCE_GPU_SHARED : GPUOP_RESOURCE_GPU);
}

static void ph_other_resource(const struct vars *v, char *buf, size_t size)
{
    snprintf(buf, size, "%s",
             v->r && v->r->renamed ? GPUOP_RESOURCE_GPU : GPUOP_RESOURCE_GPU_SHARED);
}

static void ph_other_name(const struct vars *v, char *buf, size_t size)
{
    snprintf(buf, size, "%s", v->r && v->r->other_name ? "yes" : "");
}

/* ---- the table ---- */

static const struct placeholder {
    const char *name;
    const char *means; /* what it stands for (reasons.h says the same) */
    void (*fill)(const struct vars *v, char *buf, size_t size);
} placeholders[] = {
    {"operand", "the operand's name", ph_operand},
    {"key", "its spec key", ph_key},
    {"ds", "its DaemonSet (a per-OS pool's: named by the ref, or by its index)", pool_ds_name},
    {"node", "the node's name", ph_node},
    {"prereq", "the unsatisfied prerequisite of an ordering finding", ph_prereq},
    {"detail", "gpuop_finding_detail", ph_detail},
    {"since", "gpuop_finding_since, RFC 3339; empty when unknown", ph_since},
    {"terminating", "when the pod was deleted; empty when it is not", ph_terminating},
    {"label-state",
     "\"false\", \"pre-installed\" (and who wrote it) or not \"true\" (an enabled operand's label)",
     ph_label_state},
    {"chain", "a -> b -> c when the prerequisite is not the direct one; else empty", ph_chain},
    {"prereq-label", "the prerequisite's deploy label: absent, or its value quoted",
     ph_label_value},
    {"label-now", "a deploy label's value as the finding borrows it: absent, or quoted",
     ph_label_value},
    {"controller", "the DaemonSet controller's newest Warning while it lacks pods", ph_controller},
    {"grace", "the terminating grace, seconds", ph_grace},
    {"gate", "the init container a pod is held in (gate.h)", ph_gate},
    {"gate-file", "the file that gate waits for", ph_gate_file},
    {"gate-what", "what must work for it", ph_gate_what},
    {"upgrade-state", "the node's driver upgrade state: absent, or its value quoted",
     ph_upgrade_state},
    {"capacity", "the node's gpu-resource capacity", ph_capacity},
    {"allocatable", "the node's gpu-resource allocatable", ph_allocatable},
    {"gpu-resource",
     "the resource the node's GPUs are advertised as: nvidia.com/gpu, or nvidia.com/gpu.shared "
     "where its sharing config renames it (renameByDefault)",
     ph_gpu_resource},
    {"other-resource", "the other of the two", ph_other_resource},
    {"other-name", "non-empty when the node advertises the other, and none of gpu-resource",
     ph_other_name},
    {"advertised", "non-empty when allocatable is above 0", ph_advertised},
    {"unadvertised", "non-empty when allocatable is 0", ph_unadvertised},
    {"mig", "non-empty when the node advertises MIG devices", ph_mig},
    {"stranded", "GPU pods bound to the node of an ordering finding, as listed", ph_stranded},
    {"stranded-count", "their number; empty when none", ph_stranded_count},
    {"config-map", "the device plugin's sharing ConfigMap (spec.devicePlugin.config.name)",
     ph_config_map},
    {"config-keys", "its keys as read, \"a, b\" (\"none\"); empty when it does not exist",
     ph_config_keys},
    {"config-absent", "non-empty when the sharing ConfigMap does not exist", ph_config_absent},
    {"gpu-count", "GFD's nvidia.com/gpu.count of the node", ph_gpu_count},
    {"replicas", "GFD's nvidia.com/gpu.replicas of the node", ph_replicas},
    {"strategy", "GFD's nvidia.com/gpu.sharing-strategy of the node", ph_strategy},
    {"shared", "gpu-count x replicas: what allocatable should be", ph_shared},
    {"dra-devices", "a DRA finding's devices of driver gpu.nvidia.com on the node", ph_dra_devices},
    {"dra-slices", "... and the ResourceSlices they are in", ph_dra_slices},
    {"claim-pods", "pods reserving GPU claims allocated on the node (ClaimWithoutPlugin)",
     ph_claim_pods},
    {"claim-pods-count", "their number; empty when none", ph_claim_pods_count},
    {"overadmit",
     "GpusAdvertisedTwice: the pods holding the node's GPUs (nvidia.com/gpu requests, claims), "
     "when they hold more than it has; else empty",
     ph_overadmit},
    {"overadmit-count", "their number; empty when not over", ph_overadmit_count},
    {"overadmit-held", "the GPUs they hold; empty when not over", ph_overadmit_held},
    {"overadmit-requests", "... through nvidia.com/gpu requests", ph_overadmit_requests},
    {"overadmit-claims", "... through claims' devices", ph_overadmit_claims},
    {"overadmit-gpus",
     "the node's GPUs: GFD's nvidia.com/gpu.count, else the slices' devices; empty when not over",
     ph_overadmit_gpus},
    {"config-key", "the node's key of the sharing ConfigMap (SharingConfigNotApplied)",
     ph_config_key},
    {"config-strategy", "... what its config says: the strategy", ph_config_strategy},
    {"config-replicas", "... and the replicas of nvidia.com/gpu", ph_config_replicas},
};

/* Writes the value of placeholder name (n bytes) into buf; false when
 * there is no such placeholder. */
static bool var(const struct vars *v, const char *name, size_t n, char *buf, size_t size)
{
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof(placeholders) / sizeof(placeholders[0]); i++)
        if (strlen(placeholders[i].name) == n && memcmp(placeholders[i].name, name, n) == 0) {
            placeholders[i].fill(v, buf, size);
            return true;
        }
    return false;
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
    v.r = x->node < f->nnodes ? &f->nodes[x->node] : NULL;
    v.pod = gpuop_findings_ref_pod(x, &v.pod_copy);
    gpuop_finding_detail(x, v.detail, sizeof(v.detail));
    render(&b, &v, ri->message, ri->message + strlen(ri->message), 1);
    gpuop_sbuf_add(&b, " ", 1);
    render(&b, &v, ri->action, ri->action + strlen(ri->action), 1);
    return (int)b.len;
}
