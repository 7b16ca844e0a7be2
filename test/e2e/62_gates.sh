#!/usr/bin/env bash
# End-to-end on a real kubelet (issue 21): the readiness gates inside the
# node really hold. gpuop (GPUOP_BIN, out of the cluster) renders the
# operand DaemonSets of a GpuPolicy whose images are the lab's stand-ins
# (test/lab/standin-images; docs/lab.md, "Stand-in operand images"): they
# write and wait for the same files under /run/nvidia/validations as
# NVIDIA's images, and each checks what NVIDIA's image needs from its pod
# (the token, the gate files, the driver root, its host mounts).
#
#   the real node labelled as a GPU node -> all six operand pods Running and
#   Ready; the toolkit started after driver-ready was first written and
#   never refused to start (no restart); the device plugin, GFD and DCGM
#   exporter started after toolkit-ready; a validator read its
#   service-account token (the claims name the pod's ServiceAccount) and
#   the API server accepted it (it lists the driver DaemonSets, reads its
#   node, as the real validator does);
#   driver-ready on the host names the driver root, which the driver
#   exposes at /run/nvidia/driver; toolkit.pid written after driver-ready.
#   Negative: the driver image swapped for one that never becomes ready and
#   the toolkit pod recreated -> it stays in its init container (Init:N/M),
#   its toolkit never starts.
#
# It brings up its own real-node lab in LAB_DIR-gates (never beside
# another real-node lab: one per machine) and takes it down again; then
# reruns itself inside the lab's network namespace (test/lab/exec). Needs
# root. The operands' hostPath folders it created on the machine
# (/run/nvidia, /usr/local/nvidia, ...: recorded before the first pod
# runs) are removed at the end. The pods' Bidirectional and
# HostToContainer mounts need "/" to be a shared mount (containerd checks;
# systemd hosts have it): when it is not, the test makes "/" shared (not
# recursively) for its run and private again at the end.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)

# shellcheck source=real_node_outer.bash
source "$HERE/real_node_outer.bash"
if [[ -z ${E2E_GATES_INNER:-} ]]; then
	real_node_outer 62_gates gates E2E_GATES_INNER '/run/nvidia' "$0"
fi

# ---- inside the lab's network namespace ------------------------------------------
source "$HERE/lib.sh"
source "$HERE/gpuop.sh" # gpuop_install, gpuop_start, gpuop_stop; GPUOP_NS
# shellcheck source=real_node_inner.bash
source "$HERE/real_node_inner.bash" # standins_import, IMG, dump_operand_pods

NODE=${LAB_NODE:?not a real-node lab}
READY_TIMEOUT=420 # s: six operands, init gates retrying every 5 s, probes, a loaded machine
SETTLE_TIMEOUT=180
POLICY=gates
V=/run/nvidia/validations
[[ -x $GPUOP_BIN ]] || fail "no gpuop binary (GPUOP_BIN=$GPUOP_BIN)"

log "import the stand-in images into the node's containerd"
standins_import

# On failure: every operand pod's containers and their logs.
dump_state() {
	dump_operand_pods
	kc -n "$GPUOP_NS" describe pods 2>&1 | grep -E '^Name:|Warning|Error' >&2
	ls -la --time-style=+%s.%N "$V" >&2 2>&1
}
on_exit '((rc == 0)) || dump_state'
on_exit 'kc delete gpupolicy "$POLICY" --ignore-not-found --wait=true >/dev/null 2>&1 || true'
on_exit 'kc -n "$GPUOP_NS" delete pods --all --wait=true --timeout=120s >/dev/null 2>&1 || true'
on_exit 'gpuop_kill'
track_ns "$GPUOP_NS"

gpuop_install
# autoUpgrade off: the negative step below replaces the driver pod by hand
# (as a user without gpuop's upgrades does) to hold the toolkit's gate
# against a driver that never becomes ready; gpuop's own upgrade would
# pause the dependents and fail the node instead (docs/upgrade.md, and
# e2e/66_driver_upgrade_failure).
policy() { # policy DRIVER_IMAGE
	kc apply -f - >/dev/null <<EOF
apiVersion: gpuop.dev/v1alpha1
kind: GpuPolicy
metadata:
  name: $POLICY
spec:
  driver:
    enabled: true
    image: "$1"
    imagePullPolicy: Never
    upgradePolicy: {autoUpgrade: false}
    manager: {image: "${IMG[driver-manager]}", imagePullPolicy: Never}
  toolkit: {enabled: true, image: "${IMG[toolkit]}", imagePullPolicy: Never}
  devicePlugin: {enabled: true, image: "${IMG[device-plugin]}", imagePullPolicy: Never}
  gfd: {enabled: true, image: "${IMG[device-plugin]}", imagePullPolicy: Never}
  dcgmExporter: {enabled: true, image: "${IMG[dcgm-exporter]}", imagePullPolicy: Never}
  validator: {enabled: true, image: "${IMG[validator]}", imagePullPolicy: Never}
  migManager: {enabled: false}
EOF
}
policy "${IMG[driver]}"
gpuop_start --leader-elect=false

log "the DaemonSets exist before the node is labelled: record which of their hostPaths exist"
wait_for "$SETTLE_TIMEOUT" bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' -n $GPUOP_NS get ds -o name | wc -l)\" -ge 6 ]"
ds_json() { kc -n "$GPUOP_NS" get ds -o json; }
mapfile -t HP < <(ds_json | jq -r '.items[].spec.template.spec.volumes[]? | .hostPath.path // empty' | sort -u)
((${#HP[@]})) || fail "no hostPath volumes in the rendered DaemonSets"
# The kubelet creates a DirectoryOrCreate path with its parents: what the
# run adds is the topmost missing ancestor.
for p in "${HP[@]}"; do
	top=""
	while [[ $p == /*/* && ! -e $p ]]; do
		top=$p
		p=${p%/*}
	done
	[[ -n $top ]] && printf 'absent %s\n' "$top"
done | sort -u >"$E2E_HOSTPATHS"
log "hostPaths: ${#HP[@]}; absent (removed at the end): $(awk '{ print $2 }' "$E2E_HOSTPATHS" | tr '\n' ' ')"
[[ -e $V ]] && fail "$V already exists on this machine: the test would read someone else's files"

log "label $NODE as a GPU node"
labels=(nvidia.com/gpu.present=true)
for op in driver container-toolkit device-plugin gpu-feature-discovery dcgm-exporter operator-validator; do
	labels+=("nvidia.com/gpu.deploy.$op=true")
done
kc label node "$NODE" --overwrite "${labels[@]}" >/dev/null
on_exit 'kc label node "$NODE" nvidia.com/gpu.present- $(printf "nvidia.com/gpu.deploy.%s- " driver container-toolkit device-plugin gpu-feature-discovery dcgm-exporter operator-validator) >/dev/null 2>&1 || true'

# real_node_pod_of and real_node_all_ready: real_node_outer.bash's (gpuop
# names the DaemonSets gpuop-<operand>).
export -f real_node_all_ready kc
export NODE GPUOP_NS
log "all six operand pods Running and Ready on $NODE (deadline ${READY_TIMEOUT}s)"
wait_for "$READY_TIMEOUT" real_node_all_ready 6

DRIVER=$(real_node_pod_of driver)
TOOLKIT=$(real_node_pod_of toolkit)
PLUGIN=$(real_node_pod_of device-plugin)
GFD=$(real_node_pod_of 'feature-discovery|gfd')
DCGM=$(real_node_pod_of dcgm)
VALIDATOR=$(real_node_pod_of validator)
for v in DRIVER TOOLKIT PLUGIN GFD DCGM VALIDATOR; do
	[[ -n ${!v} ]] || fail "no operand pod for $v"
done

# Every container's log of every operand pod, "POD CONTAINER LINE".
all_logs() {
	local p c
	for p in $(kc -n "$GPUOP_NS" get pods -o jsonpath='{.items[*].metadata.name}'); do
		for c in $(kc -n "$GPUOP_NS" get pod "$p" -o jsonpath='{.spec.initContainers[*].name} {.spec.containers[*].name}'); do
			kc -n "$GPUOP_NS" logs "$p" -c "$c" 2>/dev/null | sed "s|^|$p $c |"
		done
	done
}
all_logs >"$E2E_TMP/logs.txt"
# first_t REGEX: the earliest stand-in time stamp of a log line matching.
first_t() {
	grep -E "$1" "$E2E_TMP/logs.txt" | sed -n 's/.* t=\([0-9.]*\)\].*/\1/p' | sort -n | sed -n 1p
}
# start_t POD APPLET: when the stand-in APPLET first started in POD.
start_t() {
	grep -E "^$1 [^ ]+ \[$2 t=" "$E2E_TMP/logs.txt" | sed -n 's/.* t=\([0-9.]*\)\].*/\1/p' | sort -n | sed -n 1p
}
after() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 >= b + 0) }'; }

t_driver_ready=$(first_t "wrote $V/driver-ready")
t_toolkit_ready=$(first_t "wrote $V/toolkit-ready")
[[ -n $t_driver_ready ]] || fail "no validator stand-in wrote $V/driver-ready"
[[ -n $t_toolkit_ready ]] || fail "no validator stand-in wrote $V/toolkit-ready"

log "the toolkit started only after driver-ready (first written at $t_driver_ready) and never refused"
t_tk=$(start_t "$TOOLKIT" 'nvidia-(ctk-installer|toolkit)')
[[ -n $t_tk ]] || fail "the toolkit stand-in never logged in $TOOLKIT"
after "$t_tk" "$t_driver_ready" || fail "the toolkit started at $t_tk, before driver-ready ($t_driver_ready)"
grep -E "^$TOOLKIT [^ ]+ \[nvidia-(ctk-installer|toolkit) .*FAIL" "$E2E_TMP/logs.txt" &&
	fail "the toolkit stand-in failed a check (above)"
assert_eq 0 "$(kc -n "$GPUOP_NS" get pod "$TOOLKIT" -o jsonpath='{.status.containerStatuses[0].restartCount}')" \
	"restarts of the toolkit container (a start before driver-ready exits 1)"
grep -qE "^$TOOLKIT .*check: driver root .* agrees with driver-ready" "$E2E_TMP/logs.txt" ||
	fail "the toolkit's driver root was not checked against driver-ready"

log "each dependent started after its gate file (toolkit-ready first written at $t_toolkit_ready)"
for pa in "$PLUGIN nvidia-device-plugin" "$GFD gpu-feature-discovery" "$DCGM dcgm-exporter"; do
	read -r pod applet <<<"$pa"
	t=$(start_t "$pod" "$applet")
	[[ -n $t ]] || fail "$applet never started in $pod"
	after "$t" "$t_toolkit_ready" || fail "$applet started at $t, before toolkit-ready ($t_toolkit_ready)"
	after "$t" "$t_driver_ready" || fail "$applet started at $t, before driver-ready ($t_driver_ready)"
	assert_eq 0 "$(kc -n "$GPUOP_NS" get pod "$pod" -o jsonpath='{.status.containerStatuses[0].restartCount}')" \
		"restarts of $applet"
done

log "the validator read its service-account token"
sa=$(kc -n "$GPUOP_NS" get pod "$VALIDATOR" -o jsonpath='{.spec.serviceAccountName}')
grep -qE "^$VALIDATOR [^ ]+ \[nvidia-validator .*check: in-cluster config: .* token .* read .*sub=system:serviceaccount:$GPUOP_NS:$sa\)" "$E2E_TMP/logs.txt" ||
	fail "no validator container of $VALIDATOR read a token of system:serviceaccount:$GPUOP_NS:$sa"
# ... and the API server took it: the driver DaemonSets listed, as the real
# validator does before it trusts a containerized driver.
grep -qE "^$VALIDATOR [^ ]+ \[nvidia-validator .*check: listed the driver DaemonSets \(HTTP 200" "$E2E_TMP/logs.txt" ||
	fail "the validator of $VALIDATOR did not list the driver DaemonSets with its token"
grep -qE "^$VALIDATOR [^ ]+ \[nvidia-validator .*check: GET node $NODE \(HTTP 200\)" "$E2E_TMP/logs.txt" ||
	fail "the plugin validation of $VALIDATOR did not read its node with its token"

log "the driver manager ran first in the driver pod, read its node with its token, took NVIDIA's no-driver-loaded path"
dm() { grep -E "^$1 k8s-driver-manager \[driver-manager " "$E2E_TMP/logs.txt"; }
grep -qE "check: read node $NODE \(HTTP 200, the token accepted\)" <<<"$(dm "$DRIVER")" ||
	fail "the driver manager of $DRIVER did not read its node with its token: $(dm "$DRIVER" | tail -n 3)"
grep -qE "check: /host is not|FAIL" <<<"$(dm "$DRIVER")" && fail "the driver manager failed a check: $(dm "$DRIVER")"
grep -q "Driver uninstallation completed successfully" <<<"$(dm "$DRIVER")" ||
	fail "the driver manager of $DRIVER did not complete: $(dm "$DRIVER" | tail -n 3)"
t_dm=$(start_t "$DRIVER" driver-manager)
t_drv=$(start_t "$DRIVER" nvidia-driver)
[[ -n $t_dm && -n $t_drv ]] || fail "no start time for the driver manager ($t_dm) or the driver ($t_drv)"
after "$t_drv" "$t_dm" || fail "the driver started at $t_drv, before its driver manager ($t_dm)"
dg=$(kc -n "$GPUOP_NS" get pod "$DRIVER" -o json | jq -r '[.spec.initContainers[], .spec.containers[]]
	| map(.env[]? | select(.name == "DRIVER_CONFIG_DIGEST") | .value) | unique | join(" ")')
[[ $dg =~ ^[0-9]+$ ]] || fail "the driver manager and the driver do not carry one DRIVER_CONFIG_DIGEST: '$dg'"

log "the files on the host"
[[ -f $V/driver-ready ]] || fail "$V/driver-ready not on the host"
grep -qx 'NVIDIA_DRIVER_ROOT=/run/nvidia/driver' "$V/driver-ready" ||
	fail "driver-ready does not name the driver container's root: $(cat "$V/driver-ready")"
grep -qx 'IS_HOST_DRIVER=false' "$V/driver-ready" || fail "driver-ready: $(cat "$V/driver-ready")"
[[ -f $V/toolkit-ready ]] || fail "$V/toolkit-ready not on the host"
[[ -x /run/nvidia/driver/usr/bin/nvidia-smi ]] ||
	fail "the driver root is not exposed on the host at /run/nvidia/driver (mount propagation)"
pidf=/run/nvidia/toolkit/toolkit.pid
[[ -f $pidf ]] || fail "$pidf not on the host"
[[ $(<"$pidf") =~ ^[0-9]+$ ]] || fail "$pidf holds '$(<"$pidf")'"
after "$(stat -c %.9Y "$pidf")" "$t_driver_ready" || fail "$pidf written before driver-ready"

log "a driver pod deleted by hand: its new driver manager sets back a deploy label a driver upgrade paused"
kc label node "$NODE" --overwrite nvidia.com/gpu.deploy.device-plugin=paused-for-driver-upgrade >/dev/null
kc -n "$GPUOP_NS" delete pod "$DRIVER" --wait=true --timeout=120s >/dev/null
plugin_back() {
	[[ $(kubectl --kubeconfig "$KUBECONFIG" get node "$NODE" -o jsonpath='{.metadata.labels.nvidia\.com/gpu\.deploy\.device-plugin}') == true ]]
}
export -f plugin_back
wait_for "$READY_TIMEOUT" plugin_back
wait_for "$READY_TIMEOUT" real_node_all_ready 6
OLD_DRIVER=$DRIVER
DRIVER=$(real_node_pod_of driver)
[[ -n $DRIVER && $DRIVER != "$OLD_DRIVER" ]] || fail "no new driver pod (old $OLD_DRIVER, now '$DRIVER')"
grep -q 'rescheduled the GPU operator components: .*"nvidia.com/gpu.deploy.device-plugin":"true"' \
	<<<"$(kc -n "$GPUOP_NS" logs "$DRIVER" -c k8s-driver-manager)" ||
	fail "the device plugin's label was not set back by $DRIVER's driver manager: $(kc -n "$GPUOP_NS" logs "$DRIVER" -c k8s-driver-manager | tail -n 4)"

log "a driver pod deleted by hand after its install configuration changed, a GPU pod on the node: the driver manager evicts it before the module goes"
# The real node advertises the nvidia.com/gpu the device plugin stand-in
# registered with the kubelet (docs/lab.md, "GPUs through the kubelet");
# the GPU pod gets one through Allocate and CDI, and holds the stand-in
# module (test/lab/standins.c, module_in_use).
wait_for "$SETTLE_TIMEOUT" bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' get node $NODE -o jsonpath='{.status.allocatable.nvidia\\.com/gpu}')\" -ge 1 ] 2>/dev/null"
make_ns WL gates-gpu
kc -n "$WL" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: train}
spec:
  nodeName: $NODE
  tolerations: [{operator: Exists}]
  terminationGracePeriodSeconds: 1
  containers:
  - name: train
    image: "${IMG[validator]}"
    imagePullPolicy: Never
    command: [/busybox/sleep, "100000"]
    resources: {limits: {nvidia.com/gpu: 1}}
EOF
wait_for "$READY_TIMEOUT" bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' -n $WL get pod train -o jsonpath='{.status.phase}')\" = Running ]"
TRAIN_UID=$(kc -n "$WL" get pod train -o jsonpath='{.metadata.uid}')
# the install configuration changes (an env value: a new DRIVER_CONFIG_DIGEST);
# the driver DaemonSet is OnDelete, so nothing moves until the pod goes
OLD_DIGEST=$(kc -n "$GPUOP_NS" get pod "$DRIVER" -o json | jq -r '.spec.containers[0].env[] | select(.name == "DRIVER_CONFIG_DIGEST") | .value')
kc patch gpupolicy "$POLICY" --type=merge -p '{"spec":{"driver":{"env":[{"name":"GPUOP_E2E_CONFIG","value":"2"}]}}}' >/dev/null
new_digest() {
	local d
	d=$(kubectl --kubeconfig "$KUBECONFIG" -n "$GPUOP_NS" get ds -l app.kubernetes.io/component=driver -o json |
		jq -r '.items[0].spec.template.spec.containers[0].env[] | select(.name == "DRIVER_CONFIG_DIGEST") | .value')
	[[ -n $d && $d != "$OLD_DIGEST" ]]
}
export -f new_digest
export OLD_DIGEST
wait_for "$SETTLE_TIMEOUT" new_digest
kc -n "$GPUOP_NS" delete pod "$DRIVER" --wait=false >/dev/null
train_gone() {
	local u
	u=$(kubectl --kubeconfig "$KUBECONFIG" -n "$WL" get pod train -o jsonpath='{.metadata.uid}' 2>/dev/null || true)
	[[ $u != "$TRAIN_UID" ]]
}
export -f train_gone
export WL TRAIN_UID
wait_for "$READY_TIMEOUT" train_gone
wait_for "$READY_TIMEOUT" real_node_all_ready 6
OLD_DRIVER=$DRIVER
DRIVER=$(real_node_pod_of driver)
TOOLKIT=$(real_node_pod_of toolkit) # the operands were paused and came back
[[ -n $DRIVER && $DRIVER != "$OLD_DRIVER" ]] || fail "no new driver pod (old $OLD_DRIVER, now '$DRIVER')"
kc -n "$GPUOP_NS" logs "$DRIVER" -c k8s-driver-manager >"$E2E_TMP/dm.log"
for want in "evicting GPU pod $WL/train: HTTP 201" 'no GPU pod left on the node' \
	'unloaded the NVIDIA driver kernel modules' 'uncordoned the node' 'Driver uninstallation completed successfully'; do
	grep -qF "$want" "$E2E_TMP/dm.log" || fail "the driver manager of $DRIVER did not say '$want': $(tail -n 8 "$E2E_TMP/dm.log")"
done
# in that order, and all before the new driver container started
t_evicted=$(sed -n 's/.* t=\([0-9.]*\)\].*no GPU pod left on the node.*/\1/p' "$E2E_TMP/dm.log" | sed -n 1p)
t_unloaded=$(sed -n 's/.* t=\([0-9.]*\)\].*unloaded the NVIDIA driver.*/\1/p' "$E2E_TMP/dm.log" | sed -n 1p)
t_new=$(kc -n "$GPUOP_NS" logs "$DRIVER" -c "$(kc -n "$GPUOP_NS" get pod "$DRIVER" -o jsonpath='{.spec.containers[0].name}')" |
	sed -n 's/.*\[nvidia-driver t=\([0-9.]*\)\].*/\1/p' | sort -n | sed -n 1p)
[[ -n $t_evicted && -n $t_unloaded && -n $t_new ]] || fail "no times: evicted '$t_evicted', unloaded '$t_unloaded', new driver '$t_new'"
after "$t_unloaded" "$t_evicted" || fail "the module went at $t_unloaded, before the GPU pod left ($t_evicted)"
after "$t_new" "$t_unloaded" || fail "the new driver started at $t_new, before the old module went ($t_unloaded)"
assert_eq "" "$(kc get node "$NODE" -o jsonpath='{.spec.unschedulable}')" "the node's cordon after the driver manager"
for op in container-toolkit device-plugin gpu-feature-discovery dcgm-exporter operator-validator; do
	assert_eq true "$(kc get node "$NODE" -o jsonpath="{.metadata.labels.nvidia\.com/gpu\.deploy\.$op}")" "deploy label of $op after the driver manager"
done

log "negative: a driver that never becomes ready; the toolkit pod recreated stays in its init container"
policy "${IMG[driver-never-ready]}"
# NVIDIA's driver DaemonSet updates OnDelete: replace the pod either way.
wait_for "$SETTLE_TIMEOUT" bash -c "kubectl --kubeconfig '$KUBECONFIG' -n $GPUOP_NS get ds -o json | jq -e 'any(.items[].spec.template.spec.containers[]; .image == \"${IMG[driver-never-ready]}\")' >/dev/null"
kc -n "$GPUOP_NS" delete pod "$DRIVER" --ignore-not-found --wait=true --timeout=120s >/dev/null
new_driver() {
	local p
	p=$(kc -n "$GPUOP_NS" get pods -o json | jq -r --arg img "$1" '.items[]
		| select(.metadata.deletionTimestamp == null)
		| select(any(.spec.containers[]; .image == $img)) | select(.status.phase == "Running") | .metadata.name' | sed -n 1p)
	[[ -n $p ]] && grep -q 'never loads' <<<"$(kc -n "$GPUOP_NS" logs "$p" 2>/dev/null)"
}
export -f new_driver
wait_for "$READY_TIMEOUT" new_driver "${IMG[driver-never-ready]}"
[[ -e /run/nvidia/driver/usr/bin/nvidia-smi ]] && fail "the old driver's root is still mounted at /run/nvidia/driver"
kc -n "$GPUOP_NS" delete pod "$TOOLKIT" --wait=true --timeout=120s >/dev/null
toolkit_waiting() { # prints the new toolkit pod once its init container waits, retrying
	local p
	p=$(real_node_pod_of toolkit)
	[[ -n $p && $p != "$TOOLKIT" ]] || return 1
	[[ $(kc -n "$GPUOP_NS" logs "$p" -c "$(kc -n "$GPUOP_NS" get pod "$p" -o jsonpath='{.spec.initContainers[0].name}')" 2>/dev/null |
		grep -cE 'retrying after|waiting') -ge 3 ]] || return 1
	printf '%s\n' "$p"
}
export -f toolkit_waiting real_node_pod_of
export TOOLKIT
wait_for "$READY_TIMEOUT" toolkit_waiting
NEW=$(toolkit_waiting)
st=$(kc -n "$GPUOP_NS" get pod "$NEW" -o json)
assert_eq Pending "$(jq -r .status.phase <<<"$st")" "phase of the toolkit pod behind a driver that is not ready"
[[ $(kc -n "$GPUOP_NS" get pod "$NEW" --no-headers | awk '{ print $3 }') == Init:* ]] ||
	fail "the toolkit pod is '$(kc -n "$GPUOP_NS" get pod "$NEW" --no-headers)', not in its init container"
jq -e '[.status.containerStatuses[]? | select(.state.running or .state.terminated)] | length == 0' <<<"$st" >/dev/null ||
	fail "a toolkit container ran behind a driver that is not ready"
[[ -e $V/driver-ready ]] && fail "driver-ready is on the host while the driver is not ready"
log "the toolkit pod $NEW: $(kc -n "$GPUOP_NS" get pod "$NEW" --no-headers | awk '{ print $3 }')"

gpuop_stop
