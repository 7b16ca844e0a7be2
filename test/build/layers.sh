#!/usr/bin/env bash
# build/layers: the layer gate (scripts/check-layers) fails on every form of
# an upward or sideways reference (issue 23). The tree as it is passes; then
# each violation is injected into a fresh copy of src/, include/ and scripts/
# and the gate must fail, naming the file. The symbol check (--nm) is shown
# a findings archive that calls a controller function through a prototype
# written by hand, and one that calls only what its layer may use.
# Usage: layers.sh SRCDIR
set -euo pipefail
src=$1
fail() {
	printf 'FAIL: %s\n' "$*" >&2
	exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

bash "$src/scripts/check-layers" "$src" || fail "the tree as it is does not pass the gate"
echo "ok: the tree passes"

# fresh COPY
fresh() {
	rm -rf "$tmp/t"
	mkdir -p "$tmp/t"
	cp -r "$src/src" "$src/include" "$src/scripts" "$tmp/t/"
}
# expect NAME WANT: the gate fails on the copy, its message containing WANT
expect() {
	local out
	if out=$(bash "$tmp/t/scripts/check-layers" "$tmp/t" 2>&1); then
		fail "$1: the gate passed"
	fi
	[[ $out == *"$2"* ]] || fail "$1: the gate failed, but without naming '$2': $out"
	echo "ok: $1 -> $(head -1 <<<"$out")"
}
# inject FILE LINE: adds LINE after the first #include of FILE
inject() {
	awk -v line="$2" '!done && /^#include/ {print; print line; done=1; next} {print}' "$tmp/t/$1" >"$tmp/x"
	mv "$tmp/x" "$tmp/t/$1"
}

fresh
inject src/findings/analysis.c '#include "gpuop/controller.h"'
expect 'a quoted public header of an upper layer' 'src/findings/analysis.c (findings) includes gpuop/controller.h (controller)'

fresh
inject src/findings/analysis.c '#include <gpuop/controller.h>'
expect 'an angle-bracket public header' 'src/findings/analysis.c (findings) includes gpuop/controller.h'

fresh
inject src/findings/analysis.c '#  include "gpuop/caches.h"'
expect 'a spaced # include' 'src/findings/analysis.c (findings) includes gpuop/caches.h'

fresh
inject src/findings/analysis.c '#include "../controller/controller_int.h"'
expect 'a relative internal header of another layer' 'an internal header of controller'

fresh
inject src/controller/apply.c '#include "../kube/lines_int.h"'
expect 'an internal header of a lower layer' 'an internal header of kube'

fresh
inject src/findings/report.c '#include <uv.h>'
expect 'libuv in findings' 'src/findings/report.c (findings) includes <uv.h> (libuv)'

fresh
inject src/policy/render.c '#include <curl/curl.h>'
expect 'curl in policy' 'includes <curl/curl.h> (curl)'

fresh
inject src/controller/queue.c '#include <curl/curl.h>'
expect 'curl above kube but not in cmd' 'src/controller/queue.c (controller) includes <curl/curl.h>'

fresh
inject src/model/model.c '#include <yaml.h>'
expect 'libyaml outside base' 'includes <yaml.h> (libyaml)'

fresh
sed -i 's/DEPS gpuop_policy /DEPS gpuop_controller gpuop_policy /' "$tmp/t/src/findings/CMakeLists.txt"
expect 'a DEPS entry that points up' 'src/findings/CMakeLists.txt: DEPS names gpuop_controller, which is not below findings'

fresh
sed -i 's/DEPS gpuop_policy /DEPS gpuop_libuv gpuop_policy /' "$tmp/t/src/findings/CMakeLists.txt"
expect 'an outside library a layer may not link' 'findings may not link gpuop_libuv'

fresh
sed -i 's/set(GPUOP_LAYERS base mem model policy findings/set(GPUOP_LAYERS base mem model findings policy/' "$tmp/t/src/CMakeLists.txt"
expect 'a layer order the DEPS contradict' 'DEPS names gpuop_policy, which is not below findings'

fresh
mkdir "$tmp/t/src/extra"
echo 'gpuop_layer(extra SOURCES x.c DEPS gpuop_base)' >"$tmp/t/src/extra/CMakeLists.txt"
expect 'a layer missing from the order' 'src/extra is not in GPUOP_LAYERS'

fresh
printf '/* x.c */\n#include "gpuop/kube.h"\n' >"$tmp/t/src/findings/kube.c"
expect 'a basename in two layers' 'src/findings/kube.c and src/kube/kube.c both exist'

fresh
printf '/* Layer: findings */\n#include "gpuop/leader.h"\n' >"$tmp/t/include/gpuop/newthing.h"
expect 'a public header of a lower layer including an upper one' 'include/gpuop/newthing.h (findings) includes gpuop/leader.h (kube)'

# --- the symbols of the built libraries ---------------------------------------
cc=${CC:-cc}
mk() { # ARCHIVE C-SOURCE
	printf '%s\n' "$2" >"$tmp/o.c"
	"$cc" -c -o "$tmp/o.o" "$tmp/o.c"
	rm -f "$1"
	ar rcs "$1" "$tmp/o.o"
}
mk "$tmp/controller.a" 'int gpuop_ctl_secret(void) { return 1; }'
mk "$tmp/policy.a" 'int gpuop_policy_thing(void) { return 2; }'
mk "$tmp/findings-bad.a" 'int gpuop_ctl_secret(void); int gpuop_findings_f(void) { return gpuop_ctl_secret(); }'
mk "$tmp/findings-ok.a" 'int gpuop_policy_thing(void); int gpuop_findings_f(void) { return gpuop_policy_thing(); }'
bash "$src/scripts/check-layers" --nm "$src" controller="$tmp/controller.a" policy="$tmp/policy.a" \
	findings="$tmp/findings-ok.a" || fail "--nm refused a findings library that uses only the policy layer"
echo "ok: --nm passes a library that calls down"
if out=$(bash "$src/scripts/check-layers" --nm "$src" controller="$tmp/controller.a" policy="$tmp/policy.a" \
	findings="$tmp/findings-bad.a" 2>&1); then
	fail "--nm passed a findings library that calls gpuop_ctl_secret of the controller"
fi
[[ $out == *"uses gpuop_ctl_secret, defined in controller"* ]] || fail "--nm failed without naming the symbol: $out"
echo "ok: a prototype written by hand -> $(head -1 <<<"$out")"
echo PASS
