/*
 * operand.h - the operand table: the NVIDIA GPU operands gpuop manages,
 * their spec keys, node labels, DaemonSet names, direct prerequisites and
 * defaults. The table itself is data in src/model/operand.c; adding an
 * operand is one row there (plus, if it needs one, a pod template in
 * src/policy/render.c and its block in crd/gpupolicy.yaml).
 */
#ifndef GPUOP_OPERAND_H
#define GPUOP_OPERAND_H

#include <stdbool.h>
#include <stddef.h>

/* Upper bound for per-operand arrays; the table holds at most this many. */
#define GPUOP_OPERAND_MAX 16

#define GPUOP_LABEL_PREFIX      "nvidia.com/gpu.deploy."
#define GPUOP_LABEL_OPERANDS    "nvidia.com/gpu.deploy.operands"
#define GPUOP_LABEL_GPU_PRESENT "nvidia.com/gpu.present"
#define GPUOP_LABEL_NFD_NVIDIA  "feature.node.kubernetes.io/pci-10de.present"
/* GFD's label: "true" where the node's sharing config is an MPS one and
 * its GPUs can do MPS (k8s-device-plugin v0.20.0 internal/lm/nvml.go
 * newSharingLabeler); the MPS control daemon runs only there. */
#define GPUOP_LABEL_MPS_CAPABLE "nvidia.com/mps.capable"

struct gpuop_operand {
    const char *key;     /* spec key, e.g. "devicePlugin" */
    const char *name;    /* label suffix and component name, e.g. "device-plugin" */
    const char *ds_name; /* DaemonSet name, e.g. "gpuop-device-plugin" */
    const char *prereq;  /* name of the direct prerequisite, or NULL */
    const char *via;     /* an operand, off by default, that when the policy enables
                            it comes between this one and prereq (dcgm for
                            dcgm-exporter, which then reads that host engine and
                            needs it on its node), or NULL: gpuop_policy_prereq */
    /* default image, the GPU Operator's three keys: joined
       repository/image:version (or @version for a "sha256:" digest) */
    const char *repository; /* e.g. "nvcr.io/nvidia" */
    const char *image;      /* e.g. "driver" */
    const char *version;    /* e.g. "595.91.07" */
    bool enabled;           /* default of spec.<key>.enabled */
    const char *config;     /* default ConfigMap of spec.<key>.config.name, or NULL
                               when the operand reads no ConfigMap (then
                               spec.<key>.config is an unknown field) */
    const char *app;        /* the "app" label the NVIDIA GPU Operator gives its
                               pods, which NVIDIA's tools select on (MIG Manager
                               waits for the GPU clients by it) */
    bool per_os;            /* the image tag gets the node's OS appended
                               ("595.91.07-ubuntu24.04"): one DaemonSet per OS
                               pool, named "<ds_name>-<OS tag>" (SPEC 4b) */
};

/* The table, in chain order; borrowed, static. */
const struct gpuop_operand *gpuop_operand_get(int idx);
int gpuop_operand_count(void);

/* Index of an operand by spec key / by name / by DaemonSet name; -1 if
 * none. A per_os operand's DaemonSets "<ds_name>-<OS tag>" are its own. */
int gpuop_operand_by_key(const char *key);
int gpuop_operand_by_name(const char *name);
int gpuop_operand_by_ds(const char *ds_name);

/* The default image reference of op, joined as the GPU Operator joins
 * repository/image/version (without an OS tag); snprintf's return. */
int gpuop_operand_image_ref(const struct gpuop_operand *op, char *buf, size_t size);

/* An operand with no spec block and no deploy label of its own (the
 * table's side rows, operand.c): follows names the operand whose spec it
 * takes (enabled, image, pull policy, resources: spec.<that key>; its own
 * key is a member there, spec.devicePlugin.mps) and whose deploy label it
 * runs under; also a node label that must be "true" too (its
 * nodeSelector's second key); before the operand that, on a node where
 * also is "true", waits for it (the chain there: prereq -> it -> before). */
struct gpuop_operand_follow {
    const char *name; /* the operand's name */
    const char *follows;
    const char *also;
    const char *before;
};

/* idx's follow row (static), or NULL: it has a spec and label of its own. */
const struct gpuop_operand_follow *gpuop_operand_follow(int idx);

/* The operand whose spec and deploy label idx follows, or -1. */
int gpuop_operand_follows(int idx);

/* Index of the direct prerequisite of idx by the table alone (its via
 * operand not counted: gpuop_policy_prereq counts it), or -1. */
int gpuop_operand_prereq(int idx);

#endif
