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
source "$(dirname "$0")/74_dra_lib.bash"
NODE=$(unique gpu-over)
SLICE="$NODE-gpu.nvidia.com-a"
on_exit 'gpuop_kill; gpuop_uninstall; dra_cleanup'
L=nvidia.com/gpu.deploy

dra_require resourceclaims
gpuop_install
gpuop_start
dra_policy overadmit 600
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
bound_here() { # bound_here POD: POD is bound to NODE
	[ "$(kc -n "$WL" get pod "$1" -o jsonpath='{.spec.nodeName}')" = "$NODE" ]
}
gpuop_log_has() { grep -qF "$1" "$GPUOP_LOG"; }

log "the DeviceClasses applied: slices and claims watched; the plugin runs on $NODE"
wait_for 60 gpuop_log_has "watching the ResourceClaims"
wait_for 120 running_on driver "$NODE"
wait_for 120 running_on dra-driver "$NODE"
dra_slice "$SLICE" "$NODE" 2
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
dra_claim_pod "$WL" claimer "$NODE"
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
