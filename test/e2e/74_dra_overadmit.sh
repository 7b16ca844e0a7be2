#!/usr/bin/env bash
# End-to-end: the over-admission form of GpusAdvertisedTwice (issue 42).
# On the lab (resource.k8s.io/v1 served, the controller-manager's
# resourceclaim-controller, the real scheduler, kwok GPU nodes), with the
# driver and the DRA driver enabled, a kwok node advertises nvidia.com/gpu 2
# (the device plugin's allocatable) and an admin publishes a 2-device
# ResourceSlice of driver gpu.nvidia.com for it, as NVIDIA's kubelet plugin
# would. The scheduler counts each apart, so it binds there:
#   - two pods requesting nvidia.com/gpu: 1 (the plugin's 2), and
#   - a pod whose claim (a claim template, DeviceClass gpu.nvidia.com) it
#     allocates from the slice:
# 3 GPUs held on a node of 2: the finding names the three pods and says
# held against GPUs (the pods read by gpuop's per-node pod LIST, the claim
# from the cached claims). One pod of the requests deleted: 2 of 2, back to
# the count-only form (at the node's next LIST, within a minute).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
NODE=$(unique gpu-over)
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
metadata: {name: overadmit}
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
lab_node "$NODE" --label nvidia.com/gpu.present=true --label "$L.driver=true" --label "$L.dra-driver=true" \
	--capacity nvidia.com/gpu=2

status_has() { # status_has NODE OPERAND REASON
	kc get gpupolicy overadmit -o json |
		jq -e --arg n "$1" --arg o "$2" --arg r "$3" \
			'[.status.nodes[]? | select(.name == $n) | .findings[] | select(.operand == $o and .reason == $r)] | length > 0' >/dev/null
}
message_of() { # message_of NODE REASON
	kc get gpupolicy overadmit -o json |
		jq -r --arg n "$1" --arg r "$2" '.status.nodes[]? | select(.name == $n) | .findings[] | select(.reason == $r) | .message'
}
message_names() { # message_names NODE REASON TEXT: the finding's message has TEXT
	grep -qF "$3" <<<"$(message_of "$1" "$2")"
}
message_lacks() { ! message_names "$@"; }
running_on() { # running_on OPERAND NODE: a Ready pod of OPERAND on NODE
	kc -n "$GPUOP_NS" get pods -l "app.kubernetes.io/component=$1" --field-selector "spec.nodeName=$2" -o json |
		jq -e '[.items[] | select(.metadata.deletionTimestamp == null) | select(any(.status.conditions[]?; .type == "Ready" and .status == "True"))] | length == 1' >/dev/null
}
bound_here() { # bound_here POD: POD is bound to NODE
	[ "$(kc -n "$WL" get pod "$1" -o jsonpath='{.spec.nodeName}')" = "$NODE" ]
}
gpuop_log_has() { grep -qF "$1" "$GPUOP_LOG"; }

log "the DeviceClasses applied: slices and claims watched; the plugin runs on $NODE"
wait_for 60 gpuop_log_has "watching the ResourceClaims"
wait_for 120 running_on driver "$NODE"
wait_for 120 running_on dra-driver "$NODE"
printf 'apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: %s}\nspec:\n  driver: gpu.nvidia.com\n  nodeName: %s\n  pool: {name: %s, generation: 1, resourceSliceCount: 1}\n  devices:\n  - {name: gpu-0, attributes: {type: {string: gpu}, uuid: {string: GPU-0}}}\n  - {name: gpu-1, attributes: {type: {string: gpu}, uuid: {string: GPU-1}}}\n' \
	"$SLICE" "$NODE" "$NODE" | kc apply -f - >/dev/null
wait_for 120 status_has "$NODE" dra-driver GpusAdvertisedTwice
message_lacks "$NODE" GpusAdvertisedTwice "cannot all have one" || fail "over-admission said with no pod bound"

log "two pods requesting nvidia.com/gpu and one with a claim, all bound to $NODE by the scheduler"
make_ns WL
gpu_pod() { # gpu_pod NAME
	kc -n "$WL" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  nodeSelector: {kubernetes.io/hostname: $NODE}
  terminationGracePeriodSeconds: 1
  containers:
  - name: train
    image: registry.example/train:1
    resources: {limits: {nvidia.com/gpu: 1}}
EOF
}
gpu_pod plugin-a
gpu_pod plugin-b
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
metadata: {name: claimer}
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
for p in plugin-a plugin-b claimer; do wait_for 120 bound_here "$p"; done

log "3 GPUs held on a node of 2: the finding names the pods"
wait_for 120 message_names "$NODE" GpusAdvertisedTwice \
	"the pods bound here hold 3 GPUs (2 through nvidia.com/gpu requests, 1 through claims' devices) of the node's 2, so these 3 cannot all have one:"
msg=$(message_of "$NODE" GpusAdvertisedTwice)
for p in plugin-a plugin-b claimer; do
	grep -qF "$WL/$p" <<<"$msg" || fail "the message does not name $WL/$p: $msg"
done
grep -qF "2 nvidia.com/gpu (allocatable) by the device plugin, and 2 device(s) in 1 ResourceSlice(s)" <<<"$msg" ||
	fail "the message lost its counts: $msg"
status_has "$NODE" dra-driver ClaimWithoutPlugin && fail "a claim with its plugin running is reported"

log "one pod deleted: 2 of 2, the count-only form again"
kc -n "$WL" delete pod plugin-b --wait=false >/dev/null
wait_for 180 message_lacks "$NODE" GpusAdvertisedTwice "cannot all have one"
status_has "$NODE" dra-driver GpusAdvertisedTwice || fail "the finding itself went"
gpuop_stop
log "ok"
