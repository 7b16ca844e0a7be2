/*
 * test_labeling.c - node labelling (SPEC 4a) as a pure decision: which
 * labels gpuop writes on which node (gpuop_labeling_plan), and which of
 * those it set someone changed (gpuop_labeling_changed), from Node JSON as
 * the API server sends it (so gpuop's annotation is read by the model the
 * caches use).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpuop/labeling.h"
#include "gpuop/names.h"

static int op(const char *name)
{
    int i = gpuop_operand_by_name(name);
    if (i < 0)
        fail_msg("no operand %s", name);
    return i;
}

/* A Node with labels (a JSON object's members, "" for none) and, when
 * note is not NULL, gpuop's annotation holding it as a string. */
static struct gpuop_node *node(const char *labels, const char *note)
{
    char buf[4096];
    snprintf(buf, sizeof(buf), "{\"metadata\":{\"name\":\"n\",\"labels\":{%s}}}", labels);
    json_error_t e;
    json_t *obj = json_loads(buf, 0, &e);
    if (!obj)
        fail_msg("bad test JSON: %s: %s", e.text, buf);
    if (note)
        json_object_set_new(json_object_get(obj, "metadata"), "annotations",
                            json_pack("{s:s}", GPUOP_ANNOTATION_NODE_LABELS, note));
    struct gpuop_err err = {0};
    struct gpuop_node *n = gpuop_node_new(obj, NULL, &err);
    json_decref(obj);
    assert_non_null(n);
    return n;
}

/* Every operand enabled, labelling on; then off where told. */
static struct gpuop_labeling facts(bool on, const char *disabled)
{
    struct gpuop_labeling l = {.on = on};
    for (int i = 0; i < gpuop_operand_count(); i++)
        if ((!disabled || strcmp(disabled, gpuop_operand_get(i)->name) != 0) &&
            !gpuop_operand_follow(i)) /* no label of its own: never written */
            l.enabled |= 1u << i;
    return l;
}

#define NFD "\"feature.node.kubernetes.io/pci-10de.present\":\"true\""
#define NOTE_DRIVER                                                                                \
    "{\"nvidia.com/gpu.present\":{\"value\":\"true\",\"at\":\"2026-12-01T21:00:00Z\"},"            \
    "\"nvidia.com/gpu.deploy.driver\":{\"value\":\"true\",\"at\":\"2026-12-01T21:00:00Z\"}}"

#define MIG (1u << op("mig-manager"))

static uint32_t all_but(const struct gpuop_labeling *l, uint32_t bits)
{
    return l->enabled & ~bits;
}

/* A fresh GPU node (NFD only): every enabled operand and gpu.present. */
static void test_fresh_node(void **state)
{
    struct gpuop_labeling l = facts(true, "dcgm-exporter");
    struct gpuop_label_plan p;
    struct gpuop_node *n = node(NFD, NULL);
    assert_true(n->gpu);
    assert_false(n->any_deploy);
    assert_int_equal(n->label_note, GPUOP_NOTE_NONE);
    assert_true(gpuop_labeling_plan(&l, n, &p));
    assert_true(p.present);
    assert_int_equal(p.deploy, all_but(&l, MIG));
    assert_false((p.deploy >> op("dcgm-exporter")) & 1u); /* disabled: not labelled */
    gpuop_node_free(n);

    /* gpu.present already true: only the deploy labels */
    n = node("\"nvidia.com/gpu.present\":\"true\"", NULL);
    assert_true(gpuop_labeling_plan(&l, n, &p));
    assert_false(p.present);
    assert_int_equal(p.deploy, all_but(&l, MIG));
    gpuop_node_free(n);

    /* labelling off, or not a GPU node: nothing */
    n = node(NFD, NULL);
    struct gpuop_labeling off = facts(false, NULL);
    assert_false(gpuop_labeling_plan(&off, n, &p));
    assert_false(gpuop_labeling_plan(NULL, n, &p));
    assert_int_equal(p.deploy, 0);
    gpuop_node_free(n);
    n = node("\"feature.node.kubernetes.io/pci-10de.present\":\"false\",\"x\":\"y\"", NULL);
    assert_false(gpuop_labeling_plan(&l, n, &p));
    gpuop_node_free(n);
}

/* A node with any deploy label is a person's: never written, whatever the
 * suffix; operands=false excludes the node, with or without gpuop's note. */
static void test_persons_node(void **state)
{
    struct gpuop_labeling l = facts(true, NULL);
    struct gpuop_label_plan p;
    static const char *const theirs[] = {
        NFD ",\"nvidia.com/gpu.deploy.driver\":\"false\"",
        NFD ",\"nvidia.com/gpu.deploy.driver\":\"pre-installed\"",   /* a GPU Operator node */
        NFD ",\"nvidia.com/gpu.deploy.sandbox-workloads\":\"true\"", /* not an operand */
        NFD ",\"nvidia.com/gpu.deploy.operands\":\"true\"",
        NFD ",\"nvidia.com/gpu.deploy.operands\":\"false\"",
        "\"nvidia.com/gpu.deploy.device-plugin\":\"\"",
    };
    for (size_t i = 0; i < sizeof(theirs) / sizeof(theirs[0]); i++) {
        struct gpuop_node *n = node(theirs[i], NULL);
        assert_true(n->any_deploy);
        if (gpuop_labeling_plan(&l, n, &p))
            fail_msg("labelled a person's node: %s", theirs[i]);
        gpuop_node_free(n);
    }
    /* gpuop labelled it, then operands=false: nothing more, even for a
     * newly enabled operand */
    struct gpuop_node *n = node(NFD ",\"nvidia.com/gpu.present\":\"true\","
                                    "\"nvidia.com/gpu.deploy.driver\":\"true\","
                                    "\"nvidia.com/gpu.deploy.operands\":\"false\"",
                                NOTE_DRIVER);
    assert_int_equal(n->label_note, GPUOP_NOTE_OK);
    assert_false(gpuop_labeling_plan(&l, n, &p));
    gpuop_node_free(n);
}

/* gpuop labelled the node: an operand enabled since gets its label when
 * absent; a label gpuop set and someone removed is not put back, nor is
 * one someone set themselves overwritten. */
static void test_enabled_later(void **state)
{
    struct gpuop_labeling l = facts(true, NULL);
    struct gpuop_label_plan p;
    struct gpuop_node *n = node(NFD ",\"nvidia.com/gpu.present\":\"true\","
                                    "\"nvidia.com/gpu.deploy.driver\":\"true\"",
                                NOTE_DRIVER);
    assert_true(n->labelled_present);
    assert_int_equal(n->labelled, 1u << op("driver"));
    assert_true(gpuop_labeling_plan(&l, n, &p));
    assert_false(p.present);
    assert_int_equal(p.deploy, all_but(&l, (1u << op("driver")) | MIG));
    gpuop_node_free(n);

    /* driver removed, gpu.present removed, toolkit set false by a person:
     * neither put back nor overwritten */
    n = node(NFD ",\"nvidia.com/gpu.deploy.container-toolkit\":\"false\"", NOTE_DRIVER);
    assert_true(gpuop_labeling_plan(&l, n, &p));
    assert_false(p.present);
    assert_int_equal(p.deploy,
                     all_but(&l, (1u << op("driver")) | (1u << op("container-toolkit")) | MIG));
    assert_true(gpuop_labeling_changed(n, op("driver")));
    assert_false(gpuop_labeling_changed(n, op("container-toolkit"))); /* not gpuop's */
    gpuop_node_free(n);

    /* everything already there: nothing to write */
    char labels[2048] = NFD;
    for (int i = 0; i < gpuop_operand_count(); i++) {
        size_t len = strlen(labels);
        snprintf(labels + len, sizeof(labels) - len, ",\"nvidia.com/gpu.deploy.%s\":\"true\"",
                 gpuop_operand_get(i)->name);
    }
    n = node(labels, NOTE_DRIVER);
    assert_false(gpuop_labeling_plan(&l, n, &p));
    gpuop_node_free(n);
}

/* MIG Manager's label goes only to MIG-capable nodes (the GPU Operator's
 * hasMIGCapableGPU): nvidia.com/mig.capable=true, else an A100/A30/H100
 * product; never a vGPU host. On a node gpuop labelled it follows once GFD
 * says the node is MIG-capable. */
static void test_mig_capable(void **state)
{
    struct gpuop_labeling l = facts(true, NULL);
    struct gpuop_label_plan p;
    static const struct {
        const char *labels;
        bool mig;
    } cases[] = {
        {NFD ",\"nvidia.com/mig.capable\":\"true\"", true},
        {NFD ",\"nvidia.com/mig.capable\":\"false\",\"nvidia.com/gpu.product\":\"A100\"", false},
        {NFD ",\"nvidia.com/gpu.product\":\"NVIDIA-A100-SXM4-40GB\"", true},
        {NFD ",\"nvidia.com/gpu.product\":\"NVIDIA-H100-80GB-HBM3\"", true},
        {NFD ",\"nvidia.com/gpu.product\":\"Tesla-T4\"", false},
        {NFD ",\"nvidia.com/mig.capable\":\"true\","
             "\"nvidia.com/vgpu.host-driver-version\":\"550.54\"",
         false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct gpuop_node *n = node(cases[i].labels, NULL);
        assert_true(gpuop_labeling_plan(&l, n, &p));
        if (((p.deploy & MIG) != 0) != cases[i].mig)
            fail_msg("mig-manager %s on %s", cases[i].mig ? "not labelled" : "labelled",
                     cases[i].labels);
        gpuop_node_free(n);
    }
    /* gpuop's node, GFD's label arrives later: only the MIG Manager label */
    char labels[2048] = NFD ",\"nvidia.com/mig.capable\":\"true\"";
    for (int i = 0; i < gpuop_operand_count(); i++) {
        size_t len = strlen(labels);
        if (i != op("mig-manager"))
            snprintf(labels + len, sizeof(labels) - len, ",\"nvidia.com/gpu.deploy.%s\":\"true\"",
                     gpuop_operand_get(i)->name);
    }
    struct gpuop_node *n = node(labels, NOTE_DRIVER);
    assert_true(gpuop_labeling_plan(&l, n, &p));
    assert_int_equal(p.deploy, MIG);
    gpuop_node_free(n);
}

/* What is reported: each label gpuop set whose value is no longer "true";
 * a paused one is an upgrade's, not a change, and "pre-installed" NVIDIA's
 * driver container's (it found a driver on the host: host-provided). */
static void test_changed(void **state)
{
    const char *note = "{\"nvidia.com/gpu.deploy.driver\":{\"value\":\"true\",\"at\":\"t\"},"
                       "\"nvidia.com/gpu.deploy.container-toolkit\":{\"value\":\"true\"},"
                       "\"nvidia.com/gpu.deploy.device-plugin\":{\"value\":\"true\"},"
                       "\"nvidia.com/gpu.deploy.dcgm-exporter\":{\"value\":\"true\"},"
                       "\"nvidia.com/gpu.deploy.operator-validator\":{\"value\":\"true\"},"
                       "\"nvidia.com/gpu.deploy.no-such-operand\":{\"value\":\"true\"}}";
    struct gpuop_node *n = node(NFD ",\"nvidia.com/gpu.deploy.container-toolkit\":\"false\","
                                    "\"nvidia.com/gpu.deploy.operator-validator\":"
                                    "\"pre-installed\","
                                    "\"nvidia.com/gpu.deploy.device-plugin\":"
                                    "\"paused-for-driver-upgrade\","
                                    "\"nvidia.com/gpu.deploy.dcgm-exporter\":\"true\","
                                    "\"nvidia.com/gpu.deploy.gpu-feature-discovery\":\"x\"",
                                note);
    assert_true(gpuop_labeling_changed(n, op("driver")));                 /* removed */
    assert_true(gpuop_labeling_changed(n, op("container-toolkit")));      /* "false" */
    assert_false(gpuop_labeling_changed(n, op("device-plugin")));         /* paused */
    assert_false(gpuop_labeling_changed(n, op("dcgm-exporter")));         /* still true */
    assert_false(gpuop_labeling_changed(n, op("operator-validator")));    /* pre-installed */
    assert_false(gpuop_labeling_changed(n, op("gpu-feature-discovery"))); /* never gpuop's */
    assert_false(gpuop_labeling_changed(n, -1));
    assert_false(gpuop_labeling_changed(NULL, 0));
    gpuop_node_free(n);
}

/* An annotation gpuop cannot read: gpuop writes nothing there and reports
 * nothing of it (it does not know what it set). */
static void test_bad_note(void **state)
{
    struct gpuop_labeling l = facts(true, NULL);
    struct gpuop_label_plan p;
    static const char *const bad[] = {"", "not json", "[]", "{\"nvidia.com/gpu.present\":\"true\"}",
                                      "{\"nvidia.com/gpu.deploy.driver\":{\"at\":\"t\"}}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct gpuop_node *n = node(NFD, bad[i]);
        assert_int_equal(n->label_note, GPUOP_NOTE_BAD);
        assert_false(gpuop_labeling_plan(&l, n, &p));
        assert_false(gpuop_labeling_changed(n, op("driver")));
        gpuop_node_free(n);
    }
    /* too long */
    size_t len = GPUOP_MODEL_NOTE_MAX + 100;
    char *big = malloc(len + 1);
    memset(big, ' ', len);
    memcpy(big, "{}", 2);
    big[len] = '\0';
    struct gpuop_node *n = node(NFD, big);
    assert_int_equal(n->label_note, GPUOP_NOTE_BAD);
    gpuop_node_free(n);
    free(big);
    /* an empty object is readable: gpuop labelled nothing there, the node is its */
    n = node(NFD, "{}");
    assert_int_equal(n->label_note, GPUOP_NOTE_OK);
    assert_true(gpuop_labeling_plan(&l, n, &p));
    assert_false(p.present); /* never re-added on a node gpuop labelled */
    gpuop_node_free(n);
}

/* The facts of a policy: its nodeLabeling switch and enabled operands. */
static void test_facts_of_policy(void **state)
{
    struct gpuop_policy pol;
    struct gpuop_err err = {0};
    json_t *obj = json_pack("{s:{s:{s:b},s:{s:b}}}", "spec", "nodeLabeling", "enabled", 1,
                            "dcgmExporter", "enabled", 0);
    assert_int_equal(gpuop_policy_parse(obj, &pol, &err), 0);
    assert_int_equal(pol.nproblems, 0);
    struct gpuop_labeling l = gpuop_labeling_of(&pol);
    assert_true(l.on);
    assert_false((l.enabled >> op("dcgm-exporter")) & 1u);
    assert_true((l.enabled >> op("driver")) & 1u);
    gpuop_policy_free(&pol);
    json_decref(obj);

    obj = json_pack("{s:{}}", "spec"); /* absent: off */
    assert_int_equal(gpuop_policy_parse(obj, &pol, &err), 0);
    assert_false(pol.node_labeling);
    assert_false(gpuop_labeling_of(&pol).on);
    gpuop_policy_free(&pol);
    json_decref(obj);

    obj = json_pack("{s:{s:{s:s,s:b}}}", "spec", "nodeLabeling", "enabled", "yes", "enabeld", 1);
    assert_int_equal(gpuop_policy_parse(obj, &pol, &err), 0);
    assert_false(pol.node_labeling);
    assert_int_equal(pol.nproblems, 2); /* the wrong type and the typo, by field */
    bool typed = false, typo = false;
    for (int i = 0; i < pol.nproblems; i++) {
        typed |= strcmp(pol.problems[i].field, "spec.nodeLabeling.enabled") == 0;
        typo |= strcmp(pol.problems[i].field, "spec.nodeLabeling.enabeld") == 0;
    }
    assert_true(typed && typo);
    gpuop_policy_free(&pol);
    json_decref(obj);
}

/* The pool facts of a policy with pools a100 and h100 (selectors, b or
 * NULL: h100 has none, a pool labelled by hand), into f. */
static void pools_of(const char *h100_selector, struct gpuop_pool_facts *f)
{
    char buf[1024];
    snprintf(buf, sizeof(buf),
             "{\"spec\":{\"driver\":{\"pools\":[{\"name\":\"a100\",\"nodeSelector\":"
             "{\"pool\":\"a100\"}},{\"name\":\"h100\"%s%s%s}]}}}",
             h100_selector ? ",\"nodeSelector\":" : "", h100_selector ? h100_selector : "", "");
    json_t *obj = json_loads(buf, 0, NULL);
    assert_non_null(obj);
    struct gpuop_policy pol;
    struct gpuop_err err = {0};
    assert_int_equal(gpuop_policy_parse(obj, &pol, &err), 0);
    assert_int_equal(pol.nproblems, 0);
    assert_int_equal(gpuop_labeling_pools_of(&pol, f), 0);
    gpuop_policy_free(&pol);
    json_decref(obj);
}

static unsigned match(const struct gpuop_pool_facts *f, const char *labels)
{
    json_t *l = json_loads(labels, 0, NULL);
    assert_non_null(l);
    unsigned m = gpuop_labeling_pool_match(f, l);
    json_decref(l);
    return m;
}

/* The pool plan of a node with label and conflict (no wanted annotation,
 * no driver pod). */
static bool pplan(const struct gpuop_pool_facts *f, unsigned m, const char *label,
                  const char *conflict, struct gpuop_pool_plan *out)
{
    struct gpuop_pool_node now = {label, conflict, NULL, false, false};
    return gpuop_labeling_pool_plan(f, m, &now, out);
}

/* Driver pools (SPEC 4f): the label follows the one pool that selects a
 * node, goes when none does (only a pool with a nodeSelector's), and a
 * node two pools select keeps its label and is annotated with both. */
static void test_driver_pools(void **state)
{
    struct gpuop_pool_facts f, g;
    struct gpuop_pool_plan plan;
    pools_of(NULL, &f);
    assert_true(f.on);
    assert_int_equal(f.n, 2);
    assert_int_equal(match(&f, "{\"pool\":\"a100\",\"x\":\"y\"}"), 1u);
    assert_int_equal(match(&f, "{\"pool\":\"h100\"}"), 0u);

    /* one pool: labelled, and relabelled from another pool's value */
    assert_true(pplan(&f, 1u, NULL, NULL, &plan));
    assert_true(plan.label);
    assert_string_equal(plan.pool, "a100");
    assert_false(plan.note);
    /* already there: recorded once as gpuop's value (a label from before
     * the record), then nothing */
    assert_true(pplan(&f, 1u, "a100", NULL, &plan));
    assert_false(plan.label);
    assert_true(plan.record);
    assert_string_equal(plan.pool, "a100");
    struct gpuop_pool_node mine = {"a100", NULL, NULL, false, true};
    assert_false(gpuop_labeling_pool_plan(&f, 1u, &mine, &plan));
    /* none: gpuop's label of a selector pool goes; a hand pool's or an
     * unknown value stays (a person's) */
    assert_true(pplan(&f, 0u, "a100", NULL, &plan));
    assert_true(plan.label);
    assert_null(plan.pool);
    assert_false(pplan(&f, 0u, "h100", NULL, &plan));
    assert_false(pplan(&f, 0u, "retired", NULL, &plan));
    assert_true(plan.persons); /* named by gpuop check, never taken */
    /* a pool gone whose label gpuop wrote: removed, at once even with a
     * driver (no DaemonSet selects its value), and its record with it */
    struct gpuop_pool_node gone = {"retired", NULL, NULL, true, true};
    assert_true(gpuop_labeling_pool_plan(&f, 0u, &gone, &plan));
    assert_true(plan.label);
    assert_null(plan.pool);
    assert_true(plan.record);
    assert_false(plan.want);
    assert_false(pplan(&f, 0u, NULL, NULL, &plan));
    /* the hand pool's label on a node a100 selects: a conflict, label kept */
    assert_true(pplan(&f, 1u, "h100", NULL, &plan));
    assert_false(plan.label);
    assert_true(plan.note);
    assert_string_equal(plan.conflict, "a100,h100");
    assert_false(pplan(&f, 1u, "h100", "a100,h100", &plan)); /* said */

    /* two selectors: the label kept (none, or another), both named */
    pools_of("{\"gpu\":\"big\"}", &g);
    assert_false(gpuop_labeling_pools_same(&f, &g));
    assert_int_equal(match(&g, "{\"pool\":\"a100\",\"gpu\":\"big\"}"), 3u);
    assert_true(pplan(&g, 3u, NULL, NULL, &plan));
    assert_false(plan.label);
    assert_string_equal(plan.conflict, "a100,h100");
    assert_true(pplan(&g, 3u, "a100", "h100", &plan));
    assert_false(plan.label);
    assert_true(plan.note);
    /* the conflict resolved: the annotation goes, the label follows */
    assert_true(pplan(&g, 2u, "a100", "a100,h100", &plan));
    assert_true(plan.label);
    assert_string_equal(plan.pool, "h100");
    assert_true(plan.note);
    assert_string_equal(plan.conflict, "");
    gpuop_labeling_pools_free(&g);

    pools_of(NULL, &g);
    assert_true(gpuop_labeling_pools_same(&f, &g));
    gpuop_labeling_pools_free(&g);
    gpuop_labeling_pools_free(&f);

    /* no pool with a nodeSelector: nothing is written */
    json_t *obj = json_loads("{\"spec\":{\"driver\":{\"pools\":[{\"name\":\"a100\"}]}}}", 0, NULL);
    struct gpuop_policy pol;
    struct gpuop_err err = {0};
    assert_int_equal(gpuop_policy_parse(obj, &pol, &err), 0);
    assert_int_equal(gpuop_labeling_pools_of(&pol, &f), 0);
    assert_false(f.on);
    assert_false(pplan(&f, 0u, "a100", "x", &plan));
    gpuop_labeling_pools_free(&f);
    gpuop_policy_free(&pol);
    json_decref(obj);
    (void)state;
}

/* A node that runs a driver pod is never relabelled into another pool:
 * the wanted annotation names where it goes (the driver upgrade moves it);
 * without a driver pod it is relabelled at once and the annotation goes. */
static void test_driver_pool_moves(void **state)
{
    struct gpuop_pool_facts f, g;
    struct gpuop_pool_plan plan;
    pools_of(NULL, &f);
    /* default -> a100 with a driver: wanted a100, label untouched */
    struct gpuop_pool_node now = {NULL, NULL, NULL, true, false};
    assert_true(gpuop_labeling_pool_plan(&f, 1u, &now, &plan));
    assert_false(plan.label);
    assert_true(plan.want);
    assert_string_equal(plan.wanted, "a100");
    now.wanted = "a100"; /* said already: nothing to write */
    assert_false(gpuop_labeling_pool_plan(&f, 1u, &now, &plan));
    /* the driver pod gone meanwhile: relabelled at once, annotation removed */
    now.driver = false;
    assert_true(gpuop_labeling_pool_plan(&f, 1u, &now, &plan));
    assert_true(plan.label);
    assert_string_equal(plan.pool, "a100");
    assert_true(plan.want);
    assert_null(plan.wanted);
    /* a100 -> default (no pool selects it) with a driver: wanted "default" */
    struct gpuop_pool_node back = {"a100", NULL, NULL, true, true};
    assert_true(gpuop_labeling_pool_plan(&f, 0u, &back, &plan));
    assert_false(plan.label);
    assert_string_equal(plan.wanted, GPUOP_DRIVER_POOL_DEFAULT);
    /* the selector changed back before the move: the annotation goes */
    back.wanted = GPUOP_DRIVER_POOL_DEFAULT;
    assert_true(gpuop_labeling_pool_plan(&f, 1u, &back, &plan));
    assert_false(plan.label);
    assert_true(plan.want);
    assert_null(plan.wanted);
    /* moved (the upgrade set the label, removed the annotation): nothing */
    struct gpuop_pool_node moved = {"a100", NULL, NULL, true, true};
    assert_false(gpuop_labeling_pool_plan(&f, 1u, &moved, &plan));
    /* a conflict while waiting to move: fails closed, no move, both named */
    pools_of("{\"gpu\":\"big\"}", &g);
    struct gpuop_pool_node c = {NULL, NULL, "a100", true, false};
    assert_true(gpuop_labeling_pool_plan(&g, 3u, &c, &plan));
    assert_false(plan.label);
    assert_true(plan.want);
    assert_null(plan.wanted);
    assert_string_equal(plan.conflict, "a100,h100");
    /* a100 -> h100 (its selector now) with a driver: wanted h100 */
    struct gpuop_pool_node ah = {"a100", NULL, NULL, true, true};
    assert_true(gpuop_labeling_pool_plan(&g, 2u, &ah, &plan));
    assert_false(plan.label);
    assert_string_equal(plan.wanted, "h100");
    gpuop_labeling_pools_free(&g);
    gpuop_labeling_pools_free(&f);
    (void)state;
}

/* A pool removed from the policy drains (issue 38): while a GPU node
 * carries its name and its DaemonSet for the node's OS is there (not
 * being deleted), it is a draining pool; its nodes move to where the
 * selectors now put them, through the upgrade when a driver runs (the
 * wanted annotation), at once without one. A value that never was a pool
 * (no DaemonSet of it) is not draining, and stays. */
static void test_driver_pool_draining(void **state)
{
    json_t *obj = json_loads("{\"spec\":{\"driver\":{\"version\":\"595.91.07\",\"pools\":"
                             "[{\"name\":\"h100\",\"nodeSelector\":{\"gpu\":\"big\"}}]}}}",
                             0, NULL);
    struct gpuop_policy pol;
    struct gpuop_err err = {0};
    assert_int_equal(gpuop_policy_parse(obj, &pol, &err), 0);
    assert_int_equal(pol.nproblems, 0);
    struct gpuop_node *a =
        node(NFD ",\"" GPUOP_LABEL_OS_ID "\":\"ubuntu\",\"" GPUOP_LABEL_OS_VERSION
                 "\":\"24.04\",\"" GPUOP_LABEL_DRIVER_POOL "\":\"a100\"",
             NULL);
    struct gpuop_node *typo =
        node(NFD ",\"" GPUOP_LABEL_OS_ID "\":\"ubuntu\",\"" GPUOP_LABEL_OS_VERSION
                 "\":\"24.04\",\"" GPUOP_LABEL_DRIVER_POOL "\":\"a10O\"",
             NULL);
    const struct gpuop_node *nodes[] = {a, typo};
    struct gpuop_ds ds = {.name = "gpuop-driver-a100-ubuntu24.04", .operand = -1};
    const struct gpuop_ds *dss[] = {&ds};

    assert_int_equal(gpuop_labeling_pools_draining(&pol, nodes, 2, NULL, 0), 0);
    assert_int_equal(pol.ndraining_pools, 0); /* no DaemonSet of it: a value naming no pool */
    ds.deleting = true;
    assert_int_equal(gpuop_labeling_pools_draining(&pol, nodes, 2, dss, 1), 0);
    assert_int_equal(pol.ndraining_pools, 0);
    ds.deleting = false;
    assert_int_equal(gpuop_labeling_pools_draining(&pol, nodes, 2, dss, 1), 0);
    assert_int_equal(pol.ndraining_pools, 1);
    assert_string_equal(pol.draining_pools[0], "a100");
    assert_true(gpuop_policy_pool_draining(&pol, "a100"));
    assert_false(gpuop_policy_pool_draining(&pol, "a10O"));

    struct gpuop_pool_facts f;
    struct gpuop_pool_plan plan;
    assert_int_equal(gpuop_labeling_pools_of(&pol, &f), 0);
    assert_true(f.on);
    assert_int_equal(f.ndraining, 1);
    /* a driver runs: wanted default (no selector matches), label kept */
    struct gpuop_pool_node now = {"a100", NULL, NULL, true, true};
    assert_true(gpuop_labeling_pool_plan(&f, 0u, &now, &plan));
    assert_false(plan.label);
    assert_string_equal(plan.wanted, GPUOP_DRIVER_POOL_DEFAULT);
    /* h100's selector matches it now: wanted h100 */
    assert_true(gpuop_labeling_pool_plan(&f, 1u, &now, &plan));
    assert_string_equal(plan.wanted, "h100");
    /* no driver pod: the label goes at once */
    now.driver = false;
    assert_true(gpuop_labeling_pool_plan(&f, 0u, &now, &plan));
    assert_true(plan.label);
    assert_null(plan.pool);
    /* a person's label of the draining pool: left (its DaemonSet stays) */
    struct gpuop_pool_node hand = {"a100", NULL, NULL, true, false};
    assert_false(gpuop_labeling_pool_plan(&f, 0u, &hand, &plan));
    assert_true(plan.persons);
    /* the typo is a person's value naming no pool: left */
    struct gpuop_pool_node t = {"a10O", NULL, NULL, true, false};
    assert_false(gpuop_labeling_pool_plan(&f, 0u, &t, &plan));
    gpuop_labeling_pools_free(&f);

    /* only a draining pool, no selector left: the labeller still moves */
    json_decref(obj);
    gpuop_policy_free(&pol);
    obj = json_loads("{\"spec\":{\"driver\":{\"version\":\"595.91.07\"}}}", 0, NULL);
    assert_int_equal(gpuop_policy_parse(obj, &pol, &err), 0);
    assert_int_equal(gpuop_labeling_pools_draining(&pol, nodes, 2, dss, 1), 0);
    assert_int_equal(gpuop_labeling_pools_of(&pol, &f), 0);
    assert_true(f.on);
    now.driver = true;
    assert_true(gpuop_labeling_pool_plan(&f, 0u, &now, &plan));
    assert_string_equal(plan.wanted, GPUOP_DRIVER_POOL_DEFAULT);
    gpuop_labeling_pools_free(&f);
    gpuop_policy_free(&pol);
    json_decref(obj);
    gpuop_node_free(a);
    gpuop_node_free(typo);
    (void)state;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fresh_node),        cmocka_unit_test(test_persons_node),
        cmocka_unit_test(test_enabled_later),     cmocka_unit_test(test_changed),
        cmocka_unit_test(test_bad_note),          cmocka_unit_test(test_facts_of_policy),
        cmocka_unit_test(test_mig_capable),       cmocka_unit_test(test_driver_pools),
        cmocka_unit_test(test_driver_pool_moves), cmocka_unit_test(test_driver_pool_draining),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
