#!/usr/bin/env bash
# End-to-end: Held (issue 15 §3). With spec.ordering: enforce, the seed's
# manual labelling (device-plugin=true, no container-toolkit label) gets no
# device-plugin pod from the real DaemonSet controller, and the findings say
# Held/HeldByPrerequisite naming the toolkit's label, not a violation; once
# the toolkit is labelled the device plugin runs and Held clears.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
on_exit 'gpuop_kill; gpuop_uninstall'
N=$(unique held)

gpuop_install
gpuop_start --metrics-addr 0 --health-addr 0
POLICY=$(unique enforce)
chain_policy "$POLICY" "ordering: enforce"

finding() {
	kc get gpupolicy "$POLICY" -o json |
		jq -r --arg n "$1" --arg o "$2" "[.status.nodes[]? | select(.name == \$n) | .findings[] | select(.operand == \$o)] | map(.$3) | join(\" \")"
}
dp_pods() {
	kc -n "$GPUOP_NS" get pods -l app.kubernetes.io/component=device-plugin --field-selector "spec.nodeName=$1" -o name | wc -l
}
export -f finding dp_pods kc
export POLICY GPUOP_NS

log "$N: driver and device-plugin labelled, no container-toolkit label"
lab_node "$N" --label nvidia.com/gpu.present=true --label nvidia.com/gpu.deploy.driver=true \
	--label nvidia.com/gpu.deploy.device-plugin=true
wait_for 90 bash -c "[ \"\$(finding $N device-plugin reason)\" = HeldByPrerequisite ]"
assert_eq Held "$(finding "$N" device-plugin kind)" "the device plugin's finding kind"
msg=$(finding "$N" device-plugin message)
case "$msg" in *"nvidia.com/gpu.deploy.container-toolkit"*"it is absent"*) ;; *) fail "Held does not name the toolkit's label: $msg" ;; esac
assert_eq LabelAbsent "$(finding "$N" container-toolkit reason)" "the toolkit's own finding"
assert_eq 0 "$(kc get gpupolicy "$POLICY" -o jsonpath='{.status.summary.violations}')" "violations"
wait_for 60 bash -c "[ \"\$(kc -n $GPUOP_NS get pods -l app.kubernetes.io/component=driver --field-selector spec.nodeName=$N -o name | wc -l)\" = 1 ]"
assert_eq 0 "$(dp_pods "$N")" "device-plugin pods on $N"
CHECK_RC=0
out=$("$GPUOP_BIN" check --kubeconfig "$KUBECONFIG" --namespace "$GPUOP_NS" --color never) || CHECK_RC=$?
assert_eq 1 "$CHECK_RC" "gpuop check exit code"
case "$out" in *"Held/HeldByPrerequisite"*) ;; *) fail "gpuop check does not show Held: $out" ;; esac

log "the toolkit labelled: the device plugin comes, Held clears"
kc label node "$N" nvidia.com/gpu.deploy.container-toolkit=true >/dev/null
wait_for 90 bash -c "[ \"\$(dp_pods $N)\" = 1 ]"
wait_for 60 bash -c "[ -z \"\$(finding $N device-plugin reason)\" ]"

kc delete gpupolicy "$POLICY" --wait=true >/dev/null
gpuop_stop
log "ok"
