#!/usr/bin/env bash
# The Helm chart (deploy/helm/gpuop), offline: no cluster needed.
#   - `helm lint --strict` is clean with the defaults and each values file
#     of test/data/helm/values/;
#   - `helm template` of each case equals its golden file
#     (test/data/helm/<case>.yaml; the case "defaults" uses no values file);
#   - each GpuPolicy the chart renders passes gpuop's own validation
#     (`gpuop render --strict`), and what gpuop makes of it is what the
#     values say (images joined from repository/image/version, a digest with
#     @, pull secrets joined, disabled operands absent);
#   - bad image keys fail the install with a message naming the key;
#   - `helm package` carries crd/gpupolicy.yaml byte for byte (the chart's
#     crds/ holds a copy; the helm/crd test keeps the two equal)
# Regenerate the golden files after a deliberate change:
#   test/helm/template.sh --update      (then review `git diff test/data/helm`)
# Environment: GPUOP_BIN (the gpuop binary, for the render checks),
# GPUOP_VERSION (CMake's project version), GPUOP_HELM (a helm binary; by
# default the lab's, from test/lab/build).
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CHART=$SRC/deploy/helm/gpuop
DATA=$SRC/test/data/helm
NS=gpuop-system
KVER=1.36.0
update=0
[ "${1:-}" = --update ] && update=1

fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }
ok() { printf 'ok: %s\n' "$*"; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# helm: GPUOP_HELM, else the lab's binary cache (test/lab/build prints its
# folder; a cache hit takes a second). Without Go the lab cannot be built:
# skip (77) rather than fail on a machine that only builds gpuop.
helm=${GPUOP_HELM:-}
if [ -z "$helm" ]; then
    if ! command -v go >/dev/null 2>&1; then
        echo "SKIP: no GPUOP_HELM and no Go to build the lab's helm" >&2
        exit 77
    fi
    bindir=$("$SRC/test/lab/build") || fail "test/lab/build failed"
    helm=$bindir/helm
fi
[ -x "$helm" ] || fail "no helm at $helm"
# Helm keeps caches and config under $HOME unless told otherwise.
export HELM_CACHE_HOME=$tmp/cache HELM_CONFIG_HOME=$tmp/config HELM_DATA_HOME=$tmp/data
"$helm" version --short

# Chart.yaml's versions are gpuop's.
if [ -n "${GPUOP_VERSION:-}" ]; then
    grep -qx "appVersion: \"$GPUOP_VERSION\"" "$CHART/Chart.yaml" ||
        fail "Chart.yaml appVersion is not gpuop's version $GPUOP_VERSION"
    grep -qx "version: $GPUOP_VERSION" "$CHART/Chart.yaml" ||
        fail "Chart.yaml version is not gpuop's version $GPUOP_VERSION"
    ok "Chart.yaml version and appVersion are $GPUOP_VERSION"
fi

cases=(defaults)
for f in "$DATA"/values/*.yaml; do
    cases+=("$(basename "$f" .yaml)")
done

vflag() { [ "$1" = defaults ] || printf -- '-f\n%s\n' "$DATA/values/$1.yaml"; }

for c in "${cases[@]}"; do
    mapfile -t vf < <(vflag "$c")
    # Lint: no error, no warning (the icon recommendation is INFO).
    if ! "$helm" lint --strict --kube-version "$KVER" --namespace "$NS" "${vf[@]}" "$CHART" \
        >"$tmp/lint" 2>&1 || grep -Eq '\[(WARNING|ERROR)\]' "$tmp/lint"; then
        cat "$tmp/lint" >&2
        fail "helm lint ($c)"
    fi
    ok "helm lint --strict ($c)"

    "$helm" template gpuop "$CHART" --namespace "$NS" --kube-version "$KVER" "${vf[@]}" \
        >"$tmp/$c.yaml" || fail "helm template ($c)"
    if [ "$update" -eq 1 ]; then
        cp "$tmp/$c.yaml" "$DATA/$c.yaml"
        echo "updated $DATA/$c.yaml"
    elif ! diff -u "$DATA/$c.yaml" "$tmp/$c.yaml"; then
        fail "helm template ($c) differs from test/data/helm/$c.yaml (regenerate: test/helm/template.sh --update)"
    else
        ok "helm template ($c) matches its golden file"
    fi
done

# The rendered GpuPolicies, through gpuop's own parser and renderer.
if [ -n "${GPUOP_BIN:-}" ]; then
    for c in defaults gpu-operator; do
        "$GPUOP_BIN" render -f "$tmp/$c.yaml" --strict -n "$NS" >"$tmp/$c.ds" 2>"$tmp/$c.err" || {
            cat "$tmp/$c.err" >&2
            fail "gpuop render --strict rejects the GpuPolicy of case $c"
        }
        ok "gpuop render --strict accepts the GpuPolicy of case $c"
    done
    n=$(grep -c '^kind: DaemonSet' "$tmp/defaults.ds" || true)
    [ "$n" = 6 ] || fail "defaults: $n DaemonSets, not 6"
    ds=$tmp/gpu-operator.ds
    n=$(grep -c '^kind: DaemonSet' "$ds" || true)
    [ "$n" = 4 ] || fail "gpu-operator values: $n DaemonSets, not 4 (driver and gfd are disabled)"
    ! grep -q 'name: gpuop-driver$' "$ds" || fail "gpu-operator values: driver.enabled=false rendered a driver DaemonSet"
    for want in \
        'image: registry.example.internal/nvidia/k8s/container-toolkit:v1.17.8-ubuntu20.04' \
        'image: registry.example.internal/nvidia/k8s-device-plugin@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef' \
        'image: registry.example.internal/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04' \
        'name: mirror-pull' 'name: other-pull' 'maxUnavailable: "25%"' 'tolerationSeconds: 300' \
        'value: /run/k3s/containerd/containerd.sock' 'team: gpu' 'example.com/owner: gpu-platform' \
        'imagePullPolicy: Always' '- "--with-wait"'; do
        grep -qF -- "$want" "$ds" || fail "gpu-operator values: gpuop render output lacks '$want'"
    done
    ok "gpu-operator values: gpuop renders the operands the values describe"
fi

# Bad image keys stop the install with the key named.
for bad in "driver.repository=r.example/x" "toolkit.version=v1"; do
    key=${bad%%=*}
    if "$helm" template gpuop "$CHART" -n "$NS" --kube-version "$KVER" --set "$bad" \
        >/dev/null 2>"$tmp/bad"; then
        fail "--set $bad rendered"
    fi
    grep -q "${key}" "$tmp/bad" || { cat "$tmp/bad" >&2; fail "--set $bad: message does not name $key"; }
done
ok "an image repository or version without an image fails, naming the key"
"$helm" template gpuop "$CHART" -n "$NS" --kube-version "$KVER" --set daemonsets.rollingUpdate.maxUnavailable=3 \
    --set daemonsets.tolerations=null --set daemonsets.priorityClassName= >"$tmp/int.yaml"
grep -q '^      maxUnavailable: 3$' "$tmp/int.yaml" || fail "maxUnavailable=3 is not rendered as the integer 3"
grep -q '^    priorityClassName: ""$' "$tmp/int.yaml" || fail "daemonsets.priorityClassName= is not rendered as \"\""
"$helm" template gpuop "$CHART" -n "$NS" --kube-version "$KVER" --set daemonsets.updateStrategy=OnDelete \
    >"$tmp/ondelete.yaml"
! grep -q 'rollingUpdate' "$tmp/ondelete.yaml" || fail "OnDelete still writes rollingUpdate"
"$helm" template gpuop "$CHART" -n "$NS" --kube-version "$KVER" --set-json 'daemonsets.tolerations=[]' \
    >"$tmp/notol.yaml"
grep -q '^    tolerations: \[\]$' "$tmp/notol.yaml" || fail "daemonsets.tolerations=[] is not written as []"
ok "maxUnavailable, priorityClassName, updateStrategy and tolerations edge cases"

# One source for the CRD: the packaged chart carries crd/gpupolicy.yaml.
"$helm" package "$CHART" --destination "$tmp/pkg" >/dev/null
tar -xzf "$tmp/pkg"/gpuop-*.tgz -C "$tmp/pkg"
cmp "$tmp/pkg/gpuop/crds/gpupolicy.yaml" "$SRC/crd/gpupolicy.yaml" ||
    fail "the packaged chart's crds/gpupolicy.yaml is not crd/gpupolicy.yaml"
ok "helm package carries crd/gpupolicy.yaml unchanged"
echo "PASS"
