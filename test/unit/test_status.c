/*
 * test_status.c - GpuPolicy status from findings: shape, conditions and
 * their reasons, lastTransitionTime kept unless the status flips, the node
 * cap, ignored policies, Reconciled inputs, determinism (json_equal).
 * Worlds are built from Kubernetes-shaped JSON through the model parsers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpuop/clock.h"
#include "gpuop/render.h"
#include "gpuop/status.h"
#include "world_fixture.h"

#define T0 FX_T0 /* 2026-11-29T21:06:40Z */

/* Every test's world: DaemonSets 3 desired, 2 ready; generation 4. */
static void world_init(struct fx_world *w)
{
    fx_world_init(w, 3, 2);
    w->pol.generation = 4;
}

/* The condition of type (borrowed), or NULL. */
static json_t *find_cond(json_t *st, const char *type)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(st, "conditions"), i, c)
    {
        if (strcmp(json_string_value(json_object_get(c, "type")), type) == 0)
            return c;
    }
    return NULL;
}

static json_t *cond(json_t *st, const char *type)
{
    json_t *c = find_cond(st, type);
    if (!c)
        fail_msg("no condition %s", type);
    return c;
}

static const char *cstr(json_t *st, const char *type, const char *field)
{
    return json_string_value(json_object_get(cond(st, type), field));
}

static const char *str(json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static long long num(json_t *o, const char *k)
{
    return json_integer_value(json_object_get(o, k));
}

static const struct gpuop_status_input ok_in = {.namespace = "gpuop-system"};

static void test_ready(void **state)
{
    struct fx_world w;
    world_init(&w);
    fx_add_node_except(&w, "gpu-a", NULL, NULL);
    fx_run_all(&w, "gpu-a", NULL);
    fx_analyze(&w);
    json_t *st = gpuop_status_build(&w.pol, &w.f, NULL, &ok_in, T0);
    assert_non_null(st);
    /* exact key order of SPEC section 6 */
    /* (no nodes: the empty list is left out) */
    static const char *const keys[] = {"observedGeneration", "state",        "namespace",
                                       "conditions",         "nodesOmitted", "summary"};
    size_t k = 0;
    const char *key;
    json_t *v;
    json_object_foreach(st, key, v)
    {
        if (strcmp(key, "operands") == 0) /* operands sit before nodesOmitted */
            continue;
        assert_true(k < 6);
        assert_string_equal(key, keys[k++]);
    }
    assert_int_equal(k, 6);
    assert_null(json_object_get(st, "nodes"));
    assert_int_equal(num(st, "observedGeneration"), 4);
    assert_string_equal(str(st, "state"), "ready");
    assert_string_equal(str(st, "namespace"), "gpuop-system");
    assert_int_equal(json_array_size(json_object_get(st, "conditions")), 4);
    static const char *const types[] = {"Ready", "OperandsComplete", "OrderingValid", "Reconciled"};
    static const char *const reasons[] = {"AllNodesComplete", "Complete", "ChainIntact", "Applied"};
    for (int i = 0; i < 4; i++) {
        json_t *c = json_array_get(json_object_get(st, "conditions"), (size_t)i);
        assert_string_equal(str(c, "type"), types[i]);
        assert_string_equal(str(c, "status"), "True");
        assert_string_equal(str(c, "reason"), reasons[i]);
        assert_true(strlen(str(c, "message")) > 10);
        assert_string_equal(str(c, "lastTransitionTime"), "2026-11-29T21:06:40Z");
        assert_int_equal(num(c, "observedGeneration"), 4);
        assert_int_equal(json_object_size(c), 6);
    }
    assert_non_null(strstr(cstr(st, "Reconciled", "message"), "gpuop-system"));
    json_t *ops = json_object_get(st, "operands");
    assert_int_equal(json_array_size(ops), (size_t)gpuop_operand_count());
    json_t *o2 = json_array_get(ops, 2);
    assert_string_equal(str(o2, "name"), "device-plugin");
    assert_true(json_is_true(json_object_get(o2, "enabled")));
    assert_string_equal(str(o2, "daemonSet"), "gpuop-device-plugin");
    assert_int_equal(num(o2, "expectedNodes"), 1);
    assert_int_equal(num(o2, "runningNodes"), 1);
    assert_int_equal(num(o2, "desiredNumberScheduled"), 3);
    assert_int_equal(num(o2, "numberReady"), 2);
    json_t *sum = json_object_get(st, "summary");
    assert_int_equal(num(sum, "gpuNodes"), 1);
    assert_int_equal(num(sum, "completeNodes"), 1);
    assert_int_equal(num(sum, "violations"), 0);
    assert_true(json_is_false(json_object_get(sum, "truncated")));
    json_decref(st);
    fx_world_free(&w);
}

static void test_no_gpu_nodes(void **state)
{
    struct fx_world w;
    world_init(&w);
    fx_analyze(&w);
    json_t *st = gpuop_status_build(&w.pol, &w.f, NULL, &ok_in, T0);
    assert_string_equal(str(st, "state"), "notReady");
    assert_string_equal(cstr(st, "Ready", "status"), "False");
    assert_string_equal(cstr(st, "Ready", "reason"), "NoGpuNodes");
    assert_non_null(strstr(cstr(st, "Ready", "message"), "nvidia.com/gpu.present=true"));
    assert_int_equal(num(json_object_get(st, "summary"), "gpuNodes"), 0);
    json_decref(st);
    fx_world_free(&w);
}

static void test_findings(void **state)
{
    struct fx_world w;
    world_init(&w);
    w.pol.operands[0].enabled = false; /* driver host-provided everywhere */
    fx_add_node_except(&w, "gpu-b", "container-toolkit", "true");
    fx_run_all(&w, "gpu-b", "driver container-toolkit"); /* device plugin without toolkit */
    fx_add_node_except(&w, "gpu-a", "dcgm-exporter", "paused");
    fx_run_all(&w, "gpu-a", "driver dcgm-exporter");
    fx_add_node_except(&w, "gpu-c", NULL, NULL);
    fx_run_all(&w, "gpu-c", "driver");
    fx_analyze(&w);
    json_t *st = gpuop_status_build(&w.pol, &w.f, NULL, &ok_in, T0);
    if (getenv("DUMP"))
        json_dumpf(st, stderr, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    assert_string_equal(str(st, "state"), "notReady");
    assert_string_equal(cstr(st, "Ready", "reason"), "FindingsPresent");
    assert_non_null(strstr(cstr(st, "Ready", "message"), "1 of 3 GPU nodes are complete"));
    assert_string_equal(cstr(st, "OperandsComplete", "status"), "False");
    assert_string_equal(cstr(st, "OperandsComplete", "reason"), "OperandsMissing");
    assert_non_null(
        strstr(cstr(st, "OperandsComplete", "message"), "Missing: 1 (PodNotCreated 1)"));
    assert_non_null(
        strstr(cstr(st, "OperandsComplete", "message"), "NotScheduled: 1 (LabelPaused 1)"));
    assert_string_equal(cstr(st, "OrderingValid", "status"), "False");
    assert_string_equal(cstr(st, "OrderingValid", "reason"), "DevicePluginWithoutToolkit");
    assert_non_null(strstr(cstr(st, "OrderingValid", "message"), "fail to get a GPU"));

    json_t *nodes = json_object_get(st, "nodes");
    assert_int_equal(json_array_size(nodes), 2);
    json_t *a = json_array_get(nodes, 0), *b = json_array_get(nodes, 1);
    assert_string_equal(str(a, "name"), "gpu-a");
    assert_string_equal(str(b, "name"), "gpu-b");
    json_t *fa = json_array_get(json_object_get(a, "findings"), 0);
    assert_string_equal(str(fa, "operand"), "dcgm-exporter");
    assert_string_equal(str(fa, "kind"), "NotScheduled");
    assert_string_equal(str(fa, "reason"), "LabelPaused");
    assert_non_null(strstr(str(fa, "message"), "\"paused\""));
    assert_int_equal(json_object_size(fa), 4);
    json_t *fb = json_object_get(b, "findings");
    /* toolkit missing; device-plugin, gfd, dcgm, dcgm-exporter (its host engine runs, the
     * walk goes on), validator, mig-manager and the MPS daemon all run above it */
    assert_int_equal(json_array_size(fb), 8);
    assert_string_equal(str(json_array_get(fb, 0), "reason"), "PodNotCreated");
    assert_string_equal(str(json_array_get(fb, 1), "kind"), "OrderingViolation");
    assert_string_equal(str(json_array_get(fb, 1), "reason"), "DevicePluginWithoutToolkit");
    for (size_t i = 2; i < 7; i++)
        assert_string_equal(str(json_array_get(fb, i), "reason"), "PrerequisiteNotRunning");
    assert_string_equal(str(json_array_get(fb, 3), "operand"), "dcgm");
    assert_string_equal(str(json_array_get(fb, 4), "operand"), "dcgm-exporter");
    assert_non_null(strstr(str(json_array_get(fb, 4), "message"),
                           "(chain: dcgm-exporter -> dcgm -> container-toolkit)"));
    assert_string_equal(str(json_array_get(fb, 5), "operand"), "operator-validator");
    assert_string_equal(str(json_array_get(fb, 6), "operand"), "mig-manager");
    json_t *hp = json_object_get(b, "hostProvided");
    assert_int_equal(json_array_size(hp), 1);
    assert_string_equal(json_string_value(json_array_get(hp, 0)), "driver");
    json_t *sum = json_object_get(st, "summary");
    assert_int_equal(num(sum, "gpuNodes"), 3);
    assert_int_equal(num(sum, "completeNodes"), 1);
    assert_int_equal(num(sum, "violations"), 1);
    json_t *o0 = json_array_get(json_object_get(st, "operands"), 0);
    assert_true(json_is_false(json_object_get(o0, "enabled")));
    assert_int_equal(num(o0, "expectedNodes"), 0);
    json_decref(st);
    fx_world_free(&w);
}

/* Who is stranded (issue 15 §2): the controller's lists, passed in, show
 * only on nodes with an OrderingViolation: the node's strandedPods, the
 * violation's message naming them (bounded: the first
 * GPUOP_STRANDED_NAMES_MAX, then "and N more"), stranded_pods summed. */
static void test_stranded(void **state)
{
    struct fx_world w;
    world_init(&w);
    w.pol.operands[0].enabled = false;
    fx_add_node_except(&w, "gpu-b", "container-toolkit", "true");
    fx_run_all(&w, "gpu-b", "driver container-toolkit"); /* device plugin without toolkit */
    fx_add_node_except(&w, "gpu-c", NULL, NULL);
    fx_run_all(&w, "gpu-c", "driver"); /* complete: its list must be ignored */
    fx_analyze(&w);
    static const char *const many[] = {"ns/p0", "ns/p1", "ns/p2", "ns/p3", "ns/p4",
                                       "ns/p5", "ns/p6", "ns/p7", "ns/p8", "ns/p9"};
    struct gpuop_stranded st[2] = {{.node = "gpu-b", .count = 12, .nnames = 10},
                                   {.node = "gpu-c", .count = 3, .nnames = 1, .names = {"x/y"}}};
    memcpy(st[0].names, many, sizeof(many));
    gpuop_findings_set_stranded(&w.f, st, 2);
    assert_int_equal(w.f.stranded_pods, 12); /* gpu-c has no violation */
    json_t *s = gpuop_status_build(&w.pol, &w.f, NULL, &ok_in, T0);
    assert_non_null(s);
    json_t *nodes = json_object_get(s, "nodes");
    json_t *b = NULL;
    for (size_t i = 0; i < json_array_size(nodes); i++) {
        json_t *n = json_array_get(nodes, i);
        assert_string_not_equal(str(n, "name"), "gpu-c");
        if (strcmp(str(n, "name"), "gpu-b") == 0)
            b = n;
    }
    assert_non_null(b);
    json_t *sp = json_object_get(b, "strandedPods");
    assert_int_equal(num(sp, "count"), 12);
    assert_int_equal(json_array_size(json_object_get(sp, "pods")), GPUOP_STRANDED_NAMES_MAX);
    assert_string_equal(json_string_value(json_array_get(json_object_get(sp, "pods"), 9)), "ns/p9");
    json_t *f1 = json_array_get(json_object_get(b, "findings"), 1);
    assert_string_equal(str(f1, "reason"), "DevicePluginWithoutToolkit");
    assert_non_null(strstr(str(f1, "message"), "GPU pods bound here now (12): ns/p0, ns/p1, "));
    assert_non_null(strstr(str(f1, "message"), "ns/p9 and 2 more."));
    /* PrerequisiteNotRunning on the same node names them too */
    assert_non_null(
        strstr(str(json_array_get(json_object_get(b, "findings"), 2), "message"), "(12): ns/p0"));
    json_decref(s);

    /* text bounding */
    char buf[16];
    int n = gpuop_stranded_text(&st[0], buf, sizeof(buf));
    assert_true(n > (int)sizeof(buf));
    assert_int_equal(strlen(buf), sizeof(buf) - 1);
    struct gpuop_stranded none = {.node = "gpu-b"};
    assert_int_equal(gpuop_stranded_text(&none, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "");
    struct gpuop_stranded unnamed = {.node = "gpu-b", .count = 4};
    gpuop_stranded_text(&unnamed, buf, sizeof(buf));
    assert_string_equal(buf, "4 more");

    /* no list (not yet listed, or count 0): no strandedPods, no sentence */
    st[0].count = 0;
    st[0].nnames = 0;
    gpuop_findings_set_stranded(&w.f, st, 2);
    assert_int_equal(w.f.stranded_pods, 0);
    s = gpuop_status_build(&w.pol, &w.f, NULL, &ok_in, T0);
    char *dump = json_dumps(s, 0);
    assert_null(strstr(dump, "strandedPods"));
    assert_null(strstr(dump, "GPU pods bound here now"));
    free(dump);
    json_decref(s);
    fx_world_free(&w);
}

/* Empty lists are left out of the cluster's status (no dangling keys in
 * kubectl describe), kept for gpuop check -o json (a fixed shape). */
static void test_empty_lists(void **state)
{
    struct fx_world w;
    world_init(&w);
    fx_add_node_except(&w, "gpu-a", "dcgm-exporter", "paused");
    fx_run_all(&w, "gpu-a", "dcgm-exporter");
    fx_add_node_except(&w, "gpu-b", NULL, NULL);
    fx_run_all(&w, "gpu-b", NULL);
    fx_analyze(&w);
    json_t *st = gpuop_status_build(&w.pol, &w.f, NULL, &ok_in, T0);
    json_t *a = json_array_get(json_object_get(st, "nodes"), 0);
    assert_string_equal(str(a, "name"), "gpu-a");
    assert_null(json_object_get(a, "hostProvided"));
    json_decref(st);
    struct gpuop_status_input keep = ok_in;
    keep.empty_lists = true;
    st = gpuop_status_build(&w.pol, &w.f, NULL, &keep, T0);
    a = json_array_get(json_object_get(st, "nodes"), 0);
    assert_true(json_is_array(json_object_get(a, "hostProvided")));
    assert_int_equal(json_array_size(json_object_get(a, "hostProvided")), 0);
    json_decref(st);
    fx_world_free(&w);
    /* no finding at all: no nodes key, unless kept */
    world_init(&w);
    fx_add_node_except(&w, "gpu-b", NULL, NULL);
    fx_run_all(&w, "gpu-b", NULL);
    fx_analyze(&w);
    st = gpuop_status_build(&w.pol, &w.f, NULL, &ok_in, T0);
    assert_null(json_object_get(st, "nodes"));
    json_decref(st);
    st = gpuop_status_build(&w.pol, &w.f, NULL, &keep, T0);
    assert_int_equal(json_array_size(json_object_get(st, "nodes")), 0);
    assert_true(json_is_array(json_object_get(st, "nodes")));
    json_decref(st);
    fx_world_free(&w);
}

static void test_transition_times(void **state)
{
    struct fx_world w;
    world_init(&w);
    fx_add_node_except(&w, "gpu-a", NULL, NULL);
    fx_run_all(&w, "gpu-a", NULL);
    fx_analyze(&w);
    json_t *s1 = gpuop_status_build(&w.pol, &w.f, NULL, &ok_in, T0);
    /* later, same world: identical object, times kept */
    json_t *s2 = gpuop_status_build(&w.pol, &w.f, s1, &ok_in, T0 + 600);
    assert_true(json_equal(s1, s2));
    char *d1 = json_dumps(s1, JSON_PRESERVE_ORDER), *d2 = json_dumps(s2, JSON_PRESERVE_ORDER);
    assert_string_equal(d1, d2);
    free(d1);
    free(d2);

    /* the toolkit pod goes: Ready, OperandsComplete and OrderingValid flip */
    for (size_t i = 0; i < w.npods; i++)
        if (w.pods[i]->operand == gpuop_operand_by_name("container-toolkit"))
            w.pp[i] = NULL;
    fx_analyze(&w);
    json_t *s3 = gpuop_status_build(&w.pol, &w.f, s2, &ok_in, T0 + 1200);
    assert_false(json_equal(s2, s3));
    assert_string_equal(cstr(s3, "Ready", "status"), "False");
    assert_string_equal(cstr(s3, "Ready", "lastTransitionTime"), "2026-11-29T21:26:40Z");
    assert_string_equal(cstr(s3, "OrderingValid", "lastTransitionTime"), "2026-11-29T21:26:40Z");
    assert_string_equal(cstr(s3, "Reconciled", "lastTransitionTime"), "2026-11-29T21:06:40Z");

    /* still broken, message may change (another pod goes) but time stays */
    for (size_t i = 0; i < w.npods; i++)
        if (w.pods[i]->operand == gpuop_operand_by_name("dcgm-exporter"))
            w.pp[i] = NULL;
    fx_analyze(&w);
    json_t *s4 = gpuop_status_build(&w.pol, &w.f, s3, &ok_in, T0 + 1800);
    assert_string_equal(cstr(s4, "Ready", "lastTransitionTime"), "2026-11-29T21:26:40Z");
    assert_string_not_equal(cstr(s4, "Ready", "message"), cstr(s3, "Ready", "message"));

    /* a previous condition with a different status or a mistyped time is not copied */
    json_t *bogus =
        json_pack("{s:[{s:s, s:s, s:i}, {s:s, s:s, s:s}]}", "conditions", "type", "Reconciled",
                  "status", "True", "lastTransitionTime", 5, "type", "Ready", "status", "True",
                  "lastTransitionTime", "1999-01-01T00:00:00Z");
    json_t *s5 = gpuop_status_build(&w.pol, &w.f, bogus, &ok_in, T0);
    assert_string_equal(cstr(s5, "Reconciled", "lastTransitionTime"), "2026-11-29T21:06:40Z");
    assert_string_equal(cstr(s5, "Ready", "lastTransitionTime"), "2026-11-29T21:06:40Z");
    json_t *garbage = json_string("garbage");
    json_t *s6 = gpuop_status_build(&w.pol, &w.f, garbage, &ok_in, T0);
    assert_non_null(s6);
    json_decref(garbage);

    json_t *objs[] = {s1, s2, s3, s4, s5, s6, bogus};
    for (size_t i = 0; i < 7; i++)
        json_decref(objs[i]);
    fx_world_free(&w);
}

/* GPU sharing (issue 41): GFD's strategy and replicas of the GPU nodes,
 * grouped and sorted, bounded, absent when no node shares. */
static void test_sharing(void **state)
{
    struct fx_world w;
    world_init(&w);
    static const struct {
        const char *name;
        int strategy, replicas;
    } nodes[] = {
        {"gpu-a", GPUOP_SHARING_TIME_SLICING, 4}, {"gpu-b", GPUOP_SHARING_MPS, 2},
        {"gpu-c", GPUOP_SHARING_TIME_SLICING, 4}, {"gpu-d", GPUOP_SHARING_NONE, 1},
        {"gpu-e", GPUOP_SHARING_TIME_SLICING, 2}, {"gpu-f", GPUOP_SHARING_OTHER, 0},
    };
    for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
        fx_add_node(&w, nodes[i].name, FX_ALL);
        fx_run_all(&w, nodes[i].name, NULL);
        w.nodes[w.nn - 1]->sharing = (uint8_t)nodes[i].strategy;
        w.nodes[w.nn - 1]->replicas = (uint8_t)nodes[i].replicas;
    }
    fx_analyze(&w);
    json_t *st = gpuop_status_build(&w.pol, &w.f, NULL, &ok_in, T0);
    json_t *sh = json_object_get(st, "sharing");
    assert_int_equal(json_array_size(sh), 4);
    json_t *g = json_array_get(sh, 0);
    assert_string_equal(str(g, "strategy"), "mps");
    assert_int_equal(num(g, "replicas"), 2);
    g = json_array_get(sh, 1);
    assert_string_equal(str(g, "strategy"), "other");
    assert_null(json_object_get(g, "replicas")); /* GFD's label absent */
    g = json_array_get(sh, 2);
    assert_string_equal(str(g, "strategy"), "time-slicing");
    assert_int_equal(num(g, "replicas"), 2);
    g = json_array_get(sh, 3);
    assert_int_equal(num(g, "replicas"), 4);
    assert_int_equal(num(g, "nodes"), 2);
    assert_string_equal(json_string_value(json_array_get(json_object_get(g, "nodeNames"), 1)),
                        "gpu-c");
    json_decref(st);
    json_t *only = gpuop_status_sharing(&w.f, "gpu-c");
    assert_int_equal(json_array_size(only), 1);
    json_decref(only);
    fx_world_free(&w);

    /* none shares: no sharing at all; more groups than the cap: the first kept */
    world_init(&w);
    for (int i = 0; i < GPUOP_STATUS_SHARING_MAX + 5; i++) {
        char name[32];
        snprintf(name, sizeof(name), "gpu-%02d", i);
        fx_add_node(&w, name, FX_ALL);
        w.nodes[w.nn - 1]->sharing = GPUOP_SHARING_TIME_SLICING;
        w.nodes[w.nn - 1]->replicas = (uint8_t)(i + 1);
    }
    fx_analyze(&w);
    sh = gpuop_status_sharing(&w.f, NULL);
    assert_int_equal(json_array_size(sh), GPUOP_STATUS_SHARING_MAX);
    assert_int_equal(num(json_array_get(sh, 0), "replicas"), 1);
    json_decref(sh);
    fx_world_free(&w);
    world_init(&w);
    fx_add_node(&w, "gpu-x", FX_ALL);
    fx_analyze(&w);
    st = gpuop_status_build(&w.pol, &w.f, NULL, &ok_in, T0);
    assert_null(json_object_get(st, "sharing"));
    json_decref(st);
    fx_world_free(&w);
    (void)state;
}

static void test_cap(void **state)
{
    struct fx_world w;
    world_init(&w);
    for (int i = 0; i < 60; i++) {
        char name[32];
        snprintf(name, sizeof(name), "gpu-%02d", 59 - i);
        fx_add_node_except(&w, name, "driver", NULL); /* driver label absent: NotScheduled */
    }
    fx_analyze(&w);
    json_t *st = gpuop_status_build(&w.pol, &w.f, NULL, &ok_in, T0);
    json_t *nodes = json_object_get(st, "nodes");
    assert_int_equal(json_array_size(nodes), GPUOP_STATUS_MAX_NODES);
    assert_string_equal(str(json_array_get(nodes, 0), "name"), "gpu-00");
    assert_string_equal(str(json_array_get(nodes, 49), "name"), "gpu-49");
    assert_int_equal(num(st, "nodesOmitted"), 10);
    assert_true(json_is_true(json_object_get(json_object_get(st, "summary"), "truncated")));
    assert_int_equal(num(json_object_get(st, "summary"), "gpuNodes"), 60);
    json_decref(st);

    struct gpuop_status_input all = ok_in;
    all.max_nodes = SIZE_MAX;
    st = gpuop_status_build(&w.pol, &w.f, NULL, &all, T0);
    assert_int_equal(json_array_size(json_object_get(st, "nodes")), 60);
    assert_int_equal(num(st, "nodesOmitted"), 0);
    assert_true(json_is_false(json_object_get(json_object_get(st, "summary"), "truncated")));
    json_decref(st);
    fx_world_free(&w);
}

static void test_ignored(void **state)
{
    struct fx_world w;
    world_init(&w);
    struct gpuop_status_input in = {
        .namespace = "gpuop-system", .inactive = true, .active_policy = "oldest"};
    json_t *st = gpuop_status_build(&w.pol, NULL, NULL, &in, T0);
    assert_non_null(st);
    assert_string_equal(str(st, "state"), "ignored");
    assert_string_equal(cstr(st, "Ready", "status"), "False");
    assert_string_equal(cstr(st, "Ready", "reason"), "Ignored");
    assert_non_null(strstr(cstr(st, "Ready", "message"), "\"oldest\" is active"));
    assert_string_equal(cstr(st, "Reconciled", "status"), "Unknown");
    assert_null(json_object_get(st, "nodes"));
    assert_null(json_object_get(st, "operands"));
    assert_null(json_object_get(st, "summary"));
    json_decref(st);
    /* not ignored and no findings: refused */
    in.inactive = false;
    assert_null(gpuop_status_build(&w.pol, NULL, NULL, &in, T0));
    fx_world_free(&w);
}

static void test_reconciled(void **state)
{
    struct fx_world w;
    world_init(&w);
    fx_add_node_except(&w, "gpu-a", NULL, NULL);
    fx_run_all(&w, "gpu-a", NULL);
    fx_analyze(&w);
    /* the toolkit refused, everything that needs it blocked, a spec problem */
    struct gpuop_apply_result ap[GPUOP_OPERAND_MAX] = {{0}};
    for (int o = 0; o < gpuop_operand_count(); o++)
        ap[o] = (struct gpuop_apply_result){.state = GPUOP_APPLY_BLOCKED, .blocked_by = 1};
    ap[0] = (struct gpuop_apply_result){.state = GPUOP_APPLY_CURRENT, .blocked_by = -1};
    ap[1] = (struct gpuop_apply_result){.state = GPUOP_APPLY_FAILED,
                                        .blocked_by = -1,
                                        .reason = "Invalid",
                                        .message = "limits must be >= requests"};
    /* the DRA driver's prerequisite is the driver, not the toolkit */
    ap[gpuop_operand_by_name("dra-driver")] =
        (struct gpuop_apply_result){.state = GPUOP_APPLY_CURRENT, .blocked_by = -1};
    struct gpuop_apply_result sa = {.state = GPUOP_APPLY_CURRENT, .blocked_by = -1};
    struct gpuop_status_input in = {.namespace = "ns", .apply = ap, .sa = &sa};
    w.pol.nproblems = 1;
    snprintf(w.pol.problems[0].field, sizeof(w.pol.problems[0].field),
             "spec.toolkit.resources.limits.bad name!");
    snprintf(w.pol.problems[0].message, sizeof(w.pol.problems[0].message), "not a resource name");
    json_t *st = gpuop_status_build(&w.pol, &w.f, NULL, &in, T0);
    assert_string_equal(cstr(st, "Reconciled", "status"), "False");
    assert_string_equal(cstr(st, "Reconciled", "reason"), "ApplyFailed");
    assert_string_equal(
        cstr(st, "Reconciled", "message"),
        "DaemonSet gpuop-container-toolkit was not applied: limits must be >= requests; "
        "DaemonSet gpuop-device-plugin was not created or changed, because its prerequisite "
        "container-toolkit could not be applied; DaemonSet gpuop-gpu-feature-discovery was not "
        "created or changed, because its prerequisite container-toolkit could not be applied; "
        "DaemonSet gpuop-dcgm was not created or changed, because its prerequisite "
        "container-toolkit could not be applied; DaemonSet gpuop-dcgm-exporter was not created or "
        "changed, because its prerequisite "
        "container-toolkit could not be applied; DaemonSet gpuop-operator-validator was not "
        "created or changed, because its prerequisite container-toolkit could not be applied; "
        "DaemonSet gpuop-mig-manager was not created or changed, because its prerequisite "
        "container-toolkit could not be applied; DaemonSet gpuop-mps-control-daemon was not "
        "created or changed, because its prerequisite container-toolkit could not be applied. "
        "Spec problems: spec.toolkit.resources.limits.bad name!: not a resource name.");
    /* every node complete, yet not Ready: five DaemonSets are not on the spec */
    assert_string_equal(str(st, "state"), "notReady");
    assert_string_equal(cstr(st, "Ready", "status"), "False");
    assert_string_equal(cstr(st, "Ready", "reason"), "OperandsNotApplied");
    assert_non_null(strstr(cstr(st, "Ready", "message"), "container-toolkit, device-plugin"));
    json_t *ops = json_object_get(st, "operands");
    assert_string_equal(str(json_array_get(ops, 0), "apply"), "Current");
    assert_null(json_object_get(json_array_get(ops, 0), "applyMessage"));
    assert_string_equal(str(json_array_get(ops, 1), "apply"), "Failed");
    assert_non_null(strstr(str(json_array_get(ops, 1), "applyMessage"), "limits must be"));
    assert_string_equal(str(json_array_get(ops, 2), "apply"), "Blocked");
    json_decref(st);
    /* the same facts, the same status (the message is stable) */
    json_t *a = gpuop_status_build(&w.pol, &w.f, NULL, &in, T0);
    json_t *b = gpuop_status_build(&w.pol, &w.f, NULL, &in, T0);
    assert_true(json_equal(a, b));
    json_decref(a);
    json_decref(b);
    /* the ServiceAccount refused: said beside the rest */
    for (int o = 0; o < gpuop_operand_count(); o++)
        ap[o] = (struct gpuop_apply_result){.state = GPUOP_APPLY_CURRENT, .blocked_by = -1};
    sa = (struct gpuop_apply_result){
        .state = GPUOP_APPLY_FAILED, .blocked_by = -1, .message = "exceeded quota"};
    w.pol.nproblems = 0;
    st = gpuop_status_build(&w.pol, &w.f, NULL, &in, T0);
    assert_string_equal(cstr(st, "Reconciled", "message"),
                        "ServiceAccount gpuop-operand was not applied: exceeded quota.");
    assert_string_equal(str(st, "state"), "ready"); /* its DaemonSets are on the spec */
    json_decref(st);

    /* policy problems without an API error: InvalidSpec naming the field */
    w.pol.nproblems = 3;
    snprintf(w.pol.problems[0].field, sizeof(w.pol.problems[0].field),
             "spec.driver.imagePullPolicy");
    snprintf(w.pol.problems[0].message, sizeof(w.pol.problems[0].message),
             "must be Always, IfNotPresent or Never; using IfNotPresent");
    st = gpuop_status_build(&w.pol, &w.f, NULL, &ok_in, T0);
    assert_string_equal(cstr(st, "Reconciled", "reason"), "InvalidSpec");
    assert_string_equal(cstr(st, "Reconciled", "message"),
                        "spec.driver.imagePullPolicy: must be Always, IfNotPresent or Never; "
                        "using IfNotPresent (and 2 more problems)");
    json_decref(st);
    /* NULL input: defaults to reconciled, no namespace */
    w.pol.nproblems = 0;
    st = gpuop_status_build(NULL, &w.f, NULL, NULL, T0);
    assert_string_equal(cstr(st, "Reconciled", "status"), "True");
    assert_int_equal(num(st, "observedGeneration"), 0);
    json_decref(st);
    fx_world_free(&w);
}

static void test_time_format(void **state)
{
    char buf[GPUOP_TIME_MAX]; /* the formatter itself: test_clock */
    gpuop_time_format(buf, sizeof(buf), T0 * GPUOP_US_PER_S, GPUOP_TIME_S);
    assert_string_equal(buf, "2026-11-29T21:06:40Z");
    assert_int_equal(gpuop_parse_time("2026-11-29T21:06:40Z"), T0);
}

/* ServiceMonitor (spec.dcgmExporter.serviceMonitor): said only while it is
 * wanted and gpuop applies (not by gpuop check); False with CRDNotInstalled
 * while its CRD is missing, and Reconciled stays True; each change is
 * another document. */
static void test_service_monitor(void **state)
{
    (void)state;
    struct fx_world w;
    world_init(&w);
    fx_add_node_except(&w, "gpu-a", NULL, NULL);
    fx_run_all(&w, "gpu-a", NULL);
    fx_analyze(&w);
    struct gpuop_apply_result ap[GPUOP_OPERAND_MAX] = {{0}};
    for (int o = 0; o < gpuop_operand_count(); o++)
        ap[o] = (struct gpuop_apply_result){.state = GPUOP_APPLY_CURRENT, .blocked_by = -1};
    struct gpuop_status_input in = {.namespace = "ns", .apply = ap};
    json_t *st = gpuop_status_build(&w.pol, &w.f, NULL, &in, T0);
    assert_null(find_cond(st, "ServiceMonitor")); /* not asked for */
    json_t *st0 = st;

    w.pol.service_monitor = json_object();
    int sm = -1;
    for (int i = 0; i < gpuop_render_extra_count(); i++)
        if (gpuop_render_extra_get(i)->crd &&
            !strcmp(gpuop_render_extra_get(i)->kind, "ServiceMonitor"))
            sm = i;
    assert_true(sm >= 0);
    in.absent_crds = 1u << sm;
    st = gpuop_status_build(&w.pol, &w.f, NULL, &in, T0);
    assert_string_equal(cstr(st, "ServiceMonitor", "status"), "False");
    assert_string_equal(cstr(st, "ServiceMonitor", "reason"), "CRDNotInstalled");
    assert_non_null(
        strstr(cstr(st, "ServiceMonitor", "message"), "servicemonitors.monitoring.coreos.com"));
    assert_string_equal(cstr(st, "Reconciled", "status"), "True");
    assert_string_equal(str(st, "state"), "ready"); /* not a reason to be not ready */
    json_t *st1 = st;

    in.absent_crds = 0; /* the CRD installed, the ServiceMonitor applied */
    st = gpuop_status_build(&w.pol, &w.f, NULL, &in, T0);
    assert_string_equal(cstr(st, "ServiceMonitor", "status"), "True");
    assert_string_equal(cstr(st, "ServiceMonitor", "reason"), "Applied");
    /* each change is a different document: the controller writes it */
    assert_false(json_equal(st0, st1) || json_equal(st1, st) || json_equal(st0, st));
    json_decref(st0);
    json_decref(st1);
    json_decref(st);

    in.apply = NULL; /* gpuop check: nothing applied, nothing said */
    st = gpuop_status_build(&w.pol, &w.f, NULL, &in, T0);
    assert_null(find_cond(st, "ServiceMonitor"));
    json_decref(st);
    w.pol.operands[gpuop_operand_by_name("dcgm-exporter")].enabled = false;
    in.apply = ap;
    st = gpuop_status_build(&w.pol, &w.f, NULL, &in, T0);
    assert_null(find_cond(st, "ServiceMonitor")); /* no exporter: no ServiceMonitor */
    json_decref(st);
    json_decref(w.pol.service_monitor);
    w.pol.service_monitor = NULL;
    fx_world_free(&w);
}

/* DeviceClasses (spec.draDriver): said only while the DRA driver is
 * enabled, not held, and gpuop applies; False with APINotServed while the
 * API server does not serve resource.k8s.io/v1 (any DeviceClass extra
 * absent), Reconciled and the state unaffected; True once applied. */
static void test_device_classes(void **state)
{
    (void)state;
    struct fx_world w;
    world_init(&w);
    int dra = gpuop_operand_by_name("dra-driver");
    fx_add_node_except(&w, "gpu-a", NULL, NULL);
    fx_run_all(&w, "gpu-a", NULL);
    fx_analyze(&w);
    struct gpuop_apply_result ap[GPUOP_OPERAND_MAX] = {{0}};
    for (int o = 0; o < gpuop_operand_count(); o++)
        ap[o] = (struct gpuop_apply_result){.state = GPUOP_APPLY_CURRENT, .blocked_by = -1};
    struct gpuop_status_input in = {.namespace = "ns", .apply = ap};
    unsigned classes = 0;
    for (int i = 0; i < gpuop_render_extra_count(); i++)
        if (!strcmp(gpuop_render_extra_get(i)->kind, "DeviceClass"))
            classes |= 1u << i;
    assert_int_equal(__builtin_popcount(classes), 3); /* gpu, mig, vfio */

    in.absent_crds = classes; /* resource.k8s.io/v1 not served */
    json_t *st = gpuop_status_build(&w.pol, &w.f, NULL, &in, T0);
    assert_string_equal(cstr(st, "DeviceClasses", "status"), "False");
    assert_string_equal(cstr(st, "DeviceClasses", "reason"), "APINotServed");
    assert_non_null(strstr(cstr(st, "DeviceClasses", "message"), "resource.k8s.io/v1"));
    assert_string_equal(cstr(st, "Reconciled", "status"), "True");
    assert_string_equal(str(st, "state"), "ready");
    json_decref(st);

    in.absent_crds = 0;
    st = gpuop_status_build(&w.pol, &w.f, NULL, &in, T0);
    assert_string_equal(cstr(st, "DeviceClasses", "status"), "True");
    assert_string_equal(cstr(st, "DeviceClasses", "reason"), "Applied");
    json_decref(st);

    w.pol.operands[dra].hold_absent = true; /* a problem in spec.draDriver: held */
    st = gpuop_status_build(&w.pol, &w.f, NULL, &in, T0);
    assert_null(find_cond(st, "DeviceClasses"));
    json_decref(st);
    w.pol.operands[dra].hold_absent = false;
    in.apply = NULL; /* gpuop check: nothing said */
    st = gpuop_status_build(&w.pol, &w.f, NULL, &in, T0);
    assert_null(find_cond(st, "DeviceClasses"));
    json_decref(st);
    w.pol.operands[dra].enabled = false;
    in.apply = ap;
    st = gpuop_status_build(&w.pol, &w.f, NULL, &in, T0);
    assert_null(find_cond(st, "DeviceClasses"));
    assert_null(find_cond(st, "DraPluginDeletion")); /* nothing waits */
    json_decref(st);

    /* switched off while a pod holds a claim on a plugin's node: the
       plugin's deletion waits, the condition says for what; the other
       conditions as before */
    in.dra_waiting = "spec.draDriver is disabled: ... 1 pod(s) on its 1 node(s) still do: "
                     "wl/holder on gpu-a.";
    st = gpuop_status_build(&w.pol, &w.f, NULL, &in, T0);
    assert_string_equal(cstr(st, "DraPluginDeletion", "status"), "False");
    assert_string_equal(cstr(st, "DraPluginDeletion", "reason"), "WaitingForClaims");
    assert_non_null(strstr(cstr(st, "DraPluginDeletion", "message"), "wl/holder on gpu-a"));
    assert_string_equal(cstr(st, "Reconciled", "status"), "True");
    json_decref(st);
    in.dra_waiting = "";
    st = gpuop_status_build(&w.pol, &w.f, NULL, &in, T0);
    assert_null(find_cond(st, "DraPluginDeletion"));
    json_decref(st);
    fx_world_free(&w);
}

/* A GPU node labelled with driver pool dpool (NULL: none). */
static struct gpuop_node *pool_node(const char *name, const char *dpool, bool gpu)
{
    json_t *labels = json_pack("{s:s}", "nvidia.com/gpu.present", gpu ? "true" : "false");
    if (dpool)
        json_object_set_new(labels, "gpuop.dev/driver-pool", json_string(dpool));
    json_t *obj = json_pack("{s:{s:s, s:o}}", "metadata", "name", name, "labels", labels);
    struct gpuop_err err = {0};
    struct gpuop_node *n = gpuop_node_new(obj, NULL, &err);
    json_decref(obj);
    assert_non_null(n);
    return n;
}

/* Driver pools (SPEC 4f): each pool's version and GPU nodes, the default
 * last with the nodes no pool has; names only when asked; none without pools. */
static void test_driver_pools(void **state)
{
    json_t *obj = json_loads("{\"spec\":{\"driver\":{\"version\":\"595.91.07\",\"pools\":["
                             "{\"name\":\"a100\",\"version\":\"580.95.05\"}]}}}",
                             0, NULL);
    struct gpuop_policy p;
    struct gpuop_err err = {0};
    assert_int_equal(gpuop_policy_parse(obj, &p, &err), 0);
    struct gpuop_node *n[4] = {pool_node("a", "a100", true), pool_node("b", NULL, true),
                               pool_node("c", "retired", true), pool_node("x", "a100", false)};
    json_t *pools = gpuop_status_driver_pools(&p, (const struct gpuop_node *const *)n, 4, true);
    char *s = json_dumps(pools, JSON_COMPACT);
    assert_string_equal(s, "[{\"name\":\"a100\",\"version\":\"580.95.05\",\"nodes\":1,"
                           "\"nodeNames\":[\"a\"]},{\"name\":\"default\",\"version\":"
                           "\"595.91.07\",\"nodes\":2,\"nodeNames\":[\"b\",\"c\"]}]");
    free(s);
    json_decref(pools);
    pools = gpuop_status_driver_pools(&p, (const struct gpuop_node *const *)n, 4, false);
    assert_null(json_object_get(json_array_get(pools, 0), "nodeNames"));
    json_decref(pools);
    gpuop_policy_free(&p);
    json_decref(obj);
    obj = json_loads("{\"spec\":{}}", 0, NULL);
    assert_int_equal(gpuop_policy_parse(obj, &p, &err), 0);
    assert_null(gpuop_status_driver_pools(&p, (const struct gpuop_node *const *)n, 4, true));
    /* a100 removed but draining: listed with its nodes left, in the status too */
    snprintf(p.draining_pools[0], sizeof(p.draining_pools[0]), "a100");
    p.ndraining_pools = 1;
    pools = gpuop_status_driver_pools(&p, (const struct gpuop_node *const *)n, 4, false);
    s = json_dumps(pools, JSON_COMPACT);
    assert_string_equal(s, "[{\"name\":\"a100\",\"version\":\"\",\"draining\":true,\"nodes\":1,"
                           "\"nodeNames\":[\"a\"]},{\"name\":\"default\",\"version\":"
                           "\"595.91.07\",\"nodes\":2}]");
    free(s);
    json_decref(pools);
    gpuop_policy_free(&p);
    json_decref(obj);
    for (int i = 0; i < 4; i++)
        gpuop_node_free(n[i]);
    (void)state;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ready),
        cmocka_unit_test(test_no_gpu_nodes),
        cmocka_unit_test(test_findings),
        cmocka_unit_test(test_empty_lists),
        cmocka_unit_test(test_transition_times),
        cmocka_unit_test(test_cap),
        cmocka_unit_test(test_sharing),
        cmocka_unit_test(test_stranded),
        cmocka_unit_test(test_ignored),
        cmocka_unit_test(test_reconciled),
        cmocka_unit_test(test_device_classes),
        cmocka_unit_test(test_time_format),
        cmocka_unit_test(test_service_monitor),
        cmocka_unit_test(test_driver_pools),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
