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

struct gpuop_operand {
    const char *key;     /* spec key, e.g. "devicePlugin" */
    const char *name;    /* label suffix and component name, e.g. "device-plugin" */
    const char *ds_name; /* DaemonSet name, e.g. "gpuop-device-plugin" */
    const char *prereq;  /* name of the direct prerequisite, or NULL */
    const char *image;   /* default image (full reference) */
    bool enabled;        /* default of spec.<key>.enabled */
    const char *config;  /* default ConfigMap of spec.<key>.config.name, or NULL
                            when the operand reads no ConfigMap (then
                            spec.<key>.config is an unknown field) */
    const char *app;     /* the "app" label the NVIDIA GPU Operator gives its
                            pods, which NVIDIA's tools select on (MIG Manager
                            waits for the GPU clients by it) */
};

/* The table, in chain order; borrowed, static. */
const struct gpuop_operand *gpuop_operand_get(int idx);
int gpuop_operand_count(void);

/* Index of an operand by spec key / by name / by DaemonSet name; -1 if none. */
int gpuop_operand_by_key(const char *key);
int gpuop_operand_by_name(const char *name);
int gpuop_operand_by_ds(const char *ds_name);

/* Index of the direct prerequisite of idx, or -1. */
int gpuop_operand_prereq(int idx);

#endif
