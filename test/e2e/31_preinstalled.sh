#!/usr/bin/env bash
# End-to-end: a deploy label "pre-installed" is host-provided, as "false" is
# (issue 38 item 4; SPEC 5; docs/findings.md). NVIDIA's driver container
# labels a node nvidia.com/gpu.deploy.driver=pre-installed when it finds a
# driver on the host, and nodes moved from the GPU Operator carry it for the
# driver and sometimes for the container toolkit. A kwok GPU node labelled
# so for both, every other operand "true":
#   no driver or toolkit pod is bound there; the four operands above them
#   run;
#   the node is complete: the status lists no finding for it (no
#   NotScheduled for the two, no OrderingViolation above them), and
#   `gpuop check` shows the two as host-provided ("h") information saying
#   who wrote the value;
#   with node labelling on, gpuop writes nothing to it (any deploy label
#   makes a node a person's, SPEC 4a).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
on_exit 'gpuop_kill; gpuop_uninstall'

L=nvidia.com/gpu.deploy
ABOVE=(device-plugin gpu-feature-discovery dcgm-exporter operator-validator)
PRE=$(unique gpu-pre)

gpuop_sample
kc patch gpupolicy "$POLICY" --type=merge -p '{"spec":{"nodeLabeling":{"enabled":true}}}' >/dev/null

# running_on NODE OPERAND: Running pods of OPERAND bound to NODE
running_on() {
	kc -n "$GPUOP_NS" get pods -l "app.kubernetes.io/component=$2" --field-selector "spec.nodeName=$1" -o json |
		jq '[.items[] | select(.status.phase == "Running")] | length'
}
bound_on() {
	kc -n "$GPUOP_NS" get pods -l "app.kubernetes.io/component=$2" --field-selector "spec.nodeName=$1" -o json |
		jq '.items | length'
}
# node_entry NODE: the node's entry in status.nodes (only nodes with findings), or nothing
node_entry() {
	kc get gpupolicy "$POLICY" -o json | jq -c --arg n "$1" '.status.nodes[]? | select(.name == $n)'
}
all_above_run() {
	local op
	for op in "${ABOVE[@]}"; do [ "$(running_on "$1" "$op")" = 1 ] || return 1; done
}
# status_clean NODE: the status was written and lists no finding on NODE
status_clean() {
	[ -z "$(node_entry "$1")" ] &&
		kc get gpupolicy "$POLICY" -o json | jq -e '.status.summary.gpuNodes >= 1' >/dev/null
}

labels=(--label nvidia.com/gpu.present=true --label "$L.driver=pre-installed"
	--label "$L.container-toolkit=pre-installed")
for op in "${ABOVE[@]}"; do labels+=(--label "$L.$op=true"); done
lab_node "$PRE" "${labels[@]}"

log "the four operands above the host's driver and toolkit run on $PRE"
wait_for 120 all_above_run "$PRE"
assert_eq 0 "$(bound_on "$PRE" driver)" "driver pods on $PRE"
assert_eq 0 "$(bound_on "$PRE" container-toolkit)" "container-toolkit pods on $PRE"

log "no finding on $PRE: it is complete"
# the status is written after the pods are seen Running: wait for it to
# drop the node (it lists only nodes with findings)
wait_for 60 status_clean "$PRE"

# check: the matrix row (driver, toolkit, the device plugin, GFD, the DCGM
# host engine, disabled by default, the exporter and the validator) and
# the host-provided lines that say who wrote the value
check_text() {
	"$GPUOP_BIN" check --kubeconfig "$KUBECONFIG" --namespace "$GPUOP_NS" --nodes "$PRE" --color never || true
}
out=$(check_text)
row=$(awk -v n="$PRE" '$1 == n && /^[^ ]/ {print $2, $3, $4, $5, $6, $7, $8; exit}' <<<"$out")
assert_eq "h h + + d + +" "$row" "check's matrix row of $PRE (driver, toolkit host-provided; dcgm disabled; the rest running)"
grep -qF "driver on 1 node (label $L.driver=pre-installed: NVIDIA's driver container found a driver on the host)" <<<"$out" ||
	fail "check does not say the driver is the host's, written by NVIDIA's driver container: $out"
grep -qF "container-toolkit on 1 node (label $L.container-toolkit=pre-installed: NVIDIA's driver container found a driver on the host)" <<<"$out" ||
	fail "check does not say the toolkit is the host's: $out"
if grep -qE "NotScheduled|OrderingViolation|Missing/" <<<"$(sed -n '/^Findings/,$p' <<<"$out")"; then
	fail "check reports findings on $PRE: $out"
fi

log "node labelling left $PRE alone (a node with deploy labels is a person's)"
assert_eq "" "$(kc get node "$PRE" -o json | jq -r '.metadata.annotations["gpuop.dev/node-labels"] // empty')" \
	"gpuop's labelling annotation on $PRE"
assert_eq pre-installed "$(kc get node "$PRE" -o json | jq -r --arg k "$L.driver" '.metadata.labels[$k]')" \
	"$L.driver on $PRE"

gpuop_uninstall
gpuop_stop
log "ok"
