#!/usr/bin/env bash
# End-to-end: the Events of a rollout (issue 16 §1).
#   20 GPU nodes, the policy applied: the DaemonSets roll out, and while
#     they do the status shows PodNotCreated/PodPending at once, but not one
#     Warning Event is posted (those findings are transient and pass within
#     the grace period), nor any "...Cleared";
#   one node left broken (its operator-validator pod in ImagePullBackOff):
#     exactly one Warning, ImagePullFailed, naming the node, once the grace
#     has passed; nothing else.
# The rollout runs with the default grace (60 s); for the broken node the
# policy's grace is then set short (GRACE s) so the test stays fast.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
on_exit 'gpuop_kill; gpuop_uninstall'

NODES=${E2E_EVENTS_NODES:-20}
GRACE=5
OPERANDS=(driver container-toolkit device-plugin gpu-feature-discovery dcgm-exporter operator-validator)
labels="--label nvidia.com/gpu.present=true"
for op in "${OPERANDS[@]}"; do labels="$labels --label nvidia.com/gpu.deploy.$op=true"; done

PREFIX=$(unique ev)
log "$NODES GPU nodes ($PREFIX-NN)"
pids=()
for ((i = 0; i < NODES; i++)); do
	# shellcheck disable=SC2086
	lab_node "$PREFIX-$(printf %02d "$i")" $labels &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done

gpuop_install
gpuop_start --metrics-addr 0 --health-addr 0
POLICY=$(unique events)
kc create --dry-run=client -o json -f "$GPUOP_SRC/deploy/sample-gpupolicy.yaml" |
	jq --arg n "$POLICY" \
		'.metadata.name = $n | del(.spec.findings.eventGracePeriodSeconds)' >"$E2E_TMP/policy.json"
since=$(date -u +%Y-%m-%dT%H:%M:%SZ)
kc apply -f "$E2E_TMP/policy.json" >/dev/null
export POLICY

# events TYPE: the Events of the policy of that type, one JSON per line
# {reason, count, message}.
events() {
	kc -n default get events --field-selector "involvedObject.name=$POLICY,type=$1" -o json |
		jq -c '.items[] | {reason, count, message}'
}
# summary FIELD of the status
summary() { kc get gpupolicy "$POLICY" -o jsonpath="{.status.summary.$1}"; }

log "rollout: the status shows transient findings at once"
# The first status after the DaemonSets exist shows pods not yet created or
# pending; the test only needs to see one such moment, not to race it.
saw_transient=0
for ((i = 0; i < 600; i++)); do
	n=$(kc get gpupolicy "$POLICY" -o json | jq '[.status.nodes[]?.findings[]? | select(.reason == "PodNotCreated" or .reason == "PodPending" or .reason == "DaemonSetAbsent")] | length')
	if ((n > 0)); then
		saw_transient=1
		break
	fi
	[[ $(summary completeNodes) == "$NODES" ]] && break
	sleep 0.2
done
log "transient findings seen in the status: $saw_transient"

log "rollout completes on $NODES nodes"
wait_for 300 bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' get gpupolicy $POLICY -o jsonpath='{.status.summary.completeNodes}')\" = $NODES ]"
done_at=$(date +%s)
# Complete: no finding is left in its grace, so no Event can come later;
# give one in flight a moment.
sleep_until=$((done_at + 10))
while (($(date +%s) < sleep_until)); do sleep 1; done
warnings=$(events Warning)
normals=$(events Normal)
[[ -z $warnings ]] || fail "a clean rollout posted Warning Events: $warnings"
[[ -z $normals ]] || fail "a clean rollout posted Normal Events: $normals"
log "clean rollout: 0 Warning, 0 Normal Events (gpuop log: $GPUOP_LOG)"

log "grace ${GRACE}s for the rest"
kc patch gpupolicy "$POLICY" --type merge -p "{\"spec\":{\"findings\":{\"eventGracePeriodSeconds\":$GRACE}}}" >/dev/null
wait_for 60 bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' get gpupolicy $POLICY -o jsonpath='{.status.observedGeneration}')\" = 2 ]"
BROKEN=$PREFIX-07
log "operator-validator on $BROKEN into ImagePullBackOff"
"$GPUOP_SRC/test/lab/pod-state" "$BROKEN" "$GPUOP_NS" gpuop-operator-validator imagepull
broke_at=$(date +%s)
wait_for 60 bash -c "kubectl --kubeconfig '$KUBECONFIG' get gpupolicy $POLICY -o json | jq -e --arg n '$BROKEN' '[.status.nodes[]? | select(.name == \$n) | .findings[] | select(.reason == \"ImagePullFailed\")] | length == 1' >/dev/null"
log "the status shows ImagePullFailed on $BROKEN at once"
# Not before the grace ...
[[ -z $(events Warning) ]] || (($(date +%s) - broke_at >= GRACE)) ||
	fail "Warning posted before the grace period ended: $(events Warning)"
# ... but after it, without anything else changing (the recheck).
wait_for $((GRACE + 120)) bash -c "[ -n \"\$(kubectl --kubeconfig '$KUBECONFIG' -n default get events --field-selector involvedObject.name=$POLICY,type=Warning -o name)\" ]"
posted_at=$(date +%s)
(($(date +%s) - broke_at >= GRACE)) || fail "Warning came before the grace of $GRACE s"
log "Warning posted $((posted_at - broke_at)) s after the break"
# ... and soon after it: the policy was reconciled again when the grace
# ended (nothing else changed), not at some later event
((posted_at - broke_at < GRACE + 60)) || fail "Warning only $((posted_at - broke_at)) s after the break"
# Nothing more comes: wait another grace and then some.
while (($(date +%s) < posted_at + GRACE + 10)); do sleep 1; done
warnings=$(events Warning)
log "Warnings: $warnings"
assert_eq 1 "$(jq -s 'length' <<<"$warnings")" "Warning Event objects for one broken node"
assert_eq 1 "$(jq -s 'map(.count) | add' <<<"$warnings")" "Warning count for one broken node"
assert_eq ImagePullFailed "$(jq -r .reason <<<"$warnings")" "Warning reason"
jq -e --arg n "$BROKEN" '.message | contains($n) and contains("operator-validator")' <<<"$warnings" >/dev/null ||
	fail "the Warning does not name the node and the operand: $warnings"
[[ -z $(events Normal) ]] || fail "Normal Events without a cleared posted finding: $(events Normal)"

log "the node recovers: one ImagePullFailedCleared"
"$GPUOP_SRC/test/lab/pod-state" "$BROKEN" "$GPUOP_NS" gpuop-operator-validator running
wait_for 60 bash -c "kubectl --kubeconfig '$KUBECONFIG' -n default get events --field-selector involvedObject.name=$POLICY,type=Normal -o json | jq -e '[.items[] | select(.reason == \"ImagePullFailedCleared\")] | length == 1' >/dev/null"
assert_eq 1 "$(events Warning | jq -s 'length')" "Warnings after recovery"
assert_eq 1 "$(events Normal | jq -s 'length')" "Normal Events after recovery"
gpuop_stop
log "ok (since $since)"
