package loop

import (
	"testing"
	"time"
)

// electionScenario: an observer sees resigned → failover → elected when
// the leader resigns with a candidate queued on the other event loop; the
// new leader is told nothing about its own election; observe of a held
// name pushes the current state. grant is the pattern of a grant with a
// 10 s lease.
func electionScenario(t *testing.T, ts *testServer, grant string) {
	k := key("elect")
	obs, a, b := dial(t, ts), dial(t, ts), dial(t, ts)
	obs.do("observe", k, "", "ok")
	obs.silent(50 * time.Millisecond) // nobody leads yet: no push
	ta := a.do("elect", k, "0 10", grant)[1]
	obs.expect("leader elected " + k)
	b.send("elect", k, "10 10")
	b.silent(100 * time.Millisecond)

	a.do("resign", k, ta, "ok")
	obs.expect("leader resigned " + k)
	obs.expect("leader failover " + k)
	obs.expect("leader elected " + k)
	tb := b.expect(grant)[3:35]
	a.silent(50 * time.Millisecond) // resigned: a is no longer a watcher

	// A late observer learns the current leader; the reply comes first.
	late := dial(t, ts)
	late.do("observe", k, "", "ok")
	late.expect("leader elected " + k)
	late.do("unobserve", k, "", "ok")

	// An election is the lock of its name: l waits behind the leader, and
	// its grant after the leader's lease is released is a failover.
	c := dial(t, ts)
	c.do("l", k, "0", "timeout")
	c.send("l", k, "10 10")
	c.silent(50 * time.Millisecond)
	b.do("r", k, tb, "ok")
	c.expect(grant)
	obs.expect("leader failover " + k)
	b.expect("leader failover " + k) // still registered as a holder: r is no resign
	late.silent(50 * time.Millisecond)
}

func TestElectionOverTheWire(t *testing.T) {
	electionScenario(t, plain, "ok T 10")
}

func TestElectionOverTheWireRF(t *testing.T) {
	electionScenario(t, rfsrv, "ok T 10 F")
}

// The rf line repeats "leader elected" for every observe of a held name
// (spec §I.2 O4); v2 registers once and says it once.
func TestRepeatedObserve(t *testing.T) {
	for _, tc := range []struct {
		name string
		ts   *testServer
	}{{"v2", plain}, {"rf", rfsrv}} {
		t.Run(tc.name, func(t *testing.T) {
			k := key("reobserve")
			leader, obs := dial(t, tc.ts), dial(t, tc.ts)
			leader.do("elect", k, "0", "ok T 33"+map[bool]string{true: " F"}[tc.ts == rfsrv])
			obs.do("observe", k, "", "ok")
			obs.expect("leader elected " + k)
			obs.do("observe", k, "", "ok")
			if tc.ts == rfsrv {
				obs.expect("leader elected " + k)
			} else {
				obs.silent(100 * time.Millisecond)
			}
		})
	}
}

// A leader that disconnects hands over to the queued candidate: the
// observers see failover then elected.
func TestLeaderDisconnectFailover(t *testing.T) {
	k := key("elect-dc")
	obs, a, b := dial(t, plain), dial(t, plain), dial(t, plain)
	obs.do("observe", k, "", "ok")
	a.do("elect", k, "0", "ok T 33")
	obs.expect("leader elected " + k)
	b.send("elect", k, "10")
	b.silent(50 * time.Millisecond)
	a.c.Close()
	obs.expect("leader failover " + k)
	obs.expect("leader elected " + k)
	b.expect("ok T 33")
}
