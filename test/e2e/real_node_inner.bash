# test/e2e/real_node_inner.bash — what the inner halves of the real-node
# tests with the stand-in images share (62_gates, 63_real_node_platforms,
# 73_real_allocation, 74_real_dra; their outer half is real_node_outer.bash).
# Sourced after lib.sh and gpuop.sh, inside the lab's network namespace.
#
#   standins_import        imports E2E_STANDINS' images into the node's
#                          containerd and fills the associative array IMG
#                          (key -> image name, test/lab/standin-images --names),
#                          failing when one is not listed after its import
#   dump_operand_pods [N]  on stderr: the operands' DaemonSets and pods, and
#                          the last N (15) log lines of each of their
#                          containers (init containers first): the common
#                          part of a failed test's dump_state
# shellcheck shell=bash

declare -A IMG

standins_import() {
	local key name
	while read -r key name; do
		ctr images import "$E2E_STANDINS/$key.tar" >/dev/null
		ctr images list --quiet >"$E2E_TMP/images.txt"
		grep -qxF "$name" "$E2E_TMP/images.txt" ||
			fail "$name not in containerd after import: $(tr '\n' ' ' <"$E2E_TMP/images.txt")"
		IMG[$key]=$name
	done < <("$GPUOP_SRC/test/lab/standin-images" --names)
}

dump_operand_pods() {
	local tail=${1:-15} p c
	kc -n "$GPUOP_NS" get ds,pods -o wide >&2 2>&1
	for p in $(kc -n "$GPUOP_NS" get pods -o name 2>/dev/null); do
		for c in $(kc -n "$GPUOP_NS" get "$p" -o jsonpath='{.spec.initContainers[*].name} {.spec.containers[*].name}'); do
			printf -- '--- %s -c %s ---\n' "$p" "$c" >&2
			kc -n "$GPUOP_NS" logs "$p" -c "$c" --tail="$tail" >&2 2>&1
		done
	done
}
