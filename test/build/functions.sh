#!/usr/bin/env bash
# build/functions: the function-size gate (scripts/check-functions) fails
# on a function in src/ over 80 body lines or 7 parameters that its
# allow-list does not name (issue 40). The tree as it is passes; then each
# case is injected into a fresh copy of src/ and scripts/: a function of
# 81 lines and one of 8 parameters (an __attribute__ before it, a function
# pointer among them) fail, naming the function; 80 lines and 7
# parameters pass; an allow-list entry lets one through; an entry without
# its comment fails.
# Usage: functions.sh SRCDIR
set -euo pipefail
src=$1
fail() {
	printf 'FAIL: %s\n' "$*" >&2
	exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

bash "$src/scripts/check-functions" "$src" || fail "the tree as it is does not pass the gate"
echo "ok: the tree passes"

fresh() {
	rm -rf "$tmp/t"
	mkdir -p "$tmp/t"
	cp -r "$src/src" "$src/scripts" "$tmp/t/"
}
# long NAME LINES: a function NAME whose body is LINES lines, as
# clang-format writes it, appended to src/base/hash.c
long() {
	{
		printf '\nstatic int %s(int x)\n{\n' "$1"
		for ((i = 0; i < $2 - 1; i++)); do printf '    x += %d;\n' "$i"; done
		printf '    return x;\n}\n'
	} >>"$tmp/t/src/base/hash.c"
}
# params NAME N: a function NAME of N parameters (over two lines, one of
# them a function pointer, after an attribute) appended to src/base/hash.c
params() {
	local list="int (*cb)(int, int)" i
	for ((i = 1; i < $2; i++)); do list+=", int a$i"; done
	printf '\n__attribute__((unused)) static int %s(%s,\n                 const char *last)\n{\n    return 0;\n}\n' \
		"$1" "${list%, int a$(($2 - 1))}" >>"$tmp/t/src/base/hash.c"
}
# expect NAME WANT: the gate fails on the copy, its message containing WANT
expect() {
	local out
	if out=$(bash "$tmp/t/scripts/check-functions" "$tmp/t" 2>&1); then
		fail "$1: the gate passed"
	fi
	[[ $out == *"$2"* ]] || fail "$1: the gate failed, but without naming '$2': $out"
	echo "ok: $1 -> $(head -1 <<<"$out")"
}
# passes NAME: the gate passes on the copy
passes() {
	local out
	out=$(bash "$tmp/t/scripts/check-functions" "$tmp/t" 2>&1) || fail "$1: the gate failed: $out"
	echo "ok: $1 passes"
}

fresh
long too_long 81
expect 'a function of 81 lines' 'src/base/hash.c:'
expect 'a function of 81 lines, named' 'too_long is 81 lines long (over 80)'

fresh
params too_many 8
expect 'a function of 8 parameters' 'too_many is 8 parameters (over 7)'

fresh
long just_fits 80
params seven 7
passes 'a function of 80 lines and one of 7 parameters'

fresh
long allowed_long 120
printf 'src/base/hash.c allowed_long # 120 lines: a test says so\n' >>"$tmp/t/scripts/check-functions.allow"
passes 'an allow-listed function of 120 lines'

fresh
long allowed_long 120
printf 'src/base/hash.c allowed_long\n' >>"$tmp/t/scripts/check-functions.allow"
expect 'an allow-list entry without its comment' 'want "FILE FUNCTION # why"'

fresh
printf 'src/base/hash.c no_such_function # gone\n' >>"$tmp/t/scripts/check-functions.allow"
out=$(bash "$tmp/t/scripts/check-functions" "$tmp/t" 2>&1) || fail "a stale entry failed the gate: $out"
[[ $out == *"no_such_function"*"remove the entry"* ]] || fail "a stale entry is not named: $out"
echo "ok: a stale entry is named, the gate passes"
