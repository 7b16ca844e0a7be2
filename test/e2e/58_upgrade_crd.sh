#!/usr/bin/env bash
# End-to-end: the chart's CRD upgrade hook (templates/upgrade-crd.yaml,
# `gpuop upgrade-crd`, issue 39 item 6). The plain lab runs no pods, so the
# hook's Job is run here as its pod would run it: the objects `helm
# template` renders for the hook (ConfigMap, ServiceAccount, ClusterRole,
# ClusterRoleBinding) applied, then the Job's own arguments run with that
# ServiceAccount's token in-cluster, reading the ConfigMap's CRD.
#   an older CRD (spec.nodeLabeling missing and spec pruning unknown keys,
#     as before issue 38, a field the chart's lacks added, a label someone
#     put on it) -> a GpuPolicy's nodeLabeling is
#     pruned; the hook replaces it: nodeLabeling is back and kept in a
#     GpuPolicy, the stale field gone, the label kept; "replaced";
#   run again -> "unchanged";
#   the CRD deleted -> the hook creates it (server-side apply, authorized
#     by name) and waits until it is Established: "created";
#   the hook's account may touch no other CRD (another CRD's upgrade is
#     refused, and nothing else is allowed to it);
#   helm install of an older chart (no hook, a CRD without nodeLabeling),
#     then helm upgrade to this one: the pre-upgrade hook's Job (run by
#     fake_job.bash, a stand-in for the Job controller and kubelet the
#     plain lab lacks) replaces the CRD, the release's GpuPolicy has
#     spec.nodeLabeling, and the hook's objects are deleted.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

CRD=gpupolicies.gpuop.dev
CHART=$GPUOP_SRC/deploy/helm/gpuop
HELM=$LAB_DIR/bin/helm
export HELM_CACHE_HOME=$E2E_TMP/helm HELM_CONFIG_HOME=$E2E_TMP/helm HELM_DATA_HOME=$E2E_TMP/helm
SA=gpuop-upgrade-crd
POLICY=$(unique upgrade-crd)
[[ -n $GPUOP_BIN ]] || fail "no gpuop binary (GPUOP_BIN)"

make_ns NS
# Leave the lab with the repository's CRD, whatever happened.
on_exit 'kc delete gpupolicy "$POLICY" --ignore-not-found >/dev/null 2>&1'
on_exit 'kc delete clusterrole,clusterrolebinding "$SA" --ignore-not-found >/dev/null 2>&1'
on_exit 'kc replace -f "$GPUOP_SRC/crd/gpupolicy.yaml" >/dev/null 2>&1 || kc create -f "$GPUOP_SRC/crd/gpupolicy.yaml" >/dev/null 2>&1'

log "helm template: the hook's objects for namespace $NS"
"$HELM" template gpuop "$CHART" -n "$NS" --show-only templates/upgrade-crd.yaml >"$E2E_TMP/hook.yaml"
# As one JSON List (kubectl reads YAML; jq edits JSON).
kc create --dry-run=client -o json -f "$E2E_TMP/hook.yaml" |
	jq -s '{apiVersion: "v1", kind: "List", items: .}' >"$E2E_TMP/hook.json"
job='.items[] | select(.kind == "Job") | .spec.template.spec'
# Everything but the Job goes in as it is; the Job's arguments are run below.
jq '.items |= map(select(.kind != "Job"))' "$E2E_TMP/hook.json" >"$E2E_TMP/hook-objects.json"
assert_eq "ClusterRole ClusterRoleBinding ConfigMap ServiceAccount" \
	"$(jq -r '[.items[].kind] | sort | join(" ")' "$E2E_TMP/hook-objects.json")" "hook objects besides the Job"
mapfile -t JOB_ARGS < <(jq -r "$job | .containers[0].args[]" "$E2E_TMP/hook.json")
mount=$(jq -r "$job | .containers[0].volumeMounts[0].mountPath" "$E2E_TMP/hook.json")
assert_eq "$SA" "$(jq -r "$job | .serviceAccountName" "$E2E_TMP/hook.json")" "the Job's ServiceAccount"
kc apply -f "$E2E_TMP/hook-objects.json" >/dev/null

# The mount: the ConfigMap's one key, as the kubelet would write it.
mkdir -p "$E2E_TMP/mount"
kc -n "$NS" get configmap gpuop-upgrade-crd -o json | jq -j '.data["gpupolicy.yaml"]' >"$E2E_TMP/mount/gpupolicy.yaml"
cmp "$E2E_TMP/mount/gpupolicy.yaml" "$GPUOP_SRC/crd/gpupolicy.yaml" ||
	fail "the hook's ConfigMap does not hold crd/gpupolicy.yaml byte for byte"
# The Job's --filename, pointed at that copy.
args=()
for a in "${JOB_ARGS[@]}"; do
	args+=("${a/#--filename=$mount/--filename=$E2E_TMP/mount}")
done
assert_eq "upgrade-crd --filename=$E2E_TMP/mount/gpupolicy.yaml" "${args[*]}" "the Job's arguments"

SADIR=$(lab_sa_dir "$NS" "$SA")
hook() { # runs the hook's command as its pod: in-cluster, its ServiceAccount
	env -u KUBECONFIG KUBERNETES_SERVICE_HOST="$LAB_API_HOST" KUBERNETES_SERVICE_PORT="$LAB_API_PORT" \
		GPUOP_SA_DIR="$SADIR" "$GPUOP_BIN" "$@"
}
has_field() { # has_field PATH: the live CRD's spec schema has that property
	kc get crd "$CRD" -o json |
		jq -e --arg f "$1" '.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties | has($f)' >/dev/null
}

log "an older CRD: nodeLabeling missing, a stale field, a label of someone's"
# Older as CRDs before issue 38 were: spec prunes the keys it does not list
# (today's spec keeps them, so nodeLabeling would stay without its schema).
kc create --dry-run=client -o json -f "$GPUOP_SRC/crd/gpupolicy.yaml" |
	jq '.spec.versions[0].schema.openAPIV3Schema.properties.spec |= (del(."x-kubernetes-preserve-unknown-fields") |
		.properties |= (del(.nodeLabeling) | .e2eStale = {"type": "string"}))' \
		>"$E2E_TMP/old.json"
kc replace -f "$E2E_TMP/old.json" >/dev/null 2>&1 || kc create -f "$E2E_TMP/old.json" >/dev/null
kc label crd "$CRD" e2e.gpuop.dev/keep=yes >/dev/null
KUBECONFIG=$LAB_DIR/kubeconfig PATH=$LAB_DIR/bin:$PATH "$GPUOP_SRC/test/lab/wait-crd" "$CRD"
! has_field nodeLabeling || fail "the old CRD still has nodeLabeling"
has_field e2eStale || fail "the old CRD lacks e2eStale"
# What an old CRD does to a new field: the API server drops it (waited
# for: the schema change reaches the API server's handler shortly after).
policy() {
	kc apply --validate=false -f - >/dev/null <<EOF
apiVersion: gpuop.dev/v1alpha1
kind: GpuPolicy
metadata: {name: $POLICY}
spec:
  nodeLabeling: {enabled: true}
EOF
}
labeling() { kc get gpupolicy "$POLICY" -o json | jq -r '.spec.nodeLabeling.enabled // "pruned"'; }
pruned() { policy && [[ $(labeling) == pruned ]]; }
wait_for 60 pruned

log "the hook replaces it"
out=$(hook "${args[@]}") || fail "gpuop upgrade-crd failed: $out"
assert_eq "customresourcedefinition/$CRD replaced" "$out" "upgrade-crd's report"
has_field nodeLabeling || fail "nodeLabeling is not back in the CRD"
! has_field e2eStale || fail "e2eStale, which the chart's CRD lacks, is still there"
assert_eq yes "$(kc get crd "$CRD" -o jsonpath='{.metadata.labels.e2e\.gpuop\.dev/keep}')" "label kept"
kept() { policy && [[ $(labeling) == true ]]; }
wait_for 60 kept
log "spec.nodeLabeling kept in a GpuPolicy after the upgrade"

out=$(hook "${args[@]}") || fail "gpuop upgrade-crd (again) failed: $out"
assert_eq "customresourcedefinition/$CRD unchanged" "$out" "upgrade-crd again"

log "no other CRD: refused"
kc create --dry-run=client -o json -f "$GPUOP_SRC/crd/gpupolicy.yaml" |
	jq '.metadata.name = "gpuopdummies.gpuop.dev" | .spec.names = {plural: "gpuopdummies", singular: "gpuopdummy", kind: "GpuopDummy", listKind: "GpuopDummyList"}' \
		>"$E2E_TMP/other.json"
if out=$(hook upgrade-crd --filename="$E2E_TMP/other.json" --timeout=20s 2>&1); then
	kc delete crd gpuopdummies.gpuop.dev --ignore-not-found >/dev/null
	fail "the hook's account created another CRD: $out"
fi
grep -qi forbidden <<<"$out" || fail "another CRD: not refused as forbidden: $out"
for verb in list watch delete deletecollection; do
	assert_eq no "$(kc auth can-i "$verb" "customresourcedefinitions/$CRD" --as="system:serviceaccount:$NS:$SA" 2>/dev/null || true)" "can-i $verb"
done
assert_eq no "$(kc auth can-i update customresourcedefinitions/other.example.com --as="system:serviceaccount:$NS:$SA" 2>/dev/null || true)" \
	"can-i update another CRD"

log "no CRD at all: the hook creates it, by name"
kc delete gpupolicy "$POLICY" --ignore-not-found >/dev/null
kc delete crd "$CRD" --wait=true --timeout=120s >/dev/null
out=$(hook "${args[@]}") || fail "gpuop upgrade-crd (create) failed: $out"
assert_eq "customresourcedefinition/$CRD created" "$out" "upgrade-crd on a cluster without the CRD"
assert_eq True "$(kc get crd "$CRD" -o jsonpath='{.status.conditions[?(@.type=="Established")].status}')" \
	"Established when upgrade-crd returns"
has_field nodeLabeling || fail "the created CRD lacks nodeLabeling"
wait_for 60 kept
kc delete gpupolicy "$POLICY" >/dev/null

# ---- helm upgrade from an older chart: the hook adds the field -------------
# The older chart: this one without the hook, its CRD without nodeLabeling
# (and its values not setting it). The plain lab has no Job controller and
# no kubelet: fake_job does their part for the hook's Job, running the
# Job's command from its own spec as its pod would (ServiceAccount,
# ConfigMap), then marking it Complete, which helm upgrade waits for.
log "helm install of an older chart (its CRD lacks nodeLabeling), then helm upgrade to this one"
OLD=$E2E_TMP/old-chart
cp -r "$CHART" "$OLD"
rm "$OLD/templates/upgrade-crd.yaml"
cp "$E2E_TMP/old.json" "$OLD/crds/gpupolicy.yaml"
sed -i -e 's/^version: .*/version: 0.0.1/' "$OLD/Chart.yaml"
kc delete crd "$CRD" --wait=true --timeout=120s >/dev/null
on_exit '"$HELM" uninstall gpuop-crd -n "$NS" --timeout 60s >/dev/null 2>&1'
# the release's GpuPolicy gone before the next test, whose own must be the
# only one (the oldest is the active one)
on_exit 'kc delete gpupolicy default --ignore-not-found --wait=true --timeout=60s >/dev/null 2>&1'
# What other tests applied by hand (deploy/10-rbac.yaml's cluster-wide
# names): the release takes them over, and they are put back after it is
# uninstalled (the clean-ups run in the order they were added).
if kc get clusterrole gpuop >/dev/null 2>&1; then
	on_exit 'kc apply -f "$GPUOP_SRC/deploy/00-namespace.yaml" -f "$GPUOP_SRC/deploy/10-rbac.yaml" >/dev/null 2>&1'
fi
# (no uninstall hook: its Job needs a real node, e2e/60_real_node runs it)
"$HELM" install gpuop-crd "$OLD" -n "$NS" --set nodeLabeling=null --set releaseOnUninstall.enabled=false \
	--take-ownership --timeout 120s \
	>"$E2E_TMP/helm-install.out" 2>&1 || fail "helm install of the older chart: $(cat "$E2E_TMP/helm-install.out")"
! has_field nodeLabeling || fail "the older chart installed a CRD with nodeLabeling"

spawn fake_job env NS="$NS" LAB_DIR="$LAB_DIR" E2E_TMP="$E2E_TMP" LAB_CA="$LAB_CA" LAB_API_HOST="$LAB_API_HOST" \
	LAB_API_PORT="$LAB_API_PORT" GPUOP_BIN="$GPUOP_BIN" bash "$GPUOP_SRC/test/e2e/fake_job.bash"
# --reset-values: this chart's defaults (set nodeLabeling), not the
# install's values, which helm upgrade would reuse when given none.
"$HELM" upgrade gpuop-crd "$CHART" -n "$NS" --reset-values --set releaseOnUninstall.enabled=false --take-ownership --timeout 120s >"$E2E_TMP/helm-upgrade.out" 2>&1 ||
	fail "helm upgrade: $(cat "$E2E_TMP/helm-upgrade.out")"
grep -qx "customresourcedefinition/$CRD replaced" "$E2E_TMP/fake_job.log" ||
	fail "the hook's Job did not replace the CRD: $(cat "$E2E_TMP/fake_job.log")"
has_field nodeLabeling || fail "helm upgrade left the CRD without nodeLabeling"
assert_eq true "$(kc get gpupolicy default -o jsonpath='{.spec.nodeLabeling.enabled}')" \
	"the release's GpuPolicy has spec.nodeLabeling after helm upgrade"
# hook-succeeded: the hook's objects go
gone() {
	[[ -z $(kc get clusterrole,clusterrolebinding gpuop-upgrade-crd -o name --ignore-not-found) &&
		-z $(kc -n "$NS" get job,configmap,serviceaccount gpuop-upgrade-crd -o name --ignore-not-found) ]]
}
wait_for 60 gone
log "PASS"
