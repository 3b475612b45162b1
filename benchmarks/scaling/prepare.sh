#!/usr/bin/env bash
# Prepares .scaling/ at the repository root for benchmarks/scaling/run.sh,
# which runs the suite's scaling workload on a borrowed many-core x86-64
# host that has no Go toolchain, no network and no redis-server:
#
#   .scaling/bin/dflockd       static (CGO_ENABLED=0) linux/amd64 ./cmd/dflockd
#   .scaling/bin/dflocksuite   static linux/amd64 ./benchmarks/cmd/dflocksuite
#   .scaling/bin/redis-server  a /bin/sh script that runs the carried loader
#                              on the carried redis-server and libraries
#   .scaling/lib/              redis-server, every library ldd lists, and
#                              the dynamic loader ld-linux-x86-64.so.2
#   .scaling/PERF.md           the PERF.md whose scaling section run.sh rewrites
#   .scaling/VERSION           the commit it was built from
#
# Run here, from anywhere in the tree: bash benchmarks/scaling/prepare.sh
# It installs redis-server with apt-get if missing, and prints the size.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
# Everything carried must stay well under this (the copy to the host).
limit_mib=60

out=.scaling
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"

build() { # build OUTPUT PACKAGE
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -ldflags='-s -w' -o "$1" "$2"
}
echo "prepare: building static linux/amd64 binaries …"
build "$out/bin/dflockd" ./cmd/dflockd
build "$out/bin/dflocksuite" ./benchmarks/cmd/dflocksuite

if ! command -v redis-server >/dev/null 2>&1; then
	echo "prepare: redis-server missing: apt-get install -y redis-server …"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
fi
redis=$(readlink -f "$(command -v redis-server)")
cp "$redis" "$out/lib/redis-server"
# ldd lines: "libx.so.1 => /path/libx.so.1 (0x…)", the loader as
# "/lib64/ld-linux-x86-64.so.2 (0x…)", and linux-vdso (no file).
loader=""
while read -r name arrow path _; do
	if [[ $arrow == "=>" && $path == /* ]]; then
		cp -L "$path" "$out/lib/$name"
	elif [[ $name == /*ld-linux* ]]; then
		cp -L "$name" "$out/lib/ld-linux-x86-64.so.2"
		loader=yes
	fi
done < <(ldd "$redis")
if [[ -z $loader ]]; then
	echo "prepare: ldd $redis lists no ld-linux loader" >&2
	exit 1
fi
# The wrapper keeps the server's pid (exec all the way), so the suite
# measures and pins redis-server itself.
cat >"$out/bin/redis-server" <<'SH'
#!/bin/sh
# redis-server with its own libraries and loader (benchmarks/scaling/prepare.sh).
lib=${0%/*}/../lib
exec "$lib/ld-linux-x86-64.so.2" --library-path "$lib" "$lib/redis-server" "$@"
SH
chmod +x "$out/bin/redis-server"

cp PERF.md "$out/PERF.md"
{
	echo "commit $(git rev-parse HEAD 2>/dev/null || echo unknown)"
	echo "uncommitted changes: $(git status --porcelain 2>/dev/null | wc -l) path(s)"
	echo "built $(date -u '+%Y-%m-%d %H:%M UTC') with $(go version)"
	echo "redis $("$out/bin/redis-server" --version)"
} >"$out/VERSION"

# The carried redis must run without this host's libraries.
env -i PATH=/usr/bin:/bin "$out/bin/redis-server" --version >/dev/null
file "$out/bin/dflockd" "$out/bin/dflocksuite" 2>/dev/null | sed 's/^/prepare: /' || true

bytes=$(du -sb "$out" | cut -f1)
mib=$(( (bytes + 1048575) / 1048576 ))
ls -l "$out/bin" "$out/lib" | sed 's/^/  /'
echo "prepare: $out is $bytes bytes (${mib} MiB, limit ${limit_mib} MiB)"
if (( mib > limit_mib )); then
	echo "prepare: $out is over ${limit_mib} MiB" >&2
	exit 1
fi
