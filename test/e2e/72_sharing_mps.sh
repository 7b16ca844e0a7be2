#!/usr/bin/env bash
# End-to-end: MPS, the MPS control daemon as an operand (issue 41). On the
# lab (kwok GPU nodes: their pods run no containers, so the rendered objects,
# where the DaemonSet controller puts the pods and what gpuop says are what
# is checked):
#   - a ConfigMap with the keys default, ts-4 and mps-2 (sharing.mps, 2
#     replicas) and spec.devicePlugin.config naming it, spec.devicePlugin.mps
#     with a root of its own: the DaemonSet gpuop-mps-control-daemon exists,
#     on nvidia.com/gpu.deploy.device-plugin=true and
#     nvidia.com/mps.capable=true, the device plugin's image, its
#     mps-control-daemon-mounts and config-manager containers, its volumes
#     under the root; the device plugin mounts the same root;
#   - two nodes labelled mps-2, one with GFD's nvidia.com/mps.capable=true
#     and one without: the daemon's pod lands on the first only, and the
#     second has no finding about it (not for that node), in the status and
#     in `gpuop check`;
#   - a node whose device plugin runs and which then gets a taint the
#     operands do not tolerate and GFD's mps.capable=true: the daemon cannot
#     be placed there, and gpuop says so twice, the daemon's finding naming
#     the taint and the device plugin's DevicePluginWithoutMpsDaemon;
#   - the device plugin disabled: the daemon's DaemonSet goes with it.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
on_exit 'gpuop_kill; gpuop_uninstall; kc -n "$GPUOP_NS" delete configmap mps-config --ignore-not-found >/dev/null 2>&1 || true'

L=nvidia.com/gpu.deploy
MPS=$(unique gpu-mps)
PLAIN=$(unique gpu-mps-not)
HELD=$(unique gpu-mps-held)
CM=mps-config
ROOT=/var/lib/nvidia-mps
DS=gpuop-mps-control-daemon

gpuop_install
gpuop_start
kc -n "$GPUOP_NS" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: ConfigMap
metadata: {name: $CM}
data:
  default: |-
    version: v1
  ts-4: |-
    version: v1
    sharing:
      timeSlicing:
        resources:
          - name: nvidia.com/gpu
            replicas: 4
  mps-2: |-
    version: v1
    sharing:
      mps:
        resources:
          - name: nvidia.com/gpu
            replicas: 2
YAML
# the chain below the device plugin host-provided (disabled), so the kwok
# nodes need only the device plugin's and GFD's deploy labels
kc apply -f - >/dev/null <<YAML
apiVersion: gpuop.dev/v1alpha1
kind: GpuPolicy
metadata: {name: mps}
spec:
  driver: {enabled: false}
  toolkit: {enabled: false}
  validator: {enabled: false}
  dcgmExporter: {enabled: false}
  findings: {eventGracePeriodSeconds: 0}
  devicePlugin:
    config: {name: $CM, default: default}
    mps: {root: $ROOT}
YAML

ds_jq() { kc -n "$GPUOP_NS" get daemonset "$1" -o json | jq -e "$2" >/dev/null; }

log "the MPS control daemon's DaemonSet, as the GPU Operator renders it"
wait_for 60 kc -n "$GPUOP_NS" get daemonset "$DS"
ds_jq "$DS" '.spec.template.spec.nodeSelector == {"'"$L"'.device-plugin": "true", "nvidia.com/mps.capable": "true"}' ||
	fail "$DS: nodeSelector is not the device plugin's label and mps.capable"
ds_jq "$DS" '.spec.template.spec.hostPID == true and
	.spec.template.metadata.labels.app == "nvidia-device-plugin-mps-control-daemon"' ||
	fail "$DS: not hostPID or not NVIDIA's app label"
ds_jq "$DS" '.spec.template.spec.containers[0] | .name == "mps-control-daemon-ctr" and
	.image == "nvcr.io/nvidia/k8s-device-plugin:v0.20.0" and .command == ["mps-control-daemon"] and
	.securityContext.privileged == true' || fail "$DS: the main container is not NVIDIA's"
ds_jq "$DS" '.spec.template.spec.initContainers | map(.name) == ["mps-control-daemon-mounts", "config-manager-init"]' ||
	fail "$DS: init containers are not mps-control-daemon-mounts, config-manager-init (no toolkit gate: the toolkit is off)"
ds_jq "$DS" '.spec.template.spec.initContainers[0] | .command == ["mps-control-daemon", "mount-shm"] and
	.volumeMounts == [{"name": "mps-root", "mountPath": "/mps", "mountPropagation": "Bidirectional"}]' ||
	fail "$DS: mps-control-daemon-mounts is not NVIDIA's"
ds_jq "$DS" '[.spec.template.spec.containers[] | select(.name == "config-manager") | .env[] |
	select(.name == "PROCESS_TO_SIGNAL") | .value] == ["/usr/bin/mps-control-daemon"]' ||
	fail "$DS: its config-manager does not signal the daemon"
ds_jq "$DS" '.spec.template.spec.volumes | any(.name == "mps-root" and .hostPath.path == "'"$ROOT"'") and
	any(.name == "mps-shm" and .hostPath.path == "'"$ROOT"'/shm") and
	any(.name == "'"$CM"'" and .configMap.name == "'"$CM"'")' || fail "$DS: volumes not under $ROOT, or no ConfigMap"
ds_jq "$DS" '.spec.template.spec.serviceAccountName == "gpuop-device-plugin"' || fail "$DS: not the device plugin's account"
ds_jq gpuop-device-plugin '.spec.template.spec.volumes | any(.name == "mps-root" and .hostPath.path == "'"$ROOT"'")' ||
	fail "the device plugin does not mount the MPS root $ROOT"
assert_eq "$ROOT" "$(kc -n "$GPUOP_NS" get daemonset gpuop-device-plugin -o json |
	jq -r '.spec.template.spec.containers[0].env[] | select(.name == "MPS_ROOT") | .value')" "the device plugin's MPS_ROOT"

log "nodes labelled mps-2: the daemon runs only where GFD says mps.capable=true"
lab_node "$MPS" --label nvidia.com/gpu.present=true --label "$L.device-plugin=true" \
	--label "$L.gpu-feature-discovery=true" --label nvidia.com/device-plugin.config=mps-2 \
	--label nvidia.com/mps.capable=true
lab_node "$PLAIN" --label nvidia.com/gpu.present=true --label "$L.device-plugin=true" \
	--label "$L.gpu-feature-discovery=true" --label nvidia.com/device-plugin.config=mps-2
# pods_on NODE OPERAND: the number of OPERAND's pods bound to NODE
pods_on() {
	kc -n "$GPUOP_NS" get pods -l "app.kubernetes.io/component=$2" --field-selector "spec.nodeName=$1" -o json |
		jq '.items | length'
}
running_on() {
	[ "$(kc -n "$GPUOP_NS" get pods -l "app.kubernetes.io/component=$2" --field-selector "spec.nodeName=$1" \
		-o json | jq '[.items[] | select(.status.phase == "Running")] | length')" = 1 ]
}
wait_for 120 running_on "$MPS" mps-control-daemon
wait_for 120 running_on "$PLAIN" device-plugin
wait_for 120 running_on "$MPS" device-plugin
assert_eq 0 "$(pods_on "$PLAIN" mps-control-daemon)" "MPS daemon pods on $PLAIN (no mps.capable)"
# the DaemonSet controller agrees: its pods are where the label is
all_on_capable() {
	kc -n "$GPUOP_NS" get pods -l app.kubernetes.io/component=mps-control-daemon -o json |
		jq -r '.items[].spec.nodeName' | while read -r n; do
		[ "$(kc get node "$n" -o jsonpath='{.metadata.labels.nvidia\.com/mps\.capable}')" = true ] || {
			echo "MPS daemon pod on $n, which is not mps.capable" >&2
			return 1
		}
	done
}
all_on_capable || fail "an MPS daemon pod on a node without nvidia.com/mps.capable=true"

log "the status: the daemon counted where it runs, nothing said about it on $PLAIN"
# status_of NODE: the node's entry in status.nodes (nodes with findings), or null
mps_clean() {
	local st
	st=$(kc get gpupolicy mps -o json)
	jq -e '.status.operands[] | select(.name == "mps-control-daemon") |
		.runningNodes >= 1 and .expectedNodes == .runningNodes' <<<"$st" >/dev/null &&
		! jq -e '[.status.nodes[]? | .findings[]? | select(.operand == "mps-control-daemon")] | length > 0' <<<"$st" >/dev/null &&
		! jq -e '.status.nodes[]? | select(.name == "'"$PLAIN"'") | .hostProvided[]? | select(. == "mps-control-daemon")' <<<"$st" >/dev/null
}
wait_for 60 mps_clean
out=$("$GPUOP_BIN" check --kubeconfig "$KUBECONFIG" --namespace "$GPUOP_NS" --nodes gpu-mps- --color never || true)
grep -qE '^NODE .* mps$' <<<"$out" || fail "check's matrix has no mps column: $out"
row() { awk -v n="$1" '$1 == n && /^[^ ]/ {print $NF; exit}' <<<"$out"; }
assert_eq "+" "$(row "$MPS")" "check: the MPS daemon running on $MPS"
assert_eq "-" "$(row "$PLAIN")" "check: the MPS daemon not for $PLAIN"

log "$HELD: its device plugin runs, then a taint keeps the MPS daemon off it"
lab_node "$HELD" --label nvidia.com/gpu.present=true --label "$L.device-plugin=true" \
	--label "$L.gpu-feature-discovery=true" --label nvidia.com/device-plugin.config=mps-2
wait_for 120 running_on "$HELD" device-plugin
# NoSchedule keeps the running device plugin and bars the daemon's new pod
kc taint node "$HELD" gpuop-e2e/mps=held:NoSchedule >/dev/null
kc label node "$HELD" nvidia.com/mps.capable=true >/dev/null
finding_of() { # NODE OPERAND: "kind/reason message" of its first finding, or nothing
	kc get gpupolicy mps -o json | jq -r --arg n "$1" --arg o "$2" \
		'[.status.nodes[]? | select(.name == $n) | .findings[] | select(.operand == $o)][0] //
		 empty | "\(.kind)/\(.reason) \(.message)"'
}
said() { grep -q "$3" <<<"$(finding_of "$1" "$2")"; }
wait_for 60 said "$HELD" device-plugin '^OrderingViolation/DevicePluginWithoutMpsDaemon '
msg=$(finding_of "$HELD" device-plugin)
grep -qF 'device-plugin runs but mps-control-daemon does not' <<<"$msg" ||
	fail "the device plugin's finding does not name the MPS daemon: $msg"
wait_for 60 said "$HELD" mps-control-daemon 'gpuop-e2e/mps'
log "$HELD: $(finding_of "$HELD" mps-control-daemon)"
assert_eq 0 "$(pods_on "$HELD" mps-control-daemon)" "MPS daemon pods on $HELD (tainted)"
kc taint node "$HELD" gpuop-e2e/mps- >/dev/null
wait_for 120 running_on "$HELD" mps-control-daemon
no_finding() { [ -z "$(finding_of "$1" "$2")" ]; }
wait_for 60 no_finding "$HELD" device-plugin

log "the device plugin disabled: the daemon's DaemonSet goes with it"
kc patch gpupolicy mps --type merge -p '{"spec": {"devicePlugin": {"enabled": false}}}' >/dev/null
gone() { ! kc -n "$GPUOP_NS" get daemonset "$1" >/dev/null 2>&1; }
wait_for 60 gone "$DS"
wait_for 60 gone gpuop-device-plugin
gpuop_stop
log "PASS"
