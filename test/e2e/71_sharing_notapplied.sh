#!/usr/bin/env bash
# End-to-end: SharingConfigNotApplied (issue 41), the node's sharing config
# changed and GFD's labels still saying the old one past the advertise
# grace. On the lab (kwok GPU nodes: GFD's labels are set by hand here,
# as GFD would write them; no config-manager runs to reload anything):
#   - a ConfigMap with default (no sharing) and ts (time-slicing, 4
#     replicas), a node labelled ts with GFD's time-slicing x 4 and 8 x 4
#     nvidia.com/gpu: no finding past the advertise grace (15 s here);
#   - the ConfigMap's ts changed to 8 replicas, no restart of the plugin
#     and GFD's labels left at 4: no finding within the grace (a normal
#     config change while the plugin and GFD catch up), then
#     SharingConfigNotApplied naming the key, what the config says, what
#     GFD says and since when, no sooner than the grace after the edit;
#   - GFD's labels updated to 8 replicas (and allocatable 8 x 8): it clears;
#   - the node's label moved to default (no sharing) with GFD still saying
#     time-slicing x 8: the finding again after the grace, naming default,
#     none with 1 replica; GFD's labels none x 1: it clears.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
CM=sharing-notapplied
on_exit 'gpuop_kill; gpuop_uninstall; kc -n "$GPUOP_NS" delete configmap '"$CM"' --ignore-not-found >/dev/null 2>&1 || true'

L=nvidia.com/gpu.deploy
NODE=$(unique gpu-notapplied)
POLICY=sharing-notapplied
GRACE=15

gpuop_install
gpuop_start
cm_apply() { # REPLICAS: the ConfigMap, ts time-slicing with REPLICAS
	kc -n "$GPUOP_NS" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: ConfigMap
metadata: {name: $CM}
data:
  default: |-
    version: v1
  ts: |-
    version: v1
    sharing:
      timeSlicing:
        resources:
          - name: nvidia.com/gpu
            replicas: $1
YAML
}
cm_apply 4
kc apply -f - >/dev/null <<YAML
apiVersion: gpuop.dev/v1alpha1
kind: GpuPolicy
metadata: {name: $POLICY}
spec:
  driver: {enabled: false}
  toolkit: {enabled: false}
  validator: {enabled: false}
  dcgmExporter: {enabled: false}
  findings: {eventGracePeriodSeconds: 0, advertiseGracePeriodSeconds: $GRACE}
  devicePlugin:
    config: {name: $CM, default: default}
YAML

lab_node "$NODE" --label nvidia.com/gpu.present=true --label "$L.device-plugin=true" \
	--label "$L.gpu-feature-discovery=true" --label nvidia.com/device-plugin.config=ts \
	--label nvidia.com/gpu.sharing-strategy=time-slicing --label nvidia.com/gpu.replicas=4 \
	--label nvidia.com/gpu.count=8 --capacity nvidia.com/gpu=32

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
plugin_pod() {
	kc -n "$GPUOP_NS" get pods -l app.kubernetes.io/component=device-plugin \
		--field-selector "spec.nodeName=$NODE" -o jsonpath='{.items[0].metadata.uid}'
}
listed() { # the status's sharing lists the node (judged: it lists only nodes with findings)
	kc get gpupolicy "$POLICY" -o json | jq -e --arg n "$NODE" \
		'.status.sharing[]? | select(.strategy == "time-slicing" and (.nodeNames | index($n)))' >/dev/null
}
past() { (($(date +%s) > $1)); }

log "$NODE on ts (time-slicing x 4), GFD says the same: no finding past the grace"
wait_for 120 running_on "$NODE" device-plugin
started=$(date +%s)
wait_for 60 listed
wait_for 120 past $((started + GRACE + 10))
no_finding "$NODE" device-plugin || fail "$NODE (GFD says its config) has a finding: $(finding_of "$NODE" device-plugin)"
uid=$(plugin_pod)

log "ts changed to 8 replicas, GFD's labels left at 4: none within the grace, then SharingConfigNotApplied"
edited=$(date +%s)
cm_apply 8
wait_for 10 grep -qF "configmap/$CM: changed" "$GPUOP_LOG"
# within the grace (the plugin and GFD would be catching up): nothing
while (($(date +%s) < edited + GRACE - 3)); do
	no_finding "$NODE" device-plugin ||
		fail "a finding $(($(date +%s) - edited)) s after the edit, within the $GRACE s grace: $(finding_of "$NODE" device-plugin)"
	sleep 1 # a poll of a condition that must keep holding, not a wait
done
wait_for 120 said "$NODE" device-plugin 'Missing/SharingConfigNotApplied '
found=$(date +%s)
msg=$(finding_of "$NODE" device-plugin)
log "$msg (after $((found - edited)) s)"
((found - edited >= GRACE)) || fail "the finding came $((found - edited)) s after the edit, within the $GRACE s grace"
grep -qF "The node's sharing config \"ts\" (ConfigMap $CM) says time-slicing with 8 replica(s), but GFD labels the node time-slicing with 4" <<<"$msg" ||
	fail "the finding does not say what the config and GFD say: $msg"
grep -qE 'since 20[0-9-]+T[0-9:]+Z: the device plugin has not applied its config\.' <<<"$msg" ||
	fail "the finding does not say since when: $msg"
assert_eq "$uid" "$(plugin_pod)" "the device plugin pod (not restarted)"

log "GFD's labels updated to 8 (allocatable 8 x 8): it clears"
kc patch node "$NODE" --subresource=status --type merge \
	-p '{"status":{"capacity":{"nvidia.com/gpu":"64"},"allocatable":{"nvidia.com/gpu":"64"}}}' >/dev/null
kc label node "$NODE" nvidia.com/gpu.replicas=8 --overwrite >/dev/null
wait_for 60 no_finding "$NODE" device-plugin

log "the node's label moved to default (no sharing), GFD still time-slicing x 8: the finding after the grace"
moved=$(date +%s)
kc label node "$NODE" nvidia.com/device-plugin.config=default --overwrite >/dev/null
wait_for 120 said "$NODE" device-plugin 'Missing/SharingConfigNotApplied '
found=$(date +%s)
msg=$(finding_of "$NODE" device-plugin)
log "$msg (after $((found - moved)) s)"
((found - moved >= GRACE)) || fail "the finding came $((found - moved)) s after the label moved, within the $GRACE s grace"
grep -qF "sharing config \"default\" (ConfigMap $CM) says none with 1 replica(s), but GFD labels the node time-slicing with 8" <<<"$msg" ||
	fail "the finding does not name the default's config: $msg"
kc patch node "$NODE" --subresource=status --type merge \
	-p '{"status":{"capacity":{"nvidia.com/gpu":"8"},"allocatable":{"nvidia.com/gpu":"8"}}}' >/dev/null
kc label node "$NODE" nvidia.com/gpu.sharing-strategy=none nvidia.com/gpu.replicas=1 --overwrite >/dev/null
wait_for 60 no_finding "$NODE" device-plugin
gpuop_stop
log "PASS"
