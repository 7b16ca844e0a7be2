#!/usr/bin/env bash
# End-to-end: a driver upgrade node by node (issue 22, SPEC 4c,
# docs/upgrade.md), checked over the whole timeline, not just at the end.
#   eight kwok GPU nodes (8 nvidia.com/gpu each); a Deployment of eight GPU
#   pods (4 GPUs each) placed by the scheduler, under a PodDisruptionBudget
#   (maxUnavailable 1) that the Eviction API enforces; one node cordoned by
#   hand before the upgrade; upgradePolicy maxParallelUpgrades 2,
#   maxUnavailable 25% (2 of 8, the hand-cordoned node counts: one node at
#   a time);
#   `kubectl patch` of /spec/driver/version as on a ClusterPolicy;
#   a recorder (upgrade_timeline.py) writes every Node, Pod and GpuPolicy
#   change; upgrade_check.py checks at every moment: parallel, unavailable,
#   no driver pod deleted under a GPU pod, start order as the status
#   promised, dependents paused while the driver reloads and restored,
#   the hand-cordoned node never touched, the PDB never broken, and every
#   other node upgrade-done at the new version at the end;
#   the hand-cordoned node is listed as waiting (status), keeps the old
#   driver and stays cordoned; uncordoned by hand, it is upgraded too.
# The failure, rollback and restart cases: 66_driver_upgrade_failure.sh,
# 66_driver_upgrade_kill.sh.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
source "$(dirname "$0")/66_driver_upgrade_lib.bash"
on_exit 'gpuop_kill; gpuop_uninstall'

OLD=580.95.05
NEW=595.91.07
N=8

up_controllers
up_no_other_gpu_nodes
gpuop_install
make_ns WL upgrade-wl
P=$(unique up)
HAND=$P-$N

log "eight GPU nodes, the driver at $OLD"
up_nodes "$P" "$N"
up_policy upgrade-main "$OLD" '{maxParallelUpgrades: 2, maxUnavailable: "25%"}'
gpuop_start --leader-elect=false
wait_for 180 up_all_at "$P" "$N" "$OLD"
ds=$(kc -n "$GPUOP_NS" get ds -l app.kubernetes.io/component=driver -o jsonpath='{.items[*].spec.updateStrategy.type}')
assert_eq OnDelete "$ds" "the driver DaemonSet's update strategy"

log "eight GPU pods under a PDB; $HAND cordoned by hand"
up_workload "$WL" "$P" "$N" 4
kc cordon "$HAND" >/dev/null

up_record main
log "the version change: $OLD -> $NEW"
t0=$SECONDS
kc patch gpupolicy upgrade-main --type=json -p "[{\"op\": \"replace\", \"path\": \"/spec/driver/version\", \"value\": \"$NEW\"}]" >/dev/null

# every node but the hand-cordoned one upgrade-done at the new version
done7() {
	local i
	for ((i = 1; i < N; i++)); do
		up_at "$P-$i" "$NEW" && [[ $(up_state "$P-$i") == upgrade-done ]] || {
			echo "$(up_states "$P"); status: $(up_waiting)"
			return 1
		}
	done
}
wait_for 300 done7
log "seven nodes upgraded in $((SECONDS - t0)) s"

log "the hand-cordoned node: old driver, still cordoned, listed as waiting"
up_at "$HAND" "$OLD" || fail "$HAND's driver changed: $(up_driver "$HAND")"
assert_eq true "$(up_unschedulable "$HAND")" "$HAND stays cordoned"
waiting() { grep -qi cordon <<<"$(up_status ".nodes[]? | select(.name == \"$HAND\") | .waitingFor // \"\"")"; }
wait_for 30 waiting
log "status says of $HAND: $(up_status ".nodes[]? | select(.name == \"$HAND\") | .waitingFor")"
# the status is written at most once a second (docs/controller.md): it may
# come a moment after the last node's label
seven_done() { [[ $(up_status '.counts["upgrade-done"] // 0') == 7 ]] || {
	up_status '.counts'
	return 1
}; }
wait_for 30 seven_done
assert_eq 8 "$(kc -n "$WL" get deploy gpu-work -o jsonpath='{.status.readyReplicas}')" "the eight GPU pods run again"

up_check main --expect-version "$NEW" --nodes-prefix "$P-" --min-ready "$WL/gpu-work-=7"
evicted=$(jq -r 'select(.kind == "Pod" and .ns == "'"$WL"'") | .uid' "$E2E_TMP/main.jsonl" | sort -u | wc -l)
((evicted >= N + N - 2)) || fail "only $evicted GPU pods in the timeline: were the pods on the upgraded nodes evicted?"

log "gpuop check shows the upgrade"
rc=0
out=$("$GPUOP_BIN" check --kubeconfig "$KUBECONFIG" --namespace "$GPUOP_NS") || rc=$?
grep -qi upgrade <<<"$out" || fail "gpuop check says nothing of the upgrade: $out"
grep -qF "$HAND" <<<"$out" || fail "gpuop check does not name the waiting node $HAND: $out"

log "uncordoned by hand, $HAND is upgraded too"
kc uncordon "$HAND" >/dev/null
hand_done() { up_at "$HAND" "$NEW" && [[ $(up_state "$HAND") == upgrade-done ]]; }
wait_for 120 hand_done
assert_eq "" "$(up_unschedulable "$HAND")" "$HAND schedulable after its upgrade"

gpuop_uninstall
gpuop_stop
log "ok"
