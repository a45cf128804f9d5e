//go:build !linux

package capi

import "net"

// netns is Linux's network namespace; elsewhere there is none
// (newNetns answers errNoNamespace), and a
// manager with a fixed port holds the machine's (Start takes its lock).
type netns struct{}

func newNetns() (*netns, error)                    { return nil, errNoNamespace }
func (*netns) run(func() error) error              { return errNoNamespace }
func (*netns) listen(string) (net.Listener, error) { return nil, errNoNamespace }
func (*netns) dial(string) (net.Conn, error)       { return nil, errNoNamespace }
func (*netns) close()                              {}
