#!/usr/bin/env bash
# End-to-end: the GpuPolicy deleted while a pod holds a resource claim
# (issue 42, docs/operations.md "DRA driver"). On the lab (resource.k8s.io/v1
# served, kwok GPU nodes), with the driver and the DRA driver enabled and a
# pod whose claim the real scheduler allocated on a kwok node from a
# ResourceSlice published there:
#   - gpuop's finalizer gpuop.dev/dra-driver is on the policy, beside
#     another controller's (e2e.gpuop.dev/keep, kept through gpuop's merge
#     patch of the whole list);
#   - the policy deleted (--wait=false): it stays with a deletionTimestamp,
#     the plugin's DaemonSet with it, round after round of gpuop's pod
#     LISTs, and DraPluginDeletion says why, naming the pod;
#   - the pod deleted: gpuop deletes the plugin's DaemonSet, then removes
#     its finalizer (in that order, its log says), the other finalizer
#     left; the other DaemonSets stay while that one holds the policy;
#   - the other finalizer removed: the policy goes, the garbage collector
#     takes the driver's DaemonSet.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
source "$(dirname "$0")/74_dra_lib.bash"
NODE=$(unique gpu-delete)
SLICE="$NODE-gpu.nvidia.com-a"
POLICY=deleting
KEEP=e2e.gpuop.dev/keep
FIN=gpuop.dev/dra-driver
on_exit 'gpuop_kill; kc patch gpupolicy "$POLICY" --type=merge -p "{\"metadata\":{\"finalizers\":null}}" >/dev/null 2>&1 || true; gpuop_uninstall; dra_cleanup'
L=nvidia.com/gpu.deploy

dra_require resourceclaims
gpuop_install
gpuop_start
dra_policy "$POLICY" 600 "[$KEEP]"
lab_node "$NODE" --label nvidia.com/gpu.present=true --label "$L.driver=true" --label "$L.dra-driver=true"

finalizers() { kc get gpupolicy "$POLICY" -o json 2>/dev/null | jq -c '.metadata.finalizers'; }
finalizers_are() { [[ $(finalizers) == "$1" ]]; }
ds_there() { kc -n "$GPUOP_NS" get ds "$1" -o json 2>/dev/null | jq -e '.metadata.deletionTimestamp == null' >/dev/null; }
ds_gone() { ! kc -n "$GPUOP_NS" get ds "$1" >/dev/null 2>&1; }
policy_deleting() { kc get gpupolicy "$POLICY" -o json | jq -e '.metadata.deletionTimestamp != null' >/dev/null; }
policy_gone() { ! kc get gpupolicy "$POLICY" >/dev/null 2>&1; }
deletion_says() { grep -qF "$1" <<<"$(gp_cond "$POLICY" DraPluginDeletion message)"; }
rounds() { grep -c 'pod(s) holding resource claims on' "$GPUOP_LOG" || true; }
more_rounds() { (($(rounds) > $1)); }
gpuop_log_has() { grep -qF "$1" "$GPUOP_LOG"; }

log "the plugin runs on $NODE; gpuop's finalizer on the policy, beside $KEEP"
wait_for 60 gpuop_log_has "watching the ResourceClaims"
wait_for 120 running_on driver "$NODE"
wait_for 120 running_on dra-driver "$NODE"
wait_for 60 finalizers_are "[\"$KEEP\",\"$FIN\"]"
DRIVER_DS=$(kc -n "$GPUOP_NS" get ds -l app.kubernetes.io/component=driver -o jsonpath='{.items[0].metadata.name}')
[ -n "$DRIVER_DS" ] || fail "no driver DaemonSet"
dra_slice "$SLICE" "$NODE" 1

log "a pod with a claim template, scheduled by the real scheduler onto $NODE"
make_ns WL
dra_claim_pod "$WL" train "$NODE"
wait_for 120 dra_allocated "$WL" "$NODE" train

log "the policy deleted: it stays, and the plugin with it, while $WL/train holds its claim"
kc delete gpupolicy "$POLICY" --wait=false >/dev/null
wait_for 30 policy_deleting
wait_for 60 deletion_says "The GpuPolicy is being deleted"
wait_for 60 deletion_says "1 pod(s) on its 1 node(s) still do: $WL/train on $NODE"
n=$(rounds)
wait_for 60 more_rounds "$n" # listed again, 5 s on: still held
policy_deleting || fail "the policy went while a pod holds a claim on the plugin's node"
ds_there gpuop-dra-driver || fail "the plugin's DaemonSet went while a pod holds a claim"
running_on dra-driver "$NODE" || fail "the plugin does not run on $NODE while a pod holds a claim"
finalizers_are "[\"$KEEP\",\"$FIN\"]" || fail "the finalizers changed: $(finalizers)"

log "the pod deleted: the plugin's DaemonSet goes, then gpuop's finalizer, $KEEP left"
kc -n "$WL" delete pod train --wait=false >/dev/null
wait_for 120 ds_gone gpuop-dra-driver
wait_for 60 finalizers_are "[\"$KEEP\"]"
deleted=$(grep -n -m1 'daemonset/gpuop-system/gpuop-dra-driver.*deleted DaemonSet' "$GPUOP_LOG" | cut -d: -f1)
removed=$(grep -n -m1 "finalizer $FIN removed" "$GPUOP_LOG" | cut -d: -f1)
[[ -n $deleted && -n $removed ]] || fail "gpuop's log does not say it deleted the plugin's DaemonSet ($deleted) and removed its finalizer ($removed)"
((deleted < removed)) || fail "the finalizer was removed (log line $removed) before the plugin's DaemonSet was deleted (line $deleted)"
policy_deleting || fail "the policy went with $KEEP on it"
ds_there "$DRIVER_DS" || fail "the driver's DaemonSet went while the policy is still there"

log "$KEEP removed: the policy goes, the garbage collector takes the driver's DaemonSet"
kc patch gpupolicy "$POLICY" --type=json -p "[{\"op\":\"test\",\"path\":\"/metadata/finalizers/0\",\"value\":\"$KEEP\"},{\"op\":\"remove\",\"path\":\"/metadata/finalizers/0\"}]" >/dev/null
wait_for 60 policy_gone
wait_for 120 ds_gone "$DRIVER_DS"
gpuop_stop
log "ok"
