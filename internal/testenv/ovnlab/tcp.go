//go:build linux

package ovnlab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// Transfer is what one TCP transfer between two hosts achieved.
type Transfer struct {
	// Sent is the number of bytes the sender was asked to send; Received
	// how many arrived before the transfer ended or timed out.
	Sent, Received int64
	// Took is the time from connect to the last byte (or the timeout).
	Took time.Duration
	// Done reports that every byte arrived within the timeout.
	Done bool
}

// TransferTCP sends size bytes over one TCP connection from h to a
// listener on dst's address and reports how many arrived within timeout.
// Both sockets are opened inside the hosts' network namespaces; the data
// then takes the path a VM's or pod's own traffic takes.
func (h *Host) TransferTCP(dst *Host, size int64, timeout time.Duration) (Transfer, error) {
	ln, err := dst.listenTCP()
	if err != nil {
		return Transfer{}, err
	}
	defer ln.Close()
	got := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- 0
			return
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(timeout))
		n, _ := io.Copy(io.Discard, c)
		got <- n
	}()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	conn, err := h.dialTCP(ctx, netip.AddrPortFrom(dst.Addr.Addr(), uint16(ln.Addr().(*net.TCPAddr).Port)))
	if err != nil {
		return Transfer{}, fmt.Errorf("host %s cannot connect to %s: %w", h.Name, dst.Name, err)
	}
	_ = conn.SetWriteDeadline(start.Add(timeout))
	_, werr := io.CopyN(conn, zeros{}, size)
	if werr == nil {
		werr = conn.(*net.TCPConn).CloseWrite()
	}
	n := <-got
	conn.Close()
	t := Transfer{Sent: size, Received: n, Took: time.Since(start), Done: n == size}
	if werr != nil && !errors.Is(werr, os.ErrDeadlineExceeded) {
		return t, fmt.Errorf("host %s sending to %s: %w", h.Name, dst.Name, werr)
	}
	return t, nil
}

// zeros is an endless reader of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func (h *Host) listenTCP() (net.Listener, error) {
	var ln net.Listener
	err := inNamespace(h.NS, func() error {
		var err error
		ln, err = net.Listen("tcp4", net.JoinHostPort(h.Addr.Addr().String(), "0"))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("host %s cannot listen: %w", h.Name, err)
	}
	return ln, nil
}

func (h *Host) dialTCP(ctx context.Context, dst netip.AddrPort) (net.Conn, error) {
	var conn net.Conn
	err := inNamespace(h.NS, func() error {
		var err error
		conn, err = (&net.Dialer{}).DialContext(ctx, "tcp4", dst.String())
		return err
	})
	return conn, err
}

// inNamespace runs f on an OS thread that has entered network namespace
// ns, so the sockets f opens belong to it; they stay there when used from
// other threads. The thread goes back before it is unlocked, and is left
// locked (so the runtime ends it) when going back fails.
func inNamespace(ns string, f func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		err, back := runIn(ns, f)
		if back {
			runtime.UnlockOSThread()
		}
		done <- err
	}()
	return <-done
}

func runIn(ns string, f func() error) (error, bool) {
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return err, true
	}
	defer self.Close()
	target, err := os.Open("/run/netns/" + ns)
	if err != nil {
		return fmt.Errorf("network namespace %s: %w", ns, err), true
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("cannot enter network namespace %s: %w", ns, err), true
	}
	ferr := f()
	if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("cannot leave network namespace %s: %w", ns, err), false
	}
	return ferr, true
}

// String is "<received> of <sent> bytes in <took>".
func (t Transfer) String() string {
	return strconv.FormatInt(t.Received, 10) + " of " + strconv.FormatInt(t.Sent, 10) + " bytes in " + t.Took.Round(time.Millisecond).String()
}
