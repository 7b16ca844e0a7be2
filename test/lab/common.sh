# shellcheck shell=bash
# Shared helpers of the lab scripts (test/lab/up, down, restart-apiserver,
# node, pod-state, exec). Sourced, never run.
#
# Layout of $LAB_DIR (default ${XDG_CACHE_HOME:-$HOME/.cache}/gpuop/lab):
#   bin/             links to the cached binaries (test/lab/build)
#   pki/             CA, serving and client certificates, service-account keys
#   config/          per-component kubeconfigs and config files
#   etcd/            etcd data (wiped by every fresh `up`)
#   logs/NAME.log    one log per component
#   run/NAME.pid     pid of each running component
#   run/NAME.args    its arguments, one per line (restart reuses them)
#   kubeconfig       admin kubeconfig (system:masters)
#   env              sourceable: exports KUBECONFIG, LAB_DIR, PATH
#   apiserver.addr   "127.0.0.1:PORT" of the API server
#   netns            (real-node lab only) name of the lab's network
#                    namespace; every component runs in it, and so must
#                    every client (test/lab/exec)
#   real-node/       (real-node lab only) containerd, kubelet, CNI state,
#                    see test/lab/real-node.sh
#
# A component is started detached (setsid) with stdin from /dev/null and its
# output in its log; its pid file is the only handle `down` uses.

LAB_DIR=${LAB_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gpuop/lab}
# shellcheck disable=SC2034 # used by the scripts that source this file
LAB_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export LAB_DIR

# Components in start order; `down` stops them in reverse. A real-node lab
# also runs containerd (before etcd) and kubelet (last).
# shellcheck disable=SC2034
LAB_COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)

# The lab's network namespace, if it has one: LAB_NETNS is its name and
# LAB_NS_EXEC the command prefix that runs a program inside it (empty for
# the plain lab, which lives on the machine's loopback).
LAB_NETNS=
LAB_NS_EXEC=()
lab_set_netns() {
	LAB_NETNS=$1
	if [[ -n $LAB_NETNS ]]; then
		LAB_NS_EXEC=(nsenter "--net=/run/netns/$LAB_NETNS" --)
	else
		LAB_NS_EXEC=()
	fi
}
if [[ -r $LAB_DIR/netns ]]; then
	lab_set_netns "$(<"$LAB_DIR/netns")"
fi

# lab_in CMD...: runs CMD in the lab's network namespace (or here).
lab_in() { "${LAB_NS_EXEC[@]}" "$@"; }

lab_log() { printf '[lab %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
lab_die() {
	lab_log "ERROR: $*"
	exit 1
}

# lab_pid NAME: prints the pid of a running component, or fails.
# A pid counts only if the process still runs our binary from $LAB_DIR, so
# a recycled pid is never mistaken for (or killed as) a lab component.
lab_pid() {
	local f=$LAB_DIR/run/$1.pid pid exe
	[[ -r $f ]] || return 1
	pid=$(<"$f")
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
	[[ $exe == "$(readlink -f "$LAB_DIR/bin/$1")" ]] || return 1
	printf '%s\n' "$pid"
}

# lab_port_free PORT: true if no TCP socket (listening or connected) uses
# PORT locally.
lab_port_free() {
	local used
	used=$(ss -Htan "sport = :$1" 2>/dev/null) || return 1
	[[ -z $used ]]
}

# lab_free_port VAR: sets VAR to a free TCP port below the kernel's ephemeral range
# (outgoing connections take ports from that range and could steal a port
# between this choice and the component's bind), not handed out before by
# this shell (LAB_USED_PORTS).
LAB_USED_PORTS=" "
lab_free_port() {
	local p i lo hi span range
	range=$(cat /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null) || range=
	read -r lo hi <<<"$range" || true
	[[ $lo =~ ^[0-9]+$ && $hi =~ ^[0-9]+$ ]] || lo=32768 hi=60999
	if ((lo > 12000)); then
		span=$((lo - 11000)) # ports 11000 .. lo-1
		lo=11000
	else
		lo=$((hi + 1)) span=$((65535 - hi))
	fi
	for ((i = 0; i < 200; i++)); do
		p=$((lo + (RANDOM * 32768 + RANDOM) % span))
		[[ $LAB_USED_PORTS == *" $p "* ]] && continue
		if lab_port_free "$p"; then
			LAB_USED_PORTS+="$p "
			printf -v "$1" %s "$p"
			return 0
		fi
	done
	lab_die "no free port found"
}

# lab_fail_component NAME MSG: reports a component failure with the tail
# of its log, then exits 1.
lab_fail_component() {
	local name=$1
	shift
	lab_log "ERROR: $name: $*"
	if [[ -s $LAB_DIR/logs/$name.log ]]; then
		printf -- '--- last 40 lines of %s ---\n' "$LAB_DIR/logs/$name.log" >&2
		tail -n 40 "$LAB_DIR/logs/$name.log" >&2
		printf -- '--- end of %s ---\n' "$name" >&2
	fi
	exit 1
}

# lab_start NAME: starts $LAB_DIR/bin/NAME with the arguments listed in
# run/NAME.args (one per line), appending to logs/NAME.log.
lab_start() {
	local name=$1 args=() pid
	mapfile -t args <"$LAB_DIR/run/$name.args"
	printf '\n=== %s start %s ===\n' "$name" "$(date -u +%FT%TZ)" >>"$LAB_DIR/logs/$name.log"
	setsid "${LAB_NS_EXEC[@]}" "$LAB_DIR/bin/$name" "${args[@]}" </dev/null >>"$LAB_DIR/logs/$name.log" 2>&1 8>&- &
	pid=$!
	printf '%s\n' "$pid" >"$LAB_DIR/run/$name.pid"
	# Until setsid (and nsenter) have exec'd, /proc/PID/exe is one of them.
	local i
	for ((i = 0; i < 50; i++)); do
		lab_pid "$name" >/dev/null && return 0
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	lab_pid "$name" >/dev/null || lab_fail_component "$name" "did not start"
}

# lab_stop NAME [TIMEOUT_S]: TERM, then KILL after TIMEOUT_S (default 10;
# 0 kills at once).
lab_stop() {
	local name=$1 timeout=${2:-10} pid i
	if pid=$(lab_pid "$name"); then
		((timeout > 0)) && kill -TERM "$pid" 2>/dev/null
		for ((i = 0; i < timeout * 10; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			((timeout > 0)) && lab_log "$name (pid $pid) still runs ${timeout}s after TERM, killing"
			kill -KILL "$pid" 2>/dev/null || true
			for ((i = 0; i < 50; i++)); do
				kill -0 "$pid" 2>/dev/null || break
				sleep 0.1
			done
		fi
	fi
	rm -f "$LAB_DIR/run/$name.pid"
}

# lab_wait NAME TIMEOUT_S CMD...: polls CMD every 0.2 s while NAME runs.
lab_wait() {
	local name=$1 timeout=$2 deadline
	shift 2
	deadline=$((SECONDS + timeout))
	while ((SECONDS < deadline)); do
		lab_pid "$name" >/dev/null || lab_fail_component "$name" "exited during startup"
		if "$@" >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.2
	done
	lab_fail_component "$name" "not ready after ${timeout}s"
}

# lab_https_ok PORT PATH: true if GET https://127.0.0.1:PORT/PATH as admin
# answers 200 with body "ok".
lab_https_ok() {
	local body
	body=$(lab_in curl -sf --max-time 3 --cacert "$LAB_DIR/pki/ca.crt" \
		--cert "$LAB_DIR/pki/admin.crt" --key "$LAB_DIR/pki/admin.key" \
		"https://127.0.0.1:$1$2") || return 1
	[[ $body == ok ]]
}

# lab_apiserver_port: the API server port from apiserver.addr.
lab_apiserver_port() {
	local addr
	addr=$(<"$LAB_DIR/apiserver.addr")
	printf '%s\n' "${addr##*:}"
}

# lab_lock: serialises up/down/restart on one LAB_DIR (fd 8). Children of
# a holder (up runs down) see LAB_LOCK_HELD and skip it.
lab_lock() {
	[[ -n ${LAB_LOCK_HELD:-} ]] && return 0
	mkdir -p "$LAB_DIR"
	exec 8>"$LAB_DIR/.lab.lock"
	flock -w 300 8 || lab_die "another up/down on $LAB_DIR holds $LAB_DIR/.lab.lock"
	export LAB_LOCK_HELD=1
}

lab_kubectl() { lab_in "$LAB_DIR/bin/kubectl" --kubeconfig "$LAB_DIR/kubeconfig" "$@"; }

# lab_require_up: fails unless the API server answers.
lab_require_up() {
	[[ -r $LAB_DIR/apiserver.addr && -r $LAB_DIR/kubeconfig ]] ||
		lab_die "the lab is not up in $LAB_DIR (run test/lab/up)"
	lab_https_ok "$(lab_apiserver_port)" /readyz ||
		lab_die "the lab API server in $LAB_DIR does not answer (run test/lab/up)"
}
