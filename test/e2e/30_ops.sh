#!/usr/bin/env bash
# End-to-end: gpuop run like a production operator (issue 5), in-cluster.
#   - deploy/ RBAC is least privilege: the gpuop ServiceAccount cannot read
#     Secrets or write Nodes, creates Events only in "default", and can do
#     what gpuop needs;
#   - two replicas run in in-cluster mode (service host/port of the lab,
#     a token of the gpuop ServiceAccount, the lab's CA): exactly one holds
#     the Lease and writes (applies, status); the follower's writes stay 0;
#   - /metrics agrees with `gpuop check -o json`; /healthz and /readyz
#     answer; a client that sends nothing or a huge header does not block
#     /metrics for others;
#   - kill -9 of the leader: the follower takes over and reconciles a policy
#     change within the lease duration plus a few seconds;
#   - JSON logs: one object per line, each naming its object; the token
#     never appears in a log;
#   - a leader whose Lease is taken away stops and exits non-zero; a clean
#     shutdown releases the Lease.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gpuop.sh"

LEASE=gpuop-leader
on_exit 'kc delete gpupolicy ops-policy --ignore-not-found --wait=true >/dev/null 2>&1; kc -n $GPUOP_NS delete lease $LEASE --ignore-not-found >/dev/null 2>&1; gpuop_uninstall'

gpuop_install
kc -n "$GPUOP_NS" delete lease "$LEASE" --ignore-not-found >/dev/null
SA=system:serviceaccount:$GPUOP_NS:gpuop

log "least privilege: what the gpuop ServiceAccount may and may not do"
can() { kc auth can-i --as="$SA" "$@" 2>/dev/null || true; }
for check in "get secrets -A" "list secrets -n $GPUOP_NS" "update nodes" \
	"delete nodes" "create pods -n $GPUOP_NS" "delete gpupolicies.gpuop.dev" \
	"create daemonsets -n default" "delete leases -n $GPUOP_NS" "update gpupolicies.gpuop.dev" \
	"create events -n kube-system" "create events -n $GPUOP_NS" "patch events -A"; do
	# shellcheck disable=SC2086
	assert_eq no "$(can $check)" "can-i $check"
done
# patch gpupolicies: gpuop's finalizer (DRA driver); patch nodes: node
# labelling (deploy/10-rbac.yaml is the chart's RBAC with
# its defaults, nodeLabeling.enabled true); never update or delete
for check in "list nodes" "patch nodes" "watch gpupolicies.gpuop.dev" "patch gpupolicies.gpuop.dev --subresource=status" \
	"patch gpupolicies.gpuop.dev" "update gpupolicies.gpuop.dev --subresource=finalizers" \
	"patch daemonsets -n $GPUOP_NS" "delete daemonsets -n $GPUOP_NS" "watch pods -n $GPUOP_NS" \
	"create leases -n $GPUOP_NS" "update leases -n $GPUOP_NS" "create events -n default" \
	"patch events -n default" "create events.events.k8s.io -n default"; do
	# shellcheck disable=SC2086
	assert_eq yes "$(can $check)" "can-i $check"
done

SADIR=$(lab_sa_dir "$GPUOP_NS" gpuop)
TOKEN=$(cat "$SADIR/token")
api() { # api METHOD PATH [BODY]: HTTP code of a real request with the SA token
	curl -s -o /dev/null -w '%{http_code}' --cacert "$SADIR/ca.crt" -H "Authorization: Bearer $TOKEN" \
		-X "$1" ${3:+-H 'Content-Type: application/merge-patch+json' --data "$3"} \
		"https://$LAB_API_HOST:$LAB_API_PORT$2"
}
assert_eq 403 "$(api GET "/api/v1/namespaces/$GPUOP_NS/secrets")" "token reads secrets"

log "GPU nodes: one complete, one with only a driver label"
A=$(unique ops-a)
B=$(unique ops-b)
all_labels() {
	local l="--label nvidia.com/gpu.present=true --capacity nvidia.com/gpu=8" op
	for op in driver container-toolkit device-plugin gpu-feature-discovery dcgm-exporter operator-validator; do
		[[ " $* " == *" $op "* ]] || l+=" --label nvidia.com/gpu.deploy.$op=true"
	done
	printf '%s\n' "$l"
}
# shellcheck disable=SC2046
lab_node "$A" $(all_labels)
lab_node "$B" --label nvidia.com/gpu.present=true --label nvidia.com/gpu.deploy.driver=true
assert_eq 403 "$(api PUT "/api/v1/nodes/$A" '{}')" "token replaces a node"
assert_eq 200 "$(api GET /api/v1/nodes)" "token lists nodes"

# start_replica NAME METRICS_PORT HEALTH_PORT [ARGS...]: gpuop run in
# in-cluster mode as the gpuop ServiceAccount.
start_replica() {
	local name=$1 mp=$2 hp=$3
	shift 3
	spawn "$name" env -u KUBECONFIG KUBERNETES_SERVICE_HOST="$LAB_API_HOST" \
		KUBERNETES_SERVICE_PORT="$LAB_API_PORT" GPUOP_SA_DIR="$SADIR" \
		"$GPUOP_BIN" run --metrics-addr "127.0.0.1:$mp" --health-addr "127.0.0.1:$hp" \
		--log-level debug "$@"
	wait_for 60 curl -sf "http://127.0.0.1:$hp/readyz"
}
pid_of() { awk -v n="$1" '$1 == n {print $2}' "$E2E_TMP/.spawned" | tail -n 1; }
metric() { # metric PORT NAME_AND_LABELS -> value (empty when absent)
	curl -sf --max-time 5 "http://127.0.0.1:$1/metrics" | awk -v m="$2" '$1 == m {print $2}'
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
P1M=$(free_port) P1H=$(free_port) P2M=$(free_port) P2H=$(free_port)

log "two replicas in-cluster (one with JSON logs)"
start_replica r1 "$P1M" "$P1H"
wait_for 60 bash -c "grep -q 'became leader' '$E2E_TMP/r1.log'"
start_replica r2 "$P2M" "$P2H" --log-format json
assert_eq 200 "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$P2H/healthz")" "healthz"
assert_eq 200 "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$P2H/readyz")" "readyz"
assert_eq 404 "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$P2H/nope")" "unknown path"
assert_eq 405 "$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$P2M/metrics")" "POST"

ID1=$(sed -n 's/.*became leader as \([^ "]*\).*/\1/p' "$E2E_TMP/r1.log" | sed -n 1p)
assert_eq "$ID1" "$(kc -n "$GPUOP_NS" get lease "$LEASE" -o jsonpath='{.spec.holderIdentity}')" "lease holder"
assert_eq 1 "$(metric "$P1M" gpuop_leader_is_leader)" "r1 is leader"
assert_eq 0 "$(metric "$P2M" gpuop_leader_is_leader)" "r2 is follower"

log "the sample policy: only the leader applies and writes status"
kc apply -f - >/dev/null <<EOF
$(sed 's/name: default/name: ops-policy/' "$GPUOP_SRC/deploy/sample-gpupolicy.yaml")
EOF
# One gpuop-driver whatever the nodes' OS (a full reference needs no OS
# pool; the driver per OS pool is test 64_os_pools).
kc patch gpupolicy ops-policy --type=merge -p '{"spec":{"driver":{"image":"nvcr.io/nvidia/driver:595.91.07-ubuntu24.04","repository":null,"version":null}}}' >/dev/null
for op in driver container-toolkit device-plugin gpu-feature-discovery dcgm-exporter operator-validator; do
	wait_for 30 kc -n "$GPUOP_NS" get ds "gpuop-$op"
done
wait_for 30 bash -c "[ \"\$(kubectl --kubeconfig '$KUBECONFIG' get gpupolicy ops-policy -o jsonpath='{.status.conditions[?(@.type==\"Reconciled\")].status}')\" = True ]"
# (an invalid value: LabelInvalid is posted at once; a pause, LabelPaused,
# only after the event grace since b3a2bbc)
log "a finding appears (label invalid on $B): the leader posts an Event"
kc label node "$B" nvidia.com/gpu.deploy.container-toolkit=maybe >/dev/null
# (counted when sent: whether the API server takes it is events.c's business)
wait_for 30 bash -c "[ \"\$(curl -sf http://127.0.0.1:$P1M/metrics | awk '\$1 == \"gpuop_events_posted_total\" {print \$2}')\" -ge 1 ]"
assert_eq 0 "$(metric "$P1M" gpuop_events_dropped_total)" "events dropped by the leader"

# metrics_match PORT: /metrics agrees with gpuop check -o json right now.
metrics_match() {
	local port=$1 check m want got op kind
	check=$("$GPUOP_BIN" check --kubeconfig "$KUBECONFIG" --namespace "$GPUOP_NS" -o json) || true
	m=$(curl -sf --max-time 5 "http://127.0.0.1:$port/metrics")
	want=$(jq -r .summary.gpuNodes <<<"$check")
	got=$(awk '$1 == "gpuop_gpu_nodes" {print $2}' <<<"$m")
	[[ $want == "$got" ]] || { echo "gpu nodes: check $want, metrics $got"; return 1; }
	for op in $(jq -r '.operands[].name' <<<"$check"); do
		for f in expected:expectedNodes running:runningNodes; do
			want=$(jq -r --arg o "$op" --arg f "${f#*:}" '.operands[] | select(.name == $o) | .[$f]' <<<"$check")
			got=$(awk -v k="gpuop_operand_${f%%:*}_nodes{operand=\"$op\"}" '$1 == k {print $2}' <<<"$m")
			[[ $want == "$got" ]] || { echo "$op ${f%%:*}: check $want, metrics $got"; return 1; }
		done
	done
	for kind in Missing NotScheduled Unexpected OrderingViolation; do
		want=$(jq -r --arg k "$kind" '[.nodes[]?.findings[]? | select(.kind == $k)] | length' <<<"$check")
		got=$(awk -v k="$kind" 'index($1, "gpuop_findings{kind=\"" k "\"") == 1 {s += $2} END {print s + 0}' <<<"$m")
		[[ $want == "$got" ]] || { echo "$kind findings: check $want, metrics $got"; return 1; }
	done
}
log "/metrics agrees with gpuop check (leader and follower)"
wait_for 45 metrics_match "$P1M"
wait_for 45 metrics_match "$P2M"
CHECK=$("$GPUOP_BIN" check --kubeconfig "$KUBECONFIG" --namespace "$GPUOP_NS" -o json) || true
[[ $(jq -r '[.nodes[]?.findings[]?] | length' <<<"$CHECK") -gt 0 ]] || fail "the scenario should have findings ($B lacks labels)"
[[ $(metric "$P1M" gpuop_gpu_nodes) -ge 2 ]] || fail "gpuop_gpu_nodes below 2"

log "exactly one writes"
[[ $(metric "$P1M" gpuop_status_writes_total) -ge 1 ]] || fail "the leader wrote no status"
[[ $(metric "$P1M" gpuop_daemonset_applies_total) -ge 6 ]] || fail "the leader applied fewer than 6 DaemonSets"
assert_eq 0 "$(metric "$P2M" gpuop_status_writes_total)" "follower status writes"
assert_eq 0 "$(metric "$P2M" gpuop_daemonset_applies_total)" "follower applies"
assert_eq 0 "$(metric "$P2M" gpuop_events_posted_total)" "follower events"
[[ $(metric "$P2M" gpuop_reconciles_total) -ge 1 ]] || fail "the follower does not analyse"
! grep -qE 'applied DaemonSet|writing status' "$E2E_TMP/r2.log" || fail "the follower wrote"
grep -q 'applied DaemonSet' "$E2E_TMP/r1.log" || fail "the leader's log shows no apply"
# server-side apply answers 201 when it creates the object, 200 otherwise
patches=$(($(metric "$P1M" 'gpuop_api_requests_total{verb="PATCH",code="200"}' || true) + 0 + $(metric "$P1M" 'gpuop_api_requests_total{verb="PATCH",code="201"}' || true) + 0))
[[ $patches -ge 7 ]] || fail "API request counter: $patches successful PATCHes, want >= 7 (6 applies and a status write)"
[[ $(metric "$P1M" 'gpuop_informer_lists_total{resource="nodes"}') -ge 1 ]] || fail "informer lists"
[[ $(metric "$P1M" gpuop_event_to_status_seconds_count) -ge 1 ]] || fail "no event->status latency observed"
[[ $(metric "$P1M" gpuop_reconcile_duration_seconds_count) -ge 1 ]] || fail "no reconcile duration observed"
# (read whole first: grep -q exiting early would fail curl under pipefail)
page=$(curl -sf "http://127.0.0.1:$P1M/metrics")
grep -q '^# TYPE gpuop_event_to_status_seconds histogram$' <<<"$page" || fail "histogram TYPE line"

log "slow clients do not block /metrics"
exec 7<>"/dev/tcp/127.0.0.1/$P1M" # connects, sends nothing
exec 8<>"/dev/tcp/127.0.0.1/$P1M"
printf 'GET /metrics HTTP/1.1\r\nX-Huge: ' >&8
(head -c 200000 /dev/zero | tr '\0' a >&8) 2>/dev/null &
HUGE=$!
# Answered while the slow ones still hold their connections: a server they
# blocked would answer only after its 5 s read timeout dropped them. (No
# bound on one request's time: the machine may be loaded.)
for _ in 1 2 3 4 5; do
	curl -sf --max-time 4 "http://127.0.0.1:$P1M/metrics" >/dev/null || fail "/metrics blocked by a slow client"
done
kill "$HUGE" 2>/dev/null || true
wait "$HUGE" 2>/dev/null || true
exec 7>&- 8>&-

log "JSON logs: one object per line, each naming its object; no token anywhere"
jq -e -s 'length > 5 and all(.[]; has("ts") and has("level") and has("msg") and has("object"))' \
	"$E2E_TMP/r2.log" >/dev/null || fail "r2 log is not one JSON object per line, each with an object: $(head -c 600 "$E2E_TMP/r2.log")"
! grep -qF "$TOKEN" "$E2E_TMP/r1.log" "$E2E_TMP/r2.log" || fail "a log contains the token"

log "kill -9 the leader: the follower takes over and reconciles a change"
ID2=$(jq -r 'select(.msg | startswith("trying to become leader as")) | .msg' "$E2E_TMP/r2.log" | sed -n 1p | awk '{print $NF}')
[[ -n $ID2 ]] || fail "no identity in r2's log"
kill -KILL "$(pid_of r1)"
t0=$(date +%s)
kc patch gpupolicy ops-policy --type=merge -p '{"spec":{"gfd":{"enabled":false}}}' >/dev/null
wait_for 60 bash -c "! kubectl --kubeconfig '$KUBECONFIG' -n $GPUOP_NS get ds gpuop-gpu-feature-discovery >/dev/null 2>&1"
took=$(($(date +%s) - t0))
log "took over and reconciled in ${took}s (lease duration 15s)"
# a lease duration, a retry period, a reconcile: generous for a loaded machine
((took <= 15 + 30)) || fail "takeover took ${took}s, more than lease duration + 30s"
assert_eq "$ID2" "$(kc -n "$GPUOP_NS" get lease "$LEASE" -o jsonpath='{.spec.holderIdentity}')" "lease names r2"
assert_eq 1 "$(metric "$P2M" gpuop_leader_is_leader)" "r2 leads"
[[ $(metric "$P2M" gpuop_daemonset_deletes_total) -ge 1 ]] || fail "r2 deleted nothing"
[[ $(kc -n "$GPUOP_NS" get lease "$LEASE" -o jsonpath='{.spec.leaseTransitions}') -ge 1 ]] || fail "leaseTransitions"

log "clean shutdown releases the Lease"
kill -TERM "$(pid_of r2)"
wait_for 60 grep -q 'stopped (exit 0)' "$E2E_TMP/r2.log"
grep -q '"released the lease"' "$E2E_TMP/r2.log" || fail "r2 did not release"
assert_eq "" "$(kc -n "$GPUOP_NS" get lease "$LEASE" -o jsonpath='{.spec.holderIdentity}')" "released holder"

log "a new replica acquires a released Lease at once"
P3M=$(free_port) P3H=$(free_port)
start_replica r3 "$P3M" "$P3H" --leader-elect-lease-duration=4s --leader-elect-renew-deadline=3s \
	--leader-elect-retry-period=500ms
wait_for 60 bash -c "grep -q 'became leader' '$E2E_TMP/r3.log'"
# "at once": from its first try, by its own log's clock, well within the
# lease duration a held Lease would make it wait (not process start-up,
# which a loaded machine stretches)
log_ms() { date -d "$(grep -m1 "$1" "$E2E_TMP/r3.log" | awk '{print $1}')" +%s%3N; }
waited=$(($(log_ms 'became leader') - $(log_ms 'trying to become leader')))
log "r3 acquired the released Lease ${waited} ms after its first try"
((waited < 4000)) || fail "acquiring a released lease waited ${waited} ms, a lease duration (4 s)"

log "a leader whose Lease is taken stops writing and exits non-zero"
kc -n "$GPUOP_NS" patch lease "$LEASE" --type=merge \
	-p '{"spec":{"holderIdentity":"someone-else","renewTime":"2030-01-01T00:00:00.000000Z"}}' >/dev/null
pid3=$(pid_of r3)
wait_for 60 grep -q 'stopped (exit' "$E2E_TMP/r3.log"
rc=0
wait "$pid3" 2>/dev/null || rc=$?
assert_eq 1 "$rc" "exit status of the replica that lost the lease"
grep -q 'lost leadership' "$E2E_TMP/r3.log" || fail "r3 did not log the loss"
assert_eq someone-else "$(kc -n "$GPUOP_NS" get lease "$LEASE" -o jsonpath='{.spec.holderIdentity}')" "no release after a loss"
log "PASS"
