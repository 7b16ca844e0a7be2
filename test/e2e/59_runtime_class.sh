#!/usr/bin/env bash
# End-to-end: spec.operator.runtimeClass (issue 39; AKS node images ship
# the handler nvidia-container-runtime). On the API server:
#   - the RuntimeClass gpuop applies has that name and handler, the
#     toolkit registers that handler (CONTAINERD_RUNTIME_CLASS), and the GPU
#     operands' pods run in it;
#   - renamed back to nvidia, the RuntimeClass nvidia comes and the one
#     gpuop applied as nvidia-container-runtime goes;
#   - an invalid name is refused by the CRD's pattern; another key of
#     spec.operator (NVIDIA's operator pod's) is a Reconciled=False problem
#     naming it, and the RuntimeClass stays.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
on_exit 'gpuop_kill; gpuop_uninstall'

AKS=nvidia-container-runtime
gpuop_install
gpuop_start
kc apply -f - >/dev/null <<YAML
apiVersion: gpuop.dev/v1alpha1
kind: GpuPolicy
metadata: {name: aks}
spec:
  driver: {enabled: false}
  operator: {runtimeClass: $AKS}
YAML
# rc_handler NAME: the handler of RuntimeClass NAME, or nothing
rc_handler() { kubectl --kubeconfig "$KUBECONFIG" get runtimeclass "$1" -o jsonpath='{.handler}' 2>/dev/null; }
ds_jq() {
	kubectl --kubeconfig "$KUBECONFIG" -n "$GPUOP_NS" get daemonset -l "app=$1" -o json | jq -e ".items[0] | $2" >/dev/null
}
export -f rc_handler ds_jq
export GPUOP_NS AKS
wait_for 60 bash -c "[ \"\$(rc_handler $AKS)\" = $AKS ]"
[ -z "$(rc_handler nvidia)" ] || fail "a RuntimeClass nvidia beside $AKS"
for app in nvidia-device-plugin-daemonset gpu-feature-discovery nvidia-dcgm-exporter nvidia-operator-validator; do
	wait_for 60 ds_jq "$app" '.spec.template.spec.runtimeClassName == env.AKS'
done
ds_jq nvidia-container-toolkit-daemonset \
	'[.spec.template.spec.containers[0].env[] | select(.name == "CONTAINERD_RUNTIME_CLASS")][0].value == env.AKS' ||
	fail "the toolkit does not register the handler $AKS"
assert_eq True "$(kc get gpupolicy aks -o json | jq -r '.status.conditions[] | select(.type == "Reconciled") | .status')" \
	"Reconciled with operator.runtimeClass"

log "renamed to nvidia: the old RuntimeClass goes"
kc patch gpupolicy aks --type=merge -p '{"spec": {"operator": {"runtimeClass": "nvidia"}}}' >/dev/null
wait_for 60 bash -c "[ \"\$(rc_handler nvidia)\" = nvidia ] && [ -z \"\$(rc_handler $AKS)\" ]"
wait_for 60 ds_jq nvidia-device-plugin-daemonset '.spec.template.spec.runtimeClassName == "nvidia"'

log "an invalid name, another operator key: said, nvidia kept"
kc patch gpupolicy aks --type=json -p '[{"op": "replace", "path": "/spec/operator/runtimeClass", "value": "x--"}]' >/dev/null 2>&1 &&
	fail "the API server took runtimeClass x-- (the CRD's pattern)"
kc patch gpupolicy aks --type=merge -p '{"spec": {"operator": {"runtimeClass": "nvidia", "use_ocp_driver_toolkit": true}}}' >/dev/null
wait_for 60 bash -c "kubectl --kubeconfig '$KUBECONFIG' get gpupolicy aks -o json | jq -e '.status.conditions[] | select(.type == \"Reconciled\" and .status == \"False\" and (.message | contains(\"spec.operator.use_ocp_driver_toolkit\")))' >/dev/null"
[ "$(rc_handler nvidia)" = nvidia ] || fail "the RuntimeClass nvidia went with a refused key beside it"

gpuop_uninstall
gpuop_stop
log "ok"
