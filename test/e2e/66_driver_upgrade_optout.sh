#!/usr/bin/env bash
# End-to-end: a node opted out of the driver mid-upgrade (issue 22,
# docs/upgrade.md "Invariants").
#   three kwok GPU nodes; a GPU job on the first (waitForCompletion selects
#   it, no timeout: the node holds still, cordoned by gpuop, in
#   wait-for-jobs-required); a version change; then someone sets the
#   node's nvidia.com/gpu.deploy.driver=false (the driver is host-provided
#   from now on) ->
#     gpuop undoes what it did there and nothing else: the node is
#     uncordoned, its upgrade state label and gpuop's cordon and since
#     annotations are gone, and no driver pod is scheduled there; the job
#     keeps running; the other two nodes upgrade to the new version.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
source "$(dirname "$0")/66_driver_upgrade_lib.bash"
on_exit 'gpuop_kill; gpuop_uninstall'

OLD=580.95.05
NEW=595.91.07
N=3
JOB=upgrade-e2e-job

up_no_other_gpu_nodes
gpuop_install
make_ns WL upgrade-optout
P=$(unique upo)
F=$P-1

up_nodes "$P" "$N"
up_policy upgrade-optout "$OLD" "{maxParallelUpgrades: 1, waitForCompletion: {podSelector: \"$JOB=true\"}}"
gpuop_start --leader-elect=false
wait_for 180 up_all_at "$P" "$N" "$OLD"

log "a GPU job on $F"
up_job "$WL" job "$F" "$JOB"
job_running() { [[ $(kc -n "$WL" get pod job -o jsonpath='{.status.phase}') == Running ]]; }
wait_for 60 job_running

kc patch gpupolicy upgrade-optout --type=json -p "[{\"op\": \"replace\", \"path\": \"/spec/driver/version\", \"value\": \"$NEW\"}]" >/dev/null
waits_for_job() {
	[[ $(up_state "$F") == wait-for-jobs-required && $(up_unschedulable "$F") == true ]] || {
		up_states "$P"
		return 1
	}
}
wait_for 120 waits_for_job
log "$F cordoned by gpuop, waiting for its job; now opted out: deploy.driver=false"
kc label node "$F" nvidia.com/gpu.deploy.driver=false --overwrite >/dev/null

# gpuop's marks on F: "STATE|UNSCHEDULABLE|CORDONED|SINCE", empty when all gone
marks() {
	kc get node "$F" -o json | jq -r --arg s "$UP_STATE" --arg c "$UP_CORDONED" \
		'[.metadata.labels[$s] // "", (.spec.unschedulable // "" | tostring), .metadata.annotations[$c] // "",
		  .metadata.annotations["gpuop.dev/driver-upgrade-since"] // ""] | join("|")'
}
released() { [[ $(marks) == '|||' ]] || {
	echo "marks on $F: $(marks); status: $(up_waiting)"
	return 1
}; }
wait_for 60 released
log "$F released: uncordoned, no upgrade state"

wait_for 180 up_done_from 2
log "the other nodes are at $NEW"
assert_eq '|||' "$(marks)" "gpuop's marks on $F after the upgrade"
assert_eq "" "$(up_driver "$F")" "a driver pod on $F, which is host-provided now"
assert_eq Running "$(kc -n "$WL" get pod job -o jsonpath='{.status.phase}')" "the job on $F"
# (the status is written at most once a second: waited for, not read once)
unlisted() { [[ -z $(up_status ".nodes[]? | select(.name == \"$F\") | .name") ]]; }
wait_for 30 unlisted

gpuop_uninstall
gpuop_stop
log "ok"
