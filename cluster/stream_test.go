package cluster

import (
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/dflockd-ng/dflockd/vocab"
)

func listen(t *testing.T, token string, refused chan string) *Stream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewStream(ln, StreamConfig{Token: []byte(token), OnRefused: func(remote string, err error) {
		if refused != nil {
			refused <- err.Error()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

const goodToken = "0123456789abcdef0123456789abcdef-good"

// TestStreamAuth: peers with the token talk; a dialer with another token,
// or one that speaks something else, is refused by the acceptor and
// fails itself.
func TestStreamAuth(t *testing.T) {
	refused := make(chan string, 4)
	srv := listen(t, goodToken, refused)
	addr := raft.ServerAddress(srv.Addr().String())
	go func() {
		for {
			c, err := srv.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c) }()
		}
	}()

	good := listen(t, goodToken, nil)
	c, err := good.Dial(addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.Write([]byte("ping"))
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("echo through an authenticated stream: %q %v", buf, err)
	}
	_ = c.Close()

	bad := listen(t, "another token that is long enough to pass", nil)
	if _, err := bad.Dial(addr, time.Second); err == nil {
		t.Fatal("a dialer with the wrong token got a connection")
	}
	if why := <-refused; !strings.Contains(why, "authentication") {
		t.Fatalf("refusal reason %q", why)
	}

	raw, err := net.Dial("tcp", string(addr))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = raw.Write(bytes.Repeat([]byte("GET / HTTP/1.1\r\n"), 4))
	<-refused
	_ = raw.SetReadDeadline(time.Now().Add(2 * time.Second))
	if n, _ := raw.Read(buf); n > 0 {
		t.Fatalf("a stranger was sent %d bytes", n)
	}

	if _, err := NewStream(srv.ln, StreamConfig{Token: []byte("short")}); err == nil {
		t.Fatal("a token under 32 bytes was accepted")
	}
}

// TestWrongTokenPeerCannotJoin: a 3-node cluster over TCP streams keeps
// working while a node with another token tries to become part of it.
func TestWrongTokenPeerCannotJoin(t *testing.T) {
	type tcpNode struct {
		id   raft.ServerID
		s    *Stream
		node *Node
		out  *recorder
	}
	mk := func(id string, token string, refused chan string) *tcpNode {
		s := listen(t, token, refused)
		tr := raft.NewNetworkTransport(s, 3, 2*time.Second, io.Discard)
		out := newRecorder()
		logs := raft.NewInmemStore()
		n, err := New(Config{ID: raft.ServerID(id), Transport: tr, Logs: logs, Stable: logs,
			Snapshots: raft.NewInmemSnapshotStore(), Raft: fastRaft(), Output: out})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = n.Shutdown() })
		return &tcpNode{id: raft.ServerID(id), s: s, node: n, out: out}
	}
	refused := make(chan string, 64)
	var nodes []*tcpNode
	var servers []raft.Server
	for _, id := range []string{"a", "b", "c"} {
		n := mk(id, goodToken, refused)
		nodes = append(nodes, n)
		servers = append(servers, raft.Server{ID: n.id, Address: raft.ServerAddress(n.s.Addr().String())})
	}
	// The intruder claims to be a fourth voter of the same cluster.
	intruder := mk("x", "an intruder's token, long enough to pass", nil)
	all := append(append([]raft.Server{}, servers...),
		raft.Server{ID: "x", Address: raft.ServerAddress(intruder.s.Addr().String())})
	if err := intruder.node.Bootstrap(all); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if err := n.node.Bootstrap(servers); err != nil {
			t.Fatal(err)
		}
	}
	var leader *tcpNode
	for deadline := time.Now().Add(awaitFor); leader == nil; {
		for _, n := range nodes {
			if n.node.Ready() {
				leader = n
			}
		}
		if intruder.node.Ready() {
			t.Fatal("the intruder leads")
		}
		if time.Now().After(deadline) {
			t.Fatal("no leader")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := leader.node.Submit(1, req(t, "incr", "c", "5")); err != nil {
		t.Fatal(err)
	}
	if r := leader.out.next(t, 1, 0, awaitFor); r.Status != vocab.StatusOK || r.Int != 5 {
		t.Fatalf("incr: %+v", r)
	}
	select {
	case <-refused:
	case <-time.After(awaitFor):
		t.Fatal("the intruder's requests were never refused")
	}
	if intruder.node.FSM().Inited() {
		t.Fatal("the intruder received the cluster's state")
	}
}
