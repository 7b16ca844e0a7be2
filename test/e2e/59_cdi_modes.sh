#!/usr/bin/env bash
# End-to-end: spec.cdi and spec.operator.defaultRuntime (issue 39). On the
# API server:
#   - in CDI mode (the default) gpuop applies the GPU Operator's three
#     RuntimeClasses, nvidia, nvidia-cdi and nvidia-legacy, each with the
#     handler of its name;
#   - cdi.enabled false: nvidia-cdi and nvidia-legacy go, nvidia stays, and
#     the toolkit's and device plugin's DaemonSets carry the legacy env;
#   - defaultRuntime crio: the toolkit's DaemonSet configures CRI-O (its
#     config and drop-in directories, the hooks directory, no containerd
#     socket; the OCI hook in the legacy mode, the nvidia handlers in CDI
#     mode) and, in the legacy mode, no operand names a RuntimeClass;
# each time the toolkit's and device plugin's env and volumes on the server
# are what `gpuop render` prints for the same policy, and the policy is
# Reconciled.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
on_exit 'gpuop_kill; gpuop_uninstall'

gpuop_install
gpuop_start
# policy SPEC_JSON: applies GpuPolicy cdi with that spec (driver off) and
# keeps it in $E2E_TMP/policy.json for gpuop render
policy() {
	jq -n --argjson s "$1" '{apiVersion: "gpuop.dev/v1alpha1", kind: "GpuPolicy", metadata: {name: "cdi"},
		spec: ({driver: {enabled: false}} * $s)}' >"$E2E_TMP/policy.json"
	kc apply -f "$E2E_TMP/policy.json" >/dev/null
}
rc_handler() { kubectl --kubeconfig "$KUBECONFIG" get runtimeclass "$1" -o jsonpath='{.handler}' 2>/dev/null; }
# shape: what is compared of a DaemonSet: its container's env (name and
# value) and its volumes (name and host path), sorted by name
shape='.spec.template.spec | {env: ([.containers[0].env[] | {name, value}] | sort_by(.name)),
	vols: ([.volumes[] | {name, path: .hostPath.path}] | sort_by(.name)),
	rc: .runtimeClassName}'
# same_as_render APP DS: the DaemonSet labelled app=APP on the server has the
# shape of DaemonSet DS in `gpuop render` of the policy
same_as_render() {
	local got want
	got=$(kubectl --kubeconfig "$KUBECONFIG" -n "$GPUOP_NS" get daemonset -l "app=$1" -o json |
		jq -cS ".items[0] | $shape") || return 1
	want=$("$GPUOP_BIN" render -f "$E2E_TMP/policy.json" -n "$GPUOP_NS" 2>/dev/null |
		"$LAB_DIR/bin/kubectl" create --dry-run=client -o json -f - |
		jq -s --arg ds "$2" '[.[] | if .kind == "List" then .items[] else . end | select(.metadata.name == $ds)][0]' |
		jq -cS "$shape")
	[ "$got" = "$want" ]
}
ds_env() {
	kubectl --kubeconfig "$KUBECONFIG" -n "$GPUOP_NS" get daemonset -l "app=$1" -o json |
		jq -r --arg n "$2" '[.items[0].spec.template.spec.containers[0].env[] | select(.name == $n)][0].value // ""'
}
reconciled() {
	kubectl --kubeconfig "$KUBECONFIG" get gpupolicy cdi -o json |
		jq -e '.status.conditions[] | select(.type == "Reconciled" and .status == "True")' >/dev/null
}
export -f rc_handler same_as_render ds_env reconciled
export GPUOP_NS GPUOP_BIN E2E_TMP LAB_DIR shape
TK=nvidia-container-toolkit-daemonset DP=nvidia-device-plugin-daemonset
# rendered: both DaemonSets on the server as rendered, the policy Reconciled
rendered() {
	wait_for 90 same_as_render "$TK" gpuop-container-toolkit
	wait_for 90 same_as_render "$DP" gpuop-device-plugin
	wait_for 60 reconciled
}

log "CDI mode (the default): three RuntimeClasses"
# this test's GpuPolicy must be the active one: no older one left
wait_for 120 bash -c "[ -z \"\$(kubectl --kubeconfig '$KUBECONFIG' get gpupolicies -o name)\" ]"
policy '{}'
for rc in nvidia nvidia-cdi nvidia-legacy; do
	wait_for 60 bash -c "[ \"\$(rc_handler $rc)\" = $rc ]"
done
rendered
assert_eq true "$(ds_env "$TK" CDI_ENABLED)" "the toolkit's CDI_ENABLED in CDI mode"
assert_eq cdi-annotations,cdi-cri "$(ds_env "$DP" DEVICE_LIST_STRATEGY)" "the device plugin's strategy in CDI mode"

log "cdi.enabled false: the legacy mode"
policy '{"cdi": {"enabled": false, "default": false}}'
wait_for 60 bash -c '[ -z "$(rc_handler nvidia-cdi)" ] && [ -z "$(rc_handler nvidia-legacy)" ]'
assert_eq nvidia "$(rc_handler nvidia)" "the nvidia RuntimeClass in the legacy mode"
rendered
assert_eq "" "$(ds_env "$TK" CDI_ENABLED)" "the toolkit's CDI_ENABLED in the legacy mode"
assert_eq envvar "$(ds_env "$DP" DEVICE_LIST_STRATEGY)" "the device plugin's strategy in the legacy mode"

log "defaultRuntime crio, legacy mode: the OCI hook, no RuntimeClass on the operands"
policy '{"cdi": {"enabled": false}, "operator": {"defaultRuntime": "crio"}}'
rendered
assert_eq crio "$(ds_env "$TK" RUNTIME)" "the toolkit's RUNTIME"
assert_eq hook "$(ds_env "$TK" CRIO_CONFIG_MODE)" "CRIO_CONFIG_MODE in the legacy mode"
assert_eq /etc/crio/crio.conf.d/99-nvidia.conf "$(ds_env "$TK" RUNTIME_DROP_IN_CONFIG_HOST_PATH)" "CRI-O's drop-in"
vols=$(kc -n "$GPUOP_NS" get daemonset -l "app=$TK" -o json |
	jq -c '[.items[0].spec.template.spec.volumes[] | select(.name | test("crio|containerd")) | [.name, .hostPath.path]]')
assert_eq '[["crio-hooks","/usr/share/containers/oci/hooks.d"],["crio-config","/etc/crio"],["crio-drop-in-config","/etc/crio/crio.conf.d"]]' \
	"$vols" "the toolkit's CRI-O volumes"
for app in "$DP" gpu-feature-discovery nvidia-dcgm-exporter nvidia-operator-validator; do
	got=$(kc -n "$GPUOP_NS" get daemonset -l "app=$app" -o json | jq -r '.items[0].spec.template.spec.runtimeClassName // ""')
	assert_eq "" "$got" "$app's RuntimeClass on CRI-O in the legacy mode"
done

log "defaultRuntime crio, CDI mode: the nvidia handlers in CRI-O's config"
policy '{"operator": {"defaultRuntime": "crio"}}'
wait_for 60 bash -c '[ "$(rc_handler nvidia-cdi)" = nvidia-cdi ] && [ "$(rc_handler nvidia-legacy)" = nvidia-legacy ]'
rendered
assert_eq config "$(ds_env "$TK" CRIO_CONFIG_MODE)" "CRIO_CONFIG_MODE in CDI mode"
assert_eq nvidia "$(kc -n "$GPUOP_NS" get daemonset -l "app=$DP" -o jsonpath='{.items[0].spec.template.spec.runtimeClassName}')" \
	"the device plugin's RuntimeClass on CRI-O in CDI mode"

gpuop_uninstall
gpuop_stop
log "ok"
