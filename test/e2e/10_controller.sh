#!/usr/bin/env bash
# End-to-end: the controller against the lab (issue 3).
#   sample policy -> six DaemonSets with the right selectors and owners, the
#   nvidia RuntimeClass and the DCGM Service beside them;
#   driver.enabled=false -> driver DaemonSet deleted, others untouched (the
#   driver root is per node, from driver-ready); back;
#   a hand edit of a DaemonSet is put back; an invalid value -> Reconciled=False
#   naming the field; an API server restart -> gpuop resumes and still
#   reacts; deleting the policy removes every DaemonSet; clean shutdown.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
on_exit 'gpuop_kill; gpuop_uninstall'

OPERANDS=(driver container-toolkit device-plugin gpu-feature-discovery dcgm-exporter operator-validator)

gpuop_install
# Leader election off here: an API server down longer than the renew
# deadline makes a leader step down and exit (client-go semantics, tested in
# 30_ops); this test is about the watches resuming.
gpuop_start --leader-elect=false

kc apply -f "$GPUOP_SRC/deploy/sample-gpupolicy.yaml" >/dev/null
POLICY=$(kc get gpupolicies -o jsonpath='{.items[0].metadata.name}')
# One gpuop-driver whatever the nodes' OS (a full reference needs no OS
# pool; the driver per OS pool is test 64_os_pools): this test is about the
# controller, on nodes without NFD's OS labels.
kc patch gpupolicy "$POLICY" --type=merge -p '{"spec":{"driver":{"image":"nvcr.io/nvidia/driver:595.91.07-ubuntu24.04","repository":null,"version":null}}}' >/dev/null
UID_=$(kc get gpupolicy "$POLICY" -o jsonpath='{.metadata.uid}')

log "six DaemonSets appear, each selecting its deploy label, owned by the policy"
for op in "${OPERANDS[@]}"; do
	wait_for 30 kc -n "$GPUOP_NS" get ds "gpuop-$op"
	ds=$(kc -n "$GPUOP_NS" get ds "gpuop-$op" -o json --show-managed-fields)
	assert_eq "true" "$(jq -r --arg k "nvidia.com/gpu.deploy.$op" '.spec.template.spec.nodeSelector[$k]' <<<"$ds")" "nodeSelector of gpuop-$op"
	assert_eq "1" "$(jq -r '.spec.template.spec.nodeSelector | length' <<<"$ds")" "gpuop-$op selects by exactly one label"
	assert_eq "$UID_" "$(jq -r '.metadata.ownerReferences[0].uid' <<<"$ds")" "owner of gpuop-$op"
	assert_eq "true" "$(jq -r '.metadata.ownerReferences[0].controller' <<<"$ds")" "controller owner ref"
	assert_eq "true" "$(jq -r '.metadata.ownerReferences[0].blockOwnerDeletion' <<<"$ds")" "blockOwnerDeletion"
	assert_eq "gpuop" "$(jq -r '.metadata.labels["app.kubernetes.io/managed-by"]' <<<"$ds")" "managed-by label"
	assert_eq "gpuop" "$(jq -r '[.metadata.managedFields[] | select(.operation == "Apply")][0].manager' <<<"$ds")" "field manager"
done
# six operands and the MPS control daemon (with the device plugin)
assert_eq "7" "$(kc -n "$GPUOP_NS" get ds -o name | wc -l | tr -d ' ')" "number of DaemonSets"

log "beside them: the nvidia RuntimeClass and the DCGM exporter's Service, owned by the policy"
wait_for 30 kc get runtimeclass nvidia
wait_for 30 kc -n "$GPUOP_NS" get service gpuop-dcgm-exporter
assert_eq "nvidia" "$(kc get runtimeclass nvidia -o jsonpath='{.handler}')" "RuntimeClass handler"
assert_eq "$(gp_jq "$POLICY" .metadata.uid)" "$(kc -n "$GPUOP_NS" get service gpuop-dcgm-exporter -o jsonpath='{.metadata.ownerReferences[0].uid}')" "owner of the Service"
assert_eq "9400" "$(kc -n "$GPUOP_NS" get service gpuop-dcgm-exporter -o jsonpath='{.spec.ports[0].port}')" "metrics port"

log "status: observedGeneration and Reconciled=True"
wait_for 30 bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' get gpupolicy '$POLICY' -o jsonpath='{.status.conditions[?(@.type==\"Reconciled\")].status}')\" = True ]"
assert_eq "$(gp_jq "$POLICY" .metadata.generation)" "$(gp_jq "$POLICY" .status.observedGeneration)" "observedGeneration"

log "driver.enabled=false deletes the driver DaemonSet and leaves the others alone"
# (the driver root is each node's, from /run/nvidia/validations/driver-ready,
# not the policy's: no other DaemonSet changes when the driver goes)
untouched() { kc -n "$GPUOP_NS" get ds gpuop-container-toolkit gpuop-device-plugin gpuop-gpu-feature-discovery gpuop-dcgm-exporter gpuop-operator-validator -o jsonpath='{range .items[*]}{.metadata.uid}/{.metadata.generation}/{.metadata.resourceVersion} {end}'; }
before=$(untouched)
kc patch gpupolicy "$POLICY" --type=merge -p '{"spec":{"driver":{"enabled":false}}}' >/dev/null
wait_for 30 bash -c "! kubectl --kubeconfig '$KUBECONFIG' -n $GPUOP_NS get ds gpuop-driver >/dev/null 2>&1"
assert_eq "$before" "$(untouched)" "the other five DaemonSets untouched"
dp=$(kc -n "$GPUOP_NS" get ds gpuop-device-plugin -o json)
assert_eq "" "$(jq -r '.spec.template.spec.containers[0].env[] | select(.name == "NVIDIA_DRIVER_ROOT") | .value' <<<"$dp")" "no policy-wide driver root"
grep -qF '. /run/nvidia/validations/driver-ready' <<<"$(jq -r '.spec.template.spec.containers[0].command[2]' <<<"$dp")" ||
	fail "the device plugin does not take the node's driver root from driver-ready"
assert_eq "6" "$(kc -n "$GPUOP_NS" get ds -o name | wc -l | tr -d ' ')" "six DaemonSets left"

log "driver.enabled=true brings it back"
kc patch gpupolicy "$POLICY" --type=merge -p '{"spec":{"driver":{"enabled":true}}}' >/dev/null
wait_for 30 kc -n "$GPUOP_NS" get ds gpuop-driver

log "a hand edit of a DaemonSet's nodeSelector is put back"
kc -n "$GPUOP_NS" patch ds gpuop-container-toolkit --type=merge \
	-p '{"spec":{"template":{"spec":{"nodeSelector":{"nvidia.com/gpu.deploy.container-toolkit":"hacked"}}}}}' >/dev/null
wait_for 30 bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' -n $GPUOP_NS get ds gpuop-container-toolkit -o jsonpath='{.spec.template.spec.nodeSelector.nvidia\.com/gpu\.deploy\.container-toolkit}')\" = true ]"

log "a hand edit of an owned label is put back too"
kc -n "$GPUOP_NS" label ds gpuop-dcgm-exporter app.kubernetes.io/managed-by=someone-else --overwrite >/dev/null
wait_for 30 bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' -n $GPUOP_NS get ds gpuop-dcgm-exporter -o jsonpath='{.metadata.labels.app\.kubernetes\.io/managed-by}')\" = gpuop ]"

log "an invalid value only the operator can judge -> Reconciled=False naming the field"
# (the CRD schema cannot know which labels gpuop sets itself)
kc patch gpupolicy "$POLICY" --type=merge \
	-p '{"spec":{"daemonsets":{"labels":{"app.kubernetes.io/managed-by":"someone"}}}}' >/dev/null
wait_for 30 bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' get gpupolicy '$POLICY' -o jsonpath='{.status.conditions[?(@.type==\"Reconciled\")].status}')\" = False ]"
msg=$(gp_cond "$POLICY" Reconciled message)
case "$msg" in *"spec.daemonsets.labels.app.kubernetes.io/managed-by"*) ;; *) fail "Reconciled message does not name the field: $msg" ;; esac
assert_eq "InvalidSpec" "$(gp_cond "$POLICY" Reconciled reason)" "Reconciled reason"
# the rest keeps working: every DaemonSet is still there
assert_eq "7" "$(kc -n "$GPUOP_NS" get ds -o name | wc -l | tr -d ' ')" "DaemonSets kept while invalid"
kc patch gpupolicy "$POLICY" --type=json -p '[{"op":"remove","path":"/spec/daemonsets/labels"}]' >/dev/null
wait_for 30 bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' get gpupolicy '$POLICY' -o jsonpath='{.status.conditions[?(@.type==\"Reconciled\")].status}')\" = True ]"

log "restart the API server while gpuop runs; gpuop resumes"
"$GPUOP_SRC/test/lab/restart-apiserver"
wait_for 60 kc get --raw /readyz
kill -0 "$GPUOP_PID" || fail "gpuop died during the API server restart"
kc patch gpupolicy "$POLICY" --type=merge -p '{"spec":{"gfd":{"enabled":false}}}' >/dev/null
wait_for 90 bash -c "! kubectl --kubeconfig '$KUBECONFIG' -n $GPUOP_NS get ds gpuop-gpu-feature-discovery >/dev/null 2>&1"

log "deleting the policy removes every DaemonSet (garbage collection)"
kc delete gpupolicy "$POLICY" --wait=true >/dev/null
wait_for 60 bash -c "[ -z \"\$(kubectl --kubeconfig '$KUBECONFIG' -n $GPUOP_NS get ds -o name)\" ]"

log "clean shutdown on SIGTERM"
gpuop_stop
