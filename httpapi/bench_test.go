package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Lock + release pairs over HTTP and over the TCP line protocol, against
// the same kind of server (one engine and hub), so that one run gives the
// ratio:
//
//	go test -run '^$' -bench 'LockRelease' -count 5 ./httpapi/
//
// Each of several goroutines has its own session (HTTP) or connection
// (TCP) and key, and does try-lock, release, in a loop: the cost of the
// path, not of contention. The HTTP client keeps its connections alive.

// benchParallelism × GOMAXPROCS goroutines.
const benchParallelism = 4

func benchGoroutines() int { return benchParallelism * runtime.GOMAXPROCS(0) }

// pairsPerSec reports the throughput of b's loop.
func pairsPerSec(b *testing.B, start time.Time) {
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "pairs/s")
}

func BenchmarkHTTPLockRelease(b *testing.B) {
	ts := newServer(b, setup{})
	// One connection per goroutine, no more: a spare connection dialed
	// for a request another one served would sit unused in net/http's
	// StateNew, which Shutdown waits 5 s for.
	n := benchGoroutines()
	tr := &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	post := func(path, sid string, body []byte) ([]byte, int) {
		r, err := http.NewRequest("POST", ts.url+path, bytes.NewReader(body))
		if err != nil {
			panic(err)
		}
		r.Header.Set(sessionHeader, sid)
		resp, err := client.Do(r)
		if err != nil {
			panic(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return out, resp.StatusCode
	}
	sids := make([]string, n)
	for i := range sids {
		sids[i] = ts.newSession()
	}
	var seq atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(benchParallelism)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		i := seq.Add(1) - 1
		sid := sids[i]
		key := fmt.Sprintf("/v1/locks/bench-%d", i)
		lockBody := []byte(`{"acquire_timeout_s":0}`)
		var g grant
		for pb.Next() {
			out, st := post(key, sid, lockBody)
			if st != 200 || json.Unmarshal(out, &g) != nil || g.Status != "ok" {
				panic(fmt.Sprintf("lock: %d %s", st, out))
			}
			if out, st := post(key+"/release", sid, []byte(`{"token":"`+g.Token+`"}`)); st != 204 {
				panic(fmt.Sprintf("release: %d %s", st, out))
			}
		}
	})
	b.StopTimer()
	pairsPerSec(b, start)
}

func BenchmarkTCPLockRelease(b *testing.B) {
	ts := newServer(b, setup{})
	addr := startTCP(b, ts)
	conns := make([]*tcpClient, benchGoroutines())
	for i := range conns {
		conns[i] = dialTCP(b, addr)
	}
	var seq atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(benchParallelism)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		i := seq.Add(1) - 1
		c := conns[i]
		key := fmt.Sprintf("bench-%d", i)
		for pb.Next() {
			c.send("l", key, "0")
			f := strings.Fields(c.reply())
			if len(f) != 3 || f[0] != "ok" {
				panic(fmt.Sprintf("lock: %v", f))
			}
			c.send("r", key, f[1])
			if r := c.reply(); r != "ok" {
				panic("release: " + r)
			}
		}
	})
	b.StopTimer()
	pairsPerSec(b, start)
}
