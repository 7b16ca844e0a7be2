#!/usr/bin/env bash
# End-to-end: of two GpuPolicies created in the same second (equal
# creationTimestamps), the first by name is active (SPEC, issue 13 §0):
# the controller marks the other ignored naming it, and `gpuop check`
# judges against it. Both are created by one kubectl call, the later name
# first; a try whose timestamps differ (a second boundary fell between
# them) is deleted and made again.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
on_exit 'gpuop_kill; gpuop_uninstall'

gpuop_install
gpuop_start --metrics-addr 0 --health-addr 0
SUFFIX=$(unique tie)
A=a-$SUFFIX
B=b-$SUFFIX
ts() { kc get gpupolicy "$1" -o jsonpath='{.metadata.creationTimestamp}'; }
tied=
for try in 1 2 3 4 5; do
	kc apply -f - >/dev/null <<EOF
apiVersion: gpuop.dev/v1alpha1
kind: GpuPolicy
metadata: {name: $B}
spec: {}
---
apiVersion: gpuop.dev/v1alpha1
kind: GpuPolicy
metadata: {name: $A}
spec: {}
EOF
	if [ "$(ts "$A")" = "$(ts "$B")" ]; then
		tied=1
		break
	fi
	log "try $try: creationTimestamps differ ($(ts "$B") / $(ts "$A")), again"
	kc delete gpupolicy "$A" "$B" --wait=true >/dev/null
done
[ -n "$tied" ] || fail "could not create two GpuPolicies in the same second in 5 tries"
log "$B and $A both created at $(ts "$A")"

state() { kc get gpupolicy "$1" -o jsonpath='{.status.state}'; }
export -f state kc
wait_for 60 bash -c "[ \"\$(state $B)\" = ignored ]"
wait_for 60 bash -c "[ -n \"\$(state $A)\" ] && [ \"\$(state $A)\" != ignored ]"
msg=$(gp_cond "$B" Ready message)
case "$msg" in *"\"$A\" is active"*) ;; *) fail "$B's Ready message does not name $A as active: $msg" ;; esac

CHECK_RC=0
out=$("$GPUOP_BIN" check --kubeconfig "$KUBECONFIG" --namespace "$GPUOP_NS" -o json) || CHECK_RC=$?
assert_eq "$A" "$(jq -r .policy <<<"$out")" "the policy gpuop check judges against"
# no GPU node at all in this test: nothing checked is not clean
assert_eq 0 "$(jq -r .summary.gpuNodes <<<"$out")" "gpuNodes"
assert_eq 1 "$CHECK_RC" "gpuop check exit code without any GPU node"

kc delete gpupolicy "$A" "$B" --wait=true >/dev/null
gpuop_stop
log "ok"
