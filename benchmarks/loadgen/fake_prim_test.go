package loadgen

import (
	"strconv"
)

// primState is the fake's counters, KV store and lists, shared by both
// protocols (callers hold fakeServer.mu). Like the real servers it keeps
// everything across connections and runs.
type primState struct {
	counters map[string]int64
	kv       map[string]string
	lists    map[string][]string
	incrs    int64 // incr requests served
}

func (p *primState) init() {
	if p.counters == nil {
		p.counters, p.kv, p.lists = map[string]int64{}, map[string]string{}, map[string][]string{}
	}
}

// line answers a dflockd primitive request; ok is false for other commands.
func (p *primState) line(cmd, key, arg string) (reply string, ok bool) {
	p.init()
	switch cmd {
	case "incr":
		d, err := strconv.ParseInt(arg, 10, 64)
		if err != nil {
			return "error", true
		}
		p.incrs++
		p.counters[key] += d
		return "ok " + strconv.FormatInt(p.counters[key], 10), true
	case "kset":
		p.kv[key] = arg
		return "ok", true
	case "kget":
		v, found := p.kv[key]
		if !found {
			return "nil", true
		}
		return "ok " + v, true
	case "rpush":
		p.lists[key] = append(p.lists[key], arg)
		return "ok " + strconv.Itoa(len(p.lists[key])), true
	case "lpop":
		l := p.lists[key]
		if len(l) == 0 {
			return "nil", true
		}
		p.lists[key] = l[1:]
		return "ok " + l[0], true
	}
	return "", false
}

// resp answers a Redis primitive command; ok is false for other commands.
func (p *primState) resp(args []string) (reply string, ok bool) {
	p.init()
	bulk := func(v string) string { return "$" + strconv.Itoa(len(v)) + "\r\n" + v + "\r\n" }
	switch {
	case len(args) == 2 && args[0] == "INCR":
		p.incrs++
		p.counters[args[1]]++
		return ":" + strconv.FormatInt(p.counters[args[1]], 10) + "\r\n", true
	case len(args) == 3 && args[0] == "SET":
		p.kv[args[1]] = args[2]
		return "+OK\r\n", true
	case len(args) == 2 && args[0] == "GET":
		v, found := p.kv[args[1]]
		if !found {
			return "$-1\r\n", true
		}
		return bulk(v), true
	case len(args) == 3 && args[0] == "RPUSH":
		p.lists[args[1]] = append(p.lists[args[1]], args[2])
		return ":" + strconv.Itoa(len(p.lists[args[1]])) + "\r\n", true
	case len(args) == 2 && args[0] == "LPOP":
		l := p.lists[args[1]]
		if len(l) == 0 {
			return "$-1\r\n", true
		}
		p.lists[args[1]] = l[1:]
		return bulk(l[0]), true
	}
	return "", false
}
