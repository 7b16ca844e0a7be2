/*
 * test_analysis.c - the findings engine, table-driven: every finding kind
 * and reason, label states, toleration rules as the DaemonSet controller
 * applies them, pod states, transitive prerequisites, node removal, and the
 * appeared/cleared diff. The last test checks that every reason of the
 * reasons table was produced by some case above it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpuop/analysis.h"

#define T0 1795986400LL /* 2026-11-29T21:06:40Z */

static size_t seen[GPUOP_REASON_COUNT]; /* reasons produced by all tests */

/* ---- a small world builder ---- */

struct world {
    struct gpuop_policy pol;
    struct gpuop_node *nodes[64];
    size_t nn;
    struct gpuop_ds *ds[16];
    size_t nds;
    struct gpuop_pod *pods[128];
    size_t np;
    struct gpuop_findings f;
};

static int op(const char *name)
{
    int i = gpuop_operand_by_name(name);
    if (i < 0)
        fail_msg("no operand %s", name);
    return i;
}

static void world_init(struct world *w)
{
    memset(w, 0, sizeof(*w));
    for (int i = 0; i < gpuop_operand_count(); i++)
        w->pol.operands[i].enabled = true;
    w->pol.generation = 1;
    w->pol.terminating_grace_s = GPUOP_TERMINATING_GRACE_DEFAULT;
    w->pol.advertise_grace_s = GPUOP_ADVERTISE_GRACE_DEFAULT;
}

/* labels: "present=true driver=true operands=false ..." (short names for the
 * nvidia.com/gpu.* labels); taints: "key=value:Effect key:Effect". */
static struct gpuop_node *add_node(struct world *w, const char *name, const char *labels,
                                   const char *taints)
{
    struct gpuop_node *n = calloc(1, sizeof(*n));
    char buf[512], *save = NULL;
    n->name = strdup(name);
    n->created = T0;
    snprintf(buf, sizeof(buf), "%s", labels ? labels : "");
    for (char *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(tok, '=');
        assert_non_null(eq);
        *eq = '\0';
        const char *v = eq + 1;
        int st = strcmp(v, "true") == 0            ? GPUOP_LABEL_TRUE
                 : strcmp(v, "false") == 0         ? GPUOP_LABEL_FALSE
                 : strcmp(v, "pre-installed") == 0 ? GPUOP_LABEL_PREINSTALLED
                                                   : GPUOP_LABEL_OTHER;
        if (strcmp(tok, "present") == 0) {
            n->gpu = n->gpu || st == GPUOP_LABEL_TRUE;
        } else if (strcmp(tok, "operands") == 0) {
            n->gpu = true;
            n->operands_label = (unsigned char)st;
        } else {
            int i = op(tok);
            n->gpu = true;
            n->deploy[i] = (unsigned char)st;
            if (st == GPUOP_LABEL_OTHER) {
                if (!n->deploy_other)
                    n->deploy_other = calloc(GPUOP_OPERAND_MAX, sizeof(char *));
                n->deploy_other[i] = strdup(strcmp(v, "EMPTY") == 0 ? "" : v);
            }
        }
    }
    snprintf(buf, sizeof(buf), "%s", taints ? taints : "");
    n->taints = calloc(8, sizeof(*n->taints));
    for (char *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        struct gpuop_taint *t = &n->taints[n->ntaints++];
        char *colon = strrchr(tok, ':');
        assert_non_null(colon);
        *colon = '\0';
        t->effect = strdup(colon + 1);
        char *eq = strchr(tok, '=');
        if (eq) {
            *eq = '\0';
            t->value = strdup(eq + 1);
        }
        t->key = strdup(tok);
    }
    w->nodes[w->nn++] = n;
    return n;
}

/* A DaemonSet for operand name with the default gpuop toleration. */
static struct gpuop_ds *add_ds(struct world *w, const char *opname)
{
    struct gpuop_ds *d = calloc(1, sizeof(*d));
    int i = op(opname);
    d->name = strdup(gpuop_operand_get(i)->ds_name);
    d->operand = i;
    d->created = T0 + 100;
    d->desired = 7;
    d->ready = 5;
    d->tolerations = calloc(4, sizeof(*d->tolerations));
    d->tolerations[0].key = strdup("nvidia.com/gpu");
    d->tolerations[0].op = strdup("Exists");
    d->tolerations[0].effect = strdup("NoSchedule");
    d->ntolerations = 1;
    w->ds[w->nds++] = d;
    return d;
}

static void add_all_ds(struct world *w)
{
    for (int i = 0; i < gpuop_operand_count(); i++)
        add_ds(w, gpuop_operand_get(i)->name);
}

static int phase_of(const char *phase)
{
    for (int i = GPUOP_PHASE_PENDING; phase && i <= GPUOP_PHASE_UNKNOWN; i++)
        if (strcmp(gpuop_phase_name(i), phase) == 0)
            return i;
    return GPUOP_PHASE_NONE;
}

/* now (T0 + 1000) is 100 s into the deletion of a pod this marks: within
 * the default terminating grace of 300 s. */
#define DELETED_AT (T0 + 900)

static struct gpuop_pod *terminating(struct gpuop_pod *p)
{
    p->deleted = DELETED_AT;
    return p;
}

static struct gpuop_pod *add_pod(struct world *w, const char *opname, const char *node,
                                 const char *phase, bool ready)
{
    struct gpuop_pod *p = calloc(1, sizeof(*p));
    char name[128];
    snprintf(name, sizeof(name), "gpuop-%s-%s-%zu", opname, node, w->np);
    p->name = strdup(name);
    p->operand = op(opname);
    p->node = strdup(node);
    p->bound = true;
    p->phase = phase_of(phase);
    p->created = T0 + 200;
    p->ready_since = ready ? p->created : 0;
    w->pods[w->np++] = p;
    /* as on a real node, a running device plugin makes the kubelet advertise GPUs */
    for (size_t i = 0; i < w->nn && p->operand == op("device-plugin") && ready; i++)
        if (strcmp(w->nodes[i]->name, node) == 0)
            w->nodes[i]->gpus.capacity = w->nodes[i]->gpus.allocatable = 8;
    return p;
}

static void run_pods(struct world *w, const char *node, const char *ops)
{
    char buf[256], *save = NULL;
    snprintf(buf, sizeof(buf), "%s", ops);
    for (char *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
        add_pod(w, tok, node, "Running", true);
}

static void analyze(struct world *w)
{
    gpuop_findings_free(&w->f);
    assert_int_equal(
        gpuop_analyze(
            &(struct gpuop_analysis_in){.policy = &w->pol,
                                        .nodes = (const struct gpuop_node *const *)w->nodes,
                                        .nnodes = w->nn,
                                        .ds = (const struct gpuop_ds *const *)w->ds,
                                        .nds = w->nds,
                                        .pods = (const struct gpuop_pod *const *)w->pods,
                                        .npods = w->np,
                                        .now = T0 + 1000},
            &w->f),
        0);
    /* invariants every result must keep */
    size_t total = 0;
    for (size_t i = 0; i < w->f.nnodes; i++) {
        const struct gpuop_node_result *r = &w->f.nodes[i];
        if (i)
            assert_true(strcmp(w->f.nodes[i - 1].name, r->name) < 0);
        assert_int_equal(r->first, total);
        total += r->nfindings;
        for (size_t k = 1; k < r->nfindings; k++) {
            const struct gpuop_finding *a = &w->f.items[r->first + k - 1], *b = a + 1;
            assert_true(a->operand < b->operand || (a->operand == b->operand && a->kind < b->kind));
        }
    }
    assert_int_equal(total, w->f.nitems);
    for (size_t i = 0; i < w->f.nitems; i++) {
        char msg[GPUOP_FINDING_MESSAGE_MAX];
        const struct gpuop_finding *x = &w->f.items[i];
        int len = gpuop_finding_message(&w->f, x, msg, sizeof(msg));
        assert_true(len > 20 && (size_t)len < sizeof(msg));
        assert_int_equal(strlen(msg), (size_t)len);
        /* every placeholder of the reason's templates was filled */
        if (strchr(msg, '<') || strchr(msg, '[') || strchr(msg, ']'))
            fail_msg("unfilled template in \"%s\"", msg);
        assert_int_equal(x->kind, gpuop_reason_get(x->reason)->kind);
        seen[x->reason]++;
    }
}

/* The structs here are built by hand, one allocation per string, so they
 * are freed by hand too (gpuop_*_free releases the one block gpuop_*_new
 * makes). */
static void hand_node_free(struct gpuop_node *n)
{
    if (!n)
        return;
    free(n->name);
    for (int i = 0; n->deploy_other && i < GPUOP_OPERAND_MAX; i++)
        free(n->deploy_other[i]);
    free(n->deploy_other);
    for (size_t i = 0; i < n->ntaints; i++) {
        free(n->taints[i].key);
        free(n->taints[i].value);
        free(n->taints[i].effect);
    }
    free(n->taints);
    free(n->os);
    free(n);
}

static void set_waiting(struct gpuop_pod *p, const char *reason, const char *message)
{
    free(p->waiting_reason);
    free(p->waiting_message);
    p->waiting_reason = strdup(reason);
    p->waiting_message = strdup(message);
}

static void hand_pod_free(struct gpuop_pod *p)
{
    if (!p)
        return;
    free(p->name);
    free(p->node);
    free(p->waiting_reason);
    free(p->waiting_message);
    free(p);
}

static void world_free(struct world *w)
{
    gpuop_findings_free(&w->f);
    for (size_t i = 0; i < w->nn; i++)
        hand_node_free(w->nodes[i]);
    for (size_t i = 0; i < w->nds; i++) {
        gpuop_ds_free(w->ds[i]);
        free(w->ds[i]);
    }
    for (size_t i = 0; i < w->np; i++)
        hand_pod_free(w->pods[i]);
}

static const struct gpuop_node_result *node_res(const struct world *w, const char *name)
{
    for (size_t i = 0; i < w->f.nnodes; i++)
        if (strcmp(w->f.nodes[i].name, name) == 0)
            return &w->f.nodes[i];
    return NULL;
}

/* The finding of (node, operand, kind), or NULL. */
static const struct gpuop_finding *find(const struct world *w, const char *node, const char *opname,
                                        int kind)
{
    const struct gpuop_node_result *r = node_res(w, node);
    for (size_t k = 0; r && k < r->nfindings; k++) {
        const struct gpuop_finding *x = &w->f.items[r->first + k];
        if (x->operand == op(opname) && x->kind == kind)
            return x;
    }
    return NULL;
}

static const char *msg_of(const struct world *w, const struct gpuop_finding *x)
{
    static char buf[GPUOP_FINDING_MESSAGE_MAX];
    gpuop_finding_message(&w->f, x, buf, sizeof(buf));
    return buf;
}

#define ALL_TRUE                                                                                   \
    "present=true driver=true container-toolkit=true device-plugin=true "                          \
    "gpu-feature-discovery=true dcgm=true dcgm-exporter=true operator-validator=true "             \
    "mig-manager=true dra-driver=true mps-control-daemon=true"
#define ALL_OPS                                                                                    \
    "driver container-toolkit device-plugin gpu-feature-discovery dcgm dcgm-exporter "             \
    "operator-validator mig-manager dra-driver mps-control-daemon"

/* ---- tests ---- */

static void test_all_clean(void **state)
{
    struct world w;
    world_init(&w);
    add_all_ds(&w);
    add_node(&w, "gpu-b", ALL_TRUE, "nvidia.com/gpu=present:NoSchedule");
    add_node(&w, "gpu-a", ALL_TRUE, NULL);
    add_node(&w, "cpu-1", NULL, NULL);
    run_pods(&w, "gpu-a", ALL_OPS);
    run_pods(&w, "gpu-b", ALL_OPS);
    analyze(&w);
    assert_int_equal(w.f.nitems, 0);
    assert_int_equal(w.f.gpu_nodes, 2);
    assert_int_equal(w.f.complete_nodes, 2);
    assert_int_equal(w.f.violations, 0);
    assert_int_equal(w.f.nnodes, 2); /* the CPU node without findings is not listed */
    assert_string_equal(w.f.nodes[0].name, "gpu-a");
    for (int o = 0; o < gpuop_operand_count(); o++) {
        assert_int_equal(w.f.nodes[0].cell[o], GPUOP_CELL_RUNNING);
        assert_int_equal(w.f.operands[o].expected_nodes, 2);
        assert_int_equal(w.f.operands[o].running_nodes, 2);
        assert_int_equal(w.f.operands[o].desired, 7);
        assert_int_equal(w.f.operands[o].ready, 5);
        assert_true(w.f.operands[o].enabled);
        assert_true(w.f.operands[o].ds_present);
    }
    world_free(&w);
}

/* The seed case: two GPU nodes, only one got labels and a driver. */
static void test_seed_not_scheduled(void **state)
{
    struct world w;
    world_init(&w);
    for (int o = 1; o < gpuop_operand_count(); o++)
        w.pol.operands[o].enabled = false;
    add_ds(&w, "driver");
    add_node(&w, "gpu-1", "present=true driver=true", NULL);
    add_node(&w, "gpu-2", "present=true", NULL);
    run_pods(&w, "gpu-1", "driver");
    analyze(&w);
    assert_int_equal(w.f.nitems, 1);
    const struct gpuop_finding *x = find(&w, "gpu-2", "driver", GPUOP_KIND_NOT_SCHEDULED);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_LABEL_ABSENT);
    assert_non_null(strstr(msg_of(&w, x), "nvidia.com/gpu.deploy.driver is absent"));
    assert_non_null(strstr(msg_of(&w, x), "nothing happens here"));
    assert_int_equal(node_res(&w, "gpu-2")->cell[op("driver")], GPUOP_CELL_NOT_SCHEDULED);
    assert_int_equal(node_res(&w, "gpu-2")->cell[op("container-toolkit")], GPUOP_CELL_DISABLED);
    assert_int_equal(w.f.gpu_nodes, 2);
    assert_int_equal(w.f.complete_nodes, 1);
    assert_int_equal(w.f.operands[op("driver")].expected_nodes, 1);
    assert_false(w.f.operands[op("container-toolkit")].enabled);
    world_free(&w);
}

static void test_label_values(void **state)
{
    static const struct {
        const char *value;
        int reason;
        const char *in_message;
    } cases[] = {
        {NULL, GPUOP_REASON_LABEL_ABSENT, "is absent"},
        {"EMPTY", GPUOP_REASON_LABEL_EMPTY, "is \"\" (empty)"},
        {"paused", GPUOP_REASON_LABEL_PAUSED, "is \"paused\""},
        {"paused-for-driver-upgrade", GPUOP_REASON_LABEL_PAUSED_LEFT_OVER,
         "\"paused-for-driver-upgrade\" but no driver upgrade is in progress"},
        {"True", GPUOP_REASON_LABEL_INVALID, "is \"True\", which is neither"},
        {"yes", GPUOP_REASON_LABEL_INVALID, "is \"yes\""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct world w;
        char labels[128];
        world_init(&w);
        add_all_ds(&w);
        snprintf(labels, sizeof(labels), "present=true driver=true%s%s",
                 cases[i].value ? " container-toolkit=" : "", cases[i].value ? cases[i].value : "");
        add_node(&w, "n", labels, NULL);
        run_pods(&w, "n", "driver");
        analyze(&w);
        const struct gpuop_finding *x =
            find(&w, "n", "container-toolkit", GPUOP_KIND_NOT_SCHEDULED);
        assert_non_null(x);
        assert_int_equal(x->reason, cases[i].reason);
        if (!strstr(msg_of(&w, x), cases[i].in_message))
            fail_msg("case %zu: \"%s\" not in \"%s\"", i, cases[i].in_message, msg_of(&w, x));
        /* the same rule gives every other unlabelled operand LabelAbsent */
        x = find(&w, "n", "dcgm-exporter", GPUOP_KIND_NOT_SCHEDULED);
        assert_non_null(x);
        assert_int_equal(x->reason, GPUOP_REASON_LABEL_ABSENT);
        assert_null(find(&w, "n", "driver", GPUOP_KIND_NOT_SCHEDULED));
        world_free(&w);
    }
}

/* The MPS control daemon (operand.h follow rows): expected where the
 * model says it is for the node (device plugin "true", GFD's mps.capable
 * "true"), Missing there when it does not run; on a node it is not for,
 * no finding, no host-provided bit, the cell NA; its pod there is
 * Unexpected (the DaemonSet controller would not put it there). */
/* ---- GPU sharing (sharing.h) ---- */

/* n (in w) with its config label's value after it, as gpuop_node_new
 * keeps it: the node, moved. */
static struct gpuop_node *with_config(struct world *w, struct gpuop_node *n, const char *cfg,
                                      bool cut)
{
    size_t head = (sizeof(*n) + 7) & ~(size_t)7;
    struct gpuop_node *m = realloc(n, head + strlen(cfg) + 1);
    assert_non_null(m);
    strcpy((char *)m + head, cfg);
    m->config_at = (uint16_t)head;
    m->config_long = cut;
    for (size_t i = 0; i < w->nn; i++)
        if (w->nodes[i] == n)
            w->nodes[i] = m;
    return m;
}

/* A GPU node name with every operand running (the MPS daemon not for it). */
static struct gpuop_node *sharing_node(struct world *w, const char *name)
{
    struct gpuop_node *n = add_node(w, name, ALL_TRUE, NULL);
    n->deploy[op("mps-control-daemon")] = GPUOP_LABEL_NOT_HERE;
    run_pods(w, name,
             "driver container-toolkit device-plugin gpu-feature-discovery dcgm "
             "dcgm-exporter operator-validator mig-manager dra-driver");
    return n;
}

/* The policy names ConfigMap "sharing" with keys (JSON of its data, NULL:
 * absent). */
static void sharing_policy(struct world *w, const char *data)
{
    int dp = op("device-plugin");
    if (dp < 0 || dp >= GPUOP_OPERAND_MAX)
        return; /* op() failed the test */
    w->pol.operands[dp].config_name = strdup("sharing");
    json_t *cm = data ? json_pack("{s:o}", "data", json_loads(data, 0, NULL)) : NULL;
    assert_int_equal(gpuop_sharing_cm_read(cm, "sharing", &w->pol.plugin_cm), 0);
    json_decref(cm);
}

static void test_sharing_config_key_missing(void **state)
{
    int dp = op("device-plugin");
    if (dp < 0 || dp >= GPUOP_OPERAND_MAX)
        return; /* op() failed the test */
    struct world w;
    world_init(&w);
    add_all_ds(&w);
    sharing_policy(&w, "{\"default\": \"version: v1\", \"ts-4\": \"version: v1\"}");
    with_config(&w, sharing_node(&w, "missing"), "missing", false);
    with_config(&w, sharing_node(&w, "ts-4"), "ts-4", false);
    with_config(&w, sharing_node(&w, "ts"), "ts", false); /* a prefix of a key is no key */
    sharing_node(&w, "unlabelled");                       /* the default's: not judged here */
    analyze(&w);
    assert_int_equal(w.f.nitems, 2);
    const struct gpuop_finding *x = find(&w, "missing", "device-plugin", GPUOP_KIND_MISSING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_SHARING_CONFIG_KEY_MISSING);
    assert_int_equal(node_res(&w, "missing")->cell[dp], GPUOP_CELL_MISSING);
    char msg[GPUOP_FINDING_MESSAGE_MAX];
    gpuop_finding_message(&w.f, x, msg, sizeof(msg));
    assert_non_null(strstr(msg, "is \"missing\", a key ConfigMap sharing lacks (its keys: "
                                "default, ts-4)"));
    assert_non_null(strstr(msg, "or add the key \"missing\" to ConfigMap sharing."));
    assert_non_null(strstr(msg, "(kubectl label node missing nvidia.com/device-plugin.config=KEY "
                                "--overwrite)"));
    assert_non_null(find(&w, "ts", "device-plugin", GPUOP_KIND_MISSING));
    assert_null(find(&w, "ts-4", "device-plugin", GPUOP_KIND_MISSING));
    assert_int_equal(node_res(&w, "ts-4")->cell[dp], GPUOP_CELL_RUNNING);

    /* the plugin's pod crash-loops there (config-manager-init fails): the
     * key is why, not the crash loop */
    for (size_t i = 0; i < w.np; i++)
        if (w.pods[i]->operand == dp && !strcmp(w.pods[i]->node, "missing")) {
            w.pods[i]->ready_since = 0;
            set_waiting(w.pods[i], "CrashLoopBackOff", "back-off 5m0s restarting");
        }
    analyze(&w);
    x = find(&w, "missing", "device-plugin", GPUOP_KIND_MISSING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_SHARING_CONFIG_KEY_MISSING);
    assert_int_equal(w.f.by_reason[GPUOP_REASON_CRASH_LOOP], 0);

    /* the ConfigMap absent: every labelled node's key is missing */
    memset(&w.pol.plugin_cm, 0, sizeof(w.pol.plugin_cm));
    assert_int_equal(gpuop_sharing_cm_read(NULL, "sharing", &w.pol.plugin_cm), 0);
    analyze(&w);
    assert_int_equal(w.f.by_reason[GPUOP_REASON_SHARING_CONFIG_KEY_MISSING], 3);
    x = find(&w, "ts-4", "device-plugin", GPUOP_KIND_MISSING);
    assert_non_null(x);
    gpuop_finding_message(&w.f, x, msg, sizeof(msg));
    assert_non_null(strstr(msg, "is \"ts-4\", and ConfigMap sharing does not exist:"));

    /* not read (the read failed, or too many keys): no node is judged */
    w.pol.plugin_cm.state = GPUOP_SHARING_CM_UNKNOWN;
    analyze(&w);
    assert_int_equal(w.f.by_reason[GPUOP_REASON_SHARING_CONFIG_KEY_MISSING], 0);
    assert_int_equal(w.f.by_reason[GPUOP_REASON_CRASH_LOOP], 1); /* as without sharing */
    w.pol.plugin_cm.state = GPUOP_SHARING_CM_TOO_BIG;
    analyze(&w);
    assert_int_equal(w.f.by_reason[GPUOP_REASON_SHARING_CONFIG_KEY_MISSING], 0);

    /* no config in the policy: the label means nothing */
    assert_int_equal(gpuop_sharing_cm_read(NULL, "sharing", &w.pol.plugin_cm), 0);
    free(w.pol.operands[dp].config_name);
    w.pol.operands[dp].config_name = NULL;
    analyze(&w);
    assert_int_equal(w.f.by_reason[GPUOP_REASON_SHARING_CONFIG_KEY_MISSING], 0);
    assert_int_equal(w.f.by_reason[GPUOP_REASON_CRASH_LOOP], 1);
    world_free(&w);

    /* an over-long value (no API server lets one through), kept cut: never
     * a key, even when its cut is one */
    world_init(&w);
    add_all_ds(&w);
    sharing_policy(&w, "{\"ts-4\": \"\"}");
    with_config(&w, sharing_node(&w, "long"), "ts-4", true);
    analyze(&w);
    assert_non_null(find(&w, "long", "device-plugin", GPUOP_KIND_MISSING));
    free(w.pol.operands[dp].config_name);
    world_free(&w);
    (void)state;
}

/* Allocatable against GFD's count x replicas: judged on a shared node
 * whose device plugin is Ready past the advertise grace, allocatable
 * above 0. */
static void test_shared_allocatable(void **state)
{
    int dp = op("device-plugin");
    if (dp < 0 || dp >= GPUOP_OPERAND_MAX)
        return;
    struct world w;
    world_init(&w);
    add_all_ds(&w);
    struct gpuop_node *n = sharing_node(&w, "ts"); /* allocatable 8: add_pod's */
    n->sharing = GPUOP_SHARING_TIME_SLICING;
    n->gpu_count = 8;
    n->replicas = 4;
    analyze(&w);
    const struct gpuop_finding *x = find(&w, "ts", "device-plugin", GPUOP_KIND_MISSING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_SHARED_ALLOCATABLE_DIFFERS);
    assert_int_equal(gpuop_finding_since(x), T0 + 200); /* the pod Ready since */
    assert_int_equal(node_res(&w, "ts")->cell[dp], GPUOP_CELL_MISSING);
    char msg[GPUOP_FINDING_MESSAGE_MAX];
    gpuop_finding_message(&w.f, x, msg, sizeof(msg));
    assert_non_null(strstr(msg, "The node advertises 8 nvidia.com/gpu (allocatable), but GFD "
                                "labels it 8 GPUs shared 4 ways (time-slicing): 32 nvidia.com/gpu "
                                "expected; "
                                "the device plugin pod gpuop-device-plugin-ts-"));
    assert_non_null(strstr(msg, "is Ready since 2026-11-29T21:10:00Z."));

    n->gpus.allocatable = 32; /* as GFD says */
    analyze(&w);
    assert_int_equal(w.f.nitems, 0);
    n->gpus.allocatable = 0; /* nothing (or a renamed resource): not this finding */
    analyze(&w);
    assert_int_equal(w.f.by_reason[GPUOP_REASON_SHARED_ALLOCATABLE_DIFFERS], 0);
    n->gpus.allocatable = 8;
    n->sharing = GPUOP_SHARING_NONE; /* not shared: not judged */
    analyze(&w);
    assert_int_equal(w.f.nitems, 0);
    n->sharing = GPUOP_SHARING_MPS;
    n->gpu_count = 0; /* GFD's count absent */
    analyze(&w);
    assert_int_equal(w.f.nitems, 0);
    n->gpu_count = 8;
    analyze(&w);
    assert_int_equal(w.f.by_reason[GPUOP_REASON_SHARED_ALLOCATABLE_DIFFERS], 1);

    /* the plugin Ready within the advertise grace (a rollout): not yet, and
     * the judgement changes when the grace ends */
    for (size_t i = 0; i < w.np; i++)
        if (w.pods[i]->operand == dp)
            w.pods[i]->ready_since = (uint32_t)(T0 + 950);
    analyze(&w);
    assert_int_equal(w.f.nitems, 0);
    assert_int_equal(w.f.next_change, T0 + 950 + GPUOP_ADVERTISE_GRACE_DEFAULT + 1);
    world_free(&w);
    (void)state;
}

/* SharingConfigNotApplied: the node's config (ts-4, then its data changed
 * to 8 replicas) against GFD's labels, from the later of the caches'
 * stamps of the key's config and the node's sharing labels, past the
 * advertise grace; never without a stamp (gpuop check) or GFD's labels. */
static void test_sharing_not_applied(void **state)
{
    int dp = op("device-plugin");
    if (dp < 0 || dp >= GPUOP_OPERAND_MAX)
        return;
    struct world w;
    world_init(&w);
    add_all_ds(&w);
    sharing_policy(&w, "{\"default\": \"version: v1\", \"ts-4\": \"sharing: {timeSlicing: "
                       "{resources: [{name: nvidia.com/gpu, replicas: 8}]}}\"}");
    struct gpuop_node *n = with_config(&w, sharing_node(&w, "ts"), "ts-4", false);
    n->sharing = GPUOP_SHARING_TIME_SLICING; /* GFD: the old config, 4 replicas */
    n->gpu_count = 8;
    n->replicas = 4;
    n->gpus.allocatable = 32; /* as GFD says: not SharedAllocatableDiffers */
    analyze(&w);
    assert_int_equal(w.f.nitems, 0); /* no stamps: not judged */

    int key = gpuop_sharing_cm_index(&w.pol.plugin_cm, "ts-4");
    assert_int_equal(key, 1);
    n->sharing_since = (uint32_t)(T0 - 5000);
    w.pol.plugin_cm.since[0] = (uint32_t)T0; /* "default": not the node's */
    w.pol.plugin_cm.since[key] = (uint32_t)(T0 + 1000 - GPUOP_ADVERTISE_GRACE_DEFAULT);
    analyze(&w); /* within the grace: not yet, judged again when it ends */
    assert_int_equal(w.f.nitems, 0);
    assert_int_equal(w.f.next_change, T0 + 1000 + 1);

    w.pol.plugin_cm.since[key] = (uint32_t)(T0 + 100);
    analyze(&w);
    assert_int_equal(w.f.nitems, 1);
    const struct gpuop_finding *x = find(&w, "ts", "device-plugin", GPUOP_KIND_MISSING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_SHARING_CONFIG_NOT_APPLIED);
    assert_int_equal(gpuop_finding_since(x), T0 + 100);
    assert_int_equal(node_res(&w, "ts")->cell[dp], GPUOP_CELL_RUNNING); /* it runs */
    char msg[GPUOP_FINDING_MESSAGE_MAX];
    gpuop_finding_message(&w.f, x, msg, sizeof(msg));
    assert_non_null(strstr(msg, "The node's sharing config \"ts-4\" (ConfigMap sharing) says "
                                "time-slicing with 8 replica(s), but GFD labels the node "
                                "time-slicing with 4 (nvidia.com/gpu.sharing-strategy, "
                                "nvidia.com/gpu.replicas), since 2026-11-29T21:08:20Z: the "
                                "device plugin has not applied its config."));
    gpuop_finding_detail(x, msg, sizeof(msg));
    assert_string_equal(msg, "");

    /* the node's labels came later (its label moved, or GFD relabelled):
     * the grace counts from them */
    n->sharing_since = (uint32_t)(T0 + 990);
    analyze(&w);
    assert_int_equal(w.f.nitems, 0);
    assert_int_equal(w.f.next_change, T0 + 990 + GPUOP_ADVERTISE_GRACE_DEFAULT + 1);
    n->sharing_since = (uint32_t)(T0 - 5000);

    n->replicas = 8; /* GFD applied it (and the plugin: 8 x 8) */
    n->gpus.allocatable = 64;
    analyze(&w);
    assert_int_equal(w.f.nitems, 0);
    n->replicas = 0; /* no GFD labels: not judged */
    n->sharing = GPUOP_SHARING_NONE;
    analyze(&w);
    assert_int_equal(w.f.nitems, 0);

    /* the default's config (no sharing) against GFD's time-slicing: "none"
     * with 1 replica */
    w.pol.plugin_config_default = "default";
    n->config_at = 0;
    n->sharing = GPUOP_SHARING_TIME_SLICING;
    n->replicas = 4;
    n->gpus.allocatable = 32;
    analyze(&w);
    x = find(&w, "ts", "device-plugin", GPUOP_KIND_MISSING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_SHARING_CONFIG_NOT_APPLIED);
    assert_int_equal(gpuop_finding_since(x), T0);
    gpuop_finding_message(&w.f, x, msg, sizeof(msg));
    assert_non_null(strstr(msg, "\"default\" (ConfigMap sharing) says none with 1 replica(s)"));
    n->sharing = GPUOP_SHARING_NONE;
    n->replicas = 1;
    n->gpus.allocatable = 8;
    analyze(&w);
    assert_int_equal(w.f.nitems, 0);

    /* the device plugin does not run (crash-looping): not this finding */
    n->replicas = 4;
    analyze(&w);
    assert_int_equal(w.f.by_reason[GPUOP_REASON_SHARING_CONFIG_NOT_APPLIED], 1);
    for (size_t i = 0; i < w.np; i++)
        if (w.pods[i]->operand == dp && !strcmp(w.pods[i]->node, "ts")) {
            w.pods[i]->ready_since = 0;
            set_waiting(w.pods[i], "CrashLoopBackOff", "back-off 5m0s restarting");
        }
    analyze(&w);
    assert_int_equal(w.f.by_reason[GPUOP_REASON_SHARING_CONFIG_NOT_APPLIED], 0);
    assert_int_equal(w.f.by_reason[GPUOP_REASON_CRASH_LOOP], 1);
    w.pol.plugin_config_default = NULL;
    free(w.pol.operands[dp].config_name);
    world_free(&w);
    (void)state;
}

/* renameByDefault: a node whose config renames nvidia.com/gpu is judged
 * by nvidia.com/gpu.shared; the wrong name is the finding, naming the one
 * expected; the reverse too. */
static void test_shared_renamed(void **state)
{
    int dp = op("device-plugin");
    if (dp < 0 || dp >= GPUOP_OPERAND_MAX)
        return;
    struct world w;
    world_init(&w);
    add_all_ds(&w);
    sharing_policy(&w, "{\"ren\": \"sharing: {timeSlicing: {renameByDefault: true, resources: "
                       "[{name: nvidia.com/gpu, replicas: 4}]}}\", \"ts-4\": \"sharing: "
                       "{timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 4}]}}\"}");
    struct gpuop_node *n = sharing_node(&w, "ren");
    n = with_config(&w, n, "ren", false);
    n->sharing = GPUOP_SHARING_TIME_SLICING;
    n->gpu_count = 8;
    n->replicas = 4;
    n->gpus.capacity = n->gpus.allocatable = 0; /* right: gpu.shared 32 */
    n->shared.capacity = n->shared.allocatable = 32;
    analyze(&w);
    assert_int_equal(w.f.nitems, 0);
    assert_true(node_res(&w, "ren")->renamed);
    assert_int_equal(node_res(&w, "ren")->gpus.allocatable, 32);

    n->shared.allocatable = 8; /* the number wrong */
    analyze(&w);
    const struct gpuop_finding *x = find(&w, "ren", "device-plugin", GPUOP_KIND_MISSING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_SHARED_ALLOCATABLE_DIFFERS);
    char msg[GPUOP_FINDING_MESSAGE_MAX];
    gpuop_finding_message(&w.f, x, msg, sizeof(msg));
    assert_non_null(strstr(msg, "The node advertises 8 nvidia.com/gpu.shared (allocatable), but "
                                "GFD labels it 8 GPUs shared 4 ways (time-slicing): 32 "
                                "nvidia.com/gpu.shared expected"));

    n->shared.capacity = n->shared.allocatable = 0; /* the wrong name */
    n->gpus.capacity = n->gpus.allocatable = 32;
    analyze(&w);
    x = find(&w, "ren", "device-plugin", GPUOP_KIND_MISSING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_SHARED_ALLOCATABLE_DIFFERS);
    assert_int_equal(w.f.by_reason[GPUOP_REASON_DEVICE_PLUGIN_ADVERTISES_NOTHING], 0);
    gpuop_finding_message(&w.f, x, msg, sizeof(msg));
    assert_non_null(strstr(msg, "The node advertises 0 nvidia.com/gpu.shared (allocatable), and "
                                "nvidia.com/gpu instead, where its sharing config names "
                                "nvidia.com/gpu.shared, but GFD"));

    n = with_config(&w, n, "ts-4", false); /* the reverse: not renamed, advertises .shared */
    n->gpus.capacity = n->gpus.allocatable = 0;
    n->shared.capacity = n->shared.allocatable = 32;
    analyze(&w);
    x = find(&w, "ren", "device-plugin", GPUOP_KIND_MISSING);
    assert_non_null(x);
    gpuop_finding_message(&w.f, x, msg, sizeof(msg));
    assert_non_null(strstr(msg, "advertises 0 nvidia.com/gpu (allocatable), and "
                                "nvidia.com/gpu.shared instead"));
    int rc = 0;
    for (size_t i = 0; i < w.f.nitems; i++)
        rc |= w.f.items[i].reason == GPUOP_REASON_DEVICE_PLUGIN_ADVERTISES_NOTHING;
    assert_int_equal(rc, 0);
    free(w.pol.operands[dp].config_name);
    world_free(&w);
    (void)state;
}

/* A key's config as the device plugin reads its sharing: strategy,
 * replicas, rename; bad input is BAD, never a crash. */
static void test_sharing_conf_read(void **state)
{
    struct gpuop_sharing_conf c;
    struct gpuop_err err = {0};
    static const char ts4[] = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                              "    - name: nvidia.com/gpu\n      replicas: 4\n";
    assert_int_equal(gpuop_sharing_conf_read(ts4, strlen(ts4), &c, &err), 0);
    assert_int_equal(c.strategy, GPUOP_SHARING_TIME_SLICING);
    assert_int_equal(c.replicas, 4);
    assert_int_equal(c.flags, GPUOP_SHARING_CONF_READ);
    /* MPS wins over time-slicing; renameByDefault; the gpu resource, not the first */
    static const char mps[] =
        "{sharing: {timeSlicing: {resources: [{name: gpu, replicas: 2}]},"
        " mps: {renameByDefault: true, resources: [{name: nvidia.com/mig-1g.5gb, replicas: 3},"
        " {name: gpu, replicas: 6}]}}}";
    assert_int_equal(gpuop_sharing_conf_read(mps, strlen(mps), &c, &err), 0);
    assert_int_equal(c.strategy, GPUOP_SHARING_MPS);
    assert_int_equal(c.replicas, 6);
    assert_int_equal(c.flags, GPUOP_SHARING_CONF_READ | GPUOP_SHARING_CONF_RENAME);
    /* a resource's own rename */
    static const char ren[] = "sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, "
                              "rename: nvidia.com/gpu.shared, replicas: 2}]}}";
    assert_int_equal(gpuop_sharing_conf_read(ren, strlen(ren), &c, &err), 0);
    assert_true(c.flags & GPUOP_SHARING_CONF_RENAME);
    static const char other[] = "sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, "
                                "rename: nvidia.com/my-gpu, replicas: 2}]}}";
    assert_int_equal(gpuop_sharing_conf_read(other, strlen(other), &c, &err), 0);
    assert_true(c.flags & GPUOP_SHARING_CONF_RENAME_OTHER);
    /* no sharing, an empty config, replicas 1: not shared */
    static const char none[] = "version: v1\nflags: {migStrategy: none}\n";
    assert_int_equal(gpuop_sharing_conf_read(none, strlen(none), &c, &err), 0);
    assert_int_equal(c.strategy, GPUOP_SHARING_NONE);
    assert_int_equal(c.replicas, 1);
    assert_int_equal(gpuop_sharing_conf_read("", 0, &c, &err), 0);
    assert_int_equal(c.strategy, GPUOP_SHARING_NONE);
    /* replicas saturate */
    static const char big[] = "sharing: {timeSlicing: {resources: [{name: gpu, replicas: 99999}]}}";
    assert_int_equal(gpuop_sharing_conf_read(big, strlen(big), &c, &err), 0);
    assert_int_equal(c.replicas, GPUOP_SHARING_REPLICAS_MAX);
    /* bad input: BAD with why */
    static const char *const bad[] = {
        "sharing: {timeSlicing: [1, 2",                                    /* not YAML */
        "- a list\n",                                                      /* not a mapping */
        "sharing: 3\n",                                                    /* sharing not one */
        "sharing: {timeSlicing: {resources: {name: gpu}}}",                /* not a list */
        "sharing: {timeSlicing: {resources: [{name: gpu, replicas: x}]}}", /* not an int */
        "sharing: {mps: {renameByDefault: 3}}",                            /* not a bool */
        "a: 1\n---\nb: 2\n",                                               /* two documents */
        "a: &x [*x]\n",                                                    /* an alias loop */
        "sharing: {timeSlicing: {resources: [{name: gpu, replicas: 1}]}}", /* refused: < 2 */
        "sharing: {timeSlicing: {resources: [{name: gpu}]}}",              /* no replicas */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memset(&err, 0, sizeof(err));
        assert_true(gpuop_sharing_conf_read(bad[i], strlen(bad[i]), &c, &err) < 0);
        assert_int_equal(c.flags, GPUOP_SHARING_CONF_BAD);
        assert_true(err.message[0] != '\0');
    }
    /* huge data: not parsed at all */
    size_t n = GPUOP_SHARING_CONF_BYTES + 1;
    char *huge = malloc(n + 1);
    assert_non_null(huge);
    memset(huge, 'a', n);
    huge[n] = '\0';
    assert_int_equal(gpuop_sharing_conf_read(huge, n, &c, &err), GPUOP_ETOOBIG);
    assert_int_equal(c.flags, GPUOP_SHARING_CONF_BAD);
    free(huge);
    (void)state;
}

/* The ConfigMap's keys as read: sorted, bounded, bad input. */
static void test_sharing_cm_read(void **state)
{
    struct gpuop_sharing_cm cm;
    json_t *o = json_loads("{\"data\": {\"ts-4\": \"\", \"default\": \"\", \"bad key\": \"\"},"
                           " \"binaryData\": {\"bin\": \"AA==\"}}",
                           0, NULL);
    assert_int_equal(gpuop_sharing_cm_read(o, "cm", &cm), 0);
    assert_int_equal(cm.state, GPUOP_SHARING_CM_READ);
    assert_string_equal(cm.keys, "bin, default, ts-4");
    assert_int_equal(cm.nkeys, 3);
    assert_true(gpuop_sharing_cm_has(&cm, "default"));
    assert_true(gpuop_sharing_cm_has(&cm, "ts-4"));
    assert_false(gpuop_sharing_cm_has(&cm, "ts"));
    assert_false(gpuop_sharing_cm_has(&cm, "fault"));
    assert_false(gpuop_sharing_cm_has(&cm, "bad key"));
    assert_false(gpuop_sharing_cm_has(&cm, ""));
    json_decref(o);

    /* each key's config, by key; one that does not parse is named, the
       others still read */
    o = json_loads("{\"data\": {\"ts-4\": \"sharing: {timeSlicing: {resources: [{name: gpu, "
                   "replicas: 4}]}}\", \"broken\": \"sharing: [\", \"default\": \"version: v1\"},"
                   " \"binaryData\": {\"bin\": \"AA==\"}}",
                   0, NULL);
    assert_int_equal(gpuop_sharing_cm_read(o, "cm", &cm), 0);
    assert_string_equal(cm.keys, "bin, broken, default, ts-4");
    assert_int_equal(gpuop_sharing_cm_conf(&cm, "ts-4")->replicas, 4);
    assert_int_equal(gpuop_sharing_cm_conf(&cm, "ts-4")->strategy, GPUOP_SHARING_TIME_SLICING);
    assert_int_equal(gpuop_sharing_cm_conf(&cm, "default")->strategy, GPUOP_SHARING_NONE);
    assert_null(gpuop_sharing_cm_conf(&cm, "broken"));
    assert_null(gpuop_sharing_cm_conf(&cm, "bin"));
    assert_null(gpuop_sharing_cm_conf(&cm, "missing"));
    assert_true(gpuop_sharing_cm_has(&cm, "broken"));
    assert_non_null(strstr(cm.problem, "key broken: "));
    json_decref(o);

    /* huge data in one key: that key is a problem, the others read */
    o = json_loads("{\"data\": {\"ts-4\": \"sharing: {timeSlicing: {resources: [{name: gpu, "
                   "replicas: 4}]}}\"}}",
                   0, NULL);
    size_t big = GPUOP_SHARING_CONF_BYTES * 2;
    char *text = malloc(big + 1);
    assert_non_null(text);
    memset(text, '#', big);
    text[big] = '\0';
    json_object_set_new(json_object_get(o, "data"), "huge", json_string(text));
    free(text);
    assert_int_equal(gpuop_sharing_cm_read(o, "cm", &cm), 0);
    assert_true(gpuop_sharing_cm_has(&cm, "huge"));
    assert_null(gpuop_sharing_cm_conf(&cm, "huge"));
    assert_non_null(gpuop_sharing_cm_conf(&cm, "ts-4"));
    assert_non_null(strstr(cm.problem, "key huge: "));
    json_decref(o);

    /* no data: read, no key */
    o = json_object();
    assert_int_equal(gpuop_sharing_cm_read(o, "cm", &cm), 0);
    assert_int_equal(cm.state, GPUOP_SHARING_CM_READ);
    assert_string_equal(cm.keys, "");
    json_decref(o);

    /* too many keys for the bytes kept: too big, no key claimed */
    o = json_object();
    json_t *data = json_object();
    char key[64];
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof(key), "config-number-%03d", i);
        json_object_set_new(data, key, json_string(""));
    }
    json_object_set_new(o, "data", data);
    assert_int_equal(gpuop_sharing_cm_read(o, "cm", &cm), 0);
    assert_int_equal(cm.state, GPUOP_SHARING_CM_TOO_BIG);
    assert_false(gpuop_sharing_cm_known(&cm));
    assert_false(gpuop_sharing_cm_has(&cm, "config-number-000"));
    json_decref(o);

    /* not an object */
    o = json_string("x");
    assert_int_equal(gpuop_sharing_cm_read(o, "cm", &cm), GPUOP_EINVAL);
    assert_int_equal(cm.state, GPUOP_SHARING_CM_UNKNOWN);
    json_decref(o);

    /* GFD's labels */
    assert_int_equal(gpuop_sharing_replicas_of("4"), 4);
    assert_int_equal(gpuop_sharing_replicas_of("1000"), GPUOP_SHARING_REPLICAS_MAX);
    assert_int_equal(gpuop_sharing_replicas_of("99999999999999999999999"),
                     GPUOP_SHARING_REPLICAS_MAX);
    assert_int_equal(gpuop_sharing_replicas_of("0"), 0);
    assert_int_equal(gpuop_sharing_replicas_of("-1"), 0);
    assert_int_equal(gpuop_sharing_replicas_of(""), 0);
    assert_int_equal(gpuop_sharing_strategy_of("time-slicing"), GPUOP_SHARING_TIME_SLICING);
    assert_int_equal(gpuop_sharing_strategy_of("mps"), GPUOP_SHARING_MPS);
    assert_int_equal(gpuop_sharing_strategy_of("none"), GPUOP_SHARING_NONE);
    assert_int_equal(gpuop_sharing_strategy_of("x"), GPUOP_SHARING_OTHER);
    (void)state;
}

static void test_mps_daemon(void **state)
{
    int mps = op("mps-control-daemon");
    struct world w;
    world_init(&w);
    add_all_ds(&w);
    add_node(&w, "mps", ALL_TRUE, NULL);
    struct gpuop_node *plain = add_node(&w, "plain", ALL_TRUE, NULL);
    plain->deploy[mps] = GPUOP_LABEL_NOT_HERE;
    run_pods(&w, "mps",
             "driver container-toolkit device-plugin gpu-feature-discovery dcgm "
             "dcgm-exporter operator-validator mig-manager dra-driver");
    run_pods(&w, "plain",
             "driver container-toolkit device-plugin gpu-feature-discovery dcgm "
             "dcgm-exporter operator-validator mig-manager dra-driver");
    analyze(&w);
    /* on the MPS node: the daemon Missing, and the device plugin running
     * without it (it comes before the device plugin there) */
    assert_int_equal(w.f.nitems, 2);
    const struct gpuop_finding *x = find(&w, "mps", "mps-control-daemon", GPUOP_KIND_MISSING);
    assert_non_null(x);
    x = find(&w, "mps", "device-plugin", GPUOP_KIND_ORDERING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_DEVICE_PLUGIN_WITHOUT_MPS_DAEMON);
    assert_int_equal(x->prereq, mps);
    char msg[GPUOP_FINDING_MESSAGE_MAX];
    gpuop_finding_message(&w.f, x, msg, sizeof(msg));
    assert_non_null(strstr(msg, "device-plugin runs but mps-control-daemon does not"));
    assert_null(find(&w, "plain", "device-plugin", GPUOP_KIND_ORDERING));
    assert_int_equal(node_res(&w, "mps")->cell[mps], GPUOP_CELL_MISSING);
    assert_int_equal(node_res(&w, "plain")->cell[mps], GPUOP_CELL_NA);
    assert_int_equal(node_res(&w, "plain")->host_provided, 0);
    assert_int_equal(w.f.operands[mps].expected_nodes, 1);
    assert_int_equal(w.f.complete_nodes, 1);
    assert_int_equal(w.f.violations, 1);
    world_free(&w);

    /* the daemon runs: the chain is intact, the node complete */
    world_init(&w);
    add_all_ds(&w);
    add_node(&w, "mps", ALL_TRUE, NULL);
    run_pods(&w, "mps", ALL_OPS);
    analyze(&w);
    assert_int_equal(w.f.nitems, 0);
    world_free(&w);
}

static void test_host_provided(void **state)
{
    /* driver disabled in the policy; toolkit label "false"; the rest runs */
    struct world w;
    world_init(&w);
    w.pol.operands[op("driver")].enabled = false;
    add_all_ds(&w);
    add_node(&w, "n",
             "present=true driver=true container-toolkit=false device-plugin=true "
             "gpu-feature-discovery=true dcgm=true dcgm-exporter=true operator-validator=true "
             "mig-manager=true dra-driver=true mps-control-daemon=true",
             NULL);
    run_pods(&w, "n",
             "device-plugin gpu-feature-discovery dcgm dcgm-exporter operator-validator "
             "mig-manager dra-driver mps-control-daemon");
    analyze(&w);
    assert_int_equal(w.f.nitems, 0);
    const struct gpuop_node_result *r = node_res(&w, "n");
    assert_int_equal(r->host_provided, (1u << op("driver")) | (1u << op("container-toolkit")));
    assert_int_equal(r->cell[op("driver")], GPUOP_CELL_DISABLED);
    assert_int_equal(r->cell[op("container-toolkit")], GPUOP_CELL_HOST_PROVIDED);
    assert_int_equal(r->cell[op("device-plugin")], GPUOP_CELL_RUNNING);
    assert_int_equal(w.f.complete_nodes, 1);
    assert_int_equal(w.f.operands[op("driver")].expected_nodes, 0);
    assert_int_equal(w.f.operands[op("container-toolkit")].expected_nodes, 0);
    world_free(&w);
}

static void test_operands_false(void **state)
{
    struct world w;
    world_init(&w);
    add_all_ds(&w);
    add_node(&w, "quiet", "present=true operands=false", NULL);
    add_node(&w, "opted", ALL_TRUE " operands=false", NULL);
    add_node(&w, "leaky", ALL_TRUE " operands=false", NULL);
    run_pods(&w, "leaky", "driver");
    analyze(&w);
    /* nothing expected, nothing not-scheduled on an opted-out node */
    assert_int_equal(node_res(&w, "quiet")->nfindings, 0);
    assert_int_equal(node_res(&w, "opted")->nfindings, 0);
    assert_int_equal(node_res(&w, "opted")->cell[op("driver")], GPUOP_CELL_NA);
    const struct gpuop_finding *x = find(&w, "leaky", "driver", GPUOP_KIND_UNEXPECTED);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_NODE_OPTED_OUT);
    assert_non_null(strstr(msg_of(&w, x), "nvidia.com/gpu.deploy.operands=false"));
    assert_int_equal(node_res(&w, "leaky")->nfindings, 1);
    assert_int_equal(node_res(&w, "leaky")->cell[op("driver")], GPUOP_CELL_UNEXPECTED);
    assert_int_equal(w.f.operands[op("driver")].expected_nodes, 0);
    assert_int_equal(w.f.operands[op("driver")].running_nodes, 1);
    world_free(&w);
}

static void test_daemonset_absent(void **state)
{
    struct world w;
    world_init(&w);
    add_node(&w, "n", "driver=true", NULL);
    analyze(&w);
    const struct gpuop_finding *x = find(&w, "n", "driver", GPUOP_KIND_MISSING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_DAEMONSET_ABSENT);
    assert_non_null(strstr(msg_of(&w, x), "DaemonSet gpuop-driver does not exist"));
    assert_false(w.f.operands[op("driver")].ds_present);
    assert_int_equal(w.f.operands[op("driver")].desired, 0);
    world_free(&w);
}

/* NFD's OS and kernel labels, the driver pool label and the pool conflict
 * annotation on a hand-built node (any may be NULL). */
static void set_os_conflict(struct gpuop_node *n, const char *id, const char *ver,
                            const char *major, const char *kernel, const char *dpool,
                            const char *conflict)
{
    const char *v[GPUOP_OS_FIELDS] = {id, ver, major, kernel, dpool, conflict};
    size_t len = 0;
    for (int f = 0; f < GPUOP_OS_FIELDS; f++)
        len += (v[f] ? strlen(v[f]) : 0) + 1;
    free(n->os);
    n->os = calloc(1, len);
    n->os_labels = 0;
    for (int f = 0, at = 0; f < GPUOP_OS_FIELDS; f++) {
        if (v[f]) {
            n->os_labels |= (uint8_t)GPUOP_OS_HAS(f);
            strcpy(n->os + at, v[f]);
        }
        at += (int)(v[f] ? strlen(v[f]) : 0) + 1;
    }
}

static void set_os_all(struct gpuop_node *n, const char *id, const char *ver, const char *major,
                       const char *kernel, const char *dpool)
{
    set_os_conflict(n, id, ver, major, kernel, dpool, NULL);
}

static void set_os_kernel(struct gpuop_node *n, const char *id, const char *ver, const char *major,
                          const char *kernel)
{
    set_os_all(n, id, ver, major, kernel, NULL);
}

static void set_os(struct gpuop_node *n, const char *id, const char *ver, const char *major)
{
    set_os_kernel(n, id, ver, major, NULL);
}

static struct gpuop_ds *add_pool_ds(struct world *w, const char *tag, long long desired,
                                    long long ready)
{
    struct gpuop_ds *d = add_ds(w, "driver");
    char name[128];
    snprintf(name, sizeof(name), "gpuop-driver-%s", tag);
    free(d->name);
    d->name = strdup(name);
    d->desired = desired;
    d->ready = ready;
    return d;
}

/* The driver per OS (SPEC 4b): the pools' DaemonSets are the one driver
 * operand; each node is judged against its own pool's DaemonSet; a node
 * without OS labels is a finding of its own naming what it lacks. */
static void test_os_pools(void **state)
{
    struct world w;
    world_init(&w);
    int d = op("driver");
    for (int i = 0; i < gpuop_operand_count(); i++)
        w.pol.operands[i].enabled = i == d;
    w.pol.operands[d].os_tag = true; /* a tag from repository/image/version */
    set_os(add_node(&w, "u1", "driver=true", NULL), "ubuntu", "24.04", NULL);
    set_os(add_node(&w, "u2", "driver=true", NULL), "ubuntu", "22.04", NULL);
    set_os(add_node(&w, "r1", "driver=true", NULL), "rhel", "9.4", "9");
    set_os(add_node(&w, "r2", "driver=true", NULL), "rhel", "9.4", NULL);
    set_os(add_node(&w, "r3", "driver=true", "foo=bar:NoSchedule"), "rhel", "9.6", "9");
    add_node(&w, "x1", "driver=true", NULL);
    set_os(add_node(&w, "x2", "driver=true", NULL), "ubuntu", NULL, NULL);
    add_node(&w, "x3", "driver=false", NULL); /* host-provided: nothing to say */
    add_pool_ds(&w, "ubuntu24.04", 1, 1);
    add_pool_ds(&w, "rhel9", 2, 0);
    add_pod(&w, "driver", "u1", "Running", true);
    analyze(&w);

    const struct gpuop_operand_result *r = &w.f.operands[d];
    assert_true(r->ds_present);
    assert_int_equal(r->desired, 3);
    assert_int_equal(r->ready, 1);
    assert_string_equal(r->daemonsets, "gpuop-driver-rhel9,gpuop-driver-ubuntu24.04");
    assert_null(find(&w, "u1", "driver", GPUOP_KIND_MISSING));
    const struct gpuop_finding *x = find(&w, "r1", "driver", GPUOP_KIND_MISSING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_POD_NOT_CREATED); /* its pool's DaemonSet exists */
    assert_non_null(strstr(msg_of(&w, x), "DaemonSet gpuop-driver-rhel9 has no pod"));
    x = find(&w, "r3", "driver", GPUOP_KIND_MISSING); /* the pool's DaemonSet, named */
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_TAINT_NOT_TOLERATED);
    assert_non_null(strstr(msg_of(&w, x), "not tolerated by DaemonSet gpuop-driver-rhel9,"));
    x = find(&w, "u2", "driver", GPUOP_KIND_MISSING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_DAEMONSET_ABSENT);
    assert_non_null(strstr(msg_of(&w, x), "DaemonSet gpuop-driver-ubuntu22.04 does not exist"));
    x = find(&w, "r2", "driver", GPUOP_KIND_MISSING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_OS_LABELS_MISSING);
    assert_non_null(strstr(msg_of(&w, x), "lacks " GPUOP_LABEL_OS_MAJOR ","));
    x = find(&w, "x1", "driver", GPUOP_KIND_MISSING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_OS_LABELS_MISSING);
    assert_non_null(
        strstr(msg_of(&w, x), "lacks " GPUOP_LABEL_OS_ID " and " GPUOP_LABEL_OS_VERSION ","));
    x = find(&w, "x2", "driver", GPUOP_KIND_MISSING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_OS_LABELS_MISSING);
    assert_non_null(strstr(msg_of(&w, x), "lacks " GPUOP_LABEL_OS_VERSION ","));
    assert_null(node_res(&w, "x3")->nfindings ? &w : NULL);

    /* a full reference: the one gpuop-driver, no OS needed */
    w.pol.operands[d].os_tag = false;
    analyze(&w);
    assert_null(w.f.operands[d].daemonsets);
    x = find(&w, "x1", "driver", GPUOP_KIND_MISSING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_DAEMONSET_ABSENT);
    assert_non_null(strstr(msg_of(&w, x), "DaemonSet gpuop-driver does not exist"));
    world_free(&w);
}

/* Driver pools (spec.driver.pools): a node labelled gpuop.dev/driver-pool
 * with a pool's name is judged against its pool's DaemonSet for its OS, any
 * other GPU node (no label, or a value naming no pool) against the
 * default's; all are the one driver operand. */
static void test_driver_pools(void **state)
{
    struct world w;
    world_init(&w);
    int d = op("driver");
    for (int i = 0; i < gpuop_operand_count(); i++)
        w.pol.operands[i].enabled = i == d;
    w.pol.operands[d].os_tag = true;
    snprintf(w.pol.driver_pools[0].name, sizeof(w.pol.driver_pools[0].name), "a100");
    w.pol.ndriver_pools = 1;
    set_os_all(add_node(&w, "a1", "driver=true", NULL), "ubuntu", "24.04", NULL, NULL, "a100");
    set_os_all(add_node(&w, "a2", "driver=true", NULL), "ubuntu", "24.04", NULL, NULL, "a100");
    set_os_all(add_node(&w, "a3", "driver=true", NULL), "ubuntu", "22.04", NULL, NULL, "a100");
    set_os(add_node(&w, "d1", "driver=true", NULL), "ubuntu", "24.04", NULL);
    set_os_all(add_node(&w, "d2", "driver=true", NULL), "ubuntu", "24.04", NULL, NULL, "retired");
    add_pool_ds(&w, "a100-ubuntu24.04", 2, 1);
    add_pool_ds(&w, "ubuntu24.04", 2, 1);
    add_pod(&w, "driver", "a1", "Running", true);
    add_pod(&w, "driver", "d1", "Running", true);
    analyze(&w);

    const struct gpuop_operand_result *r = &w.f.operands[d];
    assert_string_equal(r->daemonsets, "gpuop-driver-a100-ubuntu24.04,gpuop-driver-ubuntu24.04");
    assert_int_equal(r->desired, 4);
    assert_null(find(&w, "a1", "driver", GPUOP_KIND_MISSING));
    assert_null(find(&w, "d1", "driver", GPUOP_KIND_MISSING));
    const struct gpuop_finding *x = find(&w, "a2", "driver", GPUOP_KIND_MISSING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_POD_NOT_CREATED);
    assert_non_null(strstr(msg_of(&w, x), "DaemonSet gpuop-driver-a100-ubuntu24.04 has no pod"));
    x = find(&w, "a3", "driver", GPUOP_KIND_MISSING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_DAEMONSET_ABSENT);
    assert_non_null(strstr(msg_of(&w, x), "DaemonSet gpuop-driver-a100-ubuntu22.04 does not"));
    x = find(&w, "d2", "driver", GPUOP_KIND_MISSING); /* "retired" names no pool: the default */
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_POD_NOT_CREATED);
    assert_non_null(strstr(msg_of(&w, x), "DaemonSet gpuop-driver-ubuntu24.04 has no pod"));

    /* the pool gone from the policy: its nodes are the default's */
    w.pol.ndriver_pools = 0;
    analyze(&w);
    x = find(&w, "a2", "driver", GPUOP_KIND_MISSING);
    assert_non_null(x);
    assert_non_null(strstr(msg_of(&w, x), "DaemonSet gpuop-driver-ubuntu24.04 has no pod"));
    world_free(&w);
}

/* Two driver pools select node c1 (the labeller's annotation says so):
 * DriverPoolConflict on its driver, naming both, beside what it runs (its
 * kept label's pool); none on a node one pool selects, and none without
 * pools in the policy (the annotation alone is the labeller's past). */
static void test_driver_pool_conflict(void **state)
{
    struct world w;
    world_init(&w);
    int d = op("driver");
    for (int i = 0; i < gpuop_operand_count(); i++)
        w.pol.operands[i].enabled = i == d;
    w.pol.operands[d].os_tag = true;
    snprintf(w.pol.driver_pools[0].name, sizeof(w.pol.driver_pools[0].name), "a100");
    snprintf(w.pol.driver_pools[1].name, sizeof(w.pol.driver_pools[1].name), "h100");
    w.pol.ndriver_pools = 2;
    set_os_conflict(add_node(&w, "a1", "driver=true", NULL), "ubuntu", "24.04", NULL, NULL, "a100",
                    NULL);
    set_os_conflict(add_node(&w, "c1", "driver=true", NULL), "ubuntu", "24.04", NULL, NULL, "a100",
                    "a100,h100");
    add_pool_ds(&w, "a100-ubuntu24.04", 2, 2);
    add_pod(&w, "driver", "a1", "Running", true);
    add_pod(&w, "driver", "c1", "Running", true);
    analyze(&w);

    assert_null(find(&w, "a1", "driver", GPUOP_KIND_NOT_SCHEDULED));
    assert_null(find(&w, "c1", "driver", GPUOP_KIND_MISSING)); /* its driver kept */
    const struct gpuop_finding *x = find(&w, "c1", "driver", GPUOP_KIND_NOT_SCHEDULED);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_DRIVER_POOL_CONFLICT);
    assert_non_null(strstr(msg_of(&w, x), "Driver pools a100,h100 all select the node"));
    assert_int_equal(w.f.by_reason[GPUOP_REASON_DRIVER_POOL_CONFLICT], 1);
    assert_int_equal(w.f.complete_nodes, 1);

    w.pol.ndriver_pools = 0; /* no pools: no conflict, whatever the annotation */
    analyze(&w);
    assert_int_equal(w.f.by_reason[GPUOP_REASON_DRIVER_POOL_CONFLICT], 0);
    world_free(&w);
}

/* Precompiled drivers: a pool per OS and kernel, each node judged against
 * its kernel's DaemonSet; a node without the kernel label is
 * KernelLabelMissing (its OS labels are there). */
static void test_kernel_pools(void **state)
{
    struct world w;
    world_init(&w);
    int d = op("driver");
    for (int i = 0; i < gpuop_operand_count(); i++)
        w.pol.operands[i].enabled = i == d;
    w.pol.operands[d].os_tag = true;
    w.pol.driver.precompiled = true;
    set_os_kernel(add_node(&w, "k1", "driver=true", NULL), "ubuntu", "24.04", NULL, "6.8.0-1");
    set_os_kernel(add_node(&w, "k2", "driver=true", NULL), "ubuntu", "24.04", NULL, "6.8.0-2");
    set_os_kernel(add_node(&w, "k3", "driver=true", NULL), "ubuntu", "24.04", NULL, "6.8.0-3");
    set_os(add_node(&w, "nok", "driver=true", NULL), "ubuntu", "24.04", NULL);
    add_pool_ds(&w, "6.8.0-1-ubuntu24.04", 1, 1);
    add_pool_ds(&w, "6.8.0-2-ubuntu24.04", 1, 0);
    add_pod(&w, "driver", "k1", "Running", true);
    analyze(&w);

    const struct gpuop_operand_result *r = &w.f.operands[d];
    assert_string_equal(r->daemonsets,
                        "gpuop-driver-6.8.0-1-ubuntu24.04,gpuop-driver-6.8.0-2-ubuntu24.04");
    assert_null(find(&w, "k1", "driver", GPUOP_KIND_MISSING));
    const struct gpuop_finding *x = find(&w, "k2", "driver", GPUOP_KIND_MISSING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_POD_NOT_CREATED);
    assert_non_null(strstr(msg_of(&w, x), "DaemonSet gpuop-driver-6.8.0-2-ubuntu24.04 has no pod"));
    x = find(&w, "k3", "driver", GPUOP_KIND_MISSING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_DAEMONSET_ABSENT);
    assert_non_null(strstr(msg_of(&w, x), "gpuop-driver-6.8.0-3-ubuntu24.04 does not exist"));
    x = find(&w, "nok", "driver", GPUOP_KIND_MISSING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_KERNEL_LABEL_MISSING);
    assert_non_null(strstr(msg_of(&w, x), "lacks " GPUOP_LABEL_KERNEL ","));

    /* compiled again: the OS pool, whatever the kernel */
    w.pol.driver.precompiled = false;
    analyze(&w);
    x = find(&w, "nok", "driver", GPUOP_KIND_MISSING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_DAEMONSET_ABSENT);
    assert_non_null(strstr(msg_of(&w, x), "DaemonSet gpuop-driver-ubuntu24.04 does not exist"));
    world_free(&w);
}

/* A precompiled driver pool beside the compiled default (issue 38): the
 * pool's nodes judged against their kernel's DaemonSet, the pool's node
 * without the kernel label KernelLabelMissing; the default's node without
 * it judged against the OS pool's, its kernel ignored. */
static void test_pool_kernels(void **state)
{
    struct world w;
    world_init(&w);
    int d = op("driver");
    for (int i = 0; i < gpuop_operand_count(); i++)
        w.pol.operands[i].enabled = i == d;
    w.pol.operands[d].os_tag = true;
    snprintf(w.pol.driver_pools[0].name, sizeof(w.pol.driver_pools[0].name), "a100");
    w.pol.driver_pools[0].precompiled = true;
    w.pol.ndriver_pools = 1;
    set_os_all(add_node(&w, "a1", "driver=true", NULL), "ubuntu", "24.04", NULL, "6.8.0-1", "a100");
    set_os_all(add_node(&w, "a2", "driver=true", NULL), "ubuntu", "24.04", NULL, "6.8.0-2", "a100");
    set_os_all(add_node(&w, "anok", "driver=true", NULL), "ubuntu", "24.04", NULL, NULL, "a100");
    set_os_kernel(add_node(&w, "d1", "driver=true", NULL), "ubuntu", "24.04", NULL, "6.8.0-1");
    set_os(add_node(&w, "dnok", "driver=true", NULL), "ubuntu", "24.04", NULL);
    add_pool_ds(&w, "a100-6.8.0-1-ubuntu24.04", 1, 1);
    add_pool_ds(&w, "ubuntu24.04", 2, 2);
    add_pod(&w, "driver", "a1", "Running", true);
    add_pod(&w, "driver", "d1", "Running", true);
    add_pod(&w, "driver", "dnok", "Running", true);
    analyze(&w);

    assert_null(find(&w, "a1", "driver", GPUOP_KIND_MISSING));
    assert_null(find(&w, "d1", "driver", GPUOP_KIND_MISSING));
    assert_null(find(&w, "dnok", "driver", GPUOP_KIND_MISSING));
    const struct gpuop_finding *x = find(&w, "a2", "driver", GPUOP_KIND_MISSING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_DAEMONSET_ABSENT);
    assert_non_null(strstr(msg_of(&w, x), "gpuop-driver-a100-6.8.0-2-ubuntu24.04 does not exist"));
    x = find(&w, "anok", "driver", GPUOP_KIND_MISSING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_KERNEL_LABEL_MISSING);

    /* the pool compiled: its node without a kernel is judged on its OS pool */
    w.pol.driver_pools[0].precompiled = false;
    analyze(&w);
    x = find(&w, "anok", "driver", GPUOP_KIND_MISSING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_DAEMONSET_ABSENT);
    assert_non_null(strstr(msg_of(&w, x), "gpuop-driver-a100-ubuntu24.04 does not exist"));
    world_free(&w);
}

/* Taints as the DaemonSet controller sees them. */
static void test_taints(void **state)
{
    static const struct {
        const char *taint;
        const char *tol_key, *tol_op, *tol_value, *tol_effect; /* extra DS toleration */
        bool host_network;
        int reason;
        const char *detail;
    } cases[] = {
        /* gpuop's default toleration nvidia.com/gpu Exists NoSchedule */
        {"nvidia.com/gpu=present:NoSchedule", NULL, NULL, NULL, NULL, false,
         GPUOP_REASON_POD_NOT_CREATED, NULL},
        {"nvidia.com/gpu=present:NoExecute", NULL, NULL, NULL, NULL, false,
         GPUOP_REASON_TAINT_NOT_TOLERATED, "nvidia.com/gpu=present:NoExecute"},
        {"dedicated=ml:NoSchedule", NULL, NULL, NULL, NULL, false, GPUOP_REASON_TAINT_NOT_TOLERATED,
         "dedicated=ml:NoSchedule"},
        {"maintenance:NoExecute", NULL, NULL, NULL, NULL, false, GPUOP_REASON_TAINT_NOT_TOLERATED,
         "maintenance:NoExecute"},
        /* PreferNoSchedule never keeps a DaemonSet pod away */
        {"dedicated=ml:PreferNoSchedule", NULL, NULL, NULL, NULL, false,
         GPUOP_REASON_POD_NOT_CREATED, NULL},
        /* Equal compares values; empty effect matches all effects */
        {"dedicated=ml:NoExecute", "dedicated", "Equal", "ml", NULL, false,
         GPUOP_REASON_POD_NOT_CREATED, NULL},
        {"dedicated=ml:NoExecute", "dedicated", "Equal", "db", NULL, false,
         GPUOP_REASON_TAINT_NOT_TOLERATED, "dedicated=ml:NoExecute"},
        {"dedicated=ml:NoExecute", "dedicated", "Exists", NULL, "NoSchedule", false,
         GPUOP_REASON_TAINT_NOT_TOLERATED, "dedicated=ml:NoExecute"},
        {"dedicated=ml:NoExecute", "dedicated", "Exists", NULL, NULL, false,
         GPUOP_REASON_POD_NOT_CREATED, NULL},
        /* empty key + Exists tolerates everything */
        {"anything=at-all:NoExecute", "", "Exists", NULL, NULL, false, GPUOP_REASON_POD_NOT_CREATED,
         NULL},
        /* the DaemonSet controller's own tolerations */
        {"node.kubernetes.io/not-ready:NoExecute", NULL, NULL, NULL, NULL, false,
         GPUOP_REASON_POD_NOT_CREATED, NULL},
        {"node.kubernetes.io/not-ready:NoSchedule", NULL, NULL, NULL, NULL, false,
         GPUOP_REASON_TAINT_NOT_TOLERATED, "node.kubernetes.io/not-ready:NoSchedule"},
        {"node.kubernetes.io/unreachable:NoExecute", NULL, NULL, NULL, NULL, false,
         GPUOP_REASON_POD_NOT_CREATED, NULL},
        {"node.kubernetes.io/disk-pressure:NoSchedule", NULL, NULL, NULL, NULL, false,
         GPUOP_REASON_POD_NOT_CREATED, NULL},
        {"node.kubernetes.io/memory-pressure:NoSchedule", NULL, NULL, NULL, NULL, false,
         GPUOP_REASON_POD_NOT_CREATED, NULL},
        {"node.kubernetes.io/pid-pressure:NoSchedule", NULL, NULL, NULL, NULL, false,
         GPUOP_REASON_POD_NOT_CREATED, NULL},
        {"node.kubernetes.io/unschedulable:NoSchedule", NULL, NULL, NULL, NULL, false,
         GPUOP_REASON_POD_NOT_CREATED, NULL},
        {"node.kubernetes.io/disk-pressure:NoExecute", NULL, NULL, NULL, NULL, false,
         GPUOP_REASON_TAINT_NOT_TOLERATED, "node.kubernetes.io/disk-pressure:NoExecute"},
        /* network-unavailable only for hostNetwork pods */
        {"node.kubernetes.io/network-unavailable:NoSchedule", NULL, NULL, NULL, NULL, false,
         GPUOP_REASON_TAINT_NOT_TOLERATED, "node.kubernetes.io/network-unavailable:NoSchedule"},
        {"node.kubernetes.io/network-unavailable:NoSchedule", NULL, NULL, NULL, NULL, true,
         GPUOP_REASON_POD_NOT_CREATED, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct world w;
        world_init(&w);
        struct gpuop_ds *d = add_ds(&w, "driver");
        d->host_network = cases[i].host_network;
        if (cases[i].tol_key) {
            struct gpuop_toleration *t = &d->tolerations[d->ntolerations++];
            t->key = strdup(cases[i].tol_key);
            t->op = strdup(cases[i].tol_op);
            t->value = cases[i].tol_value ? strdup(cases[i].tol_value) : NULL;
            t->effect = cases[i].tol_effect ? strdup(cases[i].tol_effect) : NULL;
        }
        /* an untainted node next to it always gets PodNotCreated */
        add_node(&w, "plain", "driver=true", NULL);
        add_node(&w, "tainted", "driver=true", cases[i].taint);
        analyze(&w);
        const struct gpuop_finding *x = find(&w, "tainted", "driver", GPUOP_KIND_MISSING);
        assert_non_null(x);
        if (x->reason != cases[i].reason)
            fail_msg("case %zu (%s): reason %s", i, cases[i].taint,
                     gpuop_reason_get(x->reason)->name);
        if (cases[i].detail) {
            char got[256];
            gpuop_finding_detail(x, got, sizeof(got));
            assert_string_equal(got, cases[i].detail);
            char want[256];
            snprintf(want, sizeof(want), "Taint %s on the node is not tolerated", cases[i].detail);
            assert_non_null(strstr(msg_of(&w, x), want));
        }
        assert_int_equal(find(&w, "plain", "driver", GPUOP_KIND_MISSING)->reason,
                         GPUOP_REASON_POD_NOT_CREATED);
        world_free(&w);
    }
}

static void test_no_pod_yet(void **state)
{
    struct world w;
    world_init(&w);
    add_ds(&w, "driver")->created = T0 + 3600; /* 2026-11-29T22:06:40Z */
    add_node(&w, "old", "driver=true", NULL);
    add_node(&w, "new", "driver=true", NULL)->created = T0 + 7200;
    analyze(&w);
    const struct gpuop_finding *x = find(&w, "old", "driver", GPUOP_KIND_MISSING);
    assert_int_equal(x->reason, GPUOP_REASON_POD_NOT_CREATED);
    assert_int_equal(gpuop_finding_since(x), T0 + 3600);
    assert_non_null(strstr(msg_of(&w, x), "no pod on this node yet"));
    assert_non_null(strstr(msg_of(&w, x), "2026-11-29T22:06:40Z"));
    x = find(&w, "new", "driver", GPUOP_KIND_MISSING);
    assert_int_equal(gpuop_finding_since(x), T0 + 7200);
    assert_non_null(strstr(msg_of(&w, x), "2026-11-29T23:06:40Z"));
    world_free(&w);
}

static void test_pod_states(void **state)
{
    static const struct {
        const char *phase;
        bool ready, deleting, bound;
        const char *waiting;
        int restarts;
        int reason;
        const char *in_message;
    } cases[] = {
        {"Pending", false, false, true, "ImagePullBackOff", 0, GPUOP_REASON_IMAGE_PULL_FAILED,
         "is Pending: ImagePullBackOff - details, 0 restarts"},
        {"Pending", false, false, true, "ErrImagePull", 0, GPUOP_REASON_IMAGE_PULL_FAILED,
         "ErrImagePull"},
        {"Pending", false, false, true, "InvalidImageName", 0, GPUOP_REASON_IMAGE_PULL_FAILED,
         "InvalidImageName"},
        {"Running", false, false, true, "CrashLoopBackOff", 5, GPUOP_REASON_CRASH_LOOP,
         "is Running: CrashLoopBackOff - details, 5 restarts"},
        {"Pending", false, false, true, NULL, 0, GPUOP_REASON_POD_PENDING,
         "is Pending, 0 restarts"},
        {"Pending", false, false, true, "ContainerCreating", 0, GPUOP_REASON_POD_PENDING,
         "ContainerCreating"},
        {NULL, false, false, true, NULL, 0, GPUOP_REASON_POD_PENDING, "without phase"},
        {"Pending", false, false, false, "Unschedulable", 0, GPUOP_REASON_POD_UNSCHEDULABLE,
         "not bound to the node yet"},
        {"Pending", false, false, false, NULL, 0, GPUOP_REASON_POD_PENDING, "not bound"},
        {"Running", false, false, true, NULL, 1, GPUOP_REASON_POD_NOT_READY,
         "is Running, 1 restart."},
        {"Failed", false, false, true, NULL, 0, GPUOP_REASON_POD_FAILED, "is Failed"},
        {"Succeeded", false, false, true, NULL, 0, GPUOP_REASON_POD_FAILED, "is Succeeded"},
        {"Unknown", false, false, true, NULL, 0, GPUOP_REASON_POD_FAILED, "is Unknown"},
        /* a terminating pod that no longer serves (a Running and Ready one still runs:
           test_terminating_still_runs) */
        {"Running", false, true, true, NULL, 0, GPUOP_REASON_POD_TERMINATING,
         "is terminating since 2026-11-29T21:21:40Z, Running"},
        {"Failed", false, true, true, NULL, 0, GPUOP_REASON_POD_TERMINATING,
         "is terminating since 2026-11-29T21:21:40Z, Failed"},
        /* Running and Ready but not bound cannot happen; never counted as running */
        {"Running", true, false, false, NULL, 0, GPUOP_REASON_POD_PENDING, "not bound"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct world w;
        world_init(&w);
        add_ds(&w, "driver");
        add_node(&w, "n", "driver=true", NULL);
        struct gpuop_pod *p = add_pod(&w, "driver", "n", cases[i].phase, cases[i].ready);
        if (cases[i].deleting)
            terminating(p);
        p->bound = cases[i].bound;
        p->restarts = cases[i].restarts;
        if (cases[i].waiting) {
            set_waiting(p, cases[i].waiting, "details");
        }
        analyze(&w);
        const struct gpuop_finding *x = find(&w, "n", "driver", GPUOP_KIND_MISSING);
        assert_non_null(x);
        if (x->reason != cases[i].reason)
            fail_msg("case %zu: reason %s", i, gpuop_reason_get(x->reason)->name);
        if (!strstr(msg_of(&w, x), cases[i].in_message))
            fail_msg("case %zu: \"%s\" not in \"%s\"", i, cases[i].in_message, msg_of(&w, x));
        assert_non_null(strstr(msg_of(&w, x), p->name));
        assert_int_equal(gpuop_finding_since(x), p->created);
        assert_int_equal(w.f.operands[0].running_nodes, 0);
        world_free(&w);
    }
}

/* Several pods of one operand on one node: the most telling one counts. */
static void test_pod_choice(void **state)
{
    struct world w;
    world_init(&w);
    add_ds(&w, "driver");
    add_node(&w, "rolling", "driver=true", NULL);
    add_node(&w, "stuck", "driver=true", NULL);
    terminating(add_pod(&w, "driver", "rolling", "Running", true));
    add_pod(&w, "driver", "rolling", "Running", true);
    terminating(add_pod(&w, "driver", "stuck", "Running", false));
    struct gpuop_pod *fresh = add_pod(&w, "driver", "stuck", "Pending", false);
    set_waiting(fresh, "ErrImagePull", "");
    struct gpuop_pod *older = add_pod(&w, "driver", "stuck", "Pending", false);
    older->created -= 100;
    analyze(&w);
    assert_null(find(&w, "rolling", "driver", GPUOP_KIND_MISSING));
    assert_int_equal(node_res(&w, "rolling")->cell[op("driver")], GPUOP_CELL_RUNNING);
    const struct gpuop_finding *x = find(&w, "stuck", "driver", GPUOP_KIND_MISSING);
    assert_int_equal(x->reason, GPUOP_REASON_IMAGE_PULL_FAILED); /* alive and newest */
    assert_non_null(strstr(msg_of(&w, x), fresh->name));
    world_free(&w);
}

/* Issue 13 section 0: a pod being deleted that still reports Running and
 * Ready still runs (SPEC 5): Unexpected where its label went, it satisfies
 * its dependents' prerequisites, it counts in runningNodes, and the
 * finding says it is terminating. */
static void test_terminating_still_runs(void **state)
{
    struct world w;
    world_init(&w);
    add_all_ds(&w);
    /* the driver label went while a finalizer holds the driver pod */
    add_node(&w, "held", "present=true", NULL);
    terminating(add_pod(&w, "driver", "held", "Running", true));
    /* the toolkit label went; the toolkit pod is terminating, still runs */
    add_node(&w, "tk", "present=true driver=true device-plugin=true", NULL);
    run_pods(&w, "tk", "driver device-plugin");
    terminating(add_pod(&w, "container-toolkit", "tk", "Running", true));
    analyze(&w);

    const struct gpuop_finding *x = find(&w, "held", "driver", GPUOP_KIND_UNEXPECTED);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_LABEL_NOT_TRUE);
    assert_non_null(strstr(msg_of(&w, x), "terminating since 2026-11-29T21:21:40Z"));
    assert_null(find(&w, "held", "driver", GPUOP_KIND_NOT_SCHEDULED));
    assert_int_equal(node_res(&w, "held")->cell[op("driver")], GPUOP_CELL_UNEXPECTED);
    assert_int_equal(w.f.operands[op("driver")].running_nodes, 2);

    assert_null(find(&w, "tk", "device-plugin", GPUOP_KIND_ORDERING));
    assert_int_equal(w.f.by_reason[GPUOP_REASON_DEVICE_PLUGIN_WITHOUT_TOOLKIT], 0);
    x = find(&w, "tk", "container-toolkit", GPUOP_KIND_UNEXPECTED);
    assert_non_null(x);
    assert_non_null(strstr(msg_of(&w, x), "terminating"));
    assert_int_equal(w.f.operands[op("container-toolkit")].running_nodes, 1);
    assert_int_equal(w.f.violations, 0);

    /* a device plugin on its way out still runs, and still breaks the order */
    add_node(&w, "dp", "present=true driver=true device-plugin=true", NULL);
    run_pods(&w, "dp", "driver");
    terminating(add_pod(&w, "device-plugin", "dp", "Running", true));
    analyze(&w);
    x = find(&w, "dp", "device-plugin", GPUOP_KIND_ORDERING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_DEVICE_PLUGIN_WITHOUT_TOOLKIT);
    assert_non_null(strstr(msg_of(&w, x), "the node advertises 8 nvidia.com/gpu, so GPU pods"));
    assert_non_null(strstr(msg_of(&w, x), "fail to get a GPU. It is terminating since "
                                          "2026-11-29T21:21:40Z and still serves"));
    char d[64];
    assert_int_equal(gpuop_finding_detail(x, d, sizeof(d)), 0); /* no detail of its own */
    world_free(&w);
}

/* A pod terminating longer than the policy's grace is a finding of its own,
 * whether its label is still true or went; the grace ending is the next
 * change the caller must reconcile at. */
static void test_stuck_terminating(void **state)
{
    struct world w;
    world_init(&w);
    add_all_ds(&w);
    add_node(&w, "labelled", "present=true driver=true", NULL);
    add_node(&w, "unlabelled", "present=true", NULL);
    add_node(&w, "fresh", "present=true driver=true", NULL);
    struct gpuop_pod *a = add_pod(&w, "driver", "labelled", "Running", true);
    struct gpuop_pod *b = add_pod(&w, "driver", "unlabelled", "Running", true);
    a->deleted = b->deleted = T0 + 600;                           /* 400 s ago, grace 300 s */
    terminating(add_pod(&w, "driver", "fresh", "Running", true)); /* 100 s ago */
    analyze(&w);
    for (int i = 0; i < 2; i++) {
        const char *node = i ? "unlabelled" : "labelled";
        const struct gpuop_finding *x = find(&w, node, "driver", GPUOP_KIND_UNEXPECTED);
        assert_non_null(x);
        assert_int_equal(x->reason, GPUOP_REASON_POD_STUCK_TERMINATING);
        assert_int_equal(gpuop_finding_since(x), T0 + 600);
        const char *m = msg_of(&w, x);
        assert_non_null(strstr(m, "was deleted at 2026-11-29T21:16:40Z, more than 300 s ago"));
        assert_non_null(strstr(m, "finalizers"));
        assert_null(find(&w, node, "driver", GPUOP_KIND_NOT_SCHEDULED));
        assert_null(find(&w, node, "driver", GPUOP_KIND_MISSING));
    }
    assert_null(find(&w, "fresh", "driver", GPUOP_KIND_UNEXPECTED));
    assert_int_equal(node_res(&w, "fresh")->cell[op("driver")], GPUOP_CELL_RUNNING);
    assert_int_equal(w.f.next_change, DELETED_AT + 300 + 1);
    assert_int_equal(w.f.operands[op("driver")].running_nodes, 3);

    /* a longer grace in the policy: not stuck yet */
    w.pol.terminating_grace_s = 500;
    analyze(&w);
    assert_int_equal(w.f.by_reason[GPUOP_REASON_POD_STUCK_TERMINATING], 0);
    assert_int_equal(find(&w, "unlabelled", "driver", GPUOP_KIND_UNEXPECTED)->reason,
                     GPUOP_REASON_LABEL_NOT_TRUE);
    assert_int_equal(w.f.next_change, T0 + 600 + 500 + 1);
    world_free(&w);
}

/* Issue 42: what the DRA driver's ResourceSlices (the caches' fold in
 * gpuop_node.dra) say of a node. Both the device plugin's nvidia.com/gpu
 * and a slice with devices: advertised twice (Unexpected); slices while
 * the driver neither runs nor is host-provided: SlicesWithoutDriver, an
 * ordering violation whether or not the kubelet plugin still runs; the
 * plugin Ready past the advertise grace with no device: NoSlicesPublished
 * (Missing). Nothing of it while the slices are not watched. */
/* The findings of node's dra-driver cell. */
static int dra_findings(const struct world *w, const char *node)
{
    const struct gpuop_node_result *r = node_res(w, node);
    int n = 0;
    for (uint32_t k = 0; r && k < r->nfindings; k++)
        n += w->f.items[r->first + k].operand == op("dra-driver");
    return n;
}

/* Issue 42's over-admission on w's node "twice" (8 GPUs both ways): the
 * GPUs its pods hold through nvidia.com/gpu requests (the controller's
 * LIST, the stranded entry) and claims (the claim pods entry) against its
 * GPUs, the pods named only when they hold more. */
static void test_dra_overadmit(struct world *w)
{
    const struct gpuop_finding *x = find(w, "twice", "dra-driver", GPUOP_KIND_UNEXPECTED);
    struct gpuop_stranded st[] = {
        {.node = "twice", .count = 6, .nnames = 2, .names = {"ml/a", "ml/b"}, .gpus = 6},
    };
    struct gpuop_stranded cp[] = {
        {.node = "twice", .count = 2, .nnames = 2, .names = {"ml/b", "ml/c"}, .gpus = 2},
    };
    gpuop_findings_set_stranded(&w->f, st, 1);
    gpuop_findings_set_claim_pods(&w->f, cp, 1);
    assert_int_equal(w->f.stranded_pods, 0); /* no violation: not stranded */
    struct gpuop_overadmit o;
    assert_false(gpuop_findings_overadmit(&w->f, node_res(w, "twice"), x, &o)); /* 8 of 8 */
    assert_int_equal(o.by_requests + o.by_claims, 8);
    assert_null(strstr(msg_of(w, x), "cannot all have one"));

    cp[0].gpus = 3; /* one more device claimed: 9 of 8 */
    assert_true(gpuop_findings_overadmit(&w->f, node_res(w, "twice"), x, &o));
    assert_int_equal(o.gpus, 8);
    assert_int_equal(o.pods.count, 7); /* ml/b holds both ways: once, 4 more unnamed */
    assert_non_null(strstr(msg_of(w, x), "the pods bound here hold 9 GPUs (6 through "
                                         "nvidia.com/gpu requests, 3 through claims' devices) "
                                         "of the node's 8, so these 7 cannot all have one: "
                                         "ml/a, ml/b, ml/c and 4 more."));
    /* GFD's count, when it labels one, is the node's GPUs */
    cp[0].gpus = 1;
    w->nodes[0]->gpu_count = 6;
    analyze(w);
    gpuop_findings_set_stranded(&w->f, st, 1);
    gpuop_findings_set_claim_pods(&w->f, cp, 1);
    x = find(w, "twice", "dra-driver", GPUOP_KIND_UNEXPECTED);
    assert_non_null(strstr(msg_of(w, x), "hold 7 GPUs (6 through nvidia.com/gpu requests, 1 "
                                         "through claims' devices) of the node's 6"));
    /* a count saturated (31 or more): the slices' devices instead */
    w->nodes[0]->gpu_count = GPUOP_SHARING_COUNT_MAX;
    cp[0].gpus = 3;
    analyze(w);
    gpuop_findings_set_stranded(&w->f, st, 1);
    gpuop_findings_set_claim_pods(&w->f, cp, 1);
    x = find(w, "twice", "dra-driver", GPUOP_KIND_UNEXPECTED);
    assert_non_null(strstr(msg_of(w, x), "hold 9 GPUs (6 through nvidia.com/gpu requests, 3 "
                                         "through claims' devices) of the node's 8"));
    w->nodes[0]->gpu_count = 0;
    analyze(w);
}

static void test_dra_slices(void **state)
{
    (void)state;
    struct world w;
    world_init(&w);
    add_all_ds(&w);
    const char *chain = "present=true driver=true container-toolkit=true device-plugin=true "
                        "dra-driver=true";
    const struct gpuop_node_dra eight = {8, 1, 1, 0};
    /* the device plugin's 8 GPUs and an 8-device slice */
    struct gpuop_node *n = add_node(&w, "twice", chain, NULL);
    n->gpus = (struct gpuop_gpu_counts){8, 8, 0, 0};
    n->dra = eight;
    run_pods(&w, "twice", "driver container-toolkit device-plugin dra-driver");
    /* the same unwatched: nothing known of slices */
    n = add_node(&w, "unwatched", chain, NULL);
    n->gpus = (struct gpuop_gpu_counts){8, 8, 0, 0};
    run_pods(&w, "unwatched", "driver container-toolkit device-plugin dra-driver");
    /* DRA only */
    n = add_node(&w, "draonly",
                 "present=true driver=true container-toolkit=true device-plugin=false "
                 "dra-driver=true",
                 NULL);
    n->dra = eight;
    run_pods(&w, "draonly", "driver container-toolkit dra-driver");
    /* the driver's label removed: the plugin still runs, or is gone */
    n = add_node(&w, "nodriver", "present=true container-toolkit=true dra-driver=true", NULL);
    n->dra = (struct gpuop_node_dra){16, 2, 1, 0};
    run_pods(&w, "nodriver", "dra-driver");
    n = add_node(&w, "nodriver2", "present=true container-toolkit=true dra-driver=true", NULL);
    n->dra = eight;
    /* a host-provided driver: no concern */
    n = add_node(&w, "hostdriver",
                 "present=true driver=pre-installed container-toolkit=true dra-driver=true", NULL);
    n->dra = eight;
    run_pods(&w, "hostdriver", "container-toolkit dra-driver");
    /* the plugin Ready 1000 s, and 50 s, with no device */
    n = add_node(&w, "empty", "present=true driver=true dra-driver=true", NULL);
    n->dra = (struct gpuop_node_dra){0, 1, 1, 0}; /* a shared-counters slice only */
    run_pods(&w, "empty", "driver");
    add_pod(&w, "dra-driver", "empty", "Running", true);
    n = add_node(&w, "young", "present=true driver=true dra-driver=true", NULL);
    n->dra = (struct gpuop_node_dra){0, 0, 1, 0};
    run_pods(&w, "young", "driver");
    add_pod(&w, "dra-driver", "young", "Running", true)->ready_since = T0 + 950;
    n = add_node(&w, "emptyunwatched", "present=true driver=true dra-driver=true", NULL);
    run_pods(&w, "emptyunwatched", "driver dra-driver");
    analyze(&w);

    const struct gpuop_finding *x = find(&w, "twice", "dra-driver", GPUOP_KIND_UNEXPECTED);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_GPUS_ADVERTISED_TWICE);
    assert_non_null(strstr(msg_of(&w, x),
                           "advertised twice: 8 nvidia.com/gpu (allocatable) by the device "
                           "plugin, and 8 device(s) in 1 ResourceSlice(s) of driver "
                           "gpu.nvidia.com by the DRA driver"));
    assert_non_null(strstr(msg_of(&w, x), "may admit more GPU pods than the node has GPUs"));
    assert_int_equal(node_res(&w, "twice")->cell[op("dra-driver")], GPUOP_CELL_RUNNING);
    assert_int_equal(dra_findings(&w, "twice"), 1);
    assert_int_equal(dra_findings(&w, "unwatched"), 0);
    assert_int_equal(dra_findings(&w, "draonly"), 0);
    assert_int_equal(dra_findings(&w, "hostdriver"), 0);
    assert_int_equal(w.f.by_reason[GPUOP_REASON_GPUS_ADVERTISED_TWICE], 1);
    assert_null(strstr(msg_of(&w, x), "cannot all have one")); /* no pod gathered */
    test_dra_overadmit(&w);

    x = find(&w, "nodriver", "dra-driver", GPUOP_KIND_ORDERING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_SLICES_WITHOUT_DRIVER);
    assert_int_equal(x->prereq, op("driver"));
    assert_non_null(strstr(msg_of(&w, x), "16 device(s) in 2 ResourceSlice(s) of driver "
                                          "gpu.nvidia.com name the node, but driver neither "
                                          "runs nor is host-provided: claims allocated here "
                                          "will fail to prepare"));
    assert_int_equal(node_res(&w, "nodriver")->cell[op("dra-driver")], GPUOP_CELL_VIOLATION);
    x = find(&w, "nodriver2", "dra-driver", GPUOP_KIND_ORDERING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_SLICES_WITHOUT_DRIVER);
    assert_non_null(strstr(msg_of(&w, x), "8 device(s) in 1 ResourceSlice(s)"));

    x = find(&w, "empty", "dra-driver", GPUOP_KIND_MISSING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_NO_SLICES_PUBLISHED);
    assert_non_null(strstr(msg_of(&w, x), "Pod gpuop-dra-driver-empty-"));
    assert_non_null(strstr(msg_of(&w, x), "is Running and Ready since 2026-11-29T21:10:00Z, but no "
                                          "ResourceSlice of driver gpu.nvidia.com advertises a "
                                          "device"));
    assert_int_equal(node_res(&w, "empty")->cell[op("dra-driver")], GPUOP_CELL_MISSING);
    assert_null(find(&w, "young", "dra-driver", GPUOP_KIND_MISSING));
    assert_null(find(&w, "emptyunwatched", "dra-driver", GPUOP_KIND_MISSING));
    assert_int_equal(w.f.next_change, T0 + 950 + GPUOP_ADVERTISE_GRACE_DEFAULT + 1);

    /* the slice goes: the twice finding with it */
    w.nodes[0]->dra = (struct gpuop_node_dra){0, 0, 1, 0};
    w.nodes[0]->gpus = (struct gpuop_gpu_counts){8, 8, 0, 0};
    analyze(&w);
    assert_null(find(&w, "twice", "dra-driver", GPUOP_KIND_UNEXPECTED));
    world_free(&w);
}

/* Issue 42: a claim holding a GPU allocated on a node where no DRA plugin
 * runs Ready, or where none published a slice: ClaimWithoutPlugin, its
 * pods named from what the controller gathers. */
static void test_dra_claim_without_plugin(void **state)
{
    (void)state;
    struct world w;
    world_init(&w);
    add_all_ds(&w);
    const char *chain = "present=true driver=true container-toolkit=true dra-driver=true";
    /* the plugin's pod gone, its slice still there (the kubelet's 30 s) */
    struct gpuop_node *n = add_node(&w, "noplugin", chain, NULL);
    n->dra = (struct gpuop_node_dra){8, 1, 1, 2};
    run_pods(&w, "noplugin", "driver container-toolkit");
    /* the plugin Ready, never registered: no slice */
    n = add_node(&w, "noslice", chain, NULL);
    n->dra = (struct gpuop_node_dra){0, 0, 1, 1};
    run_pods(&w, "noslice", "driver container-toolkit dra-driver");
    /* the plugin Ready and its slice: no concern */
    n = add_node(&w, "fine", chain, NULL);
    n->dra = (struct gpuop_node_dra){8, 1, 1, 3};
    run_pods(&w, "fine", "driver container-toolkit dra-driver");
    /* a host-provided plugin with its slice: none either */
    n = add_node(&w, "hostplugin",
                 "present=true driver=true container-toolkit=true dra-driver=false", NULL);
    n->dra = (struct gpuop_node_dra){8, 1, 1, 1};
    run_pods(&w, "hostplugin", "driver container-toolkit");
    analyze(&w);

    const struct gpuop_finding *x = find(&w, "noplugin", "dra-driver", GPUOP_KIND_ORDERING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_CLAIM_WITHOUT_PLUGIN);
    assert_int_equal(node_res(&w, "noplugin")->cell[op("dra-driver")], GPUOP_CELL_VIOLATION);
    assert_non_null(strstr(msg_of(&w, x), "no DRA kubelet plugin runs Ready here or it has not "
                                          "registered (1 ResourceSlice(s) of it name the node)"));
    assert_null(strstr(msg_of(&w, x), "Pods reserving them")); /* none gathered yet */
    x = find(&w, "noslice", "dra-driver", GPUOP_KIND_ORDERING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_CLAIM_WITHOUT_PLUGIN);
    assert_int_equal(dra_findings(&w, "fine"), 0);
    assert_int_equal(dra_findings(&w, "hostplugin"), 0);
    assert_int_equal(w.f.by_reason[GPUOP_REASON_CLAIM_WITHOUT_PLUGIN], 2);

    /* the controller's names (claimpods.c), shown like stranded pods */
    struct gpuop_stranded cp[] = {
        {.node = "noplugin", .count = 12, .nnames = 2, .names = {"ml/a", "ml/b"}},
    };
    gpuop_findings_set_claim_pods(&w.f, cp, 1);
    x = find(&w, "noplugin", "dra-driver", GPUOP_KIND_ORDERING);
    assert_non_null(strstr(msg_of(&w, x), "Pods reserving them (12): ml/a, ml/b and 10 more."));
    x = find(&w, "noslice", "dra-driver", GPUOP_KIND_ORDERING);
    assert_null(strstr(msg_of(&w, x), "Pods reserving them"));

    /* its pods gone (their claims released): gone too */
    w.nodes[0]->dra.claims = 0;
    analyze(&w);
    assert_null(find(&w, "noplugin", "dra-driver", GPUOP_KIND_ORDERING));
    world_free(&w);
}

/* Issue 15 section 1: what the scheduler sees. GPUs advertised while the
 * toolkit is unsatisfied are an OrderingViolation whether or not a device
 * plugin pod is still there; a device plugin Ready past the advertise grace
 * on a node advertising nothing is Missing-like. */
static void test_scheduler_view(void **state)
{
    struct world w;
    world_init(&w);
    add_all_ds(&w);
    /* the device plugin went; its GPUs did not, the toolkit never ran */
    add_node(&w, "stale", "present=true driver=true device-plugin=true", NULL)->gpus =
        (struct gpuop_gpu_counts){8, 8, 0, 0};
    run_pods(&w, "stale", "driver");
    /* the same with the toolkit host-provided, or running: no harm */
    add_node(&w, "hosttk", "present=true driver=true container-toolkit=false", NULL)->gpus =
        (struct gpuop_gpu_counts){8, 8, 0, 0};
    run_pods(&w, "hosttk", "driver");
    add_node(&w, "tkruns", "present=true driver=true container-toolkit=true", NULL)->gpus =
        (struct gpuop_gpu_counts){8, 8, 0, 0};
    run_pods(&w, "tkruns", "driver container-toolkit");
    /* only MIG slices advertised */
    add_node(&w, "mig", "present=true driver=true", NULL)->gpus =
        (struct gpuop_gpu_counts){0, 0, 14, 7};
    run_pods(&w, "mig", "driver");
    /* a device plugin Ready for 800 s, nothing advertised; one Ready for 50 s */
    add_node(&w, "empty", "present=true driver=true container-toolkit=true device-plugin=true",
             NULL);
    add_node(&w, "young", "present=true driver=true container-toolkit=true device-plugin=true",
             NULL);
    run_pods(&w, "empty", "driver container-toolkit");
    run_pods(&w, "young", "driver container-toolkit");
    add_pod(&w, "device-plugin", "empty", "Running", true);
    add_pod(&w, "device-plugin", "young", "Running", true)->ready_since = T0 + 950;
    w.nodes[4]->gpus = w.nodes[5]->gpus = (struct gpuop_gpu_counts){0, 0, 0, 0};
    /* a non-GPU node with GPUs is no concern of the chain */
    add_node(&w, "cpu", NULL, NULL)->gpus = (struct gpuop_gpu_counts){2, 2, 0, 0};
    analyze(&w);

    const struct gpuop_finding *x = find(&w, "stale", "device-plugin", GPUOP_KIND_ORDERING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_GPUS_ADVERTISED_WITHOUT_TOOLKIT);
    assert_int_equal(x->prereq, op("container-toolkit"));
    assert_non_null(strstr(msg_of(&w, x), "advertises 8 nvidia.com/gpu (allocatable) but "
                                          "container-toolkit neither runs nor is host-provided"));
    assert_non_null(strstr(msg_of(&w, x), "cordon"));
    assert_int_equal(node_res(&w, "stale")->cell[op("device-plugin")], GPUOP_CELL_VIOLATION);
    assert_non_null(find(&w, "stale", "device-plugin", GPUOP_KIND_MISSING)); /* and no pod */
    assert_int_equal(node_res(&w, "stale")->gpus.allocatable, 8);
    assert_null(find(&w, "hosttk", "device-plugin", GPUOP_KIND_ORDERING));
    assert_null(find(&w, "tkruns", "device-plugin", GPUOP_KIND_ORDERING));
    x = find(&w, "mig", "device-plugin", GPUOP_KIND_ORDERING);
    assert_non_null(x);
    assert_non_null(strstr(msg_of(&w, x), "advertises 0 nvidia.com/gpu and MIG devices"));
    assert_int_equal(w.f.violations, 2); /* stale, mig */
    assert_int_equal(w.f.by_reason[GPUOP_REASON_GPUS_ADVERTISED_WITHOUT_TOOLKIT], 2);

    x = find(&w, "empty", "device-plugin", GPUOP_KIND_MISSING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_DEVICE_PLUGIN_ADVERTISES_NOTHING);
    assert_non_null(strstr(msg_of(&w, x), "Running and Ready since 2026-11-29T21:10:00Z, but the "
                                          "node advertises no nvidia.com/gpu"));
    assert_int_equal(node_res(&w, "empty")->cell[op("device-plugin")], GPUOP_CELL_MISSING);
    assert_null(find(&w, "young", "device-plugin", GPUOP_KIND_MISSING));
    assert_int_equal(node_res(&w, "young")->cell[op("device-plugin")], GPUOP_CELL_RUNNING);
    assert_int_equal(w.f.next_change, T0 + 950 + 120 + 1);
    assert_int_equal(w.f.advertised_gpus, 8 * 3); /* GPU nodes only */
    assert_null(node_res(&w, "cpu"));

    /* the plugin's GPUs appear: the finding goes */
    w.nodes[4]->gpus = (struct gpuop_gpu_counts){4, 4, 0, 0};
    analyze(&w);
    assert_null(find(&w, "empty", "device-plugin", GPUOP_KIND_MISSING));
    world_free(&w);
}

/* Issue 15 section 3: with ordering: enforce, an operand labelled true whose
 * prerequisite's label is neither true nor false is Held (its own kind, not
 * a violation), naming the prerequisite and its label; disabled
 * prerequisites add no term; with report it is the usual Missing. */
static void test_held(void **state)
{
    struct world w;
    world_init(&w);
    w.pol.ordering = GPUOP_ORDERING_ENFORCE;
    add_all_ds(&w);
    add_node(&w, "seed", "present=true driver=true device-plugin=true", NULL);
    add_node(&w, "paused", "present=true driver=true container-toolkit=paused device-plugin=true",
             NULL);
    add_node(&w, "deep", "present=true container-toolkit=true device-plugin=true", NULL);
    add_node(&w, "hosted", "present=true driver=false container-toolkit=false device-plugin=true",
             NULL);
    add_node(&w, "preinstalled",
             "present=true driver=pre-installed container-toolkit=pre-installed "
             "device-plugin=true",
             NULL);
    run_pods(&w, "seed", "driver");
    run_pods(&w, "paused", "driver");
    analyze(&w);

    const struct gpuop_finding *x = find(&w, "seed", "device-plugin", GPUOP_KIND_HELD);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_HELD_BY_PREREQUISITE);
    assert_int_equal(x->prereq, op("container-toolkit"));
    const char *m = msg_of(&w, x);
    assert_non_null(strstr(m, "requires label nvidia.com/gpu.deploy.container-toolkit to be "
                              "\"true\", \"false\" or \"pre-installed\", and it is absent."));
    assert_non_null(strstr(m, "Label the node nvidia.com/gpu.deploy.container-toolkit=true"));
    assert_null(find(&w, "seed", "device-plugin", GPUOP_KIND_MISSING));
    assert_int_equal(node_res(&w, "seed")->cell[op("device-plugin")], GPUOP_CELL_HELD);
    assert_non_null(find(&w, "seed", "container-toolkit", GPUOP_KIND_NOT_SCHEDULED));
    assert_non_null(strstr(msg_of(&w, find(&w, "paused", "device-plugin", GPUOP_KIND_HELD)),
                           "and it is \"paused\"."));
    /* the nearest prerequisite that blocks, past one that is labelled */
    for (int i = 0; i < 2; i++) {
        x = find(&w, "deep", i ? "device-plugin" : "container-toolkit", GPUOP_KIND_HELD);
        assert_non_null(x);
        assert_int_equal(x->prereq, op("driver"));
    }
    /* host-provided prerequisites satisfy the affinity: the pod is just not there yet */
    assert_int_equal(find(&w, "hosted", "device-plugin", GPUOP_KIND_MISSING)->reason,
                     GPUOP_REASON_POD_NOT_CREATED);
    assert_null(find(&w, "hosted", "device-plugin", GPUOP_KIND_HELD));
    assert_int_equal(find(&w, "preinstalled", "device-plugin", GPUOP_KIND_MISSING)->reason,
                     GPUOP_REASON_POD_NOT_CREATED);
    assert_null(find(&w, "preinstalled", "device-plugin", GPUOP_KIND_HELD));
    assert_null(find(&w, "preinstalled", "driver", GPUOP_KIND_NOT_SCHEDULED));
    assert_null(find(&w, "preinstalled", "container-toolkit", GPUOP_KIND_NOT_SCHEDULED));
    assert_int_equal(w.f.violations, 0); /* the order is kept: not a violation */
    assert_int_equal(w.f.by_kind[GPUOP_KIND_HELD], 4);
    assert_string_equal(gpuop_kind_name(GPUOP_KIND_HELD), "Held");

    /* a disabled prerequisite adds no term */
    w.pol.operands[op("driver")].enabled = false;
    analyze(&w);
    assert_null(find(&w, "deep", "container-toolkit", GPUOP_KIND_HELD));
    assert_int_equal(find(&w, "deep", "container-toolkit", GPUOP_KIND_MISSING)->reason,
                     GPUOP_REASON_POD_NOT_CREATED);
    /* with report, nothing is held */
    w.pol.operands[op("driver")].enabled = true;
    w.pol.ordering = GPUOP_ORDERING_REPORT;
    analyze(&w);
    assert_int_equal(w.f.by_kind[GPUOP_KIND_HELD], 0);
    assert_int_equal(find(&w, "seed", "device-plugin", GPUOP_KIND_MISSING)->reason,
                     GPUOP_REASON_POD_NOT_CREATED);
    world_free(&w);
}

static void test_ordering(void **state)
{
    static const struct {
        const char *labels; /* besides present=true */
        bool driver_disabled;
        const char *running;
        const char *op;     /* operand with the ordering finding (NULL: none at all) */
        const char *prereq; /* expected unsatisfied prerequisite */
        int reason;
        const char *in_message;
        bool dcgm; /* spec.dcgm.enabled */
    } cases[] = {
        /* the silent GPU-less scheduling case */
        {"driver=true container-toolkit=true device-plugin=true", false, "driver device-plugin",
         "device-plugin", "container-toolkit", GPUOP_REASON_DEVICE_PLUGIN_WITHOUT_TOOLKIT,
         "GPU pods will be scheduled here and fail to get a GPU", false},
        /* toolkit label removed entirely: still the same reason */
        {"driver=true device-plugin=true", false, "driver device-plugin", "device-plugin",
         "container-toolkit", GPUOP_REASON_DEVICE_PLUGIN_WITHOUT_TOOLKIT, "container-toolkit",
         false},
        /* a running toolkit does not excuse a missing driver */
        {"driver=true container-toolkit=true device-plugin=true", false,
         "container-toolkit device-plugin", "device-plugin", "driver",
         GPUOP_REASON_PREREQUISITE_NOT_RUNNING,
         "prerequisite driver neither runs nor is host-provided here (chain: device-plugin -> "
         "container-toolkit -> driver)",
         false},
        /* a host-provided toolkit is walked past too */
        {"driver=true container-toolkit=false device-plugin=true", false, "device-plugin",
         "device-plugin", "driver", GPUOP_REASON_PREREQUISITE_NOT_RUNNING, "driver", false},
        /* host-provided driver (policy) and toolkit (label): no violation */
        {"container-toolkit=false device-plugin=true", true, "device-plugin", NULL, NULL, 0, NULL,
         false},
        /* everything below the validator host-provided by labels */
        {"driver=false container-toolkit=false device-plugin=false gpu-feature-discovery=false "
         "operator-validator=true",
         false, "operator-validator", NULL, NULL, 0, NULL, false},
        /* gfd without device-plugin, toolkit also missing: the nearest is reported */
        {"driver=true container-toolkit=true device-plugin=true gpu-feature-discovery=true", false,
         "driver gpu-feature-discovery", "gpu-feature-discovery", "device-plugin",
         GPUOP_REASON_PREREQUISITE_NOT_RUNNING, "prerequisite device-plugin", false},
        /* dcgm-exporter hangs off the toolkit (dcgm off: its embedded host engine) */
        {"driver=true container-toolkit=true dcgm-exporter=true", false, "driver dcgm-exporter",
         "dcgm-exporter", "container-toolkit", GPUOP_REASON_PREREQUISITE_NOT_RUNNING,
         "prerequisite container-toolkit", false},
        /* dcgm on: the exporter reads the host engine of its node, which is not there */
        {"driver=true container-toolkit=true dcgm=true dcgm-exporter=true", false,
         "driver container-toolkit dcgm-exporter", "dcgm-exporter", "dcgm",
         GPUOP_REASON_PREREQUISITE_NOT_RUNNING,
         "dcgm-exporter runs but its prerequisite dcgm neither runs nor is host-provided here",
         true},
        /* ... nor labelled for it: the same */
        {"driver=true container-toolkit=true dcgm-exporter=true", false,
         "driver container-toolkit dcgm-exporter", "dcgm-exporter", "dcgm",
         GPUOP_REASON_PREREQUISITE_NOT_RUNNING, "prerequisite dcgm", true},
        /* a host engine the node provides (dcgm=false) satisfies it */
        {"driver=true container-toolkit=true dcgm=false dcgm-exporter=true", false,
         "driver container-toolkit dcgm-exporter", NULL, NULL, 0, NULL, true},
        /* the host engine runs, the toolkit does not: the walk goes on past dcgm */
        {"driver=true container-toolkit=true dcgm=true dcgm-exporter=true", false,
         "driver dcgm dcgm-exporter", "dcgm-exporter", "container-toolkit",
         GPUOP_REASON_PREREQUISITE_NOT_RUNNING,
         "(chain: dcgm-exporter -> dcgm -> container-toolkit)", true},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct world w;
        char labels[256];
        world_init(&w);
        w.pol.operands[op("driver")].enabled = !cases[i].driver_disabled;
        w.pol.operands[op("dcgm")].enabled = cases[i].dcgm;
        add_all_ds(&w);
        snprintf(labels, sizeof(labels), "present=true %s", cases[i].labels);
        add_node(&w, "n", labels, NULL);
        add_node(&w, "clean", "present=true driver=true", NULL);
        run_pods(&w, "n", cases[i].running);
        run_pods(&w, "clean", "driver");
        analyze(&w);
        size_t nord = w.f.by_kind[GPUOP_KIND_ORDERING];
        if (!cases[i].op) {
            if (nord)
                fail_msg("case %zu: unexpected ordering finding", i);
            assert_int_equal(w.f.violations, 0);
            world_free(&w);
            continue;
        }
        const struct gpuop_finding *x = find(&w, "n", cases[i].op, GPUOP_KIND_ORDERING);
        if (!x)
            fail_msg("case %zu: no ordering finding on %s", i, cases[i].op);
        assert_int_equal(x->prereq, op(cases[i].prereq));
        assert_int_equal(x->reason, cases[i].reason);
        if (!strstr(msg_of(&w, x), cases[i].in_message))
            fail_msg("case %zu: \"%s\" not in \"%s\"", i, cases[i].in_message, msg_of(&w, x));
        assert_int_equal(node_res(&w, "n")->cell[op(cases[i].op)], GPUOP_CELL_VIOLATION);
        assert_int_equal(w.f.violations, 1); /* nodes, not findings */
        world_free(&w);
    }
}

static void test_ordering_counts_nodes(void **state)
{
    struct world w;
    world_init(&w);
    add_all_ds(&w);
    /* a's config is not MPS: the MPS daemon is not for it */
    add_node(&w, "a", ALL_TRUE, NULL)->deploy[op("mps-control-daemon")] = GPUOP_LABEL_NOT_HERE;
    add_node(&w, "b", ALL_TRUE, NULL);
    /* on a: device-plugin, gfd and validator run without toolkit and driver */
    run_pods(&w, "a", "device-plugin gpu-feature-discovery operator-validator");
    run_pods(&w, "b", ALL_OPS);
    analyze(&w);
    assert_int_equal(w.f.by_kind[GPUOP_KIND_ORDERING], 3);
    assert_int_equal(w.f.by_reason[GPUOP_REASON_DEVICE_PLUGIN_WITHOUT_TOOLKIT], 1);
    /* gfd: device-plugin runs, so the walk goes on to the toolkit */
    assert_int_equal(find(&w, "a", "gpu-feature-discovery", GPUOP_KIND_ORDERING)->prereq,
                     op("container-toolkit"));
    assert_int_equal(find(&w, "a", "gpu-feature-discovery", GPUOP_KIND_ORDERING)->reason,
                     GPUOP_REASON_PREREQUISITE_NOT_RUNNING);
    assert_int_equal(w.f.violations, 1);
    assert_int_equal(w.f.complete_nodes, 1);
    /* driver, toolkit, dcgm, dcgm-exporter, mig-manager, dra-driver */
    assert_int_equal(w.f.by_kind[GPUOP_KIND_MISSING], 6);
    world_free(&w);
}

static void test_unexpected(void **state)
{
    struct world w;
    world_init(&w);
    w.pol.operands[op("dcgm-exporter")].enabled = false;
    add_all_ds(&w);
    add_node(&w, "unlabelled", "present=true driver=true", NULL); /* toolkit label went */
    add_node(&w, "falsed", "present=true driver=true container-toolkit=false", NULL);
    add_node(&w, "disabled", "present=true driver=true container-toolkit=true", NULL);
    add_node(&w, "cpu", NULL, NULL);
    run_pods(&w, "unlabelled", "driver container-toolkit");
    run_pods(&w, "falsed", "driver container-toolkit");
    run_pods(&w, "disabled", "driver container-toolkit dcgm-exporter");
    run_pods(&w, "cpu", "driver");
    analyze(&w);

    const struct gpuop_finding *x =
        find(&w, "unlabelled", "container-toolkit", GPUOP_KIND_UNEXPECTED);
    assert_int_equal(x->reason, GPUOP_REASON_LABEL_NOT_TRUE);
    assert_non_null(strstr(msg_of(&w, x), "is not \"true\""));
    /* a running pod is not "nothing happens here" */
    assert_null(find(&w, "unlabelled", "container-toolkit", GPUOP_KIND_NOT_SCHEDULED));
    x = find(&w, "falsed", "container-toolkit", GPUOP_KIND_UNEXPECTED);
    assert_int_equal(x->reason, GPUOP_REASON_LABEL_NOT_TRUE);
    assert_non_null(strstr(msg_of(&w, x), "is \"false\""));
    x = find(&w, "disabled", "dcgm-exporter", GPUOP_KIND_UNEXPECTED);
    assert_int_equal(x->reason, GPUOP_REASON_OPERAND_DISABLED);
    assert_non_null(strstr(msg_of(&w, x), "spec.dcgmExporter.enabled=false"));
    x = find(&w, "cpu", "driver", GPUOP_KIND_UNEXPECTED);
    assert_int_equal(x->reason, GPUOP_REASON_NOT_GPU_NODE);
    assert_false(node_res(&w, "cpu")->gpu);
    assert_int_equal(node_res(&w, "cpu")->host_provided, 0);
    /* the CPU node is listed (it has a finding) but counts in no GPU total */
    assert_int_equal(w.f.gpu_nodes, 3);
    assert_int_equal(w.f.finding_nodes, 4);
    assert_int_equal(w.f.operands[op("driver")].running_nodes, 4);
    assert_int_equal(w.f.operands[op("driver")].expected_nodes, 3);
    world_free(&w);
}

/* A node removed takes its findings (and its pods) with it. */
static void test_node_removal(void **state)
{
    struct world w;
    world_init(&w);
    for (int o = 1; o < gpuop_operand_count(); o++)
        w.pol.operands[o].enabled = false;
    add_ds(&w, "driver");
    add_node(&w, "a", "driver=true", NULL);
    add_node(&w, "b", "driver=true", NULL);
    add_node(&w, "c", "driver=true", NULL);
    struct gpuop_pod *pa = add_pod(&w, "driver", "a", "Pending", false);
    set_waiting(pa, "ImagePullBackOff", "");
    run_pods(&w, "c", "driver");
    analyze(&w);
    assert_int_equal(w.f.nitems, 2); /* a: ImagePullFailed, b: PodNotCreated */
    char d0[256];
    gpuop_finding_detail(&w.f.items[0], d0, sizeof(d0));
    assert_non_null(strstr(d0, "is Pending: ImagePullBackOff"));
    assert_int_equal(w.f.nnodes, 3);

    /* node b removed (pods and node gone); a's pod now crash-loops; c loses its pod */
    hand_node_free(w.nodes[1]);
    w.nodes[1] = NULL; /* NULL entries are skipped */
    set_waiting(pa, "CrashLoopBackOff", "");
    hand_pod_free(w.pods[1]);
    w.pods[1] = NULL;
    analyze(&w);
    assert_null(node_res(&w, "b"));
    assert_int_equal(w.f.gpu_nodes, 2);
    assert_int_equal(w.f.nitems, 2);
    assert_string_equal(gpuop_finding_node(&w.f, &w.f.items[0]), "a");
    assert_int_equal(w.f.items[0].reason, GPUOP_REASON_CRASH_LOOP);
    assert_string_equal(gpuop_finding_node(&w.f, &w.f.items[1]), "c");
    assert_int_equal(w.f.items[1].reason, GPUOP_REASON_POD_NOT_CREATED);

    /* pods on nodes that are not in the input are ignored */
    w.nn = 0;
    analyze(&w);
    assert_int_equal(w.f.nitems, 0);
    assert_int_equal(w.f.nnodes, 0);
    assert_int_equal(w.f.gpu_nodes, 0);
    w.nn = 3;
    world_free(&w);
}

static void test_robust_inputs(void **state)
{
    struct gpuop_findings f;
    /* nothing at all */
    assert_int_equal(gpuop_analyze(&(struct gpuop_analysis_in){0}, &f), 0);
    assert_int_equal(f.nnodes, 0);
    assert_int_equal(f.noperands, gpuop_operand_count());
    assert_true(f.operands[0].enabled); /* no policy: every operand enabled */
    gpuop_findings_free(&f);

    /* odd pods: unknown operand, out-of-range operand, unbound without node,
     * nameless pod and node, DaemonSet with an unknown name */
    struct world w;
    world_init(&w);
    add_ds(&w, "driver")->operand = -1; /* found again by name */
    add_node(&w, "n", "driver=true", NULL);
    struct gpuop_node *nameless = add_node(&w, "x", "driver=true", NULL);
    free(nameless->name);
    nameless->name = NULL;
    add_pod(&w, "driver", "n", "Running", true)->operand = -1;
    add_pod(&w, "driver", "n", "Running", true)->operand = 99;
    struct gpuop_pod *p = add_pod(&w, "driver", "n", "Running", true);
    free(p->node);
    p->node = NULL;
    p = add_pod(&w, "driver", "n", "Pending", false);
    free(p->name);
    p->name = NULL;
    analyze(&w);
    assert_int_equal(w.f.nnodes, 1);
    const struct gpuop_finding *x = find(&w, "n", "driver", GPUOP_KIND_MISSING);
    assert_int_equal(x->reason, GPUOP_REASON_POD_PENDING);
    assert_true(w.f.operands[0].ds_present);
    char small[16];
    int len = gpuop_finding_message(&w.f, x, small, sizeof(small));
    assert_true(len > 15);
    assert_int_equal(strlen(small), 15); /* truncated, terminated */
    world_free(&w);
}

/* Duplicated node names and many nodes: deterministic order. */
static void test_sorting(void **state)
{
    struct world w;
    world_init(&w);
    add_all_ds(&w);
    const char *names[] = {"node-10", "node-2", "node-1", "alpha", "Zulu"};
    for (size_t i = 0; i < 5; i++)
        add_node(&w, names[i], "present=true", NULL);
    analyze(&w);
    assert_int_equal(w.f.nnodes, 5);
    assert_string_equal(w.f.nodes[0].name, "Zulu");
    assert_string_equal(w.f.nodes[1].name, "alpha");
    assert_string_equal(w.f.nodes[2].name, "node-1");
    assert_string_equal(w.f.nodes[3].name, "node-10");
    assert_string_equal(w.f.nodes[4].name, "node-2");
    assert_int_equal(w.f.nitems, 5 * (size_t)gpuop_operand_count());
    for (int o = 0; o < gpuop_operand_count(); o++)
        assert_int_equal(w.f.items[o].operand, o);
    world_free(&w);
}

/* The GPU Operator's driver manager pauses operands with
 * "paused-for-driver-upgrade" while it upgrades the driver: with an
 * upgrade in progress that is LabelPaused; with none (the node's
 * upgrade-state label absent, done or failed) it is left over, and the
 * message says what to run. */
static void test_paused_left_over(void **state)
{
    static const struct {
        int upgrade;
        int reason;
        const char *in_message;
    } cases[] = {
        {GPUOP_UPGRADE_ABSENT, GPUOP_REASON_LABEL_PAUSED_LEFT_OVER, "upgrade-state is absent"},
        {GPUOP_UPGRADE_DONE, GPUOP_REASON_LABEL_PAUSED_LEFT_OVER, "is \"upgrade-done\""},
        {GPUOP_UPGRADE_FAILED, GPUOP_REASON_LABEL_PAUSED_LEFT_OVER, "is \"upgrade-failed\""},
        {GPUOP_UPGRADE_ACTIVE, GPUOP_REASON_LABEL_PAUSED, "is paused here"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct world w;
        world_init(&w);
        add_all_ds(&w);
        add_node(&w, "gpu-7", "present=true driver=true device-plugin=paused-for-driver-upgrade",
                 NULL)
            ->upgrade = (uint8_t)cases[i].upgrade;
        run_pods(&w, "gpu-7", "driver");
        analyze(&w);
        const struct gpuop_finding *x =
            find(&w, "gpu-7", "device-plugin", GPUOP_KIND_NOT_SCHEDULED);
        assert_non_null(x);
        assert_int_equal(x->reason, cases[i].reason);
        const char *msg = msg_of(&w, x);
        if (!strstr(msg, cases[i].in_message))
            fail_msg("case %zu: \"%s\" not in \"%s\"", i, cases[i].in_message, msg);
        if (cases[i].reason == GPUOP_REASON_LABEL_PAUSED_LEFT_OVER &&
            !strstr(msg, "kubectl label node gpu-7 nvidia.com/gpu.deploy.device-plugin=true "
                         "--overwrite"))
            fail_msg("the left-over pause does not say what to run: %s", msg);
        /* a pause of another name is still the plain one */
        world_free(&w);
    }
    struct world w;
    world_init(&w);
    add_all_ds(&w);
    add_node(&w, "n", "present=true driver=true device-plugin=paused", NULL);
    run_pods(&w, "n", "driver");
    analyze(&w);
    assert_int_equal(find(&w, "n", "device-plugin", GPUOP_KIND_NOT_SCHEDULED)->reason,
                     GPUOP_REASON_LABEL_PAUSED);
    world_free(&w);
}

/* gpuop's own driver upgrade pauses a node's dependents while the driver
 * reloads (its state dated by gpuop's since annotation): LabelPaused is
 * then a rollout step, the node progresses (no Event while it does, at
 * 1,000 nodes that was about two Events a node), until the state is older
 * than the progress deadline; a pause nobody dated (the GPU Operator's,
 * a person's) says nothing of progress. */
static void test_paused_by_upgrade_progresses(void **state)
{
    (void)state;
    struct world w;
    world_init(&w);
    w.pol.event_grace_s = 60;
    add_all_ds(&w);
    const char *labels = "present=true driver=true device-plugin=paused-for-driver-upgrade";
    struct gpuop_node *n = add_node(&w, "a", labels, NULL);
    n->upgrade = GPUOP_UPGRADE_ACTIVE;
    n->up.since = (uint32_t)(T0 + 990); /* pod-restart-required 10 s ago */
    n = add_node(&w, "b", labels, NULL);
    n->upgrade = GPUOP_UPGRADE_ACTIVE;
    n->up.since = (uint32_t)(T0 + 1000 - GPUOP_PROGRESS_DEADLINE_S - 1);
    add_node(&w, "c", labels, NULL)->upgrade = GPUOP_UPGRADE_ACTIVE; /* not gpuop's */
    /* the driver Ready long ago: no other reason to progress */
    for (const char *const *nd = (const char *const[]){"a", "b", "c", NULL}; *nd; nd++) {
        add_pod(&w, "driver", *nd, "Running", true)->ready_since = (uint32_t)T0;
    }
    analyze(&w);
    for (const char *const *nd = (const char *const[]){"a", "b", "c", NULL}; *nd; nd++)
        assert_int_equal(find(&w, *nd, "device-plugin", GPUOP_KIND_NOT_SCHEDULED)->reason,
                         GPUOP_REASON_LABEL_PAUSED);
    assert_true(node_res(&w, "a")->progressing);
    assert_false(node_res(&w, "b")->progressing);
    assert_false(node_res(&w, "c")->progressing);
    /* a stops progressing at the deadline: the analysis says when */
    assert_true(w.f.next_change > 0 && w.f.next_change <= T0 + 990 + GPUOP_PROGRESS_DEADLINE_S + 1);
    world_free(&w);
}

/* A pod held in its init container, a gate of the GPU Operator's, waits
 * for a prerequisite's validation file: WaitingForGate, naming the gate,
 * the file and since when; not PodPending. A gate that crash-loops or
 * cannot pull is that failure. */
static void test_waiting_for_gate(void **state)
{
    struct world w;
    world_init(&w);
    add_all_ds(&w);
    add_node(&w, "n", ALL_TRUE, NULL);
    add_pod(&w, "driver", "n", "Running", false); /* building its module */
    struct gpuop_pod *tk = add_pod(&w, "container-toolkit", "n", "Pending", false);
    tk->gate = GPUOP_GATE_DRIVER;
    tk->gate_since = (uint32_t)(T0 + 240);
    set_waiting(tk, "PodInitializing", "");
    struct gpuop_pod *dp = add_pod(&w, "device-plugin", "n", "Pending", false);
    dp->gate = GPUOP_GATE_TOOLKIT;
    dp->gate_since = (uint32_t)(T0 + 250);
    struct gpuop_pod *cl = add_pod(&w, "gpu-feature-discovery", "n", "Pending", false);
    cl->gate = GPUOP_GATE_TOOLKIT; /* ran, failed, waits to run again: not a gate any more */
    set_waiting(cl, "CrashLoopBackOff", "back-off 40s");
    cl->restarts = 3;
    struct gpuop_pod *ip = add_pod(&w, "dcgm-exporter", "n", "Pending", false);
    set_waiting(ip, "ImagePullBackOff", ""); /* its gate's image cannot be pulled */
    analyze(&w);
    const struct gpuop_finding *x = find(&w, "n", "container-toolkit", GPUOP_KIND_MISSING);
    assert_int_equal(x->reason, GPUOP_REASON_WAITING_FOR_GATE);
    const char *msg = msg_of(&w, x);
    if (!strstr(msg, "is held in init container driver-validation since 2026-11-29T21:10:40Z: "
                     "waiting for driver-ready (under /run/nvidia/validations), which appears "
                     "once the driver works on this node."))
        fail_msg("gate message: %s", msg);
    assert_int_equal(gpuop_finding_since(x), T0 + 240);
    x = find(&w, "n", "device-plugin", GPUOP_KIND_MISSING);
    assert_int_equal(x->reason, GPUOP_REASON_WAITING_FOR_GATE);
    assert_non_null(strstr(msg_of(&w, x), "init container toolkit-validation"));
    assert_non_null(strstr(msg_of(&w, x), "toolkit-ready"));
    assert_int_equal(find(&w, "n", "gpu-feature-discovery", GPUOP_KIND_MISSING)->reason,
                     GPUOP_REASON_CRASH_LOOP);
    assert_int_equal(find(&w, "n", "dcgm-exporter", GPUOP_KIND_MISSING)->reason,
                     GPUOP_REASON_IMAGE_PULL_FAILED);
    assert_int_equal(w.f.by_reason[GPUOP_REASON_POD_PENDING], 0); /* gated: not PodPending */
    world_free(&w);

    /* a gated pod is never running, whatever else it says (the gate's
     * time shares the Ready time's bytes) */
    world_init(&w);
    add_all_ds(&w);
    add_node(&w, "n", ALL_TRUE, NULL);
    run_pods(&w, "n", "driver");
    struct gpuop_pod *odd = add_pod(&w, "container-toolkit", "n", "Running", false);
    odd->gate = GPUOP_GATE_DRIVER;
    odd->gate_since = (uint32_t)(T0 + 300);
    assert_false(gpuop_pod_running(odd));
    analyze(&w);
    assert_int_equal(find(&w, "n", "container-toolkit", GPUOP_KIND_MISSING)->reason,
                     GPUOP_REASON_WAITING_FOR_GATE);
    world_free(&w);
}

/* Progress per node (analysis.h): a step and no failure, or a pod Ready
 * less than the event grace ago; idle_s says how long ago one last became
 * Ready when it does not progress. The analysis runs at T0 + 1000. */
static void test_progress(void **state)
{
    struct world w;
    world_init(&w);
    w.pol.event_grace_s = 60;
    add_all_ds(&w);
    /* a: the driver builds (Running, not Ready), the rest wait in gates or
     * are not created yet: a rollout under way */
    add_node(&w, "a", "present=true driver=true container-toolkit=true device-plugin=true", NULL);
    add_pod(&w, "driver", "a", "Running", false);
    add_pod(&w, "container-toolkit", "a", "Pending", false)->gate = GPUOP_GATE_DRIVER;
    /* b: the same, but the driver crash-loops: a failure, idle 0 */
    add_node(&w, "b", "present=true driver=true container-toolkit=true", NULL);
    struct gpuop_pod *p = add_pod(&w, "driver", "b", "Running", false);
    set_waiting(p, "CrashLoopBackOff", "");
    p->restarts = 4;
    add_pod(&w, "container-toolkit", "b", "Pending", false)->gate = GPUOP_GATE_DRIVER;
    /* c: a container that cannot be created is no start */
    add_node(&w, "c", "present=true driver=true", NULL);
    set_waiting(add_pod(&w, "driver", "c", "Pending", false), "CreateContainerConfigError", "");
    /* d: the device plugin runs without the toolkit (unlabelled), Ready
     * long ago: nothing moves; e: the same, Ready 10 s ago: what follows
     * it is on its way */
    add_node(&w, "d", "present=true driver=true device-plugin=true", NULL);
    run_pods(&w, "d", "driver device-plugin");
    add_node(&w, "e", "present=true driver=true device-plugin=true", NULL);
    run_pods(&w, "e", "driver");
    add_pod(&w, "device-plugin", "e", "Running", true)->ready_since = (uint32_t)(T0 + 990);
    /* f: the toolkit's gate still shut 100 s after the driver became Ready:
     * stuck, and the device plugin waiting behind it with it */
    add_node(&w, "f", "present=true driver=true container-toolkit=true device-plugin=true", NULL);
    add_pod(&w, "device-plugin", "f", "Pending", false)->gate = GPUOP_GATE_TOOLKIT;
    add_pod(&w, "driver", "f", "Running", true)->ready_since = (uint32_t)(T0 + 900);
    p = add_pod(&w, "container-toolkit", "f", "Pending", false);
    p->gate = GPUOP_GATE_DRIVER;
    p->gate_since = (uint32_t)(T0 + 850);
    /* g: a pod Pending for longer than the progress deadline */
    add_node(&w, "g", "present=true driver=true", NULL);
    add_pod(&w, "driver", "g", "Pending", false)->created =
        (uint32_t)(T0 + 1000 - GPUOP_PROGRESS_DEADLINE_S - 1);
    /* h: complete (nothing to judge) */
    add_node(&w, "h", "present=true driver=true", NULL);
    run_pods(&w, "h", "driver");
    analyze(&w);
    assert_true(node_res(&w, "a")->progressing);
    assert_false(node_res(&w, "b")->progressing);
    assert_int_equal(node_res(&w, "b")->idle_s, 0);
    assert_false(node_res(&w, "c")->progressing);
    assert_false(node_res(&w, "d")->progressing);
    assert_int_equal(node_res(&w, "d")->idle_s, 255); /* Ready 800 s ago, saturated */
    assert_true(node_res(&w, "e")->progressing);
    assert_false(node_res(&w, "f")->progressing);
    assert_int_equal(node_res(&w, "f")->idle_s, 100);
    assert_false(node_res(&w, "g")->progressing);
    assert_false(node_res(&w, "h")->progressing);
    assert_int_equal(w.f.progressing_nodes, 2);
    /* e stops progressing when its grace ends: the analysis says when */
    assert_true(w.f.next_change > 0 && w.f.next_change <= T0 + 990 + 60 + 1);
    world_free(&w);
}

/* SPEC 4a: a deploy label gpuop set (its annotation) and someone changed
 * is LabelChanged, naming the old and the new value, in place of the
 * label's NotScheduled reason; a paused one is an upgrade's (LabelPaused);
 * a node gpuop never labelled says what it always said. */
static void test_label_changed(void **state)
{
    struct world w;
    world_init(&w);
    add_all_ds(&w);
    struct gpuop_node *n = add_node(&w, "ours",
                                    "present=true container-toolkit=false "
                                    "device-plugin=paused-for-driver-upgrade "
                                    "gpu-feature-discovery=maybe dcgm-exporter=true",
                                    NULL);
    n->label_note = GPUOP_NOTE_OK;
    n->labelled = (uint16_t)((1u << op("driver")) | (1u << op("container-toolkit")) |
                             (1u << op("device-plugin")) | (1u << op("gpu-feature-discovery")) |
                             (1u << op("dcgm-exporter")));
    add_node(&w, "theirs", "present=true container-toolkit=false", NULL);
    run_pods(&w, "ours", "dcgm-exporter");
    analyze(&w);

    const struct gpuop_finding *x = find(&w, "ours", "driver", GPUOP_KIND_NOT_SCHEDULED);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_LABEL_CHANGED);
    assert_non_null(strstr(msg_of(&w, x), "nvidia.com/gpu.deploy.driver was set to \"true\" by "
                                          "gpuop (node labelling) and is now absent"));
    assert_non_null(strstr(msg_of(&w, x), "kubectl annotate node ours gpuop.dev/node-labels-"));
    x = find(&w, "ours", "container-toolkit", GPUOP_KIND_NOT_SCHEDULED);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_LABEL_CHANGED);
    assert_non_null(strstr(msg_of(&w, x), "is now \"false\""));
    x = find(&w, "ours", "gpu-feature-discovery", GPUOP_KIND_NOT_SCHEDULED);
    assert_int_equal(x->reason, GPUOP_REASON_LABEL_CHANGED);
    assert_non_null(strstr(msg_of(&w, x), "is now \"maybe\""));
    /* a pause, not a change; with no driver upgrade in progress, a left-over one */
    assert_int_equal(find(&w, "ours", "device-plugin", GPUOP_KIND_NOT_SCHEDULED)->reason,
                     GPUOP_REASON_LABEL_PAUSED_LEFT_OVER);
    assert_null(find(&w, "ours", "dcgm-exporter", GPUOP_KIND_NOT_SCHEDULED)); /* still true */
    /* validator: gpuop never set it there (enabled later): plain LabelAbsent */
    assert_int_equal(find(&w, "ours", "operator-validator", GPUOP_KIND_NOT_SCHEDULED)->reason,
                     GPUOP_REASON_LABEL_ABSENT);
    /* a person's node: "false" is host-provided, absent is LabelAbsent */
    assert_null(find(&w, "theirs", "container-toolkit", GPUOP_KIND_NOT_SCHEDULED));
    assert_int_equal(find(&w, "theirs", "driver", GPUOP_KIND_NOT_SCHEDULED)->reason,
                     GPUOP_REASON_LABEL_ABSENT);
    assert_int_equal(w.f.by_reason[GPUOP_REASON_LABEL_CHANGED], 3);
    /* an unreadable annotation: gpuop does not know what it set, says nothing of it */
    n->label_note = GPUOP_NOTE_BAD;
    analyze(&w);
    assert_int_equal(w.f.by_reason[GPUOP_REASON_LABEL_CHANGED], 0);
    world_free(&w);
}

/* Issue 42: the DRA kubelet plugin older than the node's driver pod (a
 * driver reload it did not follow): DraPluginStale, an ordering finding on
 * the plugin's cell naming its pod and since when it is Ready, once the
 * driver pod has been Ready past DRA_STALE_GRACE_S (30 s); not before, not
 * for a plugin Ready since the driver pod was created (restarted after it,
 * or created before it and waiting for it in its init container, as on a
 * fresh node),
 * not without a running driver pod, and whether or not the node's slices
 * are watched. */
static void test_dra_plugin_stale(void **state)
{
    (void)state;
    struct world w;
    world_init(&w);
    add_all_ds(&w);
    const char *labels = "present=true driver=true dra-driver=true";
    struct gpuop_pod *pl;
    /* the plugin from T0+200; the driver pod replaced at T0+500, Ready since */
    add_node(&w, "stale", labels, NULL);
    struct gpuop_pod *d = add_pod(&w, "driver", "stale", "Running", true);
    d->created = d->ready_since = T0 + 500;
    add_pod(&w, "dra-driver", "stale", "Running", true);
    /* the same, its slices watched (one with devices): the same finding */
    struct gpuop_node *n = add_node(&w, "stalewatched", labels, NULL);
    n->dra = (struct gpuop_node_dra){8, 1, 1, 0};
    d = add_pod(&w, "driver", "stalewatched", "Running", true);
    d->created = d->ready_since = T0 + 500;
    add_pod(&w, "dra-driver", "stalewatched", "Running", true);
    /* the driver pod Ready 20 s only: within the grace */
    add_node(&w, "young", labels, NULL);
    d = add_pod(&w, "driver", "young", "Running", true);
    d->created = d->ready_since = T0 + 980;
    add_pod(&w, "dra-driver", "young", "Running", true);
    /* the plugin restarted after the driver pod */
    add_node(&w, "restarted", labels, NULL);
    d = add_pod(&w, "driver", "restarted", "Running", true);
    d->created = d->ready_since = T0 + 500;
    pl = add_pod(&w, "dra-driver", "restarted", "Running", true);
    pl->created = pl->ready_since = T0 + 600;
    /* a fresh node: the plugin's pod created before the driver's, Ready once
     * the driver pod runs (its driver-validation init container waited for
     * the driver; a little before the driver pod's own Ready, its probe
     * lagging): not stale */
    add_node(&w, "fresh", labels, NULL);
    d = add_pod(&w, "driver", "fresh", "Running", true);
    d->created = T0 + 300;
    d->ready_since = T0 + 500;
    pl = add_pod(&w, "dra-driver", "fresh", "Running", true);
    pl->created = T0 + 100;
    pl->ready_since = T0 + 495;
    /* the plugin's container restarted in place after the driver pod became
     * Ready (its pod older than the driver's): not stale */
    add_node(&w, "inplace", labels, NULL);
    d = add_pod(&w, "driver", "inplace", "Running", true);
    d->created = d->ready_since = T0 + 500;
    pl = add_pod(&w, "dra-driver", "inplace", "Running", true);
    pl->created = T0 + 100;
    pl->ready_since = T0 + 700;
    /* the new driver pod not Ready yet: nothing to be stale against */
    add_node(&w, "notready", labels, NULL);
    add_pod(&w, "driver", "notready", "Running", false)->created = T0 + 500;
    add_pod(&w, "dra-driver", "notready", "Running", true);
    analyze(&w);

    const struct gpuop_finding *x = find(&w, "stale", "dra-driver", GPUOP_KIND_ORDERING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_DRA_PLUGIN_STALE);
    assert_int_equal(x->prereq, op("driver"));
    assert_non_null(strstr(msg_of(&w, x), "DRA kubelet plugin pod gpuop-dra-driver-stale-"));
    assert_non_null(strstr(msg_of(&w, x), "Ready since 2026-11-29T21:10:00Z, before the node's "
                                          "driver pod running now was created"));
    /* it still runs: the cell says so */
    assert_int_equal(node_res(&w, "stale")->cell[op("dra-driver")], GPUOP_CELL_RUNNING);
    x = find(&w, "stalewatched", "dra-driver", GPUOP_KIND_ORDERING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_DRA_PLUGIN_STALE);
    assert_null(find(&w, "young", "dra-driver", GPUOP_KIND_ORDERING));
    assert_null(find(&w, "restarted", "dra-driver", GPUOP_KIND_ORDERING));
    assert_null(find(&w, "fresh", "dra-driver", GPUOP_KIND_ORDERING));
    assert_null(find(&w, "inplace", "dra-driver", GPUOP_KIND_ORDERING));
    /* the plugin runs before its driver is Ready: that ordering finding, not this one */
    x = find(&w, "notready", "dra-driver", GPUOP_KIND_ORDERING);
    assert_non_null(x);
    assert_int_equal(x->reason, GPUOP_REASON_PREREQUISITE_NOT_RUNNING);
    assert_int_equal(w.f.by_reason[GPUOP_REASON_DRA_PLUGIN_STALE], 2);
    /* the young one is judged again once its grace has passed */
    assert_int_equal(w.f.next_change, T0 + 980 + 30 + 1);

    /* past the grace: the young node's plugin is stale too */
    for (size_t i = 0; i < w.np; i++)
        if (!strcmp(w.pods[i]->node, "young") && w.pods[i]->operand == op("driver"))
            w.pods[i]->created = w.pods[i]->ready_since = T0 + 960;
    analyze(&w);
    assert_non_null(find(&w, "young", "dra-driver", GPUOP_KIND_ORDERING));
    assert_int_equal(w.f.by_reason[GPUOP_REASON_DRA_PLUGIN_STALE], 3);
    world_free(&w);
}

static void test_every_reason_covered(void **state)
{
    for (int r = 0; r < GPUOP_REASON_COUNT; r++)
        if (!seen[r])
            fail_msg("reason %s is produced by no test", gpuop_reason_get(r)->name);
}

/* docs/findings.md documents every reason of the table, under its own heading. */
static void test_docs_cover_every_reason(void **state)
{
    char path[512], *doc = malloc(1 << 20);
    snprintf(path, sizeof(path), "%s/docs/findings.md", SRCDIR);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    size_t n = fread(doc, 1, (1 << 20) - 1, fp);
    doc[n] = '\0';
    fclose(fp);
    for (int r = 0; r < GPUOP_REASON_COUNT; r++) {
        char head[128];
        snprintf(head, sizeof(head), "\n### %s\n", gpuop_reason_get(r)->name);
        if (!strstr(doc, head))
            fail_msg("docs/findings.md lacks a section for %s", gpuop_reason_get(r)->name);
    }
    for (int k = 0; k < GPUOP_KIND_COUNT; k++) {
        char head[128];
        snprintf(head, sizeof(head), "\n## %s\n", gpuop_kind_name(k));
        assert_non_null(strstr(doc, head));
    }
    free(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_clean),
        cmocka_unit_test(test_dra_slices),
        cmocka_unit_test(test_dra_claim_without_plugin),
        cmocka_unit_test(test_seed_not_scheduled),
        cmocka_unit_test(test_label_values),
        cmocka_unit_test(test_host_provided),
        cmocka_unit_test(test_mps_daemon),
        cmocka_unit_test(test_sharing_config_key_missing),
        cmocka_unit_test(test_sharing_cm_read),
        cmocka_unit_test(test_sharing_conf_read),
        cmocka_unit_test(test_shared_renamed),
        cmocka_unit_test(test_shared_allocatable),
        cmocka_unit_test(test_sharing_not_applied),
        cmocka_unit_test(test_operands_false),
        cmocka_unit_test(test_daemonset_absent),
        cmocka_unit_test(test_os_pools),
        cmocka_unit_test(test_kernel_pools),
        cmocka_unit_test(test_pool_kernels),
        cmocka_unit_test(test_driver_pools),
        cmocka_unit_test(test_driver_pool_conflict),
        cmocka_unit_test(test_taints),
        cmocka_unit_test(test_no_pod_yet),
        cmocka_unit_test(test_pod_states),
        cmocka_unit_test(test_pod_choice),
        cmocka_unit_test(test_terminating_still_runs),
        cmocka_unit_test(test_stuck_terminating),
        cmocka_unit_test(test_scheduler_view),
        cmocka_unit_test(test_held),
        cmocka_unit_test(test_ordering),
        cmocka_unit_test(test_ordering_counts_nodes),
        cmocka_unit_test(test_unexpected),
        cmocka_unit_test(test_node_removal),
        cmocka_unit_test(test_robust_inputs),
        cmocka_unit_test(test_sorting),
        cmocka_unit_test(test_paused_left_over),
        cmocka_unit_test(test_paused_by_upgrade_progresses),
        cmocka_unit_test(test_waiting_for_gate),
        cmocka_unit_test(test_progress),
        cmocka_unit_test(test_label_changed),
        cmocka_unit_test(test_dra_plugin_stale),
        cmocka_unit_test(test_every_reason_covered),
        cmocka_unit_test(test_docs_cover_every_reason),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
