#!/usr/bin/env bash
# End-to-end: GKE with Container-Optimized OS (issue 39). GKE installs the
# driver itself under /home/kubernetes/bin/nvidia: a GpuPolicy with the
# driver off, spec.hostPaths.driverInstallDir and spec.toolkit.installDir
# there, and the validator's per-component env, is applied and the
# DaemonSets on the server carry the paths as the GPU Operator's transforms
# do (docs/operands.md, "Host paths"):
#   - the validator's and the toolkit's driver-validation: DRIVER_INSTALL_DIR
#     and DRIVER_INSTALL_DIR_CTR_PATH, the directory mounted at its own path;
#   - driver-install-dir (toolkit, device plugin, validator): the host path;
#   - the toolkit's ROOT and install directory;
#   - validator.driver.env on both driver-validations, validator.plugin.env
#     on plugin-validation;
#   - no problem (Reconciled=True); the server's DaemonSets agree with
#     `gpuop render -f` on every hostPath;
#   - validator.plugin.env WITH_WORKLOAD=true: Reconciled=False naming
#     spec.validator.plugin.env, plugin-validation keeps WITH_WORKLOAD=false.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
on_exit 'gpuop_kill; gpuop_uninstall'

GKE=/home/kubernetes/bin/nvidia
NODE=$(unique gpu-cos)
gpuop_install
gpuop_start
cat >"$E2E_TMP/policy.yaml" <<YAML
apiVersion: gpuop.dev/v1alpha1
kind: GpuPolicy
metadata: {name: gke-cos}
spec:
  driver: {enabled: false}
  toolkit: {installDir: $GKE}
  hostPaths: {driverInstallDir: $GKE}
  validator:
    driver:
      env: [{name: DISABLE_DEV_CHAR_SYMLINK_CREATION, value: "true"}]
    plugin:
      env: [{name: WITH_WORKLOAD, value: "false"}, {name: E2E_PLUGIN, value: "1"}]
YAML
kc apply -f "$E2E_TMP/policy.yaml" >/dev/null
lab_node "$NODE" --label nvidia.com/gpu.present=true

# ds_jq APP FILTER: jq -e over the DaemonSet NVIDIA's tools select by app=APP
ds_jq() {
	kubectl --kubeconfig "$KUBECONFIG" -n "$GPUOP_NS" get daemonset -l "app=$1" -o json | jq -e ".items[0] | $2" >/dev/null
}
export -f ds_jq
export GPUOP_NS GKE
VALIDATOR=nvidia-operator-validator
TOOLKIT=nvidia-container-toolkit-daemonset
PLUGIN=nvidia-device-plugin-daemonset
wait_for 60 ds_jq "$VALIDATOR" '.metadata.name'
wait_for 60 bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' get gpupolicy gke-cos -o json | jq -r '.status.conditions[] | select(.type == \"Reconciled\") | .status')\" = True ]"

# driver-validation of the validator and of the toolkit
dv='(.spec.template.spec.initContainers[] | select(.name == "driver-validation"))'
for app in "$VALIDATOR" "$TOOLKIT"; do
	log "$app: driver-validation looks for the driver in $GKE"
	ds_jq "$app" "[$dv.env[] | select(.name == \"DRIVER_INSTALL_DIR\" and .value == env.GKE)] | length == 1" ||
		fail "$app: no DRIVER_INSTALL_DIR=$GKE"
	ds_jq "$app" "[$dv.env[] | select(.name == \"DRIVER_INSTALL_DIR_CTR_PATH\" and .value == env.GKE)] | length == 1" ||
		fail "$app: no DRIVER_INSTALL_DIR_CTR_PATH=$GKE"
	ds_jq "$app" "[$dv.volumeMounts[] | select(.name == \"driver-install-dir\" and .mountPath == env.GKE)] | length == 1" ||
		fail "$app: driver-install-dir not mounted at $GKE"
	ds_jq "$app" "[$dv.env[] | select(.name == \"DISABLE_DEV_CHAR_SYMLINK_CREATION\" and .value == \"true\")] | length == 1" ||
		fail "$app: validator.driver.env not on driver-validation"
done
for app in "$VALIDATOR" "$TOOLKIT" "$PLUGIN"; do
	ds_jq "$app" '[.spec.template.spec.volumes[] | select(.name == "driver-install-dir" and .hostPath.path == env.GKE)] | length == 1' ||
		fail "$app: the volume driver-install-dir is not the host's $GKE"
	ds_jq "$app" '[.spec.template.spec.volumes[] | select(.hostPath.path == "/run/nvidia/driver")] | length == 0' ||
		fail "$app: a volume still on /run/nvidia/driver"
done
ds_jq "$TOOLKIT" '([.spec.template.spec.containers[0].env[] | select(.name == "ROOT")][0].value == env.GKE) and
	([.spec.template.spec.volumes[] | select(.name == "toolkit-install-dir" and .hostPath.path == env.GKE)] | length == 1)' ||
	fail "toolkit: ROOT or its install dir is not $GKE"
pv='(.spec.template.spec.initContainers[] | select(.name == "plugin-validation"))'
ds_jq "$VALIDATOR" "[$pv.env[] | select(.name == \"E2E_PLUGIN\" and .value == \"1\")] | length == 1" ||
	fail "validator.plugin.env not on plugin-validation"
ds_jq "$VALIDATOR" "[$(printf '%s' "(.spec.template.spec.initContainers[] | select(.name == \"toolkit-validation\"))")
	.env[] | select(.name == \"E2E_PLUGIN\" or .name == \"DISABLE_DEV_CHAR_SYMLINK_CREATION\")] | length == 0" ||
	fail "a component's env reached another validation"

log "the server's DaemonSets and gpuop render -f mount the same host paths"
"$GPUOP_BIN" render -f "$E2E_TMP/policy.yaml" -n "$GPUOP_NS" --strict >"$E2E_TMP/render.yaml" 2>"$E2E_TMP/render.err" ||
	fail "gpuop render: $(cat "$E2E_TMP/render.err")"
kc create --dry-run=client -o json -f "$E2E_TMP/render.yaml" |
	jq -s '[.[] | if .kind == "List" then .items[] else . end]' >"$E2E_TMP/render.json"
paths='[.spec.template.spec.volumes[] | select(.hostPath) | "\(.name)=\(.hostPath.path)"] | sort'
for app in "$VALIDATOR" "$TOOLKIT" "$PLUGIN"; do
	want=$(jq -c --arg app "$app" "[.[] | select(.kind == \"DaemonSet\" and .metadata.labels.app == \$app)][0] | $paths" "$E2E_TMP/render.json")
	got=$(kc -n "$GPUOP_NS" get daemonset -l "app=$app" -o json | jq -c ".items[0] | $paths")
	[[ $want == *"driver-install-dir=$GKE"* ]] || fail "$app: gpuop render has no driver-install-dir=$GKE: $want"
	assert_eq "$want" "$got" "$app: host paths on the server vs gpuop render"
done

log "validator.plugin.env WITH_WORKLOAD=true: said, and not passed"
kc patch gpupolicy gke-cos --type=json \
	-p '[{"op": "replace", "path": "/spec/validator/plugin/env/0/value", "value": "true"}]' >/dev/null
wait_for 60 bash -c "kubectl --kubeconfig '$KUBECONFIG' get gpupolicy gke-cos -o json | jq -e '.status.conditions[] | select(.type == \"Reconciled\" and .status == \"False\" and (.message | contains(\"spec.validator.plugin.env\")) and (.message | contains(\"WITH_WORKLOAD\")))' >/dev/null"
ds_jq "$VALIDATOR" "[$pv.env[] | select(.name == \"WITH_WORKLOAD\")] | map(.value) == [\"false\"]" ||
	fail "plugin-validation's WITH_WORKLOAD is not false alone"

gpuop_uninstall
gpuop_stop
log "ok"
