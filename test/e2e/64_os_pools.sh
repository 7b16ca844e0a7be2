#!/usr/bin/env bash
# End-to-end: the driver per OS pool (SPEC 4b, issue 21 section 3).
#   an Ubuntu 24.04 and a RHEL 9.4 GPU node (NFD's os_release labels) get
#   driver pods from gpuop-driver-ubuntu24.04 and gpuop-driver-rhel9 with
#   images ...:595.91.07-ubuntu24.04 and ...:595.91.07-rhel9 (NVIDIA's tag
#   rule: only the major version for rhel);
#   a GPU node without OS labels is the finding OsLabelsMissing naming the
#   labels it lacks; status and `gpuop check` count the pools as the one
#   driver operand (operands[driver].daemonSets);
#   the GPU Operator's `kubectl patch ... /spec/driver/version` works on a
#   GpuPolicy and rolls both pools;
#   removing the last node of a pool deletes its DaemonSet;
#   a full reference gives the one gpuop-driver back.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
on_exit 'gpuop_kill; gpuop_uninstall'

OS=feature.node.kubernetes.io/system-os_release
POLICY=os-pools
U=$(unique os-ubuntu)
R=$(unique os-rhel)
X=$(unique os-none)

gpuop_install
gpuop_start --leader-elect=false

gpu=(--label nvidia.com/gpu.present=true --label nvidia.com/gpu.deploy.driver=true)
lab_node "$U" "${gpu[@]}" --label "$OS.ID=ubuntu" --label "$OS.VERSION_ID=24.04" \
	--label "$OS.VERSION_ID.major=24" --label "$OS.VERSION_ID.minor=04"
lab_node "$R" "${gpu[@]}" --label "$OS.ID=rhel" --label "$OS.VERSION_ID=9.4" \
	--label "$OS.VERSION_ID.major=9" --label "$OS.VERSION_ID.minor=4"
lab_node "$X" "${gpu[@]}" --no-os

# Only the driver: the pools are about it. version is in the object, so a
# JSON patch can replace it (as on a ClusterPolicy).
kc apply -f - >/dev/null <<EOF
apiVersion: gpuop.dev/v1alpha1
kind: GpuPolicy
metadata: {name: $POLICY}
spec:
  driver: {repository: nvcr.io/nvidia, image: driver, version: "595.91.07"}
  toolkit: {enabled: false}
  devicePlugin: {enabled: false}
  gfd: {enabled: false}
  dcgmExporter: {enabled: false}
  validator: {enabled: false}
EOF

status_has() {
	kc get gpupolicy "$POLICY" -o json |
		jq -e --arg n "$1" --arg o "$2" --arg r "$3" \
			'[.status.nodes[]? | select(.name == $n) | .findings[] | select(.operand == $o and .reason == $r)] | length > 0' >/dev/null
}
ds_gone() { ! kc -n "$GPUOP_NS" get ds "$1" >/dev/null 2>&1; }

log "one driver DaemonSet per OS pool, each selecting its pool's OS labels"
wait_for 60 kc -n "$GPUOP_NS" get ds gpuop-driver-ubuntu24.04
wait_for 60 kc -n "$GPUOP_NS" get ds gpuop-driver-rhel9
sel=$(kc -n "$GPUOP_NS" get ds gpuop-driver-rhel9 -o json | jq -c '.spec.template.spec.nodeSelector')
assert_eq "rhel" "$(jq -r --arg k "$OS.ID" '.[$k]' <<<"$sel")" "rhel9 pool selects ID"
assert_eq "9" "$(jq -r --arg k "$OS.VERSION_ID.major" '.[$k]' <<<"$sel")" "rhel9 pool selects VERSION_ID.major (NVIDIA's pools)"
sel=$(kc -n "$GPUOP_NS" get ds gpuop-driver-ubuntu24.04 -o json | jq -c '.spec.template.spec.nodeSelector')
assert_eq "24.04" "$(jq -r --arg k "$OS.VERSION_ID" '.[$k]' <<<"$sel")" "ubuntu24.04 pool selects VERSION_ID"
ds_gone gpuop-driver || fail "a plain gpuop-driver exists beside the pools"

log "each node runs the driver image of its OS"
wait_for 60 driver_image_is "$U" nvcr.io/nvidia/driver:595.91.07-ubuntu24.04
wait_for 60 driver_image_is "$R" nvcr.io/nvidia/driver:595.91.07-rhel9
assert_eq "" "$(driver_image_on "$X")" "no driver pod on the node without OS labels"

log "a GPU node without OS labels is a finding naming what it lacks"
wait_for 60 status_has "$X" driver OsLabelsMissing
msg=$(kc get gpupolicy "$POLICY" -o json | jq -r --arg n "$X" '.status.nodes[] | select(.name == $n) | .findings[] | select(.operand == "driver") | .message')
grep -qF "$OS.ID and $OS.VERSION_ID" <<<"$msg" || fail "message does not name the labels: $msg"

log "status and gpuop check: the pools are the one driver operand"
wait_for 60 bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' get gpupolicy $POLICY -o json | jq -c '[.status.operands[] | select(.name == \"driver\")][0] | [.daemonSets, .runningNodes, .expectedNodes]')\" = '[[\"gpuop-driver-rhel9\",\"gpuop-driver-ubuntu24.04\"],2,3]' ]"
rc=0
out=$("$GPUOP_BIN" check --kubeconfig "$KUBECONFIG" --namespace "$GPUOP_NS" -o json) || rc=$?
assert_eq "1" "$rc" "gpuop check exits 1 (the node without OS labels)"
assert_eq "1" "$(jq '[.operands[] | select(.name == "driver")] | length' <<<"$out")" "check: one driver operand"
assert_eq '["gpuop-driver-rhel9","gpuop-driver-ubuntu24.04"]' \
	"$(jq -c '.operands[] | select(.name == "driver") | .daemonSets' <<<"$out")" "check lists the pools' DaemonSets"
assert_eq "2" "$(jq '.operands[] | select(.name == "driver") | .desiredNumberScheduled' <<<"$out")" "desired summed over the pools"
assert_eq "[]" "$(jq -c --arg u "$U" --arg r "$R" '[.nodes[] | select(.name == $u or .name == $r) | .findings[]]' <<<"$out")" "no finding on the pooled nodes"

log "the GPU Operator's patch of /spec/driver/version works on a GpuPolicy"
kc patch gpupolicy "$POLICY" --type=json -p '[{"op": "replace", "path": "/spec/driver/version", "value": "580.95.05"}]' >/dev/null
wait_for 90 driver_image_is "$U" nvcr.io/nvidia/driver:580.95.05-ubuntu24.04
wait_for 90 driver_image_is "$R" nvcr.io/nvidia/driver:580.95.05-rhel9

log "a bad version is a condition naming spec.driver.version"
kc patch gpupolicy "$POLICY" --type=merge -p '{"spec":{"driver":{"version":"580!95"}}}' >/dev/null
wait_for 30 bash -c "kubectl --kubeconfig '$KUBECONFIG' get gpupolicy $POLICY -o jsonpath='{.status.conditions[?(@.type==\"Reconciled\")].message}' | grep -F spec.driver.version >/dev/null"
kc patch gpupolicy "$POLICY" --type=merge -p '{"spec":{"driver":{"version":"580.95.05"}}}' >/dev/null
wait_for 30 bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' get gpupolicy $POLICY -o jsonpath='{.status.conditions[?(@.type==\"Reconciled\")].status}')\" = True ]"

log "the last node of a pool goes: its DaemonSet goes"
kc delete node "$R" --wait=true >/dev/null
wait_for 60 ds_gone gpuop-driver-rhel9
kc -n "$GPUOP_NS" get ds gpuop-driver-ubuntu24.04 >/dev/null || fail "the ubuntu pool's DaemonSet went too"
grep -qF "deleted DaemonSet" "$GPUOP_LOG" || fail "the log does not say the DaemonSet was deleted"

log "a full reference: the one gpuop-driver, the pools' DaemonSets deleted"
kc patch gpupolicy "$POLICY" --type=merge \
	-p '{"spec":{"driver":{"image":"nvcr.io/nvidia/driver:595.91.07-ubuntu24.04","repository":null,"version":null}}}' >/dev/null
wait_for 60 kc -n "$GPUOP_NS" get ds gpuop-driver
wait_for 60 ds_gone gpuop-driver-ubuntu24.04
wait_for 90 driver_image_is "$X" nvcr.io/nvidia/driver:595.91.07-ubuntu24.04
wait_for 60 bash -c "! kubectl --kubeconfig '$KUBECONFIG' get gpupolicy $POLICY -o json | jq -e '[.status.nodes[]?.findings[] | select(.reason == \"OsLabelsMissing\")] | length > 0' >/dev/null"

gpuop_uninstall
gpuop_stop
log "ok"
