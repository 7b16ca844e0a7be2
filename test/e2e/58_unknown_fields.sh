#!/usr/bin/env bash
# End-to-end: no silent pruning (issue 38 item 5; docs/operations.md,
# "Fields gpuop does not implement"). The CRD keeps unknown keys in spec and
# in every object under it, so against the real API server:
#   a merge patch of spec.driver.useNvidiaDriverCRD: true stays on the
#     object (read back) and gpuop's Reconciled=False condition names the
#     field (spec.driver.usePrecompiled was the example until gpuop
#     implemented it, issue 38),
#     the rest of the policy still applied; removing it clears the condition;
#   `kubectl apply --validate=false` of the policy with spec.sandboxWorkloads
#     keeps it, and the condition names spec.sandboxWorkloads (spec.cdi,
#     then spec.gds were the example until gpuop implemented them, issues
#     39 and 38);
#   a strict `kubectl apply` (kubectl's default, --validate=strict: the API
#     server's Strict field validation) of the same is accepted too, with no
#     "unknown field" (spec keeps unknown keys, so none is unknown to the API
#     server): gpuop is the one that names it;
#   typed validation still holds: a strict apply with a value outside an
#     enum (spec.driver.imagePullPolicy: Sometimes) is refused by the API
#     server and changes nothing.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
on_exit 'gpuop_kill; gpuop_uninstall'

NODE=$(unique gpu-uf)
gpuop_sample
NAME=$POLICY
lab_node "$NODE" --label nvidia.com/gpu.present=true --label nvidia.com/gpu.deploy.driver=true \
	--label nvidia.com/gpu.deploy.container-toolkit=true --label nvidia.com/gpu.deploy.device-plugin=true

# reconciled STATUS [TEXT]: the Reconciled condition has STATUS and, when
# given, its message contains TEXT, for the object's current generation
reconciled() {
	kc get gpupolicy "$NAME" -o json | jq -e --arg s "$1" --arg t "${2:-}" '
		.status.observedGeneration == .metadata.generation and
		any(.status.conditions[]?; .type == "Reconciled" and .status == $s and (.message | contains($t)))' >/dev/null
}
export -f reconciled kc
export NAME

wait_for 60 kc -n "$GPUOP_NS" get ds gpuop-device-plugin
wait_for 60 reconciled True

log "merge patch spec.driver.useNvidiaDriverCRD: true: kept, and named by gpuop"
out=$(kc patch gpupolicy "$NAME" --type merge -p '{"spec":{"driver":{"useNvidiaDriverCRD":true}}}' 2>&1)
[[ $out != *'unknown field'* ]] || fail "the API server calls it unknown: $out"
assert_eq true "$(kc get gpupolicy "$NAME" -o jsonpath='{.spec.driver.useNvidiaDriverCRD}')" \
	"spec.driver.useNvidiaDriverCRD read back after the merge patch"
wait_for 60 reconciled False spec.driver.useNvidiaDriverCRD
kc -n "$GPUOP_NS" get ds gpuop-device-plugin >/dev/null || fail "the rest of the policy is no longer applied"
kc patch gpupolicy "$NAME" --type merge -p '{"spec":{"driver":{"useNvidiaDriverCRD":null}}}' >/dev/null
wait_for 60 reconciled True

# the sample with spec.sandboxWorkloads added (a top-level key of the
# ClusterPolicy's spec that gpuop does not implement)
with_refused() {
	sed 's/^spec:$/spec:\n  sandboxWorkloads:\n    enabled: true/' "$GPUOP_SRC/deploy/sample-gpupolicy.yaml"
}
grep -q '^  sandboxWorkloads:' <<<"$(with_refused)" || fail "the test's policy lacks spec.sandboxWorkloads"

log "kubectl apply --validate=false with spec.sandboxWorkloads: kept, and named by gpuop"
with_refused | kc apply --validate=false -f - >/dev/null
assert_eq true "$(kc get gpupolicy "$NAME" -o jsonpath='{.spec.sandboxWorkloads.enabled}')" "spec.sandboxWorkloads.enabled read back"
wait_for 60 reconciled False spec.sandboxWorkloads

log "a strict kubectl apply with spec.sandboxWorkloads: accepted, no unknown field"
kc patch gpupolicy "$NAME" --type json -p '[{"op": "remove", "path": "/spec/sandboxWorkloads"}]' >/dev/null
wait_for 60 reconciled True
out=$(with_refused | kc apply --validate=strict -f - 2>&1) || fail "the strict apply was refused: $out"
[[ $out != *'unknown field'* ]] || fail "the API server calls spec.sandboxWorkloads unknown: $out"
assert_eq true "$(kc get gpupolicy "$NAME" -o jsonpath='{.spec.sandboxWorkloads.enabled}')" "spec.sandboxWorkloads.enabled after the strict apply"
wait_for 60 reconciled False spec.sandboxWorkloads

log "typed validation still holds: an enum value outside it is refused"
gen=$(kc get gpupolicy "$NAME" -o jsonpath='{.metadata.generation}')
if out=$(with_refused | sed 's/^  driver:$/  driver:\n    imagePullPolicy: Sometimes/' | kc apply --validate=strict -f - 2>&1); then
	fail "imagePullPolicy: Sometimes was accepted: $out"
fi
[[ $out == *spec.driver.imagePullPolicy* ]] || fail "the refusal does not name spec.driver.imagePullPolicy: $out"
assert_eq "$gen" "$(kc get gpupolicy "$NAME" -o jsonpath='{.metadata.generation}')" "generation after a refused apply"

gpuop_uninstall
gpuop_stop
log "ok"
