#!/usr/bin/env bash
# End-to-end: a GPU Operator user's `kubectl patch clusterpolicy` lines work
# on a GpuPolicy with only the kind and name swapped (issue 21; the paths
# the GPU Operator's own e2e scripts patch, tests/scripts/
# update-clusterpolicy.sh at v26.7.0; docs/operations.md, "ClusterPolicy
# field paths on a GpuPolicy"). JSON patches, as those scripts send them:
#   /spec/devicePlugin/env: [] then /env/0 -> the env reaches the DaemonSet;
#   /spec/mig/strategy mixed -> MIG_STRATEGY of device plugin and GFD;
#   /spec/toolkit/installDir -> the toolkit's ROOT and its host path;
#   /spec/daemonsets/labels -> on the operand pods;
#   /spec/gfd/enabled false, then true -> the DaemonSet goes and comes back;
#   /spec/dcgm/enabled true (the standalone DCGM host engine, issue 39) ->
#     its DaemonSet gpuop-dcgm comes; false -> it goes;
#   /spec/vgpuManager/enabled true (vGPU, not implemented) -> the patch
#     is accepted, Reconciled=False names spec.vgpuManager, everything else
#     still applied; false -> Reconciled=True again;
#   a misspelt path is kept on the object (the CRD keeps unknown keys,
#     issue 38) and named by gpuop with the key it may mean.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
on_exit 'gpuop_kill; gpuop_uninstall'

NODE=$(unique gpu-cp)
gpuop_install
gpuop_start
kc apply -f "$GPUOP_SRC/deploy/sample-gpupolicy.yaml" >/dev/null
P=gpupolicy/$(kc get gpupolicies -o jsonpath='{.items[0].metadata.name}')
NAME=${P#gpupolicy/}
lab_node "$NODE" --label nvidia.com/gpu.present=true --label nvidia.com/gpu.deploy.driver=true \
	--label nvidia.com/gpu.deploy.container-toolkit=true --label nvidia.com/gpu.deploy.device-plugin=true \
	--label nvidia.com/gpu.deploy.gpu-feature-discovery=true
jpatch() { kc patch "$P" --type=json -p "$1" >/dev/null; }
# ds_jq APP FILTER: jq -e over the DaemonSet NVIDIA's tools select by app=APP
ds_jq() {
	kubectl --kubeconfig "$KUBECONFIG" -n "$GPUOP_NS" get daemonset -l "app=$1" -o json | jq -e ".items[0] | $2" >/dev/null
}
export -f ds_jq
export GPUOP_NS
wait_for 60 ds_jq nvidia-device-plugin-daemonset '.metadata.name'

log "devicePlugin env, as the GPU Operator's script adds it"
jpatch '[{"op": "add", "path": "/spec/devicePlugin/env", "value": []}]'
jpatch '[{"op": "add", "path": "/spec/devicePlugin/env/0", "value": {"name": "MY_TEST_ENV_NAME", "value": "test"}}]'
wait_for 60 ds_jq nvidia-device-plugin-daemonset \
	'[.spec.template.spec.containers[0].env[] | select(.name == "MY_TEST_ENV_NAME" and .value == "test")] | length == 1'

log "mig.strategy mixed reaches the device plugin and GFD"
jpatch '[{"op": "replace", "path": "/spec/mig/strategy", "value": "mixed"}]' 2>/dev/null ||
	jpatch '[{"op": "add", "path": "/spec/mig", "value": {"strategy": "mixed"}}]'
for app in nvidia-device-plugin-daemonset gpu-feature-discovery; do
	wait_for 60 ds_jq "$app" '[.spec.template.spec.containers[0].env[] | select(.name == "MIG_STRATEGY")][0].value == "mixed"'
done

log "toolkit.installDir"
jpatch '[{"op": "add", "path": "/spec/toolkit/installDir", "value": "/opt/nvidia"}]'
wait_for 60 ds_jq nvidia-container-toolkit-daemonset \
	'([.spec.template.spec.containers[0].env[] | select(.name == "ROOT")][0].value == "/opt/nvidia") and
	 ([.spec.template.spec.volumes[] | select(.hostPath.path == "/opt/nvidia")] | length == 1)'

log "daemonsets.labels reach the operand pods"
jpatch '[{"op": "add", "path": "/spec/daemonsets/labels", "value": {"cloudprovider": "aws", "platform": "kubernetes"}}]'
# The labels change the driver's template too, so the node first goes
# through the driver upgrade (docs/upgrade.md: about ten steps, each seen
# through the watches and re-planned at most 5 s apart) before its device
# plugin comes back with them: 90 s was too short on a loaded machine.
wait_for 300 bash -c "kubectl --kubeconfig '$KUBECONFIG' -n $GPUOP_NS get pods -l app=nvidia-device-plugin-daemonset \
	--field-selector spec.nodeName=$NODE -o json | jq -e '[.items[] | select(.metadata.labels.cloudprovider == \"aws\" and
	.metadata.labels.platform == \"kubernetes\" and .metadata.deletionTimestamp == null)] | length == 1'"

log "gfd.enabled false, then true"
jpatch '[{"op": "replace", "path": "/spec/gfd/enabled", "value": false}]'
wait_for 60 bash -c "[ -z \"\$(kubectl --kubeconfig '$KUBECONFIG' -n $GPUOP_NS get ds -l app=gpu-feature-discovery -o name)\" ]"
jpatch '[{"op": "replace", "path": "/spec/gfd/enabled", "value": true}]'
wait_for 60 ds_jq gpu-feature-discovery '.metadata.name'

log "dcgm.enabled true: the host engine's DaemonSet comes; false: it goes"
jpatch '[{"op": "add", "path": "/spec/dcgm", "value": {"enabled": true}}]'
wait_for 60 ds_jq nvidia-dcgm '.metadata.name == "gpuop-dcgm"'
jpatch '[{"op": "replace", "path": "/spec/dcgm/enabled", "value": false}]'
wait_for 60 bash -c "[ -z \"\$(kubectl --kubeconfig '$KUBECONFIG' -n $GPUOP_NS get ds -l app=nvidia-dcgm -o name)\" ]"

log "vgpuManager.enabled true: accepted by the API server, refused by gpuop with a condition"
jpatch '[{"op": "add", "path": "/spec/vgpuManager", "value": {"enabled": true}}]'
wait_for 60 bash -c "kubectl --kubeconfig '$KUBECONFIG' get $P -o json | jq -e '.status.conditions[] | select(.type == \"Reconciled\" and .status == \"False\" and .reason == \"InvalidSpec\" and (.message | contains(\"spec.vgpuManager\")) and (.message | contains(\"vGPU\")))' >/dev/null"
assert_eq "$(kc get "$P" -o jsonpath='{.metadata.generation}')" "$(kc get "$P" -o jsonpath='{.status.observedGeneration}')" \
	"observedGeneration after the refused field"
ds_jq gpu-feature-discovery '.metadata.name' || fail "the rest of the policy is no longer applied"
jpatch '[{"op": "replace", "path": "/spec/vgpuManager/enabled", "value": false}]'
wait_for 60 bash -c "kubectl --kubeconfig '$KUBECONFIG' get $P -o json | jq -e '.status.conditions[] | select(.type == \"Reconciled\" and .status == \"True\")' >/dev/null"

log "a misspelt path is kept and named by gpuop, with the key it may mean"
jpatch '[{"op": "add", "path": "/spec/devicePlugn", "value": {"enabled": false}}]'
assert_eq false "$(kc get "$P" -o json | jq -r '.spec.devicePlugn.enabled')" "the misspelt field read back"
wait_for 60 bash -c "kubectl --kubeconfig '$KUBECONFIG' get $P -o json | jq -e '.status.conditions[] | select(.type == \"Reconciled\" and .status == \"False\" and (.message | contains(\"spec.devicePlugn: unknown field, ignored (did you mean \\\"devicePlugin\\\"?)\")))' >/dev/null"
ds_jq nvidia-device-plugin-daemonset '.metadata.name' || fail "the misspelt key switched the device plugin off"
jpatch '[{"op": "remove", "path": "/spec/devicePlugn"}]'
wait_for 60 bash -c "kubectl --kubeconfig '$KUBECONFIG' get $P -o json | jq -e '.status.conditions[] | select(.type == \"Reconciled\" and .status == \"True\")' >/dev/null"
log "policy $NAME ok"

gpuop_uninstall
gpuop_stop
log "ok"
