#!/usr/bin/env bash
# End-to-end: drift repair (SPEC 4.2, "changes nobody made through the
# policy are put back"; issue 40's two holes).
#   a toleration patched by hand onto a DaemonSet whose policy has none is
#   put back (the render writes the empty list, so the apply owns it); so
#   are args added by hand to a container the policy gives none, and
#   hostPID, hostNetwork or runtimeClassName set where the render has them
#   unset (written false or null);
#   a DaemonSet deleted with --cascade=orphan is re-created every time: ten
#   times in a row (the device plugin's and the per-OS driver's), and twice
#   with the deletion held by a finalizer while gpuop sees it (an object
#   being deleted is not there: gpuop waits for the deletion to complete
#   and re-creates it then).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
on_exit 'gpuop_kill; kc -n "$GPUOP_NS" patch ds gpuop-device-plugin --type=merge -p "{\"metadata\":{\"finalizers\":null}}" >/dev/null 2>&1; gpuop_uninstall'

OS=feature.node.kubernetes.io/system-os_release
POLICY=drift
HOLD=gpuop.dev/e2e-hold
U=$(unique drift-ubuntu)

gpuop_install
gpuop_start --leader-elect=false
# a GPU node of one OS pool: the driver is gpuop-driver-ubuntu24.04
lab_node "$U" --label nvidia.com/gpu.present=true --label "$OS.ID=ubuntu" --label "$OS.VERSION_ID=24.04" \
	--label "$OS.VERSION_ID.major=24" --label "$OS.VERSION_ID.minor=04"
# no tolerations (without the key the default is nvidia.com/gpu Exists)
chain_policy "$POLICY" "daemonsets: {tolerations: []}"
DRIVER=gpuop-driver-ubuntu24.04
for ds in gpuop-device-plugin gpuop-container-toolkit "$DRIVER"; do
	wait_for 60 kc -n "$GPUOP_NS" get ds "$ds"
done

ds_jq() { kc -n "$GPUOP_NS" get ds "$1" -o json | jq -r "$2"; }

log "a toleration patched onto a DaemonSet whose policy has none is put back"
assert_eq "0" "$(ds_jq gpuop-device-plugin '.spec.template.spec.tolerations // [] | length')" "tolerations before"
kc -n "$GPUOP_NS" patch ds gpuop-device-plugin --type=merge \
	-p '{"spec":{"template":{"spec":{"tolerations":[{"key":"hand","operator":"Exists"}]}}}}' >/dev/null
wait_for 90 bash -c "kubectl --kubeconfig '$KUBECONFIG' -n $GPUOP_NS get ds gpuop-device-plugin -o json |
	jq -e '(.spec.template.spec.tolerations // []) == []'"

log "args added by hand to a container the policy gives none are put back"
pre=$(ds_jq gpuop-container-toolkit '.spec.template.spec.containers[0].args // [] | tojson')
kc -n "$GPUOP_NS" patch ds gpuop-container-toolkit --type=json \
	-p '[{"op":"add","path":"/spec/template/spec/containers/0/args","value":["--by-hand"]}]' >/dev/null
wait_for 90 bash -c "kubectl --kubeconfig '$KUBECONFIG' -n $GPUOP_NS get ds gpuop-container-toolkit -o json |
	jq -e --argjson pre '$pre' '(.spec.template.spec.containers[0].args // []) == \$pre'"

log "pod fields set by hand where the render has them unset (hostPID, hostNetwork, runtimeClassName) are put back"
kc -n "$GPUOP_NS" patch ds gpuop-device-plugin --type=merge \
	-p '{"spec":{"template":{"spec":{"hostPID":true,"hostNetwork":true}}}}' >/dev/null
kc -n "$GPUOP_NS" patch ds gpuop-container-toolkit --type=merge \
	-p '{"spec":{"template":{"spec":{"runtimeClassName":"nvidia"}}}}' >/dev/null
wait_for 90 bash -c "kubectl --kubeconfig '$KUBECONFIG' -n $GPUOP_NS get ds gpuop-device-plugin -o json |
	jq -e '(.spec.template.spec.hostPID // false) == false and (.spec.template.spec.hostNetwork // false) == false'"
wait_for 90 bash -c "kubectl --kubeconfig '$KUBECONFIG' -n $GPUOP_NS get ds gpuop-container-toolkit -o json |
	jq -e '.spec.template.spec.runtimeClassName == null'"

uid_of() { kc -n "$GPUOP_NS" get ds "$1" -o jsonpath='{.metadata.uid}' 2>/dev/null || true; }

# recreated DS OLD_UID: DaemonSet DS exists, not being deleted, with a uid
# other than OLD_UID.
recreated() {
	local got
	got=$(kubectl --kubeconfig "$KUBECONFIG" -n "$GPUOP_NS" get ds "$1" -o json) || return 1
	jq -e --arg old "$2" '.metadata.uid != $old and .metadata.deletionTimestamp == null' <<<"$got" >/dev/null
}

log "a DaemonSet deleted with --cascade=orphan is re-created, ten times in a row"
for i in $(seq 1 10); do
	for ds in gpuop-device-plugin "$DRIVER"; do
		old=$(uid_of "$ds")
		[ -n "$old" ] || wait_for 90 kc -n "$GPUOP_NS" get ds "$ds"
		old=$(uid_of "$ds")
		kc -n "$GPUOP_NS" delete ds "$ds" --cascade=orphan --wait=false >/dev/null
		wait_for 90 recreated "$ds" "$old"
	done
done

log "deleted while gpuop looks on (the deletion held by a finalizer): re-created once it completes"
for i in 1 2; do
	old=$(uid_of gpuop-device-plugin)
	kc -n "$GPUOP_NS" patch ds gpuop-device-plugin --type=merge -p "{\"metadata\":{\"finalizers\":[\"$HOLD\"]}}" >/dev/null
	seen=$(grep -c 'daemonset/gpuop-device-plugin: changed' "$GPUOP_LOG" || true)
	kc -n "$GPUOP_NS" delete ds gpuop-device-plugin --cascade=orphan --wait=false >/dev/null
	wait_for 60 bash -c "kubectl --kubeconfig '$KUBECONFIG' -n $GPUOP_NS get ds gpuop-device-plugin -o json |
		jq -e '.metadata.deletionTimestamp != null and (.metadata.finalizers | index(\"orphan\") | not)'"
	# gpuop has seen the object being deleted (its deletionTimestamp)
	wait_for 60 bash -c "[ \$(grep -c 'daemonset/gpuop-device-plugin: changed' '$GPUOP_LOG') -gt $seen ]"
	kc -n "$GPUOP_NS" patch ds gpuop-device-plugin --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null
	wait_for 90 recreated gpuop-device-plugin "$old"
done

gpuop_uninstall
gpuop_stop
log "ok"
