#!/usr/bin/env bash
# End-to-end: the rest of issue 37's "Test" cases on the lab (docs/upgrade.md
# "GPU pods, and what is never evicted", "The invariants", the failure
# rule), four kwok GPU nodes.
#   A mistyped spec.driver.version ("595.91,07": the validator refuses the
#        tag) -> Reconciled=False names spec.driver.version, the driver
#        DaemonSets keep their generation, no driver pod is replaced and no
#        node cordoned; the version fixed back starts nothing either.
#   Then one upgrade of all four nodes at once (maxParallelUpgrades 0,
#   maxUnavailable 100%), waitForCompletion selecting a job on P-2..P-4 (it
#   holds them while the test prepares them), gpuPodDeletion.force true with
#   a 20 s timeout, then the drain (no timeout):
#   P-1  a Deployment's GPU pod under a PodDisruptionBudget of minAvailable
#        1 (= replicas) -> never deleted (the whole timeline until the PDB
#        goes, its uid the same), the status names the PDB's refusal in
#        pod deletion and still in the drain; the PDB deleted, the node
#        goes on to upgrade-done;
#   P-2  uncordoned by a person while it waits for its job -> gpuop drops
#        its cordon mark and the status says it was uncordoned mid-upgrade;
#        cordoned again by the person -> still cordoned at upgrade-done;
#   P-3  its new driver pod held not Ready (as 66_driver_upgrade_failure
#        holds it), the state label removed in pod-restart-required -> the
#        node stays in progress: never upgrade-done, never uncordoned before
#        that pod is Ready (the timeline), then done;
#   P-4  its new driver pod in ImagePullBackOff once (test/lab/pod-state),
#        then Ready -> never upgrade-failed (the timeline), done.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
source "$(dirname "$0")/66_driver_upgrade_lib.bash"
on_exit 'gpuop_kill; gpuop_uninstall'

OLD=580.95.05
NEW=595.91.07
TYPO=595.91,07
N=4
JOB=upgrade-e2e-job
POLICY=upgrade-probes

up_controllers
up_begin upgrade-probes upp "$N"
up_go "$POLICY" "$OLD" "{maxParallelUpgrades: 0, maxUnavailable: \"100%\", waitForCompletion: {podSelector: \"$JOB=true\"}, gpuPodDeletion: {force: true, timeoutSeconds: 20}, drain: {enable: true, timeoutSeconds: 0}}" "$N"
DS=$(kc -n "$GPUOP_NS" get ds -l app.kubernetes.io/component=driver -o jsonpath='{.items[0].metadata.name}')

set_version() { kc patch gpupolicy "$POLICY" --type=json -p "[{\"op\": \"replace\", \"path\": \"/spec/driver/version\", \"value\": \"$1\"}]" >/dev/null; }
# driver_ds: "name generation" of every driver DaemonSet
driver_ds() { kc -n "$GPUOP_NS" get ds -l app.kubernetes.io/component=driver -o json | jq -r '[.items[] | "\(.metadata.name) \(.metadata.generation)"] | sort | join(",")'; }
driver_uids() { kc -n "$GPUOP_NS" get pods -l app.kubernetes.io/component=driver -o json | jq -r '[.items[].metadata.uid] | sort | join(",")'; }

log "a mistyped version ($TYPO): nothing is rolled out"
ds0=$(driver_ds)
uids0=$(driver_uids)
up_record typo
set_version "$TYPO"
refused() {
	local m
	m=$(gp_cond "$POLICY" Reconciled message)
	[[ $(gp_cond "$POLICY" Reconciled status) == False && $m == *spec.driver.version* ]] || {
		echo "Reconciled $(gp_cond "$POLICY" Reconciled status): $m"
		return 1
	}
}
wait_for 60 refused
log "Reconciled: $(gp_cond "$POLICY" Reconciled message)"
assert_eq "$ds0" "$(driver_ds)" "the driver DaemonSets after the typo"
set_version "$OLD"
reconciled() {
	[[ $(gp_jq "$POLICY" '.status.observedGeneration == .metadata.generation') == true &&
		$(gp_cond "$POLICY" Reconciled status) == True ]] || {
		echo "observedGeneration $(gp_jq "$POLICY" .status.observedGeneration), Reconciled $(gp_cond "$POLICY" Reconciled status)"
		return 1
	}
}
wait_for 60 reconciled
all_done() { [[ $(up_status ".counts[\"upgrade-done\"] == $N and (.nodes // [] | length) == 0") == true ]] || {
	up_status '{revision, counts}' | tr -d '\n '
	return 1
}; }
wait_for 60 all_done
assert_eq "$ds0" "$(driver_ds)" "the driver DaemonSets after the typo was fixed"
assert_eq "$uids0" "$(driver_uids)" "the driver pods after the typo and its fix"
stop_spawned record-typo
touched=$(jq -c --arg ns "$GPUOP_NS" 'select((.kind == "Node" and (.unschedulable or .state != null))
	or (.kind == "Pod" and .ns == $ns and .component == "driver" and (.deleting or .ev == "DELETED")))' "$E2E_TMP/typo.jsonl")
assert_eq "" "$touched" "a node cordoned or labelled, or a driver pod deleted, for the typo"

log "the upgrade: a PDB-held pod on $P-1, jobs on $P-2..$P-$N"
kc -n "$WL" apply -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: held}
spec:
  replicas: 1
  selector: {matchLabels: {app: held}}
  template:
    metadata: {labels: {app: held}}
    spec:
      nodeSelector: {kubernetes.io/hostname: $P-1}
      terminationGracePeriodSeconds: 1
      containers:
      - name: train
        image: registry.example/train:1
        resources: {limits: {nvidia.com/gpu: 1}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: held}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: held}}
EOF
pdb_holds() {
	[[ $(kc -n "$WL" get pdb held -o jsonpath='{.status.currentHealthy}/{.status.disruptionsAllowed}') == 1/0 ]]
}
wait_for 120 pdb_holds
held_pod=$(kc -n "$WL" get pods -l app=held -o jsonpath='{.items[0].metadata.name}')
held_uid=$(kc -n "$WL" get pod "$held_pod" -o jsonpath='{.metadata.uid}')
for ((i = 2; i <= N; i++)); do up_job "$WL" "job-$i" "$P-$i" "$JOB"; done
jobs_ready() { [[ $(kc -n "$WL" get pods -l "$JOB=true" -o json | jq '[.items[] | select(.status.phase == "Running")] | length') == $((N - 1)) ]]; }
wait_for 60 jobs_ready

# waiting NODE: what status.upgrade says the node waits for
waiting() { up_status ".nodes[]? | select(.name == \"$1\") | .waitingFor // \"\""; }
set_pods() { kc patch node "$1" --subresource=status --type=merge -p "{\"status\":{\"allocatable\":{\"pods\":\"$2\"}}}" >/dev/null; }
complete_job() {
	kc -n "$WL" patch pod "$1" --subresource=status --type=merge -p \
		'{"status":{"phase":"Succeeded","conditions":[{"type":"Ready","status":"False","reason":"PodCompleted"}],"containerStatuses":[{"name":"train","image":"registry.example/train:1","imageID":"","ready":false,"restartCount":0,"state":{"terminated":{"exitCode":0,"reason":"Completed"}}}]}}' >/dev/null
}
# pods_for NODE: the driver pods bound to NODE or waiting to be scheduled
# there, as "name image nodeName podIP" (66_driver_upgrade_failure.sh)
pods_for() {
	kc -n "$GPUOP_NS" get pods -l app.kubernetes.io/component=driver -o json | jq -r --arg n "$1" '.items[]
		| select(.metadata.deletionTimestamp == null)
		| select(.spec.nodeName == $n or ((.spec.nodeName // "") == "" and
			any(.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[]?.matchFields[]?;
				.key == "metadata.name" and (.values | index($n)))))
		| "\(.metadata.name) \(.spec.containers[0].image) \(.spec.nodeName // "-") \(.status.podIP // "-")"'
}
# hold NODE: the node's new driver pod, unscheduled while the node has no
# pod room, gets an IP and no Ready (kwok then leaves it alone), then the
# node its room back; true once that pod is bound there
hold() {
	local name image node ip
	while read -r name image node ip; do
		[[ -n $name && $image == *":$NEW-"* ]] || continue
		if [[ $node == - && $ip == - ]]; then
			kc -n "$GPUOP_NS" patch pod "$name" --subresource=status --type=merge -p \
				"{\"status\":{\"phase\":\"Pending\",\"podIP\":\"10.254.0.9\",\"podIPs\":[{\"ip\":\"10.254.0.9\"}],\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\",\"reason\":\"ContainersNotReady\"}]}}" >/dev/null
			log "new driver pod $name for $1 held: an IP, not Ready"
		fi
		[[ $node == - ]] && set_pods "$1" 110
		[[ $node == "$1" && $ip != - ]] && return 0
	done < <(pods_for "$1")
	echo "$(up_states "$P"); driver pods for $1: $(pods_for "$1" | tr '\n' ';')"
	return 1
}

up_record probes
set_version "$NEW"
jobs_wait() {
	local i
	for ((i = 2; i <= N; i++)); do
		[[ $(up_state "$P-$i") == wait-for-jobs-required ]] || {
			echo "$(up_states "$P"); status: $(up_waiting)"
			return 1
		}
	done
}
wait_for 120 jobs_wait

log "$P-1: its GPU pod $held_pod waits on the PDB"
says_pdb() { grep -q "$WL/$held_pod.*PodDisruptionBudget refuses" <<<"$(waiting "$P-1")" || {
	echo "$P-1: $(up_state "$P-1"): $(waiting "$P-1")"
	return 1
}; }
wait_for 60 says_pdb
log "$P-1 ($(up_state "$P-1")): $(waiting "$P-1")"

log "$P-2 uncordoned by a person mid-upgrade, then cordoned again"
assert_eq true "$(up_unschedulable "$P-2")" "$P-2 cordoned by gpuop"
kc uncordon "$P-2" >/dev/null
said_uncordoned() {
	local marks
	marks=$(kc get node "$P-2" -o json | jq -r --arg k "$UP_CORDONED" '.metadata.annotations[$k] // ""')
	[[ -z $marks && $(waiting "$P-2") == *"uncordoned by someone else mid-upgrade"* ]] || {
		echo "cordoned mark '$marks'; $P-2: $(waiting "$P-2")"
		return 1
	}
}
wait_for 60 said_uncordoned
log "$P-2: $(waiting "$P-2")"
kc cordon "$P-2" >/dev/null
complete_job job-2

log "$P-3 and $P-4: their new driver pods held not Ready"
set_pods "$P-3" 0
set_pods "$P-4" 0
complete_job job-3
complete_job job-4
both_held() { hold "$P-3" && hold "$P-4"; }
wait_for 180 both_held
restarting() { [[ $(up_state "$1") == pod-restart-required ]] || {
	echo "$(up_states "$P"); status: $(up_waiting)"
	return 1
}; }
wait_for 30 restarting "$P-3"

log "$P-3: its state label removed in pod-restart-required"
kc label node "$P-3" "$UP_STATE-" >/dev/null
# the status of a plan made after the removal: the state without the since
# of the label's last change
replanned() {
	[[ $(up_status ".nodes[]? | select(.name == \"$P-3\") | \"\(.state) \(.since // \"-\")\"") == "pod-restart-required -" ]] || {
		echo "$(up_states "$P"); status: $(up_status ".nodes[]? | select(.name == \"$P-3\")" | tr -d '\n')"
		return 1
	}
}
wait_for 60 replanned
log "$P-3: $(waiting "$P-3")"
[[ $(up_state "$P-3") != upgrade-done ]] || fail "$P-3 is upgrade-done with its new driver not Ready"
assert_eq true "$(up_unschedulable "$P-3")" "$P-3 cordoned while its new driver is not Ready"

log "$P-4: its new driver pod in ImagePullBackOff"
"$GPUOP_SRC/test/lab/pod-state" "$P-4" "$GPUOP_NS" "$DS" imagepull >/dev/null
says_pull() { [[ $(waiting "$P-4") == *ImagePullBackOff* ]] || {
	echo "$P-4: $(up_state "$P-4"): $(waiting "$P-4")"
	return 1
}; }
wait_for 60 says_pull
log "$P-4 ($(up_state "$P-4")): $(waiting "$P-4")"
assert_eq pod-restart-required "$(up_state "$P-4")" "$P-4's state with its driver pulling"

log "their new driver pods Ready"
"$GPUOP_SRC/test/lab/pod-state" "$P-3" "$GPUOP_NS" "$DS" running >/dev/null
"$GPUOP_SRC/test/lab/pod-state" "$P-4" "$GPUOP_NS" "$DS" running >/dev/null
wait_for 180 up_done_from 2
assert_eq true "$(up_unschedulable "$P-2")" "$P-2 (cordoned again by a person) after its upgrade"
assert_eq "" "$(up_unschedulable "$P-3")" "$P-3 cordoned after its upgrade"
assert_eq "" "$(up_unschedulable "$P-4")" "$P-4 cordoned after its upgrade"

# past gpuPodDeletion.timeoutSeconds the drain takes over, and the PDB
# holds it as well
drain_says_pdb() { [[ $(up_state "$P-1") == drain-required ]] || {
	echo "$P-1: $(up_state "$P-1"): $(waiting "$P-1")"
	return 1
} && says_pdb; }
wait_for 120 drain_says_pdb
log "$P-1 ($(up_state "$P-1")): $(waiting "$P-1")"
up_at "$P-1" "$OLD" || fail "$P-1's driver changed under its GPU pod: $(up_driver "$P-1")"
assert_eq "$held_uid" "$(kc -n "$WL" get pod "$held_pod" -o jsonpath='{.metadata.uid}')" "the PDB-held pod"
gone=$(jq -c --arg u "$held_uid" 'select(.kind == "Pod" and .uid == $u and (.deleting or .ev == "DELETED"))' "$E2E_TMP/probes.jsonl")
assert_eq "" "$gone" "the PDB-held pod deleted at some point"
kc -n "$WL" delete pdb held >/dev/null
p1_done() {
	up_at "$P-1" "$NEW" && [[ $(up_state "$P-1") == upgrade-done && -z $(up_unschedulable "$P-1") ]] || {
		echo "$(up_states "$P"); status: $(up_waiting)"
		return 1
	}
}
wait_for 180 p1_done
log "the PDB gone, $P-1 upgraded"

stop_spawned record-probes
T=$E2E_TMP/probes.jsonl
# P-3: before its new driver pod was Ready, never upgrade-done, never
# schedulable once gpuop had cordoned it
early=$(jq -s -c --arg n "$P-3" --arg v ":$NEW-" 'sort_by(.rv) as $t
	| ([$t[] | select(.kind == "Pod" and .node == $n and .component == "driver" and .ready and (.image | contains($v))) | .rv] | min) as $ready
	| ([$t[] | select(.kind == "Node" and .name == $n and .unschedulable) | .rv] | min) as $cordon
	| if $ready == null or $cordon == null then "no cordon or no Ready driver in the timeline"
	  else [$t[] | select(.kind == "Node" and .name == $n and .rv > $cordon and .rv < $ready
		and (.state == "upgrade-done" or (.unschedulable | not))) | {state, unschedulable}] end
	| if . == [] then empty else . end' "$T")
assert_eq "" "$early" "$P-3 done or uncordoned before its new driver was Ready"
# P-1: its old driver pod was not deleted before the PDB-held pod went
under=$(jq -s -c --arg n "$P-1" --arg u "$held_uid" 'sort_by(.rv) as $t
	| ([$t[] | select(.kind == "Pod" and .uid == $u and (.deleting or .ev == "DELETED")) | .rv] | min) as $held_gone
	| [$t[] | select(.kind == "Pod" and .node == $n and .component == "driver" and (.deleting or .ev == "DELETED")
		and ($held_gone == null or .rv < $held_gone)) | .name] | unique
	| if . == [] then empty else . end' "$T")
assert_eq "" "$under" "$P-1's driver pod deleted under the PDB-held GPU pod"
# P-4: its driver pulled in vain once, and the node never failed
pulled=$(jq -c --arg n "$P-4" 'select(.kind == "Pod" and .node == $n and .waiting == "ImagePullBackOff") | .name' "$T" | sed -n 1p)
[[ -n $pulled ]] || fail "no ImagePullBackOff of $P-4's driver in the timeline"
failed=$(jq -c --arg n "$P-4" --arg k "$UP_FAILED" 'select(.kind == "Node" and .name == $n and (.state == "upgrade-failed" or .ann[$k] != null))' "$T")
assert_eq "" "$failed" "$P-4 upgrade-failed at some point"
# P-2: a person uncordoned it mid-upgrade
grep -q . <<<"$(jq -c --arg n "$P-2" 'select(.kind == "Node" and .name == $n and .state == "wait-for-jobs-required" and (.unschedulable | not))' "$T")" ||
	fail "$P-2 was never seen schedulable mid-upgrade"
gpuop_stop
log "ok"
