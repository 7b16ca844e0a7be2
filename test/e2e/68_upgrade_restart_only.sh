#!/usr/bin/env bash
# End-to-end: a driver template change that leaves the install
# configuration alone restarts the driver pods without evicting anything
# (issue 37; docs/upgrade.md "A restart without evictions", the GPU
# Operator's restart-only path and DRIVER_CONFIG_DIGEST).
#   three kwok GPU nodes, a bare GPU pod on each (no controller: a full
#   upgrade could never evict it, gpuPodDeletion.force is false, and would
#   fail the first node) and waitForCompletion selecting them (a full
#   upgrade would wait for ever); then
#     spec.daemonsets.tolerations gains one (what a gpuop upgrade that
#     only changes labels does too), then spec.daemonsets.labels -> each
#     time every driver pod is replaced, node by node, with the same
#     DRIVER_CONFIG_DIGEST; no GPU pod is deleted or evicted, no node
#     fails, every node ends upgrade-done and uncordoned;
#   then X -> Y -> X: a new version with autoUpgrade false (no node moves),
#     then the old version back with autoUpgrade true -> the pods on X are
#     current (their controller revision is the DaemonSet's newest again,
#     the GPU Operator's "in sync"): no node is cordoned, no driver pod
#     replaced, every node upgrade-done;
#   then a new version (the digest changes) -> a full upgrade: the first
#     node waits for its job.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
source "$(dirname "$0")/66_driver_upgrade_lib.bash"
on_exit 'gpuop_kill; gpuop_uninstall'

OLD=580.95.05
NEW=595.91.07
N=3
JOB=upgrade-e2e-job

up_begin upgrade-restart upr "$N"
up_go upgrade-restart "$OLD" "{maxParallelUpgrades: 1, waitForCompletion: {podSelector: \"$JOB=true\"}}" "$N"
for ((i = 1; i <= N; i++)); do up_job "$WL" "job-$i" "$P-$i" "$JOB"; done
jobs_ready() { [[ $(kc -n "$WL" get pods -o json | jq '[.items[] | select(.status.phase == "Running")] | length') == "$N" ]]; }
wait_for 60 jobs_ready
uids=$(kc -n "$WL" get pods -o json | jq -r '[.items[].metadata.uid] | sort | join(",")')

# driver_pods: "name digest-env digest-label" of every live driver pod
driver_pods() {
	kc -n "$GPUOP_NS" get pods -l app.kubernetes.io/component=driver -o json | jq -r '.items[]
		| select(.metadata.deletionTimestamp == null)
		| "\(.metadata.name) \(.spec.containers[0].env // [] | map(select(.name == "DRIVER_CONFIG_DIGEST")) | .[0].value // "-") \(.metadata.labels["gpuop.dev/driver-config-digest"] // "-")"' | sort
}
before=$(driver_pods)
digest=$(awk 'NR == 1 {print $2}' <<<"$before")
[[ $digest =~ ^[0-9]+$ ]] || fail "no DRIVER_CONFIG_DIGEST on the driver pods: $before"
log "driver pods at digest $digest"

up_record restart
# replaced: every node's driver pod is a new one, Ready, at the digest, the
# node upgrade-done and schedulable
replaced() {
	local now i
	now=$(driver_pods)
	[[ $(wc -l <<<"$now") == "$N" ]] || return 1
	while read -r name d l; do
		grep -q "^$name " <<<"$1" && return 1
		[[ $d == "$digest" && $l == "$digest" ]] || {
			echo "pod $name at digest $d / $l, want $digest"
			return 1
		}
	done <<<"$now"
	for ((i = 1; i <= N; i++)); do
		up_at "$P-$i" "$OLD" && [[ $(up_state "$P-$i") == upgrade-done && -z $(up_unschedulable "$P-$i") ]] || {
			echo "$(up_states "$P"); status: $(up_waiting)"
			return 1
		}
	done
}
kc patch gpupolicy upgrade-restart --type=merge -p \
	'{"spec":{"daemonsets":{"tolerations":[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"},{"key":"example.com/maintenance","operator":"Exists"}]}}}' >/dev/null
wait_for 240 replaced "$before"
log "tolerations: every driver pod replaced at the same digest"
before=$(driver_pods)
kc patch gpupolicy upgrade-restart --type=merge -p '{"spec":{"daemonsets":{"labels":{"team":"gpu-infra"}}}}' >/dev/null
wait_for 240 replaced "$before"
log "labels: every driver pod replaced at the same digest"
assert_eq "$uids" "$(kc -n "$WL" get pods -o json | jq -r '[.items[].metadata.uid] | sort | join(",")')" "the GPU job pods"
assert_eq "null" "$(up_status '.failed')" "status.upgrade.failed"
stop_spawned record-restart
gone=$(jq -c --arg ns "$WL" 'select(.kind == "Pod" and .ns == $ns and (.deleting or .ev == "DELETED"))' "$E2E_TMP/restart.jsonl")
assert_eq "" "$gone" "a GPU job pod deleted during the restarts"
evicted=$(grep -c 'upgrade: node .*: evict' "$GPUOP_LOG" || true)
assert_eq 0 "$evicted" "evictions in gpuop's log"

log "X -> Y -> X: no node upgrades on the way back"
before=$(driver_pods)
gen_before=$(kc -n "$GPUOP_NS" get ds -l app.kubernetes.io/component=driver -o jsonpath='{.items[0].metadata.annotations.deprecated\.daemonset\.template\.generation}')
kc patch gpupolicy upgrade-restart --type=merge -p "{\"spec\":{\"driver\":{\"version\":\"$NEW\",\"upgradePolicy\":{\"autoUpgrade\":false}}}}" >/dev/null
at_gen() { [[ $(kc -n "$GPUOP_NS" get ds -l app.kubernetes.io/component=driver -o jsonpath='{.items[0].metadata.annotations.deprecated\.daemonset\.template\.generation}') == "$1" ]]; }
wait_for 60 at_gen $((gen_before + 1))
up_record back
kc patch gpupolicy upgrade-restart --type=merge -p "{\"spec\":{\"driver\":{\"version\":\"$OLD\",\"upgradePolicy\":{\"autoUpgrade\":true}}}}" >/dev/null
wait_for 60 at_gen $((gen_before + 2))
all_done() { [[ $(up_status ".revision == $((gen_before + 2)) and .counts[\"upgrade-done\"] == $N") == true ]] || {
	up_status '{revision, counts}' | tr -d '\n '
	return 1
}; }
wait_for 60 all_done
assert_eq "$before" "$(driver_pods)" "the driver pods after X -> Y -> X"
stop_spawned record-back
cordons=$(jq -c 'select(.kind == "Node" and .unschedulable)' "$E2E_TMP/back.jsonl")
assert_eq "" "$cordons" "a node cordoned on the way back"

log "a new version: the full upgrade, which waits for the first node's job"
kc patch gpupolicy upgrade-restart --type=json -p "[{\"op\": \"replace\", \"path\": \"/spec/driver/version\", \"value\": \"$NEW\"}]" >/dev/null
waits() { [[ $(up_state "$P-1") == wait-for-jobs-required ]] || {
	up_states "$P"
	return 1
}; }
wait_for 120 waits
gpuop_stop
log "ok"
