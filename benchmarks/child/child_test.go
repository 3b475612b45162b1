package child

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the child: with CHILD_TEST_MODE set it acts as
// a server instead of running tests.
func TestMain(m *testing.M) {
	switch os.Getenv("CHILD_TEST_MODE") {
	case "echo":
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			os.Exit(1)
		}
		fmt.Println("listening", ln.Addr())
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() { _, _ = io.Copy(c, c) }()
			}
		}()
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM)
		<-sig
		os.Exit(0)
	case "mute":
		fmt.Println("hello")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestStartAndStop(t *testing.T) {
	t.Setenv("CHILD_TEST_MODE", "echo")
	p, err := Start(context.Background(), "echo", os.Args[0], nil, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", p.Addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second)) // generous: a bound on a child that never answers
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		t.Fatal(err)
	}
	if s, err := bufio.NewReader(c).ReadString('\n'); s != "ping\n" {
		t.Fatalf("echo: %q %v", s, err)
	}
	c.Close()
	p.Stop()
	p.Stop() // idempotent
	if err := syscall.Kill(p.PID, 0); err == nil {
		t.Fatalf("pid %d still exists after Stop", p.PID)
	}
}

func TestStartRejectsWrongBanner(t *testing.T) {
	t.Setenv("CHILD_TEST_MODE", "mute")
	if p, err := Start(context.Background(), "mute", os.Args[0], nil, os.Stderr); err == nil {
		p.Stop()
		t.Fatal("a child that does not announce an address was accepted")
	}
}

func TestStartRedis(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed")
	}
	p, err := StartRedis(context.Background(), "redis-server", os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if err := pingRedis(p.Addr); err != nil {
		t.Fatal(err)
	}
}

// The files make a pair a TLS server can load, and ClientConfig trusts it.
func TestTLSFiles(t *testing.T) {
	f, err := NewTLSFiles(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_, _ = io.Copy(c, c)
			c.Close()
		}
	}()
	if err := probeTLS(ln.Addr().String(), f.ClientConfig(), "ping\n", "ping\n"); err != nil {
		t.Fatal(err)
	}
}

func TestStartRedisTLS(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed")
	}
	f, err := NewTLSFiles(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p, err := StartRedisTLS(context.Background(), "redis-server", f, "", os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	// TLS only: a plaintext PING gets no +PONG.
	if err := pingRedis(p.Addr); err == nil {
		t.Fatal("a plaintext PING was answered by a TLS-only redis-server")
	}
	if err := probeTLS(p.Addr, f.ClientConfig(), "*1\r\n$4\r\nPING\r\n", "+PONG\r\n"); err != nil {
		t.Fatal(err)
	}
}
