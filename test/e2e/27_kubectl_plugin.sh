#!/usr/bin/env bash
# End-to-end: gpuop check as a kubectl plugin (issue 16 §5), with the lab's
# real kubectl finding kubectl-gpuop on PATH:
#   kubectl gpuop check works through KUBECONFIG, and takes kubectl's
#     --context (the current context is a dead server: only --context
#     reaches the lab), --kubeconfig and --request-timeout (against the dead
#     server: gives up after it, exit 2);
#   -o wide adds the PODS and TAINTS columns (a tainted node shows its taint);
#   the bash completion script, sourced in bash, completes commands, flags,
#     -o values and --context from `kubectl config get-contexts`;
#   kubectl's own completion of the plugin (kubectl __complete gpuop ...,
#     what kubectl's bash/zsh completion calls) answers through
#     kubectl_complete-gpuop;
#   with zsh installed: the zsh script, loaded by compinit in a zsh on a
#     pseudo-terminal, completes --output=, the -o values and the commands.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"

BIN=$E2E_TMP/bin
mkdir -p "$BIN"
ln -s "$(readlink -f "$GPUOP_BIN")" "$BIN/kubectl-gpuop"
ln -s "$(readlink -f "$GPUOP_BIN")" "$BIN/kubectl_complete-gpuop"
ln -s "$LAB_DIR/bin/kubectl" "$BIN/kubectl"
export PATH=$BIN:$PATH

# A kubeconfig with the lab as context "lab" and a dead server as the
# current context "dead".
KCFG=$E2E_TMP/kubeconfig
cp "$LAB_DIR/kubeconfig" "$KCFG"
kubectl --kubeconfig "$KCFG" config set-cluster dead --server=https://127.0.0.1:1 >/dev/null
kubectl --kubeconfig "$KCFG" config set-context dead --cluster=dead --user=admin >/dev/null
kubectl --kubeconfig "$KCFG" config use-context dead >/dev/null

gpuop_install
N=$(unique plug)
lab_node "$N" --label nvidia.com/gpu.present=true --label nvidia.com/gpu.deploy.driver=true \
	--taint "gpuop-e2e=yes:NoSchedule"
POLICY_FILE=$GPUOP_SRC/deploy/sample-gpupolicy.yaml

# run_check ARGS...: kubectl gpuop check ARGS, exit code in RC, output in OUT.
run_check() {
	RC=0
	OUT=$(kubectl gpuop check --policy "$POLICY_FILE" --nodes "$N" "$@" 2>&1) || RC=$?
}

log "kubectl finds the plugin"
grep -q "$BIN/kubectl-gpuop" <<<"$(kubectl plugin list 2>/dev/null)" || fail "kubectl plugin list: $(kubectl plugin list 2>&1)"
help=$(kubectl gpuop check --help)
grep -q '^usage: kubectl gpuop check' <<<"$help" || fail "help does not say kubectl gpuop: $help"

log "through KUBECONFIG (current context: the lab)"
KUBECONFIG=$LAB_DIR/kubeconfig run_check
assert_eq 1 "$RC" "exit (findings on $N): $OUT"
grep -q "^$N " <<<"$OUT" || fail "node $N not in the report: $OUT"

log "--context picks the lab over a dead current context"
KUBECONFIG=$KCFG run_check --context lab
assert_eq 1 "$RC" "exit with --context lab: $OUT"
log "--kubeconfig instead of KUBECONFIG"
env -u KUBECONFIG kubectl gpuop check --kubeconfig "$KCFG" --context lab --policy "$POLICY_FILE" \
	--nodes "$N" >/dev/null && rc=0 || rc=$?
assert_eq 1 "$rc" "exit with --kubeconfig and --context"

log "--request-timeout against the dead server"
start=$(date +%s)
KUBECONFIG=$KCFG run_check --request-timeout 3s
took=$(($(date +%s) - start))
assert_eq 2 "$RC" "exit against a dead server: $OUT"
grep -q 'nothing for 3.0 s' <<<"$OUT" || fail "no timeout message: $OUT"
((took < 25)) || fail "--request-timeout 3s took ${took}s"
KUBECONFIG=$KCFG run_check --request-timeout 3parsecs
assert_eq 2 "$RC" "bad --request-timeout"
grep -q 'bad --request-timeout' <<<"$OUT" || fail "bad --request-timeout message: $OUT"

log "-o wide: PODS and TAINTS"
KUBECONFIG=$LAB_DIR/kubeconfig run_check -o wide --color never
grep -q 'PODS  TAINTS$' <<<"$OUT" || fail "no PODS/TAINTS header: $OUT"
grep -Eq "^$N .*0/0 +gpuop-e2e=yes:NoSchedule\$" <<<"$OUT" || fail "wide row of $N: $OUT"
KUBECONFIG=$LAB_DIR/kubeconfig run_check --color never
grep -q 'TAINTS' <<<"$OUT" && fail "TAINTS without -o wide: $OUT"

log "progress goes to a terminal only: nothing on a piped stderr"
KUBECONFIG=$LAB_DIR/kubeconfig kubectl gpuop check --policy "$POLICY_FILE" >/dev/null 2>"$E2E_TMP/err" || true
[[ ! -s $E2E_TMP/err ]] || fail "stderr not empty when piped: $(cat "$E2E_TMP/err")"
if command -v script >/dev/null; then
	KUBECONFIG=$LAB_DIR/kubeconfig script -qec "kubectl gpuop check --policy $POLICY_FILE >/dev/null" /dev/null >"$E2E_TMP/tty" || true
	grep -q 'listing the cluster: [0-9]* nodes' "$E2E_TMP/tty" ||
		log "(no progress line seen on a pseudo-terminal: the cluster listed within one redraw)"
fi

log "bash completion, sourced in bash"
kubectl gpuop completion bash >"$E2E_TMP/gpuop.bash"
# complete WORDS...: the completions for the last word (may be empty)
complete_words() {
	KUBECONFIG=$KCFG bash -c '
		source "$1"; shift
		COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		_gpuop_space
		printf "%s\n" "${COMPREPLY[@]}"' _ "$E2E_TMP/gpuop.bash" "$@"
}
got=$(complete_words kubectl-gpuop "")
for w in run check render completion version; do
	grep -qx "$w " <<<"$got" || fail "command $w not completed: $got"
done
got=$(complete_words gpuop check --re)
assert_eq "--request-timeout " "$got" "flag completion"
got=$(complete_words gpuop check -o "")
assert_eq "text wide json yaml" "$(tr -d ' ' <<<"$got" | tr '\n' ' ' | sed 's/ $//')" "-o values"
got=$(complete_words gpuop check --output = "j")
assert_eq "json " "$got" "--output=j"
got=$(complete_words gpuop check --context "")
grep -qx "lab " <<<"$got" && grep -qx "dead " <<<"$got" || fail "--context completion: $got"
got=$(complete_words gpuop completion "")
grep -qx "bash " <<<"$got" && grep -qx "zsh " <<<"$got" || fail "completion's shells: $got"
got=$(complete_words gpuop run --leader-elect = "")
assert_eq "true false" "$(tr -d ' ' <<<"$got" | tr '\n' ' ' | sed 's/ $//')" "--leader-elect= values"
log "kubectl's completion of the plugin, through kubectl_complete-gpuop"
kcomp() { KUBECONFIG=$KCFG kubectl __complete gpuop "$@" 2>/dev/null; }
assert_eq "$(printf 'text\nwide\njson\nyaml\n:4')" "$(kcomp check -o "")" "kubectl __complete gpuop check -o"
grep -q "^check	" <<<"$(kcomp "")" || fail "kubectl __complete gpuop: $(kcomp "")"
grep -qx lab <<<"$(kcomp check --context "")" || fail "kubectl __complete gpuop check --context: $(kcomp check --context "")"
# The namespaces come from the cluster (the plugin runs kubectl get
# namespaces): on a loaded machine one such request can fail while the API
# server waits for etcd, and a completion is simply asked for again; so
# ask again, until a deadline.
ns_completed() {
	grep -qx "$GPUOP_NS" <<<"$(KUBECONFIG=$LAB_DIR/kubeconfig kubectl __complete gpuop check -n "$GPUOP_NS" 2>/dev/null)"
}
wait_for 60 ns_completed
if command -v zsh >/dev/null; then
	log "zsh completion, driven through a pseudo-terminal (zsh/zpty)"
	mkdir -p "$E2E_TMP/zfunc"
	kubectl gpuop completion zsh >"$E2E_TMP/zfunc/_gpuop"
	zsh -n "$E2E_TMP/zfunc/_gpuop" || fail "zsh script does not parse"
	# zcomplete LINE: what zsh shows after LINE and a TAB (escapes removed)
	cat >"$E2E_TMP/zcomplete.zsh" <<'ZSH'
zmodload zsh/zpty
zpty z 'zsh -f -i'
drain() { local c; REPLY=; sleep 1.5; while zpty -rt z c 2>/dev/null; do REPLY+=$c; done; }
zpty -w z "PS1='> '; fpath=($1 \$fpath); autoload -Uz compinit; compinit -u -D; gpuop() { :; }; setopt nobeep"
drain
zpty -w -n z "$2"$'\t'
drain
print -r -- "$REPLY" | sed -e 's/\x1b\[[0-9;]*[A-Za-z]//g' -e 's/\r//g'
zpty -d z
ZSH
	zcomplete() { timeout 30 zsh -f "$E2E_TMP/zcomplete.zsh" "$E2E_TMP/zfunc" "$1"; }
	grep -q -- "--output=" <<<"$(zcomplete "gpuop check --outp")" || fail "zsh: --outp: $(zcomplete "gpuop check --outp")"
	grep -q "json *text *wide *yaml" <<<"$(zcomplete "gpuop check -o ")" || fail "zsh: -o: $(zcomplete "gpuop check -o ")"
	grep -q "check *-- one-shot report" <<<"$(zcomplete "gpuop ")" || fail "zsh: commands: $(zcomplete "gpuop ")"
fi
log "ok"
