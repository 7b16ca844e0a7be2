#!/usr/bin/env bash
# End-to-end: `gpuop run` under valgrind against the lab. A policy applied,
# a GPU node added and relabelled, then SIGTERM: the process must exit 0
# with no error and no leak ("All heap blocks were freed"). Uses the
# unsanitized binary from build-vg (valgrind cannot run an ASan binary).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"
on_exit 'gpuop_kill; gpuop_uninstall'

VG_BIN=${GPUOP_VG_BIN:-$GPUOP_SRC/build-vg/gpuop}
[ -x "$VG_BIN" ] || fail "no unsanitized gpuop at $VG_BIN (scripts/test builds it in build-vg)"
command -v valgrind >/dev/null || fail "valgrind is not installed (scripts/deps installs it)"

N=$(unique vg-node)
gpuop_install
GPUOP_LOG=$E2E_TMP/gpuop-valgrind.log
log "gpuop under valgrind, log: $GPUOP_LOG"
valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=99 \
	"$VG_BIN" run --kubeconfig "$KUBECONFIG" --namespace "$GPUOP_NS" --metrics-addr 127.0.0.1:0 \
	--health-addr 127.0.0.1:0 >"$GPUOP_LOG" 2>&1 &
GPUOP_PID=$!

kc apply -f "$GPUOP_SRC/deploy/sample-gpupolicy.yaml" >/dev/null
POLICY=$(kc get gpupolicies -o jsonpath='{.items[0].metadata.name}')
lab_node "$N" --label nvidia.com/gpu.present=true --label nvidia.com/gpu.deploy.driver=true
wait_for 120 bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' get gpupolicy '$POLICY' -o jsonpath='{.status.summary.gpuNodes}')\" = 1 ]"
kc label node "$N" nvidia.com/gpu.deploy.container-toolkit=true >/dev/null
wait_for 120 bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' get gpupolicy '$POLICY' -o jsonpath='{.status.operands[1].runningNodes}')\" = 1 ]"

log "SIGTERM"
kill -TERM "$GPUOP_PID"
rc=0
wait "$GPUOP_PID" || rc=$?
GPUOP_PID=
if [ "$rc" -ne 0 ] || ! grep -q "All heap blocks were freed" "$GPUOP_LOG" ||
	! grep -q "ERROR SUMMARY: 0 errors" "$GPUOP_LOG"; then
	grep '^==' "$GPUOP_LOG" | tail -n 60 >&2
	fail "gpuop under valgrind: exit $rc, errors or leaks (see above)"
fi
