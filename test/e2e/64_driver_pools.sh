#!/usr/bin/env bash
# End-to-end: driver pools (spec.driver.pools, issue 38 item 2).
#   four Ubuntu 24.04 GPU nodes, two labelled gpuop.dev/driver-pool=a100:
#   a pool a100 at 580.95.05 and the default (spec.driver) at 595.91.07
#   run as gpuop-driver-a100-ubuntu24.04 and gpuop-driver-ubuntu24.04, each
#   node with its pool's image, the default's keeping off the pool's nodes
#   (node affinity NotIn [a100]); status and `gpuop check` count both as
#   the one driver operand, with no finding;
#   a node labelled with a name no pool has is the default's; gpuop render
#   --os ubuntu24.04 shows both pools' DaemonSets;
#   the pool's version changed: only its nodes get the new image, the
#   default's driver pods are not touched;
#   the pool removed: its nodes' labels are a person's (the pool has no
#   nodeSelector), so it drains: its DaemonSet and pods kept, the status
#   and gpuop check name the nodes; the labels removed by hand: its
#   DaemonSet is deleted and its nodes go to the default.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
on_exit 'gpuop_kill; gpuop_uninstall'

POLICY=driver-pools
POOL=gpuop.dev/driver-pool
A1=$(unique pool-a1)
A2=$(unique pool-a2)
D1=$(unique pool-d1)
D2=$(unique pool-d2)
A=gpuop-driver-a100-ubuntu24.04
D=gpuop-driver-ubuntu24.04
IMG=nvcr.io/nvidia/driver

gpuop_install
gpuop_start --leader-elect=false

gpu=(--label nvidia.com/gpu.present=true --label nvidia.com/gpu.deploy.driver=true)
lab_node "$A1" "${gpu[@]}" --label "$POOL=a100"
lab_node "$A2" "${gpu[@]}" --label "$POOL=a100"
lab_node "$D1" "${gpu[@]}"
lab_node "$D2" "${gpu[@]}" --label "$POOL=retired"

kc apply -f - >/dev/null <<EOF
apiVersion: gpuop.dev/v1alpha1
kind: GpuPolicy
metadata: {name: $POLICY}
spec:
  driver:
    repository: nvcr.io/nvidia
    image: driver
    version: "595.91.07"
    pools:
      - {name: a100, version: "580.95.05"}
  toolkit: {enabled: false}
  devicePlugin: {enabled: false}
  gfd: {enabled: false}
  dcgmExporter: {enabled: false}
  validator: {enabled: false}
EOF

uid_on() {
	kc -n "$GPUOP_NS" get pods -l app.kubernetes.io/component=driver -o json |
		jq -r --arg n "$1" '[.items[] | select(.spec.nodeName == $n) | .metadata.uid] | join(",")'
}
ds_gone() { ! kc -n "$GPUOP_NS" get ds "$1" >/dev/null 2>&1; }
reconciled() {
	kc get gpupolicy "$POLICY" -o jsonpath='{.status.conditions[?(@.type=="Reconciled")].status}'
}

log "gpuop render: every pool's DaemonSets for the OSes named"
kc get gpupolicy "$POLICY" -o yaml >"$E2E_TMP/policy.yaml"
"$GPUOP_BIN" render -f "$E2E_TMP/policy.yaml" --os ubuntu24.04 >"$E2E_TMP/render.yaml"
for ds in "$A" "$D"; do
	grep -qxF "  name: $ds" "$E2E_TMP/render.yaml" || fail "gpuop render has no $ds"
done

log "one driver DaemonSet per driver pool and OS pool"
wait_for 60 kc -n "$GPUOP_NS" get ds "$A"
wait_for 60 kc -n "$GPUOP_NS" get ds "$D"
ps=$(kc -n "$GPUOP_NS" get ds "$A" -o json | jq -c '.spec.template.spec')
assert_eq "a100" "$(jq -r --arg k "$POOL" '.nodeSelector[$k]' <<<"$ps")" "the pool's DaemonSet selects its label"
ps=$(kc -n "$GPUOP_NS" get ds "$D" -o json | jq -c '.spec.template.spec')
assert_eq '["a100"]' "$(jq -c --arg k "$POOL" '.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[] | select(.key == $k and .operator == "NotIn") | .values' <<<"$ps")" \
	"the default's keeps off the pool's nodes"
assert_eq "null" "$(jq -c --arg k "$POOL" '.nodeSelector[$k]' <<<"$ps")" "the default's selects no pool label"

log "each node runs its pool's image; a name no pool has is the default's"
wait_for 60 driver_image_is "$A1" "$IMG:580.95.05-ubuntu24.04"
wait_for 60 driver_image_is "$A2" "$IMG:580.95.05-ubuntu24.04"
wait_for 60 driver_image_is "$D1" "$IMG:595.91.07-ubuntu24.04"
wait_for 60 driver_image_is "$D2" "$IMG:595.91.07-ubuntu24.04"

log "status and gpuop check: the pools are the one driver operand, no finding"
wait_for 60 bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' get gpupolicy $POLICY -o json | jq -c '[.status.operands[] | select(.name == \"driver\")][0] | [.daemonSets, .runningNodes, .expectedNodes]')\" = '[[\"$A\",\"$D\"],4,4]' ]"
out=$("$GPUOP_BIN" check --kubeconfig "$KUBECONFIG" --namespace "$GPUOP_NS" -o json) || true
assert_eq "[\"$A\",\"$D\"]" "$(jq -c '.operands[] | select(.name == "driver") | .daemonSets' <<<"$out")" "check lists both pools' DaemonSets"
assert_eq "[]" "$(jq -c --arg a "$A1" --arg b "$A2" --arg c "$D1" --arg d "$D2" \
	'[.nodes[] | select(.name == $a or .name == $b or .name == $c or .name == $d) | .findings[]]' <<<"$out")" \
	"no finding on the pools' nodes"
assert_eq "True" "$(reconciled)" "Reconciled"

log "the pool's version changed: only its nodes move, the default's pods are not touched"
d1=$(uid_on "$D1")
d2=$(uid_on "$D2")
kc patch gpupolicy "$POLICY" --type=json \
	-p '[{"op": "replace", "path": "/spec/driver/pools/0/version", "value": "580.105.08"}]' >/dev/null
wait_for 120 driver_image_is "$A1" "$IMG:580.105.08-ubuntu24.04"
wait_for 120 driver_image_is "$A2" "$IMG:580.105.08-ubuntu24.04"
assert_eq "$d1" "$(uid_on "$D1")" "the default's pod on $D1 kept"
assert_eq "$d2" "$(uid_on "$D2")" "the default's pod on $D2 kept"
assert_eq "$IMG:595.91.07-ubuntu24.04" "$(driver_image_on "$D1")" "the default's version kept"

log "the pool removed: its nodes' labels are a person's, so it drains: its DaemonSet and pods kept"
a1=$(uid_on "$A1")
kc patch gpupolicy "$POLICY" --type=json -p '[{"op": "remove", "path": "/spec/driver/pools"}]' >/dev/null
drains() {
	kc get gpupolicy "$POLICY" -o json | jq -e --arg n "$A1" '.status.operands[]? | select(.name == "driver")
		| .pools[]? | select(.name == "a100" and .draining == true and (.nodeNames | index($n)))' >/dev/null
}
wait_for 60 drains
out=$("$GPUOP_BIN" check --kubeconfig "$KUBECONFIG" --namespace "$GPUOP_NS") || true
grep -qF "$A1: $POOL=a100" <<<"$out" || fail "gpuop check does not name $A1's label: $out"
kc -n "$GPUOP_NS" get ds "$A" >/dev/null || fail "the draining pool's DaemonSet was deleted"
assert_eq "$a1" "$(uid_on "$A1")" "the pool's driver pod on $A1 kept"
assert_eq a100 "$(kc get node "$A1" -o jsonpath="{.metadata.labels['gpuop\.dev/driver-pool']}")" "a person's label kept"

log "the labels removed by hand: the DaemonSet deleted, its nodes the default's"
kc label node "$A1" "$A2" "$POOL-" >/dev/null
wait_for 60 ds_gone "$A"
wait_for 120 driver_image_is "$A1" "$IMG:595.91.07-ubuntu24.04"
wait_for 120 driver_image_is "$A2" "$IMG:595.91.07-ubuntu24.04"
grep -qF "deleted DaemonSet" "$GPUOP_LOG" || fail "the log does not say the DaemonSet was deleted"

gpuop_uninstall
gpuop_stop
log "ok"
