/*
 * test_report.c - `gpuop check` output: the text matrix (symbols, legend,
 * colour only on request, grouping of identical rows and of many findings,
 * node filter, summary line), the JSON/YAML document, and the exit code.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpuop/report.h"
#include "world_fixture.h"

#define T0 FX_T0

/* Renders the text report into a new string. */
/* The matrices here were written before the DRA driver: off in them (its
 * column "d"), so each keeps what it checks. */
static void world_init(struct fx_world *w, unsigned flags, int n)
{
    fx_world_init(w, flags, n);
    w->pol.operands[gpuop_operand_by_name("dra-driver")].enabled = false;
}
#define fx_world_init world_init
#undef FX_ALL
#define FX_ALL                                                                                     \
    "driver container-toolkit device-plugin gpu-feature-discovery dcgm dcgm-exporter "             \
    "operator-validator mig-manager mps-control-daemon"

static char *text(struct fx_world *w, const struct gpuop_report_opts *o)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(gpuop_report_text(f, &w->pol, &w->f, o), 0);
    fclose(f);
    if (getenv("DUMP"))
        fputs(buf, stderr);
    return buf;
}

static char *structured(struct fx_world *w, const struct gpuop_report_opts *o, bool yaml)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(gpuop_report_structured(f, &w->pol, &w->f, o, yaml), 0);
    fclose(f);
    if (getenv("DUMP"))
        fputs(buf, stderr);
    return buf;
}

/* The line of the matrix that starts with name. */
static const char *line_of(const char *txt, const char *name, char *buf, size_t size)
{
    size_t n = strlen(name);
    for (const char *p = txt; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, name, n) == 0 && (p[n] == ' ' || p[n] == '\n')) {
            const char *e = strchr(p, '\n');
            size_t l = e ? (size_t)(e - p) : strlen(p);
            snprintf(buf, size, "%.*s", (int)l, p);
            return buf;
        }
    }
    fail_msg("no line for %s in:\n%s", name, txt);
    return NULL;
}

/* Issue 42: which path advertises each GPU node's GPUs, in text and JSON,
 * once the node's ResourceSlices were read (gpuop_node.dra.watched); not
 * a word of it where they were not. */
static void test_advertised_by(void **state)
{
    (void)state;
    struct fx_world w;
    fx_world_init(&w, FX_NO_DS_STATUS, 0);
    const char *names[] = {"gpu-both", "gpu-dra", "gpu-none", "gpu-plugin"};
    for (int i = 0; i < 4; i++) {
        fx_add_node(&w, names[i], FX_ALL);
        fx_run(&w, names[i], FX_ALL);
    }
    w.nodes[0]->gpus.allocatable = w.nodes[3]->gpus.allocatable = 8;
    w.nodes[0]->dra = w.nodes[1]->dra = (struct gpuop_node_dra){8, 1, 1, 0};
    w.nodes[2]->dra = w.nodes[3]->dra = (struct gpuop_node_dra){0, 0, 1, 0};
    fx_analyze(&w);
    struct gpuop_report_opts o = {.nodes = w.np, .nnodes = w.nn};
    char *t = text(&w, &o), line[256];
    assert_non_null(strstr(t, "GPUs advertised by"));
    assert_string_equal(line_of(t, "  plugin", line, sizeof(line)), "  plugin 1 node: gpu-plugin");
    assert_string_equal(line_of(t, "  DRA", line, sizeof(line)), "  DRA    1 node: gpu-dra");
    assert_string_equal(line_of(t, "  both", line, sizeof(line)),
                        "  both   1 node: gpu-both (advertised twice: GpusAdvertisedTwice)");
    assert_string_equal(line_of(t, "  none", line, sizeof(line)), "  none   1 node: gpu-none");
    free(t);
    char *js = structured(&w, &o, false);
    json_t *doc = json_loads(js, 0, NULL);
    assert_non_null(doc);
    json_t *by = json_object_get(doc, "gpusAdvertisedBy");
    assert_string_equal(json_string_value(json_object_get(by, "gpu-both")), "both");
    assert_string_equal(json_string_value(json_object_get(by, "gpu-dra")), "DRA");
    assert_string_equal(json_string_value(json_object_get(by, "gpu-plugin")), "plugin");
    assert_string_equal(json_string_value(json_object_get(by, "gpu-none")), "none");
    json_decref(doc);
    free(js);
    /* the slices not read: nothing said */
    for (int i = 0; i < 4; i++)
        w.nodes[i]->dra = (struct gpuop_node_dra){0};
    t = text(&w, &o);
    assert_null(strstr(t, "GPUs advertised by"));
    free(t);
    js = structured(&w, &o, false);
    assert_null(strstr(js, "gpusAdvertisedBy"));
    free(js);
    fx_world_free(&w);
}

/* Issue 38: "pre-installed" (NVIDIA's driver container found a driver on
 * the host) is host-provided as "false" is, for any operand: a node with
 * it on the driver and the toolkit and the rest running is complete, and
 * the report says who wrote which value. */
static void test_preinstalled(void **state)
{
    struct fx_world w;
    fx_world_init(&w, FX_NO_DS_STATUS, 0);
    w.pol.operands[gpuop_operand_by_name("mig-manager")].enabled = false;
    const char *above = "device-plugin gpu-feature-discovery dcgm dcgm-exporter operator-validator "
                        "mps-control-daemon";
    fx_add_node_values(&w, "gpu-pre", "driver=pre-installed container-toolkit=pre-installed");
    fx_run(&w, "gpu-pre", above);
    fx_add_node_values(&w, "gpu-off", "driver=false container-toolkit=false");
    fx_run(&w, "gpu-off", above);
    fx_add_node_values(&w, "gpu-mix", "driver=pre-installed container-toolkit=false");
    fx_run(&w, "gpu-mix", above);
    fx_analyze(&w);
    assert_int_equal(w.f.nitems, 0);
    assert_int_equal(w.f.complete_nodes, 3);
    assert_int_equal(w.f.violations, 0);
    int drv = gpuop_operand_by_name("driver"), tk = gpuop_operand_by_name("container-toolkit");
    for (size_t i = 0; i < w.f.nnodes; i++) {
        const struct gpuop_node_result *r = &w.f.nodes[i];
        assert_int_equal(r->cell[drv], GPUOP_CELL_HOST_PROVIDED);
        assert_int_equal(r->cell[tk], GPUOP_CELL_HOST_PROVIDED);
        assert_int_equal(r->host_provided & ((1u << drv) | (1u << tk)), (1u << drv) | (1u << tk));
    }
    assert_int_equal(w.f.operands[drv].expected_nodes, 0);
    struct gpuop_report_opts o = {.policy_name = "main", .namespace = "gpuop-system", .now = T0};
    char *t = text(&w, &o), line[256];
    assert_string_equal(line_of(t, "gpu-pre", line, sizeof(line)),
                        "gpu-pre  h       h        +             +    +     +             +        "
                        "  d           d          +");
    assert_non_null(strstr(
        t, "Host-provided (information, not findings):\n"
           "  driver on 1 node (label nvidia.com/gpu.deploy.driver=false: excluded on purpose by "
           "a person)\n"
           "  driver on 2 nodes (label nvidia.com/gpu.deploy.driver=pre-installed: NVIDIA's driver "
           "container found a driver on the host)\n"
           "  container-toolkit on 2 nodes (label nvidia.com/gpu.deploy.container-toolkit=false: "
           "excluded on purpose by a person)\n"
           "  container-toolkit on 1 node (label "
           "nvidia.com/gpu.deploy.container-toolkit=pre-installed: NVIDIA's driver container "
           "found a driver on the host)\n"));
    free(t);
    fx_world_free(&w);

    /* a driver pod left on a node the driver container labelled so: the
       message says the value and who wrote it */
    fx_world_init(&w, FX_NO_DS_STATUS, 0);
    fx_add_node_values(&w, "gpu-left", "driver=pre-installed");
    fx_run_all(&w, "gpu-left", "dra-driver");
    fx_analyze(&w);
    assert_int_equal(w.f.nitems, 1);
    assert_int_equal(w.f.items[0].reason, GPUOP_REASON_LABEL_NOT_TRUE);
    char msg[GPUOP_FINDING_MESSAGE_MAX];
    gpuop_finding_message(&w.f, &w.f.items[0], msg, sizeof(msg));
    assert_non_null(strstr(msg, "label nvidia.com/gpu.deploy.driver is \"pre-installed\" "
                                "(NVIDIA's driver container found a driver on the host)"));
    fx_world_free(&w);
}

static void test_text_matrix(void **state)
{
    struct fx_world w;
    fx_world_init(&w, FX_NO_DS_STATUS, 0);
    w.pol.operands[gpuop_operand_by_name("dcgm-exporter")].enabled = false;
    fx_add_node(&w, "gpu-ok", FX_ALL);
    fx_run(&w, "gpu-ok",
           "driver container-toolkit device-plugin gpu-feature-discovery dcgm "
           "operator-validator mig-manager mps-control-daemon");
    /* its config is not MPS (no mps.capable): the MPS daemon is not for it */
    fx_add_node(&w, "gpu-broken",
                "driver container-toolkit device-plugin gpu-feature-discovery dcgm dcgm-exporter "
                "operator-validator mig-manager");
    fx_run(&w, "gpu-broken", "driver device-plugin gpu-feature-discovery");
    fx_add_node(&w, "gpu-new", "driver");
    fx_analyze(&w);
    struct gpuop_report_opts o = {.policy_name = "main", .namespace = "gpuop-system", .now = T0};
    char *t = text(&w, &o), line[256];

    assert_non_null(
        strstr(t, "GpuPolicy \"main\", operands in namespace gpuop-system: 3 GPU nodes"));
    assert_non_null(strstr(t, "NODE        driver  toolkit  devicePlugin  gfd  dcgm  dcgmExporter  "
                              "validator  migManager  draDriver  mps\n"));
    assert_string_equal(line_of(t, "gpu-ok", line, sizeof(line)),
                        "gpu-ok      +       +        +             +    +     d             +     "
                        "     +           d          +");
    assert_string_equal(line_of(t, "gpu-broken", line, sizeof(line)),
                        "gpu-broken  +       M        V             V    M     d             M     "
                        "     M           d          -");
    assert_string_equal(line_of(t, "gpu-new", line, sizeof(line)),
                        "gpu-new     M       N        N             N    N     d             N     "
                        "     N           d          -");
    assert_non_null(strstr(t, "legend: + running; M missing"));
    assert_non_null(strstr(t, "\nFindings (13):\n"));
    assert_non_null(
        strstr(t, "  gpu-broken  device-plugin  OrderingViolation/DevicePluginWithoutToolkit\n"
                  "      device-plugin runs but container-toolkit"));
    assert_non_null(strstr(t, "  gpu-new  driver  Missing/PodNotCreated\n"));
    assert_non_null(strstr(t, "Host-provided (information, not findings):\n"
                              "  dcgm-exporter on 3 nodes (spec.dcgmExporter.enabled=false)\n"));
    assert_non_null(strstr(t, "Summary: 3 GPU nodes, 1 complete, 2 nodes with findings (Missing "
                              "5, NotScheduled 6, Unexpected 0, OrderingViolation 2); operand "
                              "chain broken on 1 node.\n"));
    assert_null(strchr(t, '\033')); /* no colour unless asked */
    free(t);

    o.color = true;
    t = text(&w, &o);
    assert_non_null(strstr(t, "\033[32m+\033[0m"));
    assert_non_null(strstr(t, "\033[1;31mV\033[0m"));
    free(t);

    /* node filter */
    o.color = false;
    o.node_filter = "new";
    t = text(&w, &o);
    assert_non_null(strstr(t, "gpu-new "));
    assert_null(strstr(t, "gpu-broken"));
    assert_null(strstr(t, "gpu-ok"));
    assert_non_null(strstr(t, "Findings (7):"));
    assert_non_null(strstr(t, "Shown: 1 node matching \"new\"."));
    free(t);
    assert_int_equal(gpuop_report_exit_code(&w.f), 1);
    fx_world_free(&w);
}

static void test_text_grouping(void **state)
{
    struct fx_world w;
    fx_world_init(&w, FX_NO_DS_STATUS, 0);
    for (int i = 0; i < 100; i++) {
        char name[32];
        snprintf(name, sizeof(name), "gpu-%03d", i);
        fx_add_node(&w, name, i == 42 ? FX_ALL : "driver");
        fx_run(&w, name, i == 42 ? FX_ALL : "driver");
    }
    fx_analyze(&w);
    char *t = text(&w, NULL), line[256];
    assert_non_null(strstr(t, "gpu-000 +98 like it"));
    assert_string_equal(line_of(t, "gpu-042", line, sizeof(line)),
                        "gpu-042              +       +        +             +    +     +          "
                        "   +          +           d          +");
    /* 99 x 7 NotScheduled findings: grouped by operand and reason */
    assert_non_null(strstr(t, "Findings (693):\n"));
    assert_non_null(strstr(t, "  99 x container-toolkit  NotScheduled/LabelAbsent  (gpu-000, "
                              "gpu-001, gpu-002, ...)\n      e.g. gpu-000: Label "
                              "nvidia.com/gpu.deploy.container-toolkit is absent"));
    assert_null(strstr(t, "gpu-099  container-toolkit"));
    assert_null(strstr(t, "chain broken")); /* no violation, not mentioned */
    free(t);

    /* never group when asked */
    struct gpuop_report_opts o = {.max_rows = SIZE_MAX, .max_findings = SIZE_MAX};
    t = text(&w, &o);
    assert_null(strstr(t, "like it"));
    assert_non_null(strstr(t, "gpu-099  container-toolkit  NotScheduled/LabelAbsent"));
    free(t);
    fx_world_free(&w);
}

static void test_clean_and_empty(void **state)
{
    struct fx_world w;
    fx_world_init(&w, FX_NO_DS_STATUS, 0);
    fx_analyze(&w);
    char *t = text(&w, NULL);
    assert_non_null(strstr(t, "No GPU node: no node is labelled nvidia.com/gpu.present=true"));
    assert_null(strstr(t, "NODE"));
    free(t);
    assert_int_equal(gpuop_report_exit_code(&w.f), 1); /* nothing checked is not clean */

    fx_add_node(&w, "gpu-a", FX_ALL);
    fx_run(&w, "gpu-a", FX_ALL);
    fx_analyze(&w);
    t = text(&w, NULL);
    assert_non_null(strstr(t, "Summary: 1 GPU node, 1 complete.\n"));
    assert_null(strstr(t, "Findings"));
    free(t);
    assert_int_equal(gpuop_report_exit_code(&w.f), 0);
    fx_world_free(&w);
}

/* status.upgrade in the text: the listed nodes with what they wait for,
 * and how many more the status left out (nodesOmitted). */
static void test_upgrade_text(void **state)
{
    (void)state;
    struct fx_world w;
    fx_world_init(&w, 0, 0);
    fx_add_node(&w, "gpu-a", FX_ALL);
    fx_run(&w, "gpu-a", FX_ALL);
    fx_analyze(&w);
    json_t *up = json_pack("{s:i, s:s, s:{s:i}, s:{s:i}, s:[{s:s, s:s, s:s}], s:i}", "revision", 2,
                           "version", "595.91.07", "counts", "upgrade-required", 4, "versions", "1",
                           4, "nodes", "name", "gpu-a", "state", "upgrade-required", "waitingFor",
                           "waiting for a free slot", "nodesOmitted", 3);
    assert_non_null(up);
    struct gpuop_report_opts o = {.upgrade = up, .now = T0};
    char *t = text(&w, &o);
    assert_non_null(strstr(t, "gpu-a: upgrade-required, waiting for a free slot\n"));
    assert_non_null(strstr(t, "  and 3 more nodes in the upgrade\n"));
    assert_null(strstr(t, "skipped"));
    free(t);
    /* the nodes the skip label keeps out, by name */
    json_object_set_new(up, "skipped", json_pack("[s, s]", "gpu-b", "gpu-c"));
    t = text(&w, &o);
    assert_non_null(
        strstr(t, "  skipped (label nvidia.com/gpu-driver-upgrade.skip=true): gpu-b, gpu-c\n"));
    free(t);
    json_decref(up);
    fx_world_free(&w);
}

static void test_json(void **state)
{
    struct fx_world w;
    fx_world_init(&w, FX_NO_DS_STATUS, 0);
    for (int i = 0; i < 70; i++) {
        char name[32];
        snprintf(name, sizeof(name), "gpu-%02d", i);
        fx_add_node(&w, name, "driver"); /* 5 NotScheduled each */
        fx_run(&w, name, "driver");
    }
    fx_analyze(&w);
    struct gpuop_report_opts o = {.namespace = "ns", .now = T0};
    json_t *doc = gpuop_report_json(&w.pol, &w.f, &o);
    assert_non_null(doc);
    assert_string_equal(json_string_value(json_object_get(doc, "policy")), "main");
    assert_string_equal(json_object_iter_key(json_object_iter(doc)), "policy");
    assert_string_equal(json_string_value(json_object_get(doc, "namespace")), "ns");
    /* no cap for check */
    assert_int_equal(json_array_size(json_object_get(doc, "nodes")), 70);
    assert_int_equal(json_integer_value(json_object_get(doc, "nodesOmitted")), 0);
    json_t *conds = json_object_get(doc, "conditions");
    assert_int_equal(json_array_size(conds), 3); /* no Reconciled */
    for (size_t i = 0; i < 3; i++)
        assert_string_not_equal(
            json_string_value(json_object_get(json_array_get(conds, i), "type")), "Reconciled");
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(doc, "summary"), "gpuNodes")), 70);
    json_decref(doc);

    o.node_filter = "gpu-1";
    doc = gpuop_report_json(&w.pol, &w.f, &o);
    assert_int_equal(json_array_size(json_object_get(doc, "nodes")), 10);
    json_decref(doc);

    char *s = structured(&w, &o, false);
    json_error_t e;
    doc = json_loads(s, 0, &e);
    assert_non_null(doc);
    assert_int_equal(json_array_size(json_object_get(doc, "nodes")), 10);
    json_decref(doc);
    free(s);

    s = structured(&w, &o, true);
    assert_true(strncmp(s, "policy: main\n", 13) == 0);
    assert_non_null(strstr(s, "gpuNodes: 70"));
    assert_non_null(strstr(s, "reason: LabelAbsent"));
    free(s);
    fx_world_free(&w);
}

static void test_symbols(void **state)
{
    /* every cell has a distinct one-character symbol and a legend */
    for (int a = 0; a < GPUOP_CELL_COUNT; a++) {
        assert_int_equal(strlen(gpuop_report_symbol(a)), 1);
        assert_true(strlen(gpuop_report_legend(a)) > 3);
        for (int b = a + 1; b < GPUOP_CELL_COUNT; b++)
            assert_string_not_equal(gpuop_report_symbol(a), gpuop_report_symbol(b));
    }
    assert_string_equal(gpuop_report_symbol(99), "?");
}

/* What the scheduler sees and the enforced order, in check's matrix and
 * document: per node gpus, summary advertisedGpus, violations counting
 * nodes (not findings), Held as H with its own count. */
static void test_gpus_violations_held(void **state)
{
    struct fx_world w;
    fx_world_init(&w, FX_NO_DS_STATUS, 0);
    w.pol.ordering = GPUOP_ORDERING_ENFORCE;
    /* three operands run above a missing toolkit: three violations, one node */
    fx_add_node(&w, "gpu-a", FX_ALL);
    fx_run_all(&w, "gpu-a", "container-toolkit");
    w.nodes[0]->gpus = (struct gpuop_gpu_counts){8, 7, 14, 7};
    /* the device plugin held: the toolkit is not labelled */
    fx_add_node(&w, "gpu-h", "driver device-plugin");
    fx_run(&w, "gpu-h", "driver");
    w.nodes[1]->gpus = (struct gpuop_gpu_counts){2, 0, 0, 0}; /* none allocatable */
    fx_analyze(&w);
    assert_true(w.f.by_kind[GPUOP_KIND_ORDERING] >= 3);
    assert_int_equal(w.f.violations, 1);

    struct gpuop_report_opts o = {.now = T0};
    char *t = text(&w, &o), line[256];
    assert_string_equal(line_of(t, "gpu-h", line, sizeof(line)),
                        "gpu-h  +       N        H             N    N     N             N          "
                        "N           d          -");
    assert_non_null(strstr(t, "  gpu-h  device-plugin  Held/HeldByPrerequisite\n"
                              "      device-plugin is labelled to run here, but with "
                              "spec.ordering: enforce"));
    assert_non_null(strstr(t, ", Held 1); operand chain broken on 1 node.\n"));
    assert_non_null(strstr(t, "H held by a prerequisite's label"));
    free(t);

    json_t *doc = gpuop_report_json(&w.pol, &w.f, &o);
    json_t *sum = json_object_get(doc, "summary");
    assert_int_equal(json_integer_value(json_object_get(sum, "violations")), 1);
    assert_int_equal(json_integer_value(json_object_get(sum, "advertisedGpus")), 7);
    json_t *a = json_array_get(json_object_get(doc, "nodes"), 0);
    assert_string_equal(json_string_value(json_object_get(a, "name")), "gpu-a");
    json_t *g = json_object_get(a, "gpus");
    assert_int_equal(json_integer_value(json_object_get(g, "capacity")), 8);
    assert_int_equal(json_integer_value(json_object_get(g, "allocatable")), 7);
    json_t *mig = json_object_get(a, "migDevices");
    assert_int_equal(json_integer_value(json_object_get(mig, "capacity")), 14);
    assert_int_equal(json_integer_value(json_object_get(mig, "allocatable")), 7);
    json_t *h = json_array_get(json_object_get(doc, "nodes"), 1);
    assert_null(json_object_get(h, "migDevices")); /* only where there are any */
    bool held = false;
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(h, "findings"), i, x) held |=
        strcmp(json_string_value(json_object_get(x, "kind")), "Held") == 0;
    assert_true(held);
    json_decref(doc);
    assert_int_equal(gpuop_report_exit_code(&w.f), 1);
    fx_world_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_advertised_by),        cmocka_unit_test(test_text_matrix),
        cmocka_unit_test(test_text_grouping),        cmocka_unit_test(test_preinstalled),
        cmocka_unit_test(test_clean_and_empty),      cmocka_unit_test(test_json),
        cmocka_unit_test(test_upgrade_text),         cmocka_unit_test(test_symbols),
        cmocka_unit_test(test_gpus_violations_held),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
