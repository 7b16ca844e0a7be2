#!/usr/bin/env bash
# End-to-end: gpuop killed with SIGKILL once in each driver-upgrade state
# resumes from the state in the cluster (issue 22: "state lives in the
# cluster"; docs/upgrade.md).
#   eight kwok GPU nodes, a Deployment of GPU pods under a PDB, drain
#   enabled (so the node passes drain-required too); a version change;
#   upgrade_kill.py watches the state label and kills gpuop the moment a
#   node is in a state gpuop has not yet been killed in (the label read
#   after the kill says which state it died in); gpuop is started again
#   each time. The upgrade completes, and the whole timeline holds the
#   invariants (upgrade_check.py: a restart must not start a second node,
#   uncordon a node it did not cordon, replace a driver under a GPU pod...).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
source "$(dirname "$0")/66_driver_upgrade_lib.bash"
on_exit 'gpuop_kill; gpuop_uninstall'

OLD=580.95.05
NEW=595.91.07
N=8
STATES=(upgrade-required cordon-required wait-for-jobs-required pod-deletion-required drain-required
	pod-restart-required validation-required uncordon-required)

up_controllers
up_no_other_gpu_nodes
gpuop_install
make_ns WL upgrade-kill
P=$(unique upk)

up_nodes "$P" "$N"
up_policy upgrade-kill "$OLD" '{maxParallelUpgrades: 1, maxUnavailable: 1, drain: {enable: true, timeoutSeconds: 120}}'
gpuop_start --leader-elect=false
wait_for 180 up_all_at "$P" "$N" "$OLD"
up_workload "$WL" "$P" "$N" 4

up_record kill
kc patch gpupolicy upgrade-kill --type=json -p "[{\"op\": \"replace\", \"path\": \"/spec/driver/version\", \"value\": \"$NEW\"}]" >/dev/null

declare -A killed=()
missing() {
	local s out=()
	for s in "${STATES[@]}"; do [[ -n ${killed[$s]:-} ]] || out+=("$s"); done
	(
		IFS=,
		echo "${out[*]}"
	)
}
# One round: the killer lists and watches first, then gpuop (re)starts
# (unless it runs already), so no state passes before the killer looks.
kills=0
pidf=$E2E_TMP/gpuop.pid
echo "$GPUOP_PID" >"$pidf"
while [[ -n $(missing) ]]; do
	ready=$E2E_TMP/killer.ready
	rm -f "$ready"
	python3 "$GPUOP_SRC/test/e2e/upgrade_kill.py" --lab-dir "$LAB_DIR" --pid-file "$pidf" --ready-file "$ready" \
		--states "$(missing)" --nodes-prefix "$P-" --timeout 180 >"$E2E_TMP/killer.out" 2>&1 &
	kpid=$!
	wait_for 60 test -s "$ready"
	if [[ -z $GPUOP_PID ]]; then
		gpuop_start --leader-elect=false
		echo "$GPUOP_PID" >"$pidf"
	fi
	rc=0
	wait "$kpid" || rc=$?
	out=$(tail -n 1 "$E2E_TMP/killer.out")
	((rc == 0)) || fail "no node entered $(missing) within 180 s (gpuop killed in: ${!killed[*]}; nodes: $(up_states "$P"); status: $(up_waiting); killer: $out)"
	wait "$GPUOP_PID" 2>/dev/null || true
	GPUOP_PID=
	: >"$pidf"
	kills=$((kills + 1))
	s=$(jq -r .state <<<"$out")
	log "gpuop killed: $out"
	[[ $s == null ]] || killed[$s]=$(jq -r .node <<<"$out")
	((kills <= 40)) || fail "40 kills and still not in every state (killed in: ${!killed[*]})"
done
gpuop_start --leader-elect=false
log "gpuop killed $kills times, once in each state: $(for s in "${STATES[@]}"; do printf '%s@%s ' "$s" "${killed[$s]}"; done)"

wait_for 300 up_all_at "$P" "$N" "$NEW"
all_done() {
	local i
	for ((i = 1; i <= N; i++)); do [[ $(up_state "$P-$i") == upgrade-done ]] || return 1; done
}
wait_for 60 all_done
up_check kill --expect-version "$NEW" --nodes-prefix "$P-" --min-ready "$WL/gpu-work-=7"

gpuop_uninstall
gpuop_stop
log "ok"
