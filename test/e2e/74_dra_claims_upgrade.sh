#!/usr/bin/env bash
# End-to-end: the driver upgrade counts a pod holding a gpu.nvidia.com
# claim as a GPU pod from the ResourceClaims gpuop watches (issue 42). One
# kwok GPU node with the DRA driver enabled, an admin's 8-device slice on
# it, and a bare pod (no controller) whose claim template the real
# scheduler allocates from the slice (status.reservedFor names the pod).
# A driver upgrade reaches pod deletion: the pod is a GPU pod without a
# GET of its claim (the debug line "reading N ResourceClaim(s)" never
# appears), may not be evicted (no controller, force false), and the node
# fails naming it; the pod is never deleted.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
source "$(dirname "$0")/66_driver_upgrade_lib.bash"
SLICE=
on_exit 'gpuop_kill; gpuop_uninstall; [ -z "$SLICE" ] || kc delete resourceslice "$SLICE" --ignore-not-found >/dev/null 2>&1 || true; kc delete deviceclass gpu.nvidia.com mig.nvidia.com vfio.gpu.nvidia.com --ignore-not-found >/dev/null 2>&1 || true'

OLD=580.95.05
NEW=595.91.07

up_begin upgrade-claims upc 1
up_go upgrade-claims "$OLD" "{maxParallelUpgrades: 1, maxUnavailable: \"100%\"}" 1
gpuop_log_has() { grep -qF "$1" "$GPUOP_LOG"; }

log "the DRA driver enabled on $P-1, an 8-device slice published there"
kc label node "$P-1" nvidia.com/gpu.deploy.dra-driver=true >/dev/null
kc patch gpupolicy upgrade-claims --type=merge -p '{"spec":{"draDriver":{"enabled":true}}}' >/dev/null
wait_for 120 gpuop_log_has "watching the ResourceClaims"
SLICE="$P-1-gpu.nvidia.com-a"
{
	printf 'apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: %s}\nspec:\n  driver: gpu.nvidia.com\n  nodeName: %s\n  pool: {name: %s, generation: 1, resourceSliceCount: 1}\n  devices:\n' "$SLICE" "$P-1" "$P-1"
	for i in 0 1 2 3 4 5 6 7; do
		printf '  - {name: gpu-%s, attributes: {type: {string: gpu}}}\n' "$i"
	done
} | kc apply -f - >/dev/null

log "a bare pod with a claim template, allocated by the scheduler on $P-1"
kc -n "$WL" apply -f - >/dev/null <<EOF
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: gpu}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.nvidia.com}
---
apiVersion: v1
kind: Pod
metadata: {name: dra-train}
spec:
  nodeSelector: {kubernetes.io/hostname: $P-1}
  terminationGracePeriodSeconds: 1
  resourceClaims:
  - {name: gpu, resourceClaimTemplateName: gpu}
  containers:
  - name: train
    image: registry.example/train:1
    resources: {claims: [{name: gpu}]}
EOF
reserved() {
	kc -n "$WL" get resourceclaims -o json |
		jq -e --arg n "$P-1" '[.items[] | select(.status.allocation.devices.results[0].pool == $n) | select(.status.reservedFor[0].name == "dra-train")] | length == 1' >/dev/null
}
wait_for 120 reserved
wait_for 60 bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' -n '$WL' get pod dra-train -o jsonpath='{.status.phase}')\" = Running ]"
wait_for 60 gpuop_log_has "resourceclaim/$WL/dra-train-gpu"
uid=$(kc -n "$WL" get pod dra-train -o jsonpath='{.metadata.uid}')

log "the driver upgraded: $P-1 fails on the claim's pod, never evicted"
kc patch gpupolicy upgrade-claims --type=json -p "[{\"op\": \"replace\", \"path\": \"/spec/driver/version\", \"value\": \"$NEW\"}]" >/dev/null
failed() {
	[[ $(up_state "$P-1") == upgrade-failed ]] || {
		echo "$(up_states "$P"); status: $(up_waiting)"
		return 1
	}
}
wait_for 240 failed
words=$(kc get node "$P-1" -o jsonpath='{.metadata.annotations.gpuop\.dev/driver-upgrade-failed}')
log "$P-1: $words"
grep -q "$WL/dra-train not evictable: no controller" <<<"$words" || fail "$P-1's failure does not name the claim's pod"
assert_eq "$uid" "$(kc -n "$WL" get pod dra-train -o jsonpath='{.metadata.uid}')" "the claim's pod"
! gpuop_log_has "node $P-1: reading" || fail "gpuop read the pod's claim by GET: not from the cache"
gpuop_stop
log "ok"
