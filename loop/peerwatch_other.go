//go:build !linux

package loop

// peerWatch has nothing to watch with outside Linux, where reading is
// never paused (pause_other.go): a peer's going is read as an EOF.
type peerWatch struct{}

func newPeerWatch() *peerWatch  { return nil }
func (*peerWatch) add(*conn)    {}
func (*peerWatch) remove(*conn) {}
func (*peerWatch) closed(*conn) {}
func (*peerWatch) stop()        {}
