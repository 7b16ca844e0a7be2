#!/usr/bin/env bash
# End-to-end: the device plugin's sharing configs (issue 41, part 1). On the
# lab (kwok GPU nodes: their pods run no containers, so the rendered objects
# and the pods' creation are what is checked):
#   - a ConfigMap with the keys default and ts-4 (time-slicing, 4 replicas,
#     the device plugin's config format) and spec.devicePlugin.config
#     naming it: the device plugin's and GFD's DaemonSets get
#     config-manager-init and the config-manager sidecar (the device
#     plugin's image, each signalling its own main process), the ConfigMap's
#     volume and the emptyDir /config, CONFIG_FILE, one PID namespace, and
#     their own accounts with a token; the policy is Reconciled;
#   - a node labelled nvidia.com/device-plugin.config=ts-4 gets both pods,
#     created with the account and its token (the accounts exist: the
#     chart's RBAC) and running;
#   - the accounts may get, list and watch nodes and nothing else asked
#     here (no node patch, no Secrets, no pods);
#   - the config taken out of the policy: both DaemonSets as before, no
#     config-manager, the token-less gpuop-operand.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
on_exit 'gpuop_kill; gpuop_uninstall; kc -n "$GPUOP_NS" delete configmap time-slicing-config --ignore-not-found >/dev/null 2>&1 || true'

L=nvidia.com/gpu.deploy
NODE=$(unique gpu-sharing)
CM=time-slicing-config

gpuop_install
gpuop_start
kc -n "$GPUOP_NS" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: ConfigMap
metadata: {name: $CM}
data:
  default: |-
    version: v1
    flags:
      migStrategy: none
  ts-4: |-
    version: v1
    flags:
      migStrategy: none
    sharing:
      timeSlicing:
        resources:
          - name: nvidia.com/gpu
            replicas: 4
YAML
# the chain below the device plugin host-provided (disabled), so the kwok
# node needs only the two deploy labels
kc apply -f - >/dev/null <<YAML
apiVersion: gpuop.dev/v1alpha1
kind: GpuPolicy
metadata: {name: sharing}
spec:
  driver: {enabled: false}
  toolkit: {enabled: false}
  validator: {enabled: false}
  dcgmExporter: {enabled: false}
  findings: {eventGracePeriodSeconds: 0}
  devicePlugin:
    config: {name: $CM, default: default}
YAML

# ds_jq DS FILTER: jq -e FILTER on DaemonSet DS in gpuop's namespace
ds_jq() { kc -n "$GPUOP_NS" get daemonset "$1" -o json | jq -e "$2" >/dev/null; }
# ctr_env DS CONTAINER NAME: the value of env NAME of CONTAINER (init or not)
# of DS ("" for an empty one, which the API server keeps without a value
# field), <unset> without it
ctr_env() {
	kc -n "$GPUOP_NS" get daemonset "$1" -o json | jq -r --arg c "$2" --arg n "$3" \
		'[(.spec.template.spec.initContainers // []) + .spec.template.spec.containers | .[] |
		  select(.name == $c) | .env[]? | select(.name == $n)] |
		 if length == 0 then "<unset>" else (.[0].value // "") end'
}
has_config_manager() { ds_jq "$1" '.spec.template.spec.containers | any(.name == "config-manager")'; }

check_ds() { # DS MAIN SA
	local ds=$1 main=$2 sa=$3
	ds_jq "$ds" '.spec.template.spec.initContainers | any(.name == "config-manager-init")' ||
		fail "$ds has no config-manager-init"
	ds_jq "$ds" '.spec.template.spec.initContainers[-1].name == "config-manager-init"' ||
		fail "$ds: config-manager-init is not after the gates"
	ds_jq "$ds" '[.spec.template.spec.containers[] | select(.name == "config-manager")][0] |
		.image == "nvcr.io/nvidia/k8s-device-plugin:v0.20.0" and .command == ["config-manager"] and
		.securityContext.privileged == true' || fail "$ds: the config-manager sidecar is not NVIDIA's"
	local c want
	for c in config-manager-init config-manager; do
		for want in NODE_LABEL=nvidia.com/device-plugin.config CONFIG_FILE_SRCDIR=/available-configs \
			CONFIG_FILE_DST=/config/config.yaml DEFAULT_CONFIG=default FALLBACK_STRATEGIES=empty KUBECONFIG=; do
			assert_eq "${want#*=}" "$(ctr_env "$ds" "$c" "${want%%=*}")" "$ds $c ${want%%=*}"
		done
	done
	assert_eq true "$(ctr_env "$ds" config-manager-init ONESHOT)" "$ds config-manager-init ONESHOT"
	assert_eq false "$(ctr_env "$ds" config-manager-init SEND_SIGNAL)" "$ds config-manager-init SEND_SIGNAL"
	assert_eq false "$(ctr_env "$ds" config-manager ONESHOT)" "$ds config-manager ONESHOT"
	assert_eq true "$(ctr_env "$ds" config-manager SEND_SIGNAL)" "$ds config-manager SEND_SIGNAL"
	assert_eq 1 "$(ctr_env "$ds" config-manager SIGNAL)" "$ds config-manager SIGNAL"
	assert_eq "$main" "$(ctr_env "$ds" config-manager PROCESS_TO_SIGNAL)" "$ds config-manager PROCESS_TO_SIGNAL"
	assert_eq /config/config.yaml "$(ctr_env "$ds" "$main" CONFIG_FILE)" "$ds $main CONFIG_FILE"
	ds_jq "$ds" '.spec.template.spec.volumes | any(.name == "'"$CM"'" and .configMap.name == "'"$CM"'")' ||
		fail "$ds does not mount the ConfigMap $CM"
	ds_jq "$ds" '.spec.template.spec.volumes | any(.name == "config" and .emptyDir != null)' ||
		fail "$ds has no emptyDir config"
	ds_jq "$ds" '[.spec.template.spec.containers[], .spec.template.spec.initContainers[] |
		select(.name == "config-manager" or .name == "config-manager-init" or .name == "'"$main"'") |
		[.volumeMounts[] | select(.mountPath == "/config" or .mountPath == "/available-configs")] | length] |
		all(. == 2)' || fail "$ds: not every container mounts /config and /available-configs"
	ds_jq "$ds" '.spec.template.spec.shareProcessNamespace == true' || fail "$ds: no shareProcessNamespace"
	ds_jq "$ds" '.spec.template.spec.serviceAccountName == "'"$sa"'" and
		.spec.template.spec.automountServiceAccountToken == true' || fail "$ds: not $sa with a token"
}

log "the DaemonSets with config-manager, as the GPU Operator renders them"
wait_for 60 has_config_manager gpuop-device-plugin
wait_for 60 has_config_manager gpuop-gpu-feature-discovery
check_ds gpuop-device-plugin nvidia-device-plugin gpuop-device-plugin
check_ds gpuop-gpu-feature-discovery gpu-feature-discovery gpuop-gpu-feature-discovery
reconciled() { [ "$(gp_cond sharing Reconciled status)" = True ]; }
wait_for 60 reconciled
! grep -q devicePlugin.config <<<"$(gp_cond sharing Reconciled message)" ||
	fail "the Reconciled condition names devicePlugin.config: $(gp_cond sharing Reconciled message)"

log "a node labelled $NODE ts-4: both pods created with their account and token, running"
lab_node "$NODE" --label nvidia.com/gpu.present=true --label "$L.device-plugin=true" \
	--label "$L.gpu-feature-discovery=true" --label nvidia.com/device-plugin.config=ts-4
# pod_on NODE OPERAND: the JSON of OPERAND's Running pod on NODE, or nothing
pod_on() {
	kc -n "$GPUOP_NS" get pods -l "app.kubernetes.io/component=$2" --field-selector "spec.nodeName=$1" -o json |
		jq -ce '[.items[] | select(.status.phase == "Running")][0] // empty'
}
running() { [ -n "$(pod_on "$1" "$2")" ]; }
for op in device-plugin:gpuop-device-plugin gpu-feature-discovery:gpuop-gpu-feature-discovery; do
	wait_for 120 running "$NODE" "${op%%:*}"
	pod=$(pod_on "$NODE" "${op%%:*}")
	assert_eq "${op#*:}" "$(jq -r .spec.serviceAccountName <<<"$pod")" "${op%%:*} pod's account"
	jq -e '.spec.volumes | any(.projected.sources[]?.serviceAccountToken != null)' <<<"$pod" >/dev/null ||
		fail "${op%%:*} pod on $NODE has no service account token"
	jq -e '.spec.initContainers | any(.name == "config-manager-init")' <<<"$pod" >/dev/null ||
		fail "${op%%:*} pod on $NODE has no config-manager-init"
done

log "the accounts: nodes get, list, watch; nothing else"
for sa in gpuop-device-plugin gpuop-gpu-feature-discovery; do
	as=system:serviceaccount:$GPUOP_NS:$sa
	for verb in get list watch; do
		assert_eq yes "$(kc auth can-i "$verb" nodes --as="$as" 2>/dev/null || true)" "$sa may $verb nodes"
	done
	for what in "patch nodes" "update nodes" "get secrets" "list pods" "get configmaps"; do
		# shellcheck disable=SC2086
		assert_eq no "$(kc auth can-i $what -A --as="$as" 2>/dev/null || true)" "$sa may $what"
	done
done

# the empty env values (KUBECONFIG, SIGNAL, PROCESS_TO_SIGNAL of the init
# container), which the API server keeps without a value, are no drift:
# gpuop applied each DaemonSet once
for ds in gpuop-device-plugin gpuop-gpu-feature-discovery; do
	assert_eq 1 "$(kc -n "$GPUOP_NS" get daemonset "$ds" -o jsonpath='{.metadata.generation}')" "$ds generation"
done

log "the config taken out: the DaemonSets as before"
kc patch gpupolicy sharing --type json -p '[{"op": "remove", "path": "/spec/devicePlugin/config"}]' >/dev/null
no_config_manager() { ! has_config_manager "$1"; }
wait_for 60 no_config_manager gpuop-device-plugin
wait_for 60 no_config_manager gpuop-gpu-feature-discovery
for ds in gpuop-device-plugin gpuop-gpu-feature-discovery; do
	ds_jq "$ds" '.spec.template.spec.serviceAccountName == "gpuop-operand" and
		.spec.template.spec.automountServiceAccountToken == false' || fail "$ds: not back to gpuop-operand"
	ds_jq "$ds" '(.spec.template.spec.shareProcessNamespace // false) == false and
		(.spec.template.spec.volumes | all(.name != "config" and .name != "'"$CM"'")) and
		((.spec.template.spec.initContainers // []) | all(.name != "config-manager-init"))' ||
		fail "$ds keeps a piece of the sharing config"
done
gpuop_stop
log "PASS"
