#!/usr/bin/env bash
# End-to-end: the benchmark (test/bench/run) works, at 20 nodes, on the
# default lab (issue 6). Asserts only that every step produced a result and
# that gpuop wrote nothing during the quiet window — never a time or a size:
# those depend on the machine and go into docs/benchmarks.md, not into a
# pass/fail. The runner removes its nodes, the policy and the DaemonSets.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

[[ -n ${GPUOP_BIN:-} && -x $GPUOP_BIN ]] || fail "no gpuop binary (GPUOP_BIN)"
out=$E2E_TMP/bench
log "benchmark at 20 nodes: 10 s quiet window, 20 flips"
BENCH_APPLY_TIMEOUT=120 "$GPUOP_SRC/test/bench/run" --existing-lab --nodes 20 --quiet 10 --flips 20 \
	--out "$out" >"$E2E_TMP/bench.log" 2>&1 || {
	tail -n 40 "$E2E_TMP/bench.log" >&2
	fail "test/bench/run failed"
}

csv=$out/results.csv
assert_eq 2 "$(wc -l <"$csv" | tr -d ' ')" "results.csv has a header and one row"
# field NAME: the row's value in column NAME.
field() {
	awk -F, -v k="$1" 'NR == 1 {for (i = 1; i <= NF; i++) if ($i == k) c = i} NR == 2 {print $c}' "$csv"
}
assert_eq 20 "$(field nodes)" "nodes"
assert_eq 0 "$(field quiet_writes)" "writes in the quiet window"
assert_eq 0 "$(field policy_rv_changed)" "policy resourceVersion moved in the quiet window"
assert_eq 20 "$(field flips)" "flips measured"
for k in complete_s rss_peak_kib rss_steady_kib quiet_cpu_s lat_node_p50_ms lat_status_p50_ms lat_status_p99_ms; do
	[[ $(field "$k") =~ ^[0-9]+(\.[0-9]+)?$ ]] || fail "$k is not a number: '$(field "$k")'"
done
[[ -s $out/results.md ]] || fail "no results.md"
# a progress line as each phase begins (issue 16 §6)
assert_eq 8 "$(grep -c 'phase [1-8]/8 (N=20' "$E2E_TMP/bench.log")" "phase lines in the runner's output"
grep -q '^| 20 |' "$out/results.md" || fail "results.md has no row for 20 nodes"
if command -v gnuplot >/dev/null; then
	[[ -s $out/results.png ]] || fail "gnuplot is installed but no results.png"
fi

log "the runner cleaned up"
assert_eq "" "$(kc get gpupolicies -o name)" "GpuPolicies left"
assert_eq 0 "$(kc get nodes -l gpuop-bench -o name | wc -l | tr -d ' ')" "benchmark nodes left"
wait_for 60 bash -c "[ -z \"\$(kubectl --kubeconfig '$KUBECONFIG' -n gpuop-system get ds -o name)\" ]"
