#!/usr/bin/env bash
# End-to-end: a driver upgrade stops at the first bad node and says which
# and why (issue 22, docs/upgrade.md).
#   eight kwok GPU nodes, one GPU job each (waitForCompletion selects them:
#   the first node waits for its job, which holds it still while the test
#   prepares it); a version change; the first node's new driver pod is
#   forced into CrashLoopBackOff (test/lab/pod-state) ->
#     that node is upgrade-failed and stays cordoned, the other seven keep
#     the old driver and stay schedulable and never start, status.upgrade
#     .failed and one DriverUpgradeFailed Event name the node, the version
#     and the reason;
#   onFailure: rollback set then (the policy changes, the driver's
#   template does not: the failure stays live): the node gets the old
#   driver back from the rollback DaemonSet, Ready,
#   uncordoned, every deploy label true again (its dependents restored, the
#   driver's own label never paused); the failed version stays in status;
#   still no other node starts. The whole timeline holds the invariants
#   (upgrade_check.py), and one node started in it.
#   A new version then: the rolled-back node upgrades too (the old pod off
#   before the new one comes), its rollback label and the rollback
#   DaemonSet go, every node ends on it.
#
# kwok makes a bound pod Ready at once (test/lab/up, stage pod-ready), so
# the new driver pod would be Ready before pod-state could break it. The
# test holds it instead: the first node's allocatable pods go to 0 while it
# waits for its job, so the DaemonSet's new pod stays unscheduled; the test
# gives it a pod IP (kwok then leaves it alone, as it does every pod with
# an IP), gives the node its pods back, and once the scheduler has bound the
# pod, pod-state makes it crash-loop.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
source "$(dirname "$0")/66_driver_upgrade_lib.bash"
on_exit 'gpuop_kill; gpuop_uninstall'

OLD=580.95.05
NEW=595.91.07
N=8
JOB=upgrade-e2e-job

up_no_other_gpu_nodes
gpuop_install
make_ns WL upgrade-fail
P=$(unique upf)

up_nodes "$P" "$N"
up_policy upgrade-fail "$OLD" "{maxParallelUpgrades: 1, waitForCompletion: {podSelector: \"$JOB=true\"}}"
gpuop_start --leader-elect=false
wait_for 180 up_all_at "$P" "$N" "$OLD"
DS=$(kc -n "$GPUOP_NS" get ds -l app.kubernetes.io/component=driver -o jsonpath='{.items[0].metadata.name}')

log "a GPU job on each node"
for ((i = 1; i <= N; i++)); do up_job "$WL" "job-$i" "$P-$i" "$JOB"; done
jobs_ready() { [[ $(kc -n "$WL" get pods -o json | jq '[.items[] | select(.status.phase == "Running")] | length') == "$N" ]]; }
wait_for 60 jobs_ready

# pods_for NODE: the driver pods bound to NODE or waiting to be scheduled
# there (the DaemonSet's node affinity), as "name image nodeName podIP waiting"
pods_for() {
	kc -n "$GPUOP_NS" get pods -l app.kubernetes.io/component=driver -o json | jq -r --arg n "$1" '.items[]
		| select(.metadata.deletionTimestamp == null)
		| select(.spec.nodeName == $n or ((.spec.nodeName // "") == "" and
			any(.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[]?.matchFields[]?;
				.key == "metadata.name" and (.values | index($n)))))
		| "\(.metadata.name) \(.spec.containers[0].image) \(.spec.nodeName // "-") \(.status.podIP // "-") \(.status.containerStatuses[0].state.waiting.reason // "-")"'
}
set_pods() { kc patch node "$1" --subresource=status --type=merge -p "{\"status\":{\"allocatable\":{\"pods\":\"$2\"}}}" >/dev/null; }
# hold_step NODE: one step of playing the node's kubelet for its driver
# pods while the node's allocatable pods are 0: a new-version pod waiting to
# be scheduled gets an IP, then the node its pods back; once bound it is
# made to crash-loop. An old-version pod (the rollback) is let through.
hold_step() {
	local f=$1 name image node ip waiting
	while read -r name image node ip waiting; do
		[[ -n $name ]] || continue
		if [[ $node == - ]]; then
			if [[ $image == *":$NEW-"* && $ip == - ]]; then
				kc -n "$GPUOP_NS" patch pod "$name" --subresource=status --type=merge -p \
					"{\"status\":{\"phase\":\"Pending\",\"podIP\":\"10.254.0.9\",\"podIPs\":[{\"ip\":\"10.254.0.9\"}],\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\",\"reason\":\"ContainersNotReady\"}]}}" >/dev/null
				log "new driver pod $name held: an IP, not Ready"
			fi
			set_pods "$f" 110
		elif [[ $image == *":$NEW-"* && $ip != - && $waiting != CrashLoopBackOff ]]; then
			"$GPUOP_SRC/test/lab/pod-state" "$f" "$GPUOP_NS" "$DS" crashloop >/dev/null
			log "new driver pod $name on $f: CrashLoopBackOff"
		fi
	done < <(pods_for "$f")
}

up_record fail
kc patch gpupolicy upgrade-fail --type=json -p "[{\"op\": \"replace\", \"path\": \"/spec/driver/version\", \"value\": \"$NEW\"}]" >/dev/null

log "the first node waits for its job"
first() {
	grep -q . <<<"$(kc get nodes -l "upgrade-e2e=$P,$UP_STATE=wait-for-jobs-required" -o name)" || {
		up_states "$P"
		return 1
	}
}
wait_for 120 first
F=$(kc get nodes -l "upgrade-e2e=$P,$UP_STATE=wait-for-jobs-required" -o jsonpath='{.items[0].metadata.name}')
assert_eq true "$(up_unschedulable "$F")" "$F cordoned before it waits for jobs"
set_pods "$F" 0
on_exit "set_pods '$F' 110"
i=${F##*-}
kc -n "$WL" patch pod "job-$i" --subresource=status --type=merge -p \
	'{"status":{"phase":"Succeeded","conditions":[{"type":"Ready","status":"False","reason":"PodCompleted"}],"containerStatuses":[{"name":"train","image":"registry.example/train:1","imageID":"","ready":false,"restartCount":0,"state":{"terminated":{"exitCode":0,"reason":"Completed"}}}]}}' >/dev/null
log "job-$i on $F completed; its new driver is made to crash-loop"

failed() {
	hold_step "$F"
	[[ $(up_state "$F") == upgrade-failed ]] || {
		echo "$(up_states "$P"); driver pods for $F: $(pods_for "$F" | tr '\n' ';')"
		return 1
	}
}
wait_for 180 failed

log "the upgrade stopped at $F; the other seven keep $OLD and stay schedulable"
assert_eq true "$(up_unschedulable "$F")" "$F stays cordoned"
others_old() {
	local n
	for ((j = 1; j <= N; j++)); do
		n=$P-$j
		[[ $n == "$F" ]] && continue
		up_at "$n" "$OLD" || fail "$n's driver changed: $(up_driver "$n")"
		[[ -z $(up_unschedulable "$n") ]] || fail "$n cordoned though the upgrade stopped at $F"
		case $(up_state "$n") in upgrade-required | "") ;; *) fail "$n in state $(up_state "$n") though the upgrade stopped at $F" ;; esac
	done
}
others_old
fail_status() { [[ $(up_status '.failed.node // ""') == "$F" ]]; }
wait_for 30 fail_status
assert_eq "$NEW" "$(up_status '.failed.version')" "status.upgrade.failed.version"
grep -q CrashLoopBackOff <<<"$(up_status '.failed.reason')" || fail "status.upgrade.failed.reason: $(up_status '.failed.reason')"
grep -qx upgrade-failed <<<"$(up_status ".nodes[]? | select(.name == \"$F\") | .state")" ||
	fail "status.upgrade.nodes does not list $F as upgrade-failed: $(up_status '.nodes')"
events() {
	kc get events -A -o json | jq -r --arg f "$F" --arg v "$NEW" \
		'[.items[] | select(.reason == "DriverUpgradeFailed" and .involvedObject.kind == "GpuPolicy")
			| select((.message | contains($f)) and (.message | contains($v)))] | length'
}
events_posted() { (($(events) >= 1)); }
wait_for 30 events_posted
log "Event: $(kc get events -A -o json | jq -r --arg f "$F" '[.items[] | select(.reason == "DriverUpgradeFailed" and (.message | contains($f)))][0].message')"
assert_eq 1 "$(events)" "one DriverUpgradeFailed Event naming $F and $NEW"

log "onFailure: rollback"
set_pods "$F" 0
kc patch gpupolicy upgrade-fail --type=merge -p '{"spec":{"driver":{"upgradePolicy":{"onFailure":"rollback"}}}}' >/dev/null
rolled_back() {
	hold_step "$F"
	up_at "$F" "$OLD" && [[ -z $(up_unschedulable "$F") ]] || {
		echo "$(up_states "$P"); driver pods for $F: $(pods_for "$F" | tr '\n' ';')"
		return 1
	}
}
wait_for 180 rolled_back
set_pods "$F" 110
log "$F is back at $OLD, uncordoned; state $(up_state "$F")"
assert_eq "$DS" "$(kc get node "$F" -o jsonpath='{.metadata.labels.gpuop\.dev/driver-rollback}')" "$F's rollback label"
kc -n "$GPUOP_NS" get ds "$DS-rollback" >/dev/null || fail "no rollback DaemonSet $DS-rollback"
# every deploy label of the node "true" again: the dependents restored
# after the pause, the driver's own label never paused
deps_restored() {
	[[ $(kc get node "$F" -o json | jq -r '[.metadata.labels | to_entries[] | select(.key | startswith("nvidia.com/gpu.deploy.")) | .value] | unique | join(",")') == true ]]
}
wait_for 30 deps_restored
assert_eq upgrade-failed "$(up_state "$F")" "$F stays upgrade-failed after the rollback"
assert_eq "$F" "$(up_status '.failed.node // ""')" "status.upgrade.failed.node after the rollback"
assert_eq "$NEW" "$(up_status '.failed.version')" "the failed version stays in status after the rollback"
said_rolled_back() {
	grep -q "rolled back" <<<"$(up_status ".nodes[]? | select(.name == \"$F\") | .waitingFor")" || {
		up_status '.nodes'
		return 1
	}
}
wait_for 30 said_rolled_back
others_old

up_check fail --nodes-prefix "$P-"
assert_eq 1 "$(jq .nodes_started "$E2E_TMP/fail.stats.json")" "one node started in the whole timeline"

log "a new version: every node gets it, the rolled-back one too"
NEWER=595.91.08
kc -n "$WL" delete pods --all --wait=false >/dev/null
kc patch gpupolicy upgrade-fail --type=merge -p "{\"spec\":{\"driver\":{\"version\":\"$NEWER\",\"upgradePolicy\":{\"maxParallelUpgrades\":0,\"maxUnavailable\":\"100%\",\"waitForCompletion\":null}}}}" >/dev/null
newer_everywhere() {
	up_all_at "$P" "$N" "$NEWER" && [[ $(up_state "$F") == upgrade-done && -z $(up_unschedulable "$F") ]] || {
		up_states "$P"
		return 1
	}
}
wait_for 300 newer_everywhere
assert_eq "" "$(kc get node "$F" -o jsonpath='{.metadata.labels.gpuop\.dev/driver-rollback}')" "$F's rollback label after the upgrade"
rollback_ds_gone() { ! kc -n "$GPUOP_NS" get ds "$DS-rollback" >/dev/null 2>&1; }
wait_for 60 rollback_ds_gone

gpuop_uninstall
gpuop_stop
log "ok"
