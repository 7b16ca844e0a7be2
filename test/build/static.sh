#!/usr/bin/env bash
# build/static: the GPUOP_STATIC gpuop needs nothing from the machine. It
# has no program interpreter and no NEEDED library, and in an empty root
# holding only itself and a GpuPolicy file it prints its version and
# renders the six DaemonSets for an Ubuntu 24.04 pool (jansson, libyaml
# and its own code, all linked in). Root (CI) uses chroot; others an unprivileged user namespace
# (unshare -r); with neither it skips (77), saying so.
# Usage: static.sh GPUOP_BINARY VERSION POLICY_FILE
set -euo pipefail
bin=$1 version=$2 policy=$3

fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

! grep -q 'Requesting program interpreter' <<<"$(readelf -lW "$bin")" || fail "$bin has a program interpreter"
! grep -qF '(NEEDED)' <<<"$(readelf -dW "$bin")" || fail "$bin needs shared libraries: $(readelf -dW "$bin" | grep NEEDED)"
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
strip -o "$root/stripped" "$bin"
echo "ok: no interpreter, no shared library ($(stat -c %s "$bin") bytes, $(stat -c %s "$root/stripped") stripped)"
rm -f "$root/stripped"
cp "$bin" "$root/gpuop"
cp "$policy" "$root/policy.yaml"
if [ "$(id -u)" -eq 0 ]; then
    inroot() { chroot "$root" "$@"; }
    how=chroot
elif unshare -r true 2>/dev/null; then
    inroot() { unshare -r --root="$root" "$@"; }
    how="unshare -r"
else
    echo "SKIP: not root and no user namespaces: cannot run $bin in an empty root" >&2
    exit 77
fi

out=$(inroot /gpuop version) || fail "gpuop version failed in an empty root ($how)"
grep -q "^gpuop $version\b" <<<"${out%%$'\n'*}" || fail "gpuop version said: $out"
echo "ok: gpuop version in an empty root ($how): ${out%%$'\n'*}"

inroot /gpuop render -f /policy.yaml --os ubuntu24.04 --strict >"$root/ds.yaml" || fail "gpuop render failed in an empty root"
n=$(grep -c '^kind: DaemonSet' "$root/ds.yaml" || true)
[ "$n" = 7 ] || fail "gpuop render in an empty root gave $n DaemonSets, not 7 (six operands and the MPS control daemon)"
echo "ok: gpuop render in an empty root: 7 DaemonSets"
