#!/usr/bin/env bash
# End-to-end: a driver pool removed from the policy drains through the
# driver upgrade, never by deleting its driver under a job (issue 38;
# docs/operations.md "Driver pools", docs/upgrade.md "Moves between driver
# pools").
#   two kwok GPU nodes labelled pool=a100: pool a100 (nodeSelector
#   {pool: a100}) at 580.95.05, the default at 595.91.07; upgradePolicy
#   maxParallelUpgrades 1, waitForCompletion on the job label; a GPU job on
#   the first node; the pool removed from the policy (no pool left): the
#   a100 DaemonSet stays, the first node keeps its driver pod while the job
#   runs (wanted default, cordoned, waiting for the job), the status and
#   gpuop check say a100 drains and name the node; the second node (no
#   job) moves to the default pool through the upgrade; the job done, the
#   first node moves too; both end on the default's driver, upgrade-done,
#   uncordoned, without the a100 label; the a100 DaemonSet is deleted;
#   the whole timeline is checked (upgrade_check.py: no driver pod deleted
#   under a GPU pod, one node at a time ...); then a label naming a pool
#   gone: removed where it is the value gpuop recorded writing
#   (gpuop.dev/driver-pool-set), left where a person set it, and gpuop
#   check names that one.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
source "$(dirname "$0")/66_driver_upgrade_lib.bash"
source "$(dirname "$0")/64_driver_pools_lib.bash"
on_exit 'gpuop_kill; gpuop_uninstall'

JOB=pool-remove-job
SET=gpuop.dev/driver-pool-set
A100=580.95.05
DEFAULT=595.91.07

up_begin pool-remove-wl prm 2
N1=$P-1
N2=$P-2
kc label node "$N1" "$N2" pool=a100 >/dev/null

UP_POLICY=driver-pools-remove
policy() { # POOLS: the spec.driver.pools list
	kc apply -f - >/dev/null <<YAML
apiVersion: gpuop.dev/v1alpha1
kind: GpuPolicy
metadata: {name: $UP_POLICY}
spec:
  driver:
    repository: $UP_DRIVER_REPO
    image: driver
    version: "$DEFAULT"
    upgradePolicy: {autoUpgrade: true, maxParallelUpgrades: 1, waitForCompletion: {podSelector: "$JOB=true"}}
    pools: $1
  toolkit: {enabled: true}
  devicePlugin: {enabled: true}
  validator: {enabled: true}
  gfd: {enabled: false}
  dcgmExporter: {enabled: false}
YAML
}
policy "[{name: a100, version: \"$A100\", nodeSelector: {pool: a100}}]"
gpuop_start --leader-elect=false

a100_ds() { kc -n "$GPUOP_NS" get ds -o name | grep -c '/gpuop-driver-a100-' || true; }
pool_entry() { kc get gpupolicy "$UP_POLICY" -o json | jq -c --arg p "$1" '.status.operands[]? | select(.name == "driver") | .pools[]? | select(.name == $p)'; }

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

up_record remove
log "pool a100 removed from the policy: its nodes move through the upgrade, not at once"
policy "[]"
wait_for 120 wanted_is "$N1" default
waits_for_job() {
	local w
	w=$(node_waiting "$N1")
	[[ $(up_state "$N1") == wait-for-jobs-required ]] && grep -qF "job-1" <<<"$w" &&
		grep -qF "moving from driver pool a100 to default" <<<"$w"
}
wait_for 240 waits_for_job
log "status says of $N1: $(node_waiting "$N1")"
assert_eq true "$(up_unschedulable "$N1")" "$N1 cordoned while it waits for its job"
assert_eq "$old" "$(drivers_on "$N1")" "the a100 driver pod kept, not terminating, while the job runs"
assert_eq a100 "$(pool_of "$N1")" "still in pool a100 while the job runs"
assert_eq 1 "$(a100_ds)" "the a100 DaemonSet kept while $N1 runs its driver"
drains() { pool_entry a100 | jq -e --arg n "$N1" '.draining == true and (.nodeNames | index($n))' >/dev/null; }
wait_for 60 drains
log "status: $(pool_entry a100)"
out=$("$GPUOP_BIN" check --kubeconfig "$KUBECONFIG" --namespace "$GPUOP_NS") || true
grep -E "^  a100 +draining +[0-9]+ nodes? left to move.*$N1" <<<"$out" >/dev/null ||
	fail "gpuop check does not say a100 drains with $N1 left: $out"

log "$N2 (no job) moves to the default pool meanwhile or after $N1"
log "the job completes: $N1 moves to the default pool"
job_complete "$WL" job-1
on_default() {
	local n
	for n in "$N1" "$N2"; do
		pool_is "$n" none && wanted_is "$n" none && up_at "$n" "$DEFAULT" &&
			[[ $(up_state "$n") == upgrade-done && $(up_unschedulable "$n") != true ]] || {
			echo "$n: pool $(pool_of "$n"), wanted $(wanted_of "$n"), $(up_state "$n"), cordoned '$(up_unschedulable "$n")', driver $(up_driver "$n"); status: $(up_waiting)"
			return 1
		}
	done
}
wait_for 360 on_default
no_a100_ds() { [[ $(a100_ds) == 0 ]]; }
wait_for 120 no_a100_ds
for n in "$N1" "$N2"; do
	now=$(drivers_on "$n")
	[[ $now == *" - gpuop-driver-"* && $now != *a100* && $now != *";"* ]] || fail "one default driver pod on $n: $now"
done
no_pools() { [[ -z $(pool_entry a100) ]]; }
wait_for 60 no_pools
up_check remove --nodes-prefix "$P"

log "labels of a pool gone: gpuop's value removed, a person's left and named by gpuop check"
kc label node "$N1" "$POOL=retired" >/dev/null
kc annotate node "$N1" "$SET=retired" >/dev/null # as gpuop records a value it wrote
kc label node "$N2" "$POOL=retired" >/dev/null   # a person's: no record
wait_for 120 pool_is "$N1" none
assert_eq retired "$(pool_of "$N2")" "a person's label is never taken"
out=$("$GPUOP_BIN" check --kubeconfig "$KUBECONFIG" --namespace "$GPUOP_NS") || true
grep -qF "$N2: $POOL=retired" <<<"$out" || fail "gpuop check does not name $N2's label: $out"
grep -qF "$N1: $POOL" <<<"$out" && fail "gpuop check names $N1, whose label went: $out"
up_at "$N1" "$DEFAULT" && up_at "$N2" "$DEFAULT" || fail "a driver changed: $(up_driver "$N1"), $(up_driver "$N2")"

gpuop_uninstall
gpuop_stop
log "ok"
