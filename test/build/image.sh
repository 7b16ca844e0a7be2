#!/usr/bin/env bash
# build/image: scripts/image packs the static gpuop into the image the chart
# runs, and the archive is what the chart and the kubelet expect: tagged
# docker.io/library/gpuop:VERSION, one layer holding exactly the binary,
# passwd, group and a CA bundle; USER 65532:65532, ENTRYPOINT /gpuop, CMD
# run; the OCI version and revision labels; a few MB; and the binary in the
# layer runs in an empty root. Needs root (buildah, chroot): skips (77)
# otherwise, saying so.
# Usage: image.sh GPUOP_BINARY VERSION
set -euo pipefail
bin=$1 version=$2
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }
if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: buildah and chroot need root here" >&2
    exit 77
fi

archive=$("$src/scripts/image" --binary "$bin")
[ -f "$archive" ] || fail "scripts/image printed '$archive', not an archive"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -xf "$archive" -C "$tmp"
m=$tmp/manifest.json
[ "$(jq -r '.[0].RepoTags | join(",")' "$m")" = "docker.io/library/gpuop:$version" ] ||
    fail "RepoTags: $(jq -c '.[0].RepoTags' "$m")"
[ "$(jq '.[0].Layers | length' "$m")" = 1 ] || fail "not one layer: $(jq -c '.[0].Layers' "$m")"
cfg=$tmp/$(jq -r '.[0].Config' "$m")
c() { jq -r "$1" "$cfg"; }
[ "$(c .config.User)" = 65532:65532 ] || fail "User is $(c .config.User)"
[ "$(c '.config.Entrypoint | join(" ")')" = /gpuop ] || fail "Entrypoint is $(c -c .config.Entrypoint)"
[ "$(c '.config.Cmd | join(" ")')" = run ] || fail "Cmd is $(c .config.Cmd)"
[ "$(c '.config.Labels["org.opencontainers.image.version"]')" = "$version" ] || fail "version label"
rev=$(c '.config.Labels["org.opencontainers.image.revision"]')
head=$(git -C "$src" rev-parse HEAD)
[ "${rev%-dirty}" = "$head" ] || fail "revision label $rev, HEAD is $head"
[[ -n $(c '.config.Labels["org.opencontainers.image.source"]') ]] || fail "no source label"
echo "ok: docker.io/library/gpuop:$version, one layer, USER 65532:65532, ENTRYPOINT /gpuop run, labels (revision $rev)"

layer=$tmp/$(jq -r '.[0].Layers[0]' "$m")
files=$(tar -tf "$layer" | grep -v '/$' | sort | tr '\n' ' ')
[ "$files" = "etc/group etc/passwd etc/ssl/certs/ca-certificates.crt gpuop " ] || fail "layer holds: $files"
mkdir "$tmp/root"
tar -xf "$layer" -C "$tmp/root"
grep -q '^gpuop:x:65532:65532:' "$tmp/root/etc/passwd" || fail "no user 65532 in /etc/passwd"
grep -q 'BEGIN CERTIFICATE' "$tmp/root/etc/ssl/certs/ca-certificates.crt" || fail "empty CA bundle"
out=$(chroot "$tmp/root" /gpuop version) || fail "the image's /gpuop does not run in its own root"
grep -q "^gpuop $version\b" <<<"${out%%$'\n'*}" || fail "the image's gpuop says: $out"
size=$(stat -c %s "$archive")
gz=$(gzip -9 -c "$archive" | wc -c)
[ "$size" -lt 8000000 ] || fail "the image is $size bytes; it should be a few MB"
echo "ok: the layer holds gpuop, passwd, group, CA bundle; /gpuop runs in it; $size bytes, $gz gzipped"
