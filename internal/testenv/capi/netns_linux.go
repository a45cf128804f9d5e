package capi

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// netns is a network namespace of its own, with only its loopback, held by
// one goroutine locked to its OS thread: the thread moved into the
// namespace, and what that goroutine does (listen, dial, start a process)
// happens there. Everything else of the test process stays in the
// machine's namespace. A process started in it inherits it, as it inherits
// the thread's other attributes, so a manager that listens on a fixed port
// of every address (capmox's 9443) holds that port in its namespace only.
// close moves the thread back to the machine's namespace and lets it go:
// the thread may have started other processes before, whose parent-death
// signal (testproc's DieWithTest) fires when it ends, so it must not end.
// The namespace goes once the last process and socket in it are gone.
type netns struct {
	do   chan func()
	done chan struct{}
}

// newNetns makes the namespace and brings its loopback up. Where the
// process may not make one (not root, no CAP_SYS_ADMIN) it answers
// errNoNamespace.
func newNetns() (*netns, error) {
	n := &netns{do: make(chan func()), done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		machine, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			started <- fmt.Errorf("%w: %w", errNoNamespace, err)
			return
		}
		defer unix.Close(machine)
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			started <- fmt.Errorf("%w: %w", errNoNamespace, err)
			return
		}
		// Back to the machine's namespace at the end; a thread that
		// cannot go back ends with this goroutine (it stays locked).
		defer func() {
			if unix.Setns(machine, unix.CLONE_NEWNET) == nil {
				runtime.UnlockOSThread()
			}
		}()
		if err := loopbackUp(); err != nil {
			started <- err
			return
		}
		started <- nil
		for {
			select {
			case f := <-n.do:
				f()
			case <-n.done:
				return
			}
		}
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return n, nil
}

// run runs f in the namespace, on its thread, and waits for it; after
// close it runs nothing and says so.
func (n *netns) run(f func() error) error {
	errc := make(chan error, 1)
	select {
	case n.do <- func() { errc <- f() }:
		return <-errc
	case <-n.done:
		return errNetnsClosed
	}
}

var errNetnsClosed = errors.New("the network namespace is closed")

// listen listens on addr in the namespace.
func (n *netns) listen(addr string) (ln net.Listener, err error) {
	err = n.run(func() error {
		ln, err = net.Listen("tcp", addr)
		return err
	})
	return ln, err
}

// dial connects to addr in the namespace.
func (n *netns) dial(addr string) (c net.Conn, err error) {
	err = n.run(func() error {
		c, err = net.DialTimeout("tcp", addr, 5*time.Second)
		return err
	})
	return c, err
}

// close ends the namespace's goroutine, whose thread goes back to the
// machine's namespace. What it started should have exited first.
func (n *netns) close() { close(n.done) }

// loopbackUp sets the flag IFF_UP of the calling thread's loopback, as
// "ip link set lo up" does.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("cannot bring the namespace's loopback up: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("cannot read the namespace's loopback flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("cannot bring the namespace's loopback up: %w", err)
	}
	return nil
}
