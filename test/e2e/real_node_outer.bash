# test/e2e/real_node_outer.bash — the outer half of a real-node e2e test
# with the stand-in operand images (62_gates, 63_real_node_platforms,
# 73_real_allocation, 74_real_dra): sourced by the test before lib.sh,
# outside the lab, it
#   - skips (77) without root;
#   - builds the stand-in images (test/lab/standin-images) into a temporary
#     folder;
#   - makes / a shared mount for the run when it is not (Bidirectional
#     hostPath mounts need it), private again at the end;
#   - brings up a real-node lab of its own ($LAB_DIR-<suffix>, or
#     E2E_<SUFFIX>_LAB_DIR), runs the test's inner half in its network
#     namespace (test/lab/exec) with <inner_var>=1, E2E_STANDINS (the images)
#     and E2E_HOSTPATHS (the "absent PATH" lines the inner half records:
#     host paths that did not exist before its pods ran, removed at the end);
#   - tears the lab down and fails when anything is left behind: those
#     paths, the network namespace, mounts under $LAB_DIR or matching the
#     test's mount roots, the lab's cgroups, processes naming $LAB_DIR.
#
#   real_node_outer NAME SUFFIX INNER_VAR MOUNT_ROOTS SCRIPT
# NAME the test's name (its log prefix), SUFFIX the lab folder's, INNER_VAR
# the variable marking the inner run, MOUNT_ROOTS an ERE alternation of the
# host folders the test's pods mount into (e.g. '/run/nvidia|/var/run/cdi'),
# SCRIPT the test ($0). It exits with the test's status.
# shellcheck shell=bash

real_node_outer() {
	local name=$1 suffix=$2 inner=$3 roots=$4 script=$5
	local src base imgdir hostpaths shared_root=0 t rc=0 netns kind p left=()
	src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	base=${LAB_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gpuop/lab}
	local override="E2E_${suffix^^}_LAB_DIR"
	export LAB_DIR=${!override:-$base-$suffix}
	_rno_say() { printf '[%s %s] %s\n' "$_RNO_NAME" "$(date +%H:%M:%S)" "$*" >&2; }
	_RNO_NAME=$name
	[[ $(id -u) == 0 ]] || {
		_rno_say "SKIP: needs root (a real-node lab)"
		exit 77
	}
	imgdir=$(mktemp -d "${TMPDIR:-/tmp}/gpuop-standins.XXXXXX")
	hostpaths=$LAB_DIR.hostpaths
	_RNO_SRC=$src _RNO_IMGDIR=$imgdir _RNO_HOSTPATHS=$hostpaths _RNO_SHARED=0
	trap _rno_cleanup EXIT
	trap 'exit 143' TERM INT
	t=$SECONDS
	"$src/test/lab/standin-images" "$imgdir"
	_rno_say "stand-in images built in $((SECONDS - t))s"
	# mountinfo field 7.. are the optional fields; "shared:N" when shared.
	if ! awk '$5 == "/" { for (i = 7; $i != "-"; i++) if ($i ~ /^shared:/) f = 1 } END { exit !f }' /proc/self/mountinfo; then
		mount --make-shared /
		_RNO_SHARED=1
		_rno_say "made / a shared mount for the run (private again at the end)"
	fi
	rm -f "$hostpaths"
	t=$SECONDS
	"$src/test/lab/up" --real-node
	_rno_say "real-node lab up in $((SECONDS - t))s ($LAB_DIR)"
	netns=$(<"$LAB_DIR/netns")
	env "$inner=1" E2E_STANDINS="$imgdir" E2E_HOSTPATHS="$hostpaths" "$src/test/lab/exec" bash "$script" || rc=$?
	t=$SECONDS
	"$src/test/lab/down" || rc=1
	_rno_say "down in $((SECONDS - t))s"
	cp "$hostpaths" "$imgdir.absent" 2>/dev/null || true
	_rno_cleanup
	trap - EXIT
	if [[ -r $imgdir.absent ]]; then
		while read -r kind p; do
			[[ -e $p ]] && left+=("$p (absent before the run)")
		done <"$imgdir.absent"
		rm -f "$imgdir.absent"
	fi
	[[ -e /run/netns/$netns ]] && left+=("netns $netns")
	grep -qF " $LAB_DIR/" /proc/self/mountinfo && left+=("mounts under $LAB_DIR")
	grep -qE " ($roots)(/| )" /proc/self/mountinfo && left+=("mounts under one of $roots")
	compgen -G "/sys/fs/cgroup/*/$netns" >/dev/null && left+=("cgroups /sys/fs/cgroup/*/$netns")
	[[ -e $LAB_DIR/real-node ]] && left+=("$LAB_DIR/real-node")
	for p in /proc/[0-9]*; do
		kind=$(tr '\0' ' ' 2>/dev/null <"$p/cmdline") || continue
		[[ $kind == *"$LAB_DIR/"* ]] && left+=("process ${p#/proc/}: ${kind:0:120}")
	done
	if ((${#left[@]})); then
		_rno_say "FAIL: left behind: ${left[*]}"
		rc=1
	fi
	exit "$rc"
}

# _rno_cleanup: the lab down (again: harmless), the images, the absent host
# paths recorded (unmounted first), / private again.
_rno_cleanup() {
	local kind p m
	"$_RNO_SRC/test/lab/down" >/dev/null 2>&1 || true
	rm -rf "$_RNO_IMGDIR"
	if [[ -r $_RNO_HOSTPATHS ]]; then
		while read -r kind p; do
			[[ $kind == absent && $p == /*/* && -e $p ]] || continue
			while read -r m; do
				umount -l "$m" 2>/dev/null || true
			done < <(awk -v p="$p" '$5 == p || index($5, p "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r)
			rm -rf --one-file-system "$p"
		done < <(sort -k2 -r "$_RNO_HOSTPATHS")
		rm -f "$_RNO_HOSTPATHS"
	fi
	if ((_RNO_SHARED)); then
		mount --make-private / || _rno_say "warning: could not make / private again"
		_RNO_SHARED=0
	fi
}

# real_node_record_absent PATH...: (inner half) the topmost missing
# ancestor of each PATH (the kubelet creates a DirectoryOrCreate path with
# its parents) as an "absent" line of E2E_HOSTPATHS, removed at the end.
real_node_record_absent() {
	local p top
	for p in "$@"; do
		top=""
		while [[ $p == /*/* && ! -e $p ]]; do
			top=$p
			p=${p%/*}
		done
		if [[ -n $top ]]; then
			printf 'absent %s\n' "$top"
		fi
	done >>"$E2E_HOSTPATHS"
	sort -u -o "$E2E_HOSTPATHS" "$E2E_HOSTPATHS"
}

# real_node_pod_of REGEX: (inner half) the name of the operand pod in
# $GPUOP_NS, not being deleted, whose DaemonSet's name matches REGEX
# (an ERE); empty when none.
real_node_pod_of() {
	kc -n "$GPUOP_NS" get pods -o json | jq -r --arg re "$1" '.items[]
		| select(.metadata.deletionTimestamp == null)
		| select(any(.metadata.ownerReferences[]?; .kind == "DaemonSet" and (.name | test($re))))
		| .metadata.name' | sed -n 1p
}

# real_node_all_ready N: (inner half) true when N pods of $GPUOP_NS, not
# being deleted, are Running and Ready on $NODE (the count printed).
real_node_all_ready() {
	local n
	n=$(kc -n "$GPUOP_NS" get pods -o json | jq '[.items[] | select(.metadata.deletionTimestamp == null)
		| select(.spec.nodeName == "'"$NODE"'") | select(.status.phase == "Running")
		| select(any(.status.conditions[]?; .type == "Ready" and .status == "True"))] | length')
	echo "ready: $n"
	((n == $1))
}
