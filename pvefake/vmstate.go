package pvefake

// VMRunning reports whether a guest runs, the node it is on, and whether
// it exists. A guest on an offline node does not run (SetNodeOnline stops
// it; PVE shows it "unknown").
func (srv *Server) VMRunning(vmid int) (running bool, node string, ok bool) {
	_ = srv.withState(func(s *state) error {
		if g, found := s.vms[vmid]; found {
			running, node, ok = g.running && s.online(g.node), g.node, true
		}
		return nil
	})
	return running, node, ok
}
