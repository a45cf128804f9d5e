package ovngatewaytest

import (
	"fmt"
	"io"
	"net"
	"sync"
)

// netSwitch forwards connections from a public unix socket to a server's
// private one. Down closes every forwarded connection and the listener, so
// clients see the server vanish; Up listens again on the same path.
type netSwitch struct {
	path     string
	upstream string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func newSwitch(path, upstream string) (*netSwitch, error) {
	s := &netSwitch{path: path, upstream: upstream, conns: map[net.Conn]struct{}{}}
	if err := s.Up(); err != nil {
		return nil, err
	}
	return s, nil
}

// Up starts accepting connections; it does nothing when already up.
func (s *netSwitch) Up() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		return nil
	}
	ln, err := net.Listen("unix", s.path)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w", s.path, err)
	}
	s.ln = ln
	s.wg.Add(1)
	go s.accept(ln)
	return nil
}

// Down closes the listener and every open connection.
func (s *netSwitch) Down() {
	s.mu.Lock()
	ln := s.ln
	s.ln = nil
	conns := s.conns
	s.conns = map[net.Conn]struct{}{}
	s.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
	for c := range conns {
		_ = c.Close()
	}
}

// Close takes the switch down and waits for its goroutines.
func (s *netSwitch) Close() {
	s.Down()
	s.wg.Wait()
}

func (s *netSwitch) accept(ln net.Listener) {
	defer s.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("unix", s.upstream)
		if err != nil {
			_ = c.Close()
			continue
		}
		if !s.track(ln, c, u) {
			_ = c.Close()
			_ = u.Close()
			continue
		}
		s.wg.Add(2)
		go s.pipe(c, u)
		go s.pipe(u, c)
	}
}

// track records a forwarded pair unless the listener it came from was taken
// down meanwhile.
func (s *netSwitch) track(ln net.Listener, c, u net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != ln {
		return false
	}
	s.conns[c] = struct{}{}
	s.conns[u] = struct{}{}
	return true
}

func (s *netSwitch) pipe(dst, src net.Conn) {
	defer s.wg.Done()
	// A cut connection ends the copy with an error; either way both ends
	// are closed so the peer sees the server vanish.
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
	s.mu.Lock()
	delete(s.conns, dst)
	delete(s.conns, src)
	s.mu.Unlock()
}
