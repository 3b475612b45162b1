//go:build faultinject

package loop

import (
	"context"
	"time"
)

// InjectLoopExit stops gnet's loops as a fault inside gnet would, without
// a Shutdown: Serve must report it (a binary built with -tags faultinject
// serves tests that check the process then exits non-zero).
func (s *Server) InjectLoopExit() {
	s.mu.Lock()
	e, boot := s.mu.gnet, s.mu.boot
	s.mu.Unlock()
	if !boot {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = e.Stop(ctx)
}
