# shellcheck shell=bash
# test/e2e/74_dra_lib.bash — shared by the DRA tests on kwok nodes
# (74_dra_claims.sh, 74_dra_delete.sh, 74_dra_overadmit.sh,
# 74_dra_slices.sh; issue 42, docs/operations.md "DRA driver"); sourced
# after lib.sh and gpuop.sh. (Not *.sh: CTest's e2e glob would make it a
# test.)
#
#   dra_require RESOURCE       fail unless the lab serves resource.k8s.io's RESOURCE
#   dra_policy NAME GRACE [FINALIZERS]
#                              applies GpuPolicy NAME: the driver and the DRA
#                              driver on, every other operand off,
#                              advertiseGracePeriodSeconds GRACE, FINALIZERS
#                              (a YAML flow list) in its metadata
#   dra_slice NAME NODE DEVICES [DRIVER]
#                              applies a ResourceSlice as the kubelet plugin
#                              publishes it: DEVICES GPUs of DRIVER
#                              (gpu.nvidia.com) in NODE's pool; remembered
#                              for dra_cleanup
#   dra_claim_pod NS POD NODE  a ResourceClaimTemplate "gpu" (DeviceClass
#                              gpu.nvidia.com) and pod POD on NODE claiming it
#   dra_allocated NS NODE POD  POD's claim is allocated on NODE and reserved by it
#   running_on OPERAND NODE    a Ready, not deleting pod of OPERAND on NODE
#   dra_cleanup                the slices made and the DRA DeviceClasses deleted
#                              (for on_exit, after gpuop_uninstall)

DRA_SLICES=()

dra_require() {
	grep -qx "$1.resource.k8s.io" <<<"$(kc api-resources --api-group=resource.k8s.io -o name)" ||
		fail "the lab's API server does not serve resource.k8s.io $1"
}

dra_policy() {
	local meta="{name: $1}"
	[ -z "${3:-}" ] || meta="{name: $1, finalizers: $3}"
	kc apply -f - >/dev/null <<YAML
apiVersion: gpuop.dev/v1alpha1
kind: GpuPolicy
metadata: $meta
spec:
  driver: {enabled: true, image: "nvcr.io/nvidia/driver:595.91.07-ubuntu24.04"}
  toolkit: {enabled: false}
  devicePlugin: {enabled: false}
  gfd: {enabled: false}
  dcgmExporter: {enabled: false}
  validator: {enabled: false}
  draDriver: {enabled: true}
  findings: {advertiseGracePeriodSeconds: $2}
YAML
}

dra_slice() {
	local i devices="  devices:"$'\n'
	for ((i = 0; i < $3; i++)); do
		devices+="  - {name: gpu-$i, attributes: {type: {string: gpu}, productName: {string: NVIDIA A100-SXM4-40GB}, uuid: {string: GPU-$i}}, capacity: {memory: {value: 40Gi}}}"$'\n'
	done
	[ "$3" -gt 0 ] || devices="  devices: []"$'\n'
	DRA_SLICES+=("$1")
	printf 'apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: %s}\nspec:\n  driver: %s\n  nodeName: %s\n  pool: {name: %s, generation: 1, resourceSliceCount: 1}\n%s' \
		"$1" "${4:-gpu.nvidia.com}" "$2" "$2" "$devices" | kc apply -f - >/dev/null
}

dra_claim_pod() {
	kc -n "$1" apply -f - >/dev/null <<EOF
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: gpu}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.nvidia.com}
---
apiVersion: v1
kind: Pod
metadata: {name: $2}
spec:
  nodeSelector: {kubernetes.io/hostname: $3}
  terminationGracePeriodSeconds: 1
  resourceClaims:
  - {name: gpu, resourceClaimTemplateName: gpu}
  containers:
  - name: train
    image: registry.example/train:1
    resources: {claims: [{name: gpu}]}
EOF
}

dra_allocated() {
	kc -n "$1" get resourceclaims -o json |
		jq -e --arg n "$2" --arg p "$3" '[.items[] | select(.status.allocation.devices.results[0].pool == $n) | select(.status.reservedFor[0].name == $p)] | length == 1' >/dev/null
}

running_on() {
	kc -n "$GPUOP_NS" get pods -l "app.kubernetes.io/component=$1" --field-selector "spec.nodeName=$2" -o json |
		jq -e '[.items[] | select(.metadata.deletionTimestamp == null) | select(any(.status.conditions[]?; .type == "Ready" and .status == "True"))] | length == 1' >/dev/null
}

dra_cleanup() {
	local s
	for s in "${DRA_SLICES[@]}"; do kc delete resourceslice "$s" --ignore-not-found >/dev/null 2>&1 || true; done
	kc delete deviceclass gpu.nvidia.com mig.nvidia.com vfio.gpu.nvidia.com --ignore-not-found >/dev/null 2>&1 || true
}
