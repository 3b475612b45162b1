package session

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/fence"
)

// BenchmarkRequestPathParallel is the request path — framing, parsing,
// engine, reply encoding, the write into the connection's output — run
// by several loop goroutines at once against one Hub and engine, as the
// gnet loops of a server do (fakeloop_test.go). Run it with -cpu 1,2: a
// worker is one loop, with its own share of the parConns connections and
// its own Scratch; the connections and keys are the same whatever the
// number of workers, so the rates compare.
//
// keys: every connection locks and releases keys of its own, 2048 in
// all over 256 shards (the default from 16 cores up), 16 pairs
// pipelined per read: the workers share the engine's shards but never a
// key.
//
// keys-unshared: the same, but each worker has an engine and hub of its
// own, so the workers share nothing. It is the control: the scaling this
// machine gives the request path when nothing is shared, against which
// keys shows what sharing the shards costs.
//
// hot: every connection locks and releases the same key, so the workers
// contend on one shard and every grant hands off through the FIFO and a
// loop's inbox: the contended case.
//
// Each reports ns/pair and pairs/s (wall time, all workers together) and
// cpu-ns/pair (the process's CPU time), a pair being a lock and its
// release.
func BenchmarkRequestPathParallel(b *testing.B) {
	b.Run("keys", func(b *testing.B) { benchmarkParallelKeys(b, false) })
	b.Run("keys-unshared", func(b *testing.B) { benchmarkParallelKeys(b, true) })
	b.Run("hot", benchmarkParallelHot)
}

const (
	parConns  = 16 // connections in all, dealt round-robin to the workers
	parPairs  = 16 // lock/release pairs per read, pipelined
	parGroups = 8  // key groups per connection: 128 keys a connection
)

// lockReply is the length of the grant "ok <token> 10\n".
const lockReply = len("ok ") + fence.TokenLen + len(" 10\n")

// parallelServer is a fake server's engine and hub for many workers:
// production's shard count, no bound on keys.
func parallelServer(b *testing.B) *fakeServer {
	return newFakeServer(b, Config{}, engine.Config{Shards: engine.MaxDefaultShards, MaxLocks: -1})
}

// parallelWorkers is the number of goroutines RunParallel starts
// (parallelism 1); each needs a connection.
func parallelWorkers(b *testing.B) int {
	w := runtime.GOMAXPROCS(0)
	if w > parConns {
		b.Skipf("%d workers for %d connections", w, parConns)
	}
	return w
}

// pairsConn is a connection of the keys benchmark. Its keys come in
// parGroups groups of parPairs; read g locks group g and releases group
// g-1, pair by pair, with the tokens the replies of read g-1 carried (a
// pipelined release cannot know its token in advance once several
// goroutines draw fences). Every key is this connection's alone, so
// every lock is granted at once and every reply is ok.
type pairsConn struct {
	c      *loopConn
	reads  [parGroups][]byte
	tokOff [parGroups][parPairs]int // where read g carries its release tokens
	next   int                      // the group read next locks
}

func newPairsConn(lp *fakeLoop, conn int) *pairsConn {
	pc := &pairsConn{c: lp.open()}
	key := func(g, j int) string { return fmt.Sprintf("c%d-g%d-k%d", conn, g, j) }
	for g := range parGroups {
		var buf []byte
		for j := range parPairs {
			buf = append(buf, request("l", key(g, j), "0 10")...)
			buf = append(buf, "r\n"+key((g+parGroups-1)%parGroups, j)+"\n"...)
			pc.tokOff[g][j] = len(buf)
			buf = append(buf, make([]byte, fence.TokenLen)...)
			buf = append(buf, '\n')
		}
		pc.reads[g] = buf
	}
	// Hold the last group, so that read 0 has something to release.
	var prime []byte
	for j := range parPairs {
		prime = append(prime, request("l", key(parGroups-1, j), "0 10")...)
	}
	pc.c.out = pc.c.out[:0]
	if n, _ := lp.traffic(pc.c, prime); n != len(prime) || len(pc.c.out) != parPairs*lockReply {
		panic(fmt.Sprintf("priming read: consumed %d of %d, replies %q", n, len(prime), pc.c.out))
	}
	for j := range parPairs {
		copy(pc.reads[0][pc.tokOff[0][j]:], pc.c.out[j*lockReply+3:][:fence.TokenLen])
	}
	return pc
}

// read sends the next read and checks its replies: parPairs times a
// grant then ok. The grants' tokens go into the next read's releases. It
// returns the ok replies it counted.
func (pc *pairsConn) read(lp *fakeLoop) (oks int, err error) {
	c, buf := pc.c, pc.reads[pc.next]
	c.out = c.out[:0]
	n, closeConn := lp.traffic(c, buf)
	if n != len(buf) || closeConn || c.closed {
		return oks, fmt.Errorf("consumed %d of %d bytes, close=%v", n, len(buf), closeConn)
	}
	const pair = lockReply + len("ok\n")
	if len(c.out) != parPairs*pair {
		return oks, fmt.Errorf("replies: %q", c.out)
	}
	next := (pc.next + 1) % parGroups
	dst := pc.reads[next]
	for j := range parPairs {
		rep := c.out[j*pair : (j+1)*pair]
		if string(rep[:3]) != "ok " || string(rep[lockReply-4:]) != " 10\nok\n" {
			return oks, fmt.Errorf("pair %d: replies %q", j, rep)
		}
		oks += 2
		copy(dst[pc.tokOff[next][j]:], rep[3:3+fence.TokenLen])
	}
	pc.next = next
	return oks, nil
}

// benchmarkParallelKeys: an op is one read of parPairs pairs.
func benchmarkParallelKeys(b *testing.B, unshared bool) {
	type worker struct {
		lp    *fakeLoop
		conns []*pairsConn
		oks   int
	}
	ws := make([]*worker, parallelWorkers(b))
	fs := parallelServer(b)
	for w := range ws {
		if unshared && w > 0 {
			fs = parallelServer(b)
		}
		ws[w] = &worker{lp: newFakeLoop(fs.hub)}
	}
	for i := range parConns {
		wk := ws[i%len(ws)]
		wk.conns = append(wk.conns, newPairsConn(wk.lp, i))
	}
	for _, wk := range ws {
		// Two rounds create every key and grow every buffer.
		for range 2 * parGroups {
			for _, pc := range wk.conns {
				if _, err := pc.read(wk.lp); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	var next atomic.Int32
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		wk := ws[next.Add(1)-1]
		i := 0
		for pb.Next() {
			oks, err := wk.conns[i].read(wk.lp)
			wk.oks += oks
			if err != nil {
				b.Error(err)
				for pb.Next() {
				}
				return
			}
			if i++; i == len(wk.conns) {
				i = 0
			}
		}
	})
	b.StopTimer()
	oks := 0
	for _, wk := range ws {
		oks += wk.oks
	}
	if !b.Failed() && oks != 2*parPairs*b.N {
		b.Fatalf("%d ok replies, want %d", oks, 2*parPairs*b.N)
	}
	reportPairs(b, b.N*parPairs, cpuTime()-cpu0)
}

// hotConn is a connection of the hot benchmark. It always either holds
// the hot key or waits for it: each read releases its grant and queues
// again ("r hot <token>" then "l hot 10 10"), so the key's FIFO holds
// nearly all the other connections, no lock is granted at once, and
// every grant is a hand-off delivered through the waiter's loop inbox.
// The fake clock stands still, so no wait times out and no lease ends:
// every reply is known — ok for a release, a grant delivered later for a
// lock — and checked.
//
// Fences count the hot key's grants (nothing else is granted), so they
// also check the FIFO. With K connections on one worker the grants go
// round them in a fixed order and each connection's fences step by
// exactly K. With several workers, others may run hand-offs between the
// r and the l of one read, so the order shifts, but FIFO still bounds a
// step below 2K: in that window each connection of another worker is
// granted at most once (it queues again behind this worker's other
// connections, and the first grant to one of those waits for this read
// to end), then at most K-1 connections are ahead of this one. A queue
// that let waiters overtake would break the bound.
type hotConn struct {
	c      *loopConn
	read   []byte
	tokOff int
	fence  uint64 // of the last grant, 0 before the first
}

const hotKey = "hot"

func newHotConn(lp *fakeLoop) *hotConn {
	hc := &hotConn{c: lp.open()}
	hc.read = append(hc.read, "r\n"+hotKey+"\n"...)
	hc.tokOff = len(hc.read)
	hc.read = append(hc.read, make([]byte, fence.TokenLen)...)
	hc.read = append(hc.read, '\n')
	hc.read = append(hc.read, request("l", hotKey, "10 10")...)
	return hc
}

// granted takes the grant in the connection's output: its token goes
// into the next release; its fence must follow the previous one as FIFO
// order allows (see hotConn).
func (hc *hotConn) granted(k, workers int) error {
	out := hc.c.out
	if len(out) != lockReply || string(out[:3]) != "ok " || string(out[lockReply-4:]) != " 10\n" {
		return fmt.Errorf("grant: %q", out)
	}
	tok, ok := fence.ParseToken(out[3 : 3+fence.TokenLen])
	if !ok {
		return fmt.Errorf("grant token: %q", out)
	}
	if hc.fence != 0 {
		step := tok.Fence - hc.fence
		if tok.Fence <= hc.fence || workers == 1 && step != uint64(k) || k/workers >= 2 && step >= 2*uint64(k) {
			return fmt.Errorf("fence %d after %d: not a FIFO round of %d connections on %d loops", tok.Fence, hc.fence, k, workers)
		}
	}
	hc.fence = tok.Fence
	copy(hc.read[hc.tokOff:], out[3:3+fence.TokenLen])
	hc.c.out = hc.c.out[:0]
	return nil
}

// benchmarkParallelHot: an op is one turn of a worker's loop: a read if
// one of its connections holds the key, else a wait for its inbox (a
// gnet loop sleeps in epoll_wait until another loop's Execute wakes it)
// and a drain. Not every turn completes a pair, so pairs are counted
// apart. The first worker out of RunParallel stops the others' waits: a
// grant it would have handed on never comes.
func benchmarkParallelHot(b *testing.B) {
	type worker struct {
		lp    *fakeLoop
		conns []*hotConn // by loopConn.idx
		ready []*hotConn // holding the key, to release in the next read
		pairs int
	}
	ws := make([]*worker, parallelWorkers(b))
	fs := parallelServer(b)
	for w := range ws {
		ws[w] = &worker{lp: newFakeLoop(fs.hub)}
	}
	// Queue every connection once, in the order they are dealt to the
	// workers, so that with several workers FIFO order sends every
	// hand-off to another loop: the first locks, the others wait.
	k := parConns
	for i := range parConns {
		wk := ws[i%len(ws)]
		hc := newHotConn(wk.lp)
		wk.conns = append(wk.conns, hc)
		l := hc.read[hc.tokOff+fence.TokenLen+1:]
		if n, _ := wk.lp.traffic(hc.c, l); n != len(l) {
			b.Fatalf("queueing: consumed %d of %d", n, len(l))
		}
		if len(hc.c.out) > 0 {
			if err := hc.granted(k, len(ws)); err != nil {
				b.Fatal(err)
			}
			wk.ready = append(wk.ready, hc)
		}
	}
	var next atomic.Int32
	stop := make(chan struct{})
	var stopOnce sync.Once
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		wk := ws[next.Add(1)-1]
		lp := wk.lp
		defer stopOnce.Do(func() { close(stop) })
		for pb.Next() {
			if len(wk.ready) == 0 && len(lp.delivered) == 0 {
				// The key is held on another loop: sleep until a grant
				// comes.
				select {
				case <-lp.wake:
				case <-stop:
				}
				lp.drain()
			}
			for _, c := range lp.delivered {
				hc := wk.conns[c.idx]
				if err := hc.granted(k, len(ws)); err != nil {
					b.Error(err)
					for pb.Next() {
					}
					return
				}
				wk.ready = append(wk.ready, hc)
			}
			lp.delivered = lp.delivered[:0]
			if len(wk.ready) == 0 {
				continue
			}
			hc := wk.ready[0]
			wk.ready = append(wk.ready[:0], wk.ready[1:]...)
			n, closeConn := lp.traffic(hc.c, hc.read)
			// The release hands off and the lock queues (K > 1), so the
			// only reply now is the release's ok; with one worker the
			// grant to the next connection comes back in traffic.
			if n != len(hc.read) || closeConn || string(hc.c.out) != "ok\n" {
				b.Errorf("read: consumed %d of %d, close=%v, replies %q", n, len(hc.read), closeConn, hc.c.out)
				for pb.Next() {
				}
				return
			}
			hc.c.out = hc.c.out[:0]
			wk.pairs++
		}
	})
	b.StopTimer()
	pairs := 0
	for _, wk := range ws {
		pairs += wk.pairs
	}
	if pairs == 0 && !b.Failed() {
		b.Fatal("no pair completed")
	}
	reportPairs(b, pairs, cpuTime()-cpu0)
}

// reportPairs reports the wall time per lock/release pair, the pair rate
// of all workers together, and the process's CPU time per pair (where
// the OS tells it, cputime_*_test.go). On a machine other jobs load, the
// wall-time figures at -cpu 2 measure the CPU the others left; CPU time
// per pair does not, and it grows with what sharing costs (cache lines
// moving between cores, spinning on a mutex). The machine's own
// two-core effects (clock, shared caches) raise it too: compare keys
// with keys-unshared at the same -cpu.
func reportPairs(b *testing.B, pairs int, cpu time.Duration) {
	if pairs == 0 {
		return
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(pairs), "ns/pair")
	b.ReportMetric(float64(pairs)/b.Elapsed().Seconds(), "pairs/s")
	if cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(pairs), "cpu-ns/pair")
	}
}
