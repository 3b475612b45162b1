#!/usr/bin/env bash
# Runs the suite's scaling workload (issue #21) on a borrowed many-core
# x86-64 host from what benchmarks/scaling/prepare.sh put in .scaling/:
# no Go toolchain, network or redis-server needed there, only bash and
# /bin/sh. Run as root from the repository root (root lets the suite raise
# RLIMIT_NOFILE for 1,000 connections):
#
#   bash benchmarks/scaling/run.sh OUTDIR
#
# OUTDIR receives at most 6 files, side by side: host.txt (the host's
# facts), scaling.log (everything the suite printed), PERF.md
# (.scaling/PERF.md with its scaling section rewritten), scaling-full.json
# (the raw results), full-scaling-throughput.svg (the chart) and, if the
# suite failed, servers.log. PERF.md links the last two as
# benchmarks/results/…, where they go in the tree: copy PERF.md over the
# tree's and the two into benchmarks/results/. The report goes to stdout
# at the end.
#
# Defaults suit a 16-core host: servers on CPUs 0-7, load generator on
# 8-15, dflockd-ng at 1, 2, 4, 8 loops and Redis single-threaded and with
# 4 io-threads, at 1000x1 and 200x16, 3 repetitions of 1 s warm-up + 3 s:
# 36 runs, about 3 minutes. Environment overrides (for a dry run on a
# small machine): SCALING_SERVER_CPUS, SCALING_CLIENT_CPUS, SCALING_LOOPS,
# SCALING_SHAPES, SCALING_REPS, SCALING_WARMUP, SCALING_DURATION,
# SCALING_REDIS_IO_THREADS, SCALING_TIMEOUT (seconds; default 420, under
# the 8 minutes the host is lent for).
set -uo pipefail

out=${1:?usage: bash benchmarks/scaling/run.sh OUTDIR}
here=.
[[ $0 == */* ]] && here=${0%/*}
cd "$here/../.." || exit 1
kit=.scaling
for f in "$kit/bin/dflocksuite" "$kit/bin/dflockd" "$kit/bin/redis-server" "$kit/lib/ld-linux-x86-64.so.2" "$kit/PERF.md"; do
	if [[ ! -e $f ]]; then
		echo "run: $f missing: run benchmarks/scaling/prepare.sh where Go is, then copy the tree with .scaling/" >&2
		exit 1
	fi
done
# The suite writes the results where PERF.md's links expect them, under
# benchmarks/results/ beside it; they are moved up to OUTDIR at the end.
res=$out/benchmarks/results
mkdir -p "$res" || exit 1

# The host, from /proc and /sys only (no lscpu needed).
host_facts() {
	local n=0 model="" mhz="" cache="" cores="" siblings="" k v
	local -A sockets=()
	while IFS=: read -r k v; do
		k=${k%"${k##*[![:space:]]}"}
		v=${v# }
		case $k in
		processor) n=$((n + 1)) ;;
		"model name") model=$v ;;
		"cpu MHz") mhz=$v ;;
		"cache size") cache=$v ;;
		"cpu cores") cores=$v ;;
		siblings) siblings=$v ;;
		"physical id") sockets[$v]=1 ;;
		esac
	done </proc/cpuinfo
	echo "nproc: $(nproc 2>/dev/null || echo "$n (no nproc; /proc/cpuinfo)")"
	echo "CPU(s): $n"
	echo "Model name: $model"
	echo "Socket(s): ${#sockets[@]}"
	echo "Core(s) per socket: ${cores:-?}"
	if [[ -n $cores && -n $siblings && $cores -gt 0 ]]; then
		echo "Thread(s) per core: $((siblings / cores))"
	fi
	echo "CPU MHz: $mhz"
	echo "Cache size: $cache"
	local nodes=(/sys/devices/system/node/node[0-9]*)
	[[ -e ${nodes[0]} ]] && echo "NUMA node(s): ${#nodes[@]}"
	local f sib seen=" "
	for f in /sys/devices/system/cpu/cpu[0-9]*/topology/thread_siblings_list; do
		[[ -r $f ]] && read -r sib <"$f" && [[ $seen != *" $sib "* ]] && seen+="$sib "
	done
	echo "Thread siblings (CPUs sharing a core):$seen"
	local l a b c
	while read -r k v; do
		[[ $k == Cpus_allowed_list: ]] && echo "Affinity of this shell: $v"
	done </proc/self/status
	read -r l </proc/sys/kernel/osrelease && echo "Kernel: $l"
	while read -r k v _; do
		[[ $k == MemTotal: ]] && echo "Memory: $((v / 1024)) MiB"
	done </proc/meminfo
	read -r a b c _ </proc/loadavg && echo "Load average: $a $b $c"
	echo "RLIMIT_NOFILE (soft/hard): $(ulimit -Sn)/$(ulimit -Hn)"
	echo "User: uid $(id -u 2>/dev/null || echo "$UID")"
	cat "$kit/VERSION" 2>/dev/null
}
host_facts | tee "$out/host.txt"
echo

srv=${SCALING_SERVER_CPUS:-0-7}
cli=${SCALING_CLIENT_CPUS:-8-15}
loops=${SCALING_LOOPS:-1,2,4,8}
shapes=${SCALING_SHAPES:-1000x1,200x16}
reps=${SCALING_REPS:-3}
warm=${SCALING_WARMUP:-1s}
dur=${SCALING_DURATION:-3s}
io=${SCALING_REDIS_IO_THREADS:-4}
limit=${SCALING_TIMEOUT:-420}

cp "$kit/PERF.md" "$out/PERF.md" || exit 1
: >"$out/scaling.log"
# Servers inherit the limit through the suite, which raises it further
# where allowed; as root this can go past the hard limit.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
cmd=("$kit/bin/dflocksuite" --workloads scaling --install=false --no-etcd
	--dflockd-bin "$kit/bin/dflockd" --redis-bin "$kit/bin/redis-server"
	--scaling-server-cpus "$srv" --scaling-client-cpus "$cli" --scaling-loops "$loops"
	--scaling-shapes "$shapes" --scaling-redis-io-threads "$io"
	--reps "$reps" --warmup "$warm" --duration "$dur"
	--perf "$out/PERF.md" --results "$res")
if command -v timeout >/dev/null 2>&1; then
	cmd=(timeout -k 15 "$limit" "${cmd[@]}")
fi
echo "run: ${cmd[*]}"
start=$SECONDS
# Everything into the log; the progress lines to stdout as they come (in
# bash: the host may lack tee and grep).
"${cmd[@]}" 2>&1 | while IFS= read -r l; do
	printf '%s\n' "$l" >>"$out/scaling.log"
	[[ $l == "[scaling "* || $l == "dflocksuite: "* ]] && printf '%s\n' "$l"
done
rc=${PIPESTATUS[0]}
echo "run: the suite ended with status $rc after $((SECONDS - start)) s"
if ((rc != 0)); then
	mapfile -t log <"$out/scaling.log"
	echo "run: the last lines of $out/scaling.log:"
	printf '%s\n' "${log[@]:$((${#log[@]} > 40 ? ${#log[@]} - 40 : 0))}"
	[[ -s /tmp/dflocksuite-servers.log ]] && cp /tmp/dflocksuite-servers.log "$out/servers.log"
	exit "$rc"
fi
# The section as PERF.md now has it.
echo
in="" found=""
while IFS= read -r l; do
	case $l in
	"<!-- suite:scaling:begin -->") in=yes found=yes ;;
	"<!-- suite:scaling:end -->") in="" ;;
	*) [[ -n $in ]] && printf '%s\n' "$l" ;;
	esac
done <"$out/PERF.md"
if [[ -z $found ]]; then
	echo "run: $out/PERF.md has no scaling section" >&2
	exit 1
fi
mv "$res"/* "$out"/ && rmdir "$res" "$out/benchmarks" || exit 1
echo "run: done in $((SECONDS - start)) s; $out holds:"
for f in "$out"/*; do
	echo "  $f"
done
exit 0
