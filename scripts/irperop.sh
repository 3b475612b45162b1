#!/bin/bash
# irperop.sh BINARY BENCH N1 N2: instructions per op of one Go benchmark,
# counted by valgrind's callgrind, so the machine's load does not move
# them: (Ir at N2 iterations - Ir at N1) / (N2 - N1). Build the binaries
# with `go test -c`; compare two of them side by side, several times, and
# take medians (PERF.md, "Wait and hold histograms"): now and then the
# runtime adds some hundred million instructions to one run.
#   scripts/irperop.sh ./engine.test 'BenchmarkAcquireRelease/uncontended$' 50000 250000
set -euo pipefail
[ $# -eq 4 ] || { echo "usage: $0 BINARY BENCH N1 N2" >&2; exit 2; }
bin=$1 bench=$2 n1=$3 n2=$4
ir() {
	GOGC=off GODEBUG=asyncpreemptoff=1 GOMAXPROCS=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
		"$bin" -test.run '^$' -test.bench "$bench" -test.benchtime "${1}x" 2>&1 | awk '/Collected/ {print $4}'
}
a=$(ir "$n1")
b=$(ir "$n2")
echo "$bench $(((b - a) / (n2 - n1))) Ir/op"
