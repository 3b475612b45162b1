#!/usr/bin/env bash
# Builds the server image (dist/container/Containerfile) with podman from a
# static binary of scripts/release.sh, and prints the image's name.
#   scripts/container.sh [VERSION] [RELEASEDIR] [ARCH]
# VERSION defaults as release.sh's (git describe), RELEASEDIR to
# dist/release, ARCH to amd64 (or arm64: no emulation is needed, as the
# build runs nothing in the image). The image is named $IMAGE, by default
# localhost/dflockd-ng:VERSION (VERSION-arm64 for arm64).
#   scripts/container.sh inspect IMAGE
# prints what a deployment depends on of an image's configuration: user,
# entrypoint and command, environment, ports, volumes, health check,
# labels. CI checks each of them, and the binary in the image, with
#   DFLOCKD_CONTAINER_TEST=1 go test -run TestContainerImage ./cmd/dflockd
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = inspect ]; then
  [ $# -eq 2 ] || { echo "usage: scripts/container.sh inspect IMAGE" >&2; exit 2; }
  exec podman image inspect --format \
'user        {{.Config.User}}
entrypoint  {{json .Config.Entrypoint}}
cmd         {{json .Config.Cmd}}
env         {{json .Config.Env}}
ports       {{json .Config.ExposedPorts}}
volumes     {{json .Config.Volumes}}
workdir     {{.Config.WorkingDir}}
stopsignal  {{.Config.StopSignal}}
healthcheck {{json .HealthCheck}}
labels      {{json .Labels}}' "$2"
fi

version=${1:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
release=${2:-dist/release}
arch=${3:-amd64}
binary="dflockd-${version}-linux-${arch}"
if [ ! -f "$release/$binary" ]; then
  echo "scripts/container.sh: $release/$binary missing: run scripts/release.sh $version $release first" >&2
  exit 1
fi
image=${IMAGE:-localhost/dflockd-ng:${version}}
if [ "$arch" != amd64 ] && [ -z "${IMAGE:-}" ]; then image+="-${arch}"; fi

# The context holds only what the image copies: the binary, and
# rootfs/data, empty and private, which becomes /data owned by the image's
# user (its mode kept: --chmod does not reach a directory a COPY creates).
context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
cp "$release/$binary" "$context/$binary"
mkdir -p -m 0700 "$context/rootfs/data"

# --format docker keeps the HEALTHCHECK (the OCI format has none);
# --layers=false leaves no intermediate images behind.
podman build --quiet --format docker --layers=false --platform "linux/${arch}" \
  -f dist/container/Containerfile \
  --build-arg BINARY="$binary" --build-arg VERSION="$version" \
  --build-arg REVISION="$(git rev-parse HEAD 2>/dev/null || echo unknown)" \
  -t "$image" "$context" >/dev/null
echo "$image"
