/*
 * names.h - the well-known names gpuop writes and selects on: its API
 * group and kind, the app.kubernetes.io labels every operand object
 * carries, its server-side-apply field manager, and the operands'
 * ServiceAccount. Data of the model layer, with no code: the caches select
 * on these names, the renderer writes them, the controller applies with
 * them, so none of those has to include another's header for a string.
 *
 * Layer: model
 */
#ifndef GPUOP_NAMES_H
#define GPUOP_NAMES_H

#define GPUOP_API_GROUP   "gpuop.dev"
#define GPUOP_API_VERSION "gpuop.dev/v1alpha1"
#define GPUOP_KIND        "GpuPolicy"
#define GPUOP_PLURAL      "gpupolicies"

/* The finalizer gpuop keeps on the active GpuPolicy while its DRA
 * driver's kubelet plugin runs (issue 42; src/controller/finalizer.c): a
 * policy deleted then stays until no pod on the plugin's nodes holds a
 * resource claim and gpuop has deleted the plugin's DaemonSet, so the
 * garbage collector cannot take the plugin before the claims are
 * unprepared (NVIDIA's gpucluster.nvidia.com/dra-resourceclaim). */
#define GPUOP_FINALIZER_DRA "gpuop.dev/dra-driver"

/* Labels every operand DaemonSet and pod carries. The selector uses only
 * GPUOP_LABEL_NAME and GPUOP_LABEL_MANAGED_BY (selectors are immutable, so
 * they hold nothing that depends on the policy); the controller watches pods
 * by GPUOP_LABEL_MANAGED_BY=GPUOP_MANAGER and maps them to operands by
 * GPUOP_LABEL_COMPONENT (the operand name). */
#define GPUOP_LABEL_NAME       "app.kubernetes.io/name"
#define GPUOP_LABEL_INSTANCE   "app.kubernetes.io/instance"
#define GPUOP_LABEL_COMPONENT  "app.kubernetes.io/component"
#define GPUOP_LABEL_MANAGED_BY "app.kubernetes.io/managed-by"
#define GPUOP_LABEL_PART_OF    "app.kubernetes.io/part-of"
#define GPUOP_MANAGER          "gpuop"
/* NVIDIA's own pod label (operand table column "app"), beside the above. */
#define GPUOP_LABEL_APP "app"
/* The OS pool of a per-OS DaemonSet and its pods (SPEC 4b): in the
 * selector, so the pools' DaemonSets never select each other's pods. */
#define GPUOP_LABEL_OS_POOL "gpuop.dev/os-pool"
/* With precompiled drivers, a per-kernel pool's kernel (its node label
 * kernel-version.full's value), in the selector beside the OS pool; and
 * NVIDIA's label on its precompiled DaemonSets and their pods
 * (controllers/state_manager.go precompiledIdentificationLabelKey). */
#define GPUOP_LABEL_KERNEL_POOL "gpuop.dev/kernel-pool"
#define GPUOP_LABEL_PRECOMPILED "nvidia.com/precompiled"
/* Driver pools (spec.driver.pools): the node label that puts a GPU node in
 * a pool (its value the pool's name; gpuop's counterpart of NVIDIA's
 * nvidia.com/gpu-operator.driver.owner, internal/consts/consts.go), and
 * the same label on a pool's DaemonSets, their pods and their selector. */
#define GPUOP_LABEL_DRIVER_POOL "gpuop.dev/driver-pool"
/* The annotation in which gpuop records on a GPU node that two or more
 * driver pools select it ("a100,h100", in the policy's order): the node
 * keeps its pool label (fails closed, as NVIDIA's AssignOwners does) and
 * the analysis names both (DriverPoolConflict). Absent otherwise. */
#define GPUOP_ANNOTATION_DRIVER_POOL_CONFLICT "gpuop.dev/driver-pool-conflict"
/* The annotation in which gpuop records on a GPU node that runs a driver
 * the pool it is to move to (a pool's name, or GPUOP_DRIVER_POOL_DEFAULT):
 * its pool label changes only through the driver upgrade's steps (cordon,
 * jobs, eviction, then the label), never under a job (docs/upgrade.md).
 * Absent when the node is where its pools' nodeSelectors put it. */
#define GPUOP_ANNOTATION_DRIVER_POOL_WANTED "gpuop.dev/driver-pool-wanted"
/* The annotation in which gpuop records on a node the value it wrote in
 * GPUOP_LABEL_DRIVER_POOL (the labeller, and the upgrade's move): a label
 * of a pool that no longer exists is removed only when it is the value
 * gpuop wrote, never a person's (issue 38). Removed with the label. */
#define GPUOP_ANNOTATION_DRIVER_POOL_SET "gpuop.dev/driver-pool-set"
/* The name of the default driver pool (spec.driver's own, no pool label). */
#define GPUOP_DRIVER_POOL_DEFAULT "default"

/* onFailure rollback: the node label naming the pool DaemonSet whose
 * previous template runs on the node (its DaemonSet "<value>-rollback");
 * the driver's own DaemonSets keep off a node carrying it (node affinity
 * DoesNotExist, render.c). */
#define GPUOP_LABEL_DRIVER_ROLLBACK "gpuop.dev/driver-rollback"
/* The label's value while the previous driver is taken off the node again:
 * neither the rollback DaemonSet nor the pool's selects the node, so the
 * old pod leaves before the new one comes (docs/upgrade.md). */
#define GPUOP_DRIVER_ROLLBACK_ENDING "ending"

/* The annotation in which gpuop records on a node the labels it set there
 * (SPEC 4a): a JSON object, label -> {"value": "true", "at": RFC 3339}. */
#define GPUOP_ANNOTATION_NODE_LABELS "gpuop.dev/node-labels"

/* Service account every operand pod runs as (created by deploy/). */
#define GPUOP_OPERAND_SA "gpuop-operand"
/* The one operand that uses the API (MIG Manager relabels its node) runs
 * as this one, with a token (deploy/10-rbac.yaml). */
#define GPUOP_MIG_MANAGER_SA "gpuop-mig-manager"
/* The validator and the toolkit run nvidia-validator, which asks the API
 * whether an operator manages the driver (and the validator reads its
 * node): each its own account, with a token (deploy/10-rbac.yaml). */
#define GPUOP_VALIDATOR_SA "gpuop-operator-validator"
#define GPUOP_TOOLKIT_SA   "gpuop-container-toolkit"
/* The device plugin and GFD with spec.devicePlugin.config: their
 * config-manager containers read their node's label
 * nvidia.com/device-plugin.config: each its own account, with a token and
 * nodes get/list/watch (deploy/10-rbac.yaml). */
#define GPUOP_DEVICE_PLUGIN_SA "gpuop-device-plugin"
/* NVIDIA's DRA driver's kubelet plugin (spec.draDriver) publishes its
 * node's ResourceSlices and reads claims: its own account, with a token
 * and the rights of NVIDIA's chart (deploy/10-rbac.yaml), and the
 * ValidatingAdmissionPolicy that keeps its slice writes to its own node. */
#define GPUOP_DRA_DRIVER_SA "gpuop-dra-driver"
#define GPUOP_GFD_SA        "gpuop-gpu-feature-discovery"
/* The driver pods: their k8s-driver-manager init container pauses the
 * operands, evicts GPU pods and relabels its node (deploy/10-rbac.yaml). */
#define GPUOP_DRIVER_SA "gpuop-driver"
/* The driver pods' init container, by NVIDIA's name (gpu-operator v26.7.0
 * assets/state-driver/0500_daemonset.yaml). */
#define GPUOP_DRIVER_MANAGER_CTR "k8s-driver-manager"
/* The node annotation that tells the driver manager an upgrade controller
 * owns the node's evictions and drain (k8s-driver-manager v0.12.0
 * cmd/driver-manager/main.go fetchAutoUpgradeAnnotation): gpuop sets it
 * on a node only while it upgrades that node (docs/upgrade.md). */
#define GPUOP_ANNOTATION_DRIVER_UPGRADE_ENABLED "nvidia.com/gpu-driver-upgrade-enabled"

/* The RuntimeClass gpuop applies for the containerd handler the toolkit
 * registers; the GPU operands' pods run in it (CDI mode). */
#define GPUOP_RUNTIME_CLASS "nvidia"
/* The two RuntimeClasses the GPU Operator applies beside it in CDI mode,
 * for the toolkit's nvidia-cdi and nvidia-legacy handlers. */
#define GPUOP_RUNTIME_CLASS_CDI    "nvidia-cdi"
#define GPUOP_RUNTIME_CLASS_LEGACY "nvidia-legacy"
/* The Service gpuop applies in front of the DCGM exporter's pods, and the
 * ServiceMonitor (spec.dcgmExporter.serviceMonitor) that selects it. */
#define GPUOP_DCGM_SERVICE        "gpuop-dcgm-exporter"
#define GPUOP_DCGM_SERVICEMONITOR "gpuop-dcgm-exporter"
/* The standalone DCGM host engine (spec.dcgm): its Service, named as its
 * DaemonSet, with internalTrafficPolicy Local, so an exporter that reads
 * GPUOP_DCGM_HOSTENGINE:GPUOP_DCGM_PORT reaches the host engine on its own
 * node (the GPU Operator's nvidia-dcgm:5555, v26.7.0). */
#define GPUOP_DCGM_HOSTENGINE "gpuop-dcgm"
#define GPUOP_DCGM_PORT       5555

#endif
