#!/usr/bin/env bash
# End-to-end: the driver's options and sidecars (issue 38), on the API
# server (kwok lab):
#   - a policy with kernelModuleType, kernelModuleConfig, rdma, gds and
#     gdrcopy gives the ubuntu24.04 pool's driver DaemonSet the sidecars
#     nvidia-peermem-ctr, nvidia-fs-ctr and nvidia-gdrcopy-ctr (their images
#     with the OS tag), KERNEL_MODULE_TYPE and the module parameter mounts
#     at /drivers; the API server takes the DaemonSet as rendered, and the
#     policy is Reconciled=True;
#   - a merge `kubectl patch` of kernelModuleType stays on the object (the
#     CRD keeps it) and changes the DaemonSet's env and its driver digest;
#     one of gdrcopy.enabled=false takes its sidecar out;
#   - usePrecompiled beside gdrcopy and gds: both sidecars refused (Reconciled=False names
#     the first and counts the other, the log names each), the gdrcopy
#     and gds sidecars not run (NVIDIA refuses them with precompiled drivers).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
on_exit 'gpuop_kill; gpuop_uninstall'

POLICY=driver-options
DS=gpuop-driver-ubuntu24.04
N=$(unique opts)

gpuop_install
gpuop_start --leader-elect=false
lab_node "$N" --label nvidia.com/gpu.present=true --label nvidia.com/gpu.deploy.driver=true

kc apply -f - >/dev/null <<EOF2
apiVersion: gpuop.dev/v1alpha1
kind: GpuPolicy
metadata: {name: $POLICY}
spec:
  driver:
    kernelModuleType: open
    kernelModuleConfig: {name: kernel-module-params}
    rdma: {enabled: true}
  gds: {enabled: true}
  gdrcopy: {enabled: true}
  toolkit: {enabled: false}
  devicePlugin: {enabled: false}
  gfd: {enabled: false}
  dcgmExporter: {enabled: false}
  validator: {enabled: false}
EOF2

# ds_jq FILTER: the driver DaemonSet passes jq -e FILTER.
ds_jq() { kc -n "$GPUOP_NS" get ds "$DS" -o json 2>/dev/null | jq -e "$1" >/dev/null; }
env_of() { kc -n "$GPUOP_NS" get ds "$DS" -o json | jq -r --arg n "$1" '.spec.template.spec.containers[0].env[] | select(.name == $n) | .value'; }
reconciled() { [ "$(gp_cond "$POLICY" Reconciled status)" = "$1" ]; }
export -f ds_jq

log "the driver DaemonSet has the sidecars, env and mounts"
wait_for 60 ds_jq '[.spec.template.spec.containers[].name] == ["nvidia-driver","nvidia-peermem-ctr","nvidia-fs-ctr","nvidia-gdrcopy-ctr"]'
assert_eq open "$(env_of KERNEL_MODULE_TYPE)" "KERNEL_MODULE_TYPE"
assert_eq true "$(env_of OPEN_KERNEL_MODULES_ENABLED)" "OPEN_KERNEL_MODULES_ENABLED"
for e in GPU_DIRECT_RDMA_ENABLED GDS_ENABLED GDRCOPY_ENABLED; do
	assert_eq true "$(env_of "$e")" "$e"
done
ds_jq '.spec.template.spec.containers[2].image == "nvcr.io/nvidia/cloud-native/nvidia-fs:2.29.4-ubuntu24.04"' ||
	fail "nvidia-fs-ctr's image is not nvidia-fs:2.29.4-ubuntu24.04"
ds_jq '.spec.template.spec.containers[3].image == "nvcr.io/nvidia/cloud-native/gdrdrv:v2.6-ubuntu24.04"' ||
	fail "nvidia-gdrcopy-ctr's image is not gdrdrv:v2.6-ubuntu24.04"
ds_jq '.spec.template.spec.containers[1].image == .spec.template.spec.containers[0].image' ||
	fail "nvidia-peermem-ctr does not run the driver's image"
for c in 0 1; do
	ds_jq "[.spec.template.spec.containers[$c].volumeMounts[] | select(.name == \"kernel-module-config\") | .mountPath] | index(\"/drivers/nvidia.conf\") != null" ||
		fail "container $c does not mount /drivers/nvidia.conf"
done
ds_jq '.spec.template.spec.volumes[] | select(.name == "kernel-module-config") | .configMap.name == "kernel-module-params"' ||
	fail "no kernel-module-config volume of the ConfigMap kernel-module-params"
wait_for 30 reconciled True

log "a merge patch of kernelModuleType stays on the object and changes the DaemonSet"
digest0=$(env_of DRIVER_CONFIG_DIGEST)
kc patch gpupolicy "$POLICY" --type=merge -p '{"spec":{"driver":{"kernelModuleType":"proprietary"}}}' >/dev/null
assert_eq proprietary "$(kc get gpupolicy "$POLICY" -o jsonpath='{.spec.driver.kernelModuleType}')" \
	"spec.driver.kernelModuleType on the object"
wait_for 60 bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' -n $GPUOP_NS get ds $DS -o json | jq -r '.spec.template.spec.containers[0].env[] | select(.name == \"KERNEL_MODULE_TYPE\") | .value')\" = proprietary ]"
[ -z "$(env_of OPEN_KERNEL_MODULES_ENABLED)" ] || fail "OPEN_KERNEL_MODULES_ENABLED stays with proprietary"
[ "$(env_of DRIVER_CONFIG_DIGEST)" != "$digest0" ] || fail "the driver's digest did not change with the kernel module type"

log "gdrcopy.enabled=false by a merge patch: its sidecar goes"
kc patch gpupolicy "$POLICY" --type=merge -p '{"spec":{"gdrcopy":{"enabled":false}}}' >/dev/null
wait_for 60 ds_jq '[.spec.template.spec.containers[].name] == ["nvidia-driver","nvidia-peermem-ctr","nvidia-fs-ctr"]'
[ -z "$(env_of GDRCOPY_ENABLED)" ] || fail "GDRCOPY_ENABLED stays without gdrcopy"

log "usePrecompiled beside gdrcopy and gds: both sidecars named, neither run"
kc label node "$N" feature.node.kubernetes.io/kernel-version.full=6.8.0-1 >/dev/null
kc patch gpupolicy "$POLICY" --type=merge -p '{"spec":{"driver":{"usePrecompiled":true},"gdrcopy":{"enabled":true}}}' >/dev/null
# the condition names the first problem and counts the others; the log names each
wait_for 60 bash -c "kubectl --kubeconfig '$KUBECONFIG' get gpupolicy $POLICY -o json | jq -e '.status.conditions[] | select(.type == \"Reconciled\" and .status == \"False\" and (.message | contains(\"precompiled\")) and (.message | contains(\"1 more problem)\")))' >/dev/null"
wait_for 30 grep -qF "invalid spec.gdrcopy.enabled: GDRCopy (the nvidia-gdrcopy sidecar) is not run" "$GPUOP_LOG"
wait_for 30 grep -qF "invalid spec.gds.enabled: GPUDirect Storage (the nvidia-fs sidecar) is not run" "$GPUOP_LOG"
assert_eq true "$(kc get gpupolicy "$POLICY" -o jsonpath='{.spec.driver.usePrecompiled}')" "usePrecompiled on the object"
# precompiled: the node's kernel has its DaemonSet, with neither sidecar
DS=gpuop-driver-6.8.0-1-ubuntu24.04
wait_for 60 ds_jq '[.spec.template.spec.containers[].name] == ["nvidia-driver","nvidia-peermem-ctr"]'

gpuop_uninstall
gpuop_stop
log "ok"
