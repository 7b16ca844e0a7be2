#!/usr/bin/env bash
# End-to-end: `gpuop check` against the lab with a CA that did not sign the
# API server's certificate fails at the first certificate error with exit
# 2, naming it, instead of retrying until its deadline: no retry can fix a
# wrong CA. The same kubeconfig with the lab's CA reads the cluster.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"

gpuop_install # the CRD, for the check with the lab's CA

# A CA of our own, unrelated to the lab's.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
	-subj /CN=not-the-lab-ca -keyout "$E2E_TMP/wrong.key" -out "$E2E_TMP/wrong.crt" 2>/dev/null
kubeconfig() { # kubeconfig CA_FILE -> a kubeconfig with the lab's admin client and that CA
	local ca=$1
	kc config view --raw -o json | jq --arg ca "$ca" \
		'.clusters[0].cluster |= (del(.["certificate-authority-data"]) | .["certificate-authority"] = $ca)' \
		>"$E2E_TMP/kc-$(basename "$ca").json"
	printf '%s\n' "$E2E_TMP/kc-$(basename "$ca").json"
}

log "a wrong CA: exit 2 at the first certificate error"
rc=0
"$GPUOP_BIN" check --kubeconfig "$(kubeconfig "$E2E_TMP/wrong.crt")" --namespace default -o json \
	>"$E2E_TMP/wrong.out" 2>"$E2E_TMP/wrong.err" || rc=$?
assert_eq 2 "$rc" "exit status of gpuop check with a wrong CA"
grep -qi 'certificate' "$E2E_TMP/wrong.err" || fail "no certificate error named: $(cat "$E2E_TMP/wrong.err")"
grep -q 'cannot talk to the API server' "$E2E_TMP/wrong.err" ||
	fail "not stopped at the certificate error: $(tail -n 5 "$E2E_TMP/wrong.err")"
! grep -q 'could not read the cluster' "$E2E_TMP/wrong.err" ||
	fail "gpuop check waited for its deadline: $(tail -n 5 "$E2E_TMP/wrong.err")"
[[ ! -s $E2E_TMP/wrong.out ]] || fail "a report was printed: $(head -c 300 "$E2E_TMP/wrong.out")"

log "the lab's CA: the cluster is read (exit 0 or 1, never 2)"
rc=0
"$GPUOP_BIN" check --kubeconfig "$(kubeconfig "$LAB_CA")" --namespace default -o json \
	>"$E2E_TMP/right.out" 2>"$E2E_TMP/right.err" || rc=$?
# no GpuPolicy in the cluster is also exit 2: pass one
[[ $rc != 2 ]] || grep -q 'no GpuPolicy' "$E2E_TMP/right.err" ||
	fail "gpuop check with the lab's CA failed: $(tail -n 5 "$E2E_TMP/right.err")"
! grep -qi 'certificate' "$E2E_TMP/right.err" || fail "a certificate error with the lab's CA: $(cat "$E2E_TMP/right.err")"
