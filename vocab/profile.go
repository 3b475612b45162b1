package vocab

// Profile is the dflockd release line the server answers as (--compat,
// spec §I). The zero value is the default, v2.
type Profile uint8

const (
	// ProfileV2 is dflockd v2 on a single node: fence-prefixed tokens,
	// three-field grants, ping, error_draining, separate lock and
	// semaphore namespaces; the redis-feats primitives as extensions.
	ProfileV2 Profile = iota
	// ProfileV1 is dflockd v1.10.0, the release most deployments run:
	// locks and semaphores share one keyspace, a drain keeps serving, only
	// the commands v1.10 knows, CR bytes count towards the line cap.
	ProfileV1
	// ProfileRF is dflockd's redis-feats branch: the fence as a fourth
	// field of grants, one lock/semaphore map, CRs removed anywhere.
	ProfileRF
	numProfiles
)

var profileNames = [numProfiles]string{ProfileV2: "v2", ProfileV1: "v1", ProfileRF: "rf"}

func (p Profile) String() string { return profileNames[p] }

// ProfileNamed returns the profile of a --compat value.
func ProfileNamed(name string) (Profile, bool) {
	for p, n := range profileNames {
		if n == name {
			return Profile(p), true
		}
	}
	return 0, false
}

// SharedLockSpace reports whether locks and semaphores are one keyspace,
// a lock being a semaphore of limit 1 (v1.10 and rf, spec §B.2).
func (p Profile) SharedLockSpace() bool { return p != ProfileV2 }
