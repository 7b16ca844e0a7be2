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
source "$(dirname "$0")/74_dra_lib.bash"
NODE=$(unique gpu-claims)
SLICE="$NODE-gpu.nvidia.com-a"
on_exit 'gpuop_kill; gpuop_uninstall; dra_cleanup'
L=nvidia.com/gpu.deploy

dra_require resourceclaims
gpuop_install
gpuop_start
dra_policy claims 600
lab_node "$NODE" --label nvidia.com/gpu.present=true --label "$L.driver=true" --label "$L.dra-driver=true"

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
none_on() { # none_on OPERAND NODE: no pod of OPERAND on NODE
	kc -n "$GPUOP_NS" get pods -l "app.kubernetes.io/component=$1" --field-selector "spec.nodeName=$2" -o json |
		jq -e '.items | length == 0' >/dev/null
}
gpuop_log_has() { grep -qF "$1" "$GPUOP_LOG"; }

log "the DeviceClasses applied: slices and claims watched; the plugin runs on $NODE"
wait_for 60 gpuop_log_has "watching the ResourceClaims"
wait_for 120 running_on driver "$NODE"
wait_for 120 running_on dra-driver "$NODE"
dra_slice "$SLICE" "$NODE" 8

log "a pod with a claim template, scheduled by the real scheduler onto $NODE"
make_ns WL
dra_claim_pod "$WL" train "$NODE"
wait_for 120 dra_allocated "$WL" "$NODE" train
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
