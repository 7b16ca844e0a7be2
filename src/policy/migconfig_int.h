/*
 * migconfig_int.h - gpuop's default MIG layouts (the ConfigMap
 * default-mig-parted-config, in mig-parted's config format), made from a
 * table of facts: the GPU products MIG Manager partitions (PCI device ID
 * and name), the MIG profiles each offers and how many instances of each
 * profile alone fit on one GPU (migconfig.c). Used by render.c; the unit
 * test test_migconfig reads the table.
 *
 * Layer: policy
 */
#ifndef GPUOP_MIGCONFIG_INT_H
#define GPUOP_MIGCONFIG_INT_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#define GPUOP_MIG_VENDOR_NVIDIA 0x10DE

/* A MIG profile as nvidia-smi mig -lgip names it ("1g.10gb",
 * "1g.10gb+me", "1g.24gb-me"), and the most instances of it one GPU holds
 * when it holds only that profile. */
struct gpuop_mig_profile {
    const char *name;
    unsigned count;
};

/* A GPU product: its PCI device ID (vendor GPUOP_MIG_VENDOR_NVIDIA), its
 * name, and its profiles (ending with {NULL, 0}), all static. */
struct gpuop_mig_product {
    uint16_t device_id;
    const char *name;
    const struct gpuop_mig_profile *profiles;
};

/* The products, in the order the layouts follow (static); *n gets their
 * number. */
const struct gpuop_mig_product *gpuop_migconfig_products(size_t *n);

/* The layout name for profile ("1g.10gb+me" -> "all-1g.10gb.me", as
 * mig-parted's own configs name them) into out (cap bytes): 0, or
 * GPUOP_ETOOBIG. */
int gpuop_migconfig_layout_name(const char *profile, char *out, size_t cap);

/* The default config, new, as mig-parted reads it ({"version": "v1",
 * "mig-configs": {...}}): all-disabled, all-enabled; all-<profile> for
 * every profile of any product (one entry for every GPU when every
 * product that has the profile holds as many of it, else one entry per
 * count with the device-filter of the products holding that many);
 * all-balanced (per product: two of its smallest 1g profile, one of its
 * smallest 2g and one of its smallest 3g, each without attributes, those
 * it has; products with the same layout share an entry); and gpuop's
 * earlier all-balanced-a100-40gb. NULL on out-of-memory. */
json_t *gpuop_migconfig_new(void);

/* The same as YAML text (the ConfigMap's config.yaml): new (free()), or
 * NULL on out-of-memory. */
char *gpuop_migconfig_yaml(void);

#endif
