#!/usr/bin/env bash
# End-to-end: why the DaemonSet controller makes no pod (issue 13 §6b).
#   gpuop applies the operands' ServiceAccount itself (server-side apply,
#   owned by the GpuPolicy);
#   the ServiceAccount deleted and its re-creation blocked by a quota of 0
#   ServiceAccounts -> on a new node the DaemonSet controller cannot create
#   pods; the Missing finding and the operand's status entry name the
#   controller's reason (its FailedCreate Event), and Reconciled says the
#   ServiceAccount was refused. (The device plugin's pods run as it; the
#   driver's, the toolkit's and the validator's have accounts of their own
#   from deploy/10-rbac.yaml.)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
on_exit 'gpuop_kill; kc -n "$GPUOP_NS" delete resourcequota e2e-no-sa --ignore-not-found >/dev/null 2>&1; gpuop_uninstall'

OPERANDS=(driver container-toolkit device-plugin gpu-feature-discovery dcgm-exporter operator-validator)
labels="--label nvidia.com/gpu.present=true"
for op in "${OPERANDS[@]}"; do labels="$labels --label nvidia.com/gpu.deploy.$op=true"; done
A=$(unique gpu-a)
B=$(unique gpu-b)
# shellcheck disable=SC2086
lab_node "$A" $labels

gpuop_install
gpuop_start --leader-elect=false
kc apply -f "$GPUOP_SRC/deploy/sample-gpupolicy.yaml" >/dev/null
POLICY=$(kc get gpupolicies -o jsonpath='{.items[0].metadata.name}')
UID_=$(kc get gpupolicy "$POLICY" -o jsonpath='{.metadata.uid}')

log "gpuop applies the operands' ServiceAccount, owned by the policy"
wait_for 60 kc -n "$GPUOP_NS" get serviceaccount gpuop-operand
sa=$(kc -n "$GPUOP_NS" get serviceaccount gpuop-operand -o json --show-managed-fields)
assert_eq "$UID_" "$(jq -r '.metadata.ownerReferences[0].uid' <<<"$sa")" "owner of the ServiceAccount"
assert_eq "gpuop" "$(jq -r '[.metadata.managedFields[] | select(.operation == "Apply")][0].manager' <<<"$sa")" "field manager"
assert_eq "false" "$(jq -r '.automountServiceAccountToken' <<<"$sa")" "no token mounted"
wait_for 90 bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' get gpupolicy '$POLICY' -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}')\" = True ]"

log "ServiceAccount deleted, its re-creation blocked by a quota; a new node"
# (the lab runs no quota controller: its status is written here)
kc -n "$GPUOP_NS" create quota e2e-no-sa --hard=count/serviceaccounts=0 >/dev/null
kc -n "$GPUOP_NS" patch quota e2e-no-sa --subresource=status --type=merge \
	-p '{"status":{"hard":{"count/serviceaccounts":"0"},"used":{"count/serviceaccounts":"0"}}}' >/dev/null
kc -n "$GPUOP_NS" delete serviceaccount gpuop-operand >/dev/null
# shellcheck disable=SC2086
lab_node "$B" $labels

# finding_msg NODE OPERAND: the message of that node's Missing finding.
finding_msg() {
	kc get gpupolicy "$POLICY" -o json | jq -r --arg n "$1" --arg o "$2" \
		'[.status.nodes[]? | select(.name == $n) | .findings[] | select(.operand == $o and .kind == "Missing")][0].message // ""'
}
wait_for 90 bash -c "kubectl --kubeconfig '$KUBECONFIG' get gpupolicy '$POLICY' -o json | jq -e --arg n '$B' '[.status.nodes[]? | select(.name == \$n) | .findings[] | select(.operand == \"device-plugin\" and (.message | test(\"DaemonSet controller says: FailedCreate\")))] | length > 0' >/dev/null"
msg=$(finding_msg "$B" device-plugin)
log "finding: $msg"
case "$msg" in *serviceaccount*gpuop-operand*) ;; *) fail "the finding does not name the controller's reason: $msg" ;; esac
warn=$(gp_jq "$POLICY" '.status.operands[] | select(.name == "device-plugin") | .controllerWarning // ""')
case "$warn" in FailedCreate:*serviceaccount*) ;; *) fail "the operand's status entry lacks the controller's reason: '$warn'" ;; esac
rec=$(gp_cond "$POLICY" Reconciled message)
case "$rec" in *"ServiceAccount gpuop-operand was not applied"*) ;; *) fail "Reconciled does not say the ServiceAccount was refused: $rec" ;; esac
# the node that has its pods has no finding
assert_eq "0" "$(gp_jq "$POLICY" "[.status.nodes[]? | select(.name == \"$A\")] | length")" "node A complete"

gpuop_stop
