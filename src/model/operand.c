/*
 * operand.c - the operand table (SPEC section 2). This array is the single
 * place that knows which operands exist and how they depend on each other.
 */
#include <stdio.h>
#include <string.h>

#include "gpuop/operand.h"

/* Default images: the NVIDIA GPU Operator v26.7.0's, read from
 * deployments/gpu-operator/values.yaml at tag v26.7.0 (NVIDIA/gpu-operator):
 * repository, image and version per operand as there. The driver's version
 * gets the node's OS tag appended (per_os, SPEC 4b); the validator is the
 * gpu-operator image at the chart's appVersion, which the release sets to
 * the tag (values.yaml: "If version is not specified, then default is to
 * use chart.AppVersion"). */
static const struct gpuop_operand operands[] = {
    /* key, name (label suffix), DaemonSet, prerequisite, via,
       repository, image, version, enabled by default, default ConfigMap,
       NVIDIA's app label, driver tag per OS */
    {"driver", "driver", "gpuop-driver", NULL, NULL, "nvcr.io/nvidia", "driver", "595.91.07", true,
     NULL, "nvidia-driver-daemonset", true},
    {"toolkit", "container-toolkit", "gpuop-container-toolkit", "driver", NULL,
     "nvcr.io/nvidia/k8s", "container-toolkit", "v1.20.0", true, NULL,
     "nvidia-container-toolkit-daemonset", false},
    /* reads no ConfigMap unless one is named (""): then its named sharing
       configs, through config-manager, and so does GFD (render.c) */
    {"devicePlugin", "device-plugin", "gpuop-device-plugin", "container-toolkit", NULL,
     "nvcr.io/nvidia", "k8s-device-plugin", "v0.20.0", true, "", "nvidia-device-plugin-daemonset",
     false},
    {"gfd", "gpu-feature-discovery", "gpuop-gpu-feature-discovery", "device-plugin", NULL,
     "nvcr.io/nvidia", "k8s-device-plugin", "v0.20.0", true, NULL, "gpu-feature-discovery", false},
    /* the standalone DCGM host engine (dcgm.enabled in the GPU Operator's
       values, off by default: the exporter embeds one); its init container
       waits for toolkit-ready (assets/state-dcgm/0400_dcgm.yml) */
    {"dcgm", "dcgm", "gpuop-dcgm", "container-toolkit", NULL, "nvcr.io/nvidia/cloud-native", "dcgm",
     "4.6.0-1-ubuntu24.04", false, NULL, "nvidia-dcgm", false},
    /* reads no ConfigMap unless one is named (""), then its metrics CSV */
    {"dcgmExporter", "dcgm-exporter", "gpuop-dcgm-exporter", "container-toolkit", "dcgm",
     "nvcr.io/nvidia/k8s", "dcgm-exporter", "4.6.0-4.8.3-distroless", true, "",
     "nvidia-dcgm-exporter", false},
    {"validator", "operator-validator", "gpuop-operator-validator", "gpu-feature-discovery", NULL,
     "nvcr.io/nvidia", "gpu-operator", "v26.7.0", true, NULL, "nvidia-operator-validator", false},
    /* off by default: a fresh install without MIG GPUs does not want it */
    {"migManager", "mig-manager", "gpuop-mig-manager", "container-toolkit", NULL,
     "nvcr.io/nvidia/cloud-native", "k8s-mig-manager", "v0.15.0", false,
     "default-mig-parted-config", "nvidia-mig-manager", false},
    /* NVIDIA's DRA driver's kubelet plugin, off by default; it writes its
       own CDI specs: no toolkit (GPUCluster, manifests/state-dra-driver) */
    {"draDriver", "dra-driver", "gpuop-dra-driver", "driver", NULL, "nvcr.io/nvidia",
     "dra-driver-nvidia-gpu", "v0.5.0", false, NULL, "nvidia-dra-driver-kubelet-plugin", false},
    /* the MPS control daemon (assets/state-mps-control-daemon/, enabled
       with the device plugin, its image: TransformMPSControlDaemon) where
       GFD says the node's config is MPS; the device plugin waits for it */
    {"mps", "mps-control-daemon", "gpuop-mps-control-daemon", "container-toolkit", NULL,
     "nvcr.io/nvidia", "k8s-device-plugin", "v0.20.0", true, NULL,
     "nvidia-device-plugin-mps-control-daemon", false},
};

/* The operands with no spec block or deploy label of their own (operand.h):
 * name, follows, also, before. */
static const struct gpuop_operand_follow follow_rows[] = {
    /* GFD's nvidia.com/mps.capable=true: the node's config is MPS; the
       device plugin there waits for the daemon ("error waiting for MPS
       daemon", k8s-device-plugin v0.20.0 internal/plugin/server.go) */
    {"mps-control-daemon", "device-plugin", GPUOP_LABEL_MPS_CAPABLE, "device-plugin"},
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
    for (int i = 0; ds_name && i < NOPERANDS; i++) {
        size_t n = strlen(operands[i].ds_name);
        if (strcmp(operands[i].ds_name, ds_name) == 0)
            return i;
        /* one DaemonSet per OS pool: "<ds_name>-<OS tag>" (SPEC 4b) */
        if (operands[i].per_os && strncmp(operands[i].ds_name, ds_name, n) == 0 &&
            ds_name[n] == '-' && ds_name[n + 1])
            return i;
    }
    return -1;
}

int gpuop_operand_image_ref(const struct gpuop_operand *op, char *buf, size_t size)
{
    return snprintf(buf, size, "%s/%s%s%s", op->repository, op->image,
                    strncmp(op->version, "sha256:", 7) == 0 ? "@" : ":", op->version);
}

const struct gpuop_operand_follow *gpuop_operand_follow(int idx)
{
    const struct gpuop_operand *o = gpuop_operand_get(idx);
    for (size_t i = 0; o && i < sizeof(follow_rows) / sizeof(follow_rows[0]); i++)
        if (strcmp(follow_rows[i].name, o->name) == 0)
            return &follow_rows[i];
    return NULL;
}

int gpuop_operand_follows(int idx)
{
    const struct gpuop_operand_follow *f = gpuop_operand_follow(idx);
    return f ? gpuop_operand_by_name(f->follows) : -1;
}

int gpuop_operand_prereq(int idx)
{
    const struct gpuop_operand *o = gpuop_operand_get(idx);
    return o ? gpuop_operand_by_name(o->prereq) : -1;
}
