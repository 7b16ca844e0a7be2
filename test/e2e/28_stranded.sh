#!/usr/bin/env bash
# End-to-end: who is stranded (issue 15 §2), with the real scheduler.
# gpuop runs as its own ServiceAccount (deploy/10-rbac.yaml: the pod LIST
# must be allowed). A kwok node advertises 8 nvidia.com/gpu and runs the
# device plugin without the toolkit (DevicePluginWithoutToolkit):
#   -> a bare Pod requesting nvidia.com/gpu: 1 is bound there by
#      kube-scheduler (asserted);
#   -> gpuop lists the pods of that node (a field-selector LIST, at most
#      once a minute per node) and status.nodes[].strandedPods names it,
#      the finding's message names it, a StrandedGpuPods Event is posted,
#      and gpuop_stranded_gpu_pods is 1;
#   -> the toolkit labelled: the finding and strandedPods clear, the
#      metric goes to 0.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
on_exit 'gpuop_kill; gpuop_uninstall'
G=$(unique stranded)

gpuop_install
SADIR=$(lab_sa_dir "$GPUOP_NS" gpuop)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
MP=$(free_port)
GPUOP_LOG=$E2E_TMP/gpuop.log
log "gpuop log: $GPUOP_LOG (as ServiceAccount $GPUOP_NS/gpuop)"
env -u KUBECONFIG KUBERNETES_SERVICE_HOST="$LAB_API_HOST" KUBERNETES_SERVICE_PORT="$LAB_API_PORT" \
	GPUOP_SA_DIR="$SADIR" "$GPUOP_BIN" run --log-level debug \
	--metrics-addr "127.0.0.1:$MP" --health-addr 0 >>"$GPUOP_LOG" 2>&1 &
GPUOP_PID=$!
metric() { curl -sf --max-time 5 "http://127.0.0.1:$MP/metrics" | awk -v m="$1" '$1 == m {print $2}'; }

POLICY=$(unique stranded-policy)
chain_policy "$POLICY"

node_json() { kc get gpupolicy "$POLICY" -o json | jq -c --arg n "$1" '.status.nodes[]? | select(.name == $n)'; }
reasons_on() { node_json "$1" | jq -r '[.findings[] | "\(.operand)/\(.reason)"] | sort | join(" ")'; }
has() { grep -qw "$2" <<<"$(reasons_on "$1")"; }
stranded_on() { node_json "$1" | jq -c '.strandedPods // empty'; }
export -f node_json reasons_on has stranded_on kc
export POLICY

log "$G: 8 GPUs advertised, device plugin labelled by hand, no toolkit label"
lab_node "$G" --label nvidia.com/gpu.present=true --label nvidia.com/gpu.deploy.driver=true \
	--label nvidia.com/gpu.deploy.device-plugin=true --label "e2e.gpuop.dev/stranded=$G" --capacity nvidia.com/gpu=8
wait_for 90 has "$G" device-plugin/DevicePluginWithoutToolkit

log "a GPU pod, bound by the real scheduler to $G"
make_ns NS
kc -n "$NS" apply -f - >/dev/null <<EOP
apiVersion: v1
kind: Pod
metadata: {name: cuda-job}
spec:
  nodeSelector: {e2e.gpuop.dev/stranded: $G}
  tolerations: [{operator: Exists}]
  containers:
  - name: c
    image: registry.k8s.io/pause:3.9
    resources: {limits: {nvidia.com/gpu: 1}}
EOP
wait_for 60 bash -c "[ -n \"\$(kc -n $NS get pod cuda-job -o jsonpath='{.spec.nodeName}')\" ]"
assert_eq "$G" "$(kc -n "$NS" get pod cuda-job -o jsonpath='{.spec.nodeName}')" "the GPU pod's node"
assert_eq default-scheduler "$(kc -n "$NS" get pod cuda-job -o jsonpath='{.spec.schedulerName}')" "who bound it"

log "gpuop names it as stranded (a node is re-listed at most once a minute)"
wait_for 150 bash -c "[ \"\$(stranded_on $G)\" = '{\"count\":1,\"pods\":[\"$NS/cuda-job\"]}' ]"
msg=$(node_json "$G" | jq -r '.findings[] | select(.reason == "DevicePluginWithoutToolkit") | .message')
case "$msg" in *"GPU pods bound here now (1): $NS/cuda-job."*) ;; *) fail "the message does not name the stranded pod: $msg" ;; esac
wait_for 30 bash -c "[ \"\$(curl -sf --max-time 5 http://127.0.0.1:$MP/metrics | awk '\$1 == \"gpuop_stranded_gpu_pods\" {print \$2}')\" = 1 ]"
wait_for 60 bash -c "kc -n default get events --field-selector involvedObject.name=$POLICY,reason=StrandedGpuPods -o json | jq -e --arg p '$NS/cuda-job' '[.items[] | select(.message | contains(\$p))] | length >= 1' >/dev/null"
lists=$(metric gpuop_stranded_pod_lists_total)
log "pod LISTs sent so far: $lists"
[ "${lists:-0}" -ge 1 ] || fail "gpuop_stranded_pod_lists_total is $lists"

log "the toolkit labelled: the finding and the stranded list clear"
kc label node "$G" nvidia.com/gpu.deploy.container-toolkit=true >/dev/null
wait_for 90 bash -c "! has $G device-plugin/DevicePluginWithoutToolkit"
assert_eq "" "$(stranded_on "$G")" "strandedPods of $G"
wait_for 30 bash -c "[ \"\$(curl -sf --max-time 5 http://127.0.0.1:$MP/metrics | awk '\$1 == \"gpuop_stranded_gpu_pods\" {print \$2}')\" = 0 ]"
wait_for 60 bash -c "[[ -n \$(kc -n default get events --field-selector involvedObject.name=$POLICY,reason=StrandedGpuPodsCleared -o name) ]]"

kc -n "$NS" delete pod cuda-job --wait=false >/dev/null
kc delete gpupolicy "$POLICY" --wait=true >/dev/null
gpuop_stop
log "ok"
