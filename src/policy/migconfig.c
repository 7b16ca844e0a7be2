/*
 * migconfig.c - gpuop's default MIG layouts, made from facts (migconfig_int.h).
 *
 * The table below is what gpuop knows of each GPU product MIG Manager can
 * partition: its PCI device ID, its name, and per MIG profile the most
 * instances of that profile the GPU holds alone (NVIDIA's MIG User Guide,
 * "Supported MIG Profiles"; the products are those NVIDIA's own default
 * layouts cover, gpu-operator v26.7.0
 * assets/state-mig-manager/0400_configmap.yaml, docs/operands.md). The
 * layouts are written from it by rules (gpuop_migconfig_new says which), so
 * a product is one row and its profiles one list; nothing here is a layout
 * written by hand.
 *
 * Products of one GPU family share a profile list: an A800 offers the
 * A100's profiles, an H800 the H100's.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuop/error.h"
#include "gpuop/yaml.h"
#include "migconfig_int.h"

#define NROWS(a)          (sizeof(a) / sizeof((a)[0]))
#define LAYOUT_MAX        64 /* bytes of a layout name */
#define FILTER_MAX        16 /* bytes of "0x233010DE" and its NUL */
#define BALANCED_SMALLEST 2  /* instances of the smallest 1g profile in all-balanced */
#define SLICES_MAX        8  /* compute slices ("<n>g") a profile may name, at most */

/* A100 40GB, A800 40GB */
static const struct gpuop_mig_profile ga100_40gb[] = {
    {"1g.5gb", 7},  {"1g.5gb+me", 1}, {"1g.10gb", 4}, {"2g.10gb", 3},
    {"3g.20gb", 2}, {"4g.20gb", 1},   {"7g.40gb", 1}, {NULL, 0}};
/* A100 80GB, A800 80GB, H100 80GB, H800 80GB: the same names */
static const struct gpuop_mig_profile gpu_80gb[] = {
    {"1g.10gb", 7}, {"1g.10gb+me", 1}, {"1g.20gb", 4}, {"2g.20gb", 3},
    {"3g.40gb", 2}, {"4g.40gb", 1},    {"7g.80gb", 1}, {NULL, 0}};
/* A30: four compute slices */
static const struct gpuop_mig_profile ga100_a30[] = {
    {"1g.6gb", 4}, {"1g.6gb+me", 1}, {"2g.12gb", 2}, {"2g.12gb+me", 1}, {"4g.24gb", 1}, {NULL, 0}};
/* H100 NVL, H800 NVL (94 GB) */
static const struct gpuop_mig_profile gh100_94gb[] = {
    {"1g.12gb", 7}, {"1g.12gb+me", 1}, {"1g.24gb", 4}, {"2g.24gb", 3},
    {"3g.47gb", 2}, {"4g.47gb", 1},    {"7g.94gb", 1}, {NULL, 0}};
/* H100 96GB, GH200 96GB, PG506-96GB, H20 */
static const struct gpuop_mig_profile gpu_96gb[] = {
    {"1g.12gb", 7}, {"1g.12gb+me", 1}, {"1g.24gb", 4}, {"2g.24gb", 3},
    {"3g.48gb", 2}, {"4g.48gb", 1},    {"7g.96gb", 1}, {NULL, 0}};
/* H200 141GB, H200 NVL */
static const struct gpuop_mig_profile gh100_141gb[] = {
    {"1g.18gb", 7}, {"1g.18gb+me", 1}, {"1g.35gb", 4},  {"2g.35gb", 3},
    {"3g.71gb", 2}, {"4g.71gb", 1},    {"7g.141gb", 1}, {NULL, 0}};
/* GH200 144GB HBM3e */
static const struct gpuop_mig_profile gh200_144gb[] = {
    {"1g.18gb", 7}, {"1g.18gb+me", 1}, {"1g.36gb", 4},  {"2g.36gb", 3},
    {"3g.72gb", 2}, {"4g.72gb", 1},    {"7g.144gb", 1}, {NULL, 0}};
/* B200 */
static const struct gpuop_mig_profile gb100_b200[] = {
    {"1g.23gb", 7}, {"1g.23gb+me", 1}, {"1g.45gb", 4},  {"2g.45gb", 3},
    {"3g.90gb", 2}, {"4g.90gb", 1},    {"7g.180gb", 1}, {NULL, 0}};
/* GB200 */
static const struct gpuop_mig_profile gb100_gb200[] = {
    {"1g.23gb", 7}, {"1g.23gb+me", 1}, {"1g.47gb", 4},  {"2g.47gb", 3},
    {"3g.93gb", 2}, {"4g.93gb", 1},    {"7g.186gb", 1}, {NULL, 0}};
/* B300 */
static const struct gpuop_mig_profile gb110_b300[] = {
    {"1g.34gb", 7},  {"1g.34gb+me", 1}, {"1g.67gb", 4},  {"2g.67gb", 3},
    {"3g.135gb", 2}, {"4g.135gb", 1},   {"7g.269gb", 1}, {NULL, 0}};
/* GB300 */
static const struct gpuop_mig_profile gb110_gb300[] = {
    {"1g.35gb", 7},  {"1g.35gb+me", 1}, {"1g.70gb", 4},  {"2g.70gb", 3},
    {"3g.139gb", 2}, {"4g.139gb", 1},   {"7g.278gb", 1}, {NULL, 0}};
/* RTX PRO 6000 Blackwell Server Edition: four compute slices, graphics
 * (+gfx) and media-engine (+me.all, -me) variants */
static const struct gpuop_mig_profile gb202_96gb[] = {
    {"1g.24gb", 4},        {"1g.24gb+gfx", 4}, {"1g.24gb+me.all", 1},
    {"1g.24gb-me", 4},     {"2g.48gb", 2},     {"2g.48gb+gfx", 2},
    {"2g.48gb+me.all", 1}, {"2g.48gb-me", 2},  {"4g.96gb", 1},
    {"4g.96gb+gfx", 1},    {NULL, 0}};

static const struct gpuop_mig_product products[] = {
    {0x20B0, "A100-SXM4-40GB", ga100_40gb},
    {0x20B1, "A100-PCIE-40GB", ga100_40gb},
    {0x20F1, "A100-PCIE-40GB", ga100_40gb},
    {0x20F6, "A800-40GB", ga100_40gb},
    {0x20B2, "A100-SXM4-80GB", gpu_80gb},
    {0x20B5, "A100-PCIE-80GB", gpu_80gb},
    {0x20F3, "A800-SXM4-80GB", gpu_80gb},
    {0x20F5, "A800-80GB-PCIe", gpu_80gb},
    {0x2330, "H100-SXM5-80GB", gpu_80gb},
    {0x2331, "H100-PCIe-80GB", gpu_80gb},
    {0x2322, "H800-PCIe-80GB", gpu_80gb},
    {0x2324, "H800-SXM5-80GB", gpu_80gb},
    {0x20B7, "A30-24GB", ga100_a30},
    {0x2321, "H100-NVL", gh100_94gb},
    {0x233A, "H800-NVL", gh100_94gb},
    {0x233D, "H100-96GB", gpu_96gb},
    {0x2342, "GH200-96GB", gpu_96gb},
    {0x20B6, "PG506-96GB", gpu_96gb},
    {0x2329, "H20", gpu_96gb},
    {0x2335, "H200-141GB", gh100_141gb},
    {0x233B, "H200-NVL", gh100_141gb},
    {0x2348, "GH200-144GB-HBM3e", gh200_144gb},
    {0x2901, "B200", gb100_b200},
    {0x2941, "GB200", gb100_gb200},
    {0x3182, "B300", gb110_b300},
    {0x31C2, "GB300", gb110_gb300},
    {0x2BB5, "RTX-PRO-6000-96GB", gb202_96gb},
};

/* gpuop's own layout from before the table: one each of the A100 40GB's
 * smallest 1g, 2g and 3g profiles on every GPU; kept for nodes labelled
 * with it. */
#define LEGACY_LAYOUT  "all-balanced-a100-40gb"
#define LEGACY_PRODUCT 0x20B0

const struct gpuop_mig_product *gpuop_migconfig_products(size_t *n)
{
    *n = NROWS(products);
    return products;
}

int gpuop_migconfig_layout_name(const char *profile, char *out, size_t cap)
{
    int len = snprintf(out, cap, "all-%s", profile);
    if (len < 0 || (size_t)len >= cap)
        return GPUOP_ETOOBIG;
    for (char *c = out; *c; c++)
        if (*c == '+')
            *c = '.';
    return 0;
}

/* A profile's compute slices and memory in GB ("2g.20gb": 2 and 20), and
 * whether it has no attribute ("+me", "-me", "+gfx"); false when the name
 * is not of that form. */
static bool profile_parse(const char *name, unsigned *slices, unsigned *gb, bool *plain)
{
    char *end;
    unsigned long g = strtoul(name, &end, 10);
    if (end == name || strncmp(end, "g.", 2))
        return false;
    const char *m = end + 2;
    unsigned long mem = strtoul(m, &end, 10);
    if (end == m || strncmp(end, "gb", 2))
        return false;
    *slices = (unsigned)g;
    *gb = (unsigned)mem;
    *plain = end[2] == '\0';
    return true;
}

/* How many of profile product p holds alone; 0 when it has no such profile. */
static unsigned count_of(const struct gpuop_mig_product *p, const char *profile)
{
    for (const struct gpuop_mig_profile *f = p->profiles; f->name; f++)
        if (!strcmp(f->name, profile))
            return f->count;
    return 0;
}

/* One entry of a layout, new: devices (steals) on every GPU, or on the
 * products whose device-filter is in filter (steals; NULL: every GPU).
 * NULL on out-of-memory, or when devices is NULL. */
static json_t *entry_new(json_t *filter, json_t *devices)
{
    return json_pack("{s:o*, s:s, s:b, s:o}", "device-filter", filter, "devices", "all",
                     "mig-enabled", 1, "mig-devices", devices);
}

/* Appends "0x<device><vendor>", mig-parted's device-filter form, to arr. */
static int filter_add(json_t *arr, const struct gpuop_mig_product *p)
{
    char id[FILTER_MAX];
    snprintf(id, sizeof(id), "0x%04X%04X", (unsigned)p->device_id,
             (unsigned)GPUOP_MIG_VENDOR_NVIDIA);
    return json_array_append_new(arr, json_string(id)) ? GPUOP_ENOMEM : 0;
}

/* The layout all-<profile>: an array of entries, new. */
static json_t *all_of(const char *profile)
{
    unsigned counts[NROWS(products)];
    size_t ncounts = 0;
    for (size_t i = 0; i < NROWS(products); i++) {
        unsigned c = count_of(&products[i], profile);
        bool seen = false;
        for (size_t k = 0; c && k < ncounts; k++)
            seen |= counts[k] == c;
        if (c && !seen)
            counts[ncounts++] = c;
    }
    json_t *layout = json_array();
    for (size_t k = 0; layout && k < ncounts; k++) {
        json_t *filter = NULL;
        if (ncounts > 1) { /* products differ: each count names its products */
            filter = json_array();
            for (size_t i = 0; filter && i < NROWS(products); i++)
                if (count_of(&products[i], profile) == counts[k] &&
                    filter_add(filter, &products[i]) < 0) {
                    json_decref(filter);
                    filter = NULL;
                }
            if (!filter) {
                json_decref(layout);
                return NULL;
            }
        }
        json_t *e = entry_new(filter, json_pack("{s:i}", profile, (json_int_t)counts[k]));
        if (!e || json_array_append_new(layout, e)) {
            json_decref(layout);
            return NULL;
        }
    }
    return layout;
}

/* Product p's balanced devices, new ({} when it has none of the profiles):
 * per compute size 1g, 2g, 3g its attribute-less profile with the least
 * memory; wants[g] instances of it. */
static json_t *balanced_of(const struct gpuop_mig_product *p, const unsigned wants[SLICES_MAX])
{
    const char *pick[SLICES_MAX] = {0};
    unsigned pick_gb[SLICES_MAX] = {0};
    for (const struct gpuop_mig_profile *f = p->profiles; f->name; f++) {
        unsigned g, gb;
        bool plain;
        if (!profile_parse(f->name, &g, &gb, &plain) || !plain || g >= SLICES_MAX || !wants[g])
            continue;
        if (!pick[g] || gb < pick_gb[g]) {
            pick[g] = f->name;
            pick_gb[g] = gb;
        }
    }
    json_t *d = json_object();
    for (unsigned g = 0; d && g < SLICES_MAX; g++)
        if (pick[g] && json_object_set_new(d, pick[g], json_integer(wants[g]))) {
            json_decref(d);
            d = NULL;
        }
    return d;
}

/* all-balanced: one entry per distinct layout, naming its products. */
static json_t *all_balanced(void)
{
    static const unsigned wants[SLICES_MAX] = {[1] = BALANCED_SMALLEST, [2] = 1, [3] = 1};
    json_t *layout = json_array();
    json_t *devs[NROWS(products)] = {0};
    bool done[NROWS(products)] = {0};
    bool ok = layout != NULL;
    for (size_t i = 0; ok && i < NROWS(products); i++)
        ok = (devs[i] = balanced_of(&products[i], wants)) != NULL;
    for (size_t i = 0; ok && i < NROWS(products); i++) {
        if (done[i] || !json_object_size(devs[i]))
            continue;
        json_t *filter = json_array();
        for (size_t j = i; filter && j < NROWS(products); j++) {
            if (done[j] || !json_equal(devs[i], devs[j]))
                continue;
            done[j] = true;
            if (filter_add(filter, &products[j]) < 0) {
                json_decref(filter);
                filter = NULL;
            }
        }
        json_t *e = filter ? entry_new(filter, json_incref(devs[i])) : NULL;
        ok = e && !json_array_append_new(layout, e);
    }
    for (size_t i = 0; i < NROWS(products); i++)
        json_decref(devs[i]);
    if (!ok) {
        json_decref(layout);
        return NULL;
    }
    return layout;
}

/* gpuop's earlier all-balanced-a100-40gb: one each, every GPU. */
static json_t *legacy_balanced(void)
{
    static const unsigned wants[SLICES_MAX] = {[1] = 1, [2] = 1, [3] = 1};
    for (size_t i = 0; i < NROWS(products); i++)
        if (products[i].device_id == LEGACY_PRODUCT) {
            json_t *e = entry_new(NULL, balanced_of(&products[i], wants));
            return e ? json_pack("[o]", e) : NULL;
        }
    return NULL;
}

/* Adds layout (steals) as configs[name]; false on failure. */
static bool add_layout(json_t *configs, const char *name, json_t *layout)
{
    return layout && !json_object_set_new(configs, name, layout);
}

json_t *gpuop_migconfig_new(void)
{
    json_t *configs = json_object();
    json_t *doc = json_pack("{s:s, s:o}", "version", "v1", "mig-configs", configs);
    if (!doc)
        return NULL;
    bool ok = add_layout(configs, "all-disabled",
                         json_pack("[{s:s, s:b}]", "devices", "all", "mig-enabled", 0)) &&
              add_layout(configs, "all-enabled",
                         json_pack("[{s:s, s:b, s:{}}]", "devices", "all", "mig-enabled", 1,
                                   "mig-devices"));
    for (size_t i = 0; ok && i < NROWS(products); i++)
        for (const struct gpuop_mig_profile *f = products[i].profiles; ok && f->name; f++) {
            char name[LAYOUT_MAX];
            ok = gpuop_migconfig_layout_name(f->name, name, sizeof(name)) == 0;
            if (ok && !json_object_get(configs, name))
                ok = add_layout(configs, name, all_of(f->name));
        }
    ok = ok && add_layout(configs, "all-balanced", all_balanced()) &&
         add_layout(configs, LEGACY_LAYOUT, legacy_balanced());
    if (!ok) {
        json_decref(doc);
        return NULL;
    }
    return doc;
}

char *gpuop_migconfig_yaml(void)
{
    json_t *doc = gpuop_migconfig_new();
    char *text = doc ? gpuop_yaml_dump(doc) : NULL;
    json_decref(doc);
    return text;
}
