/*
 * gate.h - the readiness gates inside a node: the init containers in which
 * the NVIDIA GPU Operator's operand pods wait until a prerequisite's
 * validation file appears under /run/nvidia/validations (gpu-operator
 * v26.7.0, assets/state-<operand>/0500_daemonset.yaml: the toolkit waits in
 * driver-validation, the device plugin, GFD, DCGM (exporter) and MIG
 * Manager in toolkit-validation, the validator runs driver-, toolkit-,
 * cuda- and plugin-validation in turn; cmd/nvidia-validator/main.go names
 * the files). A pod held in one is on its way, not failing: the findings
 * say which gate holds it and what it waits for (WaitingForGate).
 *
 * Only the GPU Operator's own gate names are known here; an init container
 * by any other name is not a gate (the pod is starting, PodPending). The
 * table is data in src/model/gate.c; a gate index fits in 3 bits (a cached
 * pod keeps it, model.h).
 */
#ifndef GPUOP_GATE_H
#define GPUOP_GATE_H

enum gpuop_gate {
    GPUOP_GATE_NONE = 0, /* not held in a gate */
    GPUOP_GATE_DRIVER,   /* driver-validation: driver-ready */
    GPUOP_GATE_TOOLKIT,  /* toolkit-validation: toolkit-ready */
    GPUOP_GATE_CUDA,     /* cuda-validation: cuda-ready */
    GPUOP_GATE_PLUGIN,   /* plugin-validation: plugin-ready */
    GPUOP_GATE_MOFED,    /* mofed-validation: mofed-ready */
    GPUOP_GATE_COUNT
};

struct gpuop_gate_info {
    const char *container; /* the init container's name, e.g. "toolkit-validation" */
    const char *file;      /* the file it waits for under /run/nvidia/validations */
    const char *operand;   /* the operand (operand table name) whose working the file
                              says, or NULL when it is none of gpuop's (MOFED: the
                              NVIDIA Network Operator's driver) */
    const char *what;      /* what must work on the node for the file to appear */
};

/* The row of gate g (borrowed, static); NULL for GPUOP_GATE_NONE or out of range. */
const struct gpuop_gate_info *gpuop_gate_get(int g);

/* The gate an init container of this name is; GPUOP_GATE_NONE for any
 * other name (or NULL). */
int gpuop_gate_by_container(const char *name);

#endif
