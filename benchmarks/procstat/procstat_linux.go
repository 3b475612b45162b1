package procstat

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat.
// Linux fixes it at 100 in its user-space ABI on every architecture Go
// supports (sysconf(_SC_CLK_TCK) returns this constant), whatever CONFIG_HZ
// the kernel was built with; so no cgo call to sysconf is needed.
const clockTicks = 100

// ErrFormat reports a /proc file this package cannot read.
var ErrFormat = errors.New("procstat: unexpected /proc format")

// CPUTime returns the user plus system CPU time consumed so far by process
// pid (all its threads), at 10 ms resolution.
func CPUTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("procstat: %w", err)
	}
	return parseStat(b)
}

// parseStat extracts utime+stime from the contents of /proc/<pid>/stat.
// The command name (field 2) is in parentheses and may itself contain
// spaces and parentheses, so fields are counted from the last ')'.
func parseStat(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("%w: no command name in stat", ErrFormat)
	}
	// After ")" come fields 3 (state), 4, …; utime is field 14, stime 15.
	f := bytes.Fields(b[i+1:])
	const utime, stime = 14 - 3, 15 - 3
	if len(f) <= stime {
		return 0, fmt.Errorf("%w: stat has %d fields after the name", ErrFormat, len(f))
	}
	u, err1 := strconv.ParseUint(string(f[utime]), 10, 64)
	s, err2 := strconv.ParseUint(string(f[stime]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("%w: utime %q stime %q", ErrFormat, f[utime], f[stime])
	}
	return time.Duration(u+s) * (time.Second / clockTicks), nil
}

// Memory is a process's resident set, in bytes.
type Memory struct {
	RSS     int64 // VmRSS: resident now
	PeakRSS int64 // VmHWM: high-water mark since the process started
	// RssAnon and RssFile split RSS into the heap, stacks and other
	// anonymous pages, and the mapped files' pages (mostly the binary's
	// own text and data). Zero on kernels before 4.5, which lack them.
	RssAnon int64
	RssFile int64
}

// ReadMemory returns process pid's current and peak resident set size.
func ReadMemory(pid int) (Memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, fmt.Errorf("procstat: %w", err)
	}
	return parseStatus(b)
}

// parseStatus extracts VmRSS and VmHWM ("VmRSS:\t  1234 kB") from the
// contents of /proc/<pid>/status.
func parseStatus(b []byte) (Memory, error) {
	var m Memory
	var found int
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		var dst *int64
		switch {
		case bytes.HasPrefix(line, []byte("VmRSS:")):
			dst = &m.RSS
		case bytes.HasPrefix(line, []byte("VmHWM:")):
			dst = &m.PeakRSS
		case bytes.HasPrefix(line, []byte("RssAnon:")):
			dst = &m.RssAnon
		case bytes.HasPrefix(line, []byte("RssFile:")):
			dst = &m.RssFile
		default:
			continue
		}
		_, rest, _ := bytes.Cut(line, []byte{':'})
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return Memory{}, fmt.Errorf("%w: %q", ErrFormat, line)
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return Memory{}, fmt.Errorf("%w: %q", ErrFormat, line)
		}
		*dst = kb << 10
		if dst == &m.RSS || dst == &m.PeakRSS {
			found++
		}
	}
	if found != 2 {
		// Kernel threads and zombies have no Vm* lines.
		return Memory{}, fmt.Errorf("%w: no VmRSS/VmHWM in status", ErrFormat)
	}
	return m, nil
}

// Sample is one reading of a process's counters.
type Sample struct {
	At  time.Time // monotonic
	CPU time.Duration
	Mem Memory
}

// Take reads pid's CPU time and memory now.
func Take(pid int) (Sample, error) {
	at := time.Now()
	cpu, err := CPUTime(pid)
	if err != nil {
		return Sample{}, err
	}
	mem, err := ReadMemory(pid)
	if err != nil {
		return Sample{}, err
	}
	return Sample{At: at, CPU: cpu, Mem: mem}, nil
}

// Usage is what a process consumed between two samples.
type Usage struct {
	Wall    time.Duration
	CPU     time.Duration // user+system, all threads
	Cores   float64       // CPU / Wall: average cores busy
	RSS     int64         // at the second sample
	PeakRSS int64         // high-water mark at the second sample
}

// Since returns the usage between before and s.
func (s Sample) Since(before Sample) Usage {
	u := Usage{Wall: s.At.Sub(before.At), CPU: s.CPU - before.CPU, RSS: s.Mem.RSS, PeakRSS: s.Mem.PeakRSS}
	if u.Wall > 0 {
		u.Cores = u.CPU.Seconds() / u.Wall.Seconds()
	}
	return u
}

// PerOp returns the CPU time per operation, or 0 when ops is 0.
func (u Usage) PerOp(ops uint64) time.Duration {
	if ops == 0 {
		return 0
	}
	return u.CPU / time.Duration(ops)
}
