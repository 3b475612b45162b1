#!/usr/bin/env bash
# core-counts.sh prints the counts issue #37 ("a leaner core") tracks, each
# from the source as it stands, so that a change can show them before and
# after (run it on two trees). Run from the repository root.
set -euo pipefail
cd "$(dirname "$0")/.."

src() { ls "$@" 2>/dev/null | grep -v '_test\.go$' || true; }

# 1. The methods of session.Transport: the lines of its interface block
#    that declare a method.
transport=$(awk '/^type Transport interface/{on=1; next} on && /^}/{exit} on && /^\t[A-Z][A-Za-z]*\(/{n++} END{print n+0}' session/transport.go)

# 2. The session's calls into its transport: s.t.Method( in the session
#    package (tests excluded).
calls=$(cat $(src session/*.go) | grep -o '\bs\.t\.[A-Z][A-Za-z]*(' | wc -l)

# 3. Sequencers of owed answers: what keeps a connection's answers in
#    request order while some are owed. The one generic queue
#    (internal/owed), plus the hand-written FIFOs each transport had
#    before it: the line protocol's owed count with its latency ring,
#    godistlock's slice of owed answers, HTTP's slice of results.
generic=$(cat $(src internal/owed/*.go) 2>/dev/null | grep -c '^type Queue\[T any\] struct' || true)
handwritten=$(cat $(src session/*.go httpapi/*.go) | grep -c -E '^type owedLatency struct|^	owed +\[\]godistlockOwed|^	got +\[\]engine\.Result' || true)
sequencers=$((generic + handwritten))

# 4. Mode checks outside the appliers (session/local.go, replicated.go,
#    applier.go): calls of pipelined() and HalfOpen() (since the session
#    learns it once as it opens, reads of s.halfOpen), and the request
#    kinds a single node answers specially (barrier, stable-ref), in the
#    session and cluster packages.
modes=$(cat $(src session/*.go cluster/*.go | grep -v -e 'session/local.go' -e 'session/replicated.go' -e 'session/applier.go') |
	grep -c -e 'pipelined()' -e 'HalfOpen()' -e 's\.halfOpen\b' -e 'OpBarrier, vocab.OpStableRef' || true)

# 5. The FSM: its struct's fields (lines declaring one or more) and the
#    lines of cluster/fsm.go.
fsmFields=$(awk '/^type FSM struct/{on=1; next} on && /^}/{exit} on && /^\t[a-zA-Z_][a-zA-Z0-9_, ]* [^\/]/{n++} END{print n+0}' cluster/fsm.go)
fsmLines=$(wc -l < cluster/fsm.go)

# 6. Binary codecs of a request: functions that encode a vocab.Request's
#    fields for the log or the engine's queue.
codecs=$(grep -l -e 'byte(r.Op)' $(src engine/*.go cluster/*.go vocab/*.go) | wc -l)

printf '%-44s %s\n' "Transport methods" "$transport" \
	"session calls into its transport" "$calls" \
	"sequencers of owed answers" "$sequencers" \
	"mode checks outside the appliers" "$modes" \
	"FSM fields / cluster/fsm.go lines" "$fsmFields / $fsmLines" \
	"request codecs" "$codecs"
