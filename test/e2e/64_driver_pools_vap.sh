#!/usr/bin/env bash
# End-to-end: the chart's ValidatingAdmissionPolicy gpuop-driver-pool-label
# (templates/driver-pool-policy.yaml; issue 38, docs/operations.md "Driver
# pools"): only gpuop moves a node it placed in a driver pool.
#   The policy and its binding are rendered from the chart (`helm template`)
#   with driverPoolLabelPolicy.extraUsers naming the user gpuop runs as here
#   (the lab's admin: e2e runs gpuop as a process with that kubeconfig), the
#   binding narrowed to this test's nodes; applied, and waited for until
#   the API server refuses a server-side dry run.
#   gpuop labels a node its pool's nodeSelector selects (a100) with the VAP
#   in force: gpuop's own merge patch (label and record) passes;
#   a person (alice, impersonated, in system:masters) who changes, removes
#   that label (also through the status subresource), or changes or removes
#   the record gpuop.dev/driver-pool-set, is refused with the message saying
#   what to do instead, and nothing changed; gpuop's identity (and its
#   ServiceAccount, impersonated) may change it;
#   another label of that node passes, and so does a node's own status
#   patch (the kubelet's); cordoned (drained first), a person may change
#   the label, never the record;
#   a pool without a nodeSelector (h100) is labelled by hand: a person sets,
#   changes and removes its label on a node gpuop never labelled, and may
#   not forge the record there; a label that differs from the record is a
#   person's, free to change;
#   the advice works: the selector's label removed, gpuop moves the node
#   to the default pool itself (label and record removed through the VAP).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
on_exit 'gpuop_kill; gpuop_uninstall'

POLICY=driver-pools-vap
POOL=gpuop.dev/driver-pool
SET=gpuop.dev/driver-pool-set
VAP=gpuop-driver-pool-label
TAG=$(unique vap)
S1=$(unique vap-a1)
H1=$(unique vap-h1)
P1=$(unique vap-p1)
IMG=nvcr.io/nvidia/driver
HELM=$LAB_DIR/bin/helm
export HELM_CACHE_HOME=$E2E_TMP/helm HELM_CONFIG_HOME=$E2E_TMP/helm HELM_DATA_HOME=$E2E_TMP/helm

gpuop_install

# the user gpuop runs as here: the admin kubeconfig's (its certificate's CN)
ME=$(kc auth whoami -o jsonpath='{.status.userInfo.username}')
[[ -n $ME && $ME != alice ]] || fail "no admin user name from kubectl auth whoami: '$ME'"
log "gpuop runs as $ME; the VAP rendered from the chart with it in extraUsers"
"$HELM" template gpuop "$GPUOP_SRC/deploy/helm/gpuop" -n "$GPUOP_NS" --kube-version 1.36.0 --no-hooks \
	--show-only templates/driver-pool-policy.yaml --set-json "driverPoolLabelPolicy.extraUsers=[\"$ME\"]" \
	>"$E2E_TMP/vap.yaml" || fail "helm template of the VAP"
grep -qF "system:serviceaccount:$GPUOP_NS:gpuop" "$E2E_TMP/vap.yaml" || fail "the VAP does not name gpuop's ServiceAccount"
# The binding, narrowed to this test's nodes (an objectSelector), so that a
# left-over could touch no other test's node.
on_exit 'kc delete validatingadmissionpolicybinding,validatingadmissionpolicy "$VAP" --ignore-not-found >/dev/null 2>&1'
kc apply --dry-run=client -o json -f "$E2E_TMP/vap.yaml" |
	jq --arg t "$TAG" '(.items[] | select(.kind == "ValidatingAdmissionPolicyBinding") | .spec.matchResources) =
		{objectSelector: {matchLabels: {"gpuop.dev/e2e-vap": $t}}}' | kc apply -f - >/dev/null

gpu=(--label nvidia.com/gpu.present=true --label nvidia.com/gpu.deploy.driver=true --label "gpuop.dev/e2e-vap=$TAG")
lab_node "$S1" "${gpu[@]}" --label pool=a100
lab_node "$H1" "${gpu[@]}"
lab_node "$P1" --label "gpuop.dev/e2e-vap=$TAG" # no GPU: gpuop leaves it alone

alice=(--as=alice --as-group=system:masters)
pool_of() { kc get node "$1" -o json | jq -r --arg k "$POOL" '.metadata.labels[$k] // "none"'; }
set_of() { kc get node "$1" -o json | jq -r --arg k "$SET" '.metadata.annotations[$k] // "none"'; }
pool_is() { [ "$(pool_of "$1")" = "$2" ]; }
set_is() { [ "$(set_of "$1")" = "$2" ]; }
# refused MSG CMD...: CMD (kubectl as alice) fails with the VAP's denial
# containing MSG; its output in $E2E_TMP/refused.
refused() {
	local want=$1
	shift
	if "$@" >"$E2E_TMP/refused" 2>&1; then
		echo "allowed: $*"
		return 1
	fi
	grep -qF "ValidatingAdmissionPolicy '$VAP'" "$E2E_TMP/refused" && grep -qF -- "$want" "$E2E_TMP/refused" ||
		{
			echo "not refused by the VAP as expected: $(cat "$E2E_TMP/refused")"
			return 1
		}
}
LABEL_MSG="was set by gpuop from a driver pool's nodeSelector"
ADVICE="change the labels the pools' nodeSelectors read instead"
SET_MSG="only gpuop writes it: to move a node between driver pools, change the labels"

log "the VAP takes effect: a person's change of a label gpuop placed is refused (server-side dry run)"
kc label node "$P1" "$POOL=x" >/dev/null
kc annotate node "$P1" "$SET=x" >/dev/null # the user gpuop runs as: allowed
wait_for 120 refused "$LABEL_MSG" kc "${alice[@]}" label node "$P1" "$POOL=y" --overwrite --dry-run=server

log "gpuop labels $S1 (its pool's nodeSelector) with the VAP in force"
kc apply -f - >/dev/null <<EOF
apiVersion: gpuop.dev/v1alpha1
kind: GpuPolicy
metadata: {name: $POLICY}
spec:
  driver:
    repository: nvcr.io/nvidia
    image: driver
    version: "595.91.07"
    pools:
      - name: a100
        version: "580.95.05"
        nodeSelector: {pool: a100}
      - name: h100
        version: "590.48.01"
  toolkit: {enabled: false}
  devicePlugin: {enabled: false}
  gfd: {enabled: false}
  dcgmExporter: {enabled: false}
  validator: {enabled: false}
EOF
gpuop_start --leader-elect=false
wait_for 240 pool_is "$S1" a100
wait_for 60 set_is "$S1" a100
wait_for 120 driver_image_is "$S1" "$IMG:580.95.05-ubuntu24.04"
wait_for 120 driver_image_is "$H1" "$IMG:595.91.07-ubuntu24.04"
# (had the default's driver been Ready first, gpuop moved it through the
# driver upgrade, which cordons: settled, uncordoned, before a person tries)
uncordoned() { [ -z "$(kc get node "$1" -o jsonpath='{.spec.unschedulable}')" ]; }
no_move() { [ -z "$(kc get node "$1" -o json | jq -r '.metadata.annotations["gpuop.dev/driver-pool-wanted"] // ""')" ]; }
wait_for 120 uncordoned "$S1"
wait_for 60 no_move "$S1"

log "a person's changes of that label, or of gpuop's record, are refused"
refused "$ADVICE" kc "${alice[@]}" label node "$S1" "$POOL=h100" --overwrite ||
	fail "alice changed the label gpuop placed: $(cat "$E2E_TMP/refused")"
grep -qF "$POOL=a100 on node $S1 $LABEL_MSG" "$E2E_TMP/refused" ||
	fail "the refusal does not name the node and its pool: $(cat "$E2E_TMP/refused")"
grep -qF 'docs/operations.md, "Driver pools"' "$E2E_TMP/refused" || fail "the refusal does not point to the docs"
refused "$ADVICE" kc "${alice[@]}" label node "$S1" "$POOL-" || fail "alice removed the label gpuop placed"
refused "$ADVICE" kc "${alice[@]}" patch node "$S1" --subresource=status --type=merge \
	-p "{\"metadata\":{\"labels\":{\"$POOL\":\"h100\"}}}" || fail "alice changed the label through nodes/status"
refused "$SET_MSG" kc "${alice[@]}" annotate node "$S1" "$SET-" || fail "alice removed gpuop's record"
refused "$SET_MSG" kc "${alice[@]}" annotate node "$S1" "$SET=h100" --overwrite || fail "alice changed gpuop's record"
assert_eq a100 "$(pool_of "$S1")" "the label after the refused edits"
assert_eq a100 "$(set_of "$S1")" "the record after the refused edits"

log "gpuop's identity may change it; other writes of that node pass"
kc label node "$S1" "$POOL=h100" --overwrite --dry-run=server >/dev/null || fail "gpuop's user may not change the label"
# the name the chart gives gpuop's ServiceAccount, as the API server names it
# when gpuop runs in its pod
kc --as="system:serviceaccount:$GPUOP_NS:gpuop" label node "$S1" "$POOL=h100" --overwrite --dry-run=server >/dev/null ||
	fail "gpuop's ServiceAccount may not change the label"
kc "${alice[@]}" label node "$S1" team=ml >/dev/null || fail "alice may not set another label of $S1"
kc "${alice[@]}" annotate node "$S1" owner=ml-platform >/dev/null || fail "alice may not set another annotation of $S1"
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
kc --as="system:node:$S1" --as-group=system:nodes --as-group=system:masters patch node "$S1" --subresource=status \
	--type=strategic -p "{\"status\":{\"conditions\":[{\"type\":\"GpuopE2eProbe\",\"status\":\"True\",\"reason\":\"Probe\",\"message\":\"e2e\",\"lastHeartbeatTime\":\"$now\",\"lastTransitionTime\":\"$now\"}]}}" \
	>/dev/null || fail "the node's own status patch was refused"

log "a person who drained the node first (cordoned) may move it by hand"
kc "${alice[@]}" cordon "$S1" >/dev/null || fail "alice may not cordon $S1"
kc "${alice[@]}" label node "$S1" "$POOL=h100" --overwrite --dry-run=server >/dev/null ||
	fail "alice may not change the label of the cordoned $S1"
refused "$SET_MSG" kc "${alice[@]}" annotate node "$S1" "$SET-" || fail "alice removed gpuop's record on the cordoned $S1"
kc "${alice[@]}" uncordon "$S1" >/dev/null || fail "alice may not uncordon $S1"
refused "$ADVICE" kc "${alice[@]}" label node "$S1" "$POOL=h100" --overwrite --dry-run=server ||
	fail "alice changed the label gpuop placed once $S1 was uncordoned"

log "a pool without a nodeSelector: a person labels it by hand, and may not forge gpuop's record"
kc "${alice[@]}" label node "$H1" "$POOL=h100" >/dev/null || fail "alice may not label $H1 into the by-hand pool h100"
wait_for 120 driver_image_is "$H1" "$IMG:590.48.01-ubuntu24.04"
assert_eq none "$(set_of "$H1")" "gpuop writes no record on a by-hand label"
refused "$SET_MSG" kc "${alice[@]}" annotate node "$H1" "$SET=h100" || fail "alice forged gpuop's record on $H1"
kc "${alice[@]}" label node "$H1" "$POOL=other" --overwrite --dry-run=server >/dev/null ||
	fail "alice may not change her own label of $H1"
kc "${alice[@]}" label node "$H1" "$POOL-" --dry-run=server >/dev/null || fail "alice may not remove her own label of $H1"
# a label that differs from the record is a person's
kc label node "$P1" "$POOL=z" --overwrite >/dev/null
kc "${alice[@]}" label node "$P1" "$POOL=w" --overwrite >/dev/null || fail "alice may not change a label that is not gpuop's"

log "the advice works: the selector's label removed, gpuop moves $S1 to the default pool itself"
kc "${alice[@]}" label node "$S1" pool- >/dev/null
wait_for 300 pool_is "$S1" none
wait_for 60 set_is "$S1" none
wait_for 120 driver_image_is "$S1" "$IMG:595.91.07-ubuntu24.04"
wait_for 120 uncordoned "$S1"
! grep -qF "ValidatingAdmissionPolicy '$VAP'" "$GPUOP_LOG" || fail "the VAP refused one of gpuop's own writes: $(grep -m 3 -F "$VAP" "$GPUOP_LOG")"

gpuop_uninstall
gpuop_stop
log "ok"
