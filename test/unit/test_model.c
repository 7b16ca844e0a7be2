/*
 * test_model.c - Kubernetes JSON -> model structs, toleration matching,
 * RFC 3339 parsing. Real-looking objects live in test/data/analysis/;
 * garbage is inline: every wrong type must be survived, not crashed on.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpuop/analysis.h"
#include "gpuop/model.h"
#include "gpuop/ospool.h"

static json_t *load(const char *name)
{
    char path[512];
    json_error_t e;
    snprintf(path, sizeof(path), "%s/analysis/%s", TESTDATA, name);
    json_t *j = json_load_file(path, 0, &e);
    if (!j)
        fail_msg("%s: %s", path, e.text);
    return j;
}

/* The MPS control daemon has no deploy label of its own (operand.h follow
 * rows): it is for a node where the device plugin's label is "true" and
 * GFD's nvidia.com/mps.capable is "true", host-provided where the device
 * plugin is, and not for any other node; a label of its name is ignored. */
static struct gpuop_node *labelled(const char *dp, const char *capable, const char *own)
{
    json_t *labels = json_pack("{s:s}", "nvidia.com/gpu.present", "true");
    if (dp)
        json_object_set_new(labels, "nvidia.com/gpu.deploy.device-plugin", json_string(dp));
    if (capable)
        json_object_set_new(labels, "nvidia.com/mps.capable", json_string(capable));
    if (own)
        json_object_set_new(labels, "nvidia.com/gpu.deploy.mps-control-daemon", json_string(own));
    json_t *j = json_pack("{s:{s:s, s:o}}", "metadata", "name", "n", "labels", labels);
    struct gpuop_node *n = gpuop_node_new(j, NULL, NULL);
    json_decref(j);
    assert_non_null(n);
    return n;
}

static void test_node_mps(void **state)
{
    int mps = gpuop_operand_by_name("mps-control-daemon");
    assert_true(mps >= 0);
    static const struct {
        const char *dp, *capable, *own;
        int want;
    } cases[] = {
        {"true", "true", NULL, GPUOP_LABEL_TRUE},
        {"true", "false", NULL, GPUOP_LABEL_NOT_HERE},
        {"true", NULL, NULL, GPUOP_LABEL_NOT_HERE},
        {"true", NULL, "true", GPUOP_LABEL_NOT_HERE}, /* its own name is no label */
        {NULL, "true", NULL, GPUOP_LABEL_NOT_HERE},
        {"paused-for-driver-upgrade", "true", NULL, GPUOP_LABEL_NOT_HERE},
        {"false", "true", NULL, GPUOP_LABEL_FALSE},
        {"pre-installed", NULL, NULL, GPUOP_LABEL_PREINSTALLED},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct gpuop_node *n = labelled(cases[i].dp, cases[i].capable, cases[i].own);
        if (n->deploy[mps] != cases[i].want)
            fail_msg("case %zu (device-plugin=%s, mps.capable=%s): %d, want %d", i,
                     cases[i].dp ? cases[i].dp : "-", cases[i].capable ? cases[i].capable : "-",
                     n->deploy[mps], cases[i].want);
        if (cases[i].want != GPUOP_LABEL_PREINSTALLED) /* no value kept of its own */
            assert_null(gpuop_node_deploy_value(n, mps));
        gpuop_node_free(n);
    }
}

/* GPU sharing's labels (sharing.h): the config label's value kept after
 * the struct (cut at a label value's 63 bytes, and marked so), GFD's
 * strategy and replicas; each compared by gpuop_node_equal. */
static struct gpuop_node *shared(const char *name, const char *cfg, const char *strategy,
                                 const char *replicas, const char *taint)
{
    json_t *labels = json_pack("{s:s}", "nvidia.com/gpu.present", "true");
    if (cfg)
        json_object_set_new(labels, GPUOP_LABEL_PLUGIN_CONFIG, json_string(cfg));
    if (strategy)
        json_object_set_new(labels, GPUOP_LABEL_SHARING_STRATEGY, json_string(strategy));
    if (replicas)
        json_object_set_new(labels, GPUOP_LABEL_GPU_REPLICAS, json_string(replicas));
    json_t *j = json_pack("{s:{s:s, s:o}}", "metadata", "name", name, "labels", labels);
    if (taint)
        json_object_set_new(
            j, "spec",
            json_pack("{s:[{s:s, s:s}]}", "taints", "key", taint, "effect", "NoSchedule"));
    struct gpuop_node *n = gpuop_node_new(j, NULL, NULL);
    json_decref(j);
    assert_non_null(n);
    return n;
}

/* The caches' stamps of a ConfigMap's keys (sharing.h): a key whose
 * config is the same keeps its time, a changed or new one gets now; two
 * reads of the same ConfigMap are the same up to the stamps. */
static void test_sharing_cm_stamp(void **state)
{
    struct gpuop_sharing_cm *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
    assert_non_null(a);
    assert_non_null(b);
    const char *ts4 = "{\"default\": \"version: v1\", \"ts\": \"sharing: {timeSlicing: "
                      "{resources: [{name: nvidia.com/gpu, replicas: 4}]}}\"}";
    const char *ts8 = "{\"default\": \"version: v1\", \"ts\": \"sharing: {timeSlicing: "
                      "{resources: [{name: nvidia.com/gpu, replicas: 8}]}}\", \"new\": \"\"}";
    json_t *cm = json_pack("{s:o}", "data", json_loads(ts4, 0, NULL));
    assert_int_equal(gpuop_sharing_cm_read(cm, "cm", a), 0);
    gpuop_sharing_cm_stamp(a, NULL, 100);
    assert_int_equal(a->since[0], 100);
    assert_int_equal(a->since[1], 100);
    assert_int_equal(gpuop_sharing_cm_read(cm, "cm", b), 0);
    assert_memory_equal(a, b, GPUOP_SHARING_CM_READ_BYTES); /* the caches' "same" */
    json_decref(cm);
    char key[GPUOP_SHARING_CM_NAME_MAX + 1];
    gpuop_sharing_cm_key(a, 1, key);
    assert_string_equal(key, "ts");
    gpuop_sharing_cm_key(a, 2, key);
    assert_string_equal(key, "");

    cm = json_pack("{s:o}", "data", json_loads(ts8, 0, NULL));
    assert_int_equal(gpuop_sharing_cm_read(cm, "cm", b), 0);
    json_decref(cm);
    gpuop_sharing_cm_stamp(b, a, 200);
    assert_int_equal(gpuop_sharing_cm_index(b, "default"), 0);
    assert_int_equal(b->since[0], 100); /* the same config */
    assert_int_equal(gpuop_sharing_cm_index(b, "new"), 1);
    assert_int_equal(b->since[1], 200); /* new */
    assert_int_equal(gpuop_sharing_cm_index(b, "ts"), 2);
    assert_int_equal(b->since[2], 200); /* 4 replicas to 8 */
    assert_int_equal(b->conf[2].replicas, 8);
    free(a);
    free(b);
    (void)state;
}

static void test_node_sharing(void **state)
{
    _Static_assert(sizeof(struct gpuop_node) == 96,
                   "sharing and the DRA fold take the 8 bytes the struct grew by (the sharing "
                   "stamp the 4 bytes created gave back)");
    struct gpuop_node *a = shared("a", "ts-4", "time-slicing", "4", "t");
    assert_string_equal(gpuop_node_plugin_config(a), "ts-4");
    assert_false(a->config_long);
    assert_int_equal(a->sharing, GPUOP_SHARING_TIME_SLICING);
    assert_int_equal(a->replicas, 4);
    assert_string_equal(a->name, "a"); /* the strings around it whole */
    assert_string_equal(a->taints[0].key, "t");

    struct gpuop_node *b = shared("a", "ts-8", "time-slicing", "4", "t");
    assert_false(gpuop_node_equal(a, b));
    gpuop_node_free(b);
    b = shared("a", "ts-4", "mps", "4", "t");
    assert_false(gpuop_node_equal(a, b));
    gpuop_node_free(b);
    b = shared("a", "ts-4", "time-slicing", "2", "t");
    assert_false(gpuop_node_equal(a, b));
    gpuop_node_free(b);
    b = shared("a", "ts-4", "time-slicing", "4", "t");
    assert_true(gpuop_node_equal(a, b));
    assert_true(gpuop_node_sharing_equal(a, b));
    gpuop_node_free(b);
    b = shared("a", "ts-4", "time-slicing", "4", NULL); /* another taint: same sharing */
    assert_false(gpuop_node_equal(a, b));
    assert_true(gpuop_node_sharing_equal(a, b));
    gpuop_node_free(b);
    b = shared("a", "ts-8", "time-slicing", "4", "t");
    assert_false(gpuop_node_sharing_equal(a, b));
    gpuop_node_free(b);
    b = shared("a", "ts-4", "time-slicing", "8", "t");
    assert_false(gpuop_node_sharing_equal(a, b));
    gpuop_node_free(b);

    /* none, "" (the default's), unreadable GFD labels */
    b = shared("b", "", "none", "x", NULL);
    assert_null(gpuop_node_plugin_config(b));
    assert_int_equal(b->sharing, GPUOP_SHARING_NONE);
    assert_int_equal(b->replicas, 0);
    assert_false(gpuop_node_equal(a, b));
    gpuop_node_free(b);
    b = shared("b", NULL, "spatial", "100000", NULL);
    assert_int_equal(b->gpu_count, 0);
    assert_null(gpuop_node_plugin_config(b));
    assert_int_equal(b->sharing, GPUOP_SHARING_OTHER);
    assert_int_equal(b->replicas, GPUOP_SHARING_REPLICAS_MAX);
    gpuop_node_free(b);

    /* an over-long value: cut at 63 bytes, marked */
    char longv[300];
    memset(longv, 'k', sizeof(longv) - 1);
    longv[sizeof(longv) - 1] = '\0';
    b = shared("b", longv, NULL, NULL, "t");
    assert_true(b->config_long);
    assert_int_equal(strlen(gpuop_node_plugin_config(b)), GPUOP_SHARING_CONFIG_MAX);
    assert_string_equal(b->taints[0].key, "t");
    struct gpuop_node *c = shared("b", longv, NULL, NULL, "t");
    assert_true(gpuop_node_equal(b, c));
    gpuop_node_free(c);
    longv[GPUOP_SHARING_CONFIG_MAX] = '\0'; /* the cut itself, not marked */
    c = shared("b", longv, NULL, NULL, "t");
    assert_false(c->config_long);
    assert_false(gpuop_node_equal(b, c));
    gpuop_node_free(c);
    gpuop_node_free(b);
    gpuop_node_free(a);
    (void)state;
}

static void test_node_gpu(void **state)
{
    json_t *j = load("node-gpu.json");
    struct gpuop_node *n;
    struct gpuop_err err = {0};
    int drv = gpuop_operand_by_name("driver"), tk = gpuop_operand_by_name("container-toolkit");
    int dp = gpuop_operand_by_name("device-plugin"),
        gfd = gpuop_operand_by_name("gpu-feature-discovery");
    int dcgm = gpuop_operand_by_name("dcgm-exporter");

    assert_non_null(n = gpuop_node_new(j, NULL, &err));
    assert_string_equal(n->name, "gpu-node-1");
    assert_true(n->gpu);
    assert_int_equal(n->operands_label, GPUOP_LABEL_TRUE);
    assert_int_equal(n->deploy[drv], GPUOP_LABEL_TRUE);
    assert_null(gpuop_node_deploy_value(n, drv));
    assert_int_equal(n->deploy[tk], GPUOP_LABEL_FALSE);
    assert_int_equal(n->deploy[dp], GPUOP_LABEL_OTHER);
    assert_string_equal(gpuop_node_deploy_value(n, dp), "paused-for-upgrade");
    assert_int_equal(n->deploy[gfd], GPUOP_LABEL_OTHER);
    assert_string_equal(gpuop_node_deploy_value(n, gfd), "");
    assert_int_equal(n->deploy[dcgm], GPUOP_LABEL_ABSENT);
    assert_int_equal(n->created, gpuop_parse_time("2026-11-29T21:06:40Z"));
    /* PreferNoSchedule, key-less and non-object taints are dropped */
    assert_int_equal(n->ntaints, 2);
    assert_string_equal(n->taints[0].key, "nvidia.com/gpu");
    assert_string_equal(n->taints[0].value, "present");
    assert_string_equal(n->taints[0].effect, "NoSchedule");
    assert_string_equal(n->taints[1].key, "node.kubernetes.io/unreachable");
    assert_null(n->taints[1].value);
    assert_string_equal(n->taints[1].effect, "NoExecute");
    /* what it advertises: nvidia.com/gpu, the MIG slices summed */
    assert_int_equal(n->gpus.capacity, 8);
    assert_int_equal(n->gpus.allocatable, 6);
    assert_int_equal(n->gpus.mig_capacity, 16);
    assert_int_equal(n->gpus.mig_allocatable, 8);
    assert_int_equal(n->shared.capacity, 0);
    assert_int_equal(n->shared.allocatable, 0);
    /* nvidia.com/gpu.shared (renameByDefault) kept beside it, saturating */
    json_t *st = json_object_get(j, "status");
    json_object_set_new(json_object_get(st, "capacity"), "nvidia.com/gpu.shared",
                        json_string("99999"));
    json_object_set_new(json_object_get(st, "allocatable"), "nvidia.com/gpu.shared",
                        json_string("32"));
    struct gpuop_node *m;
    assert_non_null(m = gpuop_node_new(j, NULL, &err));
    assert_int_equal(m->shared.capacity, UINT16_MAX);
    assert_int_equal(m->shared.allocatable, 32);
    assert_int_equal(m->gpus.allocatable, 6);
    assert_false(gpuop_node_equal(n, m));
    gpuop_node_free(m);
    gpuop_node_free(n);
    json_decref(j);
}

/* NFD's OS labels (SPEC 4b): kept, compared, and made into an OS pool. */
static void test_node_os(void **state)
{
    struct gpuop_node *a, *b, *c;
    struct gpuop_ospool pool;
    unsigned lack = 0;
    json_t *j = json_pack("{s:{s:s, s:{s:s, s:s, s:s, s:s}}}", "metadata", "name", "r", "labels",
                          "nvidia.com/gpu.present", "true", GPUOP_LABEL_OS_ID, "rhel",
                          GPUOP_LABEL_OS_VERSION, "9.4", GPUOP_LABEL_OS_MAJOR, "9");
    assert_non_null(a = gpuop_node_new(j, NULL, NULL));
    assert_string_equal(gpuop_node_os(a, GPUOP_OS_ID), "rhel");
    assert_string_equal(gpuop_node_os(a, GPUOP_OS_VERSION), "9.4");
    assert_string_equal(gpuop_node_os(a, GPUOP_OS_MAJOR), "9");
    assert_int_equal(gpuop_ospool_of_node(a, &pool, &lack), 0);
    assert_string_equal(pool.tag, "rhel9"); /* only the major version for rhel */
    assert_true(pool.major_only);
    /* another value: not equal (the driver's pool changes) */
    json_object_set_new(json_object_get(json_object_get(j, "metadata"), "labels"),
                        GPUOP_LABEL_OS_VERSION, json_string("9.6"));
    assert_non_null(b = gpuop_node_new(j, NULL, NULL));
    assert_false(gpuop_node_equal(a, b));
    /* without the labels: none kept, the pool says what is missing */
    json_t *k = json_pack("{s:{s:s, s:{s:s, s:s}}}", "metadata", "name", "u", "labels",
                          "nvidia.com/gpu.present", "true", GPUOP_LABEL_OS_ID, "ubuntu");
    assert_non_null(c = gpuop_node_new(k, NULL, NULL));
    assert_null(gpuop_node_os(c, GPUOP_OS_VERSION));
    assert_int_equal(gpuop_ospool_of_node(c, &pool, &lack), GPUOP_ENOTFOUND);
    assert_int_equal(lack, GPUOP_OS_HAS(GPUOP_OS_VERSION));
    char text[256];
    gpuop_ospool_missing_text(GPUOP_OS_HAS(GPUOP_OS_ID) | GPUOP_OS_HAS(GPUOP_OS_VERSION), text,
                              sizeof(text));
    assert_string_equal(text, GPUOP_LABEL_OS_ID " and " GPUOP_LABEL_OS_VERSION);
    /* ubuntu keeps the whole VERSION_ID and needs no .major */
    json_object_set_new(json_object_get(json_object_get(k, "metadata"), "labels"),
                        GPUOP_LABEL_OS_VERSION, json_string("24.04"));
    gpuop_node_free(c);
    assert_non_null(c = gpuop_node_new(k, NULL, NULL));
    assert_int_equal(gpuop_ospool_of_node(c, &pool, &lack), 0);
    assert_string_equal(pool.tag, "ubuntu24.04");
    assert_false(pool.major_only);
    /* a major label that disagrees with VERSION_ID makes no pool */
    json_object_set_new(json_object_get(json_object_get(j, "metadata"), "labels"),
                        GPUOP_LABEL_OS_MAJOR, json_string("8"));
    gpuop_node_free(b);
    assert_non_null(b = gpuop_node_new(j, NULL, NULL));
    assert_int_equal(gpuop_ospool_of_node(b, &pool, &lack), GPUOP_EINVAL);
    /* the pools of a set of nodes, sorted, each once */
    const struct gpuop_node *all[] = {c, a, b, a};
    struct gpuop_ospool set[4];
    assert_int_equal(gpuop_ospool_collect(all, 4, false, set, 4, NULL), 2);
    assert_string_equal(set[0].tag, "rhel9");
    assert_string_equal(set[1].tag, "ubuntu24.04");
    /* two of the same OS after one another make the same pool, and the
     * memo says so; full, the second node of a pool that did not fit is
     * dropped too */
    size_t dropped = 0;
    const struct gpuop_node *two[] = {a, a, c, c};
    assert_int_equal(gpuop_ospool_collect(two, 4, false, set, 1, &dropped), 1);
    assert_int_equal(dropped, 2);
    /* the memo: every order of these nodes (a rhel9, b a bad major, c
     * ubuntu, d without VERSION_ID) gives what the plain call does */
    json_t *dj = json_pack("{s:{s:s, s:{s:s, s:s}}}", "metadata", "name", "d", "labels",
                           "nvidia.com/gpu.present", "true", GPUOP_LABEL_OS_ID, "ubuntu");
    struct gpuop_node *d = gpuop_node_new(dj, NULL, NULL);
    assert_non_null(d);
    const struct gpuop_node *nodes[] = {a, b, c, d};
    for (int seq = 0; seq < 256; seq++) { /* four picks of two bits */
        struct gpuop_ospool_memo memo = {0};
        const struct gpuop_node *last = NULL;
        for (int pick = 0; pick < 4; pick++) {
            const struct gpuop_node *n = nodes[(seq >> (2 * pick)) & 3];
            struct gpuop_ospool want, got;
            unsigned lw = 0, lg = 0;
            bool hit;
            int rw = gpuop_ospool_of_node(n, &want, &lw);
            assert_int_equal(gpuop_ospool_of_node_memo(n, &memo, &got, &lg, &hit), rw);
            assert_int_equal(lg, lw);
            assert_memory_equal(&got, &want, sizeof(want));
            assert_int_equal(hit, last == n);
            last = n;
        }
    }
    gpuop_node_free(d);
    json_decref(dj);
    gpuop_node_free(a);
    gpuop_node_free(b);
    gpuop_node_free(c);
    json_decref(j);
    json_decref(k);
}

static void test_node_kinds(void **state)
{
    struct gpuop_node *n;
    json_t *j = load("node-plain.json");
    assert_non_null(n = gpuop_node_new(j, NULL, NULL));
    assert_false(n->gpu); /* gpu.present=false is not a GPU node */
    assert_int_equal(n->ntaints, 0);
    /* +01:00 offset: 20:06:40Z */
    assert_int_equal(n->created, gpuop_parse_time("2026-11-29T20:06:40Z"));
    gpuop_node_free(n);
    json_decref(j);

    j = load("node-nfd.json");
    assert_non_null(n = gpuop_node_new(j, NULL, NULL));
    assert_true(n->gpu);
    gpuop_node_free(n);
    json_decref(j);

    /* only a deploy label for an operand gpuop does not know: still a GPU node */
    j = json_pack("{s:{s:s, s:{s:s}}}", "metadata", "name", "x", "labels",
                  "nvidia.com/gpu.deploy.mig-manager", "false");
    assert_non_null(n = gpuop_node_new(j, NULL, NULL));
    assert_true(n->gpu);
    gpuop_node_free(n);
    json_decref(j);

    /* "pre-installed" (NVIDIA's driver container found a host driver) is
       its own state on an operand's label, with its value; on gpu.present
       and deploy.operands it is any other value */
    j = json_pack("{s:{s:s, s:{s:s, s:s, s:s, s:s, s:s}}}", "metadata", "name", "x", "labels",
                  "nvidia.com/gpu.deploy.driver", "pre-installed",
                  "nvidia.com/gpu.deploy.container-toolkit", "Pre-installed",
                  "nvidia.com/gpu.deploy.device-plugin", "pre-installed ",
                  "nvidia.com/gpu.deploy.operands", "pre-installed", "nvidia.com/gpu.present",
                  "pre-installed");
    assert_non_null(n = gpuop_node_new(j, NULL, NULL));
    int drv = gpuop_operand_by_name("driver"), tk = gpuop_operand_by_name("container-toolkit");
    int dp = gpuop_operand_by_name("device-plugin");
    assert_int_equal(n->deploy[drv], GPUOP_LABEL_PREINSTALLED);
    assert_true(gpuop_label_host_provided(n->deploy[drv]));
    assert_string_equal(gpuop_node_deploy_value(n, drv), "pre-installed");
    assert_int_equal(n->deploy[tk], GPUOP_LABEL_OTHER); /* exactly, case included */
    assert_string_equal(gpuop_node_deploy_value(n, tk), "Pre-installed");
    assert_false(gpuop_label_host_provided(n->deploy[tk]));
    assert_int_equal(n->deploy[dp], GPUOP_LABEL_OTHER);
    assert_int_equal(n->operands_label, GPUOP_LABEL_OTHER);
    assert_int_equal(n->present_label, GPUOP_LABEL_OTHER);
    assert_true(gpuop_label_host_provided(GPUOP_LABEL_FALSE));
    assert_false(gpuop_label_host_provided(GPUOP_LABEL_TRUE));
    assert_false(gpuop_label_host_provided(GPUOP_LABEL_ABSENT));
    gpuop_node_free(n);
    json_decref(j);

    /* a non-string deploy label value is "other" with value "" */
    j = json_pack("{s:{s:s, s:{s:i}}}", "metadata", "name", "x", "labels",
                  "nvidia.com/gpu.deploy.driver", 1);
    assert_non_null(n = gpuop_node_new(j, NULL, NULL));
    assert_int_equal(n->deploy[0], GPUOP_LABEL_OTHER);
    assert_string_equal(gpuop_node_deploy_value(n, 0), "");
    gpuop_node_free(n);
    json_decref(j);
}

static void test_pod_crashloop(void **state)
{
    json_t *j = load("pod-crashloop.json");
    struct gpuop_pod *p;
    assert_non_null(p = gpuop_pod_new(j, NULL, NULL));
    assert_string_equal(p->name, "gpuop-driver-x7k2p");
    assert_int_equal(p->operand, gpuop_operand_by_name("driver"));
    assert_string_equal(p->node, "gpu-node-1");
    assert_true(p->bound);
    assert_int_equal(p->phase, GPUOP_PHASE_RUNNING);
    assert_int_equal(p->ready_since, 0);
    assert_int_equal(p->deleted, 0);
    assert_string_equal(p->waiting_reason, "CrashLoopBackOff");
    assert_non_null(strstr(p->waiting_message, "back-off 2m40s"));
    assert_int_equal(p->restarts, 6); /* init 1 + 0 + 5 */
    assert_int_equal(p->created, gpuop_parse_time("2026-11-30T08:00:00Z"));
    gpuop_pod_free(p);
    json_decref(j);
}

static void test_pod_unbound_and_deleting(void **state)
{
    json_t *j = load("pod-unbound.json");
    struct gpuop_pod *p;
    assert_non_null(p = gpuop_pod_new(j, NULL, NULL));
    /* unknown component label: falls back to the owning DaemonSet */
    assert_int_equal(p->operand, gpuop_operand_by_name("device-plugin"));
    assert_false(p->bound);
    assert_string_equal(p->node, "gpu-node-2"); /* from the DaemonSet's node affinity */
    assert_int_equal(p->phase, GPUOP_PHASE_PENDING);
    assert_string_equal(p->waiting_reason, "Unschedulable");
    assert_string_equal(p->waiting_message, "0/3 nodes are available: 1 Insufficient cpu.");
    assert_int_equal(p->restarts, 0);
    gpuop_pod_free(p);
    json_decref(j);

    j = load("pod-running.json");
    assert_non_null(p = gpuop_pod_new(j, NULL, NULL));
    assert_int_equal(p->operand, gpuop_operand_by_name("container-toolkit"));
    /* deleted when asked: deletionTimestamp less the grace period */
    assert_int_equal(p->deleted, gpuop_parse_time("2026-11-30T08:59:30Z"));
    assert_int_equal(p->ready_since, gpuop_parse_time("2026-11-30T08:01:00Z"));
    assert_int_equal(p->restarts, 2);
    assert_null(p->waiting_reason);
    assert_null(p->waiting_message);
    gpuop_pod_free(p);
    json_decref(j);
}

/* The equality the caches use to drop no-op updates: equal for the same
 * object, different as soon as one field the analysis reads moves. */
/* gpuop_pod_unread: the members the pod informer cuts before parsing are
 * never read. Each pod of the test data (a kwok pod as the lab's API
 * server sent it, with its containers, init containers, volumes and
 * tolerations, and the hand-written ones) converts the same without them. */
static void test_pod_unread(void **state)
{
    (void)state;
    static const char *const files[] = {"pod-kwok-full.json", "pod-running.json",
                                        "pod-crashloop.json", "pod-unbound.json"};
    int cut = 0;
    for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
        json_t *full = load(files[f]), *part = json_deep_copy(full);
        for (const char *const *u = gpuop_pod_unread(); *u; u++) {
            char path[128];
            snprintf(path, sizeof(path), "%s", *u);
            json_t *at = part;
            char *save = NULL, *k = strtok_r(path, ".", &save), *next;
            for (; k && (next = strtok_r(NULL, ".", &save)); k = next)
                at = json_object_get(at, k);
            if (k && json_object_get(at, k)) {
                json_object_del(at, k);
                cut++;
            }
        }
        struct gpuop_err err = {0};
        struct gpuop_pod *a = gpuop_pod_new(full, NULL, &err), *b = gpuop_pod_new(part, NULL, &err);
        assert_non_null(a);
        assert_non_null(b);
        assert_true(gpuop_pod_equal(a, b));
        assert_string_equal(a->name, b->name);
        gpuop_pod_free(a);
        gpuop_pod_free(b);
        json_decref(full);
        json_decref(part);
    }
    assert_true(cut >= 4); /* the kwok pod has every one of them */
}

static void test_equal(void **state)
{
    json_t *j = load("pod-unbound.json");
    struct gpuop_pod *a, *b;
    assert_non_null(a = gpuop_pod_new(j, NULL, NULL));
    assert_non_null(b = gpuop_pod_new(j, NULL, NULL));
    assert_true(gpuop_pod_equal(a, b));
    /* bound to the node it already targeted: same node, still Pending */
    json_object_set_new(json_object_get(j, "spec"), "nodeName", json_string("gpu-node-2"));
    gpuop_pod_free(b);
    assert_non_null(b = gpuop_pod_new(j, NULL, NULL));
    assert_string_equal(a->node, b->node);
    assert_false(gpuop_pod_equal(a, b));
    gpuop_pod_free(a);
    gpuop_pod_free(b);
    json_decref(j);

    j = load("node-gpu.json");
    struct gpuop_node *n1, *n2;
    assert_non_null(n1 = gpuop_node_new(j, NULL, NULL));
    assert_non_null(n2 = gpuop_node_new(j, NULL, NULL));
    assert_true(gpuop_node_equal(n1, n2));
    json_t *taints =
        json_pack("[{s:s, s:s, s:s}]", "key", "dedicated", "value", "ml", "effect", "NoSchedule");
    json_object_set_new(json_object_get(j, "spec"), "taints", taints);
    gpuop_node_free(n2);
    assert_non_null(n2 = gpuop_node_new(j, NULL, NULL));
    assert_false(gpuop_node_equal(n1, n2));
    gpuop_node_free(n1);
    gpuop_node_free(n2);
    json_decref(j);

    j = load("daemonset.json");
    struct gpuop_ds d1, d2;
    assert_int_equal(gpuop_ds_from_json(j, &d1, NULL), 0);
    assert_int_equal(gpuop_ds_from_json(j, &d2, NULL), 0);
    assert_true(gpuop_ds_equal(&d1, &d2));
    json_object_set_new(json_object_get(j, "status"), "numberReady", json_integer(d1.ready + 1));
    gpuop_ds_free(&d2);
    assert_int_equal(gpuop_ds_from_json(j, &d2, NULL), 0);
    assert_false(gpuop_ds_equal(&d1, &d2));
    gpuop_ds_free(&d1);
    gpuop_ds_free(&d2);
    json_decref(j);
}

static void test_ds(void **state)
{
    json_t *j = load("daemonset.json");
    struct gpuop_ds d;
    assert_int_equal(gpuop_ds_from_json(j, &d, NULL), 0);
    assert_string_equal(d.name, "gpuop-device-plugin");
    assert_int_equal(d.operand, gpuop_operand_by_name("device-plugin"));
    assert_true(d.host_network);
    assert_int_equal(d.ntolerations, 3); /* the number 42 is skipped */
    assert_string_equal(d.tolerations[0].key, "nvidia.com/gpu");
    assert_string_equal(d.tolerations[0].op, "Exists");
    assert_string_equal(d.tolerations[0].effect, "NoSchedule");
    assert_string_equal(d.tolerations[1].op, "Equal");
    assert_string_equal(d.tolerations[1].value, "ml");
    assert_null(d.tolerations[1].effect);
    assert_null(d.tolerations[2].key);
    assert_int_equal(d.desired, 5);
    assert_int_equal(d.current, 4);
    assert_int_equal(d.ready, 3);
    assert_int_equal(d.available, 3);
    assert_int_equal(d.generation, 3);
    assert_int_equal(d.observed, 2);
    assert_int_equal(d.created, gpuop_parse_time("2026-11-30T07:00:00Z"));
    gpuop_ds_free(&d);
    json_decref(j);
}

/* Wrong types everywhere: never crash, keep what can be kept. */
static const char *const garbage[] = {
    "[]",
    "\"node\"",
    "{}",
    "{\"metadata\": 5}",
    "{\"metadata\": {\"name\": 7}}",
    "{\"metadata\": {\"name\": \"g\", \"labels\": [1,2], \"creationTimestamp\": 5,"
    " \"ownerReferences\": {\"kind\": \"DaemonSet\"}, \"deletionTimestamp\": null},"
    " \"spec\": [], \"status\": \"broken\"}",
    "{\"metadata\": {\"name\": \"g\", \"labels\": \"x\", \"ownerReferences\": [1, {\"kind\": 3},"
    " {\"kind\": \"DaemonSet\", \"name\": 4}]},"
    " \"spec\": {\"taints\": {\"a\": 1}, \"nodeName\": 3, \"affinity\": {\"nodeAffinity\": 1},"
    "  \"template\": {\"spec\": {\"tolerations\": \"all\", \"hostNetwork\": \"yes\"}}},"
    " \"status\": {\"phase\": 1, \"conditions\": [1, null, {\"type\": 2}, {\"type\": \"Ready\"}],"
    "  \"containerStatuses\": [null, {\"restartCount\": \"x\", \"state\": []},"
    "   {\"state\": {\"waiting\": {\"reason\": 5}}}], \"initContainerStatuses\": 7,"
    "  \"desiredNumberScheduled\": \"5\"}}",
    "{\"metadata\": {\"name\": \"g\"}, \"spec\": {\"taints\": [{\"key\": 1, \"effect\": "
    "\"NoSchedule\"}, {\"key\": \"k\", \"effect\": 2}, {\"key\": \"k\", \"effect\": \"NoExecute\","
    " \"value\": 3}], \"affinity\": {\"nodeAffinity\": {\"requiredDuringSchedulingIgnored"
    "DuringExecution\": {\"nodeSelectorTerms\": [{\"matchFields\": [{\"key\": \"metadata.name\","
    " \"operator\": \"In\", \"values\": [1]}]}]}}}}}",
};

static void test_garbage(void **state)
{
    for (size_t i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++) {
        json_error_t e;
        json_t *j = json_loads(garbage[i], JSON_DECODE_ANY, &e);
        assert_non_null(j);
        bool named = i >= 5;
        struct gpuop_node *n;
        struct gpuop_pod *p;
        struct gpuop_ds d;
        struct gpuop_err err = {0};
        n = gpuop_node_new(j, NULL, &err);
        assert_int_equal(n != NULL, named);
        if (!named)
            assert_string_equal(err.field, "metadata.name");
        if (named) {
            assert_string_equal(n->name, "g");
            assert_false(n->gpu);
        }
        gpuop_node_free(n);
        p = gpuop_pod_new(j, NULL, NULL);
        assert_int_equal(p != NULL, named);
        if (named) {
            assert_int_equal(p->operand, -1);
            assert_int_equal(p->phase, GPUOP_PHASE_NONE);
            assert_int_equal(p->ready_since, 0);
            assert_int_equal(p->deleted, 0); /* deletionTimestamp: null is not set */
            assert_null(p->node);
            assert_false(p->bound);
        }
        gpuop_pod_free(p);
        assert_int_equal(gpuop_ds_from_json(j, &d, NULL), named ? 0 : GPUOP_EINVAL);
        if (named) {
            assert_int_equal(d.ntolerations, 0);
            assert_int_equal(d.desired, 0);
            assert_false(d.host_network);
        }
        gpuop_ds_free(&d);
        json_decref(j);
    }
}

static void test_garbage_taint_fields(void **state)
{
    /* last garbage entry: only the taint with a string key and effect survives */
    json_t *j = json_loads(garbage[7], 0, NULL);
    struct gpuop_node *n;
    assert_non_null(n = gpuop_node_new(j, NULL, NULL));
    assert_int_equal(n->ntaints, 1);
    assert_string_equal(n->taints[0].key, "k");
    assert_null(n->taints[0].value);
    gpuop_node_free(n);
    json_decref(j);
}

static void test_limits(void **state)
{
    char big[3000];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    json_t *j = json_pack("{s:{s:s}, s:{s:s, s:[{s:s, s:{s:{s:s, s:s}}}]}}", "metadata", "name",
                          big, "status", "phase", "Pending", "containerStatuses", "name", "c",
                          "state", "waiting", "reason", "ErrImagePull", "message", big);
    struct gpuop_pod *p;
    assert_non_null(p = gpuop_pod_new(j, NULL, NULL));
    assert_true(strlen(p->name) < 1000);
    assert_int_equal(strlen(p->waiting_message), GPUOP_MODEL_MESSAGE_MAX);
    assert_string_equal(p->waiting_reason, "ErrImagePull");
    gpuop_pod_free(p);
    json_decref(j);

    /* a cut never splits a UTF-8 sequence: 2-byte characters, odd limit */
    char utf[2 * GPUOP_MODEL_MESSAGE_MAX + 8] = "x";
    for (size_t i = 1; i + 2 < sizeof(utf); i += 2)
        memcpy(utf + i, "\xc3\xa9", 2), utf[i + 2] = '\0';
    j = json_pack("{s:{s:s}, s:{s:[{s:{s:{s:s, s:s}}}]}}", "metadata", "name", "p", "status",
                  "containerStatuses", "state", "waiting", "reason", "X", "message", utf);
    assert_non_null(j);
    assert_non_null(p = gpuop_pod_new(j, NULL, NULL));
    size_t len = strlen(p->waiting_message);
    assert_true(len <= GPUOP_MODEL_MESSAGE_MAX);
    assert_int_equal(len % 2, 1); /* "x" + whole 2-byte characters */
    gpuop_pod_free(p);
    json_decref(j);
}

static void test_parse_time(void **state)
{
    static const struct {
        const char *s;
        long long want;
    } cases[] = {
        {"1970-01-01T00:00:00Z", 0},
        {"2026-11-29T21:06:40Z", 1795986400LL},
        {"2026-11-29T21:06:40.5Z", 1795986400LL},
        {"2026-11-29T21:06:40.123456789Z", 1795986400LL},
        {"2026-11-29T22:06:40+01:00", 1795986400LL},
        {"2026-11-29T16:36:40-04:30", 1795986400LL},
        {"2024-02-29T00:00:00Z", 1709164800LL},
        {"2000-03-01T00:00:00z", 951868800LL},
        {"2026-11-29T21:06:40", -1},
        {"2026-11-29 21:06", -1},
        {"2026-13-01T00:00:00Z", -1},
        {"2023-02-29T00:00:00Z", -1},
        {"2026-11-29T24:00:00Z", -1},
        {"2026-11-29T21:06:40.Z", -1},
        {"2026-11-29T21:06:40Zjunk", -1},
        {"2026-11-29T21:06:40+0100", -1},
        {"", -1},
        {NULL, -1},
        {"abcd-ef-ghTij:kl:mnZ", -1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        long long got = gpuop_parse_time(cases[i].s);
        if (got != cases[i].want)
            fail_msg("case %zu (%s): got %lld want %lld", i, cases[i].s ? cases[i].s : "NULL", got,
                     cases[i].want);
    }
}

static void test_tolerations(void **state)
{
    static const struct {
        struct gpuop_toleration t;
        struct gpuop_taint taint;
        bool want;
    } cases[] = {
        /* empty key + Exists tolerates every taint */
        {{"", "Exists", NULL, NULL}, {"a", "b", "NoSchedule"}, true},
        {{NULL, "Exists", NULL, NULL}, {"x", NULL, "NoExecute"}, true},
        /* Exists ignores the value */
        {{"a", "Exists", NULL, NULL}, {"a", "x", "NoExecute"}, true},
        {{"a", "Exists", "other", NULL}, {"a", "x", "NoSchedule"}, true},
        /* Equal (explicit, empty, or NULL operator) compares the value */
        {{"a", "Equal", "x", NULL}, {"a", "x", "NoSchedule"}, true},
        {{"a", "Equal", "y", NULL}, {"a", "x", "NoSchedule"}, false},
        {{"a", NULL, "x", ""}, {"a", "x", "NoSchedule"}, true},
        {{"a", "", "x", NULL}, {"a", "x", "NoSchedule"}, true},
        {{"a", "Equal", NULL, NULL}, {"a", NULL, "NoSchedule"}, true},
        {{"a", "Equal", "", NULL}, {"a", NULL, "NoSchedule"}, true},
        {{"a", "Equal", NULL, NULL}, {"a", "x", "NoSchedule"}, false},
        /* empty effect matches every effect, a set one only itself */
        {{"a", "Exists", NULL, "NoSchedule"}, {"a", NULL, "NoExecute"}, false},
        {{"a", "Exists", NULL, "NoExecute"}, {"a", NULL, "NoExecute"}, true},
        {{"a", "Exists", NULL, ""}, {"a", NULL, "NoExecute"}, true},
        /* keys compare exactly */
        {{"A", "Exists", NULL, NULL}, {"a", NULL, "NoSchedule"}, false},
        {{"b", "Exists", NULL, NULL}, {"a", NULL, "NoSchedule"}, false},
        {{"a", "Exists", NULL, NULL}, {"ab", NULL, "NoSchedule"}, false},
        /* unknown operator tolerates nothing */
        {{"a", "Bogus", "x", NULL}, {"a", "x", "NoSchedule"}, false},
        /* empty key with Equal: as the API server's code does, compares values */
        {{"", "Equal", "x", NULL}, {"a", "x", "NoSchedule"}, true},
        {{"", "Equal", "y", NULL}, {"a", "x", "NoSchedule"}, false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (gpuop_toleration_matches(&cases[i].t, &cases[i].taint) != cases[i].want)
            fail_msg("toleration case %zu: want %d", i, cases[i].want);
    assert_false(gpuop_toleration_matches(NULL, &cases[0].taint));
}

/* The driver upgrade's fields: a driver pod's template generation, a
 * DaemonSet's, a node's state label, annotations and unschedulable. */
static void test_upgrade_fields(void **state)
{
    (void)state;
    json_t *j = json_loads(
        "{\"metadata\": {\"name\": \"gpuop-driver-ubuntu24.04-x\", \"labels\": "
        "{\"app.kubernetes.io/component\": \"driver\", \"pod-template-generation\": \"7\"}}, "
        "\"spec\": {\"nodeName\": \"n1\"}}",
        0, NULL);
    struct gpuop_pod *p = gpuop_pod_new(j, NULL, NULL);
    assert_non_null(p);
    assert_int_equal(p->operand, gpuop_operand_by_key("driver"));
    assert_int_equal(gpuop_pod_template_gen(p), 7);
    assert_string_equal(p->node, "n1");
    struct gpuop_pod *q = gpuop_pod_new(j, NULL, NULL);
    assert_true(gpuop_pod_equal(p, q));
    gpuop_pod_free(q);
    json_object_set_new(json_object_get(json_object_get(j, "metadata"), "labels"),
                        "pod-template-generation", json_string("8"));
    q = gpuop_pod_new(j, NULL, NULL);
    assert_int_equal(gpuop_pod_template_gen(q), 8);
    assert_false(gpuop_pod_equal(p, q));
    gpuop_pod_free(q);
    /* a rollback DaemonSet's pod is of no pool generation */
    json_object_set_new(json_object_get(json_object_get(j, "metadata"), "labels"),
                        "gpuop.dev/driver-rollback", json_string("gpuop-driver"));
    q = gpuop_pod_new(j, NULL, NULL);
    assert_int_equal(gpuop_pod_template_gen(q), 0);
    gpuop_pod_free(q);
    gpuop_pod_free(p);
    json_decref(j);
    /* another operand's pod has none */
    j = json_loads("{\"metadata\": {\"name\": \"x\", \"labels\": {\"app.kubernetes.io/component\": "
                   "\"device-plugin\", \"pod-template-generation\": \"7\"}}}",
                   0, NULL);
    p = gpuop_pod_new(j, NULL, NULL);
    assert_int_equal(gpuop_pod_template_gen(p), 0);
    gpuop_pod_free(p);
    json_decref(j);

    j = json_loads("{\"metadata\": {\"name\": \"gpuop-driver\", \"annotations\": "
                   "{\"deprecated.daemonset.template.generation\": \"12\"}}}",
                   0, NULL);
    struct gpuop_ds ds = {0};
    assert_int_equal(gpuop_ds_from_json(j, &ds, NULL), 0);
    assert_int_equal(ds.template_gen, 12);
    gpuop_ds_free(&ds);
    json_decref(j);

    j = json_loads(
        "{\"metadata\": {\"name\": \"n1\", \"labels\": {\"nvidia.com/gpu-driver-upgrade-state\": "
        "\"pod-deletion-required\"}, \"annotations\": {\"gpuop.dev/driver-upgrade-since\": "
        "\"2026-12-02T01:00:00Z\", \"gpuop.dev/driver-upgrade-cordoned\": \"true\", "
        "\"gpuop.dev/driver-upgrade-failed\": \"6 CrashLoopBackOff\", "
        "\"gpuop.dev/driver-upgrade-paused\": \"{}\"}}, \"spec\": {\"unschedulable\": true}, "
        "\"status\": {\"conditions\": [{\"type\": \"Ready\", \"status\": \"False\"}]}}",
        0, NULL);
    struct gpuop_node *n = gpuop_node_new(j, NULL, NULL);
    assert_non_null(n);
    assert_int_equal(n->up.state, GPUOP_US_POD_DELETION);
    assert_int_equal(n->upgrade, GPUOP_UPGRADE_ACTIVE);
    assert_int_equal(n->up.since, (uint32_t)gpuop_parse_time("2026-12-02T01:00:00Z"));
    assert_true(n->up.cordoned);
    assert_true(n->up.paused);
    assert_true(n->up.unschedulable);
    assert_true(n->up.not_ready);
    assert_int_equal(n->up.failed_gen, 6);
    gpuop_node_free(n);
    json_decref(j);
    j = json_loads("{\"metadata\": {\"name\": \"n1\", \"labels\": "
                   "{\"nvidia.com/gpu-driver-upgrade-state\": \"node-maintenance-required\"}}}",
                   0, NULL);
    n = gpuop_node_new(j, NULL, NULL);
    assert_int_equal(n->up.state, GPUOP_US_OTHER);
    assert_false(n->up.unschedulable || n->up.cordoned || n->up.not_ready || n->up.paused);
    assert_false(n->up.rollback || n->up.rollback_ending);
    gpuop_node_free(n);
    json_decref(j);
    static const char *const rb[] = {"gpuop-driver", "ending"};
    for (int i = 0; i < 2; i++) {
        char buf[256];
        snprintf(buf, sizeof(buf),
                 "{\"metadata\": {\"name\": \"n1\", \"labels\": "
                 "{\"gpuop.dev/driver-rollback\": \"%s\"}}}",
                 rb[i]);
        j = json_loads(buf, 0, NULL);
        n = gpuop_node_new(j, NULL, NULL);
        assert_true(n->up.rollback);
        assert_int_equal(n->up.rollback_ending, i == 1);
        gpuop_node_free(n);
        json_decref(j);
    }
    assert_string_equal(gpuop_upgrade_state_name(GPUOP_US_WAIT_JOBS), "wait-for-jobs-required");
    assert_null(gpuop_upgrade_state_name(GPUOP_US_OTHER));
    /* the driver pool label is gpuop's only while it equals the value gpuop
     * recorded writing (issue 38): none, another, or no label: a person's */
    static const char *const pools[][2] = {
        {"a100", "a100"}, {"a100", NULL}, {"a100", "h100"}, {NULL, "a100"}};
    for (int i = 0; i < 4; i++) {
        j = json_pack("{s:{s:s, s:{}, s:{}}}", "metadata", "name", "n1", "labels", "annotations");
        json_t *md = json_object_get(j, "metadata");
        if (pools[i][0])
            json_object_set_new(json_object_get(md, "labels"), GPUOP_LABEL_DRIVER_POOL,
                                json_string(pools[i][0]));
        if (pools[i][1])
            json_object_set_new(json_object_get(md, "annotations"),
                                GPUOP_ANNOTATION_DRIVER_POOL_SET, json_string(pools[i][1]));
        n = gpuop_node_new(j, NULL, NULL);
        assert_int_equal(n->up.pool_ours, i == 0);
        gpuop_node_free(n);
        json_decref(j);
    }
}

/* gpuop_*_new makes what the caches keep: one allocation holding the
 * struct and its strings (released with gpuop_*_free), the same values for
 * the same object. */
/* A driver pod's upgrade facts: template generation, install digest,
 * controller revision (as a 32-bit hash); none on another operand's pod. */
static void test_driver_pod_facts(void **state)
{
    (void)state;
    static const char *const fmt =
        "{\"metadata\":{\"name\":\"p\",\"labels\":{\"app.kubernetes.io/component\":\"%s\","
        "\"pod-template-generation\":\"7\",\"gpuop.dev/driver-config-digest\":\"123456\","
        "\"controller-revision-hash\":\"5d9c7b8f6\"}},\"spec\":{\"nodeName\":\"n\"}}";
    static const char *const comps[] = {"driver", "device-plugin"};
    for (int k = 0; k < 2; k++) {
        char buf[512];
        snprintf(buf, sizeof(buf), fmt, comps[k]);
        json_t *j = json_loads(buf, 0, NULL);
        struct gpuop_pod *p = gpuop_pod_new(j, NULL, NULL);
        assert_non_null(p);
        assert_int_equal(gpuop_pod_template_gen(p), k ? 0 : 7);
        assert_int_equal(gpuop_pod_driver_digest(p), k ? 0 : 123456);
        assert_int_equal(gpuop_pod_revision(p), k ? 0 : gpuop_revision_hash("5d9c7b8f6"));
        gpuop_pod_free(p);
        json_decref(j);
    }
    assert_int_equal(gpuop_revision_hash(NULL), 0);
    assert_int_equal(gpuop_revision_hash(""), 0);
    assert_int_not_equal(gpuop_revision_hash("a"), gpuop_revision_hash("b"));
}

static void test_new_single_block(void **state)
{
    static const char *const pods[] = {"pod-crashloop.json", "pod-unbound.json",
                                       "pod-running.json"};
    for (size_t i = 0; i < sizeof(pods) / sizeof(pods[0]); i++) {
        json_t *j = load(pods[i]);
        struct gpuop_pod *a;
        assert_non_null(a = gpuop_pod_new(j, NULL, NULL));
        struct gpuop_pod *b = gpuop_pod_new(j, NULL, NULL);
        assert_non_null(b);
        assert_true(gpuop_pod_equal(a, b));
        /* a driver pod keeps its template generation, install digest and
           revision hash (16 bytes) before the strings */
        assert_ptr_equal(b->name, (char *)b + ((sizeof(*b) + 7) & ~(size_t)7) +
                                      (b->operand == gpuop_operand_by_key("driver") ? 16 : 0));
        assert_true(b->node > b->name);
        if (b->waiting_reason)
            assert_true(b->waiting_reason > b->node);
        gpuop_pod_free(a);
        gpuop_pod_free(b);
        json_decref(j);
    }
    /* a phase no kubelet reports is Unknown; a deletion time that cannot be read
       still means "being deleted"; a Ready condition without a time is Ready since the
       pod's creation */
    json_t *j = load("pod-running.json");
    json_t *meta = json_object_get(j, "metadata");
    json_object_set_new(json_object_get(j, "status"), "phase", json_string("Hibernating"));
    json_object_set_new(meta, "deletionTimestamp", json_string("soon"));
    json_object_del(json_array_get(json_object_get(json_object_get(j, "status"), "conditions"), 0),
                    "lastTransitionTime");
    struct gpuop_pod *p = gpuop_pod_new(j, NULL, NULL);
    assert_int_equal(p->phase, GPUOP_PHASE_UNKNOWN);
    assert_int_equal(p->deleted, GPUOP_TIME_UNREADABLE);
    assert_int_equal(p->ready_since, gpuop_parse_time("2026-11-30T08:00:00Z"));
    gpuop_pod_free(p);
    json_object_del(meta, "creationTimestamp");
    p = gpuop_pod_new(j, NULL, NULL);
    assert_int_equal(p->ready_since, GPUOP_TIME_UNREADABLE); /* Ready, since unknown */
    assert_int_equal(p->created, 0);
    gpuop_pod_free(p);
    json_decref(j);

    j = load("node-gpu.json");
    json_t *plainj = json_deep_copy(j),
           *pl = json_object_get(json_object_get(plainj, "metadata"), "labels");
    json_object_del(pl, "nvidia.com/gpu.deploy.device-plugin");
    json_object_del(pl, "nvidia.com/gpu.deploy.gpu-feature-discovery");
    struct gpuop_node *plain = gpuop_node_new(plainj, NULL, NULL);
    assert_null(plain->deploy_other); /* no room spent when no label has another value */
    gpuop_node_free(plain);
    json_decref(plainj);
    json_t *taints = json_pack("[{s:s, s:s, s:s}, {s:s, s:s}, {s:s, s:s}]", "key", "dedicated",
                               "value", "ml", "effect", "NoSchedule", "key", "soft", "effect",
                               "PreferNoSchedule", "key", "evict", "effect", "NoExecute");
    json_object_set_new(json_object_get(j, "spec"), "taints", taints);
    json_object_set_new(json_object_get(json_object_get(j, "metadata"), "labels"),
                        "nvidia.com/gpu.deploy.dcgm-exporter", json_string("paused"));
    struct gpuop_node *n1;
    assert_non_null(n1 = gpuop_node_new(j, NULL, NULL));
    struct gpuop_node *n2 = gpuop_node_new(j, NULL, NULL);
    assert_non_null(n2);
    assert_true(gpuop_node_equal(n1, n2));
    assert_int_equal(n2->ntaints, 2); /* PreferNoSchedule is not kept */
    assert_string_equal(n2->taints[1].key, "evict");
    assert_null(n2->taints[1].value);
    assert_int_equal(((uintptr_t)n2->taints) % sizeof(void *), 0);
    assert_string_equal(gpuop_node_deploy_value(n2, gpuop_operand_by_name("dcgm-exporter")),
                        "paused");
    gpuop_node_free(n1);
    gpuop_node_free(n2);
    json_decref(j);

    /* a cache's key lent as the name: used when it is the name, else copied */
    j = load("pod-crashloop.json");
    char *key = strdup("gpuop-driver-x7k2p");
    struct gpuop_pod *lent = gpuop_pod_new(j, key, NULL);
    assert_ptr_equal(lent->name, key);
    struct gpuop_pod *copied = gpuop_pod_new(j, "gpuop-system/gpuop-driver-x7k2p", NULL);
    assert_string_equal(copied->name, "gpuop-driver-x7k2p");
    struct gpuop_pod *own;
    assert_non_null(own = gpuop_pod_new(j, NULL, NULL));
    assert_true(gpuop_pod_equal(lent, own));
    assert_true(gpuop_pod_equal(copied, own));
    gpuop_pod_free(lent);
    gpuop_pod_free(copied);
    free(key); /* the lender outlives the borrower */
    gpuop_pod_free(own);
    json_decref(j);
    j = load("node-gpu.json");
    const char *nname = json_string_value(json_object_get(json_object_get(j, "metadata"), "name"));
    key = strdup(nname);
    struct gpuop_node *nl = gpuop_node_new(j, key, NULL);
    assert_ptr_equal(nl->name, key);
    gpuop_node_free(nl);
    free(key);
    json_decref(j);

    /* no name: an error, nothing allocated */
    j = json_pack("{s:{}}", "metadata");
    struct gpuop_err err = {0};
    assert_null(gpuop_pod_new(j, NULL, &err));
    assert_int_equal(err.rc, GPUOP_EINVAL);
    assert_null(gpuop_node_new(j, NULL, NULL));
    json_decref(j);
}

/* The init container state a cached pod keeps (model.h): held in one of
 * the GPU Operator's gates while it runs, is not ready and Initialized is
 * not True, with its start; a gate that waits (crash loop, pull) is its
 * waiting reason instead; another init container, a ready sidecar, or an
 * initialized pod is no gate. The upgrade-state label of a node too. */
static struct gpuop_pod *gate_pod(const char *init_json, const char *initialized)
{
    char buf[2048];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"gpuop-device-plugin-q\",\"labels\":{"
             "\"app.kubernetes.io/component\":\"device-plugin\"},"
             "\"creationTimestamp\":\"2026-11-30T08:00:00Z\"},\"spec\":{\"nodeName\":\"g\"},"
             "\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"Initialized\","
             "\"status\":\"%s\"},{\"type\":\"Ready\",\"status\":\"False\"}],"
             "\"initContainerStatuses\":[%s],\"containerStatuses\":[{\"name\":\"main\","
             "\"restartCount\":0,\"state\":{\"waiting\":{\"reason\":\"PodInitializing\"}}}]}}",
             initialized, init_json);
    json_error_t e;
    json_t *j = json_loads(buf, 0, &e);
    if (!j)
        fail_msg("bad JSON: %s", e.text);
    struct gpuop_pod *p = gpuop_pod_new(j, NULL, NULL);
    assert_non_null(p);
    json_decref(j);
    return p;
}

static void test_pod_gate(void **state)
{
    struct gpuop_pod *p =
        gate_pod("{\"name\":\"config-manager-init\",\"ready\":true,\"restartCount\":0,\"state\":{"
                 "\"running\":{\"startedAt\":\"2026-11-30T08:00:01Z\"}}},"
                 "{\"name\":\"toolkit-validation\",\"ready\":false,\"restartCount\":0,\"state\":{"
                 "\"running\":{\"startedAt\":\"2026-11-30T08:00:05Z\"}}}",
                 "False");
    assert_int_equal(p->gate, GPUOP_GATE_TOOLKIT);
    assert_int_equal(p->gate_since, gpuop_parse_time("2026-11-30T08:00:05Z"));
    assert_string_equal(p->waiting_reason, "PodInitializing");
    assert_false(gpuop_pod_running(p));
    assert_string_equal(gpuop_gate_get(p->gate)->file, "toolkit-ready");
    struct gpuop_pod *q =
        gate_pod("{\"name\":\"toolkit-validation\",\"ready\":false,\"restartCount\":0,\"state\":{"
                 "\"running\":{\"startedAt\":\"2026-11-30T08:00:05Z\"}}}",
                 "False");
    assert_true(gpuop_pod_equal(p, q));
    q->gate = GPUOP_GATE_DRIVER;
    assert_false(gpuop_pod_equal(p, q));
    gpuop_pod_free(p);
    gpuop_pod_free(q);

    /* crash-looping: the failure, not a gate */
    p = gate_pod("{\"name\":\"driver-validation\",\"ready\":false,\"restartCount\":3,\"state\":{"
                 "\"waiting\":{\"reason\":\"CrashLoopBackOff\",\"message\":\"back-off\"}}}",
                 "False");
    assert_int_equal(p->gate, GPUOP_GATE_NONE);
    assert_string_equal(p->waiting_reason, "CrashLoopBackOff");
    assert_int_equal(p->restarts, 3);
    gpuop_pod_free(p);
    /* an init container of another name holds it: starting, no gate */
    p = gate_pod("{\"name\":\"wait-for-it\",\"ready\":false,\"state\":{\"running\":{}}}", "False");
    assert_int_equal(p->gate, GPUOP_GATE_NONE);
    gpuop_pod_free(p);
    /* initialized: whatever runs is no gate; no start time: unreadable */
    p = gate_pod("{\"name\":\"toolkit-validation\",\"ready\":false,\"state\":{\"running\":{}}}",
                 "True");
    assert_int_equal(p->gate, GPUOP_GATE_NONE);
    gpuop_pod_free(p);
    p = gate_pod("{\"name\":\"plugin-validation\",\"ready\":false,\"state\":{\"running\":{}}}",
                 "False");
    assert_int_equal(p->gate, GPUOP_GATE_PLUGIN);
    assert_int_equal(p->gate_since, GPUOP_TIME_UNREADABLE);
    gpuop_pod_free(p);
    assert_int_equal(gpuop_gate_by_container("mofed-validation"), GPUOP_GATE_MOFED);
    assert_int_equal(gpuop_gate_by_container("cuda-validation"), GPUOP_GATE_CUDA);
    assert_int_equal(gpuop_gate_by_container(NULL), GPUOP_GATE_NONE);
    assert_null(gpuop_gate_get(GPUOP_GATE_NONE));

    static const struct {
        const char *value;
        int upgrade;
    } states[] = {{"upgrade-done", GPUOP_UPGRADE_DONE},
                  {"upgrade-failed", GPUOP_UPGRADE_FAILED},
                  {"pod-restart-required", GPUOP_UPGRADE_ACTIVE},
                  {"", GPUOP_UPGRADE_ABSENT}};
    for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
        json_t *j = json_pack("{s:{s:s, s:{s:s}}}", "metadata", "name", "g", "labels",
                              GPUOP_LABEL_UPGRADE_STATE, states[i].value);
        struct gpuop_node *n = gpuop_node_new(j, NULL, NULL);
        assert_non_null(n);
        assert_int_equal(n->upgrade, states[i].upgrade);
        gpuop_node_free(n);
        json_decref(j);
    }
}

/* Precompiled drivers' pools (ospool.h): the kernel label kept, a pool per
 * OS and kernel when collected by kernel, NVIDIA's sanitized kernel in the
 * DaemonSet name, a hash past 63 characters or where the name would break
 * the DNS rule, and "OS/KERNEL" on the command line. */
static void test_kernel_pools(void **state)
{
    struct gpuop_node *n[3];
    static const char *const kernels[] = {"6.8.0-1", "6.8.0-2", NULL};
    for (int i = 0; i < 3; i++) {
        json_t *j = json_pack("{s:{s:s, s:{s:s, s:s, s:s}}}", "metadata", "name", "k", "labels",
                              "nvidia.com/gpu.present", "true", GPUOP_LABEL_OS_ID, "ubuntu",
                              GPUOP_LABEL_OS_VERSION, "24.04");
        if (kernels[i])
            json_object_set_new(json_object_get(json_object_get(j, "metadata"), "labels"),
                                GPUOP_LABEL_KERNEL, json_string(kernels[i]));
        assert_non_null(n[i] = gpuop_node_new(j, NULL, NULL));
        json_decref(j);
    }
    assert_string_equal(gpuop_node_os(n[0], GPUOP_OS_KERNEL), "6.8.0-1");
    assert_null(gpuop_node_os(n[2], GPUOP_OS_KERNEL));
    assert_false(gpuop_node_equal(n[0], n[1])); /* a kernel change is a node change */
    {                                           /* the driver pool label: kept, in the pool */
        json_t *j = json_pack("{s:{s:s, s:{s:s, s:s, s:s, s:s, s:s}}}", "metadata", "name", "k",
                              "labels", "nvidia.com/gpu.present", "true", GPUOP_LABEL_OS_ID,
                              "ubuntu", GPUOP_LABEL_OS_VERSION, "24.04", GPUOP_LABEL_KERNEL,
                              "6.8.0-1", GPUOP_LABEL_DRIVER_POOL, "a100");
        struct gpuop_node *a = gpuop_node_new(j, NULL, NULL);
        struct gpuop_ospool ap;
        json_decref(j);
        assert_non_null(a);
        assert_string_equal(gpuop_node_os(a, GPUOP_OS_DRIVER_POOL), "a100");
        assert_null(gpuop_node_os(n[0], GPUOP_OS_DRIVER_POOL));
        assert_false(gpuop_node_equal(a, n[0])); /* a pool change is a node change */
        assert_int_equal(gpuop_ospool_of_node(a, &ap, NULL), 0);
        assert_string_equal(ap.dpool, "a100");
        assert_string_equal(ap.kernel, "6.8.0-1");
        gpuop_node_free(a);
    }
    struct gpuop_ospool set[4], pool;
    const struct gpuop_node *all[] = {n[1], n[0], n[2], n[1]};
    assert_int_equal(gpuop_ospool_collect(all, 4, true, set, 4, NULL), 2);
    assert_string_equal(set[0].kernel, "6.8.0-1");
    assert_string_equal(set[1].kernel, "6.8.0-2");
    assert_int_equal(gpuop_ospool_collect(all, 4, false, set, 4, NULL), 1);
    assert_string_equal(set[0].kernel, "");
    char name[128];
    assert_int_equal(gpuop_ospool_of_node(n[0], &pool, NULL), 0);
    gpuop_ospool_ds_name("gpuop-driver", &pool, true, name, sizeof(name));
    assert_string_equal(name, "gpuop-driver-6.8.0-1-ubuntu24.04");
    gpuop_ospool_ds_name("gpuop-driver", &pool, false, name, sizeof(name));
    assert_string_equal(name, "gpuop-driver-ubuntu24.04");
    /* a driver pool (spec.driver.pools): its name after the prefix; past 63
       characters cut, with a hash of the pool, kernel and tag */
    snprintf(pool.dpool, sizeof(pool.dpool), "a100");
    gpuop_ospool_ds_name("gpuop-driver", &pool, false, name, sizeof(name));
    assert_string_equal(name, "gpuop-driver-a100-ubuntu24.04");
    gpuop_ospool_ds_name("gpuop-driver", &pool, true, name, sizeof(name));
    assert_string_equal(name, "gpuop-driver-a100-6.8.0-1-ubuntu24.04");
    snprintf(pool.dpool, sizeof(pool.dpool), "a-pool-name-of-24-chars");
    snprintf(pool.kernel, sizeof(pool.kernel), "6.8.0-1015-generic-with-a-long-suffix");
    gpuop_ospool_ds_name("gpuop-driver", &pool, true, name, sizeof(name));
    assert_true(strlen(name) <= GPUOP_OSPOOL_NAME_MAX);
    assert_int_equal(strncmp(name, "gpuop-driver-a-pool-name-of-24-chars-6.8.0", 42), 0);
    char other[128];
    snprintf(pool.dpool, sizeof(pool.dpool), "a-pool-name-of-24-charz");
    gpuop_ospool_ds_name("gpuop-driver", &pool, true, other, sizeof(other));
    assert_string_not_equal(name, other); /* the hash tells them apart */
    /* NVIDIA's getSanitizedKernelVersion */
    char k[64];
    gpuop_ospool_kernel_sanitized("5.14.0-427.13.1.el9_4.x86_64", k, sizeof(k));
    assert_string_equal(k, "5.14.0-427.13.1.el9.4");
    gpuop_ospool_kernel_sanitized("6.8.0-1015-AWS.aarch64_64k", k, sizeof(k));
    assert_string_equal(k, "6.8.0-1015-aws");
    /* too long: cut, and "-<hash>" (NVIDIA's GetStringHash of the kernel
       and tag), a DNS label each time */
    assert_int_equal(gpuop_ospool_parse("rhel9.4/5.14.0-427.13.1.el9_4.x86_64", &pool), 0);
    assert_string_equal(pool.kernel, "5.14.0-427.13.1.el9_4.x86_64");
    gpuop_ospool_ds_name("gpuop-driver", &pool, true, name, sizeof(name));
    assert_string_equal(name, "gpuop-driver-5.14.0-427.13.1.el9.4-rhel9");
    assert_int_equal(
        gpuop_ospool_parse("ubuntu24.04/6.8.0-1015-nvidia-lowlatency-64k-realtime-build7", &pool),
        0);
    int len = gpuop_ospool_ds_name("gpuop-driver", &pool, true, name, sizeof(name));
    assert_true(len <= GPUOP_OSPOOL_NAME_MAX);
    assert_non_null(strstr(name, "gpuop-driver-6.8.0-1015-nvidia-lowlatency-"));
    char again[128];
    gpuop_ospool_ds_name("gpuop-driver", &pool, true, again, sizeof(again));
    assert_string_equal(name, again); /* stable */
    assert_int_equal(gpuop_ospool_parse("ubuntu24.04/6.8.0.x86_64-1", &pool), 0);
    gpuop_ospool_ds_name("gpuop-driver", &pool, true, name, sizeof(name));
    assert_null(strstr(name, ".-")); /* "6.8.0.-1" would break the rule: cut, hashed */
    assert_non_null(strstr(name, "gpuop-driver-6.8.0-"));
    assert_int_equal(gpuop_ospool_parse("ubuntu24.04/", &pool), GPUOP_EINVAL);
    for (int i = 0; i < 3; i++)
        gpuop_node_free(n[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_gpu),
        cmocka_unit_test(test_node_mps),
        cmocka_unit_test(test_node_sharing),
        cmocka_unit_test(test_sharing_cm_stamp),
        cmocka_unit_test(test_node_kinds),
        cmocka_unit_test(test_node_os),
        cmocka_unit_test(test_kernel_pools),
        cmocka_unit_test(test_pod_crashloop),
        cmocka_unit_test(test_pod_unread),
        cmocka_unit_test(test_pod_unbound_and_deleting),
        cmocka_unit_test(test_pod_gate),
        cmocka_unit_test(test_ds),
        cmocka_unit_test(test_equal),
        cmocka_unit_test(test_driver_pod_facts),
        cmocka_unit_test(test_new_single_block),
        cmocka_unit_test(test_upgrade_fields),
        cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_garbage_taint_fields),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_parse_time),
        cmocka_unit_test(test_tolerations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
