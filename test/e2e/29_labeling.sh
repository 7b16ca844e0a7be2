#!/usr/bin/env bash
# End-to-end: node labelling (SPEC 4a, issue 21), with
# spec.nodeLabeling.enabled: true.
#   a kwok node with only NFD's label -> gpuop labels it (gpu.present and a
#     deploy label per enabled operand, its annotation saying so) and every
#     enabled operand's pod runs there;
#   a hand-labelled node and a node labelled operands=false -> untouched;
#   a label gpuop set removed by hand -> LabelChanged within 2 s of the
#     change, naming the label and both values; never re-added (polled
#     over a window);
#   an operand enabled later -> labelled on gpuop's node only;
#   gpuop restarted -> nothing relabelled (the annotation is the memory).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
on_exit 'gpuop_kill; gpuop_uninstall'

NFD=feature.node.kubernetes.io/pci-10de.present
NOTE=gpuop.dev/node-labels
ENABLED=(driver container-toolkit device-plugin gpu-feature-discovery dcgm-exporter operator-validator)
POLICY=labeling
FRESH=$(unique fresh)
HAND=$(unique hand)
OPTOUT=$(unique optout)

policy() { # policy MIG_ENABLED
	kc apply -f - >/dev/null <<EOF
apiVersion: gpuop.dev/v1alpha1
kind: GpuPolicy
metadata: {name: $POLICY}
spec:
  nodeLabeling: {enabled: true}
  migManager: {enabled: $1}
EOF
}
# labels NODE: the node's nvidia.com/gpu.* labels, sorted, one "k=v" a line.
labels() {
	kc get node "$1" -o json |
		jq -r '.metadata.labels | to_entries[] | select(.key | startswith("nvidia.com/gpu.")) | "\(.key)=\(.value)"' | sort
}
note() { kc get node "$1" -o json | jq -r --arg a "$NOTE" '.metadata.annotations[$a] // ""'; }
status_has() {
	kc get gpupolicy "$POLICY" -o json |
		jq -e --arg n "$1" --arg o "$2" --arg r "$3" \
			'[.status.nodes[]? | select(.name == $n) | .findings[] | select(.operand == $o and .reason == $r)] | length > 0' >/dev/null
}
message_of() {
	kc get gpupolicy "$POLICY" -o json |
		jq -r --arg n "$1" --arg o "$2" --arg r "$3" \
			'[.status.nodes[]? | select(.name == $n) | .findings[] | select(.operand == $o and .reason == $r) | .message][0] // ""'
}
running_on() {
	grep -qx Running <<<"$(kc -n "$GPUOP_NS" get pods -l "app.kubernetes.io/component=$2" \
		--field-selector "spec.nodeName=$1" -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}')"
}
# stays WINDOW_S CMD...: CMD holds at every poll (0.5 s) for WINDOW_S seconds.
stays() {
	local window=$1 end
	shift
	end=$(($(date +%s) + window))
	while (($(date +%s) < end)); do
		"$@" || fail "did not hold: $*"
		sleep 0.5
	done
}
label_absent() { ! kc get node "$1" -o json | jq -e --arg k "$2" '.metadata.labels | has($k)' >/dev/null; }
label_is() { [[ $(kc get node "$1" -o json | jq -r --arg k "$2" '.metadata.labels[$k] // ""') == "$3" ]]; }
fresh_labelled() { [[ $(labels "$FRESH") == "$want" ]]; }
others_untouched() {
	[[ $(labels "$HAND") == "$HAND_BEFORE" && $(labels "$OPTOUT") == "$OPTOUT_BEFORE" &&
		-z $(note "$HAND")$(note "$OPTOUT") ]]
}
changes_kept() {
	label_absent "$FRESH" nvidia.com/gpu.deploy.dcgm-exporter &&
		label_is "$FRESH" nvidia.com/gpu.deploy.device-plugin false
}
fresh_unchanged() {
	[[ $(labels "$FRESH") == "$LABELS_BEFORE" && $(note "$FRESH") == "$NOTE_BEFORE" &&
		$(labels "$HAND") == "$HAND_BEFORE" ]]
}
no_label_changed() { ! status_has "$FRESH" dcgm-exporter LabelChanged; }
yours_now() { [[ $(labels "$FRESH") == "$LABELS_BEFORE" && -z $(note "$FRESH") ]]; }

log "nodes before gpuop: $FRESH (NFD only), $HAND (hand-labelled), $OPTOUT (operands=false)"
lab_node "$FRESH" --label "$NFD=true"
lab_node "$HAND" --label "$NFD=true" --label nvidia.com/gpu.deploy.driver=true
lab_node "$OPTOUT" --label "$NFD=true" --label nvidia.com/gpu.deploy.operands=false
HAND_BEFORE=$(labels "$HAND")
OPTOUT_BEFORE=$(labels "$OPTOUT")

gpuop_install
gpuop_start
policy false

log "$FRESH is labelled for every enabled operand, once, and says so"
want="nvidia.com/gpu.present=true"
for op in "${ENABLED[@]}"; do want+=$'\n'"nvidia.com/gpu.deploy.$op=true"; done
want=$(sort <<<"$want")
wait_for 60 fresh_labelled
n=$(note "$FRESH")
[[ -n $n ]] || fail "$FRESH has no $NOTE annotation"
jq -e --argjson want "$(jq -R . <<<"$want" | jq -s 'map(split("=")[0])')" \
	'(keys | sort) == ($want | sort) and ([.[] | .value] | unique) == ["true"] and all(.[]; .at | test("^[0-9]{4}-"))' \
	<<<"$n" >/dev/null || fail "$NOTE on $FRESH is wrong: $n"
for op in "${ENABLED[@]}"; do
	wait_for 120 running_on "$FRESH" "$op"
done
log "every enabled operand runs on $FRESH"

log "$HAND and $OPTOUT are untouched"
stays 3 others_untouched
assert_eq 1 "$(grep -c "labelled node $FRESH" "$GPUOP_LOG")" "PATCHes of $FRESH"
grep -q "labelled node $HAND\|labelled node $OPTOUT" "$GPUOP_LOG" && fail "gpuop labelled a person's node"

log "an operand enabled later: labelled on $FRESH only (MIG Manager: once the node is MIG-capable)"
kc label node "$FRESH" nvidia.com/mig.capable=true >/dev/null # as GFD would
kc label node "$HAND" nvidia.com/mig.capable=true >/dev/null
policy true
wait_for 30 label_is "$FRESH" nvidia.com/gpu.deploy.mig-manager true
jq -e '."nvidia.com/gpu.deploy.mig-manager".value == "true"' <<<"$(note "$FRESH")" >/dev/null ||
	fail "$NOTE lacks mig-manager: $(note "$FRESH")"
stays 2 label_absent "$HAND" nvidia.com/gpu.deploy.mig-manager
policy false

log "a label gpuop set, removed by hand: reported within 2 s, never re-added"
kc label node "$FRESH" nvidia.com/gpu.deploy.dcgm-exporter- >/dev/null
wait_for 30 label_absent "$FRESH" nvidia.com/gpu.deploy.dcgm-exporter # the change is seen
wait_for 2 status_has "$FRESH" dcgm-exporter LabelChanged
msg=$(message_of "$FRESH" dcgm-exporter LabelChanged)
[[ $msg == *'nvidia.com/gpu.deploy.dcgm-exporter was set to "true"'*'is now absent'* ]] ||
	fail "LabelChanged message: $msg"
status_has "$FRESH" dcgm-exporter LabelAbsent && fail "LabelAbsent beside LabelChanged"
kc label node "$FRESH" --overwrite nvidia.com/gpu.deploy.device-plugin=false >/dev/null
wait_for 30 label_is "$FRESH" nvidia.com/gpu.deploy.device-plugin false
wait_for 2 status_has "$FRESH" device-plugin LabelChanged
[[ $(message_of "$FRESH" device-plugin LabelChanged) == *'is now "false"'* ]] ||
	fail "LabelChanged message: $(message_of "$FRESH" device-plugin LabelChanged)"
stays 10 changes_kept
NOTE_BEFORE=$(note "$FRESH")
LABELS_BEFORE=$(labels "$FRESH")

log "gpuop restarted: nothing is relabelled"
gpuop_stop
: >"$GPUOP_LOG"
gpuop_start
wait_for 60 grep -q "caches synced" "$GPUOP_LOG"
stays 10 fresh_unchanged
grep -q "labelled node" "$GPUOP_LOG" && fail "gpuop labelled a node after its restart: $(grep 'labelled node' "$GPUOP_LOG")"
status_has "$FRESH" dcgm-exporter LabelChanged || fail "LabelChanged gone after the restart"

log "the annotation removed: the node is a person's, the finding clears"
kc annotate node "$FRESH" "$NOTE-" >/dev/null
wait_for 30 no_label_changed
stays 3 yours_now

gpuop_stop
log "ok"
