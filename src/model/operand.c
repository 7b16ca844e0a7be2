/*
 * operand.c - the operand table (SPEC section 2). This array is the single
 * place that knows which operands exist and how they depend on each other.
 */
#include <string.h>

#include "gpuop/operand.h"

static const struct gpuop_operand operands[] = {
    /* key, name (label suffix), DaemonSet, prerequisite,
       default image, enabled by default, default ConfigMap, NVIDIA's app label */
    {"driver", "driver", "gpuop-driver", NULL, "nvcr.io/nvidia/driver:570.172.08-ubuntu22.04", true,
     NULL, "nvidia-driver-daemonset"},
    {"toolkit", "container-toolkit", "gpuop-container-toolkit", "driver",
     "nvcr.io/nvidia/k8s/container-toolkit:v1.17.8-ubuntu20.04", true, NULL,
     "nvidia-container-toolkit-daemonset"},
    {"devicePlugin", "device-plugin", "gpuop-device-plugin", "container-toolkit",
     "nvcr.io/nvidia/k8s-device-plugin:v0.17.4", true, NULL, "nvidia-device-plugin-daemonset"},
    {"gfd", "gpu-feature-discovery", "gpuop-gpu-feature-discovery", "device-plugin",
     "nvcr.io/nvidia/k8s-device-plugin:v0.17.4", true, NULL, "gpu-feature-discovery"},
    {"dcgmExporter", "dcgm-exporter", "gpuop-dcgm-exporter", "container-toolkit",
     "nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04", true, NULL,
     "nvidia-dcgm-exporter"},
    {"validator", "operator-validator", "gpuop-operator-validator", "gpu-feature-discovery",
     "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v25.3.2", true, NULL,
     "nvidia-operator-validator"},
    /* off by default: a fresh install without MIG GPUs does not want it */
    {"migManager", "mig-manager", "gpuop-mig-manager", "container-toolkit",
     "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.12.2-ubuntu20.04", false,
     "default-mig-parted-config", "nvidia-mig-manager"},
};

#define NOPERANDS ((int)(sizeof(operands) / sizeof(operands[0])))
_Static_assert(sizeof(operands) / sizeof(operands[0]) <= GPUOP_OPERAND_MAX,
               "raise GPUOP_OPERAND_MAX");

const struct gpuop_operand *gpuop_operand_get(int idx)
{
    return (idx >= 0 && idx < NOPERANDS) ? &operands[idx] : NULL;
}

int gpuop_operand_count(void)
{
    return NOPERANDS;
}

int gpuop_operand_by_key(const char *key)
{
    for (int i = 0; key && i < NOPERANDS; i++)
        if (strcmp(operands[i].key, key) == 0)
            return i;
    return -1;
}

int gpuop_operand_by_name(const char *name)
{
    for (int i = 0; name && i < NOPERANDS; i++)
        if (strcmp(operands[i].name, name) == 0)
            return i;
    return -1;
}

int gpuop_operand_by_ds(const char *ds_name)
{
    for (int i = 0; ds_name && i < NOPERANDS; i++)
        if (strcmp(operands[i].ds_name, ds_name) == 0)
            return i;
    return -1;
}

int gpuop_operand_prereq(int idx)
{
    const struct gpuop_operand *o = gpuop_operand_get(idx);
    return o ? gpuop_operand_by_name(o->prereq) : -1;
}
