# shellcheck shell=bash
# test/e2e/lib.sh — sourced by every end-to-end test (test/e2e/NN_name.sh).
# The tests run one at a time against the lab (test/lab/up; CTest label
# "e2e"), so each test creates what it needs under unique names and this
# file's EXIT trap removes it again: spawned processes first, then the
# namespaces (waiting until they are gone, so their pods are gone too), then
# the fake nodes. On failure the trap prints the state of the test's
# namespaces and the tail of every spawned process's log.
#
# Provides:
#   kc ARGS...                 kubectl on the lab (admin)
#   log MSG...                 progress line on stderr
#   fail MSG...                prints FAIL and exits 1
#   assert_eq WANT GOT MSG     fails unless WANT == GOT
#   wait_for TIMEOUT_S CMD...  polls CMD every 0.5 s until it succeeds
#   unique NAME                prints NAME-xxxxx (random, DNS-safe)
#   lab_node NAME ARGS...      test/lab/node, and deletes the node on exit
#   make_ns VAR [PREFIX]       creates a unique namespace, name into $VAR
#   track_ns NS                deletes namespace NS on exit (made elsewhere)
#   spawn NAME CMD...          runs CMD in the background, log in
#                              $E2E_TMP/NAME.log, stopped on exit
#                              (every $E2E_TMP/*.log is shown on failure)
#   stop_spawned NAME          stops it now (TERM, KILL after 10 s)
#   lab_sa_dir NS SA           prints a folder laid out like a pod's
#                              service-account mount (token, ca.crt,
#                              namespace) for in-cluster mode
#   on_exit CMD                runs CMD (eval'd) first during cleanup
# Variables: LAB_DIR, KUBECONFIG, LAB_API_HOST, LAB_API_PORT, LAB_CA,
#   GPUOP_SRC (repo root), GPUOP_BIN (gpuop binary; set by CTest, else
#   guessed from build/), E2E_NAME, E2E_TMP (removed on exit; TMPDIR
#   points into it, so a run leaves nothing in the temporary folder).
#
# Under pipefail, `CMD | grep -q X` fails when grep finds X before CMD has
# written its last line (CMD dies of SIGPIPE, the pipeline's status is
# 141): CI saw `kubectl __complete ... | grep -qx lab` fail on an output
# holding "lab". Match a multi-line output as `grep -q X <<<"$(CMD)"`.

# Run directly (CTest's e2e glob also matches this file): not a test.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	echo "lib.sh is sourced by the e2e tests; it is not a test itself"
	exit 0
fi

set -euo pipefail
set -E

GPUOP_SRC=${GPUOP_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
LAB_DIR=${LAB_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gpuop/lab}
E2E_NAME=$(basename "${BASH_SOURCE[1]:-$0}" .sh)
export GPUOP_SRC LAB_DIR E2E_NAME

log() { printf '[%s %s] %s\n' "$E2E_NAME" "$(date +%H:%M:%S)" "$*" >&2; }
fail() {
	printf '[%s %s] FAIL: %s\n' "$E2E_NAME" "$(date +%H:%M:%S)" "$*" >&2
	exit 1
}

if [[ ! -r $LAB_DIR/env || ! -r $LAB_DIR/apiserver.addr ]]; then
	fail "the lab is not up in $LAB_DIR: run test/lab/up first"
fi
# shellcheck source=/dev/null
source "$LAB_DIR/env"
LAB_API_HOST=$(cut -d: -f1 "$LAB_DIR/apiserver.addr")
LAB_API_PORT=$(cut -d: -f2 "$LAB_DIR/apiserver.addr")
export LAB_API_HOST LAB_API_PORT LAB_CA

if [[ -z ${GPUOP_BIN:-} ]]; then
	for b in "$GPUOP_SRC/build/gpuop" "$GPUOP_SRC/build/src/gpuop"; do
		[[ -x $b ]] && GPUOP_BIN=$b && break
	done
fi
export GPUOP_BIN=${GPUOP_BIN:-}

kc() { "$LAB_DIR/bin/kubectl" --kubeconfig "$LAB_DIR/kubeconfig" "$@"; }

kc get --raw /readyz >/dev/null 2>&1 ||
	fail "the lab API server ($LAB_API_HOST:$LAB_API_PORT) does not answer: run test/lab/up"

E2E_TMP=$(mktemp -d "${TMPDIR:-/tmp}/gpuop-e2e-$E2E_NAME.XXXXXX")
# Whatever the test or a tool it runs puts in the temporary folder lands
# in E2E_TMP, so the run leaves nothing behind.
TMPDIR=$E2E_TMP
export E2E_TMP TMPDIR
: >"$E2E_TMP/.nodes"
: >"$E2E_TMP/.namespaces"
: >"$E2E_TMP/.spawned"
E2E_ON_EXIT=()

assert_eq() {
	[[ $1 == "$2" ]] || fail "$3: want '$1', got '$2'"
}

# wait_for TIMEOUT_S CMD...: on timeout shows the command and its last
# output.
wait_for() {
	local timeout=$1 deadline out
	shift
	deadline=$(($(date +%s%N) / 1000000 + timeout * 1000))
	while :; do
		if out=$("$@" 2>&1); then
			return 0
		fi
		if (($(date +%s%N) / 1000000 >= deadline)); then
			fail "timed out after ${timeout}s waiting for: $* (last output: ${out:0:500})"
		fi
		sleep 0.5
	done
}

unique() {
	local s
	s=$(tr -dc 'a-z0-9' </dev/urandom | head -c 5) || true
	printf '%s-%s\n' "$1" "$s"
}

lab_node() {
	printf '%s\n' "$1" >>"$E2E_TMP/.nodes"
	"$GPUOP_SRC/test/lab/node" "$@" >/dev/null
}

track_ns() { printf '%s\n' "$1" >>"$E2E_TMP/.namespaces"; }

make_ns() {
	local name
	name=$(unique "${2:-$E2E_NAME}" | tr '_' '-' | tr '[:upper:]' '[:lower:]')
	track_ns "$name"
	kc create namespace "$name" >/dev/null
	# Pods need the namespace's default ServiceAccount.
	wait_for 30 kc -n "$name" get serviceaccount default
	printf -v "$1" %s "$name"
}

spawn() {
	local name=$1
	shift
	# exec: the recorded pid is the command itself, not a bash subshell.
	(
		trap - ERR EXIT
		exec "$@"
	) </dev/null >>"$E2E_TMP/$name.log" 2>&1 &
	local pid=$! i shell
	printf '%s %s\n' "$name" "$pid" >>"$E2E_TMP/.spawned"
	# Return once the child runs the command (a child still in bash when
	# it is stopped would run the inherited traps).
	shell=$(readlink "/proc/$$/exe")
	for ((i = 0; i < 100; i++)); do
		[[ "$(readlink "/proc/$pid/exe" 2>/dev/null)" == "$shell" ]] || break
		sleep 0.01
	done
}

stop_spawned() {
	local name pid i
	while read -r name pid; do
		[[ $name == "$1" ]] || continue
		kill -TERM "$pid" 2>/dev/null || continue
		for ((i = 0; i < 100; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done <"$E2E_TMP/.spawned"
}

lab_sa_dir() {
	local ns=$1 sa=$2 dir
	dir=$(mktemp -d "$E2E_TMP/sa.XXXXXX")
	kc -n "$ns" create token "$sa" --duration=1h >"$dir/token"
	cp "$LAB_CA" "$dir/ca.crt"
	printf '%s' "$ns" >"$dir/namespace"
	printf '%s\n' "$dir"
}

on_exit() { E2E_ON_EXIT+=("$1"); }

e2e_cleanup() {
	local rc=$? c f name pid nss nodes
	set +e
	trap - EXIT ERR
	for c in "${E2E_ON_EXIT[@]}"; do
		eval "$c"
	done
	if ((rc != 0)); then
		# every log of the test: the spawned processes' and gpuop_start's
		for f in "$E2E_TMP"/*.log; do
			[[ -f $f ]] || continue
			printf -- '--- last 30 lines of %s ---\n' "$f" >&2
			tail -n 30 "$f" >&2
		done
		while read -r name; do
			printf -- '--- namespace %s ---\n' "$name" >&2
			kc -n "$name" get daemonsets,pods -o wide >&2 2>&1
		done <"$E2E_TMP/.namespaces"
		kc get nodes -L nvidia.com/gpu.present >&2 2>&1
	fi
	while read -r name pid; do
		stop_spawned "$name"
	done <"$E2E_TMP/.spawned"
	mapfile -t nss <"$E2E_TMP/.namespaces"
	if ((${#nss[@]})); then
		kc delete namespace "${nss[@]}" --ignore-not-found --wait=true --timeout=90s >/dev/null 2>&1 ||
			log "warning: namespaces ${nss[*]} not gone after 90s"
	fi
	mapfile -t nodes <"$E2E_TMP/.nodes"
	if ((${#nodes[@]})); then
		kc delete node "${nodes[@]}" --ignore-not-found --wait=false >/dev/null 2>&1 ||
			log "warning: could not delete nodes ${nodes[*]}"
	fi
	rm -rf "$E2E_TMP"
	if ((rc == 0)); then
		log "PASS"
	fi
	exit "$rc"
}
trap e2e_cleanup EXIT
trap 'log "error at ${BASH_SOURCE[0]##*/}:$LINENO: $BASH_COMMAND"' ERR
