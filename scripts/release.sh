#!/usr/bin/env bash
# Builds release binaries: static (CGO off) dflockd and dflockctl for
# linux/amd64 and linux/arm64, the version stamped into both, with
# SHA-256 sums.
#   scripts/release.sh [VERSION] [OUTDIR]
# VERSION defaults to `git describe --tags --always --dirty`, OUTDIR to dist/release.
# The release number is version.Number (version/version.go); VERSION
# names the files and is stamped as the build's label, which --version
# shows after the number ("0.2.0+ci-check") unless it is the number
# itself (a tag v0.2.0). The revision is stamped too: -buildvcs=false in
# GOFLAGS, or a tree without .git, would leave go build without it.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
out=${2:-dist/release}
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
if [ "$revision" != unknown ] && ! git diff --quiet HEAD -- 2>/dev/null; then revision+=-dirty; fi
pkg=github.com/dflockd-ng/dflockd/version
mkdir -p "$out"
for arch in amd64 arm64; do
  for cmd in dflockd dflockctl; do
    bin="$out/${cmd}-${version}-linux-${arch}"
    CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath \
      -ldflags "-s -w -X ${pkg}.build=${version} -X ${pkg}.revision=${revision}" -o "$bin" "./cmd/${cmd}"
    echo "$bin"
  done
done
(cd "$out" && sha256sum ./*-"${version}"-linux-* > "SHA256SUMS-${version}")
echo "$out/SHA256SUMS-${version}"
