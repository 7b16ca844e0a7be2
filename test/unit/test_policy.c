/*
 * test_policy.c - GpuPolicy parsing: defaults, every validation problem with
 * its exact field path, wrong types, unknown fields, disabled operands, and
 * that the rest of a policy keeps working after a bad field. Inputs are JSON
 * literals (what the API server sends); a type-swapping sweep feeds every
 * field every wrong type and checks each is reported and defaulted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "gpuop/policy.h"

/* Parses a JSON text (the test's own literal) into *p; asserts rc 0. */
static void parse_json(const char *text, struct gpuop_policy *p)
{
    json_error_t jerr;
    struct gpuop_err err = {0};
    json_t *obj = json_loads(text, 0, &jerr);
    if (!obj)
        fail_msg("bad test JSON: %s: %s", jerr.text, text);
    assert_int_equal(gpuop_policy_parse(obj, p, &err), 0);
    json_decref(obj);
}

/* Index of the problem about field, or -1. */
static int find_problem(const struct gpuop_policy *p, const char *field)
{
    for (int i = 0; i < p->nproblems && i < GPUOP_POLICY_PROBLEMS_MAX; i++)
        if (!strcmp(p->problems[i].field, field))
            return i;
    return -1;
}

static void print_problems(const struct gpuop_policy *p)
{
    for (int i = 0; i < p->nproblems && i < GPUOP_POLICY_PROBLEMS_MAX; i++)
        print_message("  problem %s: %s\n", p->problems[i].field, p->problems[i].message);
}

static void assert_problem(const struct gpuop_policy *p, const char *field, const char *substr)
{
    int i = find_problem(p, field);
    if (i < 0) {
        print_problems(p);
        fail_msg("no problem reported for %s", field);
    }
    if (substr && !strstr(p->problems[i].message, substr))
        fail_msg("problem for %s says \"%s\", expected it to mention \"%s\"", field,
                 p->problems[i].message, substr);
}

static void assert_defaults(const struct gpuop_policy *p)
{
    for (int i = 0; i < gpuop_operand_count(); i++) {
        const struct gpuop_operand_spec *o = &p->operands[i];
        const char *cfg = gpuop_operand_get(i)->config;
        assert_int_equal(o->enabled, gpuop_operand_get(i)->enabled);
        if (cfg && *cfg)
            assert_string_equal(o->config_name, cfg);
        else /* none, or "": one only when named */
            assert_null(o->config_name);
        char ref[600];
        gpuop_operand_image_ref(gpuop_operand_get(i), ref, sizeof(ref));
        assert_string_equal(o->image, ref);
        assert_int_equal(o->os_tag, gpuop_operand_get(i)->per_os);
        assert_string_equal(o->pull_policy, "IfNotPresent");
        assert_true(json_is_array(o->args));
        assert_int_equal(json_array_size(o->args), 0);
        assert_true(json_is_array(o->env));
        assert_int_equal(json_array_size(o->env), 0);
        assert_null(o->resources);
    }
    assert_int_equal(json_array_size(p->tolerations), 1);
    json_t *t = json_array_get(p->tolerations, 0);
    assert_string_equal(json_string_value(json_object_get(t, "key")), "nvidia.com/gpu");
    assert_string_equal(json_string_value(json_object_get(t, "operator")), "Exists");
    assert_string_equal(json_string_value(json_object_get(t, "effect")), "NoSchedule");
    assert_null(json_object_get(t, "value"));
    assert_string_equal(p->priority_class, "system-node-critical");
    assert_string_equal(p->update_strategy, "RollingUpdate");
    assert_int_equal(json_object_size(p->labels), 0);
    assert_int_equal(json_object_size(p->annotations), 0);
    assert_int_equal(json_array_size(p->image_pull_secrets), 0);
    assert_null(p->max_unavailable);
    assert_int_equal(p->ordering, GPUOP_ORDERING_REPORT);
    assert_int_equal(p->terminating_grace_s, 300);
    assert_int_equal(p->advertise_grace_s, 120);
    assert_int_equal(p->event_grace_s, 60);
}

static void test_defaults(void **state)
{
    static const char *const inputs[] = {
        "{}",
        "{\"spec\": {}}",
        "{\"spec\": null}",
        "{\"apiVersion\": \"gpuop.dev/v1alpha1\", \"kind\": \"GpuPolicy\", \"spec\": {"
        "\"driver\": {}, \"toolkit\": null, \"devicePlugin\": {\"image\": null},"
        "\"daemonsets\": {}}}",
    };
    for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
        struct gpuop_policy p;
        parse_json(inputs[i], &p);
        if (p.nproblems)
            print_problems(&p);
        assert_int_equal(p.nproblems, 0);
        assert_defaults(&p);
        assert_null(p.name);
        assert_null(p.uid);
        assert_int_equal(p.created, 0);
        gpuop_policy_free(&p);
    }
}

static long long epoch(int y, int mo, int d, int h, int mi, int s)
{
    struct tm tm = {0};
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = s;
    return (long long)timegm(&tm);
}

static void test_metadata(void **state)
{
    struct gpuop_policy p;
    parse_json("{\"metadata\": {\"name\": \"default\", \"uid\": \"0b8e-11\", \"generation\": 7,"
               "\"creationTimestamp\": \"2026-11-29T21:06:40Z\"}, \"spec\": {}}",
               &p);
    assert_string_equal(p.name, "default");
    assert_string_equal(p.uid, "0b8e-11");
    assert_int_equal(p.generation, 7);
    assert_int_equal(p.created, epoch(2026, 11, 29, 21, 6, 40));
    gpuop_policy_free(&p);
    assert_null(p.name);

    /* offsets, fractions, leap years */
    parse_json("{\"metadata\": {\"creationTimestamp\": \"2024-02-29T23:30:00.123+02:30\"}}", &p);
    assert_int_equal(p.created, epoch(2024, 2, 29, 21, 0, 0));
    gpuop_policy_free(&p);
    parse_json("{\"metadata\": {\"creationTimestamp\": \"1999-12-31T20:00:00-05:00\"}}", &p);
    assert_int_equal(p.created, epoch(2000, 1, 1, 1, 0, 0));
    gpuop_policy_free(&p);
    /* garbage times are "unknown", never a crash */
    static const char *const bad[] = {"",
                                      "yesterday",
                                      "2026-13-01T00:00:00Z",
                                      "2026-11-29T21:06:40",
                                      "2026-11-29T21:06:40+0200",
                                      "2026-11-29T21:06:40Zjunk"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char buf[160];
        snprintf(buf, sizeof(buf), "{\"metadata\": {\"creationTimestamp\": \"%s\"}}", bad[i]);
        parse_json(buf, &p);
        assert_int_equal(p.created, 0);
        gpuop_policy_free(&p);
    }
}

static void test_not_an_object(void **state)
{
    struct gpuop_policy p;
    struct gpuop_err err = {0};
    json_t *arr = json_array();
    assert_int_equal(gpuop_policy_parse(arr, &p, &err), GPUOP_EINVAL);
    assert_int_equal(err.rc, GPUOP_EINVAL);
    assert_int_equal(gpuop_policy_parse(NULL, &p, NULL), GPUOP_EINVAL);
    json_decref(arr);
}

/* One invalid input and the problem it must produce. */
struct bad_case {
    const char *spec;  /* JSON of spec */
    const char *field; /* exact path */
    const char *says;  /* substring of the message */
};

static const struct bad_case bad_cases[] = {
    {"{\"driver\": {\"enabled\": \"yes\"}}", "spec.driver.enabled", "using true"},
    {"{\"driver\": {\"enabled\": 0}}", "spec.driver.enabled", "not a number"},
    {"{\"toolkit\": {\"image\": \"\"}}", "spec.toolkit.image", "is empty"},
    {"{\"toolkit\": {\"image\": \"repo/img: v1\"}}", "spec.toolkit.image", "contains a space"},
    {"{\"toolkit\": {\"image\": 5}}", "spec.toolkit.image", "a number"},
    {"{\"driver\": {\"imagePullPolicy\": \"Sometimes\"}}", "spec.driver.imagePullPolicy",
     "using IfNotPresent"},
    {"{\"driver\": {\"imagePullPolicy\": \"always\"}}", "spec.driver.imagePullPolicy",
     "\"always\""},
    {"{\"gfd\": {\"args\": \"--oneshot\"}}", "spec.gfd.args", "list of strings"},
    {"{\"gfd\": {\"args\": [\"--a\", 3]}}", "spec.gfd.args[1]", "must be a string"},
    {"{\"gfd\": {\"env\": {\"A\": \"b\"}}}", "spec.gfd.env", "list of {name, value}"},
    {"{\"gfd\": {\"env\": [\"A=b\"]}}", "spec.gfd.env[0]", "entry ignored"},
    {"{\"gfd\": {\"env\": [{\"value\": \"x\"}]}}", "spec.gfd.env[0].name", "needs a string"},
    {"{\"gfd\": {\"env\": [{\"name\": \"\", \"value\": \"x\"}]}}", "spec.gfd.env[0].name",
     "1 to 1024"},
    {"{\"gfd\": {\"env\": [{\"name\": \"A=B\"}]}}", "spec.gfd.env[0].name", "'='"},
    {"{\"gfd\": {\"env\": [{\"name\": \"A\", \"value\": true}]}}", "spec.gfd.env[0].value",
     "using \"true\""},
    {"{\"gfd\": {\"env\": [{\"name\": \"A\", \"value\": 42}]}}", "spec.gfd.env[0].value",
     "using \"42\""},
    {"{\"gfd\": {\"env\": [{\"name\": \"A\", \"value\": [1]}]}}", "spec.gfd.env[0].value",
     "entry ignored"},
    {"{\"gfd\": {\"env\": [{\"name\": \"A\", \"valeu\": \"1\"}]}}", "spec.gfd.env[0].valeu",
     "did you mean \"value\""},
    {"{\"gfd\": {\"env\": [{\"name\": \"A\"}, {\"name\": \"A\", \"value\": \"2\"}]}}",
     "spec.gfd.env[1]", "duplicate"},
    {"{\"dcgmExporter\": {\"resources\": \"big\"}}", "spec.dcgmExporter.resources", "no resources"},
    {"{\"dcgmExporter\": {\"resources\": {\"limits\": {\"memory\": \"lots\"}}}}",
     "spec.dcgmExporter.resources.limits.memory", "not a quantity"},
    {"{\"dcgmExporter\": {\"resources\": {\"limits\": {\"cpu\": -1}}}}",
     "spec.dcgmExporter.resources.limits.cpu", "-1 is negative"},
    {"{\"dcgmExporter\": {\"resources\": {\"limits\": [1]}}}", "spec.dcgmExporter.resources.limits",
     "map of resource"},
    {"{\"dcgmExporter\": {\"resources\": {\"limit\": {}}}}", "spec.dcgmExporter.resources.limit",
     "did you mean \"limits\""},
    {"{\"validator\": 3}", "spec.validator", "must be an object"},
    {"{\"validator\": {\"enable\": false}}", "spec.validator.enable", "did you mean \"enabled\""},
    {"{\"drvier\": {\"enabled\": false}}", "spec.drvier", "did you mean \"driver\""},
    {"{\"migManager\": {\"enabled\": \"on\"}}", "spec.migManager.enabled",
     "using false (disabled)"},
    {"{\"migManager\": 1}", "spec.migManager", "defaults (disabled)"},
    {"{\"migManager\": {\"config\": \"cm\"}}", "spec.migManager.config", "object {name}"},
    {"{\"migManager\": {\"config\": {\"name\": \"Bad_Name\"}}}", "spec.migManager.config.name",
     "using default-mig-parted-config"},
    {"{\"migManager\": {\"config\": {\"nam\": \"x\"}}}", "spec.migManager.config.nam",
     "did you mean \"name\""},
    {"{\"devicePlugin\": {\"config\": {\"name\": \"Bad_Name\"}}}", "spec.devicePlugin.config.name",
     "using none"},
    {"{\"devicePlugin\": {\"config\": {\"name\": \"x\", \"default\": \"a b\"}}}",
     "spec.devicePlugin.config.default", "must be a key of the ConfigMap"},
    {"{\"devicePlugin\": {\"config\": {\"name\": \"x\", \"default\": 4}}}",
     "spec.devicePlugin.config.default", "not a number; using none"},
    {"{\"devicePlugin\": {\"config\": {\"name\": \"x\", \"defualt\": \"a\"}}}",
     "spec.devicePlugin.config.defualt", "did you mean \"default\""},
    {"{\"devicePlugin\": {\"config\": \"x\"}}", "spec.devicePlugin.config",
     "object {name, default}"},
    {"{\"devicePlugin\": {\"mps\": {\"root\": \"run/mps\"}}}", "spec.devicePlugin.mps.root",
     "must be an absolute host path"},
    {"{\"devicePlugin\": {\"mps\": {\"root\": \"/\"}}}", "spec.devicePlugin.mps.root",
     "below the host root"},
    {"{\"devicePlugin\": {\"mps\": \"on\"}}", "spec.devicePlugin.mps", "object {root}"},
    {"{\"devicePlugin\": {\"mps\": {\"rot\": \"/x\"}}}", "spec.devicePlugin.mps.rot",
     "did you mean \"root\""},
    {"{\"devicePlugin\": {\"confg\": {}}}", "spec.devicePlugin.confg", "unknown field"},
    {"{\"mig\": {\"strategy\": \"both\"}}", "spec.mig.strategy",
     "none, single or mixed, not \"both\"; using single"},
    {"{\"mig\": \"mixed\"}", "spec.mig", "object {strategy}"},
    {"{\"mig\": {\"strategie\": \"mixed\"}}", "spec.mig.strategie", "did you mean \"strategy\""},
    {"{\"toolkit\": {\"installDir\": \"opt/nvidia\"}}", "spec.toolkit.installDir",
     "absolute host path"},
    {"{\"toolkit\": {\"installDir\": \"/opt/a b\"}}", "spec.toolkit.installDir",
     "using /usr/local/nvidia"},
    {"{\"driver\": {\"installDir\": \"/opt\"}}", "spec.driver.installDir", "unknown field"},
    {"{\"hostPaths\": {\"driverInstallDir\": \"home/kubernetes\"}}",
     "spec.hostPaths.driverInstallDir", "absolute host path"},
    {"{\"hostPaths\": {\"rootFS\": \"/a/../b\"}}", "spec.hostPaths.rootFS", "using /"},
    {"{\"hostPaths\": {\"kubeletRootDir\": \"/\"}}", "spec.hostPaths.kubeletRootDir",
     "below the host root"},
    {"{\"hostPaths\": {\"driverInstallDir\": 7}}", "spec.hostPaths.driverInstallDir",
     "using /run/nvidia/driver"},
    {"{\"hostPaths\": {\"kubletRootDir\": \"/x\"}}", "spec.hostPaths.kubletRootDir",
     "did you mean \"kubeletRootDir\""},
    {"{\"hostPaths\": \"/x\"}", "spec.hostPaths", "must be an object"},
    {"{\"validator\": {\"plugin\": {\"env\": [{\"name\": \"WITH_WORKLOAD\", \"value\": "
     "\"true\"}]}}}",
     "spec.validator.plugin.env", "no workload validation"},
    {"{\"validator\": {\"driver\": {\"env\": \"A=1\"}}}", "spec.validator.driver.env",
     "must be a list"},
    {"{\"validator\": {\"toolkit\": {\"evn\": []}}}", "spec.validator.toolkit.evn",
     "did you mean \"env\""},
    {"{\"validator\": {\"cuda\": {\"env\": []}}}", "spec.validator.cuda", "no cuda-validation"},
    {"{\"toolkit\": {\"plugin\": {\"env\": []}}}", "spec.toolkit.plugin", "unknown field"},
    {"{\"dcgm\": {\"hostPort\": 1234}}", "spec.dcgm.hostPort", "deprecated and unused"},
    {"{\"dcgm\": {\"hostNetwork\": \"yes\"}}", "spec.dcgm.hostNetwork", "true or false"},
    {"{\"dcgmExporter\": {\"config\": {\"name\": \"Bad_Name\"}}}", "spec.dcgmExporter.config.name",
     "using none"},
    {"{\"dcgmExporter\": {\"serviceMonitor\": {\"enabled\": true, \"interval\": \"15 sec\"}}}",
     "spec.dcgmExporter.serviceMonitor.interval", "Prometheus duration"},
    {"{\"dcgmExporter\": {\"serviceMonitor\": {\"scrapeTimeout\": \"1s5m\"}}}",
     "spec.dcgmExporter.serviceMonitor.scrapeTimeout", "Prometheus duration"},
    {"{\"dcgmExporter\": {\"serviceMonitor\": {\"enabld\": true}}}",
     "spec.dcgmExporter.serviceMonitor.enabld", "did you mean \"enabled\""},
    {"{\"dcgmExporter\": {\"serviceMonitor\": {\"relabelings\": [1]}}}",
     "spec.dcgmExporter.serviceMonitor.relabelings", "list of relabelings"},
    {"{\"dcgmExporter\": {\"serviceMonitor\": {\"additionalLabels\": {\"app.kubernetes.io/name\": "
     "\"x\"}}}}",
     "spec.dcgmExporter.serviceMonitor.additionalLabels.app.kubernetes.io/name", "set by gpuop"},
    {"{\"operator\": {\"initContainer\": {\"image\": \"x\"}}}", "spec.operator.initContainer",
     "the NVIDIA GPU Operator's own pod"},
    {"{\"operator\": {\"defaultRuntime\": \"cri-o\"}}", "spec.operator.defaultRuntime",
     "containerd, crio or docker, not \"cri-o\"; using containerd"},
    {"{\"operator\": {\"defaultRuntime\": true}}", "spec.operator.defaultRuntime",
     "using containerd"},
    {"{\"cdi\": true}", "spec.cdi", "must be an object"},
    {"{\"cdi\": {\"enabled\": \"false\"}}", "spec.cdi.enabled", "must be true or false"},
    {"{\"cdi\": {\"enable\": false}}", "spec.cdi.enable", "did you mean \"enabled\""},
    {"{\"cdi\": {\"enabled\": false, \"default\": true}}", "spec.cdi.default",
     "deprecated and no longer used"},
    {"{\"cdi\": {\"enabled\": false, \"nriPluginEnabled\": true}}", "spec.cdi.nriPluginEnabled",
     "spec.cdi.enabled is false; it stays off"},
    {"{\"cdi\": {\"nriPluginEnabled\": true}, \"toolkit\": {\"enabled\": false}}",
     "spec.cdi.nriPluginEnabled", "container toolkit, which is disabled"},
    {"{\"operator\": {\"runtimeClass\": \"Nvidia\"}}", "spec.operator.runtimeClass",
     "RFC 1123 label"},
    {"{\"operator\": {\"runtimeClass\": \"nvidia.runtime\"}}", "spec.operator.runtimeClass",
     "using nvidia"},
    {"{\"operator\": {\"runtimeClass\": 3}}", "spec.operator.runtimeClass", "not a number"},
    {"{\"operator\": \"nvidia\"}", "spec.operator", "must be an object"},
    {"{\"driver\": {\"upgradePolicy\": 5}}", "spec.driver.upgradePolicy", "must be an object"},
    {"{\"driver\": {\"upgradePolicy\": {\"autoUpgrade\": \"yes\"}}}",
     "spec.driver.upgradePolicy.autoUpgrade", "true or false"},
    {"{\"driver\": {\"upgradePolicy\": {\"maxParallelUpgrades\": -1}}}",
     "spec.driver.upgradePolicy.maxParallelUpgrades", "using 1"},
    {"{\"driver\": {\"upgradePolicy\": {\"maxUnavailable\": \"150%\"}}}",
     "spec.driver.upgradePolicy.maxUnavailable", "using \"25%\""},
    {"{\"driver\": {\"upgradePolicy\": {\"maxUnavailable\": 1.5}}}",
     "spec.driver.upgradePolicy.maxUnavailable", "percentage"},
    {"{\"driver\": {\"upgradePolicy\": {\"drain\": {\"timeoutSeconds\": \"5m\"}}}}",
     "spec.driver.upgradePolicy.drain.timeoutSeconds", "using 300"},
    {"{\"driver\": {\"upgradePolicy\": {\"drain\": {\"enabel\": true}}}}",
     "spec.driver.upgradePolicy.drain.enabel", "did you mean \"enable\""},
    {"{\"driver\": {\"upgradePolicy\": {\"gpuPodDeletion\": {\"force\": 1}}}}",
     "spec.driver.upgradePolicy.gpuPodDeletion.force", "true or false"},
    {"{\"driver\": {\"upgradePolicy\": {\"waitForCompletion\": {\"podSelector\": 3}}}}",
     "spec.driver.upgradePolicy.waitForCompletion.podSelector", "label selector"},
    {"{\"driver\": {\"upgradePolicy\": {\"onFailure\": \"retry\"}}}",
     "spec.driver.upgradePolicy.onFailure", "stop or rollback"},
    {"{\"driver\": {\"upgradePolicy\": {\"maxParalelUpgrades\": 2}}}",
     "spec.driver.upgradePolicy.maxParalelUpgrades", "did you mean \"maxParallelUpgrades\""},
    {"{\"toolkit\": {\"upgradePolicy\": {}}}", "spec.toolkit.upgradePolicy", "unknown field"},
    {"{\"driver\": {\"usePrecompiled\": \"yes\"}}", "spec.driver.usePrecompiled", "true or false"},
    {"{\"driver\": {\"usePrecompiled\": true, \"version\": \"sha256:"
     "0123456789012345678901234567890123456789012345678901234567890123\"}}",
     "spec.driver.usePrecompiled", "digest"},
    {"{\"driver\": {\"usePrecompiled\": true, \"image\": \"reg.example/driver:1\"}}",
     "spec.driver.usePrecompiled", "full reference"},
    {"{\"driver\": {\"usePrecompiled\": true, \"version\": \"1234567890123456789012345\"}}",
     "spec.driver.usePrecompiled", "no room"},
    {"{\"gfd\": {\"imagePullSecrets\": [\"s\"]}}", "spec.gfd.imagePullSecrets",
     "spec.daemonsets.imagePullSecrets"},
    {"{\"psa\": {\"enabled\": true}}", "spec.psa", "Pod Security Admission"},
    {"{\"migManagr\": {}}", "spec.migManagr", "did you mean \"migManager\""},
    {"{\"ordering\": \"strict\"}", "spec.ordering", "report or enforce"},
    {"{\"ordering\": true}", "spec.ordering", "using report"},
    {"{\"ordring\": \"enforce\"}", "spec.ordring", "did you mean \"ordering\""},
    {"{\"findings\": 5}", "spec.findings", "must be an object"},
    {"{\"findings\": {\"terminatingGracePeriodSeconds\": -1}}",
     "spec.findings.terminatingGracePeriodSeconds", "not -1; using 300"},
    {"{\"findings\": {\"advertiseGracePeriodSeconds\": \"2m\"}}",
     "spec.findings.advertiseGracePeriodSeconds", "not \"2m\"; using 120"},
    {"{\"findings\": {\"eventGracePeriodSeconds\": 1.5}}", "spec.findings.eventGracePeriodSeconds",
     "using 60"},
    {"{\"findings\": {\"eventGracePeriodSeconds\": 604801}}",
     "spec.findings.eventGracePeriodSeconds", "0 to 604800"},
    {"{\"findings\": {\"eventGracePeriodSecond\": 5}}", "spec.findings.eventGracePeriodSecond",
     "did you mean \"eventGracePeriodSeconds\""},
    {"{\"daemonsets\": []}", "spec.daemonsets", "must be an object"},
    {"{\"daemonsets\": {\"tolerations\": {}}}", "spec.daemonsets.tolerations", "nvidia.com/gpu"},
    {"{\"daemonsets\": {\"tolerations\": [{\"key\": \"a\", \"operator\": \"Exist\"}]}}",
     "spec.daemonsets.tolerations[0].operator", "Exists or Equal"},
    {"{\"daemonsets\": {\"tolerations\": [{\"operator\": \"Exists\"}, {\"key\": \"a\", "
     "\"operator\": \"Bogus\"}]}}",
     "spec.daemonsets.tolerations[1].operator", "toleration ignored"},
    {"{\"daemonsets\": {\"tolerations\": [{\"key\": \"a\", \"operator\": \"Exists\", \"value\": "
     "\"v\"}]}}",
     "spec.daemonsets.tolerations[0].value", "value ignored"},
    {"{\"daemonsets\": {\"tolerations\": [{\"key\": \"a\", \"effect\": \"NoRun\"}]}}",
     "spec.daemonsets.tolerations[0].effect", "NoSchedule"},
    {"{\"daemonsets\": {\"tolerations\": [{\"effect\": \"NoSchedule\"}]}}",
     "spec.daemonsets.tolerations[0].key", "unless operator is Exists"},
    {"{\"daemonsets\": {\"tolerations\": [\"nvidia.com/gpu\"]}}", "spec.daemonsets.tolerations[0]",
     "must be an object"},
    {"{\"daemonsets\": {\"tolerations\": [{\"key\": 1}]}}", "spec.daemonsets.tolerations[0].key",
     "must be a string"},
    {"{\"daemonsets\": {\"tolerations\": [{\"key\": \"bad key!\", \"operator\": \"Exists\"}]}}",
     "spec.daemonsets.tolerations[0].key", "not a valid taint key"},
    {"{\"daemonsets\": {\"tolerations\": [{\"key\": \"a\", \"value\": \"x\", "
     "\"tolerationSeconds\": 5}]}}",
     "spec.daemonsets.tolerations[0].tolerationSeconds", "NoExecute"},
    {"{\"daemonsets\": {\"tolerations\": [{\"key\": \"a\", \"operator\": \"Exists\", \"efect\": "
     "\"NoExecute\"}]}}",
     "spec.daemonsets.tolerations[0].efect", "did you mean \"effect\""},
    {"{\"daemonsets\": {\"priorityClassName\": 1}}", "spec.daemonsets.priorityClassName",
     "using system-node-critical"},
    {"{\"daemonsets\": {\"priorityClassName\": \"Not Valid\"}}",
     "spec.daemonsets.priorityClassName", "PriorityClass name"},
    {"{\"daemonsets\": {\"updateStrategy\": \"Recreate\"}}", "spec.daemonsets.updateStrategy",
     "using RollingUpdate"},
    {"{\"daemonsets\": {\"updateStrategy\": {\"type\": \"OnDelete\"}}}",
     "spec.daemonsets.updateStrategy", "not an object"},
    {"{\"daemonsets\": {\"labels\": {\"team\": 7}}}", "spec.daemonsets.labels.team",
     "must be a string"},
    {"{\"daemonsets\": {\"labels\": {\"team\": \"a b\"}}}", "spec.daemonsets.labels.team",
     "not a valid label value"},
    {"{\"daemonsets\": {\"labels\": {\"app.kubernetes.io/name\": \"x\"}}}",
     "spec.daemonsets.labels.app.kubernetes.io/name", "cannot be overridden"},
    {"{\"daemonsets\": {\"labels\": {\"app\": \"x\"}}}", "spec.daemonsets.labels.app",
     "cannot be overridden"},
    {"{\"daemonsets\": {\"labels\": {\"-bad\": \"x\"}}}", "spec.daemonsets.labels.-bad",
     "not a valid label key"},
    {"{\"daemonsets\": {\"labels\": []}}", "spec.daemonsets.labels", "map of strings"},
    {"{\"daemonsets\": {\"annotations\": {\"note\": false}}}", "spec.daemonsets.annotations.note",
     "must be a string"},
    {"{\"daemonsets\": {\"imagePullSecrets\": [\"Bad_Name\"]}}",
     "spec.daemonsets.imagePullSecrets[0]", "secret name"},
    {"{\"daemonsets\": {\"imagePullSecrets\": \"regcred\"}}", "spec.daemonsets.imagePullSecrets",
     "list of secret names"},
    {"{\"daemonsets\": {\"rollingUpdate\": {\"maxUnavailable\": 0}}}",
     "spec.daemonsets.rollingUpdate.maxUnavailable", "positive integer"},
    {"{\"daemonsets\": {\"rollingUpdate\": {\"maxUnavailable\": \"150%\"}}}",
     "spec.daemonsets.rollingUpdate.maxUnavailable", "percentage"},
    {"{\"daemonsets\": {\"rollingUpdate\": {\"maxSurge\": 1}}}",
     "spec.daemonsets.rollingUpdate.maxSurge", "unknown field"},
    {"{\"daemonsets\": {\"updateStrategy\": \"OnDelete\", \"rollingUpdate\": "
     "{\"maxUnavailable\": 2}}}",
     "spec.daemonsets.rollingUpdate", "OnDelete"},
    {"{\"daemonsets\": {\"tolerration\": []}}", "spec.daemonsets.tolerration",
     "did you mean \"tolerations\""},
    {"[]", "spec", "must be an object"},
    /* issue 13 section 2: what the API server or the kubelet refuses, named by the policy's field
     */
    {"{\"devicePlugin\": {\"env\": [{\"name\": \"A\"}, {\"name\": \"B\"}, {\"name\": \"C\"}, "
     "{\"name\": \"\u00fcn\u00ef\"}]}}",
     "spec.devicePlugin.env[3].name", "printable ASCII"},
    {"{\"gfd\": {\"env\": [{\"name\": \"A\\u0007B\"}]}}", "spec.gfd.env[0].name", "\"A?B\""},
    {"{\"gfd\": {\"env\": [{\"name\": \"A\\u202eB\"}]}}", "spec.gfd.env[0].name", "\"A???B\""},
    {"{\"gfd\": {\"env\": [{\"name\": \"A\\tB\"}]}}", "spec.gfd.env[0].name", "printable"},
    {"{\"gfd\": {\"env\": [{\"name\": 7}]}}", "spec.gfd.env[0].name", "not a number"},
    {"{\"toolkit\": {\"image\": \"UPPER/Case@@sha256:zz\"}}", "spec.toolkit.image",
     "InvalidImageName"},
    {"{\"toolkit\": {\"image\": \"Busybox\"}}", "spec.toolkit.image", "lower case"},
    {"{\"toolkit\": {\"image\": \"a:b:c\"}}", "spec.toolkit.image", "invalid tag"},
    {"{\"toolkit\": {\"image\": \"a/b:\"}}", "spec.toolkit.image", "invalid tag"},
    {"{\"toolkit\": {\"image\": \"a@sha256:zz\"}}", "spec.toolkit.image", "hexadecimal"},
    {"{\"toolkit\": {\"image\": \"a@sha256:abc\"}}", "spec.toolkit.image", "wrong length"},
    {"{\"toolkit\": {\"image\": \"a@md5:d41d8cd98f00b204e9800998ecf8427e\"}}", "spec.toolkit.image",
     "unknown algorithm"},
    {"{\"toolkit\": {\"image\": \"a//b\"}}", "spec.toolkit.image", "repository name"},
    {"{\"toolkit\": {\"image\": \"a___b\"}}", "spec.toolkit.image", "repository name"},
    {"{\"toolkit\": {\"image\": \"-a/b\"}}", "spec.toolkit.image", "repository name"},
    {"{\"toolkit\": {\"image\": \"reg-.io/a\"}}", "spec.toolkit.image", "registry"},
    {"{\"toolkit\": {\"image\": \"reg.io:x/a\"}}", "spec.toolkit.image", "registry"},
    {"{\"toolkit\": {\"image\": \"\u00fcber/a\"}}", "spec.toolkit.image", "non-ASCII"},
    /* an image ID (64 hex digits) alone is now a name, joined with
       repository and version: see test_image_keys */
    {"{\"toolkit\": {\"resources\": {\"limits\": {\"cpu\": \"1\"}, \"requests\": {\"cpu\": "
     "\"8\"}}}}",
     "spec.toolkit.resources.requests.cpu", "8 is above limits.cpu (1)"},
    {"{\"toolkit\": {\"resources\": {\"limits\": {\"memory\": \"1000M\"}, \"requests\": "
     "{\"memory\": \"1Gi\"}}}}",
     "spec.toolkit.resources.requests.memory", "above limits.memory"},
    {"{\"driver\": {\"resources\": {\"limits\": {\"cpu\": \"1e1000\"}}}}",
     "spec.driver.resources.limits.cpu", "larger than Kubernetes keeps"},
    {"{\"driver\": {\"resources\": {\"limits\": {\"memory\": \"99999999999999999999Ei\"}}}}",
     "spec.driver.resources.limits.memory", "larger than Kubernetes keeps"},
    {"{\"driver\": {\"resources\": {\"requests\": {\"memory\": \"8Ei\"}}}}",
     "spec.driver.resources.requests.memory", "larger"},
    {"{\"driver\": {\"resources\": {\"requests\": {\"cpu\": \"0.000000001n\"}}}}",
     "spec.driver.resources.requests.cpu", "finer than 1m"},
    {"{\"driver\": {\"resources\": {\"requests\": {\"cpu\": \"0.0001\"}}}}",
     "spec.driver.resources.requests.cpu", "finer than 1m"},
    {"{\"driver\": {\"resources\": {\"requests\": {\"cpu\": "
     "\"1.0000000000000000000000000000001\"}}}}",
     "spec.driver.resources.requests.cpu", "significant digits"},
    {"{\"driver\": {\"resources\": {\"requests\": {\"cpu\": \"1e3.5\"}}}}",
     "spec.driver.resources.requests.cpu", "not a quantity"},
    {"{\"driver\": {\"resources\": {\"limits\": {\"nvidia.com/gpu\": \"500m\"}}}}",
     "spec.driver.resources.limits.nvidia.com/gpu", "whole number"},
    {"{\"driver\": {\"resources\": {\"requests\": {\"nvidia.com/gpu\": 1}}}}",
     "spec.driver.resources.requests.nvidia.com/gpu", "cannot be overcommitted"},
    {"{\"driver\": {\"resources\": {\"limits\": {\"nvidia.com/gpu\": 2}, \"requests\": "
     "{\"nvidia.com/gpu\": 1}}}}",
     "spec.driver.resources.requests.nvidia.com/gpu",
     "must equal limits.nvidia.com/gpu (2), not 1"},
    {"{\"driver\": {\"resources\": {\"limits\": {\"foo\": 1}}}}",
     "spec.driver.resources.limits.foo", "not a resource a container can ask for"},
    {"{\"driver\": {\"resources\": {\"limits\": {\"pods\": 1}}}}",
     "spec.driver.resources.limits.pods", "not a resource"},
    {"{\"driver\": {\"resources\": {\"limits\": {\"requests.example.com/x\": 1}}}}",
     "spec.driver.resources.limits.requests.example.com/x", "not a resource"},
    {"{\"driver\": {\"resources\": {\"limits\": {\"hugepages-2Mi\": \"1Mi\", \"memory\": "
     "\"1Gi\"}}}}",
     "spec.driver.resources.limits.hugepages-2Mi", "multiple of the page size 2Mi"},
    {"{\"driver\": {\"resources\": {\"limits\": {\"hugepages-2Mi\": \"2Mi\"}}}}",
     "spec.driver.resources.limits.hugepages-2Mi", "need a cpu or memory"},
    /* spec.draDriver (issue 42): GPUCluster's keys, each field named */
    {"{\"draDriver\": {\"enabled\": \"yes\"}}", "spec.draDriver.enabled", "using false"},
    {"{\"draDriver\": {\"featureGates\": [\"MPSSupport\"]}}", "spec.draDriver.featureGates",
     "map of gate names"},
    {"{\"draDriver\": {\"featureGates\": {\"bad gate!\": true}}}",
     "spec.draDriver.featureGates.bad gate!", "not a feature gate name"},
    {"{\"draDriver\": {\"featureGates\": {\"MPSSupport\": \"true\"}}}",
     "spec.draDriver.featureGates.MPSSupport", "true or false"},
    {"{\"draDriver\": {\"imagePullSecrets\": [\"Bad_Name\"]}}",
     "spec.draDriver.imagePullSecrets[0]", "secret name"},
    {"{\"draDriver\": {\"gpus\": 1}}", "spec.draDriver.gpus", "must be an object"},
    {"{\"draDriver\": {\"gpus\": {\"kubeletPlugn\": {}}}}", "spec.draDriver.gpus.kubeletPlugn",
     "did you mean \"kubeletPlugin\""},
    {"{\"draDriver\": {\"gpus\": {\"kubeletPlugin\": {\"env\": [{\"name\": \"A=B\"}]}}}}",
     "spec.draDriver.gpus.kubeletPlugin.env[0].name", "'='"},
    {"{\"draDriver\": {\"gpus\": {\"kubeletPlugin\": {\"resources\": {\"limits\": "
     "{\"memory\": \"lots\"}}}}}}",
     "spec.draDriver.gpus.kubeletPlugin.resources.limits.memory", "not a quantity"},
    {"{\"draDriver\": {\"gpus\": {\"kubeletPlugin\": {\"healthcheck\": {\"port\": 0}}}}}",
     "spec.draDriver.gpus.kubeletPlugin.healthcheck.port", "1-65535"},
    {"{\"draDriver\": {\"gpus\": {\"kubeletPlugin\": {\"healthcheck\": {\"enabled\": 1}}}}}",
     "spec.draDriver.gpus.kubeletPlugin.healthcheck.enabled", "true or false"},
    {"{\"draDriver\": {\"gpus\": {\"kubeletPlugin\": {\"healtcheck\": {}}}}}",
     "spec.draDriver.gpus.kubeletPlugin.healtcheck", "did you mean \"healthcheck\""},
    {"{\"draDriver\": {\"env\": [], \"gpus\": {\"kubeletPlugin\": {\"env\": []}}}}",
     "spec.draDriver.env", "given twice"},
    {"{\"draDriver\": {\"enabled\": true, \"computeDomains\": {\"enabled\": true}}}",
     "spec.draDriver.computeDomains.enabled", "not implemented by gpuop"},
    {"{\"draDriver\": {\"computeDomains\": {\"enabld\": true}}}",
     "spec.draDriver.computeDomains.enabld", "did you mean \"enabled\""},
    {"{\"draDriver\": {\"featureGate\": {}}}", "spec.draDriver.featureGate",
     "did you mean \"featureGates\""},
};

static void test_bad_values(void **state)
{
    int failed = 0;
    for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
        char buf[1024];
        struct gpuop_policy p;
        snprintf(buf, sizeof(buf), "{\"spec\": %s}", bad_cases[i].spec);
        parse_json(buf, &p);
        /* every case is checked, each miss printed, before failing */
        int at = find_problem(&p, bad_cases[i].field);
        if (at < 0 || !strstr(p.problems[at].message, bad_cases[i].says)) {
            print_message("case %s: %s%s (want %s: ...%s...)\n", bad_cases[i].spec,
                          at < 0 ? "no problem for the field" : "says: ",
                          at < 0 ? "" : p.problems[at].message, bad_cases[i].field,
                          bad_cases[i].says);
            print_problems(&p);
            failed++;
        }
        gpuop_policy_free(&p);
    }
    assert_int_equal(failed, 0);
}

/* What was used instead of the bad values. */
static void test_replacements(void **state)
{
    struct gpuop_policy p;
    int drv = gpuop_operand_by_key("driver"), gfd = gpuop_operand_by_key("gfd");
    int dcgm = gpuop_operand_by_key("dcgmExporter");
    assert_true(drv >= 0 && gfd >= 0 && dcgm >= 0);

    parse_json("{\"spec\": {\"driver\": {\"enabled\": \"false\", \"image\": \"a b\","
               "\"imagePullPolicy\": \"Sometimes\"},"
               "\"gfd\": {\"args\": [\"--x\", 1], \"env\": [{\"name\": \"A\", \"value\": 1},"
               "{\"name\": \"B\", \"value\": {}}, {\"name\": \"A\", \"value\": \"2\"},"
               "{\"name\": \"C\"}]},"
               "\"dcgmExporter\": {\"resources\": {\"limits\": {\"cpu\": \"x\", \"memory\": "
               "\"1Gi\", \"nvidia.com/gpu\": 1}, \"requests\": {\"cpu\": \"100m\"}, \"claims\": "
               "[]}}}}",
               &p);
    /* a string "false" is not false: the default (enabled) is kept, and said so */
    assert_true(p.operands[drv].enabled);
    assert_string_equal(p.operands[drv].image, "nvcr.io/nvidia/driver:595.91.07");
    assert_string_equal(p.operands[drv].pull_policy, "IfNotPresent");
    assert_int_equal(json_array_size(p.operands[gfd].args), 0);
    /* env: A converted then overridden by the later entry, B dropped, C empty */
    json_t *env = p.operands[gfd].env;
    assert_int_equal(json_array_size(env), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(env, 0), "name")), "A");
    assert_string_equal(json_string_value(json_object_get(json_array_get(env, 0), "value")), "2");
    assert_string_equal(json_string_value(json_object_get(json_array_get(env, 1), "name")), "C");
    assert_string_equal(json_string_value(json_object_get(json_array_get(env, 1), "value")), "");
    /* resources: the bad quantity and the unknown key dropped, the rest kept */
    json_t *res = p.operands[dcgm].resources;
    assert_non_null(res);
    assert_null(json_object_get(json_object_get(res, "limits"), "cpu"));
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(res, "limits"), "memory")), "1Gi");
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(res, "limits"), "nvidia.com/gpu")), 1);
    assert_string_equal(json_string_value(json_object_get(json_object_get(res, "requests"), "cpu")),
                        "100m");
    assert_null(json_object_get(res, "claims"));
    assert_problem(&p, "spec.dcgmExporter.resources.claims", "unknown field");
    gpuop_policy_free(&p);
}

static void test_tolerations(void **state)
{
    struct gpuop_policy p;
    parse_json("{\"spec\": {\"daemonsets\": {\"tolerations\": ["
               "{\"key\": \"nvidia.com/gpu\", \"operator\": \"Exists\", \"value\": \"x\"},"
               "{\"key\": \"a\", \"operator\": \"Nope\"},"
               "{\"key\": \"dedicated\", \"value\": \"gpu\", \"effect\": \"NoExecute\","
               " \"tolerationSeconds\": 30},"
               "{\"operator\": \"Exists\"}]}}}",
               &p);
    assert_int_equal(json_array_size(p.tolerations), 3);
    json_t *t0 = json_array_get(p.tolerations, 0), *t1 = json_array_get(p.tolerations, 1);
    json_t *t2 = json_array_get(p.tolerations, 2);
    assert_string_equal(json_string_value(json_object_get(t0, "key")), "nvidia.com/gpu");
    assert_null(json_object_get(t0, "value"));
    assert_string_equal(json_string_value(json_object_get(t1, "key")), "dedicated");
    assert_string_equal(json_string_value(json_object_get(t1, "operator")), "Equal");
    assert_int_equal(json_integer_value(json_object_get(t1, "tolerationSeconds")), 30);
    assert_null(json_object_get(t2, "key"));
    assert_string_equal(json_string_value(json_object_get(t2, "operator")), "Exists");
    assert_int_equal(p.nproblems, 2);
    assert_problem(&p, "spec.daemonsets.tolerations[0].value", NULL);
    assert_problem(&p, "spec.daemonsets.tolerations[1].operator", NULL);
    gpuop_policy_free(&p);

    /* an explicit empty list means "tolerate nothing", not the default */
    parse_json("{\"spec\": {\"daemonsets\": {\"tolerations\": []}}}", &p);
    assert_int_equal(p.nproblems, 0);
    assert_int_equal(json_array_size(p.tolerations), 0);
    gpuop_policy_free(&p);
}

static void test_valid_everything(void **state)
{
    struct gpuop_policy p;
    parse_json(
        "{\"metadata\": {\"name\": \"gpus\"}, \"spec\": {"
        "\"driver\": {\"enabled\": false},"
        "\"toolkit\": {\"enabled\": true, \"image\": \"localhost:5000/tk:1\", \"imagePullPolicy\":"
        " \"Always\", \"args\": [\"--debug\"], \"env\": [{\"name\": \"CONTAINERD_CONFIG\","
        " \"value\": \"/etc/k3s.toml\"}], \"resources\": {\"requests\": {\"cpu\": \"50m\"}}},"
        "\"devicePlugin\": {}, \"gfd\": {\"enabled\": false}, \"dcgmExporter\": {},"
        "\"validator\": {\"imagePullPolicy\": \"Never\"},"
        "\"daemonsets\": {\"priorityClassName\": \"\", \"labels\": {\"team\": \"ml\"},"
        " \"annotations\": {\"note\": \"hello world\"}, \"updateStrategy\": \"OnDelete\","
        " \"imagePullSecrets\": [\"regcred\", {\"name\": \"other\"}]}}}",
        &p);
    if (p.nproblems)
        print_problems(&p);
    assert_int_equal(p.nproblems, 0);
    int tk = gpuop_operand_by_key("toolkit");
    assert_false(p.operands[gpuop_operand_by_key("driver")].enabled);
    assert_false(p.operands[gpuop_operand_by_key("gfd")].enabled);
    assert_true(p.operands[gpuop_operand_by_key("devicePlugin")].enabled);
    assert_string_equal(p.operands[tk].image, "localhost:5000/tk:1");
    assert_string_equal(p.operands[tk].pull_policy, "Always");
    assert_string_equal(json_string_value(json_array_get(p.operands[tk].args, 0)), "--debug");
    assert_int_equal(json_array_size(p.operands[tk].env), 1);
    assert_non_null(p.operands[tk].resources);
    assert_string_equal(p.operands[gpuop_operand_by_key("validator")].pull_policy, "Never");
    assert_string_equal(p.priority_class, "");
    assert_string_equal(p.update_strategy, "OnDelete");
    assert_string_equal(json_string_value(json_object_get(p.labels, "team")), "ml");
    assert_string_equal(json_string_value(json_object_get(p.annotations, "note")), "hello world");
    assert_int_equal(json_array_size(p.image_pull_secrets), 2);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(p.image_pull_secrets, 1), "name")),
        "other");
    gpuop_policy_free(&p);

    parse_json("{\"spec\": {\"daemonsets\": {\"rollingUpdate\": {\"maxUnavailable\": \"25%\"}}}}",
               &p);
    assert_int_equal(p.nproblems, 0);
    assert_string_equal(json_string_value(p.max_unavailable), "25%");
    gpuop_policy_free(&p);
    parse_json("{\"spec\": {\"daemonsets\": {\"rollingUpdate\": {\"maxUnavailable\": 3}}}}", &p);
    assert_int_equal(json_integer_value(p.max_unavailable), 3);
    gpuop_policy_free(&p);
}

/* What the API server and the kubelet accept stays accepted (issue 13
 * section 2: the validation follows the server, checked against the lab in
 * test/e2e/50_policy_server.sh). */
/* The ClusterPolicy paths gpuop implements, and those it accepts without a
 * word because they switch off what gpuop does not run anyway. */
static void test_clusterpolicy_fields(void **state)
{
    struct gpuop_policy p;
    parse_json("{\"spec\": {}}", &p);
    assert_int_equal(p.mig_strategy, GPUOP_MIG_SINGLE);
    assert_string_equal(p.toolkit_install_dir, "/usr/local/nvidia");
    /* the GPU Operator's defaults: containerd, CDI on, no NRI plugin */
    assert_int_equal(p.runtime, GPUOP_RUNTIME_CONTAINERD);
    assert_false(p.cdi_disabled);
    assert_false(p.nri_plugin);
    assert_string_equal(p.host_root, "/");
    assert_string_equal(p.driver_install_dir, "/run/nvidia/driver");
    assert_string_equal(p.kubelet_root_dir, "/var/lib/kubelet");
    gpuop_policy_free(&p);

    parse_json("{\"spec\": {\"mig\": {\"strategy\": \"mixed\"}, \"toolkit\": {\"installDir\": "
               "\"/opt/nvidia\"}, \"dcgm\": {\"enabled\": false}, \"gds\": {}, \"psp\": "
               "{\"enabled\": false}, \"driver\": {\"rdma\": {\"enabled\": false}}}}",
               &p);
    print_problems(&p);
    assert_int_equal(p.nproblems, 0);
    assert_int_equal(p.mig_strategy, GPUOP_MIG_MIXED);
    assert_string_equal(p.toolkit_install_dir, "/opt/nvidia");
    gpuop_policy_free(&p);

    /* spec.operator.defaultRuntime and spec.cdi (issue 39): implemented, no
     * problem; cdi.default is accepted (deprecated, no effect) */
    static const struct {
        const char *spec;
        enum gpuop_container_runtime runtime;
        bool cdi_disabled, nri;
    } modes[] = {
        {"{\"operator\": {\"defaultRuntime\": \"crio\"}}", GPUOP_RUNTIME_CRIO, false, false},
        {"{\"operator\": {\"defaultRuntime\": \"docker\", \"runtimeClass\": \"x\"}}",
         GPUOP_RUNTIME_DOCKER, false, false},
        {"{\"operator\": {\"defaultRuntime\": \"\"}, \"cdi\": {\"enabled\": true, \"default\": "
         "true}}",
         GPUOP_RUNTIME_CONTAINERD, false, false},
        {"{\"cdi\": {\"enabled\": false, \"default\": false, \"nriPluginEnabled\": false}}",
         GPUOP_RUNTIME_CONTAINERD, true, false},
        {"{\"cdi\": {\"nriPluginEnabled\": true}}", GPUOP_RUNTIME_CONTAINERD, false, true},
        {"{\"cdi\": {\"enabled\": null}, \"operator\": null}", GPUOP_RUNTIME_CONTAINERD, false,
         false},
    };
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        char buf[512];
        snprintf(buf, sizeof(buf), "{\"spec\": %s}", modes[i].spec);
        parse_json(buf, &p);
        print_problems(&p);
        assert_int_equal(p.nproblems, 0);
        assert_int_equal(p.runtime, modes[i].runtime);
        assert_int_equal(p.cdi_disabled, modes[i].cdi_disabled);
        assert_int_equal(p.nri_plugin, modes[i].nri);
        gpuop_policy_free(&p);
    }
    assert_string_equal(gpuop_policy_runtime_name(GPUOP_RUNTIME_CRIO), "crio");

    /* spec.hostPaths (GKE with COS) and the validator's per-component env:
     * implemented, no problem; a trailing '/' is dropped, "" is the default */
    parse_json(
        "{\"spec\": {\"hostPaths\": {\"driverInstallDir\": \"/home/kubernetes/bin/nvidia/\", "
        "\"rootFS\": \"/host-root\", \"kubeletRootDir\": \"\"}, \"validator\": "
        "{\"plugin\": {\"env\": [{\"name\": \"WITH_WORKLOAD\", \"value\": \"false\"}]}, "
        "\"driver\": {\"env\": [{\"name\": \"DISABLE_DEV_CHAR_SYMLINK_CREATION\", "
        "\"value\": \"true\"}]}, \"toolkit\": {\"env\": null}}}}",
        &p);
    print_problems(&p);
    assert_int_equal(p.nproblems, 0);
    assert_string_equal(p.driver_install_dir, "/home/kubernetes/bin/nvidia");
    assert_string_equal(p.host_root, "/host-root");
    assert_string_equal(p.kubelet_root_dir, GPUOP_KUBELET_ROOT_DIR_DEFAULT);
    assert_int_equal(json_array_size(p.validator_env[GPUOP_VALIDATOR_PLUGIN]), 1);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(p.validator_env[GPUOP_VALIDATOR_DRIVER], 0), "name")),
                        "DISABLE_DEV_CHAR_SYMLINK_CREATION");
    assert_int_equal(json_array_size(p.validator_env[GPUOP_VALIDATOR_TOOLKIT]), 0);
    gpuop_policy_free(&p);

    /* WITH_WORKLOAD other than "false" is said and taken out; the rest passes */
    parse_json("{\"spec\": {\"validator\": {\"plugin\": {\"env\": [{\"name\": \"A\", "
               "\"value\": \"1\"}, {\"name\": \"WITH_WORKLOAD\", \"value\": \"true\"}]}}}}",
               &p);
    assert_int_equal(p.nproblems, 1);
    assert_int_equal(json_array_size(p.validator_env[GPUOP_VALIDATOR_PLUGIN]), 1);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(p.validator_env[GPUOP_VALIDATOR_PLUGIN], 0), "name")),
                        "A");
    gpuop_policy_free(&p);

    /* spec.operator.runtimeClass (AKS); "" keeps the default */
    parse_json("{\"spec\": {\"operator\": {\"runtimeClass\": \"nvidia-container-runtime\"}}}", &p);
    assert_int_equal(p.nproblems, 0);
    assert_string_equal(p.runtime_class, "nvidia-container-runtime");
    gpuop_policy_free(&p);
    parse_json("{\"spec\": {\"operator\": {\"runtimeClass\": \"\"}}}", &p);
    assert_int_equal(p.nproblems, 0);
    assert_string_equal(p.runtime_class, GPUOP_RUNTIME_CLASS);
    gpuop_policy_free(&p);

    parse_json("{\"spec\": {\"mig\": {\"strategy\": \"none\"}}}", &p);
    assert_int_equal(p.mig_strategy, GPUOP_MIG_NONE);
    gpuop_policy_free(&p);

    /* spec.dcgm (the host engine) and the exporter's serviceMonitor and config */
    parse_json("{\"spec\": {\"dcgm\": {\"enabled\": true, \"hostPort\": 5555, \"hostNetwork\": "
               "true}, \"dcgmExporter\": {\"config\": {\"name\": \"my-metrics\"}, "
               "\"serviceMonitor\": {\"enabled\": true, \"interval\": \"1m30s\", "
               "\"scrapeTimeout\": \"500ms\", \"honorLabels\": true, \"additionalLabels\": "
               "{\"release\": \"prom\"}, \"relabelings\": [{\"action\": \"drop\"}]}}}}",
               &p);
    print_problems(&p);
    assert_int_equal(p.nproblems, 0);
    assert_true(p.operands[gpuop_operand_by_key("dcgm")].enabled);
    assert_true(p.dcgm_host_network);
    assert_string_equal(p.operands[gpuop_operand_by_key("dcgmExporter")].config_name, "my-metrics");
    assert_null(p.operands[gpuop_operand_by_key("devicePlugin")].config_name);
    assert_string_equal(p.plugin_config_default, "");
    assert_string_equal(json_string_value(json_object_get(p.service_monitor, "interval")), "1m30s");
    assert_string_equal(json_string_value(json_object_get(p.service_monitor, "scrapeTimeout")),
                        "500ms");
    assert_true(json_is_true(json_object_get(p.service_monitor, "honorLabels")));
    assert_int_equal(json_array_size(json_object_get(p.service_monitor, "relabelings")), 1);
    /* the exporter's prerequisite: the host engine when it is on */
    assert_int_equal(gpuop_policy_prereq(&p, gpuop_operand_by_key("dcgmExporter")),
                     gpuop_operand_by_key("dcgm"));
    gpuop_policy_free(&p);
    parse_json("{\"spec\": {\"dcgmExporter\": {\"serviceMonitor\": {\"enabled\": false, "
               "\"interval\": \"15s\"}}}}",
               &p);
    assert_int_equal(p.nproblems, 0);
    assert_null(p.service_monitor); /* off: none */
    assert_int_equal(gpuop_policy_prereq(&p, gpuop_operand_by_key("dcgmExporter")),
                     gpuop_operand_by_name("container-toolkit"));
    gpuop_policy_free(&p);

    /* a refused field leaves the rest applied */
    parse_json("{\"spec\": {\"vgpuManager\": {\"enabled\": true}, \"gfd\": {\"enabled\": false}}}",
               &p);
    assert_int_equal(p.nproblems, 1);
    assert_false(p.operands[gpuop_operand_by_key("gfd")].enabled);
    gpuop_policy_free(&p);
}

static void test_server_accepts(void **state)
{
    static const char *const images[] = {
        "busybox",
        "busybox:1.36",
        "library/busybox:latest",
        "localhost/a",
        "localhost:5000/a/b:1",
        "Registry.Example.COM:443/team/a_b__c-d--e.f:TAG_1.2-x",
        "[::1]:5000/x:1",
        "nvcr.io/nvidia/"
        "driver@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        "a:b@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    };
    static const char *const env_names[] = {"A",   "1ABC",        "my.var", "my-var",
                                            "A B", "~!@#$%^&*()", " A"};
    static const char *const quantities[] = {"1e3",
                                             "1E3",
                                             "+1",
                                             ".5",
                                             "1.",
                                             "0",
                                             "-0",
                                             "100m",
                                             "1m",
                                             "1.5Ki",
                                             "0.5Gi",
                                             "7.99Ei",
                                             "1e-3",
                                             "1000000n",
                                             "1000u",
                                             "2",
                                             "9223372036854775807",
                                             "1e18",
                                             "0.001"};
    char buf[512];
    struct gpuop_policy p;
    int tk = gpuop_operand_by_key("toolkit");
    for (size_t i = 0; i < sizeof(images) / sizeof(images[0]); i++) {
        snprintf(buf, sizeof(buf), "{\"spec\": {\"toolkit\": {\"image\": \"%s\"}}}", images[i]);
        parse_json(buf, &p);
        if (p.nproblems)
            print_problems(&p);
        assert_int_equal(p.nproblems, 0);
        if (strpbrk(images[i], "/:@")) {
            assert_string_equal(p.operands[tk].image, images[i]);
        } else { /* a name alone: joined as the GPU Operator joins it */
            char want[600];
            snprintf(want, sizeof(want), "nvcr.io/nvidia/k8s/%s:v1.20.0", images[i]);
            assert_string_equal(p.operands[tk].image, want);
        }
        gpuop_policy_free(&p);
    }
    for (size_t i = 0; i < sizeof(env_names) / sizeof(env_names[0]); i++) {
        snprintf(buf, sizeof(buf), "{\"spec\": {\"toolkit\": {\"env\": [{\"name\": \"%s\"}]}}}",
                 env_names[i]);
        parse_json(buf, &p);
        if (p.nproblems)
            print_problems(&p);
        assert_int_equal(p.nproblems, 0);
        assert_int_equal(json_array_size(p.operands[tk].env), 1);
        gpuop_policy_free(&p);
    }
    for (size_t i = 0; i < sizeof(quantities) / sizeof(quantities[0]); i++) {
        snprintf(buf, sizeof(buf),
                 "{\"spec\": {\"toolkit\": {\"resources\": {\"limits\": {\"cpu\": \"%s\"}, "
                 "\"requests\": {\"memory\": \"%s\"}}}}}",
                 quantities[i], quantities[i]);
        parse_json(buf, &p);
        if (p.nproblems)
            print_problems(&p);
        assert_int_equal(p.nproblems, 0);
        gpuop_policy_free(&p);
    }
    /* the rules across limits and requests, where they hold */
    parse_json("{\"spec\": {\"toolkit\": {\"resources\": {"
               "\"limits\": {\"cpu\": \"1\", \"memory\": \"1Gi\", \"nvidia.com/gpu\": 2, "
               "\"hugepages-2Mi\": \"4Mi\", \"example.com/X_y.z\": \"3\", \"kubernetes.io/foo\": "
               "\"500m\"},"
               "\"requests\": {\"cpu\": \"1000m\", \"memory\": \"1073741824\", \"nvidia.com/gpu\": "
               "\"2\", \"hugepages-2Mi\": \"4194304\", \"ephemeral-storage\": \"1Gi\", "
               "\"kubernetes.io/foo\": \"500m\"}}}}}",
               &p);
    if (p.nproblems)
        print_problems(&p);
    assert_int_equal(p.nproblems, 0);
    assert_int_equal(json_object_size(json_object_get(p.operands[tk].resources, "requests")), 6);
    gpuop_policy_free(&p);

    /* a refused request is dropped, its limit and the rest stay */
    parse_json("{\"spec\": {\"toolkit\": {\"resources\": {\"limits\": {\"cpu\": \"1\"}, "
               "\"requests\": {\"cpu\": \"8\", \"memory\": \"1Gi\"}}}}}",
               &p);
    assert_int_equal(p.nproblems, 1);
    json_t *res = p.operands[tk].resources;
    assert_string_equal(json_string_value(json_object_get(json_object_get(res, "limits"), "cpu")),
                        "1");
    assert_null(json_object_get(json_object_get(res, "requests"), "cpu"));
    assert_non_null(json_object_get(json_object_get(res, "requests"), "memory"));
    gpuop_policy_free(&p);
}

/* Annotations that together pass the API server's 256 KiB: those that fit,
 * in key order, are kept; each of the others is a problem. */
static void test_annotations_total(void **state)
{
    json_t *ann = json_object();
    char key[32];
    for (int i = 0; i < 10; i++) {
        char *val = malloc(30001);
        assert_non_null(val);
        memset(val, 'a' + i, 30000);
        val[30000] = '\0';
        snprintf(key, sizeof(key), "note-%d", 9 - i); /* inserted out of order */
        json_object_set_new(ann, key, json_string(val));
        free(val);
    }
    json_t *pol = json_pack("{s:{s:{s:o}}}", "spec", "daemonsets", "annotations", ann);
    struct gpuop_policy p;
    assert_int_equal(gpuop_policy_parse(pol, &p, NULL), 0);
    /* 8 x 30006 bytes fit in 262144 - 1024; note-8 and note-9 do not */
    assert_int_equal(json_object_size(p.annotations), 8);
    assert_non_null(json_object_get(p.annotations, "note-0"));
    assert_non_null(json_object_get(p.annotations, "note-7"));
    assert_null(json_object_get(p.annotations, "note-8"));
    assert_int_equal(p.nproblems, 2);
    assert_problem(&p, "spec.daemonsets.annotations.note-8", "262144");
    assert_problem(&p, "spec.daemonsets.annotations.note-9", "ignored");
    gpuop_policy_free(&p);
    json_decref(pol);
}

/* The fields the findings, the controller and the Events read. */
static void test_ordering_and_findings(void **state)
{
    struct gpuop_policy p;
    int mig = gpuop_operand_by_key("migManager");
    assert_true(mig >= 0);
    parse_json("{\"spec\": {\"ordering\": \"enforce\", \"findings\": {"
               "\"terminatingGracePeriodSeconds\": 30, \"advertiseGracePeriodSeconds\": 0,"
               "\"eventGracePeriodSeconds\": 604800},"
               "\"migManager\": {\"enabled\": true, \"config\": {\"name\": \"my-mig\"}}}}",
               &p);
    if (p.nproblems)
        print_problems(&p);
    assert_int_equal(p.nproblems, 0);
    assert_int_equal(p.ordering, GPUOP_ORDERING_ENFORCE);
    assert_int_equal(p.terminating_grace_s, 30);
    assert_int_equal(p.advertise_grace_s, 0);
    assert_int_equal(p.event_grace_s, 604800);
    assert_true(p.operands[mig].enabled);
    assert_string_equal(p.operands[mig].config_name, "my-mig");
    gpuop_policy_free(&p);

    /* a bad value keeps the default and leaves its neighbours alone */
    parse_json("{\"spec\": {\"ordering\": \"report\", \"findings\": {"
               "\"terminatingGracePeriodSeconds\": \"5\", \"eventGracePeriodSeconds\": 10,"
               "\"advertiseGracePeriodSeconds\": null}, \"migManager\": {\"config\": {}}}}",
               &p);
    assert_int_equal(p.nproblems, 1);
    assert_problem(&p, "spec.findings.terminatingGracePeriodSeconds", "using 300");
    assert_int_equal(p.terminating_grace_s, 300);
    assert_int_equal(p.event_grace_s, 10);
    assert_int_equal(p.advertise_grace_s, 120);
    assert_int_equal(p.ordering, GPUOP_ORDERING_REPORT);
    assert_false(p.operands[mig].enabled);
    assert_string_equal(p.operands[mig].config_name, "default-mig-parted-config");
    gpuop_policy_free(&p);
}

/* spec.devicePlugin.config: {name, default} as the GPU Operator's
 * DevicePluginConfig; name "" is none (isCustomPluginConfigSet), default ""
 * is config-manager's empty fallback. */
static void test_plugin_config(void **state)
{
    struct gpuop_policy p;
    int dp = gpuop_operand_by_key("devicePlugin");
    parse_json("{\"spec\": {\"devicePlugin\": {\"config\": {\"name\": \"time-slicing-config\", "
               "\"default\": \"ts-4.gpu_a\"}}}}",
               &p);
    print_problems(&p);
    assert_int_equal(p.nproblems, 0);
    assert_string_equal(p.operands[dp].config_name, "time-slicing-config");
    assert_string_equal(p.plugin_config_default, "ts-4.gpu_a");
    gpuop_policy_free(&p);

    parse_json("{\"spec\": {\"devicePlugin\": {\"config\": {\"name\": \"\", \"default\": \"\"}}}}",
               &p);
    assert_int_equal(p.nproblems, 0);
    assert_null(p.operands[dp].config_name);
    assert_string_equal(p.plugin_config_default, "");
    gpuop_policy_free(&p);

    /* a bad default keeps the name: the ConfigMap is still mounted */
    parse_json("{\"spec\": {\"devicePlugin\": {\"config\": {\"name\": \"cm\", \"default\": "
               "\"../x\"}}}}",
               &p);
    assert_int_equal(p.nproblems, 1);
    assert_problem(&p, "spec.devicePlugin.config.default", "\"../x\"");
    assert_string_equal(p.operands[dp].config_name, "cm");
    assert_string_equal(p.plugin_config_default, "");
    gpuop_policy_free(&p);
}

/* spec.devicePlugin.mps: the MPS control daemon follows the device
 * plugin's spec (enabled, image, pull policy, resources) and has none of
 * its own; its root is the GPU Operator's default unless given. */
static void test_mps(void **state)
{
    struct gpuop_policy p;
    int dp = gpuop_operand_by_key("devicePlugin"),
        mps = gpuop_operand_by_name("mps-control-daemon");
    assert_true(mps >= 0);
    assert_int_equal(gpuop_operand_follows(mps), dp);
    parse_json("{\"spec\": {}}", &p);
    assert_string_equal(p.mps_root, "/run/nvidia/mps");
    assert_true(p.operands[mps].enabled);
    assert_string_equal(p.operands[mps].image, "nvcr.io/nvidia/k8s-device-plugin:v0.20.0");
    gpuop_policy_free(&p);

    parse_json("{\"spec\": {\"devicePlugin\": {\"mps\": {\"root\": \"/var/mps/\"}, "
               "\"version\": \"v0.20.1\", \"imagePullPolicy\": \"Always\", "
               "\"resources\": {\"limits\": {\"cpu\": \"1\"}}}}}",
               &p);
    print_problems(&p);
    assert_int_equal(p.nproblems, 0);
    assert_string_equal(p.mps_root, "/var/mps");
    assert_string_equal(p.operands[mps].image, "nvcr.io/nvidia/k8s-device-plugin:v0.20.1");
    assert_string_equal(p.operands[mps].pull_policy, "Always");
    assert_true(json_equal(p.operands[mps].resources, p.operands[dp].resources));
    gpuop_policy_free(&p);

    /* off with the device plugin; spec.mps at the top is no operand's key */
    parse_json("{\"spec\": {\"devicePlugin\": {\"enabled\": false}, \"mps\": {}}}", &p);
    assert_false(p.operands[mps].enabled);
    assert_problem(&p, "spec.mps", "unknown field");
    gpuop_policy_free(&p);
}

/* A bad field never takes the rest of the policy down. */
static void test_rest_keeps_working(void **state)
{
    struct gpuop_policy p;
    parse_json("{\"spec\": {\"drvier\": {\"enabled\": false},"
               "\"driver\": {\"imagePullPolicy\": 3, \"image\": \"my/driver:1\"},"
               "\"toolkit\": \"off\", \"devicePlugin\": {\"enabled\": false},"
               "\"daemonsets\": {\"tolerations\": 5, \"priorityClassName\": \"high\","
               " \"labels\": {\"a\": \"b\", \"c\": 1}}}}",
               &p);
    int drv = gpuop_operand_by_key("driver");
    assert_int_equal(p.nproblems, 5);
    assert_problem(&p, "spec.drvier", "did you mean \"driver\"");
    assert_problem(&p, "spec.driver.imagePullPolicy", NULL);
    assert_problem(&p, "spec.toolkit", NULL);
    assert_problem(&p, "spec.daemonsets.tolerations", NULL);
    assert_problem(&p, "spec.daemonsets.labels.c", NULL);
    /* the typo leaves the driver enabled, as the message must say */
    assert_true(p.operands[drv].enabled);
    assert_string_equal(p.operands[drv].image, "my/driver:1");
    assert_true(p.operands[gpuop_operand_by_key("toolkit")].enabled);
    assert_false(p.operands[gpuop_operand_by_key("devicePlugin")].enabled);
    assert_int_equal(json_array_size(p.tolerations), 1); /* the default */
    assert_string_equal(p.priority_class, "high");
    assert_int_equal(json_object_size(p.labels), 1);
    gpuop_policy_free(&p);
}

static void test_many_problems(void **state)
{
    char buf[8192];
    size_t n = 0;
    n += (size_t)snprintf(buf + n, sizeof(buf) - n, "{\"spec\": {");
    for (int i = 0; i < 50; i++)
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s\"unknown%02d\": 1", i ? "," : "", i);
    snprintf(buf + n, sizeof(buf) - n, "}}");
    struct gpuop_policy p;
    parse_json(buf, &p);
    assert_int_equal(p.nproblems, 50);
    assert_string_equal(p.problems[0].field, "spec.unknown00");
    assert_string_equal(p.problems[GPUOP_POLICY_PROBLEMS_MAX - 1].field, "spec.unknown31");
    assert_defaults(&p);
    gpuop_policy_free(&p);
}

/* Swaps every field of a full policy for every JSON type in turn: no crash,
 * and each swap that makes the field invalid is reported under that field
 * (or one below it). */
static const char full_policy[] =
    "{\"spec\": {"
    "\"driver\": {\"enabled\": true, \"image\": \"a/b:1\", \"imagePullPolicy\": \"Always\","
    " \"args\": [\"x\"], \"env\": [{\"name\": \"N\", \"value\": \"v\"}],"
    " \"resources\": {\"limits\": {\"cpu\": \"1\"}, \"requests\": {\"memory\": \"1Gi\"}}},"
    "\"daemonsets\": {\"tolerations\": [{\"key\": \"k\", \"operator\": \"Equal\", \"value\":"
    " \"v\", \"effect\": \"NoExecute\", \"tolerationSeconds\": 5}], \"priorityClassName\": \"p\","
    " \"labels\": {\"l\": \"v\"}, \"annotations\": {\"a\": \"v\"}, \"updateStrategy\":"
    " \"RollingUpdate\", \"rollingUpdate\": {\"maxUnavailable\": 1},"
    " \"imagePullSecrets\": [\"s\"]},"
    "\"migManager\": {\"enabled\": true, \"config\": {\"name\": \"c\"}},"
    "\"ordering\": \"enforce\", \"findings\": {\"terminatingGracePeriodSeconds\": 1,"
    " \"advertiseGracePeriodSeconds\": 2, \"eventGracePeriodSeconds\": 3}}}";

static int sweep_count;

static void sweep(json_t *root, json_t *node, const char *path)
{
    /* replacements that are wrong for every field of full_policy except where
     * the field itself allows them (checked below by re-validation) */
    json_t *wrong[] = {json_integer(-1), json_string("bad value!"), json_true(), json_array(),
                       json_pack("{s:i}", "zz", 1)};
    const char *key;
    json_t *child;
    size_t i;

    if (json_is_object(node)) {
        void *tmp;
        json_object_foreach_safe(node, tmp, key, child)
        {
            char sub[256];
            snprintf(sub, sizeof(sub), "%s.%s", path, key);
            json_incref(child);
            for (size_t w = 0; w < sizeof(wrong) / sizeof(wrong[0]); w++) {
                if (json_typeof(wrong[w]) == json_typeof(child))
                    continue;
                json_object_set(node, key, wrong[w]);
                struct gpuop_policy p;
                struct gpuop_err err = {0};
                assert_int_equal(gpuop_policy_parse(root, &p, &err), 0);
                /* every swap here makes the field's type wrong, except that
                 * args/env/tolerations/imagePullSecrets accept [] and maps
                 * accept {}: those are fine without problems */
                bool may_be_ok = (json_is_array(wrong[w]) &&
                                  (strstr(sub, ".args") || strstr(sub, ".env") ||
                                   strstr(sub, ".tolerations") || strstr(sub, "PullSecrets"))) ||
                                 (json_is_object(wrong[w]) && strstr(sub, ".resources."));
                bool found = false;
                for (int k = 0; k < p.nproblems && k < GPUOP_POLICY_PROBLEMS_MAX; k++) {
                    const char *f = p.problems[k].field;
                    /* the field itself, one below it, or the list entry
                     * holding it ("spec.driver.env[0]" for its name) */
                    found |= !strncmp(f, sub, strlen(sub)) ||
                             (f[strlen(f) - 1] == ']' && !strncmp(sub, f, strlen(f)));
                }
                if (!found && !may_be_ok) {
                    print_problems(&p);
                    fail_msg("setting %s to a %s was not reported", sub,
                             json_is_object(wrong[w])   ? "map"
                             : json_is_array(wrong[w])  ? "list"
                             : json_is_string(wrong[w]) ? "string"
                                                        : "scalar");
                }
                sweep_count++;
                gpuop_policy_free(&p);
            }
            json_object_set(node, key, child);
            sweep(root, child, sub);
            json_decref(child);
        }
    } else if (json_is_array(node)) {
        json_array_foreach(node, i, child)
        {
            char sub[256];
            snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
            sweep(root, child, sub);
        }
    }
    for (size_t w = 0; w < sizeof(wrong) / sizeof(wrong[0]); w++)
        json_decref(wrong[w]);
}

static void test_type_sweep(void **state)
{
    json_t *root = json_loads(full_policy, 0, NULL);
    assert_non_null(root);
    struct gpuop_policy p;
    assert_int_equal(gpuop_policy_parse(root, &p, NULL), 0);
    if (p.nproblems)
        print_problems(&p);
    assert_int_equal(p.nproblems, 0);
    gpuop_policy_free(&p);
    sweep_count = 0;
    sweep(root, json_object_get(root, "spec"), "spec");
    assert_true(sweep_count > 100);
    json_decref(root);
}

/* The GPU Operator's repository/image/version beside a full reference in
 * image (api/nvidia/v1/clusterpolicy_types.go imagePath, v26.7.0). */
/* spec.driver.upgradePolicy: the GPU Operator's defaults, and every key read. */
static void test_upgrade_policy(void **state)
{
    (void)state;
    struct gpuop_policy p;
    json_t *o = json_object();
    assert_int_equal(gpuop_policy_parse(o, &p, NULL), 0);
    json_decref(o);
    assert_true(p.upgrade.auto_upgrade);
    assert_int_equal(p.upgrade.max_parallel, 1);
    assert_int_equal(gpuop_policy_max_unavailable(&p.upgrade, 8), 2);
    assert_int_equal(gpuop_policy_max_unavailable(&p.upgrade, 9), 3); /* rounded up */
    assert_int_equal(gpuop_policy_max_unavailable(&p.upgrade, 1), 1);
    assert_int_equal(p.upgrade.delete_timeout_s, 300);
    assert_int_equal(p.upgrade.drain_timeout_s, 300);
    assert_int_equal(p.upgrade.wait_timeout_s, 0);
    assert_false(p.upgrade.drain);
    assert_false(p.upgrade.delete_force);
    assert_int_equal(p.upgrade.on_failure, GPUOP_ON_FAILURE_STOP);
    assert_string_equal(p.upgrade.wait_selector, "");
    gpuop_policy_free(&p);

    o = json_loads(
        "{\"spec\": {\"driver\": {\"upgradePolicy\": {\"autoUpgrade\": false, "
        "\"maxParallelUpgrades\": 0, \"maxUnavailable\": 3, "
        "\"waitForCompletion\": {\"timeoutSeconds\": 60, \"podSelector\": \"app=train\"}, "
        "\"podDeletion\": {\"force\": true, \"timeoutSeconds\": 10, "
        "\"deleteEmptyDir\": true}, \"drain\": {\"enable\": true, \"force\": true, "
        "\"podSelector\": \"x!=y\", \"timeoutSeconds\": 20, \"deleteEmptyDir\": true}, "
        "\"onFailure\": \"rollback\", \"driverReadyTimeoutSeconds\": 30}}}}",
        0, NULL);
    assert_int_equal(gpuop_policy_parse(o, &p, NULL), 0);
    json_decref(o);
    assert_int_equal(p.nproblems, 0);
    assert_false(p.upgrade.auto_upgrade);
    assert_int_equal(p.upgrade.max_parallel, 0);
    assert_int_equal(gpuop_policy_max_unavailable(&p.upgrade, 100), 3);
    assert_int_equal(p.upgrade.wait_timeout_s, 60);
    assert_string_equal(p.upgrade.wait_selector, "app=train");
    assert_true(p.upgrade.delete_force);
    assert_int_equal(p.upgrade.delete_timeout_s, 10);
    assert_true(p.upgrade.delete_empty_dir);
    assert_true(p.upgrade.drain);
    assert_true(p.upgrade.drain_force);
    assert_string_equal(p.upgrade.drain_selector, "x!=y");
    assert_int_equal(p.upgrade.drain_timeout_s, 20);
    assert_true(p.upgrade.drain_empty_dir);
    assert_int_equal(p.upgrade.on_failure, GPUOP_ON_FAILURE_ROLLBACK);
    assert_int_equal(p.upgrade.ready_timeout_s, 30);
    gpuop_policy_free(&p);
}

static void test_image_keys(void **state)
{
    static const struct {
        const char *spec;
        const char *key;   /* operand */
        const char *image; /* what gpuop runs (for the driver: before the OS tag) */
        bool os_tag;
        const char *field; /* the problem's field, or NULL for none */
        const char *says;
    } cases[] = {
        /* the patch line of NVIDIA's e2e scripts: /spec/driver/version */
        {"{\"driver\": {\"version\": \"580.95.05\"}}", "driver", "nvcr.io/nvidia/driver:580.95.05",
         true, NULL, NULL},
        {"{\"driver\": {\"repository\": \"registry.example/nvidia\", \"image\": \"driver\", "
         "\"version\": \"595.91.07\"}}",
         "driver", "registry.example/nvidia/driver:595.91.07", true, NULL, NULL},
        /* a trailing '/' on the repository, as GPU Operator values files have it */
        {"{\"driver\": {\"repository\": \"registry.example/nvidia/\"}}", "driver",
         "registry.example/nvidia/driver:595.91.07", true, NULL, NULL},
        /* a digest joins with '@' and takes no OS tag */
        {"{\"driver\": {\"version\": "
         "\"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"}}",
         "driver",
         "nvcr.io/nvidia/"
         "driver@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
         false, NULL, NULL},
        /* a full reference is used as it is: no OS tag */
        {"{\"driver\": {\"image\": \"registry.example/driver:595.91.07-ubuntu24.04\"}}", "driver",
         "registry.example/driver:595.91.07-ubuntu24.04", false, NULL, NULL},
        {"{\"driver\": {\"image\": \"registry.example/driver@sha256:"
         "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"}}",
         "driver",
         "registry.example/driver@sha256:"
         "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
         false, NULL, NULL},
        {"{\"toolkit\": {\"image\": "
         "\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"}}",
         "toolkit",
         "nvcr.io/nvidia/k8s/"
         "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef:v1.20.0",
         false, NULL, NULL},
        {"{\"toolkit\": {\"version\": \"v1.19.0\"}}", "toolkit",
         "nvcr.io/nvidia/k8s/container-toolkit:v1.19.0", false, NULL, NULL},
        {"{\"validator\": {\"repository\": \"nvcr.io/nvidia/cloud-native\", \"image\": "
         "\"gpu-operator-validator\", \"version\": \"v25.3.2\"}}",
         "validator", "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v25.3.2", false, NULL,
         NULL},
        /* problems name the field and keep the default */
        {"{\"driver\": {\"version\": \"5 95\"}}", "driver", "nvcr.io/nvidia/driver:595.91.07", true,
         "spec.driver.version", "not a valid image tag"},
        {"{\"driver\": {\"version\": 595}}", "driver", "nvcr.io/nvidia/driver:595.91.07", true,
         "spec.driver.version", "must be a string"},
        {"{\"driver\": {\"version\": \"\"}}", "driver", "nvcr.io/nvidia/driver:595.91.07", true,
         "spec.driver.version", "is empty"},
        {"{\"driver\": {\"version\": \"sha256:abc\"}}", "driver", "nvcr.io/nvidia/driver:595.91.07",
         true, "spec.driver.version", "wrong length"},
        {"{\"driver\": {\"repository\": \"Bad Repo\"}}", "driver",
         "nvcr.io/nvidia/driver:595.91.07", true, "spec.driver.repository", ""},
        {"{\"driver\": {\"image\": \"Driver\"}}", "driver", "nvcr.io/nvidia/driver:595.91.07", true,
         "spec.driver.image", "lower case"},
        /* the tag leaves room for "-<OS tag>" within 128 */
        {"{\"driver\": {\"version\": "
         "\"012345678901234567890123456789012345678901234567890123456789012345678901234567890123456"
         "7"
         "89\"}}",
         "driver", "nvcr.io/nvidia/driver:595.91.07", true, "spec.driver.version", "OS tag"},
        /* a full reference beside repository/version: those are ignored, and said so */
        {"{\"driver\": {\"image\": \"r.example/d:1\", \"version\": \"2\"}}", "driver",
         "r.example/d:1", false, "spec.driver.version", "full reference"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char buf[1024];
        struct gpuop_policy p;
        snprintf(buf, sizeof(buf), "{\"spec\": %s}", cases[i].spec);
        parse_json(buf, &p);
        int o = gpuop_operand_by_key(cases[i].key);
        if (strcmp(p.operands[o].image, cases[i].image) || p.operands[o].os_tag != cases[i].os_tag)
            fail_msg("case %s: image %s (os_tag %d), want %s (%d)", cases[i].spec,
                     p.operands[o].image, p.operands[o].os_tag, cases[i].image, cases[i].os_tag);
        if (!cases[i].field) {
            if (p.nproblems)
                print_problems(&p);
            assert_int_equal(p.nproblems, 0);
        } else {
            int at = find_problem(&p, cases[i].field);
            if (at < 0 || !strstr(p.problems[at].message, cases[i].says)) {
                print_problems(&p);
                fail_msg("case %s: want a problem %s: ...%s...", cases[i].spec, cases[i].field,
                         cases[i].says);
            }
        }
        gpuop_policy_free(&p);
    }
}

/* spec.driver's options and spec.gds / spec.gdrcopy (issue 38): parsed
 * into the policy; a value that cannot be used is a problem naming its
 * field; the sidecars refused with precompiled drivers (as NVIDIA refuses
 * them), without the driver, and with a driver image that has no OS tag. */
static void test_driver_options(void **state)
{
    struct gpuop_policy p;
    parse_json("{\"spec\":{\"driver\":{\"kernelModuleType\":\"open\",\"kernelModuleConfig\":{"
               "\"name\":\"params\"},\"repoConfig\":{\"configMapName\":\"repos\"},\"certConfig\":{"
               "\"name\":\"ca\"},\"licensingConfig\":{\"configMapName\":\"old\",\"secretName\":"
               "\"lic\",\"nlsEnabled\":true},\"secretEnv\":\"env\",\"rdma\":{\"enabled\":true,"
               "\"useHostMofed\":true}},\"gds\":{\"enabled\":true,\"repository\":\"reg.example/"
               "nv/\",\"imagePullPolicy\":\"Always\",\"env\":[{\"name\":\"A\",\"value\":\"1\"}]},"
               "\"gdrcopy\":{\"enabled\":true,\"version\":\"sha256:"
               "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"}}}",
               &p);
    print_problems(&p);
    assert_int_equal(p.nproblems, 0);
    assert_string_equal(p.driver.kernel_module_type, "open");
    assert_string_equal(p.driver.kernel_module_config, "params");
    assert_string_equal(p.driver.repo_config, "repos");
    assert_string_equal(p.driver.cert_config, "ca");
    assert_string_equal(p.driver.licensing_secret, "lic");
    assert_string_equal(p.driver.licensing_config_map, "old");
    assert_true(p.driver.nls);
    assert_string_equal(p.driver.secret_env, "env");
    assert_true(p.driver.rdma && p.driver.host_mofed);
    assert_true(p.driver.gds.enabled && p.driver.gds.os_tag);
    assert_string_equal(p.driver.gds.image, "reg.example/nv/nvidia-fs:2.29.4");
    assert_string_equal(p.driver.gds.pull_policy, "Always");
    assert_int_equal(json_array_size(p.driver.gds.env), 1);
    assert_true(p.driver.gdrcopy.enabled && !p.driver.gdrcopy.os_tag); /* a digest */
    assert_non_null(strstr(p.driver.gdrcopy.image, "gdrdrv@sha256:"));
    gpuop_policy_free(&p);

    /* the defaults: nothing set, NVIDIA's sidecar images */
    parse_json("{\"spec\":{}}", &p);
    assert_null(p.driver.kernel_module_type);
    assert_false(p.driver.gds.enabled || p.driver.gdrcopy.enabled || p.driver.rdma);
    assert_string_equal(p.driver.gds.image, "nvcr.io/nvidia/cloud-native/nvidia-fs:2.29.4");
    assert_string_equal(p.driver.gdrcopy.image, "nvcr.io/nvidia/cloud-native/gdrdrv:v2.6");
    gpuop_policy_free(&p);

    /* values that cannot be used, each named */
    parse_json("{\"spec\":{\"driver\":{\"kernelModuleType\":\"closed\",\"kernelModuleConfig\":{"
               "\"name\":\"Bad_Name\"},\"repoConfig\":\"repos\",\"licensingConfig\":{\"nlsEnable\":"
               "true},\"secretEnv\":7,\"rdma\":{\"enabled\":\"yes\"},\"useOpenKernelModules\":"
               "true},\"gds\":{\"enabled\":true,\"version\":\"bad tag!\",\"args\":[\"x\"]},"
               "\"gdrcopy\":{\"imagePullSecrets\":[\"s\"]}}}",
               &p);
    assert_problem(&p, "spec.driver.kernelModuleType", "auto, open or proprietary");
    assert_null(p.driver.kernel_module_type);
    assert_problem(&p, "spec.driver.kernelModuleConfig.name", "ConfigMap name");
    assert_null(p.driver.kernel_module_config);
    assert_problem(&p, "spec.driver.repoConfig", "{configMapName}");
    assert_problem(&p, "spec.driver.licensingConfig.nlsEnable", "nlsEnabled");
    assert_problem(&p, "spec.driver.secretEnv", "Secret name");
    assert_problem(&p, "spec.driver.rdma.enabled", "true or false");
    assert_false(p.driver.rdma);
    assert_problem(&p, "spec.driver.useOpenKernelModules", "kernelModuleType: open");
    assert_problem(&p, "spec.gds.version", "bad tag!");
    assert_true(p.operands[gpuop_operand_by_key("driver")].held);
    assert_problem(&p, "spec.gds.args", "no args");
    assert_problem(&p, "spec.gdrcopy.imagePullSecrets", "spec.daemonsets.imagePullSecrets");
    gpuop_policy_free(&p);
}

/* spec.driver.pools: each pool inherits what it leaves out of spec.driver,
 * overrides the rest; a pool that cannot be used is named, left out and
 * holds the driver (its nodes are never moved to the default by a typo);
 * a valid nodeSelector is kept without a problem or a hold. */
static void test_driver_pools(void **state)
{
    struct gpuop_policy p, v;
    (void)state;
    int d = gpuop_operand_by_key("driver");
    parse_json("{\"spec\":{\"driver\":{\"pools\":[{\"name\":\"a100\",\"version\":\"550.1\","
               "\"imagePullPolicy\":\"Always\",\"kernelModuleType\":\"open\"},"
               "{\"name\":\"h100\",\"repository\":\"reg.example/nv\"}],"
               "\"repository\":\"nvcr.io/nvidia\",\"version\":\"580.2\","
               "\"kernelModuleType\":\"proprietary\"}}}",
               &p);
    print_problems(&p);
    assert_int_equal(p.nproblems, 0);
    assert_int_equal(p.ndriver_pools, 2);
    assert_string_equal(p.operands[d].image, "nvcr.io/nvidia/driver:580.2");
    assert_string_equal(p.driver_pools[0].name, "a100");
    assert_string_equal(p.driver_pools[0].image, "nvcr.io/nvidia/driver:550.1");
    assert_true(p.driver_pools[0].os_tag);
    assert_string_equal(p.driver_pools[0].pull_policy, "Always");
    assert_string_equal(p.driver_pools[0].kernel_module_type, "open");
    assert_string_equal(p.driver_pools[1].image, "reg.example/nv/driver:580.2");
    assert_string_equal(p.driver_pools[1].pull_policy, "IfNotPresent");
    assert_string_equal(p.driver_pools[1].kernel_module_type, "proprietary");
    assert_int_equal(gpuop_policy_driver_pool(&p, "h100"), 1);
    assert_int_equal(gpuop_policy_driver_pool(&p, "default"), -1);
    assert_int_equal(gpuop_policy_driver_pool(&p, ""), -1);
    gpuop_policy_pool_view(&p, 0, &v);
    assert_string_equal(v.operands[d].image, "nvcr.io/nvidia/driver:550.1");
    assert_string_equal(v.operands[d].pull_policy, "Always");
    assert_string_equal(v.driver.kernel_module_type, "open");
    assert_ptr_equal(v.operands[gpuop_operand_by_key("toolkit")].image,
                     p.operands[gpuop_operand_by_key("toolkit")].image);
    gpuop_policy_pool_view(&p, -1, &v);
    assert_string_equal(v.operands[d].image, "nvcr.io/nvidia/driver:580.2");
    assert_false(p.operands[d].held);
    gpuop_policy_free(&p);

    /* names: DNS labels, short, not default, unique; the selector: labels */
    parse_json("{\"spec\":{\"driver\":{\"pools\":[{\"name\":\"A100\"},{\"name\":\"default\"},"
               "{\"name\":\"a-very-long-pool-name-for-a-ds\"},{\"name\":\"x\"},{\"name\":\"x\"},"
               "{\"name\":\"y\",\"nodeSelector\":{}},{\"name\":\"z\",\"nodeSelector\":"
               "{\"gpuop.dev/driver-pool\":\"z\"}},{\"name\":\"w\",\"nodeSelector\":{\"pool\":7}},"
               "{\"version\":\"1\"}]}}}",
               &p);
    assert_problem(&p, "spec.driver.pools[0].name", "DNS label");
    assert_problem(&p, "spec.driver.pools[1].name", "spec.driver's own pool");
    assert_problem(&p, "spec.driver.pools[2].name", "at most 24");
    assert_problem(&p, "spec.driver.pools[4].name", "earlier pool");
    assert_problem(&p, "spec.driver.pools[5].nodeSelector", "an empty one");
    assert_problem(&p, "spec.driver.pools[6].nodeSelector.gpuop.dev/driver-pool", "your own");
    assert_problem(&p, "spec.driver.pools[7].nodeSelector.pool", "label value");
    assert_problem(&p, "spec.driver.pools[8].name", "missing");
    assert_int_equal(p.ndriver_pools, 1); /* x, the first */
    assert_string_equal(p.driver_pools[0].name, "x");
    assert_true(p.operands[d].held);
    gpuop_policy_free(&p);

    /* a bad version is named in the pool, and holds the driver */
    parse_json("{\"spec\":{\"driver\":{\"pools\":[{\"name\":\"a\",\"version\":\"bad tag!\","
               "\"colour\":1}]}}}",
               &p);
    assert_problem(&p, "spec.driver.pools[0].version", "bad tag!");
    assert_problem(&p, "spec.driver.pools[0].colour", NULL);
    assert_true(p.operands[d].held);
    gpuop_policy_free(&p);

    /* not a list: held */
    parse_json("{\"spec\":{\"driver\":{\"pools\":{\"name\":\"a\"}}}}", &p);
    assert_problem(&p, "spec.driver.pools", "a list");
    assert_true(p.operands[d].held);
    gpuop_policy_free(&p);

    /* a valid nodeSelector: kept, no problem (the labeller acts on it), no hold */
    parse_json("{\"spec\":{\"driver\":{\"pools\":[{\"name\":\"a100\",\"nodeSelector\":"
               "{\"nvidia.com/gpu.product\":\"A100-SXM4-80GB\"}}]}}}",
               &p);
    assert_int_equal(p.nproblems, 0);
    assert_int_equal(p.ndriver_pools, 1);
    assert_int_equal(json_object_size(p.driver_pools[0].node_selector), 1);
    assert_false(p.operands[d].held);
    gpuop_policy_free(&p);

    /* NVIDIADriver's DaemonSet fields: the pool's tolerations after spec.daemonsets',
     * its labels and annotations over them, its priority class in place (in the view) */
    parse_json("{\"spec\":{\"driver\":{\"pools\":[{\"name\":\"a\",\"tolerations\":"
               "[{\"key\":\"k\",\"operator\":\"Exists\"}],\"priorityClassName\":\"hi\","
               "\"labels\":{\"team\":\"ml\",\"x\":\"pool\"},\"annotations\":{\"o\":\"p\"}},"
               "{\"name\":\"b\"}]},\"daemonsets\":{\"labels\":{\"x\":\"all\",\"y\":\"all\"}}}}",
               &p);
    assert_int_equal(p.nproblems, 0);
    gpuop_policy_pool_view(&p, 0, &v);
    assert_int_equal(json_array_size(v.tolerations), 2); /* nvidia.com/gpu, then k */
    assert_string_equal(json_string_value(json_object_get(json_array_get(v.tolerations, 1), "key")),
                        "k");
    assert_string_equal(v.priority_class, "hi");
    assert_string_equal(json_string_value(json_object_get(v.labels, "x")), "pool");
    assert_string_equal(json_string_value(json_object_get(v.labels, "y")), "all");
    assert_string_equal(json_string_value(json_object_get(v.annotations, "o")), "p");
    gpuop_policy_pool_view(&p, 1, &v); /* b leaves them out: spec.daemonsets' */
    assert_ptr_equal(v.tolerations, p.tolerations);
    assert_string_equal(v.priority_class, "system-node-critical");
    assert_ptr_equal(v.labels, p.labels);
    gpuop_policy_free(&p);

    /* a pool's label gpuop sets itself: a problem, and the driver held */
    parse_json("{\"spec\":{\"driver\":{\"pools\":[{\"name\":\"a\",\"labels\":"
               "{\"app.kubernetes.io/name\":\"x\"}}]}}}",
               &p);
    assert_problem(&p, "spec.driver.pools[0].labels.app.kubernetes.io/name", "set by gpuop");
    assert_true(p.operands[d].held);
    gpuop_policy_free(&p);

    /* a pool's full reference, or spec.driver's: no per-OS DaemonSets to split, held */
    parse_json("{\"spec\":{\"driver\":{\"pools\":[{\"name\":\"a\","
               "\"image\":\"reg.example/driver:1-ubuntu22.04\"}]}}}",
               &p);
    assert_problem(&p, "spec.driver.pools[a]", "the pool's image");
    assert_true(p.operands[d].held);
    gpuop_policy_free(&p);
    parse_json("{\"spec\":{\"driver\":{\"image\":\"reg.example/driver:1\",\"pools\":[{"
               "\"name\":\"a\",\"image\":\"driver\",\"repository\":\"r.example\","
               "\"version\":\"2\"}]}}}",
               &p);
    assert_problem(&p, "spec.driver.pools", "spec.driver's image");
    assert_true(p.operands[d].held);
    gpuop_policy_free(&p);
}

/* A pool's usePrecompiled and driverType (issue 38): usePrecompiled the
 * pool's own else spec.driver's, refused for a version with no room as
 * spec.driver's is (the pool compiled); GDRCopy, GDS, repoConfig,
 * certConfig and secretEnv named for the precompiled pools and left out
 * of their views only; driverType gpu and vgpu accepted, vgpu-host-manager
 * refused by name (compat.c), a bad value named, both holding the driver. */
static void test_driver_pools_precompiled(void **state)
{
    struct gpuop_policy p, v;
    (void)state;
    int d = gpuop_operand_by_key("driver");
    parse_json("{\"spec\":{\"driver\":{\"version\":\"580.2\",\"repoConfig\":{\"configMapName\":"
               "\"repos\"},\"pools\":[{\"name\":\"a100\",\"usePrecompiled\":true,"
               "\"driverType\":\"gpu\"},{\"name\":\"h100\",\"driverType\":\"vgpu\"}]},"
               "\"gdrcopy\":{\"enabled\":true}}}",
               &p);
    assert_false(p.driver.precompiled);
    assert_true(p.driver_pools[0].precompiled);
    assert_false(p.driver_pools[1].precompiled);
    assert_false(p.operands[d].held);
    assert_problem(&p, "spec.gdrcopy.enabled", "precompiled driver pools (a100)");
    assert_problem(&p, "spec.driver.repoConfig.configMapName", "precompiled driver pools (a100)");
    assert_int_equal(p.nproblems, 2);
    assert_true(p.driver.gdrcopy.enabled); /* the compiled pools run it */
    assert_string_equal(p.driver.repo_config, "repos");
    gpuop_policy_pool_view(&p, 0, &v);
    assert_true(v.driver.precompiled);
    assert_false(v.driver.gdrcopy.enabled);
    assert_null(v.driver.repo_config);
    gpuop_policy_pool_view(&p, 1, &v);
    assert_false(v.driver.precompiled);
    assert_true(v.driver.gdrcopy.enabled);
    assert_string_equal(v.driver.repo_config, "repos");
    gpuop_policy_pool_view(&p, -1, &v);
    assert_false(v.driver.precompiled);
    assert_true(v.driver.gdrcopy.enabled);
    gpuop_policy_free(&p);

    /* spec.driver's inherited, a pool's own false over it; the sidecar
       named for the pools that are */
    parse_json("{\"spec\":{\"driver\":{\"usePrecompiled\":true,\"pools\":[{\"name\":\"a\"},"
               "{\"name\":\"b\",\"usePrecompiled\":false}]},\"gds\":{\"enabled\":true}}}",
               &p);
    assert_true(p.driver_pools[0].precompiled);
    assert_false(p.driver_pools[1].precompiled);
    assert_problem(&p, "spec.gds.enabled", "precompiled driver pools (default, a)");
    assert_true(p.driver.gds.enabled);
    gpuop_policy_free(&p);

    /* every pool precompiled: refused outright, as without pools */
    parse_json("{\"spec\":{\"driver\":{\"pools\":[{\"name\":\"a\",\"usePrecompiled\":true}],"
               "\"usePrecompiled\":true},\"gdrcopy\":{\"enabled\":true}}}",
               &p);
    assert_problem(&p, "spec.gdrcopy.enabled", "spec.driver.usePrecompiled");
    assert_false(p.driver.gdrcopy.enabled);
    gpuop_policy_free(&p);

    /* a version with no room for the kernel: the pool compiled, named */
    parse_json("{\"spec\":{\"driver\":{\"pools\":[{\"name\":\"a\",\"usePrecompiled\":true,"
               "\"version\":\"1234567890123456789012345\"}]}}}",
               &p);
    assert_problem(&p, "spec.driver.pools[a].usePrecompiled", "no room");
    assert_false(p.driver_pools[0].precompiled);
    assert_false(p.operands[d].held);
    gpuop_policy_free(&p);

    /* bad values, and the vGPU host manager: named, the driver held */
    parse_json("{\"spec\":{\"driver\":{\"pools\":[{\"name\":\"a\",\"usePrecompiled\":\"yes\"},"
               "{\"name\":\"b\",\"driverType\":\"vgpu-host-manager\"},"
               "{\"name\":\"c\",\"driverType\":\"cpu\"}]}}}",
               &p);
    assert_problem(&p, "spec.driver.pools[0].usePrecompiled", "true or false");
    assert_problem(&p, "spec.driver.pools[1].driverType", "vGPU host manager is not run");
    assert_problem(&p, "spec.driver.pools[2].driverType", "gpu, vgpu or vgpu-host-manager");
    assert_true(p.operands[d].held);
    gpuop_policy_free(&p);
}

/* GDRCopy and GPUDirect Storage with precompiled drivers: NVIDIA's
 * transformGDRCopyContainer and transformGDSContainer refuse the pair, so
 * does gpuop (the sidecar is not run, the field named); without the driver
 * and with a driver image that has no OS tag, neither sidecar runs either,
 * nor are repoConfig and certConfig mounted. */
/* spec.draDriver (issue 42): the GPUCluster's keys read into the
 * operand (image triple, pull policy, gpus.kubeletPlugin's env and
 * resources) and p->dra; defaults off, port 51516, no gates; a problem
 * in it holds the plugin (as it runs, or not at all); computeDomains true
 * is refused by name and holds nothing. */
static void test_dra_driver(void **state)
{
    (void)state;
    struct gpuop_policy p;
    int dra = gpuop_operand_by_key("draDriver");
    assert_true(dra >= 0);
    parse_json("{\"spec\": {}}", &p);
    assert_false(p.operands[dra].enabled);
    assert_string_equal(p.operands[dra].image, "nvcr.io/nvidia/dra-driver-nvidia-gpu:v0.5.0");
    assert_int_equal(p.dra.health_port, GPUOP_DRA_GPUS_HEALTH_PORT);
    assert_int_equal(json_object_size(p.dra.feature_gates), 0);
    assert_int_equal(json_array_size(p.dra.pull_secrets), 0);
    gpuop_policy_free(&p);

    parse_json("{\"spec\": {\"draDriver\": {\"enabled\": true, \"repository\": \"r.io/n\", "
               "\"version\": \"v0.5.1\", \"imagePullPolicy\": \"Always\", "
               "\"imagePullSecrets\": [\"s1\", {\"name\": \"s2\"}], \"featureGates\": "
               "{\"MPSSupport\": true, \"PassthroughSupport\": false}, \"gpus\": "
               "{\"kubeletPlugin\": {\"env\": [{\"name\": \"A\", \"value\": \"1\"}], "
               "\"resources\": {\"limits\": {\"memory\": \"1Gi\"}}, \"healthcheck\": "
               "{\"port\": 600}}}, \"computeDomains\": {\"enabled\": false, \"controller\": "
               "{\"env\": []}}}}}",
               &p);
    print_problems(&p);
    assert_int_equal(p.nproblems, 0);
    assert_true(p.operands[dra].enabled);
    assert_false(p.operands[dra].held);
    assert_string_equal(p.operands[dra].image, "r.io/n/dra-driver-nvidia-gpu:v0.5.1");
    assert_string_equal(p.operands[dra].pull_policy, "Always");
    assert_int_equal(json_array_size(p.dra.pull_secrets), 2);
    assert_true(json_is_true(json_object_get(p.dra.feature_gates, "MPSSupport")));
    assert_true(json_is_false(json_object_get(p.dra.feature_gates, "PassthroughSupport")));
    assert_int_equal(json_array_size(p.operands[dra].env), 1);
    assert_non_null(p.operands[dra].resources);
    assert_int_equal(p.dra.health_port, 600);
    gpuop_policy_free(&p);

    parse_json("{\"spec\": {\"draDriver\": {\"enabled\": true, \"gpus\": {\"kubeletPlugin\": "
               "{\"healthcheck\": {\"enabled\": false}}}}}}",
               &p);
    assert_int_equal(p.nproblems, 0);
    assert_int_equal(p.dra.health_port, 0);
    gpuop_policy_free(&p);

    /* a bad gate: named, held (not created, a running one kept) */
    parse_json("{\"spec\": {\"draDriver\": {\"enabled\": true, \"featureGates\": "
               "{\"bad gate!\": true, \"MPSSupport\": true}}}}",
               &p);
    assert_problem(&p, "spec.draDriver.featureGates.bad gate!", "not a feature gate name");
    assert_true(p.operands[dra].held && p.operands[dra].hold_absent);
    assert_int_equal(json_object_size(p.dra.feature_gates), 1);
    gpuop_policy_free(&p);

    /* compute domains: refused by name, the gpus capability goes on */
    parse_json("{\"spec\": {\"draDriver\": {\"enabled\": true, \"computeDomains\": "
               "{\"enabled\": true}}}}",
               &p);
    assert_problem(&p, "spec.draDriver.computeDomains.enabled", "not implemented by gpuop");
    assert_int_equal(p.nproblems, 1);
    assert_false(p.operands[dra].held);
    gpuop_policy_free(&p);

    /* off: computeDomains says nothing, nothing held */
    parse_json("{\"spec\": {\"draDriver\": {\"computeDomains\": {\"enabled\": true}}}}", &p);
    assert_int_equal(p.nproblems, 0);
    gpuop_policy_free(&p);
}

static void test_driver_options_refused(void **state)
{
    struct gpuop_policy p;
    parse_json("{\"spec\":{\"gdrcopy\":{\"enabled\":true},\"gds\":{\"enabled\":true},"
               "\"driver\":{\"usePrecompiled\":true}}}",
               &p);
    assert_int_equal(find_problem(&p, "spec.driver.usePrecompiled"), -1); /* implemented */
    assert_true(p.driver.precompiled);
    assert_problem(&p, "spec.gdrcopy.enabled", "precompiled");
    assert_problem(&p, "spec.gds.enabled", "precompiled");
    assert_false(p.driver.gdrcopy.enabled || p.driver.gds.enabled);
    gpuop_policy_free(&p);

    /* precompiled: NVIDIA renders no repositories, certificates or
       secretEnv (its images install nothing); named, and dropped */
    parse_json("{\"spec\":{\"driver\":{\"usePrecompiled\":true,\"repoConfig\":{"
               "\"configMapName\":\"r\"},\"certConfig\":{\"name\":\"c\"},\"secretEnv\":\"s\","
               "\"kernelModuleConfig\":{\"name\":\"k\"}}}}",
               &p);
    assert_true(p.driver.precompiled);
    assert_problem(&p, "spec.driver.repoConfig.configMapName", "usePrecompiled");
    assert_problem(&p, "spec.driver.certConfig.name", "usePrecompiled");
    assert_problem(&p, "spec.driver.secretEnv", "usePrecompiled");
    assert_null(p.driver.repo_config);
    assert_null(p.driver.cert_config);
    assert_null(p.driver.secret_env);
    assert_string_equal(p.driver.kernel_module_config, "k"); /* rendered before NVIDIA's return */
    gpuop_policy_free(&p);

    parse_json("{\"spec\":{\"gdrcopy\":{\"enabled\":true},\"driver\":{\"enabled\":false}}}", &p);
    assert_problem(&p, "spec.gdrcopy.enabled", "spec.driver.enabled: false");
    assert_false(p.driver.gdrcopy.enabled);
    gpuop_policy_free(&p);

    parse_json("{\"spec\":{\"gds\":{\"enabled\":true},\"driver\":{\"image\":\"reg.example/"
               "driver:1\",\"repoConfig\":{\"configMapName\":\"r\"},\"certConfig\":{\"name\":"
               "\"c\"}}}}",
               &p);
    assert_problem(&p, "spec.gds.enabled", "OS tag");
    assert_problem(&p, "spec.driver.repoConfig.configMapName", "per-OS");
    assert_problem(&p, "spec.driver.certConfig.name", "per-OS");
    assert_null(p.driver.repo_config);
    assert_null(p.driver.cert_config);
    assert_false(p.driver.gds.enabled);
    gpuop_policy_free(&p);

    /* with a full reference for the sidecar too, it runs */
    parse_json("{\"spec\":{\"gds\":{\"enabled\":true,\"image\":\"reg.example/nvidia-fs:2\"},"
               "\"driver\":{\"image\":\"reg.example/driver:1\"}}}",
               &p);
    assert_int_equal(p.nproblems, 0);
    assert_true(p.driver.gds.enabled);
    gpuop_policy_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_driver_options),
        cmocka_unit_test(test_driver_pools),
        cmocka_unit_test(test_driver_pools_precompiled),
        cmocka_unit_test(test_driver_options_refused),
        cmocka_unit_test(test_dra_driver),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_metadata),
        cmocka_unit_test(test_not_an_object),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_replacements),
        cmocka_unit_test(test_tolerations),
        cmocka_unit_test(test_valid_everything),
        cmocka_unit_test(test_rest_keeps_working),
        cmocka_unit_test(test_many_problems),
        cmocka_unit_test(test_type_sweep),
        cmocka_unit_test(test_ordering_and_findings),
        cmocka_unit_test(test_plugin_config),
        cmocka_unit_test(test_clusterpolicy_fields),
        cmocka_unit_test(test_server_accepts),
        cmocka_unit_test(test_image_keys),
        cmocka_unit_test(test_upgrade_policy),
        cmocka_unit_test(test_annotations_total),
        cmocka_unit_test(test_mps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
