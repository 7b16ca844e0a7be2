#!/usr/bin/env bash
# End-to-end: GPU users the driver upgrade must see (issue 37; docs/upgrade.md
# "GPU pods, and what is never evicted"), two kwok GPU nodes upgraded at
# once (maxParallelUpgrades 2, maxUnavailable 100%), no drain:
#   P-1  a bare pod that requests no nvidia.com/gpu but holds a
#        ResourceClaim allocated a device of NVIDIA's DRA driver
#        (gpu.nvidia.com; the allocation written by the test as an admin,
#        as the lab runs no DRA driver) -> it is a GPU pod: pod deletion
#        may not evict it (no controller, gpuPodDeletion.force false), the
#        node fails naming it, and its driver pod is never deleted under it;
#   P-2  a DaemonSet's pod requesting a GPU -> evicted it would come
#        straight back: the node fails naming it, once (no loop), the pod
#        never evicted.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
source "$(dirname "$0")/66_driver_upgrade_lib.bash"
on_exit 'gpuop_kill; gpuop_uninstall'

OLD=580.95.05
NEW=595.91.07
N=2

up_begin upgrade-holders uph "$N"
up_go upgrade-holders "$OLD" "{maxParallelUpgrades: 2, maxUnavailable: \"100%\"}" "$N"

log "a DRA claim of gpu.nvidia.com allocated on $P-1, held by a bare pod"
kc -n "$WL" apply -f - >/dev/null <<EOF
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: gpu-claim}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.nvidia.com}
EOF
kc -n "$WL" patch resourceclaim gpu-claim --subresource=status --type=merge -p \
	"{\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpu\",\"driver\":\"gpu.nvidia.com\",\"pool\":\"$P-1\",\"device\":\"gpu-0\"}]},\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"$P-1\"]}]}]}}}}" >/dev/null
kc -n "$WL" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: dra-train}
spec:
  nodeName: $P-1
  terminationGracePeriodSeconds: 1
  resourceClaims:
  - {name: gpu, resourceClaimName: gpu-claim}
  containers:
  - name: train
    image: registry.example/train:1
    resources: {claims: [{name: gpu}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: gpu-agent}
spec:
  selector: {matchLabels: {app: gpu-agent}}
  template:
    metadata: {labels: {app: gpu-agent}}
    spec:
      nodeSelector: {kubernetes.io/hostname: $P-2}
      terminationGracePeriodSeconds: 1
      containers:
      - name: agent
        image: registry.example/agent:1
        resources: {limits: {nvidia.com/gpu: 1}}
EOF
running() { [[ $(kc -n "$WL" get pods -o json | jq '[.items[] | select(.status.phase == "Running")] | length') == 2 ]]; }
wait_for 60 running
uids=$(kc -n "$WL" get pods -o json | jq -r '[.items[].metadata.uid] | sort | join(",")')
drv1=$(kc -n "$GPUOP_NS" get pods -l app.kubernetes.io/component=driver --field-selector "spec.nodeName=$P-1" -o jsonpath='{.items[0].metadata.name}')

up_record holders
kc patch gpupolicy upgrade-holders --type=json -p "[{\"op\": \"replace\", \"path\": \"/spec/driver/version\", \"value\": \"$NEW\"}]" >/dev/null
both_failed() {
	[[ $(up_state "$P-1") == upgrade-failed && $(up_state "$P-2") == upgrade-failed ]] || {
		echo "$(up_states "$P"); status: $(up_waiting)"
		return 1
	}
}
wait_for 180 both_failed
fail_words() { kc get node "$1" -o jsonpath='{.metadata.annotations.gpuop\.dev/driver-upgrade-failed}'; }
log "$P-1: $(fail_words "$P-1")"
log "$P-2: $(fail_words "$P-2")"
grep -q "$WL/dra-train not evictable: no controller" <<<"$(fail_words "$P-1")" || fail "$P-1's failure does not name the DRA pod"
grep -q "$WL/gpu-agent-.* owned by a DaemonSet" <<<"$(fail_words "$P-2")" || fail "$P-2's failure does not name the DaemonSet's GPU pod"
assert_eq "$drv1" "$(kc -n "$GPUOP_NS" get pods -l app.kubernetes.io/component=driver --field-selector "spec.nodeName=$P-1" -o jsonpath='{.items[0].metadata.name}')" "$P-1's driver pod"
assert_eq "$uids" "$(kc -n "$WL" get pods -o json | jq -r '[.items[].metadata.uid] | sort | join(",")')" "the GPU pods"
assert_eq 1 "$(grep -c "Driver upgrade failed on node $P-2" "$GPUOP_LOG")" "failures of $P-2 (a loop?)"
stop_spawned record-holders
gone=$(jq -c --arg ns "$WL" 'select(.kind == "Pod" and .ns == $ns and (.deleting or .ev == "DELETED"))' "$E2E_TMP/holders.jsonl")
assert_eq "" "$gone" "a GPU pod deleted or evicted"
gpuop_stop
log "ok"
