/*
 * test_migconfig.c - the default MIG layouts (src/policy/migconfig.c) against
 * the facts they are made from: every product's all-<profile> layout exists
 * and gives that product exactly its count of that profile; every entry of
 * every layout is a fact of each product it applies to; all-balanced fills
 * each product's GPU; the YAML mig-parted reads is the same config. Then a
 * cross-check with NVIDIA's default (gpu-operator v26.7.0,
 * assets/state-mig-manager/0400_configmap.yaml), written here by hand: the
 * layout names it has, and what a few of its layouts give a few products.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpuop/error.h"
#include "gpuop/yaml.h"
#include "migconfig_int.h"

#define NAME_MAX_ 64
#define FILTER_   16

static json_t *config;  /* the generated config */
static json_t *layouts; /* its mig-configs (borrowed) */

static int setup(void **state)
{
    (void)state;
    config = gpuop_migconfig_new();
    layouts = json_object_get(config, "mig-configs");
    return json_is_object(layouts) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    json_decref(config);
    return 0;
}

static const struct gpuop_mig_product *product(uint16_t id)
{
    size_t n;
    const struct gpuop_mig_product *p = gpuop_migconfig_products(&n);
    for (size_t i = 0; i < n; i++)
        if (p[i].device_id == id)
            return &p[i];
    fail_msg("no product 0x%04X in the table", id);
    return NULL;
}

static unsigned fact(const struct gpuop_mig_product *p, const char *profile)
{
    for (const struct gpuop_mig_profile *f = p->profiles; f->name; f++)
        if (!strcmp(f->name, profile))
            return f->count;
    return 0;
}

/* Whether entry e of a layout applies to product p: no device-filter, or
 * one naming p's "0x<device>10DE". */
static bool applies(json_t *e, const struct gpuop_mig_product *p)
{
    json_t *filter = json_object_get(e, "device-filter");
    if (!filter)
        return true;
    char id[FILTER_];
    snprintf(id, sizeof(id), "0x%04X%04X", (unsigned)p->device_id, GPUOP_MIG_VENDOR_NVIDIA);
    size_t i;
    json_t *f;
    assert_true(json_is_array(filter));
    json_array_foreach(filter, i, f)
    {
        assert_true(json_is_string(f));
        if (!strcmp(json_string_value(f), id))
            return true;
    }
    return false;
}

/* The one entry of layout name that applies to p (NULL when none; fails
 * when more than one does). */
static json_t *entry_for(const char *name, const struct gpuop_mig_product *p)
{
    json_t *layout = json_object_get(layouts, name), *found = NULL, *e;
    size_t i;
    if (!layout)
        return NULL;
    json_array_foreach(layout, i, e)
    {
        if (!applies(e, p))
            continue;
        if (found)
            fail_msg("%s: two entries apply to %s", name, p->name);
        found = e;
    }
    return found;
}

static unsigned devices_of(json_t *e, const char *profile)
{
    return (unsigned)json_integer_value(
        json_object_get(json_object_get(e, "mig-devices"), profile));
}

/* Every product, every profile: all-<profile> gives it exactly that
 * profile, as many as the table says, on every GPU of it. */
static void test_every_product_every_profile(void **state)
{
    (void)state;
    size_t n, checked = 0;
    const struct gpuop_mig_product *p = gpuop_migconfig_products(&n);
    assert_true(n > 0);
    for (size_t i = 0; i < n; i++) {
        assert_non_null(p[i].profiles[0].name);
        for (const struct gpuop_mig_profile *f = p[i].profiles; f->name; f++) {
            char name[NAME_MAX_];
            assert_int_equal(gpuop_migconfig_layout_name(f->name, name, sizeof(name)), 0);
            json_t *e = entry_for(name, &p[i]);
            if (!e)
                fail_msg("%s: no entry of %s applies to it", p[i].name, name);
            assert_string_equal(json_string_value(json_object_get(e, "devices")), "all");
            assert_true(json_is_true(json_object_get(e, "mig-enabled")));
            assert_int_equal(json_object_size(json_object_get(e, "mig-devices")), 1);
            if (devices_of(e, f->name) != f->count)
                fail_msg("%s: %s gives %u of %s, the table says %u", p[i].name, name,
                         devices_of(e, f->name), f->name, f->count);
            checked++;
        }
    }
    assert_true(checked >= n);
}

/* The other way round: every entry of every all-<profile> layout names a
 * profile and a count that are a fact of each product it applies to that
 * has the profile, and at least one product has it. */
static void test_every_entry_is_a_fact(void **state)
{
    (void)state;
    size_t n;
    const struct gpuop_mig_product *p = gpuop_migconfig_products(&n);
    const char *name;
    json_t *layout;
    json_object_foreach(layouts, name, layout)
    {
        if (!strcmp(name, "all-disabled") || !strcmp(name, "all-enabled") ||
            !strncmp(name, "all-balanced", strlen("all-balanced")))
            continue;
        size_t i;
        json_t *e;
        json_array_foreach(layout, i, e)
        {
            json_t *devs = json_object_get(e, "mig-devices");
            assert_int_equal(json_object_size(devs), 1);
            const char *profile = json_object_iter_key(json_object_iter(devs));
            char want[NAME_MAX_];
            assert_int_equal(gpuop_migconfig_layout_name(profile, want, sizeof(want)), 0);
            assert_string_equal(name, want);
            size_t users = 0;
            for (size_t k = 0; k < n; k++) {
                if (!applies(e, &p[k]) || !fact(&p[k], profile))
                    continue;
                assert_int_equal(devices_of(e, profile), fact(&p[k], profile));
                users++;
            }
            if (!users)
                fail_msg("%s: an entry no product of the table can use", name);
            /* a filter names only products that have the profile */
            json_t *filter = json_object_get(e, "device-filter");
            assert_true(!filter || json_array_size(filter) == users);
        }
    }
}

/* The largest compute size of p's profiles: 7 on most, 4 on A30 and the
 * RTX PRO 6000. */
static unsigned slices_of(const char *profile)
{
    return (unsigned)strtoul(profile, NULL, 10);
}

static unsigned gpu_slices(const struct gpuop_mig_product *p)
{
    unsigned most = 0;
    for (const struct gpuop_mig_profile *f = p->profiles; f->name; f++)
        if (slices_of(f->name) > most)
            most = slices_of(f->name);
    return most;
}

/* The table itself: unique device IDs, and no profile whose count fills
 * more compute slices than the GPU has. */
static void test_table_is_consistent(void **state)
{
    (void)state;
    size_t n;
    const struct gpuop_mig_product *p = gpuop_migconfig_products(&n);
    for (size_t i = 0; i < n; i++) {
        for (size_t j = i + 1; j < n; j++)
            assert_int_not_equal(p[i].device_id, p[j].device_id);
        unsigned most = gpu_slices(&p[i]);
        assert_true(most == 7 || most == 4);
        for (const struct gpuop_mig_profile *f = p[i].profiles; f->name; f++) {
            assert_true(f->count >= 1);
            if (slices_of(f->name) * f->count > most)
                fail_msg("%s: %u x %s fills more than %u slices", p[i].name, f->count, f->name,
                         most);
        }
    }
}

/* all-balanced: one entry per product, holding profiles of that product
 * no more than it can take, and filling its GPU's compute slices. */
static void test_balanced_fills_each_gpu(void **state)
{
    (void)state;
    size_t n;
    const struct gpuop_mig_product *p = gpuop_migconfig_products(&n);
    for (size_t i = 0; i < n; i++) {
        json_t *e = entry_for("all-balanced", &p[i]);
        if (!e)
            fail_msg("all-balanced has no entry for %s", p[i].name);
        assert_non_null(json_object_get(e, "device-filter"));
        const char *profile;
        json_t *v;
        unsigned used = 0;
        json_object_foreach(json_object_get(e, "mig-devices"), profile, v)
        {
            assert_true(fact(&p[i], profile) >= json_integer_value(v));
            used += slices_of(profile) * (unsigned)json_integer_value(v);
        }
        assert_int_equal(used, gpu_slices(&p[i]));
    }
}

/* What a few layouts of NVIDIA's default give a few products, written here
 * from its file: our layouts give the same. */
static void test_nvidia_examples(void **state)
{
    (void)state;
    static const struct {
        const char *layout;
        uint16_t product;
        const char *devices; /* mig-devices as compact JSON */
    } want[] = {
        {"all-1g.10gb", 0x20B0, "{\"1g.10gb\":4}"},
        {"all-1g.10gb", 0x2330, "{\"1g.10gb\":7}"},
        {"all-1g.35gb", 0x2335, "{\"1g.35gb\":4}"},
        {"all-1g.35gb", 0x31C2, "{\"1g.35gb\":7}"},
        {"all-1g.23gb", 0x2901, "{\"1g.23gb\":7}"},
        {"all-1g.24gb.gfx", 0x2BB5, "{\"1g.24gb+gfx\":4}"},
        {"all-2g.12gb.me", 0x20B7, "{\"2g.12gb+me\":1}"},
        {"all-7g.141gb", 0x2335, "{\"7g.141gb\":1}"},
        {"all-balanced", 0x2941, "{\"1g.23gb\":2,\"2g.47gb\":1,\"3g.93gb\":1}"},
        {"all-balanced", 0x2901, "{\"1g.23gb\":2,\"2g.45gb\":1,\"3g.90gb\":1}"},
        {"all-balanced", 0x2330, "{\"1g.10gb\":2,\"2g.20gb\":1,\"3g.40gb\":1}"},
        {"all-balanced", 0x20B1, "{\"1g.5gb\":2,\"2g.10gb\":1,\"3g.20gb\":1}"},
        {"all-balanced", 0x20B7, "{\"1g.6gb\":2,\"2g.12gb\":1}"},
        {"all-balanced", 0x2BB5, "{\"1g.24gb\":2,\"2g.48gb\":1}"},
        {"all-balanced", 0x2348, "{\"1g.18gb\":2,\"2g.36gb\":1,\"3g.72gb\":1}"},
        {"all-balanced", 0x2329, "{\"1g.12gb\":2,\"2g.24gb\":1,\"3g.48gb\":1}"},
        {"all-balanced", 0x3182, "{\"1g.34gb\":2,\"2g.67gb\":1,\"3g.135gb\":1}"},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const struct gpuop_mig_product *p = product(want[i].product);
        json_t *e = entry_for(want[i].layout, p);
        if (!e)
            fail_msg("%s: nothing for %s", want[i].layout, p->name);
        json_t *w = json_loads(want[i].devices, 0, NULL);
        assert_non_null(w);
        if (!json_equal(w, json_object_get(e, "mig-devices"))) {
            char *got = json_dumps(json_object_get(e, "mig-devices"), JSON_COMPACT);
            fail_msg("%s on %s: %s, NVIDIA's gives %s", want[i].layout, p->name, got,
                     want[i].devices);
        }
        json_decref(w);
    }
}

/* The layout names of NVIDIA's default: all of them here, but those whose
 * products its file does not name (no facts to write them from); and ours
 * beyond them only gpuop's earlier all-balanced-a100-40gb. */
static void test_nvidia_layout_names(void **state)
{
    (void)state;
    static const char *const nvidia[] = {
        "all-disabled",    "all-enabled",        "all-1g.5gb",     "all-1g.5gb.me",
        "all-2g.10gb",     "all-3g.20gb",        "all-4g.20gb",    "all-7g.40gb",
        "all-1g.24gb.gfx", "all-1g.24gb.me.all", "all-1g.24gb-me", "all-2g.48gb",
        "all-2g.48gb.gfx", "all-2g.48gb.me.all", "all-2g.48gb-me", "all-4g.96gb",
        "all-4g.96gb.gfx", "all-1g.10gb",        "all-1g.10gb.me", "all-1g.20gb",
        "all-1g.23gb",     "all-1g.23gb.me",     "all-2g.20gb",    "all-3g.40gb",
        "all-4g.40gb",     "all-7g.80gb",        "all-1g.6gb",     "all-1g.6gb.me",
        "all-2g.12gb",     "all-2g.12gb.me",     "all-4g.24gb",    "all-1g.12gb",
        "all-1g.12gb.me",  "all-1g.24gb",        "all-1g.45gb",    "all-1g.47gb",
        "all-2g.24gb",     "all-2g.45gb",        "all-2g.47gb",    "all-3g.47gb",
        "all-4g.47gb",     "all-7g.94gb",        "all-3g.48gb",    "all-3g.90gb",
        "all-3g.93gb",     "all-4g.48gb",        "all-4g.90gb",    "all-4g.93gb",
        "all-7g.96gb",     "all-7g.180gb",       "all-7g.186gb",   "all-balanced",
        "all-1g.18gb",     "all-1g.18gb.me",     "all-1g.35gb",    "all-2g.35gb",
        "all-3g.71gb",     "all-4g.71gb",        "all-7g.141gb",   "all-1g.36gb",
        "all-2g.36gb",     "all-3g.72gb",        "all-4g.72gb",    "all-7g.144gb",
        "all-1g.34gb",     "all-1g.34gb.me",     "all-1g.67gb",    "all-2g.67gb",
        "all-3g.135gb",    "all-4g.135gb",       "all-7g.269gb",   "all-1g.35gb.me",
        "all-1g.70gb",     "all-2g.70gb",        "all-3g.139gb",   "all-4g.139gb",
        "all-7g.278gb",
    };
    /* in NVIDIA's file under no product's name: docs/operands.md */
    static const char *const unnamed[] = {"all-1g.24gb.me", "all-3g.95gb", "all-4g.95gb",
                                          "all-7g.189gb"};
    for (size_t i = 0; i < sizeof(nvidia) / sizeof(nvidia[0]); i++)
        if (!json_object_get(layouts, nvidia[i]))
            fail_msg("NVIDIA's layout %s is missing", nvidia[i]);
    for (size_t i = 0; i < sizeof(unnamed) / sizeof(unnamed[0]); i++)
        assert_null(json_object_get(layouts, unnamed[i]));
    assert_non_null(json_object_get(layouts, "all-balanced-a100-40gb"));
    assert_int_equal(json_object_size(layouts), sizeof(nvidia) / sizeof(nvidia[0]) + 1);
}

/* The ConfigMap's text is the same config, device filters as strings (a
 * plain 0x20B010DE would read as a number). */
static void test_yaml_round_trip(void **state)
{
    (void)state;
    char *text = gpuop_migconfig_yaml();
    assert_non_null(text);
    json_t *docs = NULL;
    struct gpuop_err err = {0};
    assert_int_equal(gpuop_yaml_load(text, strlen(text), &docs, &err), 0);
    assert_int_equal(json_array_size(docs), 1);
    assert_true(json_equal(json_array_get(docs, 0), config));
    assert_non_null(strstr(text, "\"0x20B010DE\""));
    json_decref(docs);
    free(text);
}

static void test_layout_name(void **state)
{
    (void)state;
    char out[NAME_MAX_];
    assert_int_equal(gpuop_migconfig_layout_name("1g.10gb+me", out, sizeof(out)), 0);
    assert_string_equal(out, "all-1g.10gb.me");
    assert_int_equal(gpuop_migconfig_layout_name("1g.24gb+me.all", out, sizeof(out)), 0);
    assert_string_equal(out, "all-1g.24gb.me.all");
    assert_int_equal(gpuop_migconfig_layout_name("1g.24gb-me", out, sizeof(out)), 0);
    assert_string_equal(out, "all-1g.24gb-me");
    assert_int_equal(gpuop_migconfig_layout_name("1g.10gb", out, 8), GPUOP_ETOOBIG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_product_every_profile),
        cmocka_unit_test(test_every_entry_is_a_fact),
        cmocka_unit_test(test_table_is_consistent),
        cmocka_unit_test(test_balanced_fills_each_gpu),
        cmocka_unit_test(test_nvidia_examples),
        cmocka_unit_test(test_nvidia_layout_names),
        cmocka_unit_test(test_yaml_round_trip),
        cmocka_unit_test(test_layout_name),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
