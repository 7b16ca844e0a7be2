/*
 * gate.c - the GPU Operator's readiness gates (gate.h) as one table.
 *
 * Read from gpu-operator v26.7.0: the init containers of
 * assets/state-container-toolkit, state-device-plugin,
 * gpu-feature-discovery, state-dcgm(-exporter), state-mig-manager and
 * state-operator-validation (0500_daemonset.yaml and the like), and the
 * status files of cmd/nvidia-validator/main.go (driverStatusFile ...
 * mofedStatusFile). The plugin and CUDA validations need the node to
 * advertise nvidia.com/gpu (Plugin.validateGPUResource), so they wait for
 * the device plugin.
 */
#include <string.h>

#include "gpuop/gate.h"

static const struct gpuop_gate_info gates[GPUOP_GATE_COUNT] = {
    [GPUOP_GATE_DRIVER] = {"driver-validation", "driver-ready", "driver", "the driver"},
    [GPUOP_GATE_TOOLKIT] = {"toolkit-validation", "toolkit-ready", "container-toolkit",
                            "the container toolkit"},
    [GPUOP_GATE_CUDA] = {"cuda-validation", "cuda-ready", "device-plugin",
                         "a CUDA workload (driver, toolkit and device plugin)"},
    [GPUOP_GATE_PLUGIN] = {"plugin-validation", "plugin-ready", "device-plugin",
                           "the device plugin (the node advertising nvidia.com/gpu)"},
    [GPUOP_GATE_MOFED] = {"mofed-validation", "mofed-ready", NULL,
                          "the MOFED driver (NVIDIA Network Operator)"},
};

_Static_assert(GPUOP_GATE_COUNT <= 8, "a gate index is 3 bits in a cached pod (model.h)");

const struct gpuop_gate_info *gpuop_gate_get(int g)
{
    return g > GPUOP_GATE_NONE && g < GPUOP_GATE_COUNT ? &gates[g] : NULL;
}

int gpuop_gate_by_container(const char *name)
{
    for (int g = GPUOP_GATE_NONE + 1; name && g < GPUOP_GATE_COUNT; g++)
        if (strcmp(gates[g].container, name) == 0)
            return g;
    return GPUOP_GATE_NONE;
}
