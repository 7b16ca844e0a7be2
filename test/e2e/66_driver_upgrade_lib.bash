# shellcheck shell=bash
# test/e2e/66_driver_upgrade_lib.bash — shared by the driver-upgrade e2e
# tests (66_driver_upgrade*.sh, issue 22, docs/upgrade.md); sourced after
# lib.sh and gpuop.sh. (Not *.sh: CTest's e2e glob would make it a test.)
#
#   up_begin NS_PREFIX PREFIX N  no other GPU node left, gpuop's CRD and
#                             RBAC installed, a workload namespace in $WL,
#                             N GPU nodes $P-1..N ($P unique from PREFIX)
#   up_go NAME VERSION UPGRADE_POLICY_JSON N
#                             the policy (up_policy), gpuop started, every
#                             driver of $P-1..N Ready at VERSION
#   up_controllers            the controller manager runs the disruption,
#                             deployment and replicaset controllers (PDBs
#                             and Deployments work; see below)
#   up_nodes PREFIX N         N kwok GPU nodes PREFIX-1..N (8 GPUs each, the
#                             chain's deploy labels, label upgrade-e2e=PREFIX)
#   up_policy NAME VERSION UPGRADE_POLICY_JSON
#                             applies the GpuPolicy (driver, toolkit, device
#                             plugin, validator; the driver's upgradePolicy)
#   up_workload NS PREFIX N GPUS
#                             a Deployment of N pods requesting GPUS each on
#                             the nodes, placed by the scheduler, and a PDB
#                             (maxUnavailable 1)
#   up_job NS NAME NODE LABEL a GPU job pod (1 nvidia.com/gpu, restartPolicy
#                             Never) on NODE, labelled LABEL=true (what
#                             waitForCompletion.podSelector selects)
#   up_record NAME            starts the timeline recorder into
#                             $E2E_TMP/NAME.jsonl, returns once it has
#                             listed everything
#   up_check NAME ARGS...     stops it, checks the invariants over the whole
#                             timeline (upgrade_check.py ARGS), fails with
#                             the violations and their excerpts
#                             (UP_KEEP_DIR=DIR keeps the timelines there)
#   up_state NODE             the node's upgrade state label
#   up_driver NODE            "IMAGE READY" of the node's driver pod
#   up_at NODE VERSION        true if the node's driver pod is Ready at VERSION
#   up_all_at PREFIX N VERSION  true if every node's driver is Ready at VERSION
#   up_status FILTER          jq over the policy's status.upgrade

UP_STATE=nvidia.com/gpu-driver-upgrade-state
UP_CORDONED=gpuop.dev/driver-upgrade-cordoned
UP_FAILED=gpuop.dev/driver-upgrade-failed
UP_POLICY=
UP_DRIVER_REPO=nvcr.io/nvidia

# The lab runs only the controllers gpuop's tests needed so far
# (test/lab/up). A PodDisruptionBudget needs the disruption controller:
# without it the Eviction API answers every eviction under a PDB with 429
# ("the disruption budget is still being processed"); a Deployment that
# puts evicted pods back needs the deployment and replicaset controllers.
# Adds them to the controller manager's flags and restarts it once (the
# flags stay for later tests; test/bench/run restarts it the same way).
up_controllers() {
	local args=$LAB_DIR/run/kube-controller-manager.args want=(disruption-controller deployment-controller replicaset-controller) c line missing=()
	line=$(grep '^--controllers=' "$args")
	for c in "${want[@]}"; do
		[[ ,${line#--controllers=}, == *",$c,"* ]] || missing+=("$c")
	done
	((${#missing[@]})) || return 0
	log "adding ${missing[*]} to the lab's controller manager (PDBs, Deployments)"
	local new
	new="$line,$(
		IFS=,
		echo "${missing[*]}"
	)"
	sed -i "s|^--controllers=.*|$new|" "$args"
	(
		# shellcheck source=../lab/common.sh
		source "$GPUOP_SRC/test/lab/common.sh"
		lab_stop kube-controller-manager
		lab_start kube-controller-manager
		port=$(sed -n 's/^--secure-port=//p' "$args")
		lab_wait kube-controller-manager 60 curl -skf --max-time 2 "https://127.0.0.1:$port/healthz"
	)
}

# No GPU node of an earlier test may be left: gpuop counts every GPU node
# (maxUnavailable is a share of them) and the checker counts ours.
up_no_other_gpu_nodes() {
	wait_for 90 bash -c "[ -z \"\$(kubectl --kubeconfig '$KUBECONFIG' get nodes -l nvidia.com/gpu.present=true -o name)\" ]"
}

up_begin() {
	up_no_other_gpu_nodes
	gpuop_install
	make_ns WL "$1"
	P=$(unique "$2")
	up_nodes "$P" "$3"
}

up_go() {
	up_policy "$1" "$2" "$3"
	gpuop_start --leader-elect=false
	wait_for 180 up_all_at "$P" "$4" "$2"
}

up_nodes() {
	local prefix=$1 n=$2 i pids=()
	for ((i = 1; i <= n; i++)); do
		lab_node "$prefix-$i" --capacity nvidia.com/gpu=8 --label "upgrade-e2e=$prefix" \
			--label nvidia.com/gpu.present=true --label nvidia.com/gpu.deploy.driver=true \
			--label nvidia.com/gpu.deploy.container-toolkit=true --label nvidia.com/gpu.deploy.device-plugin=true \
			--label nvidia.com/gpu.deploy.operator-validator=true &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i" || fail "a node did not come up"; done
}

up_policy() {
	UP_POLICY=$1
	kc apply -f - >/dev/null <<EOF
apiVersion: gpuop.dev/v1alpha1
kind: GpuPolicy
metadata: {name: $1}
spec:
  driver:
    repository: $UP_DRIVER_REPO
    image: driver
    version: "$2"
    upgradePolicy: $3
  toolkit: {enabled: true}
  devicePlugin: {enabled: true}
  validator: {enabled: true}
  gfd: {enabled: false}
  dcgmExporter: {enabled: false}
EOF
}

up_workload() {
	local ns=$1 prefix=$2 n=$3 gpus=$4
	kc -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: gpu-work}
spec:
  replicas: $n
  selector: {matchLabels: {app: gpu-work}}
  template:
    metadata: {labels: {app: gpu-work}}
    spec:
      nodeSelector: {upgrade-e2e: $prefix}
      terminationGracePeriodSeconds: 1
      containers:
      - name: train
        image: registry.example/train:1
        resources:
          limits: {nvidia.com/gpu: $gpus}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: gpu-work}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: gpu-work}}
EOF
	wait_for 120 bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' -n $ns get deploy gpu-work -o jsonpath='{.status.readyReplicas}')\" = $n ]"
	wait_for 60 bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' -n $ns get pdb gpu-work -o jsonpath='{.status.disruptionsAllowed}')\" = 1 ]"
}

up_job() {
	kc -n "$1" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $2, labels: {$4: "true"}}
spec:
  nodeSelector: {kubernetes.io/hostname: $3}
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: train
    image: registry.example/train:1
    resources: {limits: {nvidia.com/gpu: 1}}
EOF
}

up_record() {
	local f=$E2E_TMP/$1.jsonl
	# On exit, first of all (before the test's cleanup, which deletes the
	# policy and with it every driver pod), the recorder stops; with
	# UP_KEEP_DIR the timeline is kept there (E2E_TMP goes on exit).
	local keep=:
	[[ -z ${UP_KEEP_DIR:-} ]] || keep="cp '$f' '$UP_KEEP_DIR/$E2E_NAME-$1.jsonl' 2>/dev/null"
	E2E_ON_EXIT=("stop_spawned record-$1; $keep" "${E2E_ON_EXIT[@]}")
	spawn "record-$1" python3 "$GPUOP_SRC/test/e2e/upgrade_timeline.py" --lab-dir "$LAB_DIR" --out "$f"
	wait_for 60 grep -q '"kind": "synced"' "$f"
}

up_check() {
	local name=$1 out rc=0
	shift
	stop_spawned "record-$name"
	out=$(python3 "$GPUOP_SRC/test/e2e/upgrade_check.py" "$E2E_TMP/$name.jsonl" \
		--stats "$E2E_TMP/$name.stats.json" "$@" 2>&1) || rc=$?
	if ((rc != 0)); then
		printf '%s\n' "${out:0:20000}" >&2
		fail "the timeline $name breaks the upgrade's invariants (above)"
	fi
	log "timeline $name: $(tail -n 1 <<<"$out"); $(jq -c '{nodes_done, node_seconds_mean, node_seconds_max, first_start_to_last_done_s}' "$E2E_TMP/$name.stats.json")"
}

up_state() { kc get node "$1" -o json | jq -r --arg k "$UP_STATE" '.metadata.labels[$k] // ""'; }
up_unschedulable() { kc get node "$1" -o jsonpath='{.spec.unschedulable}'; }

up_driver() {
	kc -n "$GPUOP_NS" get pods -l app.kubernetes.io/component=driver -o json |
		jq -r --arg n "$1" '[.items[] | select(.spec.nodeName == $n and .metadata.deletionTimestamp == null)
			| "\(.spec.containers[0].image) \(any(.status.conditions[]?; .type == "Ready" and .status == "True"))"] | .[0] // ""'
}

up_at() {
	local d
	d=$(up_driver "$1")
	[[ $d == "$UP_DRIVER_REPO/driver:$2-"*" true" ]]
}

up_all_at() {
	local i
	for ((i = 1; i <= $2; i++)); do up_at "$1-$i" "$3" || return 1; done
}

up_status() { kc get gpupolicy "$UP_POLICY" -o json | jq -r ".status.upgrade | $1"; }

# up_waiting: what status.upgrade says each node waits for (failure messages)
up_waiting() {
	local s
	s=$(up_status '[.nodes[]? | "\(.name): \(.state): \(.waitingFor)"] | join("; ")' 2>/dev/null) || true
	printf '%s' "${s:0:1500}"
}

# up_states PREFIX N: "node=state ..." for a failure message
up_states() {
	kc get nodes -l "upgrade-e2e=$1" -o json |
		jq -r --arg k "$UP_STATE" '[.items[] | "\(.metadata.name)=\(.metadata.labels[$k] // "-")\(if .spec.unschedulable then "(cordoned)" else "" end)"] | join(" ")'
}

# up_done_from K: nodes $P-K..$P-N are at $NEW and upgrade-done; else
# prints the states and the status's words (for wait_for) and fails.
up_done_from() {
	local i
	for ((i = $1; i <= N; i++)); do
		up_at "$P-$i" "$NEW" && [[ $(up_state "$P-$i") == upgrade-done ]] || {
			echo "$(up_states "$P"); status: $(up_waiting)"
			return 1
		}
	done
}
