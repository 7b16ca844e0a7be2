#!/usr/bin/env bash
# End-to-end: findings on the lab (issue 4). Each step asserts both the
# GpuPolicy status and `gpuop check -o json`.
#   two GPU nodes, driver label on one -> the other NotScheduled for driver;
#   a label removed -> its pod goes and the findings follow;
#   device-plugin=true by hand on a node without container-toolkit ->
#     OrderingViolation DevicePluginWithoutToolkit, check exits 1;
#   a third GPU node -> counts follow at once;
#   an untolerated taint -> Missing naming the taint, desired one less;
#   driver.enabled=false -> toolkit not flagged (driver host-provided);
#   a pod in CrashLoopBackOff -> Missing with that reason.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
on_exit 'gpuop_kill; gpuop_uninstall'

OPERANDS=(driver container-toolkit device-plugin gpu-feature-discovery dcgm-exporter operator-validator)
labels_all() {
	local out="--label nvidia.com/gpu.present=true --capacity nvidia.com/gpu=8" op
	for op in "${OPERANDS[@]}"; do
		case " $* " in *" $op "*) continue ;; esac
		out="$out --label nvidia.com/gpu.deploy.$op=true"
	done
	echo "$out"
}

A=$(unique gpu-a)
B=$(unique gpu-b)
C=$(unique gpu-c)
D=$(unique gpu-d)

gpuop_install
gpuop_start
kc apply -f "$GPUOP_SRC/deploy/sample-gpupolicy.yaml" >/dev/null
POLICY=$(kc get gpupolicies -o jsonpath='{.items[0].metadata.name}')
# One gpuop-driver whatever the nodes' OS (a full reference needs no OS
# pool; the driver per OS pool is test 64_os_pools): the findings here are
# about nodes without NFD's OS labels.
kc patch gpupolicy "$POLICY" --type=merge -p '{"spec":{"driver":{"image":"nvcr.io/nvidia/driver:595.91.07-ubuntu24.04","repository":null,"version":null}}}' >/dev/null

# status_has NODE OPERAND REASON: the status lists that finding.
status_has() {
	kc get gpupolicy "$POLICY" -o json |
		jq -e --arg n "$1" --arg o "$2" --arg r "$3" \
			'[.status.nodes[]? | select(.name == $n) | .findings[] | select(.operand == $o and .reason == $r)] | length > 0' >/dev/null
}
status_lacks_node() {
	kc get gpupolicy "$POLICY" -o json | jq -e --arg n "$1" '[.status.nodes[]? | select(.name == $n)] | length == 0' >/dev/null
}
# check_json: gpuop check -o json, exit code in CHECK_RC.
check_json() {
	CHECK_RC=0
	CHECK_OUT=$("$GPUOP_BIN" check --kubeconfig "$KUBECONFIG" --namespace "$GPUOP_NS" -o json) || CHECK_RC=$?
}
check_has() {
	jq -e --arg n "$1" --arg o "$2" --arg r "$3" \
		'[.nodes[] | select(.name == $n) | .findings[] | select(.operand == $o and .reason == $r)] | length > 0' \
		<<<"$CHECK_OUT" >/dev/null || fail "gpuop check lacks $1/$2/$3: $(jq -c '.nodes' <<<"$CHECK_OUT")"
}
check_lacks_node() {
	jq -e --arg n "$1" '[.nodes[] | select(.name == $n) | .findings[]] | length == 0' <<<"$CHECK_OUT" >/dev/null ||
		fail "gpuop check still has findings on $1: $(jq -c --arg n "$1" '.nodes[] | select(.name == $n)' <<<"$CHECK_OUT")"
}
# eventually_check_clean NODE: gpuop check shows no finding on NODE within
# 60 s (for steps that roll pods, where a moment of Pending is real).
eventually_check_clean() {
	local i
	for ((i = 0; i < 120; i++)); do
		check_json
		jq -e --arg n "$1" '[.nodes[] | select(.name == $n) | .findings[]] | length == 0' <<<"$CHECK_OUT" >/dev/null && return 0
		sleep 0.5
	done
	check_lacks_node "$1"
}
summary() { kc get gpupolicy "$POLICY" -o jsonpath="{.status.summary.$1}"; }
running_on() { kc -n "$GPUOP_NS" get pods -l "app.kubernetes.io/component=$2" --field-selector "spec.nodeName=$1" -o name | wc -l; }
export -f status_has status_lacks_node summary running_on kc
export POLICY GPUOP_NS

log "two GPU nodes; only $A has the driver label"
# shellcheck disable=SC2046
lab_node "$A" $(labels_all)
# shellcheck disable=SC2046
lab_node "$B" $(labels_all driver)
wait_for 60 status_has "$B" driver LabelAbsent
wait_for 60 bash -c "[ \"\$(summary gpuNodes)\" = 2 ] && [ \"\$(summary completeNodes)\" = 1 ]"
wait_for 60 bash -c "[ \"\$(running_on $A driver)\" = 1 ]"
check_json
assert_eq 1 "$CHECK_RC" "gpuop check exit code with findings"
check_has "$B" driver LabelAbsent
check_lacks_node "$A"
assert_eq 2 "$(jq -r .summary.gpuNodes <<<"$CHECK_OUT")" "check gpuNodes"
# the toolkit on B runs without a driver: the chain is broken there
check_has "$B" container-toolkit PrerequisiteNotRunning

log "driver=false on $B: host-provided, the findings clear"
kc label node "$B" nvidia.com/gpu.deploy.driver=false >/dev/null
wait_for 60 status_lacks_node "$B"
check_json
check_lacks_node "$B"
assert_eq 0 "$CHECK_RC" "gpuop check exit code when clean"
assert_eq ready "$(gp_jq "$POLICY" .status.state)" "state when every node is complete"
assert_eq "True" "$(gp_cond "$POLICY" Ready status)" "Ready condition"

log "remove dcgm-exporter's label on $A: its pod goes and the findings follow"
kc label node "$A" nvidia.com/gpu.deploy.dcgm-exporter- >/dev/null
wait_for 60 bash -c "[ \"\$(running_on $A dcgm-exporter)\" = 0 ]"
wait_for 60 status_has "$A" dcgm-exporter LabelAbsent
check_json
check_has "$A" dcgm-exporter LabelAbsent
kc label node "$A" nvidia.com/gpu.deploy.dcgm-exporter=paused >/dev/null
wait_for 60 status_has "$A" dcgm-exporter LabelPaused
kc label node "$A" nvidia.com/gpu.deploy.dcgm-exporter=true --overwrite >/dev/null
wait_for 60 status_lacks_node "$A"

log "by hand: device-plugin=true on $C without a container-toolkit label"
lab_node "$C" --label nvidia.com/gpu.present=true --label nvidia.com/gpu.deploy.driver=true \
	--label nvidia.com/gpu.deploy.device-plugin=true
wait_for 60 status_has "$C" device-plugin DevicePluginWithoutToolkit
check_json
assert_eq 1 "$CHECK_RC" "gpuop check exit code on a violation"
check_has "$C" device-plugin DevicePluginWithoutToolkit
msg=$(jq -r --arg n "$C" '.nodes[] | select(.name == $n) | .findings[] | select(.reason == "DevicePluginWithoutToolkit") | .message' <<<"$CHECK_OUT")
case "$msg" in *GPU*) ;; *) fail "the violation message does not say what happens to GPU workloads: $msg" ;; esac
assert_eq "False" "$(gp_cond "$POLICY" OrderingValid status)" "OrderingValid"
assert_eq 1 "$(summary violations)" "violations"
assert_eq 3 "$(summary gpuNodes)" "a third GPU node counted at once"
# an Event on the GpuPolicy says so (events of cluster-scoped objects live in "default"),
# once the violation has lasted the event grace period (60 s by default: docs/findings.md)
wait_for 150 bash -c "kubectl --kubeconfig '$KUBECONFIG' -n default get events --field-selector reason=DevicePluginWithoutToolkit,involvedObject.name=$POLICY -o json | jq -e --arg n '$C' '[.items[] | select(.message | contains(\$n))] | length == 1' >/dev/null"

log "taint $A with a taint the DaemonSets do not tolerate"
desired_before=$(kc -n "$GPUOP_NS" get ds gpuop-driver -o jsonpath='{.status.desiredNumberScheduled}')
kc taint node "$A" dedicated=ml:NoSchedule >/dev/null
# the pods already there stay (NoSchedule does not evict); delete them as a
# node drain would, so the DaemonSet controller has to decide again
kc -n "$GPUOP_NS" delete pods --field-selector "spec.nodeName=$A" --wait=true >/dev/null
wait_for 60 status_has "$A" driver TaintNotTolerated
msg=$(kc get gpupolicy "$POLICY" -o json | jq -r --arg n "$A" '.status.nodes[] | select(.name == $n) | .findings[] | select(.operand == "driver") | .message')
case "$msg" in *dedicated=ml:NoSchedule*) ;; *) fail "Missing does not name the taint: $msg" ;; esac
wait_for 60 bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' -n $GPUOP_NS get ds gpuop-driver -o jsonpath='{.status.desiredNumberScheduled}')\" = $((desired_before - 1)) ]"
check_json
check_has "$A" driver TaintNotTolerated
ds_desired=$(jq -r '.operands[] | select(.name == "driver") | .desiredNumberScheduled' <<<"$CHECK_OUT")
assert_eq "$((desired_before - 1))" "$ds_desired" "check shows the DaemonSet's own desiredNumberScheduled"
kc taint node "$A" dedicated- >/dev/null
wait_for 90 status_lacks_node "$A"

log "driver.enabled=false: the driver is host-provided, the toolkit is not flagged"
# shellcheck disable=SC2046
lab_node "$D" $(labels_all)
wait_for 60 bash -c "[ \"\$(running_on $D container-toolkit)\" = 1 ]"
kc patch gpupolicy "$POLICY" --type=merge -p '{"spec":{"driver":{"enabled":false}}}' >/dev/null
wait_for 60 bash -c "! kubectl --kubeconfig '$KUBECONFIG' -n $GPUOP_NS get ds gpuop-driver >/dev/null 2>&1"
wait_for 60 status_lacks_node "$D"
eventually_check_clean "$D"
# the matrix row (the first line that starts with the node's name; the
# findings under the matrix are indented): driver "d", toolkit "+". The
# toolkit rolls to the host's driver root, so allow it a moment.
matrix_cells() {
	{ "$GPUOP_BIN" check --kubeconfig "$KUBECONFIG" --namespace "$GPUOP_NS" --nodes "$D" --color never || true; } |
		awk -v n="$D" '$1 == n && /^[^ ]/ {print $2, $3; exit}'
}
for ((i = 0; i < 120; i++)); do
	cells=$(matrix_cells)
	[[ $cells == "d +" ]] && break
	sleep 0.5
done
assert_eq "d +" "$cells" "matrix row of $D: driver host-provided (disabled), toolkit running"
kc patch gpupolicy "$POLICY" --type=merge -p '{"spec":{"driver":{"enabled":true}}}' >/dev/null
wait_for 60 bash -c "[ \"\$(running_on $D driver)\" = 1 ]"

log "the dcgm-exporter pod on $D in CrashLoopBackOff"
wait_for 60 bash -c "[ \"\$(running_on $D dcgm-exporter)\" = 1 ]"
"$GPUOP_SRC/test/lab/pod-state" "$D" "$GPUOP_NS" gpuop-dcgm-exporter crashloop >/dev/null
wait_for 60 status_has "$D" dcgm-exporter CrashLoopBackOff
check_json
check_has "$D" dcgm-exporter CrashLoopBackOff
"$GPUOP_SRC/test/lab/pod-state" "$D" "$GPUOP_NS" gpuop-dcgm-exporter running >/dev/null
wait_for 60 status_lacks_node "$D"

log "a node removed: its findings go"
wait_for 60 status_has "$C" device-plugin DevicePluginWithoutToolkit
kc delete node "$C" >/dev/null
wait_for 60 status_lacks_node "$C"
assert_eq 3 "$(summary gpuNodes)" "gpuNodes after the node went"

gpuop_stop
