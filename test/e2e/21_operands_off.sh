#!/usr/bin/env bash
# End-to-end: the GPU Operator's node-wide opt-out (issue 21, point 0;
# SPEC section 4.2) on the lab.
#   a node with all six operands Running -> labelled
#     nvidia.com/gpu.deploy.operands=false -> every operand pod leaves it
#     (the DaemonSets' node affinity, operands NotIn [false]); its per-operand
#     labels stay "true", as a GPU Operator user leaves them; the status lists
#     no finding for the node (NotScheduled and Missing are not reported on an
#     opted-out node; one that still advertises GPUs is still reported,
#     SPEC section 5 unchanged) while a second node keeps its six;
#   the label removed -> all six come back, the node complete again.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
on_exit 'gpuop_kill; gpuop_uninstall'

OPERANDS=(driver container-toolkit device-plugin gpu-feature-discovery dcgm-exporter operator-validator)
L=nvidia.com/gpu.deploy
OFF=$(unique gpu-off)
KEEP=$(unique gpu-keep)
# No nvidia.com/gpu capacity: a kwok node keeps advertising it after its
# device plugin left (a kubelet would drop it), which is a finding of its
# own on an opted-out node (GpusAdvertisedWithoutToolkit), not this test's.
labels=(--label nvidia.com/gpu.present=true)
for op in "${OPERANDS[@]}"; do labels+=(--label "$L.$op=true"); done

gpuop_install
gpuop_start
kc apply -f "$GPUOP_SRC/deploy/sample-gpupolicy.yaml" >/dev/null
POLICY=$(kc get gpupolicies -o jsonpath='{.items[0].metadata.name}')

# running NODE: how many operand pods are bound to NODE and Running
running() {
	kc -n "$GPUOP_NS" get pods -l app.kubernetes.io/managed-by=gpuop --field-selector "spec.nodeName=$1" -o json |
		jq '[.items[] | select(.status.phase == "Running")] | length'
}
# bound NODE: how many operand pods are bound to NODE at all (any phase)
bound() {
	kc -n "$GPUOP_NS" get pods -l app.kubernetes.io/managed-by=gpuop --field-selector "spec.nodeName=$1" -o json |
		jq '.items | length'
}
node_findings() {
	kc get gpupolicy "$POLICY" -o json | jq --arg n "$1" '[.status.nodes[]? | select(.name == $n) | .findings[]] | length'
}
export -f running bound node_findings kc
export POLICY GPUOP_NS

lab_node "$OFF" "${labels[@]}"
lab_node "$KEEP" "${labels[@]}"
log "waiting for all six operands Running on $OFF and $KEEP"
wait_for 120 bash -c "[ \"\$(running $OFF)\" = 6 ] && [ \"\$(running $KEEP)\" = 6 ]"
wait_for 60 bash -c "[ \"\$(node_findings $OFF)\" = 0 ]"

log "nvidia.com/gpu.deploy.operands=false on $OFF"
kc label node "$OFF" "$L.operands=false" >/dev/null
wait_for 90 bash -c "[ \"\$(bound $OFF)\" = 0 ]"
assert_eq 6 "$(running "$KEEP")" "operand pods Running on the node that did not opt out"
for op in "${OPERANDS[@]}"; do
	assert_eq true "$(kc get node "$OFF" -o json | jq -r --arg k "$L.$op" '.metadata.labels[$k]')" \
		"$L.$op on the opted-out node (gpuop does not rewrite it)"
done
(wait_for 60 bash -c "[ \"\$(node_findings $OFF)\" = 0 ]") ||
	fail "findings on the opted-out node: $(kc get gpupolicy "$POLICY" -o json | jq -c --arg n "$OFF" '.status.nodes[]? | select(.name == $n)')"
for op in "${OPERANDS[@]}"; do
	ds=$(kc -n "$GPUOP_NS" get ds -l "app.kubernetes.io/component=$op" -o json)
	jq -e '.items[0].spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0] == {"key": "nvidia.com/gpu.deploy.operands", "operator": "NotIn", "values": ["false"]}' \
		<<<"$ds" >/dev/null || fail "$op's DaemonSet lacks the opt-out affinity: $(jq -c '.items[0].spec.template.spec.affinity' <<<"$ds")"
done

log "the label removed: the six come back"
kc label node "$OFF" "$L.operands-" >/dev/null
wait_for 120 bash -c "[ \"\$(running $OFF)\" = 6 ]"
wait_for 60 bash -c "[ \"\$(node_findings $OFF)\" = 0 ]"

gpuop_uninstall
gpuop_stop
log "ok"
