package main

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/dflockd-ng/dflockd/benchmarks/loadgen"
)

// namedAddr is one "[name=]host:port" flag value.
type namedAddr struct{ name, addr string }

// namedAddrs is a repeatable "[name=]host:port" flag.
type namedAddrs []namedAddr

func (n *namedAddrs) String() string {
	var parts []string
	for _, a := range *n {
		parts = append(parts, a.name+"="+a.addr)
	}
	return strings.Join(parts, ",")
}

func (n *namedAddrs) Set(v string) error {
	name, addr, ok := strings.Cut(v, "=")
	if !ok {
		name, addr = v, v
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q: %w", v, err)
	}
	if !isLoopback(host) {
		// The suite only ever loads servers on this machine.
		return fmt.Errorf("%q: not a loopback address", v)
	}
	if name == "" || n.has(name) {
		return fmt.Errorf("%q: target names must be non-empty and unique", v)
	}
	*n = append(*n, namedAddr{name, addr})
	return nil
}

func (n namedAddrs) has(name string) bool {
	for _, a := range n {
		if a.name == name {
			return true
		}
	}
	return false
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// namedPIDs is a repeatable "name=PID" flag.
type namedPIDs map[string]int

func (n *namedPIDs) String() string { return fmt.Sprint(map[string]int(*n)) }

func (n *namedPIDs) Set(v string) error {
	name, p, ok := strings.Cut(v, "=")
	pid, err := strconv.Atoi(p)
	if !ok || name == "" || err != nil || pid <= 0 {
		return fmt.Errorf("%q: want name=PID", v)
	}
	if *n == nil {
		*n = namedPIDs{}
	}
	(*n)[name] = pid
	return nil
}

func parseWorkloads(s string) ([]loadgen.Workload, error) {
	var out []loadgen.Workload
	for _, f := range strings.Split(s, ",") {
		w := loadgen.Workload(strings.TrimSpace(f))
		known := false
		for _, k := range loadgen.Workloads {
			known = known || k == w
		}
		if !known {
			return nil, fmt.Errorf("--workload: unknown %q (want %v)", w, loadgen.Workloads)
		}
		out = append(out, w)
	}
	return out, nil
}

func parseInts(flagName, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			return nil, fmt.Errorf("--%s: %q is not a positive integer", flagName, f)
		}
		out = append(out, v)
	}
	return out, nil
}
