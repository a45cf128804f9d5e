package capi

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/samber/lo"
)

// errNoNamespace says the test process may not make a network namespace
// (not root, not Linux): a manager with a fixed port then holds the
// machine's.
var errNoNamespace = errors.New("no network namespace")

// dialTimeout bounds a forwarder's connection to either side.
const dialTimeout = 5 * time.Second

// isolated is the network namespace of a manager that cannot be told its
// webhook port (capmox, 9443 of every address), joined to the machine's
// loopback by forwarders, so that any number of such managers run at once
// and none holds the machine's port:
//   - in the namespace, each address the manager must reach (the API
//     server, the Proxmox VE API of its clusters) listens on 127.0.0.1 and
//     forwards to the same address of the machine;
//   - on the machine, a free port of 127.0.0.1 forwards to the webhook
//     port in the namespace (the webhook configurations call it), and the
//     health port forwards to the same port in the namespace.
type isolated struct {
	ns *netns
	// webhook and health are the ports of the machine's 127.0.0.1 that
	// reach the manager's webhook and health ports.
	webhook, health int

	mu        sync.Mutex
	listeners []net.Listener
	conns     map[net.Conn]struct{}
	closed    bool
}

// isolate makes the namespace for a manager serving its webhooks on port
// webhookPort of its namespace, reaching the addresses reach (host:port
// of the machine's 127.0.0.1), with its health port picked by ports.
func isolate(webhookPort int, reach []string, ports func() (int, error)) (_ *isolated, err error) {
	ns, err := newNetns()
	if err != nil {
		return nil, err
	}
	iso := &isolated{ns: ns, conns: map[net.Conn]struct{}{}}
	defer func() {
		if err != nil {
			iso.close()
		}
	}()
	for _, addr := range lo.Uniq(reach) {
		ln, err := ns.listen(addr)
		if err != nil {
			return nil, fmt.Errorf("cannot forward %s from the manager's network namespace: %w", addr, err)
		}
		iso.serve(ln, func() (net.Conn, error) { return net.DialTimeout("tcp", addr, dialTimeout) })
	}
	webhook, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("cannot listen for the manager's webhooks: %w", err)
	}
	iso.webhook = webhook.Addr().(*net.TCPAddr).Port
	inside := net.JoinHostPort("127.0.0.1", strconv.Itoa(webhookPort))
	iso.serve(webhook, func() (net.Conn, error) { return ns.dial(inside) })
	if iso.health, err = ports(); err != nil {
		return nil, err
	}
	healthAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(iso.health))
	health, err := net.Listen("tcp", healthAddr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen for the manager's health port: %w", err)
	}
	iso.serve(health, func() (net.Conn, error) { return ns.dial(healthAddr) })
	return iso, nil
}

// launch starts a process in the namespace (testproc.Process.Launcher).
func (iso *isolated) launch(start func() error) error { return iso.ns.run(start) }

// serve accepts on ln until close, forwarding each connection to one dial
// makes.
func (iso *isolated) serve(ln net.Listener, dial func() (net.Conn, error)) {
	iso.mu.Lock()
	iso.listeners = append(iso.listeners, ln)
	iso.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go iso.pipe(c, dial)
		}
	}()
}

// pipe copies between c and a connection dial makes, each way until its
// reader ends, and closes both.
func (iso *isolated) pipe(c net.Conn, dial func() (net.Conn, error)) {
	if !iso.track(c) {
		return
	}
	defer iso.untrack(c)
	d, err := dial()
	if err != nil || !iso.track(d) {
		return
	}
	defer iso.untrack(d)
	var wg sync.WaitGroup
	wg.Go(func() { copyHalf(c, d) })
	copyHalf(d, c)
	wg.Wait()
}

// copyHalf copies src to dst and then closes dst for writing, so the
// other side sees the end of what src sent.
func copyHalf(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

// track records an open connection, or closes it when the forwarders are
// closed, and says whether it was recorded.
func (iso *isolated) track(c net.Conn) bool {
	iso.mu.Lock()
	defer iso.mu.Unlock()
	if iso.closed {
		c.Close()
		return false
	}
	iso.conns[c] = struct{}{}
	return true
}

func (iso *isolated) untrack(c net.Conn) {
	iso.mu.Lock()
	delete(iso.conns, c)
	iso.mu.Unlock()
	c.Close()
}

// close stops the forwarders, closes their connections and ends the
// namespace. The manager's process must have exited first.
func (iso *isolated) close() {
	iso.mu.Lock()
	iso.closed = true
	// What is closed already (a listener that failed, a connection its
	// peer ended) answers an error that says nothing more.
	for _, ln := range iso.listeners {
		_ = ln.Close()
	}
	for c := range iso.conns {
		_ = c.Close()
	}
	iso.mu.Unlock()
	iso.ns.close()
}
