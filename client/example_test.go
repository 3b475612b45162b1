package client_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/dflockd-ng/dflockd/client"
)

// A lock held while a job runs, abandoned as soon as it is lost.
func ExampleLock() {
	ctx := context.Background()
	l := &client.Lock{Key: "nightly-report", LeaseTTL: 15, Servers: []string{"127.0.0.1:6388"}}
	ok, err := l.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if !ok {
		fmt.Println("someone else is running it")
		return
	}
	defer l.Release(ctx)

	jobCtx, cancel := context.WithCancel(ctx)
	go func() {
		<-l.Lost() // renewal failed or the connection broke
		log.Printf("lock lost: %v", l.Err())
		cancel()
	}()
	runReport(jobCtx)
}

func runReport(context.Context) {}

// Every function taking a *Conn honours the context bound with
// WithContext.
func ExampleConn_WithContext() {
	c, err := client.Dial("127.0.0.1:6388")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	item, err := client.BLPop(c.WithContext(ctx), "jobs", time.Minute)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		fmt.Println("nothing within 2 s (the connection is closed: the pop was abandoned)")
	case err != nil:
		log.Fatal(err)
	default:
		fmt.Println("got", item)
	}
}

// A cluster: redirects are followed to listed members only.
func ExampleDialer() {
	d := client.Dialer{
		Members:   []string{"10.0.0.1:6388", "10.0.0.2:6388", "10.0.0.3:6388"},
		TLSConfig: &tls.Config{},
		AuthToken: "s3cret",
	}
	c, err := d.Dial(context.Background(), "") // the first member that answers
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	token, _, err := client.Acquire(c, "deploy", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("held on", c.Addr(), "with", token)
}

// A lock on a raft cluster: it is kept when the leader dies, renewed by
// token on the next one, and Lost is closed only if it is really gone.
func ExampleCluster() {
	members := client.Cluster("10.0.0.1:6388", "10.0.0.2:6388", "10.0.0.3:6388")
	members.StableRef = "report-host-7" // with the servers' --orphan-ttl: re-adopted after a failover
	l := &client.Lock{Key: "nightly-report", LeaseTTL: 30, Dialer: members}
	ctx := context.Background()
	if ok, err := l.Acquire(ctx); err != nil || !ok {
		log.Fatal("not acquired: ", err)
	}
	defer l.Release(ctx) // on whichever member leads by then
	fence := l.Fence()   // the same before and after a failover
	jobCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-l.Lost(): // refused by the leader, or no renewal within the lease
			log.Printf("lock lost: %v", l.Err())
			cancel()
		case <-jobCtx.Done():
		}
	}()
	runReport(jobCtx)
	fmt.Println("done under fence", fence)
}

// Shared connections for short requests from many goroutines.
func ExampleClient() {
	cl := &client.Client{Servers: []string{"127.0.0.1:6388"}}
	defer cl.Close()
	ctx := context.Background()
	c, err := cl.Conn(ctx, "visits")
	if err != nil {
		log.Fatal(err)
	}
	n, err := client.Incr(c, "visits", 1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("visit", n)
}

func ExampleSignalConn() {
	c, err := client.Dial("127.0.0.1:6388")
	if err != nil {
		log.Fatal(err)
	}
	sc := client.NewSignalConn(c)
	defer sc.Close()
	if err := sc.Listen("orders.>", client.WithGroup("billing")); err != nil {
		log.Fatal(err)
	}
	for sig := range sc.Signals() {
		fmt.Println(sig.Channel, sig.Payload)
	}
}

func ExampleWatchConn() {
	c, err := client.Dial("127.0.0.1:6388")
	if err != nil {
		log.Fatal(err)
	}
	wc := client.NewWatchConn(c)
	defer wc.Close()
	if err := wc.Watch("config.*"); err != nil {
		log.Fatal(err)
	}
	for ev := range wc.Events() {
		if ev.Type == "kset" {
			v, _ := client.KVGet(c, ev.Key) // the same connection serves requests too
			fmt.Println(ev.Key, "=", v)
		}
	}
}

func ExampleElection() {
	e := &client.Election{
		Key:        "scheduler",
		Servers:    []string{"127.0.0.1:6388"},
		LeaseTTL:   10,
		OnResigned: func() { log.Print("no longer the leader") },
	}
	ctx := context.Background()
	for {
		won, err := e.Campaign(ctx)
		if err != nil {
			log.Fatal(err)
		}
		if won {
			break
		}
	}
	defer e.Resign(ctx)
	fmt.Println("leading with token", e.Token())
	<-e.Lost()
}

func ExampleBarrierWait() {
	c, err := client.Dial("127.0.0.1:6388")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ok, err := client.BarrierWait(c, "start-benchmark", 4, 30*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("all four here:", ok)
}

// The mapping agrees with Python's zlib.crc32(key) % len(servers).
func ExampleCRC32Shard() {
	servers := []string{"10.0.0.1:6388", "10.0.0.2:6388", "10.0.0.3:6388"}
	for _, key := range []string{"orders", "users", "invoices"} {
		fmt.Println(key, "→", servers[client.CRC32Shard(key, len(servers))])
	}
	// Output:
	// orders → 10.0.0.3:6388
	// users → 10.0.0.1:6388
	// invoices → 10.0.0.2:6388
}

func ExampleFenceFromToken() {
	older, _ := client.FenceFromToken("18ea44c35fcac5f2eb25a5c2bc648be5")
	newer, _ := client.FenceFromToken("18ea44c35fcac5f3b4c73f2b34bde3a9")
	fmt.Println(newer > older, newer-older)
	// Output: true 1
}
