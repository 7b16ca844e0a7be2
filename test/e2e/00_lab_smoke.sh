#!/usr/bin/env bash
# 00_lab_smoke — the lab behaves like a cluster for DaemonSets: the real
# DaemonSet controller and scheduler place a pod on a node when it gets the
# selected label and remove it when the label goes; a node with a taint the
# DaemonSet does not tolerate gets no pod and does not count in
# desiredNumberScheduled; kwok makes placed pods Running+Ready; and
# test/lab/pod-state puts a pod into CrashLoopBackOff / ImagePullBackOff
# without kwok or the DaemonSet controller undoing it.
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

LABEL=nvidia.com/gpu.deploy.driver
make_ns NS smoke
A=$(unique gpu-a)
B=$(unique gpu-b)
lab_node "$A" --label nvidia.com/gpu.present=true
lab_node "$B" --label nvidia.com/gpu.present=true
log "nodes $A $B, namespace $NS"

kc -n "$NS" apply -f - >/dev/null <<EOF2
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: driver
spec:
  selector:
    matchLabels: {app: driver}
  template:
    metadata:
      labels: {app: driver}
    spec:
      nodeSelector: {$LABEL: "true"}
      containers:
      - name: driver
        image: busybox:1.36
        command: [sleep, infinity]
EOF2

# ds_status: "observedGeneration desired current ready" of the DaemonSet.
ds_status() {
	kc -n "$NS" get daemonset driver -o json |
		jq -r '.status | "\(.observedGeneration // 0) \(.desiredNumberScheduled) \(.currentNumberScheduled) \(.numberReady)"'
}
# ds_is DESIRED CURRENT READY (prints the status, for wait_for's message)
ds_is() {
	local s
	s=$(ds_status)
	echo "status: $s"
	[[ $s == "1 $1 $2 $3" ]]
}
# pods: "node phase ready podIP" per live pod of the DaemonSet, sorted.
pods() {
	kc -n "$NS" get pods -l app=driver -o json | jq -r '.items[]
		| select(.metadata.deletionTimestamp == null)
		| "\(.spec.nodeName) \(.status.phase) \(any(.status.conditions[]?; .type == "Ready" and .status == "True")) \(.status.podIP // "-")"' | sort
}
pods_are() {
	local p
	p=$(pods)
	echo "pods: $p"
	[[ $p == "$1" ]]
}
# only_ready_pod_on NODE: the DaemonSet has exactly one pod, Running, Ready,
# with an IP, on NODE.
only_ready_pod_on() {
	local p
	p=$(pods)
	echo "pods: $p"
	[[ $p =~ ^$1\ Running\ true\ [0-9.]+$ ]]
}
pod_on() {
	kc -n "$NS" get pods -l app=driver --field-selector "spec.nodeName=$1" -o json |
		jq -e '.items | map(select(.metadata.deletionTimestamp == null)) | .[0] // empty'
}

# No node carries the label: nothing scheduled.
wait_for 30 ds_is 0 0 0
assert_eq "" "$(pods)" "pods before any label"

# Label A: exactly one pod, on A, Running and Ready, with an IP.
kc label node "$A" "$LABEL=true" >/dev/null
wait_for 30 ds_is 1 1 1
wait_for 30 only_ready_pod_on "$A"
pod=$(pod_on "$A")
assert_eq "$A" "$(jq -r .spec.nodeName <<<"$pod")" "node of the pod"
[[ $(jq -r '.status.podIP // ""' <<<"$pod") =~ ^[0-9.]+$ ]] || fail "pod has no IP"
[[ $(jq -r '.status.hostIP // ""' <<<"$pod") =~ ^[0-9.]+$ ]] || fail "pod has no host IP"
assert_eq true "$(jq -r '.status.containerStatuses[0].state.running != null' <<<"$pod")" "container running"
uid=$(jq -r .metadata.uid <<<"$pod")
log "label $A: one Ready pod on it"

# CrashLoopBackOff as a kubelet reports it; kwok must not undo it, the
# DaemonSet controller must keep the pod and count it as not ready.
"$GPUOP_SRC/test/lab/pod-state" "$A" "$NS" driver crashloop >/dev/null
crash_ok() {
	pod_on "$A" | jq -e --arg uid "$uid" '.metadata.uid == $uid
		and .status.phase == "Running"
		and any(.status.conditions[]; .type == "Ready" and .status == "False")
		and .status.containerStatuses[0].state.waiting.reason == "CrashLoopBackOff"
		and .status.containerStatuses[0].restartCount > 0
		and .status.podIP != null'
}
wait_for 30 crash_ok
wait_for 30 ds_is 1 1 0
sleep 3
crash_ok >/dev/null || fail "the CrashLoopBackOff state did not hold for 3 s: $(pod_on "$A" | jq -c .status)"
log "pod-state crashloop holds"

"$GPUOP_SRC/test/lab/pod-state" "$A" "$NS" driver imagepull >/dev/null
pull_ok() {
	pod_on "$A" | jq -e --arg uid "$uid" '.metadata.uid == $uid
		and .status.phase == "Pending"
		and .status.containerStatuses[0].state.waiting.reason == "ImagePullBackOff"'
}
wait_for 30 pull_ok
sleep 2
pull_ok >/dev/null || fail "the ImagePullBackOff state did not hold for 2 s"
"$GPUOP_SRC/test/lab/pod-state" "$A" "$NS" driver running >/dev/null
wait_for 30 ds_is 1 1 1
log "pod-state imagepull and running hold"

# Remove the label: the pod goes away (kwok completes the deletion).
kc label node "$A" "$LABEL-" >/dev/null
wait_for 30 ds_is 0 0 0
wait_for 30 pods_are ""
[[ -z $(kc -n "$NS" get pods -o name) ]] || fail "pods left after unlabel: $(kc -n "$NS" get pods -o name)"
log "unlabel $A: pod gone"

# B gets a taint the DaemonSet does not tolerate, then the label. A is
# labelled again afterwards: once A's pod exists the controller has seen
# B's label too, and B must neither have a pod nor count as desired.
kc taint node "$B" gpuop.test/reserved=yes:NoSchedule >/dev/null
kc label node "$B" "$LABEL=true" >/dev/null
kc label node "$A" "$LABEL=true" >/dev/null
wait_for 30 ds_is 1 1 1
wait_for 30 only_ready_pod_on "$A"
sleep 2
assert_eq "1 1 1 1" "$(ds_status)" "DaemonSet status with tainted $B (generation desired current ready)"
assert_eq 1 "$(pods | wc -l)" "pods with tainted $B"
pod_on "$B" >/dev/null && fail "a pod was placed on tainted node $B"
log "tainted $B: no pod, desiredNumberScheduled 1"

# Positive control: without the taint, B gets its pod.
kc taint node "$B" gpuop.test/reserved=yes:NoSchedule- >/dev/null
wait_for 30 ds_is 2 2 2
wait_for 30 pod_on "$B"
log "untainted $B: pod placed"
