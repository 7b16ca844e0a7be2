#!/usr/bin/env bash
# End-to-end: the DRA kubelet plugin and the driver's reload (issue 42,
# SPEC 4c, docs/upgrade.md). On the lab (kwok GPU node, resource.k8s.io/v1
# served), the driver and the DRA driver enabled, an upgradePolicy:
#   - the node's driver pod deleted by hand (its OnDelete DaemonSet makes a
#     new one): the plugin's pod, started before it, is DraPluginStale in
#     the status once the new driver pod has been Ready for 30 s, naming
#     the plugin's pod;
#   - a driver version change: gpuop's upgrade pauses the plugin's deploy
#     label with the other dependents (the plugin's pod goes before the
#     driver pod), and restores it once the new driver is Ready: the
#     plugin's pod at the end is a new one (another uid), created no
#     sooner than the new driver pod, and the finding is gone;
#   - NVIDIA's deletion order: a pod holding a claim allocated on the node
#     (from a ResourceSlice an admin publishes there, as the plugin would,
#     through the real scheduler): spec.draDriver switched off, the
#     plugin's DaemonSet and its pod stay, the condition DraPluginDeletion
#     (False, WaitingForClaims) names the pod; the pod deleted, the
#     DaemonSet goes and the condition with it.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
source "$(dirname "$0")/66_driver_upgrade_lib.bash"
SLICE=$(unique draup-slice)
on_exit 'gpuop_kill; gpuop_uninstall; kc delete resourceslice '"$SLICE"' --ignore-not-found >/dev/null 2>&1 || true; kc delete deviceclass gpu.nvidia.com mig.nvidia.com vfio.gpu.nvidia.com --ignore-not-found >/dev/null 2>&1 || true'

OLD=580.95.05
NEW=595.91.07
L=nvidia.com/gpu.deploy

up_controllers
up_no_other_gpu_nodes
gpuop_install
P=$(unique draup)
NODE=$P-1
lab_node "$NODE" --capacity nvidia.com/gpu=8 --label "upgrade-e2e=$P" --label nvidia.com/gpu.present=true \
	--label "$L.driver=true" --label "$L.dra-driver=true"
UP_POLICY=draup
policy() { # policy VERSION [DRA_ENABLED]
	kc apply -f - >/dev/null <<EOF
apiVersion: gpuop.dev/v1alpha1
kind: GpuPolicy
metadata: {name: $UP_POLICY}
spec:
  driver:
    repository: $UP_DRIVER_REPO
    image: driver
    version: "$1"
    upgradePolicy: {maxParallelUpgrades: 1, maxUnavailable: 1}
  toolkit: {enabled: false}
  devicePlugin: {enabled: false}
  gfd: {enabled: false}
  dcgmExporter: {enabled: false}
  validator: {enabled: false}
  draDriver: {enabled: ${2:-true}}
EOF
}
# pod_of COMPONENT: "uid created name" of the node's Ready, not deleted pod
# of that operand ("" when none)
pod_of() {
	kc -n "$GPUOP_NS" get pods -l "app.kubernetes.io/component=$1" --field-selector "spec.nodeName=$NODE" -o json |
		jq -r '[.items[] | select(.metadata.deletionTimestamp == null)
			| select(any(.status.conditions[]?; .type == "Ready" and .status == "True"))
			| "\(.metadata.uid) \(.metadata.creationTimestamp) \(.metadata.name)"] | .[0] // ""'
}
plugin_ready() { [ -n "$(pod_of dra-driver)" ]; }
# findings_on REASON: the messages of the node's dra-driver findings of REASON
findings_on() {
	gp_jq "$UP_POLICY" '.' | jq -r --arg n "$NODE" --arg r "$1" \
		'.status.nodes[]? | select(.name == $n) | .findings[]? | select(.operand == "dra-driver" and .reason == $r) | .message'
}
stale() { [ -n "$(findings_on DraPluginStale)" ]; }
not_stale() { [ -z "$(findings_on DraPluginStale)" ]; }

log "the driver at $OLD and the DRA kubelet plugin on $NODE"
policy "$OLD"
gpuop_start --leader-elect=false
wait_for 180 up_all_at "$P" 1 "$OLD"
wait_for 120 plugin_ready
read -r plugin0 _ plugin0_name <<<"$(pod_of dra-driver)"
read -r driver0 _ driver0_name <<<"$(pod_of driver)"
not_stale || fail "DraPluginStale before any reload: $(findings_on DraPluginStale)"
# The times compared are in seconds: the plugin Ready in an earlier second
# than the driver pod's successor is created, as a plugin running before a
# reload is (in the same second neither is known to be first).
plugin_ready_before_now() {
	local since
	since=$(kc -n "$GPUOP_NS" get pod "$plugin0_name" -o json |
		jq -r '.status.conditions[]? | select(.type == "Ready" and .status == "True") | .lastTransitionTime')
	[ -n "$since" ] && (($(date -u +%s) > $(date -u -d "$since" +%s)))
}
wait_for 30 plugin_ready_before_now

log "the driver pod deleted by hand: the plugin, older than its successor, is stale"
kc -n "$GPUOP_NS" delete pod "$driver0_name" --wait=false >/dev/null
new_driver() { local d; d=$(pod_of driver) && [ -n "$d" ] && [ "${d%% *}" != "$driver0" ]; }
wait_for 180 new_driver
wait_for 120 stale
msg=$(findings_on DraPluginStale)
grep -qF "DRA kubelet plugin pod $plugin0_name Ready since" <<<"$msg" || fail "the finding does not name $plugin0_name: $msg"
grep -qF "before the node's driver pod running now was created" <<<"$msg" || fail "the finding's words: $msg"
assert_eq "$plugin0" "$(pod_of dra-driver | cut -d' ' -f1)" "the plugin's pod uid (nobody restarted it)"

log "a driver upgrade $OLD -> $NEW: the plugin restarted with the other dependents"
up_record dra
policy "$NEW"
done1() {
	up_at "$NODE" "$NEW" && [[ $(up_state "$NODE") == upgrade-done ]] && plugin_ready || {
		echo "$(up_states "$P"); status: $(up_waiting)"
		return 1
	}
}
wait_for 300 done1
read -r plugin1 plugin1_at plugin1_name <<<"$(pod_of dra-driver)"
read -r driver1 driver1_at _ <<<"$(pod_of driver)"
[ "$plugin1" != "$plugin0" ] || fail "the plugin's pod $plugin0_name was not restarted by the upgrade"
[[ ! $plugin1_at < $driver1_at ]] ||
	fail "the plugin's pod $plugin1_name ($plugin1_at) is older than the new driver pod ($driver1_at)"
log "plugin $plugin0_name -> $plugin1_name ($plugin1_at), driver ${driver1:0:8} ($driver1_at)"
wait_for 60 not_stale
up_check dra

log "deletion order: the plugin outlives a pod whose claim it must unprepare"
make_ns WL draup-wl
kc apply -f - >/dev/null <<EOF
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: $SLICE}
spec:
  driver: gpu.nvidia.com
  nodeName: $NODE
  pool: {name: $NODE, generation: 1, resourceSliceCount: 1}
  devices:
  - {name: gpu-0, attributes: {type: {string: gpu}, uuid: {string: GPU-0}}}
EOF
kc -n "$WL" apply -f - >/dev/null <<EOF
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: gpu}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.nvidia.com}
---
apiVersion: v1
kind: Pod
metadata: {name: holder}
spec:
  nodeSelector: {upgrade-e2e: $P}
  terminationGracePeriodSeconds: 1
  resourceClaims: [{name: gpu, resourceClaimName: gpu}]
  containers:
  - name: c
    image: registry.example/train:1
    resources: {claims: [{name: gpu}]}
EOF
holder_runs() { [ "$(kc -n "$WL" get pod holder -o jsonpath='{.spec.nodeName} {.status.phase}')" = "$NODE Running" ]; }
wait_for 120 holder_runs
allocated=$(kc -n "$WL" get resourceclaim gpu -o jsonpath='{.status.allocation.devices.results[0].pool}/{.status.allocation.devices.results[0].device}')
assert_eq "$NODE/gpu-0" "$allocated" "the claim's allocation"
ds_there() { kc -n "$GPUOP_NS" get daemonset gpuop-dra-driver >/dev/null 2>&1; }
ds_gone() { ! ds_there; }
deletion_cond() { gp_cond "$UP_POLICY" DraPluginDeletion "$1"; }
waits_for_holder() { [ "$(deletion_cond reason)" = WaitingForClaims ] && grep -qF "$WL/holder on $NODE" <<<"$(deletion_cond message)"; }
seen_gen() { [ "$(gp_jq "$UP_POLICY" '.status.observedGeneration // 0')" -ge "$1" ]; }
policy "$NEW" false
wait_for 60 seen_gen "$(gp_jq "$UP_POLICY" .metadata.generation)"
wait_for 60 waits_for_holder
log "DraPluginDeletion: $(deletion_cond message)"
assert_eq False "$(deletion_cond status)" "DraPluginDeletion's status"
# the reconcile that saw the switch has run (observedGeneration): without
# the order it deleted the DaemonSet then
ds_there || fail "the plugin's DaemonSet went while $WL/holder holds its claim"
plugin_ready || fail "the plugin's pod went while $WL/holder holds its claim"
kc -n "$WL" delete pod holder --wait=false >/dev/null
wait_for 120 ds_gone
no_cond() { [ -z "$(deletion_cond status)" ]; }
wait_for 60 no_cond
gpuop_stop

log "ok"
