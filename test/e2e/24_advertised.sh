#!/usr/bin/env bash
# End-to-end: what the scheduler sees (issue 15 §1), with the real
# scheduler. A kwok node that advertises nvidia.com/gpu (test/lab/node
# --capacity) and runs the device plugin without the toolkit:
#   -> DevicePluginWithoutToolkit; a pod requesting nvidia.com/gpu: 1 is
#      bound there by kube-scheduler; status shows gpus {8, 8} and
#      summary.advertisedGpus 8;
#   -> the device-plugin label goes, its pod goes, the GPUs stay advertised
#      -> GpusAdvertisedWithoutToolkit; the toolkit label set -> it clears;
#   -> a device plugin Ready past spec.findings.advertiseGracePeriodSeconds
#      (here 10 s) on a node advertising nothing -> DevicePluginAdvertisesNothing,
#      which clears once the node's status advertises GPUs.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
on_exit 'gpuop_kill; gpuop_uninstall'
G=$(unique gpus)
E=$(unique empty)

gpuop_install
gpuop_start --metrics-addr 0 --health-addr 0
POLICY=$(unique adv-policy)
chain_policy "$POLICY" "findings: {advertiseGracePeriodSeconds: 10}"

reasons_on() {
	kc get gpupolicy "$POLICY" -o json |
		jq -r --arg n "$1" '[.status.nodes[]? | select(.name == $n) | .findings[] | "\(.operand)/\(.reason)"] | sort | join(" ")'
}
has() { grep -qw "$2" <<<"$(reasons_on "$1")"; }
export -f reasons_on has kc
export POLICY

log "$G: 8 GPUs advertised, device plugin labelled by hand, no toolkit label"
lab_node "$G" --label nvidia.com/gpu.present=true --label nvidia.com/gpu.deploy.driver=true \
	--label nvidia.com/gpu.deploy.device-plugin=true --capacity nvidia.com/gpu=8
wait_for 90 has "$G" device-plugin/DevicePluginWithoutToolkit
gpus=$(kc get gpupolicy "$POLICY" -o json | jq -cS --arg n "$G" '.status.nodes[] | select(.name == $n) | .gpus')
assert_eq '{"allocatable":8,"capacity":8}' "$gpus" "status.nodes[].gpus of $G"
assert_eq 8 "$(kc get gpupolicy "$POLICY" -o jsonpath='{.status.summary.advertisedGpus}')" "summary.advertisedGpus"

log "the real scheduler hands one of them to a GPU pod"
make_ns NS
kc -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: cuda-job}
spec:
  containers:
  - name: c
    image: registry.k8s.io/pause:3.9
    resources: {limits: {nvidia.com/gpu: 1}}
EOF
wait_for 60 bash -c "[ -n \"\$(kc -n $NS get pod cuda-job -o jsonpath='{.spec.nodeName}')\" ]"
assert_eq "$G" "$(kc -n "$NS" get pod cuda-job -o jsonpath='{.spec.nodeName}')" "the GPU pod's node"

log "the device-plugin label goes: its pod goes, the GPUs stay advertised"
kc label node "$G" nvidia.com/gpu.deploy.device-plugin- >/dev/null
wait_for 60 bash -c "[ -z \"\$(kc -n $GPUOP_NS get pods -l app.kubernetes.io/component=device-plugin --field-selector spec.nodeName=$G -o name)\" ]"
wait_for 60 has "$G" device-plugin/GpusAdvertisedWithoutToolkit
reasons=$(reasons_on "$G")
case " $reasons " in *DevicePluginWithoutToolkit*) fail "DevicePluginWithoutToolkit without a device plugin: $reasons" ;; esac
msg=$(kc get gpupolicy "$POLICY" -o json | jq -r --arg n "$G" '.status.nodes[] | select(.name == $n) | .findings[] | select(.reason == "GpusAdvertisedWithoutToolkit") | .message')
case "$msg" in *"advertises 8 nvidia.com/gpu"*container-toolkit*) ;; *) fail "the message does not say what is advertised without what: $msg" ;; esac
assert_eq OrderingViolation "$(kc get gpupolicy "$POLICY" -o json | jq -r --arg n "$G" '.status.nodes[] | select(.name == $n) | .findings[] | select(.reason == "GpusAdvertisedWithoutToolkit") | .kind')" "its kind"
assert_eq 1 "$(kc get gpupolicy "$POLICY" -o jsonpath='{.status.summary.violations}')" "violations"
CHECK_RC=0
out=$("$GPUOP_BIN" check --kubeconfig "$KUBECONFIG" --namespace "$GPUOP_NS" -o json) || CHECK_RC=$?
assert_eq 1 "$CHECK_RC" "gpuop check exit code"
jq -e --arg n "$G" '[.nodes[] | select(.name == $n) | .findings[] | select(.reason == "GpusAdvertisedWithoutToolkit")] | length == 1' <<<"$out" >/dev/null ||
	fail "gpuop check lacks GpusAdvertisedWithoutToolkit on $G"

log "the toolkit labelled: the violation clears"
kc label node "$G" nvidia.com/gpu.deploy.container-toolkit=true >/dev/null
wait_for 60 bash -c "! has $G device-plugin/GpusAdvertisedWithoutToolkit"

log "$E: a device plugin Ready for 10 s while the node advertises nothing"
lab_node "$E" --label nvidia.com/gpu.present=true --label nvidia.com/gpu.deploy.driver=true \
	--label nvidia.com/gpu.deploy.container-toolkit=true --label nvidia.com/gpu.deploy.device-plugin=true
wait_for 90 has "$E" device-plugin/DevicePluginAdvertisesNothing
assert_eq "device-plugin/DevicePluginAdvertisesNothing" "$(reasons_on "$E")" "findings on $E"
log "the node's status advertises 4 GPUs: it clears"
kc patch node "$E" --subresource=status --type merge \
	-p '{"status":{"capacity":{"nvidia.com/gpu":"4"},"allocatable":{"nvidia.com/gpu":"4"}}}' >/dev/null
wait_for 60 bash -c "[ -z \"\$(reasons_on $E)\" ]"
assert_eq 12 "$(kc get gpupolicy "$POLICY" -o jsonpath='{.status.summary.advertisedGpus}')" "summary.advertisedGpus"

kc -n "$NS" delete pod cuda-job --wait=false >/dev/null
kc delete gpupolicy "$POLICY" --wait=true >/dev/null
gpuop_stop
log "ok"
