#!/usr/bin/env bash
# build/pipes: scripts/check-pipes passes on the tree and fails on each form
# of an early-exit reader in a pipeline under pipefail, injected into a copy.
# The race it guards against is shown first: a command that writes its
# output in pieces, piped into `grep -q` under pipefail, fails although the
# match is found (CI lost e2e/60_real_node to `ctr images list --quiet |
# grep -qxF REF`).
# Usage: pipes.sh SRCDIR
# check-pipes: examples
set -euo pipefail
src=$1
fail() {
	printf 'FAIL: %s\n' "$*" >&2
	exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The race, made certain: the writer's second piece comes after grep has
# matched the first and exited.
writer() {
	echo first
	sleep 0.2
	echo second
}
if writer | grep -qx first; then
	fail "pipefail did not see the writer's SIGPIPE (the race this gate exists for)"
fi
grep -qx first <<<"$(writer)" || fail "grep -q on a here-string of the output missed the match"
echo "ok: CMD | grep -q under pipefail fails on a found match; grep -q <<<\"\$(CMD)\" does not"

bash "$src/scripts/check-pipes" "$src" || fail "the tree as it is does not pass check-pipes"
echo "ok: the tree passes"

# expect NAME LINE: a script under pipefail holding LINE fails the gate,
# which names the file.
expect() {
	local out
	rm -rf "$tmp/t"
	mkdir -p "$tmp/t/test/e2e"
	cp -r "$src/scripts" "$tmp/t/"
	printf '#!/usr/bin/env bash\nset -euo pipefail\n%s\n' "$2" >"$tmp/t/test/e2e/bad.sh"
	if out=$(bash "$tmp/t/scripts/check-pipes" "$tmp/t" 2>&1); then
		fail "$1: the gate passed: $2"
	fi
	grep -qF 'test/e2e/bad.sh:3:' <<<"$out" || fail "$1: the gate did not name the line: $out"
	echo "ok: $1 fails the gate"
}
expect "grep -q" 'ctr images list --quiet | grep -qxF "$ref" || exit 1'
expect "negated" '! readelf -lW x | grep -q interpreter || exit 1'
expect "grep --quiet" 'kubectl get pods | grep --quiet Running'
expect "grep -m" 'x=$(journalctl | grep -m 1 started)'
expect "grep -E ... -q" 'cmd | grep -E x -q'
expect "head" 'x=$(kubectl get pods -o name | head -1)'
expect "head -c" 'printf "%s" "$out" | head -c 100 >&2'

# Not flagged: ||, a comment, a status thrown away on purpose, grep without -q.
rm -rf "$tmp/t"
mkdir -p "$tmp/t/test/e2e"
cp -r "$src/scripts" "$tmp/t/"
cat >"$tmp/t/test/e2e/good.sh" <<'GOOD'
#!/usr/bin/env bash
set -euo pipefail
true || grep -q x /dev/null
# CMD | grep -q X is the trap
s=$(tr -dc 'a-z' </dev/urandom | head -c 5 || true)
n=$(kubectl get pods | grep -c Running)
grep -q x <<<"$(cmd)"
GOOD
bash "$tmp/t/scripts/check-pipes" "$tmp/t" || fail "the gate flagged a safe form"
echo "ok: ||, comments, '|| true' and grep -c pass"
