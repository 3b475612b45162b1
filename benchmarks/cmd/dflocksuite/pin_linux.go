package main

// Pinning without taskset. The suite pins itself (the load generator) and
// every server it starts with sched_setaffinity, so that it runs on a host
// that has nothing but static binaries (benchmarks/scaling): a thread's
// CPU mask survives execve, so locking this goroutine to its thread,
// masking that thread and exec'ing from it starts the new program on the
// CPUs given, every thread it ever creates included.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// pinCommand is the hidden subcommand that runs a server pinned:
//
//	dflocksuite pin CPUS -- EXE ARGS…
const pinCommand = "pin"

// maxCPU bounds a CPU number: unix.CPUSet holds 1,024 CPUs.
const maxCPU = 1023

// errCPUList is wrapped by every malformed CPU list.
var errCPUList = errors.New("dflocksuite: cpu list")

// parseCPUList reads a CPU list in taskset -c's syntax ("0-7", "0,2,4-6")
// and returns its CPUs in increasing order, each once.
func parseCPUList(list string) ([]int, error) {
	bad := func(why string) error { return fmt.Errorf("%w %q: %s", errCPUList, list, why) }
	if list == "" {
		return nil, bad("empty")
	}
	var out []int
	for _, f := range strings.Split(list, ",") {
		lo, hi, rng := strings.Cut(f, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 || a > maxCPU {
			return nil, bad(fmt.Sprintf("%q is not a CPU number in [0, %d]", lo, maxCPU))
		}
		b := a
		if rng {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b > maxCPU {
				return nil, bad(fmt.Sprintf("%q is not a range of CPUs in [0, %d]", f, maxCPU))
			}
		}
		for c := a; c <= b; c++ {
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

func cpuSetOf(cpus []int) *unix.CPUSet {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	return &set
}

// execPinned replaces this process by path (argv, env) on the CPUs of
// list. It returns only on failure, with this thread's mask restored.
func execPinned(list, path string, argv, env []string) error {
	cpus, err := parseCPUList(list)
	if err != nil {
		return err
	}
	// The mask is the calling thread's: keep this goroutine on it from
	// the mask to the exec.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var old unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return fmt.Errorf("sched_getaffinity: %w", err)
	}
	if err := unix.SchedSetaffinity(0, cpuSetOf(cpus)); err != nil {
		return fmt.Errorf("sched_setaffinity %s: %w", list, err)
	}
	err = syscall.Exec(path, argv, env)
	_ = unix.SchedSetaffinity(0, &old)
	return fmt.Errorf("exec %s: %w", path, err)
}

// pinMain runs the pin subcommand: on success it never returns.
func pinMain(args []string) int {
	if len(args) < 3 || args[1] != "--" {
		fmt.Fprintf(os.Stderr, "usage: dflocksuite %s CPUS -- EXE [ARGS…]\n", pinCommand)
		return 2
	}
	path, err := exec.LookPath(args[2])
	if err == nil {
		err = execPinned(args[0], path, args[2:], os.Environ())
	}
	fmt.Fprintf(os.Stderr, "dflocksuite %s: %v\n", pinCommand, err)
	return 1
}

// allowedCPUs lists the CPUs this process may run on.
func allowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, err
	}
	var out []int
	for c := 0; c <= maxCPU; c++ {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out, nil
}
