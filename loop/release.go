package loop

// traffic sums the loops' traffic counters.
func (s *Server) traffic() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n uint64
	for _, lp := range s.loopList {
		if lp != nil {
			n += lp.traffic.Load()
		}
	}
	return n
}
