#!/usr/bin/env bash
# End-to-end: the per-node sharing findings (issue 41). On the lab (kwok GPU
# nodes: their device plugin pods run no containers, so what gpuop says of
# the nodes' labels and the ConfigMap is what is checked):
#   - gpuop's own account may get, list and watch ConfigMaps in its
#     namespace and not elsewhere (the chart's Role: it watches the sharing
#     ConfigMap by name);
#   - a ConfigMap with the keys default and ts-4 and spec.devicePlugin.config
#     naming it: a node labelled nvidia.com/device-plugin.config=missing has
#     SharingConfigKeyMissing on its device plugin, the message naming the
#     value and the keys there are (default, ren, ts-4), in the status and in `gpuop check`; a
#     node labelled ts-4 has none;
#   - GFD's nvidia.com/gpu.sharing-strategy and gpu.replicas on a node: the
#     status's sharing and `gpuop check` (text and JSON) show it;
#   - GFD's nvidia.com/gpu.count=8 with replicas 4 on a node whose
#     allocatable is 8: SharedAllocatableDiffers once its device plugin has
#     been Ready for the advertise grace, naming 32 and since when; cleared
#     when allocatable is 32;
#   - renameByDefault (key ren): a node advertising nvidia.com/gpu.shared
#     32 (8 x 4) has no finding past the advertise grace; the same 32 as
#     nvidia.com/gpu is SharedAllocatableDiffers naming nvidia.com/gpu.shared;
#   - the key added to the ConfigMap: the finding clears at once (the
#     ConfigMap is watched: gpuop's log has its watch event, and the
#     finding is gone well within the 30 s the old re-read took);
#   - the ConfigMap deleted: the labelled nodes' findings say it does not
#     exist.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
CM=sharing-findings
on_exit 'gpuop_kill; gpuop_uninstall; kc -n "$GPUOP_NS" delete configmap '"$CM"' --ignore-not-found >/dev/null 2>&1 || true'

L=nvidia.com/gpu.deploy
MISSING=$(unique gpu-share-missing)
REN=$(unique gpu-share-ren)
TS4=$(unique gpu-share-ts4)
POLICY=sharing-findings

gpuop_install
log "gpuop's account watches ConfigMaps in $GPUOP_NS only"
me=system:serviceaccount:$GPUOP_NS:gpuop
for verb in get list watch; do
	assert_eq yes "$(kc auth can-i "$verb" configmaps -n "$GPUOP_NS" --as="$me" 2>/dev/null || true)" \
		"gpuop may $verb configmaps in $GPUOP_NS"
	assert_eq no "$(kc auth can-i "$verb" configmaps -n default --as="$me" 2>/dev/null || true)" \
		"gpuop may $verb configmaps in default"
done
assert_eq no "$(kc auth can-i update configmaps/$CM -n "$GPUOP_NS" --as="$me" 2>/dev/null || true)" \
	"gpuop may update the sharing ConfigMap"

gpuop_start
cm_apply() { # KEYS...: the ConfigMap with those keys (ts-4 time-slicing, others plain)
	local k data=""
	for k in "$@"; do
		if [ "$k" = ren ]; then
			data+="  ren: |-
    version: v1
    sharing:
      timeSlicing:
        renameByDefault: true
        resources:
          - name: nvidia.com/gpu
            replicas: 4
"
		elif [ "$k" = ts-4 ]; then
			data+="  ts-4: |-
    version: v1
    sharing:
      timeSlicing:
        resources:
          - name: nvidia.com/gpu
            replicas: 4
"
		else
			data+="  $k: |-
    version: v1
"
		fi
	done
	kc -n "$GPUOP_NS" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: ConfigMap
metadata: {name: $CM}
data:
$data
YAML
}
cm_apply default ts-4 ren
kc apply -f - >/dev/null <<YAML
apiVersion: gpuop.dev/v1alpha1
kind: GpuPolicy
metadata: {name: $POLICY}
spec:
  driver: {enabled: false}
  toolkit: {enabled: false}
  validator: {enabled: false}
  dcgmExporter: {enabled: false}
  findings: {eventGracePeriodSeconds: 0, advertiseGracePeriodSeconds: 15}
  devicePlugin:
    config: {name: $CM, default: default}
YAML

lab_node "$MISSING" --label nvidia.com/gpu.present=true --label "$L.device-plugin=true" \
	--label "$L.gpu-feature-discovery=true" --label nvidia.com/device-plugin.config=missing --capacity nvidia.com/gpu=8
lab_node "$TS4" --label nvidia.com/gpu.present=true --label "$L.device-plugin=true" \
	--label "$L.gpu-feature-discovery=true" --label nvidia.com/device-plugin.config=ts-4 --capacity nvidia.com/gpu=8

finding_of() { # NODE OPERAND: "kind/reason message" of its first finding, or nothing
	kc get gpupolicy "$POLICY" -o json | jq -r --arg n "$1" --arg o "$2" \
		'[.status.nodes[]? | select(.name == $n) | .findings[] | select(.operand == $o)][0] //
		 empty | "\(.kind)/\(.reason) \(.message)"'
}
said() { grep -qF -- "$3" <<<"$(finding_of "$1" "$2")"; }
no_finding() { [ -z "$(finding_of "$1" "$2")" ]; }
running_on() {
	[ "$(kc -n "$GPUOP_NS" get pods -l "app.kubernetes.io/component=$2" --field-selector "spec.nodeName=$1" \
		-o json | jq '[.items[] | select(.status.phase == "Running")] | length')" = 1 ]
}

log "$MISSING labelled missing: SharingConfigKeyMissing naming the keys"
wait_for 120 running_on "$TS4" device-plugin
wait_for 120 said "$MISSING" device-plugin 'Missing/SharingConfigKeyMissing '
msg=$(finding_of "$MISSING" device-plugin)
log "$msg"
grep -qF "is \"missing\", a key ConfigMap $CM lacks (its keys: default, ren, ts-4)" <<<"$msg" ||
	fail "the finding does not name the value and the keys: $msg"
grep -qF "kubectl label node $MISSING nvidia.com/device-plugin.config=KEY --overwrite" <<<"$msg" || fail "the finding says not what to do: $msg"
# the status may still hold the plugin's Pending from before it ran
wait_for 60 no_finding "$TS4" device-plugin

log "gpuop check says the same"
CHECK_RC=0
out=$("$GPUOP_BIN" check --kubeconfig "$KUBECONFIG" --namespace "$GPUOP_NS" -o json) || CHECK_RC=$?
assert_eq 1 "$CHECK_RC" "gpuop check's exit code with the finding"
jq -e --arg n "$MISSING" '[.nodes[] | select(.name == $n) | .findings[] |
	select(.operand == "device-plugin" and .reason == "SharingConfigKeyMissing")] | length == 1' \
	<<<"$out" >/dev/null || fail "gpuop check lacks the finding: $(jq -c '.nodes' <<<"$out")"
jq -e --arg n "$TS4" '[.nodes[] | select(.name == $n) | .findings[]] | length == 0' <<<"$out" >/dev/null ||
	fail "gpuop check has findings on $TS4: $(jq -c '.nodes' <<<"$out")"

log "GFD's sharing labels on $TS4: the status and gpuop check show its sharing"
kc label node "$TS4" nvidia.com/gpu.sharing-strategy=time-slicing nvidia.com/gpu.replicas=4 >/dev/null
shares() {
	kc get gpupolicy "$POLICY" -o json | jq -e --arg n "$TS4" '.status.sharing[]? |
		select(.strategy == "time-slicing" and .replicas == 4 and (.nodeNames | index($n)))' >/dev/null
}
wait_for 60 shares
! kc get gpupolicy "$POLICY" -o json | jq -e --arg n "$MISSING" '.status.sharing[]? | .nodeNames | index($n)' >/dev/null ||
	fail "$MISSING (no GFD sharing label) is listed as sharing"
text=$("$GPUOP_BIN" check --kubeconfig "$KUBECONFIG" --namespace "$GPUOP_NS" --nodes gpu-share- --color never || true)
grep -qF "  time-slicing, 4 replicas: 1 node ($TS4)" <<<"$text" ||
	fail "gpuop check does not show $TS4's sharing: $text"
out=$("$GPUOP_BIN" check --kubeconfig "$KUBECONFIG" --namespace "$GPUOP_NS" --nodes "$TS4" -o json || true)
jq -e --arg n "$TS4" '.sharing == [{"strategy": "time-slicing", "replicas": 4, "nodes": 1, "nodeNames": [$n]}]' \
	<<<"$out" >/dev/null || fail "gpuop check -o json: $(jq -c .sharing <<<"$out")"

log "GFD says 8 GPUs x 4 on $TS4, allocatable 8: SharedAllocatableDiffers past the advertise grace"
kc label node "$TS4" nvidia.com/gpu.count=8 >/dev/null
wait_for 120 said "$TS4" device-plugin 'Missing/SharedAllocatableDiffers '
msg=$(finding_of "$TS4" device-plugin)
log "$msg"
grep -qF "advertises 8 nvidia.com/gpu (allocatable), but GFD labels it 8 GPUs shared 4 ways (time-slicing): 32 nvidia.com/gpu expected" <<<"$msg" ||
	fail "the finding does not say what allocatable should be: $msg"
grep -qE 'is Ready since 20[0-9-]+T[0-9:]+Z\.' <<<"$msg" || fail "the finding does not say since when: $msg"
log "allocatable 32, as GFD says: it clears"
kc patch node "$TS4" --subresource=status --type merge \
	-p '{"status":{"capacity":{"nvidia.com/gpu":"32"},"allocatable":{"nvidia.com/gpu":"32"}}}' >/dev/null
wait_for 60 no_finding "$TS4" device-plugin

log "renameByDefault (key ren) on $REN: nvidia.com/gpu.shared 32 is right, nvidia.com/gpu 32 is the finding"
lab_node "$REN" --label nvidia.com/gpu.present=true --label "$L.device-plugin=true" \
	--label "$L.gpu-feature-discovery=true" --label nvidia.com/device-plugin.config=ren \
	--label nvidia.com/gpu.sharing-strategy=time-slicing --label nvidia.com/gpu.replicas=4 \
	--label nvidia.com/gpu.count=8 --capacity nvidia.com/gpu.shared=32
wait_for 120 running_on "$REN" device-plugin
ready_at=$(date +%s)
# clean past the advertise grace (15 s): neither AdvertisesNothing nor a
# SharedAllocatableDiffers on the renamed resource
wait_for 120 bash -c '(($(date +%s) > '"$ready_at"' + 25))'
no_finding "$REN" device-plugin || fail "$REN (nvidia.com/gpu.shared 32, as its config says) has a finding: $(finding_of "$REN" device-plugin)"
kc patch node "$REN" --subresource=status --type json -p '[
	{"op": "remove", "path": "/status/capacity/nvidia.com~1gpu.shared"},
	{"op": "remove", "path": "/status/allocatable/nvidia.com~1gpu.shared"},
	{"op": "add", "path": "/status/capacity/nvidia.com~1gpu", "value": "32"},
	{"op": "add", "path": "/status/allocatable/nvidia.com~1gpu", "value": "32"}]' >/dev/null
wait_for 60 said "$REN" device-plugin 'Missing/SharedAllocatableDiffers '
msg=$(finding_of "$REN" device-plugin)
log "$msg"
grep -qF "advertises 0 nvidia.com/gpu.shared (allocatable), and nvidia.com/gpu instead, where its sharing config names nvidia.com/gpu.shared" <<<"$msg" ||
	fail "the finding does not name the resource expected: $msg"

log "the key added to the ConfigMap: the finding clears at once (watched)"
grep -qF "configmap/$GPUOP_NS/$CM: watching the device plugin's sharing ConfigMap" "$GPUOP_LOG" ||
	fail "gpuop does not watch the ConfigMap: $(grep -F configmap "$GPUOP_LOG" | tail -5)"
edited=$(date +%s)
cm_apply default ts-4 ren missing
# The old re-read came every 30 s: a finding gone within 25 s of the edit,
# with the watch's event in the log, is the watch's doing.
wait_for 25 no_finding "$MISSING" device-plugin
log "cleared $(($(date +%s) - edited)) s after the edit"
wait_for 10 grep -qF "configmap/$CM: changed" "$GPUOP_LOG"

log "the ConfigMap deleted: the labelled nodes' findings say so"
kc -n "$GPUOP_NS" delete configmap "$CM" >/dev/null
wait_for 120 said "$MISSING" device-plugin "and ConfigMap $CM does not exist"
wait_for 60 said "$TS4" device-plugin "and ConfigMap $CM does not exist"
grep -qF 'cannot read' "$GPUOP_LOG" && fail "gpuop logged a failed read: $(grep -F 'cannot read' "$GPUOP_LOG")"
gpuop_stop
log "PASS"
