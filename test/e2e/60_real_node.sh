#!/usr/bin/env bash
# End-to-end on a real kubelet (issue 12): gpuop installed with its Helm
# chart runs as a real pod, from its own image, on the real-node lab
# (test/lab/up --real-node; docs/lab.md, "A real node").
#
#   scripts/image -> ctr import -> helm install --wait: both replicas
#   Running and Ready on the real node (probes served to the kubelet), none
#   on a kwok node; in-cluster with the projected ServiceAccount token
#   against https://10.96.0.1:443, verifying the cluster CA; one holds the
#   Lease; the chart's GpuPolicy -> six DaemonSets whose pods land on the
#   kwok GPU nodes, status true; helm upgrade --set
#   devicePlugin.enabled=false -> that DaemonSet deleted, status follows;
#   uid 65532, no capabilities, read-only root (from /proc of the
#   container's process); kubectl logs; kubectl delete pod of the leader ->
#   exit 0, the other replica takes the Lease, a replacement becomes Ready;
#   a driver upgrade held on a node (a job it waits for), then helm
#   uninstall -> the release hook deletes the GpuPolicy while gpuop runs:
#   the node uncordoned, its upgrade labels and annotations gone;
#   all gone but the CRD; down leaves nothing behind.
# Measures: helm install to Ready, gpuop's VmRSS in the pod and out of the
# cluster (the same static binary, kubeconfig, same policy and nodes).
#
# It brings up its own real-node lab in LAB_DIR-real-node (the other e2e
# tests keep the plain lab) and takes it down again; then reruns itself
# inside the lab's network namespace (test/lab/exec). Needs root.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)

if [[ -z ${E2E_REAL_NODE_INNER:-} ]]; then
	base=${LAB_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gpuop/lab}
	export LAB_DIR=${E2E_REAL_NODE_LAB_DIR:-$base-real-node}
	say() { printf '[60_real_node %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
	t=$SECONDS
	say "building the image (scripts/image)"
	image=$("$SRC/scripts/image")
	say "image built in $((SECONDS - t))s: $image"
	t=$SECONDS
	# Whatever happens (a failure, CTest's timeout), the real node goes.
	trap '"$SRC/test/lab/down" >/dev/null 2>&1 || true' EXIT
	trap 'exit 143' TERM INT
	"$SRC/test/lab/up" --real-node
	say "real-node lab up in $((SECONDS - t))s ($LAB_DIR)"
	netns=$(<"$LAB_DIR/netns")
	rc=0
	E2E_REAL_NODE_INNER=1 E2E_IMAGE=$image "$SRC/test/lab/exec" bash "$0" || rc=$?
	t=$SECONDS
	"$SRC/test/lab/down" || rc=1
	trap - EXIT
	say "down in $((SECONDS - t))s"
	# What down must leave: none of the lab's processes, mounts, network
	# namespace, cgroups, fixed-path files.
	left=()
	[[ -e /run/netns/$netns ]] && left+=("netns $netns")
	grep -qF " $LAB_DIR/" /proc/self/mountinfo && left+=("mounts under $LAB_DIR")
	compgen -G "/sys/fs/cgroup/*/$netns" >/dev/null && left+=("cgroups /sys/fs/cgroup/*/$netns")
	[[ -e $LAB_DIR/real-node ]] && left+=("$LAB_DIR/real-node")
	# Every lab process (components, shims) names a path in LAB_DIR; the
	# containers' processes live in the cgroups checked above.
	for p in /proc/[0-9]*; do
		c=$(tr '\0' ' ' 2>/dev/null <"$p/cmdline") || continue
		[[ $c == *"$LAB_DIR/"* ]] && left+=("process ${p#/proc/}: ${c:0:120}")
	done
	if ((${#left[@]})); then
		say "FAIL: down left: ${left[*]}"
		rc=1
	fi
	exit "$rc"
fi

# ---- inside the lab's network namespace ------------------------------------------
source "$HERE/lib.sh"
source "$HERE/gpuop.sh" # gp_jq, gp_cond

REAL_NODE=${LAB_NODE:?not a real-node lab}
OPERANDS=(driver container-toolkit device-plugin gpu-feature-discovery dcgm-exporter operator-validator)
CHART=$SRC/deploy/helm/gpuop
READY_TIMEOUT=300 # s: helm --wait and pod readiness on a loaded machine
SETTLE_TIMEOUT=120

ref=$(<"$(dirname "$E2E_IMAGE")/gpuop-image.ref")
tag=${ref##*:}
staticbin=$(dirname "$E2E_IMAGE")/gpuop

log "import $ref into the node's containerd"
ctr images import "$E2E_IMAGE" >/dev/null
grep -qxF "$ref" <<<"$(ctr images list --quiet)" || fail "$ref not in containerd after import"

NS=$(unique gpuop-rn)
track_ns "$NS"
# On failure, first what the cluster looked like (rc: e2e_cleanup's).
dump_state() {
	kc -n "$NS" get pods,leases -o wide >&2 2>&1
	kc -n "$NS" get lease gpuop-leader -o yaml >&2 2>&1
	kc get gpupolicy -o yaml >&2 2>&1 | tail -n 60
	local p
	for p in $(kc -n "$NS" get pods -l app.kubernetes.io/component=controller -o name 2>/dev/null); do
		printf -- '--- last 30 lines of %s ---\n' "$p" >&2
		kc -n "$NS" logs "$p" --tail=30 >&2 2>&1
	done
}
on_exit '((rc == 0)) || dump_state'
on_exit 'helm uninstall gpuop -n "$NS" --wait --timeout 2m >/dev/null 2>&1 || true'

log "two kwok GPU nodes, tainted as GPU nodes often are (gpuop's pods do not tolerate it)"
gpu_labels=(--label nvidia.com/gpu.present=true)
for op in "${OPERANDS[@]}"; do
	gpu_labels+=(--label "nvidia.com/gpu.deploy.$op=true")
done
G1=$(unique rn-gpu)
G2=$(unique rn-gpu)
lab_node "$G1" "${gpu_labels[@]}" --taint nvidia.com/gpu=present:NoSchedule
lab_node "$G2" "${gpu_labels[@]}" --taint nvidia.com/gpu=present:NoSchedule

cat >"$E2E_TMP/values.yaml" <<EOF
image:
  tag: "$tag"
  # Nothing may be pulled: the image is the one just imported.
  pullPolicy: Never
# gpuop's own pods on the lab's real node only.
nodeSelector:
  gpuop.dev/lab-node: real
logLevel: debug
EOF

log "helm install --wait (chart $CHART, image $ref)"
t0=$(date +%s%N)
helm install gpuop "$CHART" -n "$NS" --create-namespace -f "$E2E_TMP/values.yaml" \
	--wait --timeout "${READY_TIMEOUT}s" >"$E2E_TMP/helm-install.out" ||
	{
		cat "$E2E_TMP/helm-install.out" >&2
		kc -n "$NS" get pods -o wide >&2
		kc -n "$NS" describe pods >&2
		fail "helm install failed"
	}
install_ms=$((($(date +%s%N) - t0) / 1000000))

pods_json() { kc -n "$NS" get pods -l app.kubernetes.io/component=controller,app.kubernetes.io/name=gpuop -o json; }
ready_pods() {
	pods_json | jq -r '.items[] | select(.metadata.deletionTimestamp == null)
		| select(any(.status.conditions[]?; .type == "Ready" and .status == "True")) | .metadata.name'
}
P=$(pods_json)
assert_eq 2 "$(jq '.items | length' <<<"$P")" "gpuop pods after helm install"
for node in $(jq -r '.items[].spec.nodeName' <<<"$P"); do
	assert_eq "$REAL_NODE" "$node" "gpuop's pod runs on the real node"
done
assert_eq 2 "$(ready_pods | wc -l | tr -d ' ')" "gpuop pods Ready (readiness probe answered to the kubelet)"
# Ready came from the real kubelet (kwok never sees this node), after
# the probe: the pod's IP answers /readyz and /healthz here too.
for ip in $(jq -r '.items[].status.podIP' <<<"$P"); do
	[[ $ip == 10.250.0.* ]] || fail "pod IP $ip is not on the node's bridge"
	assert_eq 200 "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://$ip:8081/readyz")" "/readyz of $ip"
	assert_eq 200 "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://$ip:8081/healthz")" "/healthz of $ip"
done
ready_ms=$(jq -r '[.items[] | ((.status.conditions[] | select(.type == "Ready") | .lastTransitionTime | fromdate)
	- (.metadata.creationTimestamp | fromdate))] | max' <<<"$P")
log "helm install --wait returned after ${install_ms} ms; pods Ready ${ready_ms} s after creation"
for c in $(jq -r '.items[].status.containerStatuses[0].restartCount' <<<"$P"); do
	assert_eq 0 "$c" "restarts"
done

log "one replica holds the Lease"
lease_holder() { kc -n "$NS" get lease gpuop-leader -o jsonpath='{.spec.holderIdentity}' 2>/dev/null; }
wait_for "$SETTLE_TIMEOUT" bash -c "[ -n \"\$(kubectl --kubeconfig '$KUBECONFIG' -n $NS get lease gpuop-leader -o jsonpath='{.spec.holderIdentity}')\" ]"
holder=$(lease_holder)
LEADER=${holder%_*}
jq -e --arg p "$LEADER" 'any(.items[]; .metadata.name == $p)' <<<"$P" >/dev/null ||
	fail "Lease holder '$holder' is not one of the gpuop pods"
STANDBY=$(jq -r --arg p "$LEADER" '.items[] | select(.metadata.name != $p) | .metadata.name' <<<"$P")
log "leader $LEADER, standby $STANDBY"

log "in-cluster: the projected ServiceAccount token, https://10.96.0.1:443, the cluster CA verified"
spec=$(kc -n "$NS" get pod "$LEADER" -o json)
assert_eq gpuop "$(jq -r .spec.serviceAccountName <<<"$spec")" "serviceAccountName"
jq -e '.spec.volumes[] | select(.projected) | .projected.sources[] | select(.serviceAccountToken)' <<<"$spec" >/dev/null ||
	fail "no projected serviceAccountToken volume in the pod"
jq -e '[.spec.containers[0].args[] | test("insecure|kubeconfig")] | any | not' <<<"$spec" >/dev/null ||
	fail "gpuop's args name a kubeconfig or an insecure option"
kc -n "$NS" logs "$LEADER" >"$E2E_TMP/leader.log"
grep -q 'started: server https://10.96.0.1:443' "$E2E_TMP/leader.log" ||
	fail "gpuop did not start against https://10.96.0.1:443 in-cluster: $(head -5 "$E2E_TMP/leader.log")"
if grep -qi 'insecure' "$E2E_TMP/leader.log"; then
	fail "gpuop's log mentions insecure TLS: $(grep -i -m 2 insecure "$E2E_TMP/leader.log")"
fi
grep -q 'leading' "$E2E_TMP/leader.log" || fail "the leader's log does not say it leads"
LEADER_IP=$(jq -r .status.podIP <<<"$spec")
metrics() { curl -sf --max-time 5 "http://$1:8080/metrics"; }
m=$(metrics "$LEADER_IP")
ok=$(awk '/^gpuop_api_requests_total\{.*code="200"/ { s += $NF } END { print s + 0 }' <<<"$m")
bad=$(awk '/^gpuop_api_requests_total\{.*code="(0|401|403)"/ { s += $NF } END { print s + 0 }' <<<"$m")
((ok > 0)) || fail "no API request answered 200 (metrics: $(grep -m 10 gpuop_api_requests_total <<<"$m"))"
assert_eq 0 "$bad" "API requests refused or failed (codes 0, 401, 403)"
assert_eq 1 "$(awk '/^gpuop_leader_is_leader / { print $NF }' <<<"$m")" "leader's gpuop_leader_is_leader"

# The container's process as the host sees it: its pid from containerd.
container_pid() {
	local cid
	cid=$(kc -n "$NS" get pod "$1" -o jsonpath='{.status.containerStatuses[0].containerID}')
	cid=${cid#containerd://}
	ctr tasks list | awk -v id="$cid" '$1 == id { print $2 }'
}
PID=$(container_pid "$LEADER")
[[ $PID =~ ^[0-9]+$ ]] || fail "no containerd task for $LEADER's container"
# The token the process reads is the pod-bound projected one.
tokfile=/proc/$PID/root/var/run/secrets/kubernetes.io/serviceaccount/token
payload=$(cut -d. -f2 <"$tokfile" | tr '_-' '/+')
while ((${#payload} % 4)); do payload+='='; done
claims=$(base64 -d <<<"$payload")
assert_eq "$LEADER" "$(jq -r '."kubernetes.io".pod.name' <<<"$claims")" "the token is bound to the pod"
assert_eq "system:serviceaccount:$NS:gpuop" "$(jq -r .sub <<<"$claims")" "the token's subject"
cmp -s "/proc/$PID/root/var/run/secrets/kubernetes.io/serviceaccount/ca.crt" "$LAB_CA" ||
	fail "the pod's ca.crt is not the cluster CA"

log "security: uid 65532, no capabilities, no new privileges, read-only root filesystem"
st=/proc/$PID/status
assert_eq "65532 65532 65532 65532" "$(awk '/^Uid:/ { print $2, $3, $4, $5 }' "$st")" "Uid"
assert_eq "65532 65532 65532 65532" "$(awk '/^Gid:/ { print $2, $3, $4, $5 }' "$st")" "Gid"
for cap in CapInh CapPrm CapEff CapBnd CapAmb; do
	assert_eq 0000000000000000 "$(awk -v c="$cap:" '$1 == c { print $2 }' "$st")" "$cap"
done
assert_eq 1 "$(awk '/^NoNewPrivs:/ { print $2 }' "$st")" "NoNewPrivs"
assert_eq gpuop "$(tr '\0' ' ' <"/proc/$PID/cmdline" | awk '{ print $1 }' | xargs basename)" "the process is gpuop"
# mountinfo: field 5 the mount point, field 6 its options.
rootopts=$(awk '$5 == "/" { print $6 }' "/proc/$PID/mountinfo")
[[ ,$rootopts, == *,ro,* ]] || fail "the container's / is mounted '$rootopts', not read-only"

log "the chart's GpuPolicy: six DaemonSets, their pods on the kwok GPU nodes only, status true"
POLICY=default
wait_for "$SETTLE_TIMEOUT" kc get gpupolicy "$POLICY"
# the driver is one DaemonSet per OS pool (SPEC 4b): both kwok GPU nodes
# are Ubuntu 24.04 (test/lab/node's NFD labels)
ds_of() { if [ "$1" = driver ]; then echo gpuop-driver-ubuntu24.04; else echo "gpuop-$1"; fi; }
for op in "${OPERANDS[@]}"; do
	wait_for "$SETTLE_TIMEOUT" kc -n "$NS" get ds "$(ds_of "$op")"
done
# and the MPS control daemon's, which runs on no node here (no nvidia.com/mps.capable)
assert_eq 7 "$(kc -n "$NS" get ds -o name | wc -l | tr -d ' ')" "DaemonSets"
status_ready() {
	kc get gpupolicy "$POLICY" -o json | jq -e --argjson n "$1" '.status as $s
		| $s.state == "ready" and $s.summary.gpuNodes == 2 and $s.summary.completeNodes == 2
		and $s.observedGeneration == .metadata.generation
		and ([$s.operands[] | select(.enabled != false and .name != "mps-control-daemon")] | length) == $n
		and all($s.operands[] | select(.enabled != false and .name != "mps-control-daemon"); .desiredNumberScheduled == 2 and .numberReady == 2)'
}
export -f status_ready kc
export POLICY NS
wait_for "$SETTLE_TIMEOUT" status_ready 6
operand_pods() {
	kc -n "$NS" get pods -o json | jq -r '.items[] | select(.metadata.labels["app.kubernetes.io/component"] != "controller")
		| "\(.metadata.labels["app.kubernetes.io/component"]) \(.spec.nodeName)"' | sort
}
wait_for "$SETTLE_TIMEOUT" bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' -n $NS get pods -o name | wc -l)\" -eq 14 ]"
while read -r _ node; do
	[[ $node == "$G1" || $node == "$G2" ]] || fail "an operand pod runs on '$node', not on a kwok GPU node"
done < <(operand_pods)
assert_eq 12 "$(operand_pods | wc -l | tr -d ' ')" "operand pods (six on each GPU node)"
assert_eq True "$(gp_cond "$POLICY" Ready status)" "Ready condition"

log "gpuop's RSS in the pod (leader, steady)"
rss_pod=$(awk '/^VmRSS:/ { print $2 }' "$st")
hwm_pod=$(awk '/^VmHWM:/ { print $2 }' "$st")

log "helm upgrade --set devicePlugin.enabled=false: that DaemonSet goes, status follows"
helm upgrade gpuop "$CHART" -n "$NS" --reuse-values --set devicePlugin.enabled=false \
	--wait --timeout "${READY_TIMEOUT}s" >/dev/null
wait_for "$SETTLE_TIMEOUT" bash -c "! kubectl --kubeconfig '$KUBECONFIG' -n $NS get ds gpuop-device-plugin >/dev/null 2>&1"
assert_eq 5 "$(kc -n "$NS" get ds -o name | wc -l | tr -d ' ')" "DaemonSets after the upgrade (the MPS daemon's gone too)"
wait_for "$SETTLE_TIMEOUT" status_ready 5
assert_eq false "$(gp_jq "$POLICY" '.spec.devicePlugin.enabled')" "the GpuPolicy's devicePlugin.enabled"
assert_eq 2 "$(gp_jq "$POLICY" '.status.summary.completeNodes')" "complete nodes without the device plugin"
wait_for "$SETTLE_TIMEOUT" bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' -n $NS get pods -l app.kubernetes.io/component=device-plugin -o name | wc -l)\" -eq 0 ]"

log "kubectl logs shows gpuop's log"
kc -n "$NS" logs "$LEADER" >"$E2E_TMP/leader.log"
grep -q 'gpuop' "$E2E_TMP/leader.log" || fail "kubectl logs shows no gpuop log"

log "kubectl delete pod $LEADER: graceful exit 0, another replica takes the Lease, a replacement becomes Ready"
# One line per watch event: its type and the container's exit code once
# it has terminated (the kubelet writes that before the pod goes).
spawn watch-leader "$LAB_DIR/bin/kubectl" --kubeconfig "$KUBECONFIG" -n "$NS" get pod "$LEADER" \
	--watch --output-watch-events \
	-o jsonpath='{.type} {.object.status.containerStatuses[0].state.terminated.exitCode}{"\n"}'
wait_for 30 grep -q ADDED "$E2E_TMP/watch-leader.log"
t0=$(date +%s%N)
kc -n "$NS" delete pod "$LEADER" --wait=true --timeout=120s >/dev/null
delete_ms=$((($(date +%s%N) - t0) / 1000000))
wait_for 60 grep -q '^DELETED' "$E2E_TMP/watch-leader.log"
stop_spawned watch-leader
codes=$(awk 'NF == 2 { print $2 }' "$E2E_TMP/watch-leader.log" | sort -u | tr '\n' ' ')
assert_eq "0 " "$codes" "exit code of the deleted leader's container"
# The standby, or the replacement if it asks first after the leader let
# the Lease go on its way out.
new_holder() {
	local h
	h=$(lease_holder)
	h=${h%_*}
	[[ -n $h && $h != "$LEADER" ]] && printf '%s\n' "$h"
}
export -f new_holder lease_holder
export LEADER
wait_for "$SETTLE_TIMEOUT" new_holder
takeover_ms=$((($(date +%s%N) - t0) / 1000000))
NEW_LEADER=$(new_holder)
wait_for "$READY_TIMEOUT" bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' -n $NS get pods -l app.kubernetes.io/component=controller -o json | jq '[.items[] | select(.metadata.deletionTimestamp == null) | select(any(.status.conditions[]?; .type == \"Ready\" and .status == \"True\"))] | length')\" -eq 2 ]"
for node in $(pods_json | jq -r '.items[].spec.nodeName'); do
	assert_eq "$REAL_NODE" "$node" "the replacement runs on the real node"
done
grep -qxF "$LEADER" <<<"$(ready_pods)" && fail "the deleted pod $LEADER is back"
grep -qxF "$NEW_LEADER" <<<"$(ready_pods)" || fail "the new Lease holder $NEW_LEADER is not a Ready gpuop pod"
log "delete took ${delete_ms} ms; $NEW_LEADER ($([[ $NEW_LEADER == "$STANDBY" ]] && echo standby || echo replacement)) held the Lease ${takeover_ms} ms after the delete began"
# the new leader keeps the policy true
wait_for "$SETTLE_TIMEOUT" status_ready 5

log "a driver upgrade held on a node (a job it waits for), then helm uninstall: the node let go"
make_ns JOBS rn-jobs
for n in "$G1" "$G2"; do
	kc -n "$JOBS" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: job-$n, labels: {gpuop-e2e: job}}
spec:
  nodeName: $n
  tolerations: [{operator: Exists}]
  terminationGracePeriodSeconds: 1
  containers: [{name: job, image: registry.example/job:1}]
EOF
done
helm upgrade gpuop "$CHART" -n "$NS" --reuse-values --set driver.version=580.95.05 \
	--set driver.upgradePolicy.waitForCompletion.podSelector=gpuop-e2e=job \
	--wait --timeout "${READY_TIMEOUT}s" >/dev/null
# held: cordoned by gpuop, waiting for its job, the driver manager told
# gpuop owns the node's evictions
held_node() {
	kubectl --kubeconfig "$KUBECONFIG" get nodes "$G1" "$G2" -o json | jq -e '[.items[]
		| select(.metadata.labels["nvidia.com/gpu-driver-upgrade-state"] == "wait-for-jobs-required")
		| select(.spec.unschedulable == true)
		| select(.metadata.annotations["gpuop.dev/driver-upgrade-cordoned"] == "true")
		| select(.metadata.annotations["nvidia.com/gpu-driver-upgrade-enabled"] == "true")] | length == 1' >/dev/null
}
export -f held_node
export G1 G2
wait_for "$READY_TIMEOUT" held_node

log "helm uninstall: everything goes but the CRD"
helm uninstall gpuop -n "$NS" --wait --timeout "${READY_TIMEOUT}s" >/dev/null
# the release hook deleted the GpuPolicy first and waited for gpuop: no
# node keeps a cordon, label or annotation of the upgrade
left=$(kc get nodes "$G1" "$G2" -o json | jq -r '.items[] | .metadata.name as $n
	| (select(.spec.unschedulable == true) | "\($n) cordoned"),
	  (.metadata.labels // {} | to_entries[]
		| select(.key == "nvidia.com/gpu-driver-upgrade-state" or (.value | test("paused")))
		| "\($n) label \(.key)=\(.value)"),
	  (.metadata.annotations // {} | to_entries[]
		| select(.key | test("^gpuop.dev/driver-upgrade-|^nvidia.com/gpu-driver-upgrade-enabled$"))
		| "\($n) annotation \(.key)")')
[[ -z $left ]] || fail "helm uninstall left the upgrade on the nodes: $left"
gone() {
	[[ -z "$(kc -n "$NS" get deployments,replicasets,daemonsets,pods,services,serviceaccounts,roles,rolebindings,poddisruptionbudgets,leases \
		-l app.kubernetes.io/instance=gpuop -o name 2>/dev/null)" ]] &&
		[[ -z "$(kc -n "$NS" get daemonsets,pods -o name 2>/dev/null)" ]] &&
		[[ -z "$(kc get clusterroles,clusterrolebindings,gpupolicies -l app.kubernetes.io/instance=gpuop -o name 2>/dev/null)" ]] &&
		! kc -n "$NS" get serviceaccount gpuop >/dev/null 2>&1 &&
		! kc get gpupolicy "$POLICY" >/dev/null 2>&1
}
export -f gone
wait_for "$SETTLE_TIMEOUT" gone
assert_eq "" "$(helm list -n "$NS" -q)" "helm releases left"
kc get crd gpupolicies.gpuop.dev >/dev/null || fail "helm uninstall removed the CRD (helm keeps crds/)"

log "gpuop's RSS out of the cluster: the same static binary, same policy and nodes"
helm template gpuop "$CHART" -n "$NS" -f "$E2E_TMP/values.yaml" --set devicePlugin.enabled=false \
	--show-only templates/gpupolicy.yaml >"$E2E_TMP/policy.yaml"
kc apply -f "$E2E_TMP/policy.yaml" >/dev/null
# The operands' ServiceAccounts went with the chart (the validator's, the
# toolkit's and the driver's too: without them their pods cannot be created).
for sa in gpuop-operand gpuop-operator-validator gpuop-container-toolkit gpuop-driver; do
	kc -n "$NS" create serviceaccount "$sa" >/dev/null
done
on_exit 'kc delete gpupolicy default --ignore-not-found --wait=true >/dev/null 2>&1 || true'
spawn gpuop-outside "$staticbin" run --kubeconfig "$KUBECONFIG" --namespace "$NS" \
	--leader-elect=false --metrics-addr=127.0.0.1:0 --health-addr=127.0.0.1:0
wait_for "$SETTLE_TIMEOUT" status_ready 5
outpid=$(awk '$1 == "gpuop-outside" { print $2 }' "$E2E_TMP/.spawned")
rss_out=$(awk '/^VmRSS:/ { print $2 }' "/proc/$outpid/status")
hwm_out=$(awk '/^VmHWM:/ { print $2 }' "/proc/$outpid/status")
stop_spawned gpuop-outside
kc delete gpupolicy default --wait=true >/dev/null

log "RESULT helm install -> Ready: ${install_ms} ms (helm --wait), ${ready_ms} s pod creation -> Ready"
log "RESULT gpuop VmRSS in the pod ${rss_pod} kB (peak ${hwm_pod}), out of the cluster ${rss_out} kB (peak ${hwm_out}); 2 GPU nodes, 5 operands"
log "RESULT kubectl delete pod ${delete_ms} ms, Lease taken over after ${takeover_ms} ms"
