#!/usr/bin/env bash
# End-to-end: NVIDIA's DRA driver as an operand (issue 42). On the lab
# (Kubernetes 1.36, resource.k8s.io/v1 served; kwok GPU nodes):
#   - spec.draDriver.enabled with nodeLabeling: the DeviceClasses
#     gpu.nvidia.com, mig.nvidia.com, vfio.gpu.nvidia.com are applied (their
#     CEL selecting the driver's devices by type), the DeviceClasses
#     condition is True; the kubelet plugin's DaemonSet gpuop-dra-driver
#     selects nvidia.com/gpu.deploy.dra-driver=true, gpuop labels a fresh
#     GPU node (NFD's label only) for it, and its pods run on that node and
#     on a hand-labelled one;
#   - the ValidatingAdmissionPolicy from deploy/10-rbac.yaml lets the
#     plugin's account write the ResourceSlice of its own node only
#     (impersonated, with the node-name claim a pod's token carries);
#   - a malformed field (a feature gate named "bad gate!") while it runs:
#     Reconciled False naming spec.draDriver.featureGates.bad gate!, the
#     running DaemonSet kept as it was (no FEATURE_GATES rolled out);
#   - disabled: the DaemonSet and the DeviceClasses go;
#   - enabled again with that malformed field: the condition names it and
#     nothing is applied (no DaemonSet, no DeviceClass); fixed: applied.
# Where the API server does not serve resource.k8s.io/v1 the DeviceClasses
# condition is False (APINotServed): the lab serves it and its flags are
# set at `up`, so that is unit-tested (test_controller, test_status).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
CLASSES=(gpu.nvidia.com mig.nvidia.com vfio.gpu.nvidia.com)
SLICE=$(unique dra-slice)
on_exit 'gpuop_kill; gpuop_uninstall; kc delete deviceclass '"${CLASSES[*]}"' --ignore-not-found >/dev/null 2>&1 || true; kc delete resourceslice '"$SLICE"' --ignore-not-found >/dev/null 2>&1 || true'

L=nvidia.com/gpu.deploy
NFD=feature.node.kubernetes.io/pci-10de.present
FRESH=$(unique gpu-dra-fresh)
HAND=$(unique gpu-dra-hand)
SA=system:serviceaccount:$GPUOP_NS:gpuop-dra-driver

grep -qx deviceclasses.resource.k8s.io <<<"$(kc api-resources --api-group=resource.k8s.io -o name)" ||
	fail "the lab's API server does not serve resource.k8s.io DeviceClasses"
kc delete deviceclass "${CLASSES[@]}" --ignore-not-found >/dev/null 2>&1 || true

gpuop_install
gpuop_start
# policy DRA_SPEC: the DRA driver alone (its prerequisite, the driver,
# disabled: host-provided), with node labelling
policy() {
	kc apply -f - >/dev/null <<YAML
apiVersion: gpuop.dev/v1alpha1
kind: GpuPolicy
metadata: {name: dra}
spec:
  nodeLabeling: {enabled: true}
  driver: {enabled: false}
  toolkit: {enabled: false}
  devicePlugin: {enabled: false}
  gfd: {enabled: false}
  dcgmExporter: {enabled: false}
  validator: {enabled: false}
  draDriver: $1
YAML
}
ds_jq() { kc -n "$GPUOP_NS" get daemonset gpuop-dra-driver -o json | jq -e "$1" >/dev/null; }
ds_gone() { ! kc -n "$GPUOP_NS" get daemonset gpuop-dra-driver >/dev/null 2>&1; }
classes_there() { kc get deviceclass "${CLASSES[@]}" >/dev/null 2>&1; }
classes_gone() {
	local c
	for c in "${CLASSES[@]}"; do
		! kc get deviceclass "$c" >/dev/null 2>&1 || return 1
	done
}
cond_is() { [ "$(gp_cond dra "$1" "$2")" = "$3" ]; }
# ready_on NODE: Running and Ready DRA plugin pods on NODE
ready_on() {
	kc -n "$GPUOP_NS" get pods -l app.kubernetes.io/component=dra-driver --field-selector "spec.nodeName=$1" -o json |
		jq '[.items[] | select(.status.phase == "Running") | select(any(.status.conditions[]?; .type == "Ready" and .status == "True"))] | length'
}
one_on() { [ "$(ready_on "$1")" = 1 ]; }
# reconciled_at GEN: the status has seen generation GEN (observedGeneration)
reconciled_at() { [ "$(gp_jq dra '.status.observedGeneration // 0')" -ge "$1" ]; }

log "enabled: the DeviceClasses, the plugin's DaemonSet, its pods on the GPU nodes labelled for it"
policy '{enabled: true}'
lab_node "$FRESH" --label "$NFD=true"
lab_node "$HAND" --label nvidia.com/gpu.present=true --label "$L.dra-driver=true"
wait_for 60 classes_there
for i in 0 1 2; do
	type=${CLASSES[$i]%%.*}
	cel=$(kc get deviceclass "${CLASSES[$i]}" -o jsonpath='{.spec.selectors[0].cel.expression}')
	assert_eq "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == '$type'" \
		"$cel" "DeviceClass ${CLASSES[$i]}'s selector"
done
wait_for 60 cond_is DeviceClasses status True
wait_for 60 ds_jq '.spec.template.spec.nodeSelector["nvidia.com/gpu.deploy.dra-driver"] == "true"'
ds_jq '.spec.template.spec.serviceAccountName == "gpuop-dra-driver"' || fail "the plugin does not run as gpuop-dra-driver"
ds_jq '.spec.template.spec.containers[0].name == "gpus" and
	(.spec.template.spec.initContainers[0].name == "driver-validation")' ||
	fail "the plugin's pod is not driver-validation then gpus"
ds_jq '[.spec.template.spec.volumes[].hostPath.path] | index("/var/lib/kubelet/plugins_registry") and index("/var/lib/kubelet/plugins") and index("/var/run/cdi")' ||
	fail "the plugin does not mount the kubelet's plugin directories and /var/run/cdi"
wait_for 60 bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' get node '$FRESH' -o jsonpath='{.metadata.labels.nvidia\\.com/gpu\\.deploy\\.dra-driver}')\" = true ]"
wait_for 120 one_on "$FRESH"
wait_for 120 one_on "$HAND"
assert_eq True "$(gp_cond dra Reconciled status)" "Reconciled with the DRA driver"

log "the ValidatingAdmissionPolicy: the plugin's account writes its own node's slice only"
slice() { # slice NODE: the ResourceSlice $SLICE of NODE, as YAML
	printf 'apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: %s}\nspec:\n  driver: gpu.nvidia.com\n  nodeName: %s\n  pool: {name: %s, generation: 1, resourceSliceCount: 1}\n  devices: []\n' \
		"$SLICE" "$1" "$1"
}
as_plugin_on() { # as_plugin_on NODE ARGS...: kubectl as the plugin's account on NODE
	local node=$1
	shift
	kc --as="$SA" --as-user-extra="authentication.kubernetes.io/node-name=$node" "$@"
}
denied=$(slice "$HAND" | as_plugin_on "$FRESH" create -f - 2>&1) && fail "the plugin on $FRESH wrote $HAND's slice"
grep -qF "may not modify cluster or node resourceslices" <<<"$denied" || fail "not denied by the policy: $denied"
slice "$FRESH" | as_plugin_on "$FRESH" create -f - >/dev/null || fail "the plugin on $FRESH may not write its own slice"
as_plugin_on "$HAND" delete resourceslice "$SLICE" >/dev/null 2>&1 && fail "the plugin on $HAND deleted $FRESH's slice"
as_plugin_on "$FRESH" delete resourceslice "$SLICE" >/dev/null

log "a malformed field while it runs: named, the running DaemonSet kept"
gen0=$(kc -n "$GPUOP_NS" get daemonset gpuop-dra-driver -o jsonpath='{.metadata.generation}')
policy '{enabled: true, featureGates: {"bad gate!": true, MPSSupport: true}}'
gen=$(gp_jq dra .metadata.generation)
wait_for 60 reconciled_at "$gen"
wait_for 60 cond_is Reconciled status False
grep -qF 'spec.draDriver.featureGates.bad gate!' <<<"$(gp_cond dra Reconciled message)" ||
	fail "Reconciled does not name the bad gate: $(gp_cond dra Reconciled message)"
assert_eq "$gen0" "$(kc -n "$GPUOP_NS" get daemonset gpuop-dra-driver -o jsonpath='{.metadata.generation}')" \
	"the running DaemonSet's generation with a malformed field"
ds_jq '[.spec.template.spec.containers[0].env[].name] | index("FEATURE_GATES") | not' ||
	fail "a feature gate rolled out beside a malformed one"
classes_there || fail "the DeviceClasses went with a malformed field"

log "disabled: the DaemonSet and the DeviceClasses go"
policy '{enabled: false}'
wait_for 60 ds_gone
wait_for 60 classes_gone
wait_for 60 cond_is DeviceClasses status ""

log "enabled with the malformed field: named, nothing applied; fixed: applied"
policy '{enabled: true, featureGates: {"bad gate!": true}}'
gen=$(gp_jq dra .metadata.generation)
wait_for 60 reconciled_at "$gen"
wait_for 60 cond_is Reconciled status False
grep -qF 'spec.draDriver.featureGates.bad gate!' <<<"$(gp_cond dra Reconciled message)" ||
	fail "Reconciled does not name the bad gate: $(gp_cond dra Reconciled message)"
ds_gone || fail "a DaemonSet was applied from a malformed spec.draDriver"
classes_gone || fail "DeviceClasses were applied from a malformed spec.draDriver"
policy '{enabled: true, featureGates: {MPSSupport: true}}'
wait_for 60 ds_jq '[.spec.template.spec.containers[0].env[] | select(.name == "FEATURE_GATES")][0].value == "MPSSupport=true"'
wait_for 60 classes_there
wait_for 60 cond_is Reconciled status True

gpuop_uninstall
wait_for 60 classes_gone # owned by the GpuPolicy: collected with it
gpuop_stop
log "ok"
