#!/usr/bin/env bash
# End-to-end: precompiled drivers, one DaemonSet per OS pool and kernel
# (issue 38; NVIDIA/gpu-operator internal/state/nodepool.go getNodePools).
#   a merge patch of spec.driver.usePrecompiled: true stays on the
#   GpuPolicy (the CRD keeps it) and changes the render: the OS pool's
#   DaemonSet gives way to one per kernel;
#   two Ubuntu 24.04 nodes on kernels 6.8.0-1 and 6.8.0-2
#   (feature.node.kubernetes.io/kernel-version.full) get
#   ...:595.91.07-6.8.0-1-ubuntu24.04 and ...-6.8.0-2-ubuntu24.04 from
#   gpuop-driver-6.8.0-1-ubuntu24.04 and gpuop-driver-6.8.0-2-ubuntu24.04;
#   a GPU node without the kernel label is the finding KernelLabelMissing
#   naming the label;
#   the last node of a kernel goes: its DaemonSet goes, the other stays;
#   GDRCopy with precompiled drivers is refused by a condition naming
#   spec.gdrcopy.enabled, as NVIDIA refuses it.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
on_exit 'gpuop_kill; gpuop_uninstall'

KERNEL=feature.node.kubernetes.io/kernel-version.full
POLICY=precompiled
K1=$(unique kernel-one)
K2=$(unique kernel-two)
X=$(unique kernel-none)
DS1=gpuop-driver-6.8.0-1-ubuntu24.04
DS2=gpuop-driver-6.8.0-2-ubuntu24.04

gpuop_install
gpuop_start --leader-elect=false

# test/lab/node gives Ubuntu 24.04's OS labels; the kernel is ours.
gpu=(--label nvidia.com/gpu.present=true --label nvidia.com/gpu.deploy.driver=true)
lab_node "$K1" "${gpu[@]}" --label "$KERNEL=6.8.0-1"
lab_node "$K2" "${gpu[@]}" --label "$KERNEL=6.8.0-2"
lab_node "$X" "${gpu[@]}"

kc apply -f - >/dev/null <<EOF
apiVersion: gpuop.dev/v1alpha1
kind: GpuPolicy
metadata: {name: $POLICY}
spec:
  driver: {repository: nvcr.io/nvidia, image: driver, version: "595.91.07"}
  toolkit: {enabled: false}
  devicePlugin: {enabled: false}
  gfd: {enabled: false}
  dcgmExporter: {enabled: false}
  validator: {enabled: false}
EOF

status_has() {
	kc get gpupolicy "$POLICY" -o json |
		jq -e --arg n "$1" --arg o "$2" --arg r "$3" \
			'[.status.nodes[]? | select(.name == $n) | .findings[] | select(.operand == $o and .reason == $r)] | length > 0' >/dev/null
}
ds_gone() { ! kc -n "$GPUOP_NS" get ds "$1" >/dev/null 2>&1; }
reconciled() {
	[ "$(kc get gpupolicy "$POLICY" -o jsonpath='{.status.conditions[?(@.type=="Reconciled")].status}')" = "$1" ]
}

log "compiled: the one OS pool's DaemonSet, every node in it"
wait_for 60 kc -n "$GPUOP_NS" get ds gpuop-driver-ubuntu24.04
wait_for 60 driver_image_is "$K1" nvcr.io/nvidia/driver:595.91.07-ubuntu24.04
wait_for 60 driver_image_is "$X" nvcr.io/nvidia/driver:595.91.07-ubuntu24.04

log "a merge patch of spec.driver.usePrecompiled: true stays on the object"
kc patch gpupolicy "$POLICY" --type=merge -p '{"spec":{"driver":{"usePrecompiled":true}}}' >/dev/null
assert_eq "true" "$(kc get gpupolicy "$POLICY" -o jsonpath='{.spec.driver.usePrecompiled}')" \
	"usePrecompiled kept by the API server"

log "and changes the render: one DaemonSet per kernel, the OS pool's deleted"
wait_for 60 kc -n "$GPUOP_NS" get ds "$DS1"
wait_for 60 kc -n "$GPUOP_NS" get ds "$DS2"
wait_for 60 ds_gone gpuop-driver-ubuntu24.04
sel=$(kc -n "$GPUOP_NS" get ds "$DS2" -o json | jq -c '.spec.template.spec.nodeSelector')
assert_eq "6.8.0-2" "$(jq -r --arg k "$KERNEL" '.[$k]' <<<"$sel")" "the kernel's DaemonSet selects the kernel label"
assert_eq "true" "$(kc -n "$GPUOP_NS" get ds "$DS2" -o json | jq -r '.metadata.labels["nvidia.com/precompiled"]')" \
	"NVIDIA's precompiled label"
wait_for 90 driver_image_is "$K1" nvcr.io/nvidia/driver:595.91.07-6.8.0-1-ubuntu24.04
wait_for 90 driver_image_is "$K2" nvcr.io/nvidia/driver:595.91.07-6.8.0-2-ubuntu24.04
wait_for 60 reconciled True

log "a GPU node without the kernel label is a finding naming it"
wait_for 90 status_has "$X" driver KernelLabelMissing
msg=$(kc get gpupolicy "$POLICY" -o json | jq -r --arg n "$X" '.status.nodes[] | select(.name == $n) | .findings[] | select(.operand == "driver") | .message')
grep -qF "$KERNEL" <<<"$msg" || fail "message does not name the kernel label: $msg"
wait_for 60 bash -c "[ -z \"\$(kubectl --kubeconfig '$KUBECONFIG' -n '$GPUOP_NS' get pods -l app.kubernetes.io/component=driver -o json | jq -r --arg n '$X' '.items[] | select(.spec.nodeName == \$n) | .metadata.name')\" ]"
assert_eq '["gpuop-driver-6.8.0-1-ubuntu24.04","gpuop-driver-6.8.0-2-ubuntu24.04"]' \
	"$(kc get gpupolicy "$POLICY" -o json | jq -c '[.status.operands[] | select(.name == "driver")][0].daemonSets')" \
	"status: the kernels' DaemonSets are the one driver operand"

log "the last node of a kernel goes: its DaemonSet goes, the other stays"
kc delete node "$K2" --wait=true >/dev/null
wait_for 60 ds_gone "$DS2"
kc -n "$GPUOP_NS" get ds "$DS1" >/dev/null || fail "the other kernel's DaemonSet went too"
grep -qF "daemonset/$GPUOP_NS/$DS2" "$GPUOP_LOG" || fail "the log does not name the deleted DaemonSet"

log "GDRCopy with precompiled drivers: refused by a condition naming the field"
kc patch gpupolicy "$POLICY" --type=merge -p '{"spec":{"gdrcopy":{"enabled":true}}}' >/dev/null
wait_for 60 bash -c "kubectl --kubeconfig '$KUBECONFIG' get gpupolicy $POLICY -o jsonpath='{.status.conditions[?(@.type==\"Reconciled\")].message}' | grep -F spec.gdrcopy.enabled | grep -F precompiled >/dev/null"
assert_eq "1" "$(kc -n "$GPUOP_NS" get ds "$DS1" -o json | jq '.spec.template.spec.containers | length')" \
	"no nvidia-gdrcopy-ctr beside the precompiled driver"

log "compiled again: the OS pool's DaemonSet back, the kernels' deleted"
kc patch gpupolicy "$POLICY" --type=merge -p '{"spec":{"gdrcopy":null,"driver":{"usePrecompiled":false}}}' >/dev/null
wait_for 60 kc -n "$GPUOP_NS" get ds gpuop-driver-ubuntu24.04
wait_for 60 ds_gone "$DS1"
wait_for 90 driver_image_is "$X" nvcr.io/nvidia/driver:595.91.07-ubuntu24.04

gpuop_uninstall
gpuop_stop
log "ok"
