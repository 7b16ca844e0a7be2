#!/usr/bin/env bash
# End-to-end: a driver pool's usePrecompiled and driverType (issue 38;
# NVIDIA/gpu-operator internal/state/nodepool.go getNodePools per
# NVIDIADriver, api/nvidia/v1alpha1/nvidiadriver_types.go).
#   Ubuntu 24.04 GPU nodes on kernels 6.8.0-1 and 6.8.0-2, some labelled
#   pool=a100 (the pool a100's nodeSelector), the others the default's;
#   a merge patch of the pool's usePrecompiled: true stays on the
#   GpuPolicy (the CRD keeps it) and changes the render: a100's OS pool
#   DaemonSet gives way to gpuop-driver-a100-6.8.0-1-ubuntu24.04 and
#   -6.8.0-2-, images ...:595.91.07-<kernel>-ubuntu24.04, while the
#   default stays compiled (one gpuop-driver-ubuntu24.04 for both kernels
#   and a node without the kernel label);
#   a100's node without the kernel label is KernelLabelMissing;
#   GDRCopy runs beside the default's driver only, named by a condition
#   for a100;
#   the last node of a kernel goes: its DaemonSet goes, the other stays;
#   driverType vgpu is accepted, vgpu-host-manager refused by a condition
#   naming it and the driver held (the DaemonSets kept);
#   the labeller's LISTs of a pool's nodes are answered with their
#   metadata alone (PartialObjectMetadataList: no status), the same names
#   as a whole LIST's.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
on_exit 'gpuop_kill; gpuop_uninstall'

KERNEL=feature.node.kubernetes.io/kernel-version.full
POLICY=pools-precompiled
A1=$(unique pc-a1)
A2=$(unique pc-a2)
AX=$(unique pc-ax)
D1=$(unique pc-d1)
DX=$(unique pc-dx)
AK1=gpuop-driver-a100-6.8.0-1-ubuntu24.04
AK2=gpuop-driver-a100-6.8.0-2-ubuntu24.04
A=gpuop-driver-a100-ubuntu24.04
D=gpuop-driver-ubuntu24.04
IMG=nvcr.io/nvidia/driver

gpuop_install
gpuop_start --leader-elect=false

gpu=(--label nvidia.com/gpu.present=true --label nvidia.com/gpu.deploy.driver=true)
lab_node "$A1" "${gpu[@]}" --label pool=a100 --label "$KERNEL=6.8.0-1"
lab_node "$A2" "${gpu[@]}" --label pool=a100 --label "$KERNEL=6.8.0-2"
lab_node "$AX" "${gpu[@]}" --label pool=a100
lab_node "$D1" "${gpu[@]}" --label "$KERNEL=6.8.0-2"
lab_node "$DX" "${gpu[@]}"

pools() { # the pools list, a100 with $1 as its extra fields
	printf '[{"name":"a100","nodeSelector":{"pool":"a100"}%s}]' "${1:+,$1}"
}
kc apply -f - >/dev/null <<EOF
apiVersion: gpuop.dev/v1alpha1
kind: GpuPolicy
metadata: {name: $POLICY}
spec:
  driver:
    repository: nvcr.io/nvidia
    image: driver
    version: "595.91.07"
    pools: $(pools)
  toolkit: {enabled: false}
  devicePlugin: {enabled: false}
  gfd: {enabled: false}
  dcgmExporter: {enabled: false}
  validator: {enabled: false}
EOF

ds_gone() { ! kc -n "$GPUOP_NS" get ds "$1" >/dev/null 2>&1; }
reason_of() { # NODE: the driver's finding's reason on NODE, or ""
	kc get gpupolicy "$POLICY" -o json | jq -r --arg n "$1" \
		'[.status.nodes[]? | select(.name == $n) | .findings[] | select(.operand == "driver") | .reason] | join(",")'
}
reason_is() { [ "$(reason_of "$1")" = "$2" ]; }
reconciled_msg() {
	kc get gpupolicy "$POLICY" -o jsonpath='{.status.conditions[?(@.type=="Reconciled")].message}'
}
msg_has() { # the Reconciled message has a line with $1 and $2
	local m
	m=$(reconciled_msg | grep -F "$1") || return 1
	grep -qF "$2" <<<"$m"
}
containers() { kc -n "$GPUOP_NS" get ds "$1" -o json | jq '.spec.template.spec.containers | length'; }
containers_are() { [ "$(containers "$1")" = "$2" ]; }

log "compiled: the pool's and the default's OS pool DaemonSets"
wait_for 90 driver_image_is "$A1" "$IMG:595.91.07-ubuntu24.04"
wait_for 60 kc -n "$GPUOP_NS" get ds "$A"
wait_for 60 driver_image_is "$D1" "$IMG:595.91.07-ubuntu24.04"

log "a merge patch of the pool's usePrecompiled: true stays on the object"
kc patch gpupolicy "$POLICY" --type=merge \
	-p "{\"spec\":{\"driver\":{\"pools\":$(pools '"usePrecompiled":true,"driverType":"vgpu"')}}}" >/dev/null
assert_eq "true" "$(kc get gpupolicy "$POLICY" -o jsonpath='{.spec.driver.pools[0].usePrecompiled}')" \
	"the pool's usePrecompiled kept by the API server"
assert_eq "vgpu" "$(kc get gpupolicy "$POLICY" -o jsonpath='{.spec.driver.pools[0].driverType}')" \
	"the pool's driverType kept by the API server"

log "and changes the render: a DaemonSet per kernel for a100 only"
wait_for 90 kc -n "$GPUOP_NS" get ds "$AK1"
wait_for 60 kc -n "$GPUOP_NS" get ds "$AK2"
wait_for 60 ds_gone "$A"
wait_for 120 driver_image_is "$A1" "$IMG:595.91.07-6.8.0-1-ubuntu24.04"
wait_for 120 driver_image_is "$A2" "$IMG:595.91.07-6.8.0-2-ubuntu24.04"
assert_eq "6.8.0-2" "$(kc -n "$GPUOP_NS" get ds "$AK2" -o json | jq -r --arg k "$KERNEL" '.spec.template.spec.nodeSelector[$k]')" \
	"the kernel's DaemonSet selects the kernel label"
assert_eq "a100" "$(kc -n "$GPUOP_NS" get ds "$AK2" -o json | jq -r '.spec.template.spec.nodeSelector["gpuop.dev/driver-pool"]')" \
	"and the pool's"
assert_eq "$IMG:595.91.07-ubuntu24.04" "$(driver_image_on "$D1")" "the default's node on 6.8.0-2 stays compiled"
wait_for 60 driver_image_is "$DX" "$IMG:595.91.07-ubuntu24.04"
kc -n "$GPUOP_NS" get ds "$D" >/dev/null || fail "the default's OS pool DaemonSet went"
n=$(kc -n "$GPUOP_NS" get ds -o json | jq '[.items[] | select(.metadata.name | startswith("gpuop-driver"))] | length')
assert_eq "3" "$n" "driver DaemonSets: a100's two kernels and the default's one"
kc get gpupolicy "$POLICY" -o yaml >"$E2E_TMP/policy.yaml"
"$GPUOP_BIN" render -f "$E2E_TMP/policy.yaml" --os ubuntu24.04/6.8.0-1 >"$E2E_TMP/render.yaml"
grep -qxF "  name: $AK1" "$E2E_TMP/render.yaml" || fail "gpuop render has no $AK1"
grep -qxF "  name: $D" "$E2E_TMP/render.yaml" || fail "gpuop render has no $D"

log "the labeller's LISTs: the nodes' metadata alone, from the real API server"
# gpuop's own requests (its debug log names each page's kind) ...
grep -qF "LIST of driver pool a100's nodes: 3 in a page of PartialObjectMetadataList" "$GPUOP_LOG" ||
	fail "the labeller's LIST was not answered with PartialObjectMetadataList"
# ... and the same request by hand, beside a plain one: no status, the same names
kc config view --raw -o jsonpath='{.users[0].user.client-certificate-data}' | base64 -d >"$E2E_TMP/admin.crt"
kc config view --raw -o jsonpath='{.users[0].user.client-key-data}' | base64 -d >"$E2E_TMP/admin.key"
list() { # ACCEPT: the LIST the labeller makes, its body into $E2E_TMP/list.json
	curl -sf --max-time 30 --cacert "$LAB_CA" --cert "$E2E_TMP/admin.crt" --key "$E2E_TMP/admin.key" \
		-H "Accept: $1" "$LAB_APISERVER/api/v1/nodes?labelSelector=pool%3Da100&limit=150" >"$E2E_TMP/list.json"
}
list 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json'
meta=$(wc -c <"$E2E_TMP/list.json")
assert_eq "PartialObjectMetadataList" "$(jq -r .kind "$E2E_TMP/list.json")" "the kind"
assert_eq "0" "$(jq '[.items[] | select(has("status") or has("spec"))] | length' "$E2E_TMP/list.json")" \
	"no item has a status or a spec"
names=$(jq -c '[.items[].metadata.name] | sort' "$E2E_TMP/list.json")
assert_eq "$(printf '%s\n' "$A1" "$A2" "$AX" | sort | jq -R . | jq -sc .)" "$names" "the pool's nodes"
list application/json
assert_eq "$names" "$(jq -c '[.items[].metadata.name] | sort' "$E2E_TMP/list.json")" "the same as a whole LIST's"
log "a page of the pool's 3 nodes: $meta bytes of metadata, $(wc -c <"$E2E_TMP/list.json") bytes whole"

log "a100's node without the kernel label: KernelLabelMissing; the default's: none"
wait_for 90 reason_is "$AX" KernelLabelMissing
wait_for 60 reason_is "$DX" ""

log "GDRCopy: beside the default's driver, refused for a100 by a condition"
kc patch gpupolicy "$POLICY" --type=merge -p '{"spec":{"gdrcopy":{"enabled":true}}}' >/dev/null
wait_for 60 msg_has spec.gdrcopy.enabled "precompiled driver pools (a100)"
wait_for 60 containers_are "$D" 2
assert_eq "1" "$(containers "$AK1")" "no nvidia-gdrcopy-ctr beside a100's precompiled driver"
kc patch gpupolicy "$POLICY" --type=merge -p '{"spec":{"gdrcopy":null}}' >/dev/null

log "the last node of a kernel goes: its DaemonSet goes, the other stays"
kc delete node "$A2" --wait=true >/dev/null
wait_for 60 ds_gone "$AK2"
kc -n "$GPUOP_NS" get ds "$AK1" >/dev/null || fail "the other kernel's DaemonSet went too"
kc -n "$GPUOP_NS" get ds "$D" >/dev/null || fail "the default's DaemonSet went"

log "driverType vgpu-host-manager: refused by name, the driver held"
kc patch gpupolicy "$POLICY" --type=merge \
	-p "{\"spec\":{\"driver\":{\"pools\":$(pools '"usePrecompiled":true,"driverType":"vgpu-host-manager"')}}}" >/dev/null
wait_for 60 msg_has "spec.driver.pools[0].driverType" "vGPU host manager"
kc -n "$GPUOP_NS" get ds "$AK1" >/dev/null || fail "held: a100's DaemonSet deleted"
assert_eq "$IMG:595.91.07-6.8.0-1-ubuntu24.04" "$(driver_image_on "$A1")" "held: a100's node keeps its driver"

log "compiled again: a100's OS pool DaemonSet back, the kernel's deleted"
kc patch gpupolicy "$POLICY" --type=merge -p "{\"spec\":{\"driver\":{\"pools\":$(pools)}}}" >/dev/null
wait_for 60 kc -n "$GPUOP_NS" get ds "$A"
wait_for 60 ds_gone "$AK1"
wait_for 120 driver_image_is "$AX" "$IMG:595.91.07-ubuntu24.04"

gpuop_uninstall
gpuop_stop
log "ok"
