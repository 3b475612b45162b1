package vocab

import "strconv"

// profileSet is a set of profiles, one bit each.
type profileSet uint8

const (
	v2  profileSet = 1 << ProfileV2
	v1  profileSet = 1 << ProfileV1
	rf  profileSet = 1 << ProfileRF
	all            = v2 | v1 | rf
)

// command is a row of the command table: the name a client sends and the
// profiles that know it (spec §B.13: dflockd v1.10 knows the lock and
// semaphore commands, auth and stats; the redis-feats line has no ping).
type command struct {
	name     string
	profiles profileSet
}

// commands is the one place each command is named.
var commands = [numOps]command{
	OpUnknown: {"?", 0},

	OpLock: {"l", all}, OpRelease: {"r", all}, OpRenew: {"n", all},
	OpEnqueue: {"e", all}, OpWait: {"w", all},
	OpSemLock: {"sl", all}, OpSemRelease: {"sr", all}, OpSemRenew: {"sn", all},
	OpSemEnqueue: {"se", all}, OpSemWait: {"sw", all},
	OpAuth: {"auth", all}, OpPing: {"ping", v2}, OpStats: {"stats", all},
	OpBarrier: {"barrier", v2 | rf}, OpStableRef: {"stable-ref", v2 | rf},

	OpReadLock: {"rl", v2 | rf}, OpWriteLock: {"wl", v2 | rf},
	OpReadRelease: {"rr", v2 | rf}, OpWriteRelease: {"wr", v2 | rf},
	OpReadRenew: {"rn", v2 | rf}, OpWriteRenew: {"wn", v2 | rf},
	OpReadEnqueue: {"re", v2 | rf}, OpWriteEnqueue: {"we", v2 | rf},
	OpReadWait: {"rw", v2 | rf}, OpWriteWait: {"ww", v2 | rf},
	OpIncr: {"incr", v2 | rf}, OpDecr: {"decr", v2 | rf}, OpGet: {"get", v2 | rf}, OpCSet: {"cset", v2 | rf},
	OpKSet: {"kset", v2 | rf}, OpKGet: {"kget", v2 | rf}, OpKDel: {"kdel", v2 | rf}, OpKCAS: {"kcas", v2 | rf},
	OpLPush: {"lpush", v2 | rf}, OpRPush: {"rpush", v2 | rf}, OpLPop: {"lpop", v2 | rf}, OpRPop: {"rpop", v2 | rf},
	OpLLen: {"llen", v2 | rf}, OpLRange: {"lrange", v2 | rf}, OpBLPop: {"blpop", v2 | rf}, OpBRPop: {"brpop", v2 | rf},
	OpListen: {"listen", v2 | rf}, OpUnlisten: {"unlisten", v2 | rf}, OpSignal: {"signal", v2 | rf},
	OpWatch: {"watch", v2 | rf}, OpUnwatch: {"unwatch", v2 | rf},
	OpBWait: {"bwait", v2 | rf}, OpElect: {"elect", v2 | rf}, OpResign: {"resign", v2 | rf},
	OpObserve: {"observe", v2 | rf}, OpUnobserve: {"unobserve", v2 | rf},
}

// byFirst lists the commands by the first byte of their names: a lookup
// compares a handful of names instead of hashing, and does not allocate.
var byFirst [256][]Op

func init() {
	for op := OpUnknown + 1; op < numOps; op++ {
		c := commands[op]
		if c.name == "" {
			panic("vocab: command " + strconv.Itoa(int(op)) + " has no name")
		}
		byFirst[c.name[0]] = append(byFirst[c.name[0]], op)
	}
}

// Named returns the command a client names by cmd, or OpUnknown.
func Named(cmd []byte) Op {
	if len(cmd) == 0 {
		return OpUnknown
	}
	for _, op := range byFirst[cmd[0]] {
		if commands[op].name == string(cmd) {
			return op
		}
	}
	return OpUnknown
}

// Knows reports whether op is a command of profile p.
func (p Profile) Knows(op Op) bool { return commands[op].profiles&(1<<p) != 0 }
