#!/usr/bin/env bash
# End-to-end: the DRA driver's ResourceSlices read per node (issue 42). On
# the lab (resource.k8s.io/v1 served; kwok GPU nodes), with the DRA driver
# and the driver enabled, an admin publishes ResourceSlices for kwok nodes
# through the API, as NVIDIA's kubelet plugin would (driver gpu.nvidia.com,
# spec.nodeName, a pool named after the node, 8 devices):
#   - a node advertising nvidia.com/gpu 8 (the device plugin's allocatable)
#     with an 8-device slice: GpusAdvertisedTwice on its dra-driver cell,
#     naming both counts;
#   - a slice of another driver, and one of shared counters only (no
#     device), where the kubelet plugin has run past the advertise grace
#     (10 s here): NoSlicesPublished, and nothing of the other driver's;
#   - the driver's deploy label removed from a node with a slice (the
#     driver pod goes, the kubelet plugin stays): SlicesWithoutDriver;
#   - gpuop check says which path advertises each node's GPUs (both, DRA,
#     none) and has the same findings;
#   - the slices deleted: both findings clear (and the twice node, its
#     plugin running, has no device left: NoSlicesPublished);
#   - the DRA driver disabled: its DeviceClass deleted, the slices are not
#     watched any more, and no DRA finding is left.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
source "$(dirname "$0")/74_dra_lib.bash"
TWICE=$(unique gpu-twice)
NODRV=$(unique gpu-nodrv)
OTHER=$(unique gpu-other)
on_exit 'gpuop_kill; gpuop_uninstall; dra_cleanup'
L=nvidia.com/gpu.deploy

dra_require resourceslices
gpuop_install
gpuop_start
dra_policy dra 10
node_labels="--label nvidia.com/gpu.present=true --label $L.driver=true --label $L.dra-driver=true"
# shellcheck disable=SC2086 # the labels are words
lab_node "$TWICE" $node_labels --capacity nvidia.com/gpu=8
# shellcheck disable=SC2086
lab_node "$NODRV" $node_labels
# shellcheck disable=SC2086
lab_node "$OTHER" $node_labels

status_has() { # status_has NODE OPERAND REASON
	kc get gpupolicy dra -o json |
		jq -e --arg n "$1" --arg o "$2" --arg r "$3" \
			'[.status.nodes[]? | select(.name == $n) | .findings[] | select(.operand == $o and .reason == $r)] | length > 0' >/dev/null
}
status_lacks() { ! status_has "$@"; }
message_of() { # message_of NODE REASON
	kc get gpupolicy dra -o json |
		jq -r --arg n "$1" --arg r "$2" '.status.nodes[]? | select(.name == $n) | .findings[] | select(.reason == $r) | .message'
}
dra_findings_on() { # the reasons of NODE's dra-driver findings, sorted
	kc get gpupolicy dra -o json |
		jq -r --arg n "$1" '[.status.nodes[]? | select(.name == $n) | .findings[] | select(.operand == "dra-driver") | .reason] | sort | join(",")'
}
watching() { gpuop_log_has "watching the ResourceSlices of driver gpu.nvidia.com"; }
gpuop_log_has() { grep -qF "$1" "$GPUOP_LOG"; }

log "the DeviceClasses applied: the slices are watched"
wait_for 60 bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' get gpupolicy dra -o json | jq -r '.status.conditions[]? | select(.type == \"DeviceClasses\") | .status')\" = True ]"
wait_for 60 watching
for n in "$TWICE" "$NODRV" "$OTHER"; do
	wait_for 120 running_on driver "$n"
	wait_for 120 running_on dra-driver "$n"
done

log "the device plugin's 8 GPUs and an 8-device slice: advertised twice"
dra_slice "$TWICE-gpu.nvidia.com-a" "$TWICE" 8 gpu.nvidia.com
wait_for 60 status_has "$TWICE" dra-driver GpusAdvertisedTwice
wait_for 60 bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' get gpupolicy dra -o json | jq -r --arg n '$TWICE' '[.status.nodes[]? | select(.name == \$n) | .findings[] | select(.operand == \"dra-driver\") | .reason] | sort | join(\",\")')\" = GpusAdvertisedTwice ]"
msg=$(message_of "$TWICE" GpusAdvertisedTwice)
grep -qF "8 nvidia.com/gpu (allocatable) by the device plugin, and 8 device(s) in 1 ResourceSlice(s) of driver gpu.nvidia.com" <<<"$msg" ||
	fail "the message does not count both: $msg"

log "another driver's slice, a slice without devices: no slice published"
dra_slice "$OTHER-example.com-a" "$OTHER" 4 dra.example.com
dra_slice "$OTHER-gpu.nvidia.com-c" "$OTHER" 0 gpu.nvidia.com
dra_slice "$NODRV-gpu.nvidia.com-a" "$NODRV" 8 gpu.nvidia.com
wait_for 60 gpuop_log_has "resourceslice/$OTHER-gpu.nvidia.com-c"
wait_for 60 gpuop_log_has "resourceslice/$NODRV-gpu.nvidia.com-a"
gpuop_log_has "resourceslice/$OTHER-example.com-a" && fail "gpuop read another driver's slice"
wait_for 60 status_has "$OTHER" dra-driver NoSlicesPublished
wait_for 60 status_lacks "$NODRV" dra-driver NoSlicesPublished

log "the driver's label removed where a slice is: SlicesWithoutDriver"
kc label node "$NODRV" "$L.driver-" >/dev/null
wait_for 120 status_has "$NODRV" dra-driver SlicesWithoutDriver
msg=$(message_of "$NODRV" SlicesWithoutDriver)
grep -qF "8 device(s) in 1 ResourceSlice(s) of driver gpu.nvidia.com name the node, but driver neither runs nor is host-provided" <<<"$msg" ||
	fail "the message does not name the slices and the driver: $msg"
assert_eq NoSlicesPublished "$(dra_findings_on "$OTHER")" "$OTHER's dra-driver findings"

log "gpuop check: which path advertises each node's GPUs, and the same findings"
check_out=$("$GPUOP_BIN" check --kubeconfig "$KUBECONFIG" --namespace "$GPUOP_NS" -o json) || true
for want in "$TWICE=both" "$NODRV=DRA" "$OTHER=none"; do
	assert_eq "${want#*=}" "$(jq -r --arg n "${want%%=*}" '.gpusAdvertisedBy[$n] // ""' <<<"$check_out")" "check's path of ${want%%=*}"
done
jq -e --arg n "$TWICE" '[.nodes[] | select(.name == $n) | .findings[] | select(.reason == "GpusAdvertisedTwice")] | length == 1' <<<"$check_out" >/dev/null ||
	fail "gpuop check lacks $TWICE's GpusAdvertisedTwice"
check_text=$("$GPUOP_BIN" check --kubeconfig "$KUBECONFIG" --namespace "$GPUOP_NS" --color never) || true
grep -qE "^  both +1 node: $TWICE \(advertised twice" <<<"$check_text" || fail "gpuop check's text lacks $TWICE as both: $check_text"

log "the slices deleted: the findings clear"
kc delete resourceslice "$TWICE-gpu.nvidia.com-a" "$NODRV-gpu.nvidia.com-a" >/dev/null
wait_for 60 status_lacks "$TWICE" dra-driver GpusAdvertisedTwice
wait_for 60 status_lacks "$NODRV" dra-driver SlicesWithoutDriver
wait_for 60 status_has "$TWICE" dra-driver NoSlicesPublished

log "the DRA driver disabled: its DeviceClasses go, the slices are not watched any more"
dra_slice "$TWICE-gpu.nvidia.com-b" "$TWICE" 8 gpu.nvidia.com
wait_for 60 status_has "$TWICE" dra-driver GpusAdvertisedTwice
kc patch gpupolicy dra --type=merge -p '{"spec":{"draDriver":{"enabled":false}}}' >/dev/null
wait_for 60 gpuop_log_has "resourceslices: not watched any more"
wait_for 60 status_lacks "$TWICE" dra-driver GpusAdvertisedTwice
# The DaemonSet's pods terminate after its deletion; until they are gone the
# node reports the disabled operand still running (OperandDisabled).
no_dra_findings() { [ -z "$(dra_findings_on "$1")" ]; }
wait_for 60 no_dra_findings "$OTHER"
gpuop_stop
log "ok"
