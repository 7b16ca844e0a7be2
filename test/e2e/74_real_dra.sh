#!/usr/bin/env bash
# End-to-end on a real kubelet (issue 42, the DRA path): a GPU goes from
# the DRA kubelet plugin through the kubelet's plugin registration, a
# ResourceSlice, the scheduler's allocation of a claim and the kubelet's
# NodePrepareResources into a container by CDI. The lab's real node runs
# containerd 2 (CDI specs from /var/run/cdi; test/lab/real-node.sh) and the
# stand-in images (docs/lab.md, "Stand-in operand images"): the DRA image
# carries the Go stand-in of NVIDIA's gpu-kubelet-plugin, on
# k8s.io/dynamic-resource-allocation/kubeletplugin. gpuop renders the
# driver and the DRA driver (spec.draDriver, NVIDIA's DaemonSet: the
# driver-validation gate, `bash -c` sourcing driver-ready); nothing is
# typed into the node or the API but the test's pod and claim template.
#
#   the plugin told of 2 GPUs (STANDIN_GPU_COUNT in spec.draDriver.env),
#   the kubelet's root dir in spec.hostPaths.kubeletRootDir (the lab's
#   kubelet keeps it in the lab's folder) -> its pod is Running and Ready
#   (the gRPC liveness probe: the registration socket and the DRA socket
#   answer), its sockets in the kubelet's plugins_registry and plugins,
#   it logs the kubelet's registration; the API has one ResourceSlice of
#   driver gpu.nvidia.com for the node, pool named after it, devices gpu-0
#   and gpu-1 of type gpu;
#   a pod with a ResourceClaimTemplate of DeviceClass gpu.nvidia.com (the
#   lab's resourceclaim-controller makes the claim) is bound by the
#   scheduler to the real node, its claim allocated one device there, the
#   plugin's NodePrepareResources wrote the claim's CDI spec and the
#   container runs with that device's edits: /dev/nvidia<i> and
#   NVIDIA_STANDIN_GPU_<i>. The pod deleted: the kubelet unprepares, the
#   spec is gone.
#   A driver upgrade (spec.driver.env changed, autoUpgrade on) -> gpuop's
#   upgrade pauses the plugin with the other dependents and restores it
#   once the new driver pod is Ready: the node upgrade-done, both pods new,
#   the plugin's no older than the driver's, registered again, its slice
#   published again.
#   The driver's deploy label removed -> its pod goes, the plugin and its
#   slice stay: gpuop's status says SlicesWithoutDriver for the node,
#   counting the slice's devices (read from the API).
#   The plugin's deploy label removed -> its pod goes; the slice outlives
#   it until the kubelet wipes it (about 30 s after the plugin
#   unregistered); gpuop reads the wipe: SlicesWithoutDriver goes, and the
#   node's dra-driver cell says LabelAbsent (spec.draDriver is enabled).
#
# Needs root; one real-node lab per machine (run under
# flock /work/labs/real-node.lock with the other real-node tests). The
# outer half is test/e2e/real_node_outer.bash's: whatever the run adds on
# the machine is removed at the end and checked gone.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=real_node_outer.bash
source "$HERE/real_node_outer.bash"
if [[ -z ${E2E_DRA_INNER:-} ]]; then
	real_node_outer 74_real_dra dra E2E_DRA_INNER '/run/nvidia|/var/run/cdi|/run/cdi' "$0"
fi

# ---- inside the lab's network namespace ------------------------------------------
source "$HERE/lib.sh"
source "$HERE/gpuop.sh" # gpuop_install, gpuop_start, gpuop_stop; GPUOP_NS
# shellcheck source=real_node_inner.bash
source "$HERE/real_node_inner.bash" # standins_import, IMG, dump_operand_pods

NODE=${LAB_NODE:?not a real-node lab}
READY_TIMEOUT=420 # s: the driver, the gate retrying every 5 s, the startup probe, a loaded machine
SETTLE_TIMEOUT=180
POD_TIMEOUT=180
WIPE_TIMEOUT=240 # s: the kubelet wipes a gone plugin's slices after 30 s; a loaded machine
WIPE_GRACE=25    # s: a slice gone sooner after the label went was not the kubelet's wipe
POLICY=dra
GPUS=2 # the stand-in's fake GPUs (STANDIN_GPU_COUNT)
DRIVER=gpu.nvidia.com
V=/run/nvidia/validations
CDI_DIR=/var/run/cdi
SPEC_GLOB="$CDI_DIR/k8s.$DRIVER-claim_*.yaml"
OPERANDS=(driver dra-driver)
[[ -x $GPUOP_BIN ]] || fail "no gpuop binary (GPUOP_BIN=$GPUOP_BIN)"
# The kubelet's root (its --root-dir): the lab's kubelet keeps its state
# in the lab's folder, where it watches plugins_registry; the policy says
# so (spec.hostPaths.kubeletRootDir) as on any node with another root.
KUBELET_ROOT=$(sed -n 's/^--root-dir=//p' "$LAB_DIR/run/kubelet.args")
[[ -d $KUBELET_ROOT ]] || fail "no kubelet root dir in $LAB_DIR/run/kubelet.args"
[[ -e $V ]] && fail "$V already exists on this machine: the test would read someone else's files"
compgen -G "$SPEC_GLOB" >/dev/null && fail "claim CDI specs already in $CDI_DIR: the test would read someone else's"

log "import the stand-in images into the node's containerd"
standins_import

dump_state() {
	dump_operand_pods 25
	kc -n "$NS" get pods,resourceclaims -o wide >&2 2>&1
	kc get resourceslices -o wide >&2 2>&1
	kc get events -A --field-selector type=Warning 2>&1 | tail -20 >&2
	ls -la "$V" "$CDI_DIR" >&2 2>&1
}
on_exit '((rc == 0)) || dump_state'
# gpuop stopped (or killed) by then: its finalizer removed by hand
on_exit 'kc delete gpupolicy "$POLICY" --ignore-not-found --wait=false >/dev/null 2>&1; gpuop_unfinalize "$POLICY"; kc wait --for=delete gpupolicy/"$POLICY" --timeout=120s >/dev/null 2>&1 || true'
on_exit 'kc -n "$GPUOP_NS" delete pods --all --wait=true --timeout=120s >/dev/null 2>&1 || true'
on_exit 'gpuop_kill'
on_exit 'kc delete resourceslices --field-selector "spec.driver=$DRIVER" --ignore-not-found >/dev/null 2>&1 || true'
track_ns "$GPUOP_NS"
make_ns NS dra

gpuop_install
# The chain to the DRA driver: the driver (its stand-in), then the plugin
# (the validator image only for the plugin's driver-validation gate).
kc apply -f - >/dev/null <<EOF
apiVersion: gpuop.dev/v1alpha1
kind: GpuPolicy
metadata:
  name: $POLICY
spec:
  hostPaths: {kubeletRootDir: "$KUBELET_ROOT"}
  driver:
    enabled: true
    image: "${IMG[driver]}"
    imagePullPolicy: Never
    upgradePolicy: {autoUpgrade: false}
    manager: {image: "${IMG[driver-manager]}", imagePullPolicy: Never}
  toolkit: {enabled: false}
  devicePlugin: {enabled: false}
  gfd: {enabled: false}
  dcgmExporter: {enabled: false}
  validator: {enabled: false, image: "${IMG[validator]}", imagePullPolicy: Never}
  migManager: {enabled: false}
  draDriver:
    enabled: true
    image: "${IMG[dra-driver]}"
    imagePullPolicy: Never
    env: [{name: STANDIN_GPU_COUNT, value: "$GPUS"}]
EOF
gpuop_start --leader-elect=false

log "the DaemonSets exist before the node is labelled: record which of their hostPaths exist"
wait_for "$SETTLE_TIMEOUT" bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' -n $GPUOP_NS get ds -o name | wc -l)\" -ge ${#OPERANDS[@]} ]"
mapfile -t HP < <(kc -n "$GPUOP_NS" get ds -o json | jq -r '.items[].spec.template.spec.volumes[]? | .hostPath.path // empty' | sort -u)
grep -qxF "$CDI_DIR" <<<"$(printf '%s\n' "${HP[@]}")" || fail "the DRA DaemonSet does not mount $CDI_DIR: ${HP[*]}"
real_node_record_absent "${HP[@]}"

log "label $NODE for the driver and the DRA driver"
labels=(nvidia.com/gpu.present=true)
for op in "${OPERANDS[@]}"; do
	labels+=("nvidia.com/gpu.deploy.$op=true")
done
kc label node "$NODE" --overwrite "${labels[@]}" >/dev/null
on_exit 'kc label node "$NODE" nvidia.com/gpu.present- $(printf "nvidia.com/gpu.deploy.%s- " "${OPERANDS[@]}") >/dev/null 2>&1 || true'

# slice_json: the node's ResourceSlices of the driver, as a JSON array
slice_json() {
	kc get resourceslices -o json | jq -c --arg d "$DRIVER" --arg n "$NODE" \
		'[.items[] | select(.spec.driver == $d and .spec.nodeName == $n)]'
}
slice_count_is() { [[ $(slice_json | jq length) == "$1" ]]; }
phase_is() { [[ $(kc -n "$1" get pod "$2" -o jsonpath='{.status.phase}') == "$3" ]]; }
export -f real_node_all_ready slice_json slice_count_is phase_is kc
export NODE GPUOP_NS DRIVER
log "the driver and DRA plugin pods Running and Ready on $NODE (deadline ${READY_TIMEOUT}s)"
wait_for "$READY_TIMEOUT" real_node_all_ready "${#OPERANDS[@]}"
PLUGIN=$(real_node_pod_of dra-driver)
[[ -n $PLUGIN ]] || fail "no DRA plugin pod"
assert_eq "gpus" "$(kc -n "$GPUOP_NS" get pod "$PLUGIN" -o jsonpath='{.spec.containers[*].name}')" "the plugin pod's containers"
[[ -S $KUBELET_ROOT/plugins_registry/$DRIVER-reg.sock && -S $KUBELET_ROOT/plugins/$DRIVER/dra.sock ]] ||
	fail "the plugin's sockets are not in the kubelet's $KUBELET_ROOT/plugins_registry and plugins/$DRIVER"
kc -n "$GPUOP_NS" logs "$PLUGIN" -c driver-validation >"$E2E_TMP/gate.log"
[[ -f $V/driver-ready ]] || fail "no $V/driver-ready: the plugin's driver-validation gate did not write it"

log "the plugin registered with the kubelet and publishes its slice"
registered() { grep -q "registered $DRIVER with the kubelet" <<<"$(kc -n "$GPUOP_NS" logs "$PLUGIN" -c gpus)"; }
export -f registered
export PLUGIN
wait_for "$SETTLE_TIMEOUT" registered
kc -n "$GPUOP_NS" logs "$PLUGIN" -c gpus >"$E2E_TMP/plugin.log"
grep -q "check: $V/driver-ready present" "$E2E_TMP/plugin.log" || fail "the plugin's checks did not run: $(head -5 "$E2E_TMP/plugin.log")"
grep -q "check: NVIDIA_DRIVER_ROOT=" "$E2E_TMP/plugin.log" || fail "the plugin's script did not source driver-ready"
grep -q "publishing pool $NODE: $GPUS devices" "$E2E_TMP/plugin.log" || fail "the plugin did not publish $GPUS devices"
wait_for "$SETTLE_TIMEOUT" slice_count_is 1
slice=$(slice_json | jq -c '.[0]')
assert_eq "$NODE" "$(jq -r .spec.pool.name <<<"$slice")" "the slice's pool"
assert_eq "gpu-0 gpu-1" "$(jq -r '[.spec.devices[].name] | sort | join(" ")' <<<"$slice")" "the slice's devices"
assert_eq "gpu gpu" "$(jq -r '[.spec.devices[].attributes.type.string] | join(" ")' <<<"$slice")" "the devices' type attributes"
assert_eq "Node/$NODE" "$(jq -r '.metadata.ownerReferences[0] | "\(.kind)/\(.name)"' <<<"$slice")" "the slice's owner"

log "a pod with a claim template of DeviceClass $DRIVER is scheduled onto $NODE and starts with its CDI device"
kc -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: $DRIVER}
---
apiVersion: v1
kind: Pod
metadata: {name: cuda-dra}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1 # sleep as pid 1 ignores TERM
  resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
  containers:
  - name: cuda
    image: ${IMG[cos-installer]}
    imagePullPolicy: Never
    command: [/busybox/sh, -c, 'env | grep ^NVIDIA_STANDIN_GPU_ | sort; for d in /dev/nvidia*; do [ -c \$d ] && echo "char device \$d"; done; exec sleep 100000']
    resources: {claims: [{name: gpu}]}
EOF
export NS
wait_for "$POD_TIMEOUT" phase_is "$NS" cuda-dra Running
assert_eq "$NODE" "$(kc -n "$NS" get pod cuda-dra -o jsonpath='{.spec.nodeName}')" "the DRA pod's node"
claim=$(kc -n "$NS" get pod cuda-dra -o jsonpath='{.status.resourceClaimStatuses[0].resourceClaimName}')
[[ -n $claim ]] || fail "the pod has no generated ResourceClaim (the resourceclaim-controller)"
kc -n "$NS" get resourceclaim "$claim" -o json >"$E2E_TMP/claim.json"
uid=$(jq -r .metadata.uid "$E2E_TMP/claim.json")
res=$(jq -c '.status.allocation.devices.results' "$E2E_TMP/claim.json")
assert_eq 1 "$(jq length <<<"$res")" "devices allocated to the claim"
assert_eq "$DRIVER $NODE" "$(jq -r '.[0] | "\(.driver) \(.pool)"' <<<"$res")" "the allocated device's driver and pool"
dev=$(jq -r '.[0].device' <<<"$res")
[[ $dev =~ ^gpu-([0-9]+)$ ]] || fail "unexpected device $dev"
i=${BASH_REMATCH[1]}
has_device() { grep -q '^char device /dev/nvidia' <<<"$(kc -n "$NS" logs cuda-dra)"; }
export -f has_device
wait_for 60 has_device
kc -n "$NS" logs cuda-dra >"$E2E_TMP/cuda-dra.log"
assert_eq "NVIDIA_STANDIN_GPU_$i=GPU-STANDIN-$i" "$(grep '^NVIDIA_STANDIN_GPU_' "$E2E_TMP/cuda-dra.log")" \
	"the claim's CDI env in the container (one device's edits)"
assert_eq "char device /dev/nvidia$i" "$(grep '^char device' "$E2E_TMP/cuda-dra.log")" "the CDI device node in the container"
kc -n "$GPUOP_NS" logs "$PLUGIN" -c gpus >"$E2E_TMP/plugin.log"
grep -qF "NodePrepareResources: claim $NS/$claim ($uid) -> CDI devices k8s.$DRIVER/claim=$uid-$dev " "$E2E_TMP/plugin.log" ||
	fail "the plugin's NodePrepareResources for $claim not logged: $(grep NodePrepare "$E2E_TMP/plugin.log")"
spec=$CDI_DIR/k8s.$DRIVER-claim_$uid.yaml
[[ -f $spec ]] || fail "the claim's CDI spec $spec is not on the host"

log "the pod deleted: the kubelet unprepares the claim and its CDI spec goes"
kc -n "$NS" delete pod cuda-dra --wait=true --timeout=120s >/dev/null
wait_for "$SETTLE_TIMEOUT" bash -c "[ ! -e '$spec' ]"
grep -qF "NodeUnprepareResources: claim $NS/$claim ($uid)" <<<"$(kc -n "$GPUOP_NS" logs "$PLUGIN" -c gpus)" ||
	fail "the plugin's NodeUnprepareResources for $claim not logged"

log "a driver upgrade on $NODE (spec.driver.env changed): gpuop's upgrade restarts the plugin after the new driver pod"
# pod_now COMPONENT: "uid creationTimestamp name" of the node's Ready pod of
# that operand, not being deleted ("" when none)
pod_now() {
	kc -n "$GPUOP_NS" get pods -l "app.kubernetes.io/component=$1" --field-selector "spec.nodeName=$NODE" -o json |
		jq -r '[.items[] | select(.metadata.deletionTimestamp == null)
			| select(any(.status.conditions[]?; .type == "Ready" and .status == "True"))
			| "\(.metadata.uid) \(.metadata.creationTimestamp) \(.metadata.name)"] | .[0] // ""'
}
read -r drv0 _ <<<"$(pod_now driver)"
read -r plg0 _ <<<"$(pod_now dra-driver)"
[[ -n $drv0 && -n $plg0 ]] || fail "no Ready driver or plugin pod before the upgrade"
upgraded() {
	local d p s
	d=$(pod_now driver)
	p=$(pod_now dra-driver)
	s=$(kc get node "$NODE" -o json | jq -r '.metadata.labels["nvidia.com/gpu-driver-upgrade-state"] // ""')
	echo "state=$s driver=${d%% *} plugin=${p%% *}"
	[[ $s == upgrade-done && -n $d && -n $p && ${d%% *} != "$drv0" && ${p%% *} != "$plg0" ]]
}
export -f pod_now upgraded
export drv0 plg0
kc patch gpupolicy "$POLICY" --type=merge -p '{"spec":{"driver":{"env":[{"name":"GPUOP_E2E_REVISION","value":"2"}],"upgradePolicy":{"autoUpgrade":true,"maxParallelUpgrades":1,"maxUnavailable":1}}}}' >/dev/null
wait_for "$READY_TIMEOUT" upgraded
read -r _ drv1_at _ <<<"$(pod_now driver)"
read -r _ plg1_at PLUGIN <<<"$(pod_now dra-driver)"
[[ ! $plg1_at < $drv1_at ]] || fail "the plugin's pod $PLUGIN ($plg1_at) is older than the new driver pod ($drv1_at)"
log "the plugin restarted: $PLUGIN at $plg1_at, the new driver pod at $drv1_at"
export PLUGIN
wait_for "$SETTLE_TIMEOUT" registered
wait_for "$WIPE_TIMEOUT" slice_count_is 1

log "the driver's deploy label removed: its pod goes, the plugin and its slice stay: gpuop says SlicesWithoutDriver"
# dra_reasons: the reasons of the node's dra-driver findings in the
# GpuPolicy's status, sorted, joined by ","
dra_reasons() {
	kc get gpupolicy "$POLICY" -o json |
		jq -r --arg n "$NODE" '[.status.nodes[]? | select(.name == $n) | .findings[]? | select(.operand == "dra-driver") | .reason] | sort | join(",")'
}
reasons_are() { [[ $(dra_reasons) == "$1" ]]; }
driver_gone() { [[ -z $(kc -n "$GPUOP_NS" get pods -o name -l app.kubernetes.io/component=driver --field-selector "spec.nodeName=$NODE") ]]; }
export -f dra_reasons reasons_are driver_gone
export POLICY
kc label node "$NODE" nvidia.com/gpu.deploy.driver- >/dev/null
wait_for "$SETTLE_TIMEOUT" driver_gone
wait_for "$SETTLE_TIMEOUT" reasons_are SlicesWithoutDriver
msg=$(kc get gpupolicy "$POLICY" -o json | jq -r --arg n "$NODE" '.status.nodes[]? | select(.name == $n) | .findings[]? | select(.reason == "SlicesWithoutDriver") | .message')
grep -qF "$GPUS device(s) in 1 ResourceSlice(s) of driver $DRIVER name the node, but driver neither runs nor is host-provided" <<<"$msg" ||
	fail "SlicesWithoutDriver does not count the plugin's slice: $msg"
slice_count_is 1 || fail "the plugin's slice went with the driver pod"

log "the plugin's deploy label removed: its pod goes, the kubelet wipes its slice"
t0=$SECONDS
kc label node "$NODE" nvidia.com/gpu.deploy.dra-driver- >/dev/null
plugin_gone() { [[ -z $(kc -n "$GPUOP_NS" get pods -o name --field-selector "spec.nodeName=$NODE" | grep dra-driver) ]]; }
export -f plugin_gone
wait_for "$SETTLE_TIMEOUT" plugin_gone
gone_after=$((SECONDS - t0))
if ! slice_count_is 1 && ((gone_after < WIPE_GRACE)); then
	fail "the slice went with the plugin pod (${gone_after}s after the label): not the kubelet's wipe"
fi
wait_for "$WIPE_TIMEOUT" slice_count_is 0
log "the plugin pod gone ${gone_after}s and the slice $((SECONDS - t0))s after the label went"
((SECONDS - t0 >= WIPE_GRACE)) || fail "the slice went $((SECONDS - t0))s after the label: sooner than the kubelet's grace"
# gpuop reads the wipe from the API: no slice left, so no SlicesWithoutDriver;
# what it says of the node now is that the plugin's label is gone while
# spec.draDriver is enabled
wait_for "$SETTLE_TIMEOUT" reasons_are LabelAbsent
log "after the wipe gpuop says of $NODE's dra-driver: $(dra_reasons)"

gpuop_stop
