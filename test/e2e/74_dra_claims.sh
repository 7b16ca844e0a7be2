#!/usr/bin/env bash
# End-to-end: ResourceClaims read (issue 42), the DRA form of a stranded
# pod. On the lab (resource.k8s.io/v1 served, the controller-manager's
# resourceclaim-controller, kwok GPU nodes), with the driver and the DRA
# driver enabled, an admin publishes an 8-device ResourceSlice for a kwok
# node as NVIDIA's kubelet plugin would, and a pod with a claim template
# (DeviceClass gpu.nvidia.com) is scheduled there by the real scheduler,
# which allocates its claim from the slice:
#   - the plugin Ready and its slice: no ClaimWithoutPlugin;
#   - the node's dra-driver label removed (the plugin's pod goes, its slice
#     stays, as for the kubelet's 30 s): ClaimWithoutPlugin on the
#     dra-driver cell, naming the pod that reserves the claim;
#   - the label back (the plugin Ready again): it clears;
#   - the slice deleted while the plugin runs (a plugin that never
#     registered): ClaimWithoutPlugin again, naming the pod;
#   - the pod deleted (its claim with it): it clears.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
NODE=$(unique gpu-claims)
SLICE="$NODE-gpu.nvidia.com-a"
on_exit 'gpuop_kill; gpuop_uninstall; kc delete resourceslice "$SLICE" --ignore-not-found >/dev/null 2>&1 || true; kc delete deviceclass gpu.nvidia.com mig.nvidia.com vfio.gpu.nvidia.com --ignore-not-found >/dev/null 2>&1 || true'
L=nvidia.com/gpu.deploy

grep -qx resourceclaims.resource.k8s.io <<<"$(kc api-resources --api-group=resource.k8s.io -o name)" ||
	fail "the lab's API server does not serve resource.k8s.io ResourceClaims"

gpuop_install
gpuop_start
kc apply -f - >/dev/null <<YAML
apiVersion: gpuop.dev/v1alpha1
kind: GpuPolicy
metadata: {name: claims}
spec:
  driver: {enabled: true, image: "nvcr.io/nvidia/driver:595.91.07-ubuntu24.04"}
  toolkit: {enabled: false}
  devicePlugin: {enabled: false}
  gfd: {enabled: false}
  dcgmExporter: {enabled: false}
  validator: {enabled: false}
  draDriver: {enabled: true}
  findings: {advertiseGracePeriodSeconds: 600}
YAML
lab_node "$NODE" --label nvidia.com/gpu.present=true --label "$L.driver=true" --label "$L.dra-driver=true"

# slice NAME NODE DEVICES: a ResourceSlice as the plugin publishes it
slice() {
	local i devices="  devices:"$'\n'
	for ((i = 0; i < $3; i++)); do
		devices+="  - {name: gpu-$i, attributes: {type: {string: gpu}, productName: {string: NVIDIA A100-SXM4-40GB}, uuid: {string: GPU-$i}}, capacity: {memory: {value: 40Gi}}}"$'\n'
	done
	printf 'apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: %s}\nspec:\n  driver: gpu.nvidia.com\n  nodeName: %s\n  pool: {name: %s, generation: 1, resourceSliceCount: 1}\n%s' \
		"$1" "$2" "$2" "$devices" | kc apply -f - >/dev/null
}
status_has() { # status_has NODE OPERAND REASON
	kc get gpupolicy claims -o json |
		jq -e --arg n "$1" --arg o "$2" --arg r "$3" \
			'[.status.nodes[]? | select(.name == $n) | .findings[] | select(.operand == $o and .reason == $r)] | length > 0' >/dev/null
}
status_lacks() { ! status_has "$@"; }
message_of() { # message_of NODE REASON
	kc get gpupolicy claims -o json |
		jq -r --arg n "$1" --arg r "$2" '.status.nodes[]? | select(.name == $n) | .findings[] | select(.reason == $r) | .message'
}
message_names() { # message_names NODE REASON TEXT: the finding's message has TEXT
	grep -qF "$3" <<<"$(message_of "$1" "$2")"
}
running_on() { # running_on OPERAND NODE: a Ready pod of OPERAND on NODE
	kc -n "$GPUOP_NS" get pods -l "app.kubernetes.io/component=$1" --field-selector "spec.nodeName=$2" -o json |
		jq -e '[.items[] | select(.metadata.deletionTimestamp == null) | select(any(.status.conditions[]?; .type == "Ready" and .status == "True"))] | length == 1' >/dev/null
}
none_on() { # none_on OPERAND NODE: no pod of OPERAND on NODE
	kc -n "$GPUOP_NS" get pods -l "app.kubernetes.io/component=$1" --field-selector "spec.nodeName=$2" -o json |
		jq -e '.items | length == 0' >/dev/null
}
gpuop_log_has() { grep -qF "$1" "$GPUOP_LOG"; }

log "the DeviceClasses applied: slices and claims watched; the plugin runs on $NODE"
wait_for 60 gpuop_log_has "watching the ResourceClaims"
wait_for 120 running_on driver "$NODE"
wait_for 120 running_on dra-driver "$NODE"
slice "$SLICE" "$NODE" 8

log "a pod with a claim template, scheduled by the real scheduler onto $NODE"
make_ns WL
kc -n "$WL" apply -f - >/dev/null <<EOF
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
metadata: {name: train}
spec:
  nodeSelector: {kubernetes.io/hostname: $NODE}
  terminationGracePeriodSeconds: 1
  resourceClaims:
  - {name: gpu, resourceClaimTemplateName: gpu}
  containers:
  - name: train
    image: registry.example/train:1
    resources: {claims: [{name: gpu}]}
EOF
allocated() { # the pod's claim allocated on NODE and reserved by it
	kc -n "$WL" get resourceclaims -o json |
		jq -e --arg n "$NODE" '[.items[] | select(.status.allocation.devices.results[0].pool == $n) | select(.status.reservedFor[0].name == "train")] | length == 1' >/dev/null
}
wait_for 120 allocated
wait_for 60 bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' -n '$WL' get pod train -o jsonpath='{.spec.nodeName}')\" = '$NODE' ]"
wait_for 60 gpuop_log_has "resourceclaim/$WL/train-gpu"
status_lacks "$NODE" dra-driver ClaimWithoutPlugin || fail "a claim with its plugin running is reported"

log "the plugin's label removed: the pod's claim is stranded"
kc label node "$NODE" "$L.dra-driver-" >/dev/null
wait_for 120 none_on dra-driver "$NODE"
wait_for 60 status_has "$NODE" dra-driver ClaimWithoutPlugin
wait_for 60 message_names "$NODE" ClaimWithoutPlugin "Pods reserving them (1): $WL/train."
msg=$(message_of "$NODE" ClaimWithoutPlugin)
grep -qF "no DRA kubelet plugin runs Ready here or it has not registered (1 ResourceSlice(s) of it name the node)" <<<"$msg" ||
	fail "the message does not say why: $msg"

log "the plugin back: it clears"
kc label node "$NODE" "$L.dra-driver=true" --overwrite >/dev/null
wait_for 120 running_on dra-driver "$NODE"
wait_for 60 status_lacks "$NODE" dra-driver ClaimWithoutPlugin

log "the plugin runs but its slice is gone (never registered): stranded again"
kc delete resourceslice "$SLICE" >/dev/null
wait_for 60 status_has "$NODE" dra-driver ClaimWithoutPlugin
wait_for 60 message_names "$NODE" ClaimWithoutPlugin "(0 ResourceSlice(s) of it name the node)"
wait_for 60 message_names "$NODE" ClaimWithoutPlugin "Pods reserving them (1): $WL/train."

log "the pod deleted, its claim with it: it clears"
kc -n "$WL" delete pod train --wait=false >/dev/null
wait_for 120 status_lacks "$NODE" dra-driver ClaimWithoutPlugin
gpuop_stop
log "ok"
