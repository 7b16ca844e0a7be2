# shellcheck shell=bash
# Helpers for e2e tests that run gpuop against the lab. Sourced after
# lib.sh. GPUOP_BIN and GPUOP_SRC come from CTest.

GPUOP_BIN=${GPUOP_BIN:-$GPUOP_SRC/build/gpuop}
GPUOP_NS=gpuop-system
GPUOP_PID=

# Installs the CRD, the namespace and the service accounts from deploy/.
gpuop_install() {
	kc apply -f "$GPUOP_SRC/crd/" >/dev/null
	KUBECONFIG=$LAB_DIR/kubeconfig PATH=$LAB_DIR/bin:$PATH "$GPUOP_SRC/test/lab/wait-crd" gpupolicies.gpuop.dev
	kc apply -f "$GPUOP_SRC/deploy/00-namespace.yaml" -f "$GPUOP_SRC/deploy/10-rbac.yaml" >/dev/null
	wait_for 30 kc -n "$GPUOP_NS" get serviceaccount default
}

# Starts gpuop run in the background; its log goes to $GPUOP_LOG (default:
# in the test's $E2E_TMP, removed on exit; its tail is shown on failure).
gpuop_start() {
	GPUOP_LOG=${GPUOP_LOG:-$E2E_TMP/gpuop.log}
	log "gpuop log: $GPUOP_LOG"
	# No fixed port unless the test names one: another gpuop on this
	# machine (a developer's, a second lab's) may hold 8080/8081.
	local extra=()
	[[ " $* " == *" --metrics-addr"* ]] || extra+=(--metrics-addr 0)
	[[ " $* " == *" --health-addr"* ]] || extra+=(--health-addr 0)
	"$GPUOP_BIN" run --kubeconfig "$KUBECONFIG" --namespace "$GPUOP_NS" --log-level debug \
		"${extra[@]}" "$@" >>"$GPUOP_LOG" 2>&1 &
	GPUOP_PID=$!
}

# Stops gpuop with SIGTERM and fails unless it exits 0 (ASan reports leaks
# and errors through the exit code).
gpuop_stop() {
	[ -n "$GPUOP_PID" ] || return 0
	kill -TERM "$GPUOP_PID" 2>/dev/null || true
	local rc=0
	wait "$GPUOP_PID" || rc=$?
	GPUOP_PID=
	if [ "$rc" -ne 0 ]; then
		tail -n 60 "$GPUOP_LOG" >&2
		fail "gpuop exited with status $rc at shutdown"
	fi
	# The test build has the verify oracle compiled in (GPUOP_VERIFY): every
	# reconcile's node records, and the driver upgrade's quiet plan
	# kept node by node, are compared with a full pass, and a difference
	# fails the test: each test is also a test of both on a real cluster's
	# events.
	grep -qF 'the verify oracle is on' "$GPUOP_LOG" ||
		fail "gpuop ran without the verify oracle: build it with -DGPUOP_VERIFY=ON"
	if grep -F -e 'node records differ from a full pass' \
		-e 'upgrade plan kept node by node differs from a full plan' "$GPUOP_LOG" >&2; then
		fail "gpuop's node records or upgrade plan differed from a full one (above)"
	fi
}

# Kills gpuop (cleanup path), without judging its exit.
gpuop_kill() {
	[ -n "$GPUOP_PID" ] && kill -KILL "$GPUOP_PID" 2>/dev/null
	GPUOP_PID=
	return 0
}

# gpuop_sample [ARGS...]: gpuop_install, gpuop_start ARGS, and
# deploy/sample-gpupolicy.yaml applied; the policy's name in POLICY.
gpuop_sample() {
	gpuop_install
	gpuop_start "$@"
	kc apply -f "$GPUOP_SRC/deploy/sample-gpupolicy.yaml" >/dev/null
	POLICY=$(kc get gpupolicies -o jsonpath='{.items[0].metadata.name}')
}

# gpuop_unfinalize [NAME...]: removes gpuop's finalizer gpuop.dev/dra-driver
# from GpuPolicy NAME (every GpuPolicy without one), as docs/operations.md
# ("DRA driver") says to by hand once gpuop is gone: the test index and
# value keep another finalizer safe.
gpuop_unfinalize() {
	local p i names=("$@")
	((${#names[@]})) || mapfile -t names < <(kc get gpupolicies -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' 2>/dev/null)
	for p in "${names[@]}"; do
		i=$(kc get gpupolicy "$p" -o json 2>/dev/null | jq '.metadata.finalizers // [] | index("gpuop.dev/dra-driver")') || continue
		[[ $i =~ ^[0-9]+$ ]] || continue
		kc patch gpupolicy "$p" --type=json -p \
			"[{\"op\":\"test\",\"path\":\"/metadata/finalizers/$i\",\"value\":\"gpuop.dev/dra-driver\"},{\"op\":\"remove\",\"path\":\"/metadata/finalizers/$i\"}]" >/dev/null 2>&1 || true
	done
}

# Removes every GpuPolicy and waits until the operand DaemonSets are gone.
# gpuop may be gone already (killed first): its finalizer is removed by
# hand after the delete (a running gpuop adds none to a policy being
# deleted).
gpuop_uninstall() {
	kc delete gpupolicies --all --wait=false >/dev/null 2>&1 || true
	gpuop_unfinalize
	wait_for 60 bash -c "[ -z \"\$(kubectl --kubeconfig '$KUBECONFIG' get gpupolicies -o name 2>/dev/null)\" ]" || true
	wait_for 60 bash -c "[ -z \"\$(kubectl --kubeconfig '$KUBECONFIG' -n $GPUOP_NS get ds -o name 2>/dev/null)\" ]" || true
}

# chain_policy NAME [SPEC_LINE...]: applies GpuPolicy NAME with only the
# chain the findings are about enabled (driver, container-toolkit, device
# plugin; the others off), plus each SPEC_LINE under spec ("ordering:
# enforce", "findings: {advertiseGracePeriodSeconds: 10}").
chain_policy() {
	local name=$1 line
	shift
	{
		printf 'apiVersion: gpuop.dev/v1alpha1\nkind: GpuPolicy\nmetadata: {name: %s}\nspec:\n' "$name"
		for line in "$@"; do printf '  %s\n' "$line"; done
		printf '  gfd: {enabled: false}\n  dcgmExporter: {enabled: false}\n  validator: {enabled: false}\n'
	} | kc apply -f - >/dev/null
}

# jq over one GpuPolicy: gp_jq NAME FILTER
gp_jq() {
	kc get gpupolicy "$1" -o json | jq -r "$2"
}

# Condition field: gp_cond NAME TYPE FIELD (status, reason, message)
gp_cond() {
	gp_jq "$1" ".status.conditions // [] | map(select(.type == \"$2\")) | .[0].$3 // \"\""
}

# driver_image_on NODE: the image of the driver pod bound to NODE ("" when
# none, a pod being deleted not counted); driver_image_is NODE IMAGE.
driver_image_on() {
	kc -n "$GPUOP_NS" get pods -l app.kubernetes.io/component=driver -o json |
		jq -r --arg n "$1" '[.items[] | select(.spec.nodeName == $n and .metadata.deletionTimestamp == null)
			| .spec.containers[0].image] | .[0] // ""'
}
driver_image_is() { [ "$(driver_image_on "$1")" = "$2" ]; }
