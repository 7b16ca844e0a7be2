/*
 * test_crd.c - crd/gpupolicy.yaml against the code that reads what it
 * admits. Every operand of the table has its block under spec, with the
 * table's default for `enabled`, a `config` property exactly when the row
 * names a default ConfigMap, and nothing else under spec but the known
 * shared keys; the schema's defaults are the parser's; every field has a
 * description (`kubectl explain gpupolicy` never says <no description>).
 */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "compat_int.h"
#include "gpuop/operand.h"
#include "gpuop/policy.h"
#include "gpuop/yaml.h"

/* The spec keys that are not operands. */
static const char *const shared_keys[] = {"daemonsets", "ordering",  "findings", "nodeLabeling",
                                          "mig",        "hostPaths", "operator", "cdi",
                                          "gds",        "gdrcopy",   NULL};

/* Operand keys beyond the common ones that gpuop implements for one operand
 * (the GPU Operator's paths). */
static const char *const operand_extras[][2] = {{"toolkit", "installDir"},
                                                {"driver", "upgradePolicy"},
                                                {"driver", "manager"},
                                                {"driver", "usePrecompiled"},
                                                {"driver", "kernelModuleType"},
                                                {"driver", "kernelModuleConfig"},
                                                {"driver", "repoConfig"},
                                                {"driver", "certConfig"},
                                                {"driver", "licensingConfig"},
                                                {"driver", "secretEnv"},
                                                {"driver", "rdma"},
                                                {"driver", "pools"},
                                                {"validator", "driver"},
                                                {"validator", "toolkit"},
                                                {"validator", "plugin"},
                                                {"dcgm", "hostPort"},
                                                {"devicePlugin", "mps"},
                                                {"dcgm", "hostNetwork"},
                                                {"dcgmExporter", "serviceMonitor"},
                                                {"draDriver", "imagePullSecrets"},
                                                {"draDriver", "featureGates"},
                                                {"draDriver", "gpus"},
                                                {"draDriver", "computeDomains"}};

/* A key the CRD admits only so that ClusterPolicy manifests and patches
 * apply: policy/compat.c must refuse it with a reason (PATH is "spec" or
 * "spec.<operand>"). */
static bool refused(const char *path, const char *key)
{
    json_t *on = json_pack("{s:b}", "enabled", 1);
    const char *why = gpuop_compat_refused(path, key, on);
    json_decref(on);
    return why && *why;
}

static json_t *load_crd(void)
{
    char path[512];
    json_t *docs = NULL;
    struct gpuop_err err = {0};
    snprintf(path, sizeof(path), "%s/crd/gpupolicy.yaml", SRCDIR);
    if (gpuop_yaml_load_file(path, &docs, &err) < 0)
        fail_msg("%s: %s", path, err.message);
    assert_int_equal(json_array_size(docs), 1);
    json_t *crd = json_incref(json_array_get(docs, 0));
    json_decref(docs);
    return crd;
}

/* Borrowed: the openAPIV3Schema of the only version. */
static json_t *schema_of(json_t *crd)
{
    json_t *versions = json_object_get(json_object_get(crd, "spec"), "versions");
    assert_int_equal(json_array_size(versions), 1);
    json_t *s =
        json_object_get(json_object_get(json_array_get(versions, 0), "schema"), "openAPIV3Schema");
    assert_non_null(s);
    return s;
}

static json_t *props(json_t *schema, const char *key)
{
    return json_object_get(json_object_get(json_object_get(schema, "properties"), key),
                           "properties");
}

static void test_operands_match_table(void **state)
{
    json_t *crd = load_crd();
    json_t *spec = props(schema_of(crd), "spec");
    assert_non_null(spec);
    size_t shared = 0, compat = 0;
    const char *key;
    json_t *v;
    while (shared_keys[shared])
        shared++;
    json_object_foreach(spec, key, v)
    {
        bool known = gpuop_operand_by_key(key) >= 0;
        for (int k = 0; shared_keys[k]; k++)
            known |= !strcmp(shared_keys[k], key);
        if (!known && !refused("spec", key))
            fail_msg("crd: spec.%s is neither an operand, a shared key nor a ClusterPolicy "
                     "field policy/compat.c refuses",
                     key);
        compat += !known;
    }
    size_t own = 0; /* operands with a spec block of their own */
    for (int i = 0; i < gpuop_operand_count(); i++)
        own += !gpuop_operand_follow(i);
    assert_int_equal(json_object_size(spec), own + shared + compat);
    for (int i = 0; i < gpuop_operand_count(); i++) {
        const struct gpuop_operand *op = gpuop_operand_get(i);
        if (gpuop_operand_follow(i)) { /* a member of the spec it follows (spec.devicePlugin.mps) */
            const struct gpuop_operand *of = gpuop_operand_get(gpuop_operand_follows(i));
            json_t *fp = json_object_get(json_object_get(spec, of->key), "properties");
            if (!json_object_get(fp, op->key))
                fail_msg("crd: no spec.%s.%s for operand %s", of->key, op->key, op->name);
            continue;
        }
        json_t *block = json_object_get(spec, op->key);
        if (!block)
            fail_msg("crd: no spec.%s for operand %s", op->key, op->name);
        json_t *p = json_object_get(block, "properties");
        json_t *en = json_object_get(json_object_get(p, "enabled"), "default");
        assert_true(json_is_boolean(en));
        if (json_is_true(en) != op->enabled)
            fail_msg("crd: spec.%s.enabled defaults to %s, the table says %s", op->key,
                     json_is_true(en) ? "true" : "false", op->enabled ? "true" : "false");
        static const char *const fields[] = {"enabled",         "repository", "image", "version",
                                             "imagePullPolicy", "args",       "env",   "resources"};
        for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++)
            if (!json_object_get(p, fields[f]))
                fail_msg("crd: spec.%s has no %s", op->key, fields[f]);
        char path[64];
        snprintf(path, sizeof(path), "spec.%s", op->key);
        if (op->config && !json_object_get(p, "config"))
            fail_msg("crd: %s has no config, the table names %s", path, op->config);
        size_t extra = 0;
        json_object_foreach(p, key, v)
        {
            bool common = !strcmp(key, "config") && op->config;
            for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++)
                common |= !strcmp(fields[f], key);
            if (common)
                continue;
            bool ok = refused(path, key);
            for (size_t e = 0; e < sizeof(operand_extras) / sizeof(operand_extras[0]); e++)
                ok |= !strcmp(operand_extras[e][0], op->key) && !strcmp(operand_extras[e][1], key);
            if (!ok)
                fail_msg("crd: %s.%s is not a field gpuop reads or refuses", path, key);
            extra++;
        }
        assert_int_equal(json_object_size(p),
                         sizeof(fields) / sizeof(fields[0]) + (op->config != NULL) + extra);
        /* and the parser agrees: the schema's default is the parsed default */
        struct gpuop_policy pol;
        json_t *empty = json_object();
        assert_int_equal(gpuop_policy_parse(empty, &pol, NULL), 0);
        assert_int_equal(pol.operands[i].enabled, op->enabled);
        gpuop_policy_free(&pol);
        json_decref(empty);
    }
    for (int k = 0; shared_keys[k]; k++)
        assert_non_null(json_object_get(spec, shared_keys[k]));
    json_decref(crd);
}

/* The schema's defaults for the policy-wide fields are gpuop's. */
static void test_defaults_match_parser(void **state)
{
    json_t *crd = load_crd();
    json_t *spec = props(schema_of(crd), "spec");
    struct gpuop_policy pol;
    json_t *empty = json_object();
    assert_int_equal(gpuop_policy_parse(empty, &pol, NULL), 0);
    json_t *ord = json_object_get(spec, "ordering");
    assert_string_equal(json_string_value(json_object_get(ord, "default")), "report");
    assert_int_equal(pol.ordering, GPUOP_ORDERING_REPORT);
    json_t *fp = json_object_get(json_object_get(spec, "findings"), "properties");
    struct {
        const char *key;
        long got;
    } g[] = {{"terminatingGracePeriodSeconds", pol.terminating_grace_s},
             {"advertiseGracePeriodSeconds", pol.advertise_grace_s},
             {"eventGracePeriodSeconds", pol.event_grace_s}};
    assert_int_equal(json_object_size(fp), 3);
    for (size_t i = 0; i < 3; i++) {
        json_t *f = json_object_get(fp, g[i].key);
        assert_non_null(f);
        assert_int_equal(json_integer_value(json_object_get(f, "default")), g[i].got);
        assert_int_equal(json_integer_value(json_object_get(f, "maximum")), GPUOP_GRACE_MAX);
        assert_int_equal(json_integer_value(json_object_get(f, "minimum")), 0);
    }
    gpuop_policy_free(&pol);
    json_decref(empty);
    json_decref(crd);
}

/* spec.driver.upgradePolicy: the keys the parser reads, with its defaults. */
static void test_upgrade_policy_keys(void **state)
{
    (void)state;
    json_t *crd = load_crd();
    json_t *up =
        json_object_get(json_object_get(props(schema_of(crd), "spec"), "driver"), "properties");
    up = json_object_get(json_object_get(up, "upgradePolicy"), "properties");
    assert_non_null(up);
    static const char *const keys[] = {"autoUpgrade",
                                       "maxParallelUpgrades",
                                       "maxUnavailable",
                                       "waitForCompletion",
                                       "gpuPodDeletion",
                                       "podDeletion",
                                       "drain",
                                       "onFailure",
                                       "driverReadyTimeoutSeconds"};
    assert_int_equal(json_object_size(up), sizeof(keys) / sizeof(keys[0]));
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (!json_object_get(up, keys[i]))
            fail_msg("crd: spec.driver.upgradePolicy has no %s", keys[i]);
    struct gpuop_policy pol;
    json_t *empty = json_object();
    assert_int_equal(gpuop_policy_parse(empty, &pol, NULL), 0);
    assert_int_equal(json_is_true(json_object_get(json_object_get(up, "autoUpgrade"), "default")),
                     pol.upgrade.auto_upgrade);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(up, "maxParallelUpgrades"), "default")),
        pol.upgrade.max_parallel);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(up, "maxUnavailable"), "default")),
        "25%");
    assert_true(pol.upgrade.max_unavailable_pct);
    assert_int_equal(pol.upgrade.max_unavailable, 25);
    static const char *const del[] = {"force", "timeoutSeconds", "deleteEmptyDir"};
    static const char *const drain[] = {"enable", "force", "podSelector", "timeoutSeconds",
                                        "deleteEmptyDir"};
    json_t *d = json_object_get(json_object_get(up, "gpuPodDeletion"), "properties");
    assert_int_equal(json_object_size(d), 3);
    for (size_t i = 0; i < 3; i++)
        assert_non_null(json_object_get(d, del[i]));
    d = json_object_get(json_object_get(up, "drain"), "properties");
    assert_int_equal(json_object_size(d), 5);
    for (size_t i = 0; i < 5; i++)
        assert_non_null(json_object_get(d, drain[i]));
    gpuop_policy_free(&pol);
    json_decref(empty);
    json_decref(crd);
}

/* No silent pruning (issue 38 item 5). The API server drops a key no schema
 * admits (kubectl apply --validate=false, a merge patch, any client without
 * strict validation), so a ClusterPolicy field gpuop does not implement
 * (spec.driver.useNvidiaDriverCRD, spec.sandboxWorkloads) would never reach policy.c, which
 * refuses it with a condition naming it. So every object under spec whose
 * keys gpuop reads (it has properties) keeps unknown keys, and the parser
 * names one put there: walked from the schema, one unknown key at a time. */
#define UNKNOWN_KEY "zzNotAField"

static int unkept, checked;

/* The value at segs[i] (its schema schemas[i + 1]) of a policy whose
 * object at segs[0..n) holds the unknown key: an array ("[]" follows) of
 * one item, or an object with the keys its schema requires and the next
 * segment's value, the last one the unknown key; new. */
static json_t *value_at(json_t *const *schemas, const char *const *segs, int i, int n)
{
    if (i + 1 < n && !strcmp(segs[i + 1], "[]")) {
        json_t *arr = json_array();
        json_array_append_new(arr, value_at(schemas, segs, i + 1, n));
        return arr;
    }
    json_t *obj = json_object();
    size_t k;
    json_t *req;
    json_array_foreach(json_object_get(schemas[i + 1], "required"), k, req)
        json_object_set_new(obj, json_string_value(req), json_string("x"));
    if (i + 1 < n)
        json_object_set_new(obj, segs[i + 1], value_at(schemas, segs, i + 1, n));
    else
        json_object_set_new(obj, UNKNOWN_KEY, json_true());
    return obj;
}

static json_t *policy_with_unknown(json_t *const *schemas, const char *const *segs, int n)
{
    return json_pack("{s:o}", segs[0], value_at(schemas, segs, 0, n));
}

static void walk_kept(json_t *const *schemas, const char **segs, int n)
{
    json_t *s = schemas[n];
    char path[512] = "";
    for (int i = 0; i < n; i++)
        snprintf(path + strlen(path), sizeof(path) - strlen(path), "%s%s", i ? "." : "", segs[i]);
    if (json_object_get(s, "properties")) {
        if (!json_is_true(json_object_get(s, "x-kubernetes-preserve-unknown-fields"))) {
            print_message("crd: %s prunes unknown keys (no x-kubernetes-preserve-unknown-fields)\n",
                          path);
            unkept++;
        }
        checked++;
        json_t *obj = policy_with_unknown(schemas, segs, n);
        struct gpuop_policy pol;
        assert_int_equal(gpuop_policy_parse(obj, &pol, NULL), 0);
        bool named = false;
        for (int i = 0; i < pol.nproblems && i < GPUOP_POLICY_PROBLEMS_MAX; i++) {
            const char *f = pol.problems[i].field;
            size_t fl = strlen(f), kl = strlen("." UNKNOWN_KEY);
            /* an unknown field, or under spec.operator (whose runtimeClass
             * alone gpuop reads) a ClusterPolicy field it does not implement */
            named |=
                fl > kl && !strcmp(f + fl - kl, "." UNKNOWN_KEY) &&
                (strstr(pol.problems[i].message, "unknown field") ||
                 strstr(pol.problems[i].message, "a ClusterPolicy field gpuop does not implement"));
        }
        if (!named) {
            char *dump = json_dumps(obj, JSON_COMPACT);
            print_message("policy: an unknown key in %s is not named: %s\n", path, dump);
            free(dump);
            unkept++;
        }
        gpuop_policy_free(&pol);
        json_decref(obj);
    }
    assert_true(n + 1 < 16);
    const char *key;
    json_t *sub;
    json_t *next[16];
    memcpy(next, schemas, (size_t)(n + 1) * sizeof(*next));
    json_object_foreach(json_object_get(s, "properties"), key, sub)
    {
        segs[n] = key;
        next[n + 1] = sub;
        walk_kept(next, segs, n + 1);
    }
    if (json_object_get(s, "items")) {
        segs[n] = "[]";
        next[n + 1] = json_object_get(s, "items");
        walk_kept(next, segs, n + 1);
    }
}

static void test_keeps_unknown_fields(void **state)
{
    json_t *crd = load_crd();
    json_t *schemas[16] = {schema_of(crd),
                           json_object_get(json_object_get(schema_of(crd), "properties"), "spec")};
    const char *segs[16] = {"spec"};
    unkept = checked = 0;
    walk_kept(schemas, segs, 1);
    assert_int_equal(unkept, 0);
    /* spec, each operand, its env items and resources at least */
    assert_true(checked > 3 * gpuop_operand_count());
    json_decref(crd);
}

/* spec.hostPaths and spec.validator.<component>: the keys the parser
 * reads, and the parser's defaults are the GPU Operator's. */
static void test_platform_keys(void **state)
{
    (void)state;
    json_t *crd = load_crd();
    json_t *spec = props(schema_of(crd), "spec");
    json_t *hp = json_object_get(json_object_get(spec, "hostPaths"), "properties");
    static const char *const paths[] = {"rootFS", "driverInstallDir", "kubeletRootDir"};
    assert_int_equal(json_object_size(hp), sizeof(paths) / sizeof(paths[0]));
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
        if (!json_is_string(json_object_get(json_object_get(hp, paths[i]), "pattern")))
            fail_msg("crd: spec.hostPaths has no %s with a pattern", paths[i]);
    json_t *v = json_object_get(json_object_get(spec, "validator"), "properties");
    for (int c = 0; c < GPUOP_VALIDATOR_COMPONENTS; c++) {
        const char *name = gpuop_policy_validator_component((enum gpuop_validator_component)c);
        json_t *cp = json_object_get(json_object_get(v, name), "properties");
        if (json_object_size(cp) != 1 || !json_object_get(cp, "env"))
            fail_msg("crd: spec.validator.%s is not {env}", name);
    }
    json_t *rc = json_object_get(json_object_get(spec, "operator"), "properties");
    assert_non_null(json_object_get(rc, "runtimeClass"));
    assert_non_null(json_object_get(rc, "defaultRuntime"));
    assert_int_equal(json_object_size(rc), 2);
    /* every value the schema admits is one the parser takes */
    size_t k;
    json_t *e;
    json_array_foreach(json_object_get(json_object_get(rc, "defaultRuntime"), "enum"), k, e)
    {
        json_t *pol = json_pack("{s:{s:{s:O}}}", "spec", "operator", "defaultRuntime", e);
        struct gpuop_policy one;
        assert_int_equal(gpuop_policy_parse(pol, &one, NULL), 0);
        assert_int_equal(one.nproblems, 0);
        gpuop_policy_free(&one);
        json_decref(pol);
    }
    json_t *cdi = json_object_get(json_object_get(spec, "cdi"), "properties");
    static const char *const cdi_keys[] = {"enabled", "default", "nriPluginEnabled"};
    assert_int_equal(json_object_size(cdi), 3);
    for (size_t i = 0; i < 3; i++)
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(cdi, cdi_keys[i]), "type")),
            "boolean");
    struct gpuop_policy pol;
    json_t *empty = json_object();
    assert_int_equal(gpuop_policy_parse(empty, &pol, NULL), 0);
    assert_string_equal(pol.runtime_class, "nvidia");
    assert_string_equal(pol.host_root, "/");
    assert_string_equal(pol.driver_install_dir, "/run/nvidia/driver");
    assert_string_equal(pol.kubelet_root_dir, "/var/lib/kubelet");
    gpuop_policy_free(&pol);
    json_decref(empty);
    json_decref(crd);
}

/* Every field `kubectl explain gpupolicy` shows has a description a person
 * can act on (issue 16): the root, and every schema under `properties`, at
 * any depth (inside list items and maps too). Missing ones are listed by
 * path before the test fails. */
#define DESCRIPTION_MIN 12 /* characters: a sentence, not a placeholder */

static int missing;

static void walk(json_t *schema, const char *path, bool is_field)
{
    const char *key;
    json_t *sub;
    char p[512];
    if (!json_is_object(schema))
        return;
    const char *d = json_string_value(json_object_get(schema, "description"));
    if (is_field && (!d || strlen(d) < DESCRIPTION_MIN)) {
        print_message("crd: %s has %s\n", path,
                      d ? "a description too short to act on" : "no description");
        missing++;
    }
    json_object_foreach(json_object_get(schema, "properties"), key, sub)
    {
        /* the API server refuses anything but type under the root's
         * metadata, and explains it from ObjectMeta itself */
        if (!strcmp(path, "gpupolicy") && !strcmp(key, "metadata"))
            continue;
        snprintf(p, sizeof(p), "%s.%s", path, key);
        walk(sub, p, true);
    }
    snprintf(p, sizeof(p), "%s[]", path);
    walk(json_object_get(schema, "items"), p, false);
    snprintf(p, sizeof(p), "%s{}", path);
    walk(json_object_get(schema, "additionalProperties"), p, false);
}

static void test_descriptions(void **state)
{
    json_t *crd = load_crd();
    missing = 0;
    walk(schema_of(crd), "gpupolicy", true);
    assert_int_equal(missing, 0);
    json_decref(crd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_operands_match_table), cmocka_unit_test(test_defaults_match_parser),
        cmocka_unit_test(test_upgrade_policy_keys),  cmocka_unit_test(test_platform_keys),
        cmocka_unit_test(test_descriptions),         cmocka_unit_test(test_keeps_unknown_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
