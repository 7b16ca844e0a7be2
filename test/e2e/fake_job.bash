# shellcheck shell=bash
# test/e2e/fake_job.bash - the Job controller and kubelet the plain lab
# lacks, for the chart's CRD upgrade hook only (58_upgrade_crd): waits for
# the Job gpuop-upgrade-crd in $NS, runs its container's command as its pod
# would (gpuop in-cluster with the Job's ServiceAccount's token, its
# ConfigMap's key written where the Job mounts it), then marks the Job
# Complete (helm waits for that) when the command succeeded, Failed when
# not. Environment: NS, LAB_DIR, E2E_TMP, LAB_CA, LAB_API_HOST,
# LAB_API_PORT, GPUOP_BIN.
set -euo pipefail
JOB=gpuop-upgrade-crd
WAIT_S=120
kc() { "$LAB_DIR/bin/kubectl" --kubeconfig "$LAB_DIR/kubeconfig" "$@"; }

deadline=$((SECONDS + WAIT_S))
until kc -n "$NS" get job "$JOB" -o json >"$E2E_TMP/job.json" 2>/dev/null; do
	((SECONDS < deadline)) || {
		echo "fake_job: no Job $JOB after ${WAIT_S}s"
		exit 1
	}
	sleep 0.5
done
spec='.spec.template.spec'
sa=$(jq -r "$spec.serviceAccountName" "$E2E_TMP/job.json")
cm=$(jq -r "$spec.volumes[0].configMap.name" "$E2E_TMP/job.json")
mount=$(jq -r "$spec.containers[0].volumeMounts[0].mountPath" "$E2E_TMP/job.json")
mapfile -t args < <(jq -r "$spec.containers[0].args[]" "$E2E_TMP/job.json")
dir=$E2E_TMP/fake-job
mkdir -p "$dir/mount" "$dir/sa"
kc -n "$NS" get configmap "$cm" -o json | jq -j '.data | to_entries[0].value' >"$dir/mount/$(
	kc -n "$NS" get configmap "$cm" -o json | jq -r '.data | keys[0]'
)"
kc -n "$NS" create token "$sa" --duration=1h >"$dir/sa/token"
cp "$LAB_CA" "$dir/sa/ca.crt"
printf '%s' "$NS" >"$dir/sa/namespace"
rc=0
env -u KUBECONFIG KUBERNETES_SERVICE_HOST="$LAB_API_HOST" KUBERNETES_SERVICE_PORT="$LAB_API_PORT" \
	GPUOP_SA_DIR="$dir/sa" "$GPUOP_BIN" "${args[@]/#--filename=$mount/--filename=$dir/mount}" || rc=$?
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
if ((rc == 0)); then
	status=$(jq -n --arg t "$now" '{status: {startTime: $t, completionTime: $t, succeeded: 1,
		conditions: [{type: "SuccessCriteriaMet", status: "True", lastTransitionTime: $t, lastProbeTime: $t},
			{type: "Complete", status: "True", lastTransitionTime: $t, lastProbeTime: $t}]}}')
else
	status=$(jq -n --arg t "$now" '{status: {startTime: $t, failed: 1,
		conditions: [{type: "FailureTarget", status: "True", lastTransitionTime: $t, lastProbeTime: $t},
			{type: "Failed", status: "True", lastTransitionTime: $t, lastProbeTime: $t}]}}')
fi
kc -n "$NS" patch job "$JOB" --subresource=status --type=merge -p "$status" >/dev/null
echo "fake_job: exit $rc"
exit "$rc"
