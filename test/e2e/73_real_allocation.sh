#!/usr/bin/env bash
# End-to-end on a real kubelet (issue 41, the real allocation path): GPUs
# go from the device plugin stand-in through the kubelet's device-plugin
# API and the scheduler into a container by CDI, and the seed's failure
# happens for real. The lab's real node runs containerd 2 (CDI always on,
# specs from /var/run/cdi; test/lab/real-node.sh) and the stand-in images
# (docs/lab.md, "Stand-in operand images"): the device plugin (Go, on
# k8s.io/kubelet's v1beta1 API) registers nvidia.com/gpu with the kubelet
# and answers Allocate with CDI device names nvidia.com/gpu=<uuid>; the
# toolkit writes their CDI spec /var/run/cdi/nvidia.yaml. gpuop renders
# the operands (CDI mode, the default); nothing is typed into the node.
#
#   the stand-ins told of 3 GPUs (STANDIN_GPU_COUNT in the toolkit's and
#   the device plugin's env) -> the kubelet's capacity and allocatable
#   nvidia.com/gpu are 3, the count the plugin logged it registered; the
#   toolkit wrote the spec; a pod requesting nvidia.com/gpu: 1 is bound
#   by the scheduler to the real node, the plugin's Allocate answered, and
#   the container runs with its CDI device: /dev/nvidia<i> and
#   NVIDIA_STANDIN_GPU_<i>, one GPU's edits only.
#   The toolkit's deploy label removed -> its pod goes and takes its spec
#   with it; a second GPU pod is bound to the node (the plugin still
#   advertises) and fails at container creation on the unresolvable CDI
#   device (CreateContainerError naming it); gpuop finds
#   DevicePluginWithoutToolkit on the node and names the pod in
#   status.nodes[].strandedPods within its re-list interval.
#   With a sharing config (spec.devicePlugin.config, a ConfigMap key
#   ts-4: time-slicing, 4 replicas; the node labelled
#   nvidia.com/device-plugin.config=ts-4): config-manager writes
#   /config/config.yaml and the kubelet's allocatable is 3 x 4 = 12.
#
# Needs root; one real-node lab per machine (run under
# flock /work/labs/real-node.lock with 60_real_node, 62_gates and
# 63_real_node_platforms; the bring-up and teardown are
# test/e2e/real_node_outer.bash's). Whatever it
# adds on the machine (/run/nvidia, /var/run/cdi, ...: recorded before the
# first pod runs) is removed at the end and checked gone.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)

# shellcheck source=real_node_outer.bash
source "$HERE/real_node_outer.bash"
if [[ -z ${E2E_ALLOC_INNER:-} ]]; then
	real_node_outer 73_real_allocation allocation E2E_ALLOC_INNER '/run/nvidia|/var/run/cdi|/run/cdi' "$0"
fi

# ---- inside the lab's network namespace ------------------------------------------
source "$HERE/lib.sh"
source "$HERE/gpuop.sh" # gpuop_install, gpuop_start, gpuop_stop; GPUOP_NS
# shellcheck source=real_node_inner.bash
source "$HERE/real_node_inner.bash" # standins_import, IMG, dump_operand_pods

NODE=${LAB_NODE:?not a real-node lab}
READY_TIMEOUT=420 # s: four operands, init gates retrying every 5 s, probes, a loaded machine
SETTLE_TIMEOUT=180
POD_TIMEOUT=180
STRANDED_TIMEOUT=200 # s: gpuop re-lists a violating node's pods at most once a minute
POLICY=allocation
GPUS=3     # the stand-ins' fake GPUs (STANDIN_GPU_COUNT)
REPLICAS=4 # time-slicing replicas of the ConfigMap's ts-4
CM=sharing-configs
V=/run/nvidia/validations
CDI_SPEC=/var/run/cdi/nvidia.yaml
OPERANDS=(driver container-toolkit device-plugin operator-validator)
[[ -x $GPUOP_BIN ]] || fail "no gpuop binary (GPUOP_BIN=$GPUOP_BIN)"
[[ -e $V ]] && fail "$V already exists on this machine: the test would read someone else's files"
[[ -e $CDI_SPEC ]] && fail "$CDI_SPEC already exists on this machine: the test would use someone else's CDI spec"

log "import the stand-in images into the node's containerd"
standins_import

dump_state() {
	dump_operand_pods
	kc -n "$NS" get pods -o wide >&2 2>&1
	kc get events -A --field-selector type=Warning 2>&1 | tail -20 >&2
	kc get node "$NODE" -o jsonpath='{.status.allocatable}' >&2 2>&1
	ls -la "$V" /var/run/cdi >&2 2>&1
}
on_exit '((rc == 0)) || dump_state'
on_exit 'kc delete gpupolicy "$POLICY" --ignore-not-found --wait=true >/dev/null 2>&1 || true'
on_exit 'kc -n "$GPUOP_NS" delete pods --all --wait=true --timeout=120s >/dev/null 2>&1 || true'
on_exit 'gpuop_kill'
on_exit 'kc -n "$GPUOP_NS" delete configmap "$CM" --ignore-not-found >/dev/null 2>&1 || true'
track_ns "$GPUOP_NS"
make_ns NS allocation

gpuop_install
# The chain to the device plugin (GFD and the DCGM exporter are not needed
# here), the toolkit and the plugin told of $GPUS GPUs.
kc apply -f - >/dev/null <<EOF
apiVersion: gpuop.dev/v1alpha1
kind: GpuPolicy
metadata:
  name: $POLICY
spec:
  driver:
    enabled: true
    image: "${IMG[driver]}"
    imagePullPolicy: Never
    upgradePolicy: {autoUpgrade: false}
    manager: {image: "${IMG[driver-manager]}", imagePullPolicy: Never}
  toolkit:
    enabled: true
    image: "${IMG[toolkit]}"
    imagePullPolicy: Never
    env: [{name: STANDIN_GPU_COUNT, value: "$GPUS"}]
  devicePlugin:
    enabled: true
    image: "${IMG[device-plugin]}"
    imagePullPolicy: Never
    env: [{name: STANDIN_GPU_COUNT, value: "$GPUS"}]
  gfd: {enabled: false}
  dcgmExporter: {enabled: false}
  validator: {enabled: true, image: "${IMG[validator]}", imagePullPolicy: Never}
  migManager: {enabled: false}
EOF
gpuop_start --leader-elect=false

log "the DaemonSets exist before the node is labelled: record which of their hostPaths exist"
wait_for "$SETTLE_TIMEOUT" bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' -n $GPUOP_NS get ds -o name | wc -l)\" -ge ${#OPERANDS[@]} ]"
mapfile -t HP < <(kc -n "$GPUOP_NS" get ds -o json | jq -r '.items[].spec.template.spec.volumes[]? | .hostPath.path // empty' | sort -u)
grep -qxF /var/run/cdi <<<"$(printf '%s\n' "${HP[@]}")" || fail "no DaemonSet mounts /var/run/cdi: ${HP[*]}"
real_node_record_absent "${HP[@]}"

log "label $NODE as a GPU node"
labels=(nvidia.com/gpu.present=true)
for op in "${OPERANDS[@]}"; do
	labels+=("nvidia.com/gpu.deploy.$op=true")
done
kc label node "$NODE" --overwrite "${labels[@]}" >/dev/null
on_exit 'kc label node "$NODE" nvidia.com/gpu.present- nvidia.com/device-plugin.config- $(printf "nvidia.com/gpu.deploy.%s- " "${OPERANDS[@]}") >/dev/null 2>&1 || true'

alloc_gpus() { kc get node "$NODE" -o jsonpath='{.status.allocatable.nvidia\.com/gpu}'; }
alloc_is() { [[ $(alloc_gpus) == "$1" ]]; }
phase_is() { [[ $(kc -n "$1" get pod "$2" -o jsonpath='{.status.phase}') == "$3" ]]; }
export -f real_node_all_ready alloc_gpus alloc_is phase_is kc
export NODE GPUOP_NS
log "the four operand pods Running and Ready on $NODE (deadline ${READY_TIMEOUT}s)"
wait_for "$READY_TIMEOUT" real_node_all_ready "${#OPERANDS[@]}"
PLUGIN=$(real_node_pod_of device-plugin)
TOOLKIT=$(real_node_pod_of toolkit)
[[ -n $PLUGIN && -n $TOOLKIT ]] || fail "no device plugin or toolkit pod"

log "the kubelet's allocatable nvidia.com/gpu is what the plugin registered: $GPUS"
wait_for "$SETTLE_TIMEOUT" alloc_is "$GPUS"
assert_eq "$GPUS" "$(kc get node "$NODE" -o jsonpath='{.status.capacity.nvidia\.com/gpu}')" "capacity nvidia.com/gpu"
kc -n "$GPUOP_NS" logs "$PLUGIN" -c nvidia-device-plugin >"$E2E_TMP/plugin.log"
grep -qE "\[nvidia-device-plugin t=[0-9.]+\] registered nvidia.com/gpu with the kubelet: $GPUS GPUs x 1 replicas = $GPUS devices" "$E2E_TMP/plugin.log" ||
	fail "the plugin did not log registering $GPUS devices: $(tail -5 "$E2E_TMP/plugin.log")"
grep -q 'check: kubelet.sock present' "$E2E_TMP/plugin.log" || fail "the plugin's gates did not run"
kc -n "$GPUOP_NS" logs "$TOOLKIT" -c nvidia-container-toolkit-ctr >"$E2E_TMP/toolkit.log"
grep -q "wrote the CDI spec $CDI_SPEC: kind nvidia.com/gpu, $GPUS GPUs" "$E2E_TMP/toolkit.log" ||
	fail "the toolkit did not write its CDI spec: $(tail -5 "$E2E_TMP/toolkit.log")"
[[ -f $CDI_SPEC ]] || fail "$CDI_SPEC not on the host"

# gpu_pod NAME: a pod asking for one GPU, no node named: the scheduler
# places it (only the real node has nvidia.com/gpu); it prints the CDI
# edits it got and stays.
gpu_pod() {
	kc -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  restartPolicy: Never
  containers:
  - name: cuda
    image: ${IMG[cos-installer]}
    imagePullPolicy: Never
    command: [/busybox/sh, -c, 'env | grep ^NVIDIA_STANDIN_GPU_ | sort; for d in /dev/nvidia*; do [ -c \$d ] && echo "char device \$d"; done; exec sleep 100000']
    resources: {limits: {nvidia.com/gpu: 1}}
EOF
}
log "a pod requesting nvidia.com/gpu: 1 is scheduled onto $NODE and starts with its CDI device"
gpu_pod cuda-ok
wait_for "$POD_TIMEOUT" phase_is "$NS" cuda-ok Running
assert_eq "$NODE" "$(kc -n "$NS" get pod cuda-ok -o jsonpath='{.spec.nodeName}')" "the GPU pod's node"
assert_eq default-scheduler "$(kc -n "$NS" get pod cuda-ok -o jsonpath='{.spec.schedulerName}')" "who bound it"
has_device() { grep -q '^char device /dev/nvidia' <<<"$(kc -n "$NS" logs cuda-ok)"; }
export -f has_device
export NS
wait_for 60 has_device
kc -n "$NS" logs cuda-ok >"$E2E_TMP/cuda-ok.log"
mapfile -t envs < <(grep '^NVIDIA_STANDIN_GPU_' "$E2E_TMP/cuda-ok.log")
assert_eq 1 "${#envs[@]}" "NVIDIA_STANDIN_GPU_ variables in the container (one GPU's edits: $(tr '\n' ' ' <"$E2E_TMP/cuda-ok.log"))"
[[ ${envs[0]} =~ ^NVIDIA_STANDIN_GPU_([0-9]+)=GPU-STANDIN-([0-9]+)$ && ${BASH_REMATCH[1]} == "${BASH_REMATCH[2]}" ]] ||
	fail "unexpected CDI env in the container: ${envs[0]}"
i=${BASH_REMATCH[1]}
assert_eq "char device /dev/nvidia$i" "$(grep '^char device' "$E2E_TMP/cuda-ok.log")" "the CDI device node in the container"
kc -n "$GPUOP_NS" logs "$PLUGIN" -c nvidia-device-plugin >"$E2E_TMP/plugin.log"
grep -qE "Allocate: GPU-STANDIN-$i -> CDI devices nvidia.com/gpu=GPU-STANDIN-$i " "$E2E_TMP/plugin.log" ||
	fail "the plugin's Allocate for GPU $i not logged: $(grep Allocate "$E2E_TMP/plugin.log")"

log "time-slicing: a ConfigMap of sharing configs, the node labelled ts-$REPLICAS"
kc -n "$GPUOP_NS" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: ConfigMap
metadata: {name: $CM}
data:
  default: |-
    version: v1
    flags:
      migStrategy: none
  ts-$REPLICAS: |-
    version: v1
    flags:
      migStrategy: none
    sharing:
      timeSlicing:
        resources:
        - name: nvidia.com/gpu
          replicas: $REPLICAS
EOF
kc label node "$NODE" --overwrite "nvidia.com/device-plugin.config=ts-$REPLICAS" >/dev/null
kc patch gpupolicy "$POLICY" --type merge -p "{\"spec\":{\"devicePlugin\":{\"config\":{\"name\":\"$CM\",\"default\":\"default\"}}}}" >/dev/null
plugin_has_config() {
	local p
	p=$(kc -n "$GPUOP_NS" get pods -o json | jq -r --arg n "$NODE" '.items[]
		| select(.metadata.deletionTimestamp == null and .spec.nodeName == $n)
		| select(any(.spec.initContainers[]?; .name == "config-manager-init"))
		| select(any(.status.containerStatuses[]?; .name == "nvidia-device-plugin" and .ready))
		| .metadata.name' | sed -n 1p)
	[[ -n $p ]]
}
export -f plugin_has_config
log "the device plugin rolled out with config-manager; allocatable becomes $GPUS x $REPLICAS"
wait_for "$READY_TIMEOUT" plugin_has_config
wait_for "$SETTLE_TIMEOUT" alloc_is $((GPUS * REPLICAS))
PLUGIN=$(real_node_pod_of device-plugin)
kc -n "$GPUOP_NS" logs "$PLUGIN" -c config-manager-init >"$E2E_TMP/cm.log"
grep -q "updated /config/config.yaml -> /available-configs/ts-$REPLICAS" "$E2E_TMP/cm.log" ||
	fail "config-manager-init did not link the ts-$REPLICAS config: $(tail -3 "$E2E_TMP/cm.log")"
kc -n "$GPUOP_NS" logs "$PLUGIN" -c nvidia-device-plugin >"$E2E_TMP/plugin.log"
grep -q "registered nvidia.com/gpu with the kubelet: $GPUS GPUs x $REPLICAS replicas = $((GPUS * REPLICAS)) devices" "$E2E_TMP/plugin.log" ||
	fail "the plugin did not register $GPUS x $REPLICAS devices: $(tail -5 "$E2E_TMP/plugin.log")"
GPUS_ALLOC=$((GPUS * REPLICAS))

log "the toolkit's deploy label removed: its pod goes and takes its CDI spec with it"
kc label node "$NODE" nvidia.com/gpu.deploy.container-toolkit- >/dev/null
no_toolkit_pod() { [[ -z $(kc -n "$GPUOP_NS" get pods -o name --field-selector "spec.nodeName=$NODE" | grep toolkit) ]]; }
export -f no_toolkit_pod
wait_for "$SETTLE_TIMEOUT" no_toolkit_pod
wait_for 60 bash -c "[ ! -e $CDI_SPEC ]"
assert_eq "$GPUS_ALLOC" "$(alloc_gpus)" "allocatable nvidia.com/gpu with the plugin still running"

log "a second GPU pod is scheduled there and fails at container creation on its CDI device"
gpu_pod cuda-stranded
create_failed() {
	local s
	s=$(kc -n "$NS" get pod cuda-stranded -o jsonpath='{.status.containerStatuses[0].state.waiting.reason} {.status.containerStatuses[0].state.waiting.message}')
	echo "$s"
	[[ $s == CreateContainerError*unresolvable\ CDI\ devices*nvidia.com/gpu=GPU-STANDIN-* ]]
}
export -f create_failed
wait_for "$POD_TIMEOUT" create_failed
assert_eq "$NODE" "$(kc -n "$NS" get pod cuda-stranded -o jsonpath='{.spec.nodeName}')" "the stranded pod's node"
assert_eq Pending "$(kc -n "$NS" get pod cuda-stranded -o jsonpath='{.status.phase}')" "the stranded pod's phase"

log "gpuop names it as stranded (DevicePluginWithoutToolkit; a node re-listed at most once a minute)"
node_json() { kc get gpupolicy "$POLICY" -o json | jq -c --arg n "$NODE" '.status.nodes[]? | select(.name == $n)'; }
stranded_has() { node_json | jq -e --arg p "$NS/cuda-stranded" '(.strandedPods.pods // []) | index($p) != null' >/dev/null; }
export -f node_json stranded_has
export POLICY
t0=$SECONDS
wait_for "$STRANDED_TIMEOUT" stranded_has
log "named as stranded $((SECONDS - t0)) s after its container failed"
msg=$(node_json | jq -r '.findings[] | select(.reason == "DevicePluginWithoutToolkit") | .message')
[[ $msg == *"GPU pods bound here now ("*"$NS/cuda-stranded"* ]] ||
	fail "the DevicePluginWithoutToolkit finding does not name the stranded pod: $msg"
kc -n "$NS" delete pod cuda-ok cuda-stranded --wait=true --timeout=120s >/dev/null

gpuop_stop
