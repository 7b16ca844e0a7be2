#!/usr/bin/env bash
# End-to-end: a DaemonSet the API server rejects (issue 13 §1, §3).
#   A ValidatingAdmissionPolicy refuses every DaemonSet with an env var
#   E2E_REJECT (gpuop's own validation cannot know it, as with a webhook).
#   toolkit with E2E_REJECT -> the API server rejects its DaemonSet; gpuop then creates or changes none of the operands that
#     need it (device plugin, gfd, dcgm-exporter, validator: an existing
#     one stays as it was), says so per operand, lists the rejection beside
#     a spec problem, and Ready is False although every node is complete;
#   two independent rejections (gfd and dcgm-exporter) for 20 s: the
#     PATCHes and status writes follow the key's backoff (before the fix
#     every status write re-queued the key at once through the GpuPolicy
#     watch, and the message changed with the order of the answers), and
#     each problem is logged once;
#   the policy fixed -> every DaemonSet on the spec, Ready again.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
on_exit 'gpuop_kill; gpuop_uninstall; kc delete validatingadmissionpolicybinding,validatingadmissionpolicy e2e-reject-marked --ignore-not-found >/dev/null 2>&1'

OPERANDS=(driver container-toolkit device-plugin gpu-feature-discovery dcgm-exporter operator-validator)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
MP=$(free_port)
metric() { curl -sf --max-time 5 "http://127.0.0.1:$MP/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
# operand_field POLICY OPERAND FIELD: .status.operands[name==OPERAND].FIELD
operand_field() {
	gp_jq "$1" ".status.operands // [] | map(select(.name == \"$2\")) | .[0].$3 // \"\""
}
ds_json() { kc -n "$GPUOP_NS" get ds "gpuop-$1" -o json; }

A=$(unique gpu-a)
labels="--label nvidia.com/gpu.present=true"
for op in "${OPERANDS[@]}"; do labels="$labels --label nvidia.com/gpu.deploy.$op=true"; done
# shellcheck disable=SC2086
lab_node "$A" $labels

kc apply -f - >/dev/null <<'EOF'
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: e2e-reject-marked
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - apiGroups: [apps]
        apiVersions: [v1]
        operations: [CREATE, UPDATE]
        resources: [daemonsets]
  validations:
    - expression: "object.spec.template.spec.containers.all(c, !has(c.env) || c.env.all(e, e.name != 'E2E_REJECT'))"
      message: E2E_REJECT is refused here
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: e2e-reject-marked
spec:
  policyName: e2e-reject-marked
  validationActions: [Deny]
EOF
gpuop_install
# the admission policy is in force once a dry run with the marker is refused
probe='{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"e2e-probe","namespace":"'$GPUOP_NS'"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"x","env":[{"name":"E2E_REJECT","value":"1"}]}]}}}}'
wait_for 30 bash -c "! kubectl --kubeconfig '$KUBECONFIG' create --dry-run=server -f - <<<'$probe' >/dev/null 2>&1"
gpuop_start --leader-elect=false --metrics-addr "127.0.0.1:$MP"
kc apply -f "$GPUOP_SRC/deploy/sample-gpupolicy.yaml" >/dev/null
POLICY=$(kc get gpupolicies -o jsonpath='{.items[0].metadata.name}')

log "a clean policy: every operand runs, Ready=True"
wait_for 90 bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' get gpupolicy '$POLICY' -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}')\" = True ]"
log "two independent rejections: PATCHes and status writes follow the backoff"
kc patch gpupolicy "$POLICY" --type=json -p '[
  {"op":"add","path":"/spec/gfd/env","value":[{"name":"E2E_REJECT","value":"1"}]},
  {"op":"add","path":"/spec/dcgmExporter/env","value":[{"name":"E2E_REJECT","value":"1"}]}]' >/dev/null
wait_for 60 bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' get gpupolicy '$POLICY' -o jsonpath='{.status.conditions[?(@.type==\"Reconciled\")].status}')\" = False ]"
a0=$(metric gpuop_daemonset_applies_total)
w0=$(metric gpuop_status_writes_total)
l0=$(grep -c 'apply of DaemonSet gpuop-dcgm-exporter failed' "$GPUOP_LOG" || true)
sleep 20 # the window measured (a rate, not a wait for a condition)
a1=$(metric gpuop_daemonset_applies_total)
w1=$(metric gpuop_status_writes_total)
l1=$(grep -c 'apply of DaemonSet gpuop-dcgm-exporter failed' "$GPUOP_LOG" || true)
log "in 20 s: $((a1 - a0)) applies, $((w1 - w0)) status writes, $((l1 - l0)) log lines of the dcgm rejection"
# Backoff 100 ms doubling: at most 8 retries of each of the two in 20 s (before the fix: 20 applies and 7 status writes).
(((a1 - a0) <= 16)) || fail "$((a1 - a0)) applies in 20 s: the backoff is bypassed"
(((w1 - w0) <= 2)) || fail "$((w1 - w0)) status writes in 20 s for an unchanged failure"
(((l1 - l0) <= 1)) || fail "the same rejection logged $((l1 - l0)) times in 20 s"
assert_eq "gpu-feature-discovery,dcgm-exporter" "$(gp_jq "$POLICY" '[.status.operands[] | select(.apply == "Failed") | .name] | join(",")')" "operands refused"
assert_eq "Current" "$(operand_field "$POLICY" device-plugin apply)" "device plugin applied"
assert_eq "Blocked" "$(operand_field "$POLICY" operator-validator apply)" "validator held back by gfd"

kc patch gpupolicy "$POLICY" --type=json -p '[
  {"op":"remove","path":"/spec/gfd/env"},
  {"op":"remove","path":"/spec/dcgmExporter/env"}]' >/dev/null
wait_for 60 bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' get gpupolicy '$POLICY' -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}')\" = True ]"
tk_gen=$(ds_json container-toolkit | jq -r .metadata.generation)
dp_gen=$(ds_json device-plugin | jq -r .metadata.generation)

log "the toolkit refused by the API server, a device-plugin change, one spec problem"
kc patch gpupolicy "$POLICY" --type=merge -p '{"spec":{
  "toolkit":{"env":[{"name":"E2E_REJECT","value":"1"}]},
  "devicePlugin":{"env":[{"name":"E2E_MARK","value":"new"}]},
  "driver":{"resources":{"limits":{"bad name!":"1"}}}}}' >/dev/null
wait_for 60 bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' get gpupolicy '$POLICY' -o jsonpath='{.status.conditions[?(@.type==\"Reconciled\")].reason}')\" = ApplyFailed ]"
msg=$(gp_cond "$POLICY" Reconciled message)
case "$msg" in *"gpuop-container-toolkit was not applied"*) ;; *) fail "Reconciled does not name the rejected toolkit: $msg" ;; esac
case "$msg" in *"bad name!"*) ;; *) fail "Reconciled hides the spec problem: $msg" ;; esac
case "$msg" in *"gpuop-device-plugin was not created or changed"*) ;; *) fail "Reconciled does not say the device plugin was held back: $msg" ;; esac
assert_eq "Failed" "$(operand_field "$POLICY" container-toolkit apply)" "toolkit apply state"
for op in device-plugin gpu-feature-discovery dcgm-exporter operator-validator; do
	assert_eq "Blocked" "$(operand_field "$POLICY" "$op" apply)" "$op apply state"
done
assert_eq "Current" "$(operand_field "$POLICY" driver apply)" "driver apply state"
assert_eq "False" "$(gp_cond "$POLICY" Ready status)" "Ready while the toolkit is not on the spec"
assert_eq "OperandsNotApplied" "$(gp_cond "$POLICY" Ready reason)" "Ready reason"
assert_eq "notReady" "$(gp_jq "$POLICY" .status.state)" "state"
# the existing DaemonSets stay as they were: not deleted, not changed
assert_eq "$tk_gen" "$(ds_json container-toolkit | jq -r .metadata.generation)" "toolkit DaemonSet untouched"
assert_eq "$dp_gen" "$(ds_json device-plugin | jq -r .metadata.generation)" "device-plugin DaemonSet not changed"
assert_eq "" "$(ds_json device-plugin | jq -r '.spec.template.spec.containers[0].env[]? | select(.name == "E2E_MARK") | .value')" "device-plugin change held back"
assert_eq "7" "$(kc -n "$GPUOP_NS" get ds -o name | wc -l | tr -d ' ')" "no DaemonSet deleted (the MPS daemon's included)"

kc patch gpupolicy "$POLICY" --type=json -p '[
  {"op":"remove","path":"/spec/toolkit/env"},
  {"op":"remove","path":"/spec/driver/resources"}]' >/dev/null
wait_for 60 bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' get gpupolicy '$POLICY' -o json | jq -r '.status.operands[] | select(.name == \"device-plugin\") | .apply')\" = Current ]"
assert_eq "new" "$(ds_json device-plugin | jq -r '.spec.template.spec.containers[0].env[]? | select(.name == "E2E_MARK") | .value')" "device-plugin change applied once the toolkit is"

log "the policy fixed: every DaemonSet on the spec, Ready again"
wait_for 90 bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' get gpupolicy '$POLICY' -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}')\" = True ]"
assert_eq "True" "$(gp_cond "$POLICY" Reconciled status)" "Reconciled"
for op in "${OPERANDS[@]}"; do
	assert_eq "Current" "$(operand_field "$POLICY" "$op" apply)" "$op apply state"
done

gpuop_stop
