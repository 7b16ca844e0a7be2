#!/usr/bin/env bash
# End-to-end: a pod that is being deleted but still runs is running
# (issue 13 §0, SPEC 5). A finalizer holds the toolkit pod of a complete
# node while its label is removed: the pod gets a deletionTimestamp and
# still reports Running and Ready, as it would on a kubelet that stopped
# answering.
#   -> Unexpected/LabelNotTrue naming it terminating and since when, no
#      NotScheduled, no DevicePluginWithoutToolkit, runningNodes counts it;
#   -> past spec.findings.terminatingGracePeriodSeconds (here 15 s): Unexpected
#      PodStuckTerminating, in the status (the controller reconciles when the
#      grace ends, with no watch event) and in `gpuop check`;
#   -> the finalizer removed: the pod goes, NotScheduled/LabelAbsent.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
N=$(unique held)
HELD_POD=
release() {
	[ -n "$HELD_POD" ] || return 0
	kc -n "$GPUOP_NS" patch pod "$HELD_POD" --type json \
		-p '[{"op": "remove", "path": "/metadata/finalizers"}]' >/dev/null 2>&1 || true
}
on_exit 'release; gpuop_kill; gpuop_uninstall'

gpuop_install
gpuop_start --metrics-addr 0 --health-addr 0
POLICY=$(unique held-policy)
chain_policy "$POLICY" "findings: {terminatingGracePeriodSeconds: 15}"

# finding NODE OPERAND FIELD: jq over that node's finding of OPERAND in the status
finding() {
	kc get gpupolicy "$POLICY" -o json |
		jq -r --arg n "$1" --arg o "$2" "[.status.nodes[]? | select(.name == \$n) | .findings[] | select(.operand == \$o)] | .[0].$3 // \"\""
}
reasons_on() {
	kc get gpupolicy "$POLICY" -o json |
		jq -r --arg n "$1" '[.status.nodes[]? | select(.name == $n) | .findings[] | "\(.operand)/\(.reason)"] | sort | join(" ")'
}
export -f finding reasons_on kc
export POLICY GPUOP_NS

log "a complete node: driver, container-toolkit, device-plugin (8 GPUs advertised)"
lab_node "$N" --label nvidia.com/gpu.present=true --label nvidia.com/gpu.deploy.driver=true \
	--label nvidia.com/gpu.deploy.container-toolkit=true --label nvidia.com/gpu.deploy.device-plugin=true \
	--capacity nvidia.com/gpu=8
tk_pod() {
	kc -n "$GPUOP_NS" get pods -l app.kubernetes.io/component=container-toolkit \
		--field-selector "spec.nodeName=$N" -o jsonpath='{.items[0].metadata.name}'
}
wait_for 90 bash -c "[ \"\$(kc get gpupolicy $POLICY -o jsonpath='{.status.summary.completeNodes}')\" = 1 ]"
HELD_POD=$(tk_pod)
[ -n "$HELD_POD" ] || fail "no container-toolkit pod on $N"

log "a finalizer holds $HELD_POD; the toolkit label goes"
kc -n "$GPUOP_NS" patch pod "$HELD_POD" --type merge -p '{"metadata":{"finalizers":["example.com/hold"]}}' >/dev/null
kc label node "$N" nvidia.com/gpu.deploy.container-toolkit- >/dev/null
wait_for 60 bash -c "[ -n \"\$(kc -n $GPUOP_NS get pod $HELD_POD -o jsonpath='{.metadata.deletionTimestamp}')\" ]"
assert_eq "Running" "$(kc -n "$GPUOP_NS" get pod "$HELD_POD" -o jsonpath='{.status.phase}')" "the held pod's phase"
wait_for 60 bash -c "[ \"\$(finding $N container-toolkit reason)\" = LabelNotTrue ]"
# The label's removal is judged before the pod's deletion reaches gpuop, and
# that second status may wait for the write pacing's interval: wait for it.
# The message names the pod, terminating and since when (its last text is
# shown if it never does).
terminating() {
	local m
	m=$(finding "$N" container-toolkit message)
	case "$m" in *"$HELD_POD"*"terminating since 20"*) return 0 ;; esac
	printf '%s\n' "$m"
	return 1
}
wait_for 60 terminating
assert_eq "container-toolkit/LabelNotTrue" "$(reasons_on "$N")" \
	"findings on $N while the toolkit pod terminates (no NotScheduled, no DevicePluginWithoutToolkit)"
running=$(kc get gpupolicy "$POLICY" -o json | jq -r '.status.operands[] | select(.name == "container-toolkit") | .runningNodes')
assert_eq 1 "$running" "container-toolkit runningNodes counts the terminating pod"
assert_eq 0 "$(kc get gpupolicy "$POLICY" -o jsonpath='{.status.summary.violations}')" "violations"

log "past the 15 s grace: PodStuckTerminating, with no other change in the cluster"
wait_for 60 bash -c "[ \"\$(finding $N container-toolkit reason)\" = PodStuckTerminating ]"
msg=$(finding "$N" container-toolkit message)
case "$msg" in *finalizers*) ;; *) fail "PodStuckTerminating does not say what to look at: $msg" ;; esac
CHECK_RC=0
out=$("$GPUOP_BIN" check --kubeconfig "$KUBECONFIG" --namespace "$GPUOP_NS" -o json) || CHECK_RC=$?
assert_eq 1 "$CHECK_RC" "gpuop check exit code"
got=$(jq -r --arg n "$N" '[.nodes[] | select(.name == $n) | .findings[] | "\(.operand)/\(.reason)"] | join(" ")' <<<"$out")
assert_eq "container-toolkit/PodStuckTerminating" "$got" "gpuop check's findings on $N"

log "the finalizer removed: the pod goes, nothing runs the toolkit"
release
HELD_POD=
wait_for 60 bash -c "[ -z \"\$(kc -n $GPUOP_NS get pods -l app.kubernetes.io/component=container-toolkit --field-selector spec.nodeName=$N -o name)\" ]"
wait_for 60 bash -c "[ \"\$(finding $N container-toolkit reason)\" = LabelAbsent ]"
wait_for 60 bash -c "grep -q device-plugin/DevicePluginWithoutToolkit <<<\"\$(reasons_on $N)\""

kc delete gpupolicy "$POLICY" --wait=true >/dev/null
gpuop_stop
log "ok"
