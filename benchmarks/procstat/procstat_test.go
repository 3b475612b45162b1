package procstat

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestCPUTimeOfThisProcess(t *testing.T) {
	pid := os.Getpid()
	before, err := CPUTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	// Burn CPU until the counter moves; it ticks every 10 ms of CPU. The
	// deadline is generous: a loaded machine may give this process little
	// CPU for a while.
	deadline := time.Now().Add(30 * time.Second)
	x := 0
	for {
		for i := 0; i < 1_000_000; i++ {
			x += i ^ x
		}
		after, err := CPUTime(pid)
		if err != nil {
			t.Fatal(err)
		}
		if after > before {
			if d := after - before; d%(10*time.Millisecond) != 0 {
				t.Errorf("CPU delta %v is not whole clock ticks", d)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("CPU time stuck at %v (x=%d)", before, x)
		}
	}
}

func TestMemoryOfThisProcess(t *testing.T) {
	m, err := ReadMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS <= 0 || m.PeakRSS < m.RSS {
		t.Fatalf("implausible memory %+v", m)
	}
	// Touch 16 MiB (small: the race detector shadows every page): the peak
	// must cover it.
	b := make([]byte, 16<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	m2, err := ReadMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m2.PeakRSS < m.RSS+14<<20 {
		t.Errorf("peak RSS %d after touching 16 MiB on top of %d", m2.PeakRSS, m.RSS)
	}
	_ = b[len(b)-1]
}

func TestParseStatNameWithParens(t *testing.T) {
	stat := "42 (a) b (c)) S 1 42 42 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 8 0 12345 1000 50 18446744073709551615\n"
	got, err := parseStat([]byte(stat))
	if err != nil || got != 3250*time.Millisecond {
		t.Fatalf("got %v, %v; want 3.25s", got, err)
	}
	if _, err := parseStat([]byte("42 (x) S 1")); !errors.Is(err, ErrFormat) {
		t.Fatalf("short stat: %v", err)
	}
}

func TestParseStatus(t *testing.T) {
	m, err := parseStatus([]byte("Name:\tx\nVmHWM:\t    2048 kB\nVmRSS:\t    1024 kB\n"))
	if err != nil || m.RSS != 1<<20 || m.PeakRSS != 2<<20 {
		t.Fatalf("got %+v, %v", m, err)
	}
	m, err = parseStatus([]byte("VmHWM:\t 8 kB\nVmRSS:\t 6 kB\nRssAnon:\t 2 kB\nRssFile:\t 3 kB\nRssShmem:\t 1 kB\n"))
	if err != nil || m.RssAnon != 2<<10 || m.RssFile != 3<<10 || m.RSS != 6<<10 {
		t.Fatalf("with RssAnon/RssFile: got %+v, %v", m, err)
	}
	if _, err := parseStatus([]byte("Name:\tkthreadd\n")); !errors.Is(err, ErrFormat) {
		t.Fatalf("kernel thread status: %v", err)
	}
}

func TestMissingProcess(t *testing.T) {
	if _, err := Take(1 << 30); err == nil {
		t.Fatal("no error for a pid that cannot exist")
	}
}

func TestUsage(t *testing.T) {
	t0 := time.Now()
	a := Sample{At: t0, CPU: time.Second}
	b := Sample{At: t0.Add(2 * time.Second), CPU: 2 * time.Second, Mem: Memory{RSS: 5, PeakRSS: 9}}
	u := b.Since(a)
	if u.Cores != 0.5 || u.PerOp(1000) != time.Millisecond || u.PerOp(0) != 0 || u.PeakRSS != 9 {
		t.Fatalf("got %+v", u)
	}
}

// The assumed USER_HZ must be what the C library reports, where getconf
// exists to ask.
func TestClockTicksMatchesGetconf(t *testing.T) {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err != nil {
		t.Skipf("getconf: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != "100" {
		t.Fatalf("getconf CLK_TCK = %s, procstat assumes %d", got, clockTicks)
	}
}
