/*
 * compat.c - the NVIDIA GPU Operator's ClusterPolicy fields that a GpuPolicy
 * does not implement, as data.
 *
 * A GPU Operator user swaps kind and name in their scripts and manifests
 * (`kubectl patch clusterpolicy ... /spec/gds/enabled`) and expects them to
 * work. For every ClusterPolicy field gpuop implements, the GpuPolicy has the
 * same path (policy.c). The fields below it does not implement: the CRD
 * accepts them, so the patch succeeds, and the policy reports each one as a
 * problem naming the field and saying why (Reconciled=False, the rest of the
 * policy applied) instead of the API server's "unknown field" or a silent
 * ignore. A field whose only meaning is "switch a component on" is accepted
 * without a word when it is off, which is what gpuop does anyway.
 *
 * docs/operations.md lists the same table for users; keep them together.
 */
#include <stdbool.h>
#include <string.h>

#include "compat_int.h"

enum when {
    ALWAYS,     /* any value is refused */
    IF_ENABLED, /* refused when the value is true or an object with enabled: true */
};

struct refused {
    const char *path; /* the parent: "spec", "spec.driver"; "spec.*" = every operand */
    const char *key;  /* "*": every key under path */
    enum when when;
    const char *why; /* the problem's message */
};

static const struct refused refused[] = {
    {"spec.operator", "*", ALWAYS,
     "configures the NVIDIA GPU Operator's own pod; gpuop's comes from its Helm chart and "
     "flags (spec.operator.runtimeClass and spec.operator.defaultRuntime are implemented), "
     "ignored"},
    {"spec", "nodeStatusExporter", IF_ENABLED,
     "gpuop runs no node-status-exporter: its findings are in this status and on gpuop's "
     "/metrics, ignored"},
    {"spec", "sandboxWorkloads", IF_ENABLED,
     "sandboxed (VM pass-through) workloads are not run by gpuop, ignored"},
    {"spec", "sandboxDevicePlugin", IF_ENABLED,
     "sandboxed workloads are not run by gpuop, ignored"},
    {"spec", "kataSandboxDevicePlugin", IF_ENABLED,
     "sandboxed workloads are not run by gpuop, ignored"},
    {"spec", "vfioManager", IF_ENABLED, "sandboxed workloads are not run by gpuop, ignored"},
    {"spec", "vgpuManager", IF_ENABLED, "vGPU is not run by gpuop, ignored"},
    {"spec", "vgpuDeviceManager", IF_ENABLED, "vGPU is not run by gpuop, ignored"},
    {"spec", "kataManager", IF_ENABLED, "Kata containers are not run by gpuop, ignored"},
    {"spec", "ccManager", IF_ENABLED, "confidential computing is not run by gpuop, ignored"},
    {"spec", "psp", IF_ENABLED,
     "PodSecurityPolicy was removed in Kubernetes 1.25; nothing to create, ignored"},
    {"spec", "psa", IF_ENABLED,
     "gpuop does not label namespaces for Pod Security Admission: label its namespace "
     "pod-security.kubernetes.io/enforce=privileged yourself, ignored"},
    {"spec.driver", "useOpenKernelModules", IF_ENABLED,
     "deprecated, and no longer honoured by NVIDIA's GPU Operator (v26.7.0) either: set "
     "spec.driver.kernelModuleType: open, ignored"},
    {"spec.driver", "useNvidiaDriverCRD", IF_ENABLED,
     "gpuop reads no NVIDIADriver objects: give each NVIDIADriver's node pool an entry of "
     "spec.driver.pools (its name, version, image ...), ignored"},
    {"spec.driver", "virtualTopology", ALWAYS, "vGPU topology is not set up by gpuop, ignored"},
    {"spec.driver", "startupProbe", ALWAYS,
     "gpuop's driver startup probe waits up to 20 minutes for the module build, ignored"},
    {"spec.driver", "livenessProbe", ALWAYS, "gpuop sets the driver's probes, ignored"},
    {"spec.driver", "readinessProbe", ALWAYS, "gpuop sets the driver's probes, ignored"},
    {"spec.validator", "cuda", ALWAYS,
     "gpuop runs no cuda-validation (its workload pod needs the GPU Operator's ServiceAccount "
     "and DaemonSet names), so its env has no container to go to, ignored"},
    {"spec.gds", "args", ALWAYS,
     "NVIDIA's GPU Operator passes no args to the nvidia-fs sidecar either (its command is the "
     "image's installer), ignored"},
    {"spec.gdrcopy", "args", ALWAYS,
     "NVIDIA's GPU Operator passes no args to the nvidia-gdrcopy sidecar either (its command is "
     "the image's installer), ignored"},
    {"spec.*", "imagePullSecrets", ALWAYS,
     "gpuop has one list for every operand: use spec.daemonsets.imagePullSecrets, ignored"},
};

/* Fields gpuop implements but for one value of them, refused by it. */
struct refused_value {
    const char *path, *key, *value; /* as struct refused's; the refused string */
    const char *why;
};

static const struct refused_value refused_values[] = {
    /* NVIDIADriver's driverType (api/nvidia/v1alpha1/nvidiadriver_types.go):
       gpu and vgpu (the guest driver) render one driver DaemonSet alike
       (internal/state/driver.go: the type only names it); vgpu-host-manager
       renders the vGPU Manager, which spec.vgpuManager is refused for */
    {"spec.driver.pools[]", "driverType", "vgpu-host-manager",
     "the vGPU host manager is not run by gpuop (nor is spec.vgpuManager); the driver is held "
     "as it runs"},
};

static bool enabled(json_t *v)
{
    return json_is_true(v) || json_is_true(json_object_get(v, "enabled"));
}

static bool path_matches(const char *pattern, const char *path)
{
    if (!strcmp(pattern, "spec.*"))
        return !strncmp(path, "spec.", 5) && !strchr(path + 5, '.');
    return !strcmp(pattern, path);
}

const char *gpuop_compat_refused(const char *path, const char *key, json_t *v)
{
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        const struct refused *r = &refused[i];
        if ((strcmp(r->key, "*") && strcmp(r->key, key)) || !path_matches(r->path, path))
            continue;
        if (r->when == IF_ENABLED && !enabled(v))
            return GPUOP_COMPAT_ACCEPTED;
        return r->why;
    }
    for (size_t i = 0; i < sizeof(refused_values) / sizeof(refused_values[0]); i++) {
        const struct refused_value *r = &refused_values[i];
        if (!strcmp(r->path, path) && !strcmp(r->key, key) && json_is_string(v) &&
            !strcmp(json_string_value(v), r->value))
            return r->why;
    }
    return NULL;
}
