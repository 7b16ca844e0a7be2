#!/usr/bin/env bash
# End-to-end: monitoring as production clusters run it (issue 39 item 4).
# On the lab (kwok GPU nodes, no Prometheus Operator at first):
#   - with spec.dcgm.enabled the host engine's DaemonSet gpuop-dcgm and its
#     Service (internalTrafficPolicy Local, port 5555) appear, and the
#     exporter's DaemonSet reads DCGM_REMOTE_HOSTENGINE_INFO=gpuop-dcgm:5555
#     and mounts the metrics ConfigMap spec.dcgmExporter.config.name names
#     (DCGM_EXPORTER_COLLECTORS at its file);
#   - a GPU node where the exporter runs and the host engine's pod does
#     not (CrashLoopBackOff) is an OrderingViolation of dcgm-exporter
#     naming dcgm in the status; a node where both run has no finding;
#   - serviceMonitor enabled without the ServiceMonitor CRD: the
#     ServiceMonitor condition is False (CRDNotInstalled), Reconciled stays
#     True; once a minimal ServiceMonitor CRD is installed the
#     ServiceMonitor gpuop-dcgm-exporter is applied (the condition True);
#     switched off, it is deleted;
#   - dcgm switched off: its DaemonSet and Service go, and the exporter no
#     longer reads a remote host engine.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
SM_CRD=servicemonitors.monitoring.coreos.com
on_exit 'gpuop_kill; gpuop_uninstall; kc delete crd '"$SM_CRD"' --ignore-not-found >/dev/null 2>&1 || true'

L=nvidia.com/gpu.deploy
OK_NODE=$(unique gpu-dcgm-ok)
BAD_NODE=$(unique gpu-dcgm-bad)
kc delete crd "$SM_CRD" --ignore-not-found >/dev/null 2>&1 || true

gpuop_install
gpuop_start
# the chain below the exporter host-provided (disabled), so the kwok nodes
# need only the two deploy labels
kc apply -f - >/dev/null <<YAML
apiVersion: gpuop.dev/v1alpha1
kind: GpuPolicy
metadata: {name: dcgm}
spec:
  driver: {enabled: false}
  toolkit: {enabled: false}
  devicePlugin: {enabled: false}
  gfd: {enabled: false}
  validator: {enabled: false}
  findings: {eventGracePeriodSeconds: 0}
  dcgm: {enabled: true, hostPort: 5555}
  dcgmExporter:
    config: {name: custom-dcgm-metrics}
    serviceMonitor: {enabled: true, interval: 15s, additionalLabels: {release: prom}}
YAML

# ds_jq DS FILTER: jq -e FILTER on DaemonSet DS in gpuop's namespace
ds_jq() { kc -n "$GPUOP_NS" get daemonset "$1" -o json | jq -e "$2" >/dev/null; }
exporter_env() {
	kc -n "$GPUOP_NS" get daemonset gpuop-dcgm-exporter -o json |
		jq -r --arg n "$1" '[.spec.template.spec.containers[0].env[] | select(.name == $n)][0].value // ""'
}
# node_findings NODE: "operand kind reason message" lines of NODE's findings in the status
node_findings() {
	kc get gpupolicy dcgm -o json | jq -r --arg n "$1" '.status.nodes[]? | select(.name == $n) |
		.findings[] | "\(.operand) \(.kind) \(.reason) \(.message)"'
}
remote_is() { [ "$(exporter_env DCGM_REMOTE_HOSTENGINE_INFO)" = "$1" ]; }
cond_is() { [ "$(gp_cond dcgm "$1" "$2")" = "$3" ]; }

log "the host engine, its Service, the exporter pointed at it with the metrics ConfigMap"
wait_for 60 ds_jq gpuop-dcgm '.spec.template.spec.nodeSelector["nvidia.com/gpu.deploy.dcgm"] == "true"'
ds_jq gpuop-dcgm '.spec.template.spec.containers[0].ports[0].containerPort == 5555' ||
	fail "the host engine's container does not listen on 5555"
wait_for 60 kc -n "$GPUOP_NS" get service gpuop-dcgm
svc=$(kc -n "$GPUOP_NS" get service gpuop-dcgm -o json)
assert_eq Local "$(jq -r .spec.internalTrafficPolicy <<<"$svc")" "the host engine Service's internalTrafficPolicy"
assert_eq 5555 "$(jq -r '.spec.ports[0].port' <<<"$svc")" "the host engine Service's port"
wait_for 60 remote_is gpuop-dcgm:5555
assert_eq /etc/dcgm-exporter/dcgm-metrics.csv "$(exporter_env DCGM_EXPORTER_COLLECTORS)" "DCGM_EXPORTER_COLLECTORS"
ds_jq gpuop-dcgm-exporter '.spec.template.spec.volumes[] | select(.name == "metrics-config") |
	.configMap.name == "custom-dcgm-metrics"' || fail "the exporter does not mount custom-dcgm-metrics"

log "no ServiceMonitor CRD: a condition says so, the rest is reconciled"
wait_for 60 cond_is ServiceMonitor reason CRDNotInstalled
assert_eq False "$(gp_cond dcgm ServiceMonitor status)" "ServiceMonitor condition without the CRD"
assert_eq True "$(gp_cond dcgm Reconciled status)" "Reconciled without the ServiceMonitor CRD"
grep -qF "$SM_CRD" <<<"$(gp_cond dcgm ServiceMonitor message)" || fail "the condition does not name $SM_CRD"

log "an exporter with its host engine running: no finding; without: OrderingViolation naming dcgm"
lab_node "$OK_NODE" --label nvidia.com/gpu.present=true --label "$L.dcgm=true" --label "$L.dcgm-exporter=true"
lab_node "$BAD_NODE" --label nvidia.com/gpu.present=true --label "$L.dcgm=true" --label "$L.dcgm-exporter=true"
# ready_on NODE OPERAND: Running and Ready pods of OPERAND on NODE
ready_on() {
	kc -n "$GPUOP_NS" get pods -l "app.kubernetes.io/component=$2" --field-selector "spec.nodeName=$1" -o json |
		jq '[.items[] | select(.status.phase == "Running") | select(any(.status.conditions[]?; .type == "Ready" and .status == "True"))] | length'
}
both_ready() { [ "$(ready_on "$1" dcgm)" = 1 ] && [ "$(ready_on "$1" dcgm-exporter)" = 1 ]; }
wait_for 120 both_ready "$OK_NODE"
wait_for 120 both_ready "$BAD_NODE"
"$GPUOP_SRC/test/lab/pod-state" "$BAD_NODE" "$GPUOP_NS" gpuop-dcgm crashloop
violation() { grep -q '^dcgm-exporter OrderingViolation PrerequisiteNotRunning .*prerequisite dcgm' <<<"$(node_findings "$BAD_NODE")"; }
wait_for 120 violation
grep -q '^dcgm Missing ' <<<"$(node_findings "$BAD_NODE")" || fail "no Missing finding for the host engine on $BAD_NODE: $(node_findings "$BAD_NODE")"
assert_eq "" "$(node_findings "$OK_NODE")" "findings on $OK_NODE, where both run"
assert_eq False "$(gp_cond dcgm OrderingValid status)" "OrderingValid with an exporter without its host engine"
"$GPUOP_SRC/test/lab/pod-state" "$BAD_NODE" "$GPUOP_NS" gpuop-dcgm running
wait_for 120 cond_is OrderingValid status True

log "a minimal ServiceMonitor CRD installed: the ServiceMonitor is applied"
kc apply -f - >/dev/null <<YAML
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: $SM_CRD}
spec:
  group: monitoring.coreos.com
  names: {kind: ServiceMonitor, listKind: ServiceMonitorList, plural: servicemonitors, singular: servicemonitor}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
YAML
KUBECONFIG=$LAB_DIR/kubeconfig PATH=$LAB_DIR/bin:$PATH "$GPUOP_SRC/test/lab/wait-crd" "$SM_CRD"
# gpuop tries again every 30 s (CTL_CRD_RECHECK_MS) while nothing else
# makes it apply: generous on a loaded machine
wait_for 180 kc -n "$GPUOP_NS" get servicemonitor gpuop-dcgm-exporter
sm=$(kc -n "$GPUOP_NS" get servicemonitor gpuop-dcgm-exporter -o json)
assert_eq gpu-metrics "$(jq -r '.spec.endpoints[0].port' <<<"$sm")" "the ServiceMonitor's port"
assert_eq 15s "$(jq -r '.spec.endpoints[0].interval' <<<"$sm")" "the ServiceMonitor's interval"
assert_eq prom "$(jq -r '.metadata.labels.release' <<<"$sm")" "the ServiceMonitor's additional label"
assert_eq dcgm-exporter "$(jq -r '.spec.selector.matchLabels["app.kubernetes.io/name"]' <<<"$sm")" "the ServiceMonitor's selector"
wait_for 60 cond_is ServiceMonitor status True

log "serviceMonitor off: deleted; dcgm off: its DaemonSet and Service go, the exporter reads its own"
kc patch gpupolicy dcgm --type=merge -p '{"spec": {"dcgmExporter": {"serviceMonitor": {"enabled": false}}, "dcgm": {"enabled": false}}}' >/dev/null
sm_gone() { ! kc -n "$GPUOP_NS" get servicemonitor gpuop-dcgm-exporter >/dev/null 2>&1; }
dcgm_gone() {
	! kc -n "$GPUOP_NS" get daemonset gpuop-dcgm >/dev/null 2>&1 &&
		! kc -n "$GPUOP_NS" get service gpuop-dcgm >/dev/null 2>&1
}
wait_for 60 sm_gone
wait_for 60 dcgm_gone
wait_for 60 remote_is ""
# the status is written after the deletions: wait for it, the machine
# may be loaded
wait_for 60 cond_is ServiceMonitor status ""
wait_for 60 cond_is Reconciled status True

gpuop_uninstall
gpuop_stop
log "ok"
