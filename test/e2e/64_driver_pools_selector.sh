#!/usr/bin/env bash
# End-to-end: driver pools chosen by nodeSelector (spec.driver.pools, issue
# 38 item 2; SPEC 4f): gpuop writes gpuop.dev/driver-pool itself.
#   three Ubuntu 24.04 GPU nodes labelled pool=a100 and one without, none
#   with a pool label: a pool a100 (nodeSelector {pool: a100}) at 580.95.05
#   and the default at 595.91.07; gpuop labels the three a100 and each node
#   runs its pool's image, the Reconciled condition names no nodeSelector;
#   the pool's DaemonSet has its tolerations, priority class, labels and
#   annotations (NVIDIADriver's), the default's not;
#   the status (operands[driver].pools) and gpuop check show each pool's
#   version and nodes;
#   a second pool h100 selecting gpu=big, which one a100 node also carries:
#   that node fails closed: its label stays a100, its driver pod is the same
#   pod, the annotation gpuop.dev/driver-pool-conflict and the finding
#   DriverPoolConflict (status and gpuop check) name both pools; the label
#   gpu=big removed: the conflict clears;
#   pool=a100 removed from a node: gpuop removes its pool label (through
#   the driver upgrade: it runs a driver, gpuop.dev/driver-pool-wanted
#   says "default" meanwhile; 64_driver_pools_move checks the steps) and it
#   runs the default's image, uncordoned.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
on_exit 'gpuop_kill; gpuop_uninstall'

POLICY=driver-pools-selector
POOL=gpuop.dev/driver-pool
CONFLICT=gpuop.dev/driver-pool-conflict
S1=$(unique sel-a1)
S2=$(unique sel-a2)
C1=$(unique sel-c1)
D1=$(unique sel-d1)
IMG=nvcr.io/nvidia/driver

gpuop_install
gpuop_start --leader-elect=false

gpu=(--label nvidia.com/gpu.present=true --label nvidia.com/gpu.deploy.driver=true)
lab_node "$S1" "${gpu[@]}" --label pool=a100
lab_node "$S2" "${gpu[@]}" --label pool=a100
lab_node "$C1" "${gpu[@]}" --label pool=a100 --label gpu=big
lab_node "$D1" "${gpu[@]}"

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
      - name: a100
        version: "580.95.05"
        nodeSelector: {pool: a100}
        tolerations: [{key: dedicated, operator: Equal, value: a100, effect: NoSchedule}]
        priorityClassName: system-cluster-critical
        labels: {team: ml}
        annotations: {owner: ml-platform}
  toolkit: {enabled: false}
  devicePlugin: {enabled: false}
  gfd: {enabled: false}
  dcgmExporter: {enabled: false}
  validator: {enabled: false}
EOF

pool_of() { kc get node "$1" -o json | jq -r --arg k "$POOL" '.metadata.labels[$k] // "none"'; }
pool_is() { [ "$(pool_of "$1")" = "$2" ]; }
conflict_of() { kc get node "$1" -o json | jq -r --arg k "$CONFLICT" '.metadata.annotations[$k] // "none"'; }
conflict_is() { [ "$(conflict_of "$1")" = "$2" ]; }
uid_on() {
	kc -n "$GPUOP_NS" get pods -l app.kubernetes.io/component=driver -o json |
		jq -r --arg n "$1" '[.items[] | select(.spec.nodeName == $n) | .metadata.uid] | join(",")'
}
finding_msg() {
	kc get gpupolicy "$POLICY" -o json | jq -r --arg n "$1" --arg r "$2" \
		'[.status.nodes[]? | select(.name == $n) | .findings[] | select(.reason == $r) | .message] | join("")'
}
has_finding() { [ -n "$(finding_msg "$1" "$2")" ]; }
no_finding() { [ -z "$(finding_msg "$1" "$2")" ]; }
reconciled() {
	kc get gpupolicy "$POLICY" -o jsonpath='{.status.conditions[?(@.type=="Reconciled")].status}'
}

log "gpuop labels the nodes the pool's nodeSelector selects, and only those"
wait_for 120 pool_is "$S1" a100
wait_for 120 pool_is "$S2" a100
wait_for 120 pool_is "$C1" a100
assert_eq "none" "$(pool_of "$D1")" "a node no pool selects is the default's, unlabelled"
wait_for 30 bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' get gpupolicy $POLICY -o jsonpath='{.status.conditions[?(@.type==\"Reconciled\")].status}')\" = True ]"
msg=$(kc get gpupolicy "$POLICY" -o jsonpath='{.status.conditions[?(@.type=="Reconciled")].message}')
grep -qF "nodeSelector" <<<"$msg" && fail "the Reconciled condition still names the nodeSelector: $msg"
# labelled at once, or (when the default pool's driver pod was Ready on it
# first) moved through the driver upgrade (64_driver_pools_move)
grep -qE "labelled node $S1: $POOL=a100|node $S1: moving it to driver pool a100" "$GPUOP_LOG" ||
	fail "the log does not say $S1 was labelled"

log "the pool's DaemonSet carries its NVIDIADriver fields, the default's does not"
A=gpuop-driver-a100-ubuntu24.04
D=gpuop-driver-ubuntu24.04
wait_for 60 kc -n "$GPUOP_NS" get ds "$A"
t=$(kc -n "$GPUOP_NS" get ds "$A" -o json | jq -c '.spec.template')
assert_eq "system-cluster-critical" "$(jq -r '.spec.priorityClassName' <<<"$t")" "the pool's priority class"
assert_eq '["nvidia.com/gpu","dedicated"]' "$(jq -c '[.spec.tolerations[].key]' <<<"$t")" "the pool's toleration after the policy's"
assert_eq "ml" "$(jq -r '.metadata.labels.team' <<<"$t")" "the pool's label on its pods"
assert_eq "ml-platform" "$(jq -r '.metadata.annotations.owner' <<<"$t")" "the pool's annotation on its pods"
t=$(kc -n "$GPUOP_NS" get ds "$D" -o json | jq -c '.spec.template')
assert_eq "system-node-critical" "$(jq -r '.spec.priorityClassName' <<<"$t")" "the default's priority class"
assert_eq "null" "$(jq -r '.metadata.labels.team' <<<"$t")" "no pool label on the default's pods"

log "each node runs its pool's image"
wait_for 120 driver_image_is "$S1" "$IMG:580.95.05-ubuntu24.04"
wait_for 120 driver_image_is "$S2" "$IMG:580.95.05-ubuntu24.04"
wait_for 120 driver_image_is "$C1" "$IMG:580.95.05-ubuntu24.04"
wait_for 120 driver_image_is "$D1" "$IMG:595.91.07-ubuntu24.04"
c1=$(uid_on "$C1")

log "status and gpuop check show each pool's version and nodes"
pools_status() {
	kc get gpupolicy "$POLICY" -o json | jq -c '[.status.operands[] | select(.name == "driver")][0].pools // [] | map([.name, .version, .nodes])'
}
pools_status_is() { [ "$(pools_status)" = "$1" ]; }
wait_for 60 pools_status_is '[["a100","580.95.05",3],["default","595.91.07",1]]'
out=$("$GPUOP_BIN" check --kubeconfig "$KUBECONFIG" --namespace "$GPUOP_NS" -o json) || true
assert_eq "$(printf '%s\n' "$C1" "$S1" "$S2" | sort | jq -R . | jq -sc .)" \
	"$(jq -c '.operands[] | select(.name == "driver") | .pools[] | select(.name == "a100") | .nodeNames | sort' <<<"$out")" \
	"gpuop check -o json names the pool's nodes"
out=$("$GPUOP_BIN" check --kubeconfig "$KUBECONFIG" --namespace "$GPUOP_NS") || true
grep -qE "^  default +595\.91\.07 +1 node: $D1\$" <<<"$out" || fail "gpuop check's text does not show the default pool's node: $out"
grep -qE "^  a100 +580\.95\.05 +3 nodes: " <<<"$out" || fail "gpuop check's text does not show the a100 pool: $out"

log "two pools select $C1: it fails closed, both named, nothing moved"
kc patch gpupolicy "$POLICY" --type=json \
	-p '[{"op": "add", "path": "/spec/driver/pools/-", "value": {"name": "h100", "version": "590.48.01", "nodeSelector": {"gpu": "big"}}}]' >/dev/null
wait_for 120 conflict_is "$C1" "a100,h100"
wait_for 60 has_finding "$C1" DriverPoolConflict
msg=$(finding_msg "$C1" DriverPoolConflict)
grep -qF "Driver pools a100,h100 all select the node" <<<"$msg" || fail "the finding does not name both pools: $msg"
assert_eq "a100" "$(pool_of "$C1")" "the conflicting node keeps its pool label"
assert_eq "$c1" "$(uid_on "$C1")" "the conflicting node keeps its driver pod"
assert_eq "$IMG:580.95.05-ubuntu24.04" "$(driver_image_on "$C1")" "the conflicting node keeps its driver"
assert_eq "none" "$(conflict_of "$S1")" "a node one pool selects has no conflict"
out=$("$GPUOP_BIN" check --kubeconfig "$KUBECONFIG" --namespace "$GPUOP_NS" -o json) || true
assert_eq "DriverPoolConflict" "$(jq -r --arg n "$C1" '[.nodes[] | select(.name == $n) | .findings[] | select(.operand == "driver") | .reason] | join(",")' <<<"$out")" \
	"gpuop check names the conflict"
grep -qF "a100,h100" <<<"$(jq -r --arg n "$C1" '.nodes[] | select(.name == $n) | .findings[].message' <<<"$out")" ||
	fail "gpuop check's message does not name both pools"
assert_eq "True" "$(reconciled)" "Reconciled"

log "one pool selects it again: the conflict clears (within a resync)"
kc label node "$C1" gpu- >/dev/null
wait_for 120 conflict_is "$C1" none
wait_for 60 no_finding "$C1" DriverPoolConflict
assert_eq "a100" "$(pool_of "$C1")" "still the a100 pool's"
assert_eq "$c1" "$(uid_on "$C1")" "its driver pod kept"

log "no pool selects a node any more: its label goes, it is the default's"
kc label node "$S2" pool- >/dev/null
wait_for 240 pool_is "$S2" none
wait_for 120 driver_image_is "$S2" "$IMG:595.91.07-ubuntu24.04"
uncordoned() { [ -z "$(kc get node "$S2" -o jsonpath='{.spec.unschedulable}')" ]; }
wait_for 120 uncordoned
assert_eq "" "$(kc get node "$S2" -o json | jq -r '.metadata.annotations["gpuop.dev/driver-pool-wanted"] // ""')" "the wanted pool annotation gone"
assert_eq "a100" "$(pool_of "$S1")" "the other pool nodes keep theirs"

gpuop_uninstall
gpuop_stop
log "ok"
