//go:build linux

package fence

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Environment of the helper process (this test binary re-executed).
const (
	envHelper = "FENCE_TEST_HELPER" // "issue" or "open"
	envPath   = "FENCE_TEST_PATH"
	envWindow = "FENCE_TEST_WINDOW"
	envShift  = "FENCE_TEST_CLOCK_SHIFT" // nanoseconds added to the helper's wall clock
)

const year = 365 * 24 * time.Hour

// TestHelperProcess is not a test: it is the body of the helper process.
//
//	issue: open the state file and print fences, one per line, as fast as
//	       it can until killed ("ready" first, once Open has returned).
//	open:  try to open the state file; print the error and exit 3.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(envHelper)
	if mode == "" {
		return
	}
	w, _ := strconv.ParseUint(os.Getenv(envWindow), 10, 64)
	shift, _ := strconv.ParseInt(os.Getenv(envShift), 10, 64)
	now := func() time.Time { return time.Now().Add(time.Duration(shift)) }
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	a, err := Open(os.Getenv(envPath), Options{Window: w, Now: now, Logf: logf})
	if err != nil {
		fmt.Println(err)
		os.Exit(3)
	}
	if mode == "open" {
		fmt.Println("opened")
		os.Exit(0)
	}
	fmt.Println("ready")
	out := os.Stdout
	var line []byte
	var prev, n uint64
	for deadline := time.Now().Add(time.Minute); ; {
		v, err := a.Next()
		if err != nil {
			out.Write(line)
			fmt.Printf("\nERR %v\n", err)
			os.Exit(4)
		}
		if v <= prev {
			out.Write(line)
			fmt.Printf("\nNONMONOTONIC %d after %d\n", v, prev)
			os.Exit(5)
		}
		prev = v
		line = strconv.AppendUint(line, v, 10)
		line = append(line, '\n')
		// Flush every 16 fences: slow windows (W=2 persists per fence)
		// must still show the parent what they issued before the kill.
		if n++; n%16 == 0 {
			out.Write(line) // ≤ 16×21 bytes, one atomic pipe write
			line = line[:0]
		}
		if v&0xffff == 0 && time.Now().After(deadline) {
			os.Exit(6) // orphaned: the parent never killed us
		}
	}
}

func helperCommand(t *testing.T, mode, path string, extraEnv []string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), envHelper+"="+mode, envPath+"="+path)
	if os.Getenv("GORACE") == "" {
		// The race runtime otherwise sleeps 1 s before a normal exit.
		cmd.Env = append(cmd.Env, "GORACE=atexit_sleep_ms=0")
	}
	cmd.Env = append(cmd.Env, extraEnv...)
	cmd.Stderr = os.Stderr
	return cmd
}

// crashCycle runs one helper incarnation, SIGKILLs it at a random moment
// and returns the fences it managed to print.
func crashCycle(t *testing.T, r *rand.Rand, path string, window uint64, shift time.Duration, waitStreaming bool) []uint64 {
	t.Helper()
	cmd := helperCommand(t, "issue", path, []string{
		envWindow + "=" + strconv.FormatUint(window, 10),
		envShift + "=" + strconv.FormatInt(int64(shift), 10),
	})
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	streaming := make(chan struct{}) // closed at the first fence read
	type output struct {
		fences []uint64
		bad    string
	}
	done := make(chan output, 1)
	go func() {
		var o output
		br := bufio.NewReaderSize(stdout, 64<<10)
		for {
			s, err := br.ReadString('\n')
			if err != nil {
				break // a trailing fragment without '\n' was cut by the kill
			}
			s = strings.TrimSuffix(s, "\n")
			switch {
			case s == "ready":
			case s == "":
			default:
				v, perr := strconv.ParseUint(s, 10, 64)
				if perr != nil {
					if o.bad == "" {
						o.bad = s
					}
					continue
				}
				if len(o.fences) == 0 {
					close(streaming)
				}
				o.fences = append(o.fences, v)
			}
		}
		done <- o
	}()
	// Most kills land while fences stream out; some during start-up,
	// before or inside Open's own reservation.
	if !waitStreaming && r.IntN(5) == 0 {
		time.Sleep(time.Duration(r.IntN(40_000)) * time.Microsecond)
	} else {
		select {
		case <-streaming:
		case o := <-done:
			cmd.Wait()
			t.Fatalf("helper exited before issuing fences: %q", o.bad)
		}
		time.Sleep(time.Duration(r.IntN(20_000)) * time.Microsecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	o := <-done
	err = cmd.Wait()
	if o.bad != "" {
		t.Fatalf("helper reported %q (exit: %v)", o.bad, err)
	}
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("helper ended with %v before the kill", err)
	}
	return o.fences
}

// runCrashCycles checks that every fence seen in a cycle is strictly
// greater than every fence seen in all earlier cycles, and returns the
// largest fence seen.
func runCrashCycles(t *testing.T, path string, cycles int, shiftFor func(cycle int) time.Duration) uint64 {
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x5eed))
	windows := []uint64{2, 16, 256, 4096, DefaultWindow}
	var top uint64
	var seen, productive int
	for c := range cycles {
		w := windows[r.IntN(len(windows))]
		shift := shiftFor(c)
		start := time.Now()
		fences := crashCycle(t, r, path, w, shift, c == 0) // the first one must lay down a file
		if testing.Verbose() {
			t.Logf("cycle %d: W=%d shift=%v: %d fences in %v", c, w, shift, len(fences), time.Since(start))
		}
		for i, v := range fences {
			if v <= top {
				t.Fatalf("cycle %d (W=%d, clock shift %v): fence %d ≤ %d seen in an earlier cycle", c, w, shift, v, top)
			}
			if i > 0 && v <= fences[i-1] {
				t.Fatalf("cycle %d: fence %d after %d", c, v, fences[i-1])
			}
		}
		if len(fences) > 0 {
			top = fences[len(fences)-1]
			productive++
		}
		seen += len(fences)
	}
	t.Logf("%d cycles, %d produced fences, %d fences observed", cycles, productive, seen)
	if productive < cycles/2 {
		t.Fatalf("only %d of %d cycles produced fences; the test proves little", productive, cycles)
	}
	return top
}

func TestCrashRestartMonotonic(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary 50 times")
	}
	p := stateIn(t, nil)
	top := runCrashCycles(t, p, 50, func(int) time.Duration { return 0 })
	a := mustOpen(t, p, Options{})
	if v := mustNext(t, a); v <= top {
		t.Fatalf("after the crash cycles first fence %d ≤ %d", v, top)
	}
}

// The first incarnation runs with a clock 50 years ahead, so the file
// records ceilings far in the future of every later incarnation's clock
// (a clock regression): the file, not the clock, must carry the floor.
func TestCrashRestartClockRegression(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary 30 times")
	}
	p := stateIn(t, nil)
	shifts := []time.Duration{0, -20 * year, 49 * year}
	top := runCrashCycles(t, p, 30, func(c int) time.Duration {
		if c == 0 {
			return 50 * year
		}
		return shifts[c%len(shifts)]
	})
	if floor := uint64(time.Now().Add(50 * year).UnixNano()); top < floor-uint64(time.Hour) {
		t.Fatalf("largest fence %d is below the future clock %d: the file floor was lost", top, floor)
	}
}
