#!/usr/bin/env bash
# End-to-end: a node that moves from one driver pool to another is
# upgraded like a version change, never by deleting its driver under a job
# (issue 38; SPEC 4f, docs/upgrade.md "Moves between driver pools").
#   two kwok GPU nodes labelled pool=a100 (driver, toolkit, device plugin,
#   validator): pool a100 (nodeSelector {pool: a100}) at 580.95.05, pool
#   h100 ({pool: h100}) at 590.48.01, the default at 595.91.07;
#   upgradePolicy maxParallelUpgrades 1, waitForCompletion on the job label;
#   a GPU job on the first node; its label changed to pool=h100: gpuop
#   writes gpuop.dev/driver-pool-wanted=h100 and keeps its pool label and
#   driver pod; the node is cordoned and waits for the job (the status says
#   it moves from a100 to h100); the job done, the node's label becomes
#   h100, it runs the h100 DaemonSet's driver at 590.48.01, is upgrade-done
#   and uncordoned, the annotation gone;
#   the whole timeline is checked (upgrade_check.py: no driver pod deleted
#   under a GPU pod, dependents paused, one node at a time ...);
#   autoUpgrade off: the second node moved to h100 stays in a100, not
#   cordoned, its driver kept, and the status and gpuop check say it waits
#   to move from a100 to h100; autoUpgrade back on, it moves.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
source "$(dirname "$0")/66_driver_upgrade_lib.bash"
source "$(dirname "$0")/64_driver_pools_lib.bash"
on_exit 'gpuop_kill; gpuop_uninstall'

JOB=pool-move-job
A100=580.95.05
H100=590.48.01
DEFAULT=595.91.07

up_begin pool-move-wl pmove 2
N1=$P-1
N2=$P-2
kc label node "$N1" "$N2" pool=a100 >/dev/null

UP_POLICY=driver-pools-move
policy() {
	kc apply -f - >/dev/null <<EOF
apiVersion: gpuop.dev/v1alpha1
kind: GpuPolicy
metadata: {name: $UP_POLICY}
spec:
  driver:
    repository: $UP_DRIVER_REPO
    image: driver
    version: "$DEFAULT"
    upgradePolicy: {autoUpgrade: $1, maxParallelUpgrades: 1, waitForCompletion: {podSelector: "$JOB=true"}}
    pools:
      - {name: a100, version: "$A100", nodeSelector: {pool: a100}}
      - {name: h100, version: "$H100", nodeSelector: {pool: h100}}
  toolkit: {enabled: true}
  devicePlugin: {enabled: true}
  validator: {enabled: true}
  gfd: {enabled: false}
  dcgmExporter: {enabled: false}
EOF
}
policy true
gpuop_start --leader-elect=false

log "both nodes in pool a100, at $A100"
wait_for 120 pool_is "$N1" a100
wait_for 120 pool_is "$N2" a100
wait_for 180 up_all_at "$P" 2 "$A100"
wait_for 240 pools_settled "$N1" "$N2"

log "a GPU job on $N1"
up_job "$WL" job-1 "$N1" "$JOB"
job_running() { [[ $(kc -n "$WL" get pod job-1 -o jsonpath='{.status.phase}') == Running ]]; }
wait_for 60 job_running
old=$(drivers_on "$N1")
[[ $old == *" - gpuop-driver-a100-"* && $old != *";"* ]] || fail "one a100 driver pod on $N1: $old"

up_record move
log "$N1 relabelled pool=h100: it moves through the upgrade, not at once"
kc label node "$N1" pool=h100 --overwrite >/dev/null
wait_for 120 wanted_is "$N1" h100
assert_eq a100 "$(pool_of "$N1")" "the pool label stays while a driver runs"
waits_for_job() {
	local w
	w=$(node_waiting "$N1")
	[[ $(up_state "$N1") == wait-for-jobs-required ]] && grep -qF "job-1" <<<"$w" &&
		grep -qF "moving from driver pool a100 to h100" <<<"$w"
}
wait_for 120 waits_for_job
assert_eq true "$(up_unschedulable "$N1")" "$N1 cordoned while it waits for its job"
log "status says of $N1: $(node_waiting "$N1")"
assert_eq "$old" "$(drivers_on "$N1")" "the a100 driver pod kept, not terminating, while the job runs"
assert_eq a100 "$(pool_of "$N1")" "still in pool a100 while the job runs"
assert_eq Running "$(kc -n "$WL" get pod job-1 -o jsonpath='{.status.phase}')" "the job still runs"

log "the job completes: $N1 moves to h100"
job_complete "$WL" job-1
moved() {
	pool_is "$N1" h100 && wanted_is "$N1" none && up_at "$N1" "$H100" &&
		[[ $(up_state "$N1") == upgrade-done && $(up_unschedulable "$N1") != true ]] || {
		echo "$N1: pool $(pool_of "$N1"), wanted $(wanted_of "$N1"), $(up_state "$N1"), driver $(up_driver "$N1"); status: $(up_waiting)"
		return 1
	}
}
wait_for 240 moved
now=$(drivers_on "$N1")
[[ $now == *" - gpuop-driver-h100-"* && $now != *";"* ]] || fail "one h100 driver pod on $N1: $now"
grep -qF "moving it to driver pool h100" "$GPUOP_LOG" || fail "the log does not say $N1 was moved"
up_check move --nodes-prefix "$P"
assert_eq a100 "$(pool_of "$N2")" "$N2 stays in a100"
up_at "$N2" "$A100" || fail "$N2's driver changed: $(up_driver "$N2")"

log "autoUpgrade off: $N2 relabelled pool=h100 stays in a100, and says so"
policy false
kc label node "$N2" pool=h100 --overwrite >/dev/null
wait_for 120 wanted_is "$N2" h100
says_move() { grep -qF "waiting to move from driver pool a100 to h100" <<<"$(node_waiting "$N2")"; }
wait_for 60 says_move
log "status says of $N2: $(node_waiting "$N2")"
grep -qF "autoUpgrade is false" <<<"$(node_waiting "$N2")" || fail "the status does not name autoUpgrade: $(node_waiting "$N2")"
assert_eq a100 "$(pool_of "$N2")" "$N2 stays in pool a100"
assert_eq "" "$(up_unschedulable "$N2")" "$N2 not cordoned"
up_at "$N2" "$A100" || fail "$N2's driver changed: $(up_driver "$N2")"
out=$("$GPUOP_BIN" check --kubeconfig "$KUBECONFIG" --namespace "$GPUOP_NS") || true
grep -qF "waiting to move from driver pool a100 to h100" <<<"$out" || fail "gpuop check does not say $N2 waits to move: $out"

log "autoUpgrade back on: $N2 moves"
policy true
moved2() { pool_is "$N2" h100 && wanted_is "$N2" none && up_at "$N2" "$H100" && [[ $(up_state "$N2") == upgrade-done ]]; }
wait_for 240 moved2

gpuop_uninstall
gpuop_stop
log "ok"
