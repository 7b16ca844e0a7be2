#!/usr/bin/env bash
# End-to-end: spec.ordering enforce (issue 15 section 3) on the lab.
#   the seed's manual labelling (device-plugin=true, no container-toolkit
#     label) never gets a device-plugin pod on that node, not for a moment,
#     through 20 relabels (every device-plugin pod the API server ever shows
#     is watched: none is bound to the node or aimed at it);
#   labelling the toolkit lets the device plugin come;
#   removing the toolkit label from a complete node takes its device-plugin
#     pod (and gpu-feature-discovery's, further up the chain) away;
#   switching back to report lifts the gate: the pod returns (the
#     node-wide opt-out, operands NotIn [false], stays).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
on_exit 'gpuop_kill; gpuop_uninstall'

NS=$GPUOP_NS
L=nvidia.com/gpu.deploy
SEED=$(unique seed)
FULL=$(unique full)
LAST=$(unique barrier)

gpuop_install
gpuop_start --leader-elect=false --metrics-addr=0 --health-addr=0
sed 's/^  ordering: report/  ordering: enforce/' "$GPUOP_SRC/deploy/sample-gpupolicy.yaml" >"$E2E_TMP/policy.yaml"
grep -q '^  ordering: enforce' "$E2E_TMP/policy.yaml" || fail "the sample policy has no ordering line"
kc apply -f "$E2E_TMP/policy.yaml" >/dev/null
POLICY=$(kc get gpupolicies -o jsonpath='{.items[0].metadata.name}')

# the DaemonSet carries the gate before any node asks for it
wait_for 60 bash -c "kubectl --kubeconfig '$KUBECONFIG' -n $NS get ds gpuop-device-plugin -o json |
	jq -e '[.spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[].key] == [\"$L.operands\", \"$L.container-toolkit\", \"$L.driver\"]'"

# pods_of OPERAND NODE: names of the operand's pods bound to NODE
pods_of() {
	kc -n "$NS" get pods -l "app.kubernetes.io/component=$1" -o json |
		jq -r --arg n "$2" '.items[] | select(.spec.nodeName == $n) | .metadata.name'
}

log "watching every device-plugin pod while the seed node is labelled by hand"
spawn podwatch "$LAB_DIR/bin/kubectl" --kubeconfig "$LAB_DIR/kubeconfig" -n "$NS" get pods \
	-l app.kubernetes.io/component=device-plugin --watch --output-watch-events -o json
wait_for 30 test -f "$E2E_TMP/podwatch.log"
lab_node "$FULL" --label nvidia.com/gpu.present=true --label "$L.driver=true" \
	--label "$L.container-toolkit=true" --label "$L.device-plugin=true" \
	--label "$L.gpu-feature-discovery=true"
# the seed: driver and device plugin by hand, no toolkit label
lab_node "$SEED" --label nvidia.com/gpu.present=true --label "$L.driver=true" --label "$L.device-plugin=true"
wait_for 60 bash -c "[ -n \"\$(kubectl --kubeconfig '$KUBECONFIG' -n $NS get pods -l app.kubernetes.io/component=device-plugin -o json | jq -r --arg n '$FULL' '.items[] | select(.spec.nodeName == \$n and .status.phase == \"Running\") | .metadata.name')\" ]"
for i in $(seq 1 20); do
	case $((i % 4)) in
	0) kc label node "$SEED" "$L.device-plugin-" >/dev/null ;;
	1) kc label node "$SEED" "$L.device-plugin=true" --overwrite >/dev/null ;;
	2) kc label node "$SEED" "$L.container-toolkit=paused-for-mig-change" --overwrite >/dev/null ;;
	3) kc label node "$SEED" "$L.container-toolkit-" >/dev/null ;;
	esac
done
kc label node "$SEED" "$L.device-plugin=true" --overwrite >/dev/null
# barrier: a node labelled after the 20 relabels gets its pod, so the
# DaemonSet controller has handled every update of the seed before it
lab_node "$LAST" --label nvidia.com/gpu.present=true --label "$L.driver=true" \
	--label "$L.container-toolkit=true" --label "$L.device-plugin=true"
wait_for 60 bash -c "[ -n \"\$(kubectl --kubeconfig '$KUBECONFIG' -n $NS get pods -l app.kubernetes.io/component=device-plugin -o json | jq -r --arg n '$LAST' '.items[] | select(.spec.nodeName == \$n) | .metadata.name')\" ]"
stop_spawned podwatch
seen=$(jq -s 'length' "$E2E_TMP/podwatch.log")
[ "$seen" -gt 0 ] || fail "the pod watch saw nothing"
aimed=$(jq -s --arg n "$SEED" '[.[] | .object // . | select(.spec.nodeName == $n or
	([.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[]?.matchFields[]?.values[]?] | index($n)))
	| .metadata.name] | unique' "$E2E_TMP/podwatch.log")
assert_eq "[]" "$(jq -c . <<<"$aimed")" "device-plugin pods ever bound to or aimed at the seed node ($seen watch events)"
assert_eq "" "$(pods_of device-plugin "$SEED")" "device-plugin pods on the seed node"

log "labelling the toolkit on the seed node lets the device plugin come"
kc label node "$SEED" "$L.container-toolkit=true" --overwrite >/dev/null
wait_for 60 bash -c "[ -n \"\$(kubectl --kubeconfig '$KUBECONFIG' -n $NS get pods -l app.kubernetes.io/component=device-plugin -o json | jq -r --arg n '$SEED' '.items[] | select(.spec.nodeName == \$n) | .metadata.name')\" ]"

log "removing the toolkit label from a complete node takes its device plugin (and gfd) away"
[ -n "$(pods_of gpu-feature-discovery "$FULL")" ] || wait_for 60 bash -c "[ -n \"\$(kubectl --kubeconfig '$KUBECONFIG' -n $NS get pods -l app.kubernetes.io/component=gpu-feature-discovery -o json | jq -r --arg n '$FULL' '.items[] | select(.spec.nodeName == \$n) | .metadata.name')\" ]"
kc label node "$FULL" "$L.container-toolkit-" >/dev/null
for op in device-plugin gpu-feature-discovery; do
	wait_for 90 bash -c "[ -z \"\$(kubectl --kubeconfig '$KUBECONFIG' -n $NS get pods -l app.kubernetes.io/component=$op -o json | jq -r --arg n '$FULL' '.items[] | select(.spec.nodeName == \$n) | .metadata.name')\" ]"
done
assert_eq "" "$(pods_of container-toolkit "$FULL")" "toolkit pod on the unlabelled node"

log "switching to report lifts the gate: the device plugin returns to that node"
kc patch gpupolicy "$POLICY" --type=merge -p '{"spec":{"ordering":"report"}}' >/dev/null
wait_for 60 bash -c "kubectl --kubeconfig '$KUBECONFIG' -n $NS get ds gpuop-device-plugin -o json | jq -e '[.spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[].key] == [\"$L.operands\"]'"
wait_for 60 bash -c "[ -n \"\$(kubectl --kubeconfig '$KUBECONFIG' -n $NS get pods -l app.kubernetes.io/component=device-plugin -o json | jq -r --arg n '$FULL' '.items[] | select(.spec.nodeName == \$n) | .metadata.name')\" ]"

gpuop_uninstall
gpuop_stop
log "ok"
