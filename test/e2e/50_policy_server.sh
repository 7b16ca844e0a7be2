#!/usr/bin/env bash
# End-to-end: gpuop's policy validation and the API server agree (issue 13
# section 2). For each value the API server (or the kubelet) refuses or
# silently changes:
#   - `gpuop render` of a policy holding it warns naming the policy's field,
#     and the API server accepts every DaemonSet rendered from that policy
#     (server-side apply, dry run, gpuop's field manager);
#   - the control: the same value put straight into the rendered DaemonSet
#     is refused by the API server, or stored as something else (or, for
#     images, accepted: only the kubelet would refuse it, which is why gpuop
#     checks it);
#   - values the server accepts that look odd (env names like "my.var",
#     quantities like "1e3") pass gpuop untouched.
# Then one policy with several such values, MIG Manager enabled, applied to a
# running gpuop: every enabled DaemonSet exists, status says InvalidSpec
# naming the fields. (An env name like ünï the CRD's schema already refuses
# at kubectl apply, also checked.)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
on_exit 'gpuop_kill; gpuop_uninstall'

gpuop_install
NS=$GPUOP_NS

# render_policy SPEC_JSON: renders a policy with that spec (MIG Manager
# enabled too, so its template is checked as well); YAML in $E2E_TMP/out.yaml,
# warnings in $E2E_TMP/err.txt.
render_policy() {
	# through stdin: the spec may be larger than an argument may be
	jq '{apiVersion: "gpuop.dev/v1alpha1", kind: "GpuPolicy", metadata: {name: "probe"},
		spec: ({migManager: {enabled: true}} * .)}' <<<"$1" >"$E2E_TMP/policy.json"
	# --os: the driver is one DaemonSet per OS pool (SPEC 4b)
	"$GPUOP_BIN" render -f "$E2E_TMP/policy.json" -n "$NS" --os ubuntu24.04 >"$E2E_TMP/out.yaml" 2>"$E2E_TMP/err.txt" ||
		fail "gpuop render failed: $(cat "$E2E_TMP/err.txt")"
}

# server_accepts FILE: the API server takes every object of FILE as gpuop sends it.
server_accepts() {
	kc apply --server-side --field-manager=gpuop --dry-run=server -f "$1" >/dev/null 2>"$E2E_TMP/apply.txt"
}

# control DS JQ: the DaemonSet DS of the render, with JQ applied, into $E2E_TMP/raw.json
control() {
	kc create --dry-run=client -o json -f "$E2E_TMP/out.yaml" |
		jq -s --arg ds "$1" '[.[] | if .kind == "List" then .items[] else . end | select(.metadata.name == $ds)][0]' |
		jq --slurpfile ann "$E2E_TMP/ann.json" "$2" >"$E2E_TMP/raw.json"
}

n=0
echo '{}' >"$E2E_TMP/ann.json"
# check NAME SPEC_JSON FIELD DS JQ_INJECT EXPECT [STORED_JQ]
#   EXPECT: refused | changed (STORED_JQ reads the value back; it must differ
#   from what was sent) | kubelet (the server takes it as it is)
check() {
	local name=$1 spec=$2 field=$3 ds=$4 inject=$5 expect=$6 stored=${7:-}
	n=$((n + 1))
	render_policy "$spec"
	grep -qF "warning: $field: " "$E2E_TMP/err.txt" ||
		fail "$name: no warning naming $field; render said: $(cat "$E2E_TMP/err.txt")"
	server_accepts "$E2E_TMP/out.yaml" ||
		fail "$name: the API server refused what gpuop rendered: $(cat "$E2E_TMP/apply.txt")"
	control "$ds" "$inject"
	case $expect in
	refused)
		if server_accepts "$E2E_TMP/raw.json"; then
			fail "$name: control: the API server accepts the raw value, gpuop's rule is wrong"
		fi
		;;
	changed)
		local out sent got
		out=$(kc apply --server-side --field-manager=gpuop --dry-run=server -o json -f "$E2E_TMP/raw.json")
		sent=$(jq -r "$stored" "$E2E_TMP/raw.json")
		got=$(jq -r "$stored" <<<"$out")
		[ "$sent" != "$got" ] || fail "$name: control: the API server keeps $sent as it is"
		log "  $name: the API server would store \"$sent\" as \"$got\""
		;;
	kubelet)
		server_accepts "$E2E_TMP/raw.json" ||
			fail "$name: control: expected the API server to take it: $(cat "$E2E_TMP/apply.txt")"
		;;
	esac
}

C='.spec.template.spec.containers[0]'
log "values the API server refuses or changes: gpuop names the field, the server takes the rest"
check "env name ünï" \
	'{"devicePlugin": {"env": [{"name": "A"}, {"name": "B"}, {"name": "C"}, {"name": "ünï"}]}}' \
	"spec.devicePlugin.env[3].name" gpuop-device-plugin "$C.env += [{name: \"ünï\", value: \"\"}]" refused
check "env name BEL" '{"gfd": {"env": [{"name": "A\u0007B"}]}}' "spec.gfd.env[0].name" \
	gpuop-gpu-feature-discovery "$C.env += [{name: \"A\u0007B\", value: \"\"}]" refused
check "env name U+202E" '{"migManager": {"env": [{"name": "A\u202eB"}]}}' "spec.migManager.env[0].name" \
	gpuop-mig-manager "$C.env += [{name: \"A\u202eB\", value: \"\"}]" refused
check "request above limit" '{"toolkit": {"resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "8"}}}}' \
	"spec.toolkit.resources.requests.cpu" gpuop-container-toolkit \
	"$C.resources = {limits: {cpu: \"1\"}, requests: {cpu: \"8\"}}" refused
check "memory request above limit" \
	'{"driver": {"resources": {"limits": {"memory": "1000M"}, "requests": {"memory": "1Gi"}}}}' \
	"spec.driver.resources.requests.memory" gpuop-driver-ubuntu24.04 \
	"$C.resources = {limits: {memory: \"1000M\"}, requests: {memory: \"1Gi\"}}" refused
check "GPU request without limit" '{"dcgmExporter": {"resources": {"requests": {"nvidia.com/gpu": "1"}}}}' \
	"spec.dcgmExporter.resources.requests.nvidia.com/gpu" gpuop-dcgm-exporter \
	"$C.resources = {requests: {\"nvidia.com/gpu\": \"1\"}}" refused
check "GPU request not equal to limit" \
	'{"dcgmExporter": {"resources": {"limits": {"nvidia.com/gpu": 2}, "requests": {"nvidia.com/gpu": 1}}}}' \
	"spec.dcgmExporter.resources.requests.nvidia.com/gpu" gpuop-dcgm-exporter \
	"$C.resources = {limits: {\"nvidia.com/gpu\": \"2\"}, requests: {\"nvidia.com/gpu\": \"1\"}}" refused
check "fractional GPU" '{"validator": {"resources": {"limits": {"nvidia.com/gpu": "500m"}}}}' \
	"spec.validator.resources.limits.nvidia.com/gpu" gpuop-operator-validator \
	"$C.resources = {limits: {\"nvidia.com/gpu\": \"500m\"}}" refused
check "unknown resource" '{"validator": {"resources": {"limits": {"foo": "1"}}}}' \
	"spec.validator.resources.limits.foo" gpuop-operator-validator "$C.resources = {limits: {foo: \"1\"}}" refused
check "hugepages alone" '{"driver": {"resources": {"limits": {"hugepages-2Mi": "2Mi"}}}}' \
	"spec.driver.resources.limits.hugepages-2Mi" gpuop-driver-ubuntu24.04 \
	"$C.resources = {limits: {\"hugepages-2Mi\": \"2Mi\"}}" refused
check "hugepages not a multiple" \
	'{"driver": {"resources": {"limits": {"hugepages-2Mi": "1Mi", "memory": "1Gi"}}}}' \
	"spec.driver.resources.limits.hugepages-2Mi" gpuop-driver-ubuntu24.04 \
	"$C.resources = {limits: {\"hugepages-2Mi\": \"1Mi\", memory: \"1Gi\"}}" refused
check "1e1000 GPUs" '{"devicePlugin": {"resources": {"limits": {"nvidia.com/gpu": "1e1000"}}}}' \
	"spec.devicePlugin.resources.limits.nvidia.com/gpu" gpuop-device-plugin \
	"$C.resources = {limits: {\"nvidia.com/gpu\": \"1e1000\"}}" changed "$C.resources.limits[\"nvidia.com/gpu\"]"
check "quantity 99999999999999999999Ei" '{"toolkit": {"resources": {"limits": {"memory": "99999999999999999999Ei"}}}}' \
	"spec.toolkit.resources.limits.memory" gpuop-container-toolkit \
	"$C.resources = {limits: {memory: \"99999999999999999999Ei\"}}" changed "$C.resources.limits.memory"
check "quantity 0.000000001n" '{"gfd": {"resources": {"requests": {"cpu": "0.000000001n"}}}}' \
	"spec.gfd.resources.requests.cpu" gpuop-gpu-feature-discovery \
	"$C.resources = {requests: {cpu: \"0.000000001n\"}}" changed "$C.resources.requests.cpu"
check "quantity 1e1000" '{"gfd": {"resources": {"limits": {"cpu": "1e1000"}}}}' \
	"spec.gfd.resources.limits.cpu" gpuop-gpu-feature-discovery \
	"$C.resources = {limits: {cpu: \"1e1000\"}}" changed "$C.resources.limits.cpu"
check "image UPPER/Case@@sha256:zz" '{"toolkit": {"image": "UPPER/Case@@sha256:zz"}}' \
	"spec.toolkit.image" gpuop-container-toolkit "$C.image = \"UPPER/Case@@sha256:zz\"" kubelet
# 10 annotations of 30,000 bytes: 300,000 bytes, more than the server's 262,144
big=$(head -c 30000 /dev/zero | tr '\0' a)
jq -R '[range(10) as $i | {key: "note-\($i)", value: .}] | from_entries' <<<"$big" >"$E2E_TMP/ann.json"
check "annotations over 256 KiB" "{\"daemonsets\": {\"annotations\": $(cat "$E2E_TMP/ann.json")}}" \
	"spec.daemonsets.annotations.note-8" gpuop-driver-ubuntu24.04 \
	'.metadata.annotations = $ann[0] | .spec.template.metadata.annotations = $ann[0]' refused
log "  $n values: each named by its field, every rendered DaemonSet accepted"

log "what the API server accepts stays accepted"
render_policy '{"toolkit": {"env": [{"name": "my.var"}, {"name": "1ABC"}, {"name": "A B"}],
	"resources": {"limits": {"cpu": "1e3", "memory": "1.5Gi", "nvidia.com/gpu": 1},
	"requests": {"cpu": ".5", "memory": "1Gi", "nvidia.com/gpu": "1"}},
	"image": "Registry.Example.COM:5000/team/a_b__c-d.e:TAG_1"}}'
[ ! -s "$E2E_TMP/err.txt" ] || fail "gpuop refused what the server takes: $(cat "$E2E_TMP/err.txt")"
server_accepts "$E2E_TMP/out.yaml" || fail "the API server refused: $(cat "$E2E_TMP/apply.txt")"

log "a running gpuop applies a policy with refused values: every DaemonSet exists, status names the fields"
gpuop_start --leader-elect=false --metrics-addr=0 --health-addr=0
# the CRD's schema refuses an env name the API server would (kubectl says so
# at once); gpuop's own check is for a CRD installed without the schema
if kc apply --dry-run=server -f - >/dev/null 2>"$E2E_TMP/crd.txt" <<EOF; then
apiVersion: gpuop.dev/v1alpha1
kind: GpuPolicy
metadata:
  name: refused-env
spec:
  devicePlugin:
    env: [{name: "ünï"}]
EOF
	fail "the CRD accepts env name ünï"
fi
grep -qF 'spec.devicePlugin.env[0].name' "$E2E_TMP/crd.txt" || fail "the CRD's refusal does not name the field: $(cat "$E2E_TMP/crd.txt")"
kc apply -f - >/dev/null <<EOF
apiVersion: gpuop.dev/v1alpha1
kind: GpuPolicy
metadata:
  name: refused-values
spec:
  driver:
    image: nvcr.io/nvidia/driver:595.91.07-ubuntu24.04  # one gpuop-driver: no node here has an OS pool
  devicePlugin:
    resources: {limits: {nvidia.com/gpu: "500m"}}
  toolkit:
    image: "UPPER/Case@@sha256:zz"
    resources: {limits: {cpu: "1"}, requests: {cpu: "8"}}
  gfd:
    resources: {requests: {cpu: "0.000000001n"}}
  migManager:
    enabled: true
EOF
for op in driver container-toolkit device-plugin gpu-feature-discovery dcgm-exporter operator-validator mig-manager; do
	wait_for 60 kc -n "$NS" get ds "gpuop-$op"
done
wait_for 60 bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' get gpupolicy refused-values -o jsonpath='{.status.conditions[?(@.type==\"Reconciled\")].reason}')\" = InvalidSpec ]"
msg=$(gp_cond refused-values Reconciled message)
# the API server sends spec keys sorted: devicePlugin's problem comes first
grep -qF "spec.devicePlugin.resources.limits.nvidia.com/gpu" <<<"$msg" || fail "Reconciled message does not name the field: $msg"
for f in spec.devicePlugin.resources.limits.nvidia.com/gpu spec.toolkit.image spec.toolkit.resources.requests.cpu spec.gfd.resources.requests.cpu; do
	wait_for 30 grep -qF "invalid $f:" "$GPUOP_LOG" || fail "the log does not name $f"
done
assert_eq "1" "$(kc -n "$NS" get ds gpuop-container-toolkit -o json | jq -r "$C.resources.limits.cpu")" "toolkit limit kept"
# (pods get the limit as their request from the API server's defaulting)
assert_eq "null" "$(kc -n "$NS" get ds gpuop-container-toolkit -o json | jq -r "$C.resources.requests.cpu")" "refused request left out"
gpuop_uninstall
gpuop_stop
log "ok"
