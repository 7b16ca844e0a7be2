# shellcheck shell=bash
# test/e2e/64_driver_pools_lib.bash — shared by the driver pools' move
# tests (64_driver_pools_move.sh, 64_driver_pools_remove.sh; issue 38,
# docs/operations.md "Driver pools"); sourced after lib.sh, gpuop.sh and
# 66_driver_upgrade_lib.bash. (Not *.sh: CTest's e2e glob would make it a
# test.)
#
#   pool_of NODE          its gpuop.dev/driver-pool label, "none" without
#   wanted_of NODE        its gpuop.dev/driver-pool-wanted annotation, "none"
#   pool_is NODE POOL, wanted_is NODE POOL
#   drivers_on NODE       "uid deletionTimestamp owner" of its driver pods, ';'-joined
#   node_waiting NODE     what status.upgrade says it waits for
#   pools_settled NODE... each node upgrade-done (or never upgraded),
#                         uncordoned, with no move waited for
#   job_complete NS POD   the job pod's status set to Succeeded

POOL=gpuop.dev/driver-pool
WANTED=gpuop.dev/driver-pool-wanted

pool_of() { kc get node "$1" -o json | jq -r --arg k "$POOL" '.metadata.labels[$k] // "none"'; }
wanted_of() { kc get node "$1" -o json | jq -r --arg k "$WANTED" '.metadata.annotations[$k] // "none"'; }
pool_is() { [ "$(pool_of "$1")" = "$2" ]; }
wanted_is() { [ "$(wanted_of "$1")" = "$2" ]; }
drivers_on() {
	kc -n "$GPUOP_NS" get pods -l app.kubernetes.io/component=driver -o json |
		jq -r --arg n "$1" '[.items[] | select(.spec.nodeName == $n)
			| "\(.metadata.uid) \(.metadata.deletionTimestamp // "-") \(.metadata.ownerReferences[0].name)"] | join(";")'
}
node_waiting() { up_status ".nodes[]? | select(.name == \"$1\") | .waitingFor // \"\""; }
# A node may have come to its pool through a move of its own (the default
# pool's driver pod Ready before the labeller saw the selector, as on a
# loaded machine): a timeline starts once no upgrade is under way.
pools_settled() {
	local n s
	for n in "$@"; do
		s=$(up_state "$n")
		[[ ($s == "" || $s == upgrade-done) && $(up_unschedulable "$n") != true ]] && wanted_is "$n" none ||
			{
				echo "$n: state '$s', cordoned '$(up_unschedulable "$n")', wanted $(wanted_of "$n")"
				return 1
			}
	done
}
job_complete() {
	kc -n "$1" patch pod "$2" --subresource=status --type=merge -p \
		'{"status":{"phase":"Succeeded","conditions":[{"type":"Ready","status":"False","reason":"PodCompleted"}],"containerStatuses":[{"name":"train","image":"registry.example/train:1","imageID":"","ready":false,"restartCount":0,"state":{"terminated":{"exitCode":0,"reason":"Completed"}}}]}}' >/dev/null
}
