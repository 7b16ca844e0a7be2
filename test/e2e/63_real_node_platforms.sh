#!/usr/bin/env bash
# End-to-end on a real kubelet (issue 39): the two managed platforms whose
# GPU Operator values move what the node's runtime sees, with the lab's
# stand-in images (docs/lab.md, "Stand-in operand images"; the bring-up and
# teardown are real_node_outer.bash's). One GpuPolicy, as GKE on Container-Optimized OS
# with AKS's runtime handler:
#
#   GKE COS: the platform installs the driver itself under
#   /home/kubernetes/bin/nvidia (the cos-gpu-installer stand-in, run as a
#   pod before gpuop: bin/nvidia-smi and lib64/libnvidia-ml.so.1, GKE's
#   layout); driver.enabled false, spec.hostPaths.driverInstallDir and
#   spec.toolkit.installDir there -> the validator's driver-validation
#   found the driver there and driver-ready names that root; the toolkit
#   started after driver-ready, installed into that folder; all five
#   operand pods Running and Ready on the real node.
#
#   AKS: spec.operator.runtimeClass nvidia-container-runtime -> the
#   RuntimeClass gpuop applies has that name and handler; the validator,
#   device plugin, GFD and DCGM exporter pods run in it; the toolkit
#   registered the runtime under that name (CONTAINERD_RUNTIME_CLASS), and
#   the node's containerd ran those pods' containers with that handler and
#   the driver injected (logs/nvidia-runtime.log). Negative: a pod under
#   the lab's other handler, nvidia, gets no driver (the toolkit did not
#   register that name), and a pod whose RuntimeClass names a handler the
#   node lacks never gets a sandbox ('no runtime for "..." is configured').
#
# Needs root; one real-node lab per machine (run under
# flock /work/labs/real-node.lock with 60_real_node and 62_gates). Whatever
# it adds on the machine (/home/kubernetes, /run/nvidia, ...: recorded
# before the first pod runs) is removed at the end and checked gone.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
GKE=/home/kubernetes/bin/nvidia
AKS=nvidia-container-runtime

# shellcheck source=real_node_outer.bash
source "$HERE/real_node_outer.bash"
if [[ -z ${E2E_PLATFORMS_INNER:-} ]]; then
	real_node_outer 63_real_node_platforms platforms E2E_PLATFORMS_INNER '/run/nvidia|/home/kubernetes' "$0"
fi

# ---- inside the lab's network namespace ------------------------------------------
source "$HERE/lib.sh"
source "$HERE/gpuop.sh" # gpuop_install, gpuop_start, gpuop_stop; GPUOP_NS
# shellcheck source=real_node_inner.bash
source "$HERE/real_node_inner.bash" # standins_import, IMG, dump_operand_pods

NODE=${LAB_NODE:?not a real-node lab}
READY_TIMEOUT=420 # s: five operands, init gates retrying every 5 s, probes, a loaded machine
SETTLE_TIMEOUT=180
POD_TIMEOUT=180
POLICY=platforms
V=/run/nvidia/validations
RTLOG=$LAB_DIR/logs/nvidia-runtime.log
OPERANDS=(container-toolkit device-plugin gpu-feature-discovery dcgm-exporter operator-validator)
[[ -x $GPUOP_BIN ]] || fail "no gpuop binary (GPUOP_BIN=$GPUOP_BIN)"

log "import the stand-in images into the node's containerd"
standins_import

dump_state() {
	dump_operand_pods
	kc get events -A --field-selector type=Warning 2>&1 | tail -20 >&2
	tail -20 "$RTLOG" >&2 2>&1
	ls -la "$V" "$GKE" "$GKE/toolkit" >&2 2>&1
}
on_exit '((rc == 0)) || dump_state'
on_exit 'kc delete gpupolicy "$POLICY" --ignore-not-found --wait=true >/dev/null 2>&1 || true'
on_exit 'kc -n "$GPUOP_NS" delete pods --all --wait=true --timeout=120s >/dev/null 2>&1 || true'
on_exit 'gpuop_kill'
on_exit 'kc delete runtimeclass gpuop-e2e-unknown gpuop-e2e-nvidia --ignore-not-found >/dev/null 2>&1 || true'
track_ns "$GPUOP_NS"
make_ns NS platforms

[[ -e $GKE ]] && fail "$GKE already exists on this machine: the test would read someone else's driver"
[[ -e $V ]] && fail "$V already exists on this machine: the test would read someone else's files"
# The folders this run may add on the machine: the operands' hostPaths
# (known once gpuop rendered them) and GKE's install folder, each's
# topmost missing ancestor (real_node_record_absent).
real_node_record_absent "$GKE"

log "GKE installs the driver under $GKE (the cos-gpu-installer stand-in, as its DaemonSet mounts it)"
kc -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: cos-gpu-installer}
spec:
  nodeName: $NODE
  restartPolicy: Never
  containers:
  - name: nvidia-driver-installer
    image: ${IMG[cos-installer]}
    imagePullPolicy: Never
    env:
    - {name: NVIDIA_INSTALL_DIR_HOST, value: $GKE}
    - {name: NVIDIA_INSTALL_DIR_CONTAINER, value: /usr/local/nvidia}
    volumeMounts: [{name: nvidia-install-dir-host, mountPath: /usr/local/nvidia}]
  volumes:
  - {name: nvidia-install-dir-host, hostPath: {path: $GKE, type: DirectoryOrCreate}}
EOF
phase_is() { [[ $(kc -n "$1" get pod "$2" -o jsonpath='{.status.phase}') == "$3" ]]; }
export -f phase_is kc
export NODE GPUOP_NS
wait_for "$POD_TIMEOUT" phase_is "$NS" cos-gpu-installer Succeeded
[[ -x $GKE/bin/nvidia-smi && -f $GKE/lib64/libnvidia-ml.so.1 ]] ||
	fail "the installer did not lay out $GKE/bin/nvidia-smi and $GKE/lib64/libnvidia-ml.so.1"
[[ -e /run/nvidia/driver ]] && fail "/run/nvidia/driver exists: the driver would not be only GKE's"

gpuop_install
kc apply -f - >/dev/null <<EOF
apiVersion: gpuop.dev/v1alpha1
kind: GpuPolicy
metadata:
  name: $POLICY
spec:
  operator: {runtimeClass: $AKS}
  hostPaths: {driverInstallDir: $GKE}
  driver: {enabled: false}
  toolkit: {enabled: true, image: "${IMG[toolkit]}", imagePullPolicy: Never, installDir: $GKE}
  devicePlugin: {enabled: true, image: "${IMG[device-plugin]}", imagePullPolicy: Never}
  gfd: {enabled: true, image: "${IMG[device-plugin]}", imagePullPolicy: Never}
  dcgmExporter: {enabled: true, image: "${IMG[dcgm-exporter]}", imagePullPolicy: Never}
  validator: {enabled: true, image: "${IMG[validator]}", imagePullPolicy: Never}
  migManager: {enabled: false}
EOF
gpuop_start --leader-elect=false

log "the DaemonSets exist before the node is labelled: record which of their hostPaths exist"
wait_for "$SETTLE_TIMEOUT" bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' -n $GPUOP_NS get ds -o name | wc -l)\" -ge ${#OPERANDS[@]} ]"
mapfile -t HP < <(kc -n "$GPUOP_NS" get ds -o json | jq -r '.items[].spec.template.spec.volumes[]? | .hostPath.path // empty' | sort -u)
((${#HP[@]})) || fail "no hostPath volumes in the rendered DaemonSets"
real_node_record_absent "${HP[@]}"
log "absent (removed at the end): $(awk '{ print $2 }' "$E2E_HOSTPATHS" | tr '\n' ' ')"
grep -qx "$GKE" <<<"$(printf '%s\n' "${HP[@]}")" || fail "no DaemonSet mounts $GKE from the host"
grep -qx /run/nvidia/driver <<<"$(printf '%s\n' "${HP[@]}")" && fail "a DaemonSet still mounts /run/nvidia/driver"

log "AKS: the RuntimeClass gpuop applies is $AKS with handler $AKS"
wait_for "$SETTLE_TIMEOUT" kc get runtimeclass "$AKS"
assert_eq "$AKS" "$(kc get runtimeclass "$AKS" -o jsonpath='{.handler}')" "handler of RuntimeClass $AKS"
kc get runtimeclass nvidia >/dev/null 2>&1 && fail "gpuop applied a RuntimeClass nvidia beside $AKS"

log "label $NODE as a GPU node (no driver operand: the platform's)"
labels=(nvidia.com/gpu.present=true)
for op in "${OPERANDS[@]}"; do
	labels+=("nvidia.com/gpu.deploy.$op=true")
done
kc label node "$NODE" --overwrite "${labels[@]}" >/dev/null
on_exit 'kc label node "$NODE" nvidia.com/gpu.present- $(printf "nvidia.com/gpu.deploy.%s- " "${OPERANDS[@]}") >/dev/null 2>&1 || true'

export -f real_node_all_ready
log "all ${#OPERANDS[@]} operand pods Running and Ready on $NODE (deadline ${READY_TIMEOUT}s)"
wait_for "$READY_TIMEOUT" real_node_all_ready "${#OPERANDS[@]}"
kc -n "$GPUOP_NS" get pods -o json >"$E2E_TMP/pods.json"
jq -e '[.items[] | select(any(.metadata.ownerReferences[]?; .name | test("driver")))] | length == 0' \
	"$E2E_TMP/pods.json" >/dev/null || fail "a driver pod runs although driver.enabled is false"

pod_of() {
	jq -r --arg re "$1" '.items[] | select(.metadata.deletionTimestamp == null)
		| select(any(.metadata.ownerReferences[]?; .kind == "DaemonSet" and (.name | test($re))))
		| .metadata.name' "$E2E_TMP/pods.json" | sed -n 1p
}
TOOLKIT=$(pod_of toolkit)
VALIDATOR=$(pod_of validator)
[[ -n $TOOLKIT && -n $VALIDATOR ]] || fail "no toolkit or validator pod"
all_logs() {
	local p c
	for p in $(kc -n "$GPUOP_NS" get pods -o jsonpath='{.items[*].metadata.name}'); do
		for c in $(kc -n "$GPUOP_NS" get pod "$p" -o jsonpath='{.spec.initContainers[*].name} {.spec.containers[*].name}'); do
			kc -n "$GPUOP_NS" logs "$p" -c "$c" 2>/dev/null | sed "s|^|$p $c |"
		done
	done
}
all_logs >"$E2E_TMP/logs.txt"
first_t() { grep -E "$1" "$E2E_TMP/logs.txt" | sed -n 's/.* t=\([0-9.]*\)\].*/\1/p' | sort -n | sed -n 1p; }
after() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 >= b + 0) }'; }

log "GKE: driver-validation found the platform's driver under $GKE; driver-ready names that root"
grep -qE "^$VALIDATOR driver-validation .*check: no pre-installed driver on the host" "$E2E_TMP/logs.txt" ||
	fail "the validator's driver-validation did not look for a host driver first"
grep -qE "^$VALIDATOR driver-validation .*check: driver container root $GKE: $GKE/lib64/libnvidia-ml.so.1 and $GKE/bin/nvidia-smi, nvidia-smi ran" "$E2E_TMP/logs.txt" ||
	fail "the validator's driver-validation did not validate the driver under $GKE"
[[ -f $V/driver-ready ]] || fail "$V/driver-ready not on the host"
grep -qx "NVIDIA_DRIVER_ROOT=$GKE" "$V/driver-ready" || fail "driver-ready does not name $GKE: $(cat "$V/driver-ready")"
grep -qx 'IS_HOST_DRIVER=false' "$V/driver-ready" || fail "driver-ready: $(cat "$V/driver-ready")"
grep -qx 'DRIVER_ROOT_CTR_PATH=/driver-root' "$V/driver-ready" || fail "driver-ready: $(cat "$V/driver-ready")"
t_driver_ready=$(first_t "wrote $V/driver-ready")
[[ -n $t_driver_ready ]] || fail "no validator stand-in wrote $V/driver-ready"

log "GKE: the toolkit started after driver-ready ($t_driver_ready), took $GKE as its driver root and install folder"
t_tk=$(grep -E "^$TOOLKIT [^ ]+ \[nvidia-(ctk-installer|toolkit) t=" "$E2E_TMP/logs.txt" | sed -n 's/.* t=\([0-9.]*\)\].*/\1/p' | sort -n | sed -n 1p)
[[ -n $t_tk ]] || fail "the toolkit stand-in never logged in $TOOLKIT"
after "$t_tk" "$t_driver_ready" || fail "the toolkit started at $t_tk, before driver-ready ($t_driver_ready)"
assert_eq 0 "$(jq -r --arg p "$TOOLKIT" '.items[] | select(.metadata.name == $p) | .status.containerStatuses[0].restartCount' "$E2E_TMP/pods.json")" \
	"restarts of the toolkit container"
grep -qE "^$TOOLKIT .*check: driver root $GKE \(in the container /driver-root\) agrees with driver-ready" "$E2E_TMP/logs.txt" ||
	fail "the toolkit's driver root is not $GKE"
grep -qE "^$TOOLKIT .*check: driver files under /driver-root: /driver-root/lib64/libnvidia-ml.so.1, /driver-root/bin/nvidia-smi" "$E2E_TMP/logs.txt" ||
	fail "the toolkit did not find GKE's driver files at /driver-root"
grep -qE "^$TOOLKIT .*installed the toolkit into $GKE/toolkit" "$E2E_TMP/logs.txt" ||
	fail "the toolkit did not install into $GKE/toolkit"
[[ -f $GKE/toolkit/.gpuop-lab-standin ]] || fail "$GKE/toolkit/.gpuop-lab-standin not on the host"
[[ -f $V/toolkit-ready ]] || fail "$V/toolkit-ready not on the host"

log "AKS: the toolkit registered the runtime as $AKS; the GPU operand pods run in it"
grep -qE "^$TOOLKIT .*registered the runtime '$AKS' \(binary under $GKE/toolkit\)" "$E2E_TMP/logs.txt" ||
	fail "the toolkit did not register the runtime under $AKS"
jq -r '.items[] | "\(.metadata.name) \(.spec.runtimeClassName // "-")"' "$E2E_TMP/pods.json" >"$E2E_TMP/rc.txt"
for re in validator device-plugin feature-discovery dcgm; do
	p=$(pod_of "$re")
	[[ -n $p ]] || fail "no $re pod"
	assert_eq "$AKS" "$(awk -v p="$p" '$1 == p { print $2 }' "$E2E_TMP/rc.txt")" "runtimeClassName of $p"
done
assert_eq - "$(awk -v p="$TOOLKIT" '$1 == p { print $2 }' "$E2E_TMP/rc.txt")" "runtimeClassName of the toolkit pod (runc)"
# The node's containerd ran them with that handler, the driver injected
# from GKE's folder.
[[ -r $RTLOG ]] || fail "no $RTLOG: the node's containerd never used an NVIDIA handler"
grep -qE "handler=$AKS create [0-9a-f]+: injected $GKE/bin/nvidia-smi and $GKE/lib64/libnvidia-ml.so.1 \(driver root $GKE, toolkit in $GKE\)" "$RTLOG" ||
	fail "containerd's $AKS handler never injected GKE's driver: $(tail -5 "$RTLOG")"
grep -q "handler=nvidia " "$RTLOG" && fail "a container ran under the handler nvidia: $(grep -m3 'handler=nvidia ' "$RTLOG")"
grep -qE "^$VALIDATOR toolkit-validation .*check: /usr/bin/nvidia-smi ran \(injected by the NVIDIA runtime" "$E2E_TMP/logs.txt" ||
	fail "the validator's toolkit-validation did not run the injected nvidia-smi"

log "negative: under the lab's handler nvidia (which the toolkit did not register) nothing is injected"
probe_pod() { # probe_pod NAME RUNTIMECLASS
	kc -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  nodeName: $NODE
  restartPolicy: Never
  runtimeClassName: $2
  containers:
  - name: probe
    image: ${IMG[cos-installer]}
    imagePullPolicy: Never
    command: [/busybox/sh, -c, "/usr/bin/nvidia-smi"]
    env: [{name: NVIDIA_VISIBLE_DEVICES, value: all}]
EOF
}
kc apply -f - >/dev/null <<EOF
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: gpuop-e2e-nvidia}
handler: nvidia
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: gpuop-e2e-unknown}
handler: nvidia-e2e-unknown
EOF
probe_pod probe-aks "$AKS"
probe_pod probe-nvidia gpuop-e2e-nvidia
probe_pod probe-unknown gpuop-e2e-unknown
wait_for "$POD_TIMEOUT" phase_is "$NS" probe-aks Succeeded
wait_for "$POD_TIMEOUT" phase_is "$NS" probe-nvidia Failed
grep -qE "handler=nvidia create [0-9a-f]+: nothing injected \(the toolkit registered '$AKS', not 'nvidia'\)" "$RTLOG" ||
	fail "the nvidia handler's container: $(grep 'handler=nvidia ' "$RTLOG" | tail -2)"
log "negative: a RuntimeClass whose handler the node lacks gets no sandbox"
sandbox_refused() {
	grep -q 'no runtime for "nvidia-e2e-unknown" is configured' \
		<<<"$(kc -n "$1" get events --field-selector involvedObject.name=probe-unknown -o jsonpath='{.items[*].message}')"
}
export -f sandbox_refused
wait_for "$POD_TIMEOUT" sandbox_refused "$NS"
assert_eq Pending "$(kc -n "$NS" get pod probe-unknown -o jsonpath='{.status.phase}')" "phase of the pod with an unknown handler"

gpuop_stop
