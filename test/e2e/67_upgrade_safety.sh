#!/usr/bin/env bash
# End-to-end: NVIDIA's driver-upgrade safety rules on the lab (issue 37,
# docs/upgrade.md "Never lose a job"), in one upgrade of five kwok GPU
# nodes with drain.enable:
#   P-1  a bare pod labelled nvidia.com/gpu-driver-upgrade-drain.skip=true
#        (no controller: a drain that took it would fail, drain.force is
#        false) -> the drain passes it over, the node upgrades, the pod
#        runs on, the same pod;
#   P-2  labelled nvidia.com/gpu-driver-upgrade.skip=true -> never
#        cordoned (the whole timeline), its old driver kept,
#        status.upgrade.skipped names it;
#   P-3  a bare GPU pod (no controller, gpuPodDeletion.force false) -> never
#        evicted or deleted: pod deletion cannot take it, the drain cannot
#        either, the node is upgrade-failed and status.upgrade.failed names
#        the pod;
#   P-4, P-5  nvidia.com/gpu.deploy.driver=pre-installed (a host driver): not
#        managed, so two of five do not stall the 25 % maxUnavailable.
# Then the GpuPolicy is deleted with P-3 failed and cordoned (what helm
# uninstall does): gpuop lets every node go, no cordon, state label or
# gpuop annotation is left on any of them.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
source "$(dirname "$0")/66_driver_upgrade_lib.bash"
on_exit 'gpuop_kill; gpuop_uninstall'

OLD=580.95.05
NEW=595.91.07
N=5

up_begin upgrade-safety ups "$N"
kc label node "$P-2" nvidia.com/gpu-driver-upgrade.skip=true >/dev/null
kc label node "$P-4" "$P-5" nvidia.com/gpu.deploy.driver=pre-installed --overwrite >/dev/null
up_go upgrade-safety "$OLD" "{maxParallelUpgrades: 1, drain: {enable: true, timeoutSeconds: 120}}" 3
assert_eq "" "$(up_driver "$P-4")" "a driver pod on the pre-installed $P-4"

# bare_pod NS NAME NODE GPUS [LABEL]: a pod no controller owns
bare_pod() {
	kc -n "$1" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $2, labels: {${5:-app}: "true"}}
spec:
  nodeSelector: {kubernetes.io/hostname: $3}
  terminationGracePeriodSeconds: 1
  containers:
  - name: work
    image: registry.example/work:1
    resources: {limits: {nvidia.com/gpu: $4}}
EOF
}
bare_pod "$WL" protected "$P-1" 0 nvidia.com/gpu-driver-upgrade-drain.skip
bare_pod "$WL" bare-gpu "$P-3" 1
running() { [[ $(kc -n "$WL" get pod "$1" -o jsonpath='{.status.phase}') == Running ]]; }
wait_for 60 running protected
wait_for 60 running bare-gpu
uid_protected=$(kc -n "$WL" get pod protected -o jsonpath='{.metadata.uid}')
uid_bare=$(kc -n "$WL" get pod bare-gpu -o jsonpath='{.metadata.uid}')

up_record safety
kc patch gpupolicy upgrade-safety --type=json -p "[{\"op\": \"replace\", \"path\": \"/spec/driver/version\", \"value\": \"$NEW\"}]" >/dev/null

p3_failed() {
	[[ $(up_state "$P-3") == upgrade-failed ]] || {
		echo "$(up_states "$P"); status: $(up_waiting)"
		return 1
	}
}
wait_for 240 p3_failed
names_bare() { grep -q "$WL/bare-gpu" <<<"$(up_status '.failed.reason')"; }
wait_for 30 names_bare
log "$P-3 failed: $(up_status '.failed.reason')"
up_at "$P-1" "$NEW" || fail "$P-1 is not at $NEW: $(up_driver "$P-1")"
assert_eq upgrade-done "$(up_state "$P-1")" "$P-1's state"
up_at "$P-2" "$OLD" || fail "the skipped $P-2 is not at $OLD: $(up_driver "$P-2")"
assert_eq upgrade-required "$(up_state "$P-2")" "the skipped $P-2's state"
assert_eq "" "$(up_unschedulable "$P-2")" "the skipped $P-2 cordoned"
skipped() { [[ $(up_status '.skipped // [] | join(",")') == "$P-2" ]]; }
wait_for 30 skipped
grep -q 'no controller' <<<"$(up_status '.failed.reason')" || fail "status.upgrade.failed does not say why: $(up_status '.failed')"
assert_eq "$uid_protected" "$(kc -n "$WL" get pod protected -o jsonpath='{.metadata.uid}')" "the drain-skip pod"
running protected || fail "the drain-skip pod is not running"
assert_eq "$uid_bare" "$(kc -n "$WL" get pod bare-gpu -o jsonpath='{.metadata.uid}')" "the bare GPU pod"
running bare-gpu || fail "the bare GPU pod is not running"

log "the GpuPolicy deleted with $P-3 failed and cordoned"
kc delete gpupolicy upgrade-safety --wait=false >/dev/null
# gpuop's marks on a node: "STATE|UNSCHEDULABLE|gpuop.dev annotations"
marks() {
	kc get node "$1" -o json | jq -r --arg s "$UP_STATE" \
		'[.metadata.labels[$s] // "", (.spec.unschedulable // "" | tostring),
		  ([.metadata.annotations // {} | keys[] | select(startswith("gpuop.dev/driver-"))] | join(","))] | join("|")'
}
released() {
	local i
	for ((i = 1; i <= N; i++)); do
		[[ $(marks "$P-$i") == '||' ]] || {
			echo "$P-$i: $(marks "$P-$i")"
			return 1
		}
	done
}
wait_for 120 released
log "every node let go"

stop_spawned record-safety
# P-2 was never cordoned, the pods never deleted, over the whole timeline
cordoned=$(jq -c --arg n "$P-2" 'select(.kind == "Node" and .name == $n and .unschedulable)' "$E2E_TMP/safety.jsonl")
assert_eq "" "$cordoned" "the skipped $P-2 cordoned at some point"
gone=$(jq -c --arg a "$uid_protected" --arg b "$uid_bare" 'select(.kind == "Pod" and (.uid == $a or .uid == $b) and (.deleting or .ev == "DELETED"))' "$E2E_TMP/safety.jsonl")
assert_eq "" "$gone" "a protected pod deleted at some point"
gpuop_stop
log "ok"
