#!/usr/bin/env bash
# Builds release binaries: static (CGO off) dflockd and dflockctl for
# linux/amd64 and linux/arm64, the version stamped into both, with
# SHA-256 sums.
#   scripts/release.sh [VERSION] [OUTDIR]
# VERSION defaults to `git describe --tags --always --dirty`, OUTDIR to dist/release.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
out=${2:-dist/release}
mkdir -p "$out"
for arch in amd64 arm64; do
  for cmd in dflockd dflockctl; do
    bin="$out/${cmd}-${version}-linux-${arch}"
    CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath \
      -ldflags "-s -w -X main.version=${version}" -o "$bin" "./cmd/${cmd}"
    echo "$bin"
  done
done
(cd "$out" && sha256sum ./*-"${version}"-linux-* > "SHA256SUMS-${version}")
echo "$out/SHA256SUMS-${version}"
