package capi

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/pxsubstrate/pxsubstrate/testproc"
)

// newTestIsolation isolates a manager serving on port for t, reaching
// reach, and closes it when t ends.
func newTestIsolation(t *testing.T, port int, reach ...string) *isolated {
	t.Helper()
	iso, err := isolate(port, reach, testproc.FreePort)
	if errors.Is(err, errNoNamespace) {
		t.Fatalf("capmox's network namespace needs root (CAP_SYS_ADMIN): run the tests as root, as CI does: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(iso.close)
	return iso
}

// loopback listens on a free port of the machine's 127.0.0.1 until t
// ends.
func loopback(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// echo serves on ln, answering each line with prefix and the line.
func echo(ln net.Listener, prefix string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			r := bufio.NewScanner(c)
			for r.Scan() {
				fmt.Fprintf(c, "%s %s\n", prefix, r.Text())
			}
		}()
	}
}

// ask sends line on c and returns the answer's line.
func ask(t *testing.T, c net.Conn, line string) string {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintln(c, line); err != nil {
		t.Fatal(err)
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestIsolatedPorts: the machine reaches each of two namespaces through
// its own forwarded health port, and each reaches the machine's address it
// was given (the API server's, the Proxmox VE API's) and no other.
func TestIsolatedPorts(t *testing.T) {
	t.Parallel()
	held := loopback(t)
	go echo(held, "machine")
	other := loopback(t)
	for _, name := range []string{"a", "b"} {
		iso := newTestIsolation(t, 1, held.Addr().String())
		// A manager's health probe listens on its port inside.
		inside, err := iso.ns.listen(net.JoinHostPort("127.0.0.1", strconv.Itoa(iso.health)))
		if err != nil {
			t.Fatalf("namespace %s: cannot listen on its health port %d: %v", name, iso.health, err)
		}
		defer inside.Close()
		go echo(inside, "inside-"+name)
		c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(iso.health)))
		if err != nil {
			t.Fatal(err)
		}
		if got := ask(t, c, "health"); got != "inside-"+name+" health\n" {
			t.Errorf("the machine's health port of namespace %s answered %q", name, got)
		}
		c.Close()
		back, err := iso.ns.dial(held.Addr().String())
		if err != nil {
			t.Fatalf("namespace %s cannot reach the machine's %s: %v", name, held.Addr(), err)
		}
		if got := ask(t, back, "api"); got != "machine api\n" {
			t.Errorf("namespace %s reached %q at the machine's address", name, got)
		}
		back.Close()
		if c, err := iso.ns.dial(other.Addr().String()); err == nil {
			c.Close()
			t.Errorf("namespace %s reached the machine's %s, which it was not given", name, other.Addr())
		}
	}
}

// TestIsolatedWebhookPort: a manager's fixed webhook port inside its
// namespace is free while the machine's is held, and the machine reaches
// it through the forwarded port.
func TestIsolatedWebhookPort(t *testing.T) {
	t.Parallel()
	port := loopback(t).Addr().(*net.TCPAddr).Port
	iso := newTestIsolation(t, port)
	inside, err := iso.ns.listen(net.JoinHostPort("0.0.0.0", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("port %d of every address inside is taken: %v", port, err)
	}
	defer inside.Close()
	go echo(inside, "webhook")
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(iso.webhook)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := ask(t, c, "review"); got != "webhook review\n" {
		t.Errorf("the forwarded webhook port answered %q", got)
	}
}

// TestIsolationKeepsEarlierProcesses: the namespace's thread goes back to
// the machine's namespace when it closes instead of ending, so a process
// that dies with its thread (DieWithTest), started from it in the
// namespace, outlives the close.
func TestIsolationKeepsEarlierProcesses(t *testing.T) {
	t.Parallel()
	// Several at once: a goroutine that happens to run on the process's
	// main thread never ends it, whatever it does.
	var procs []*testproc.Process
	for range 6 {
		iso, err := isolate(1, nil, testproc.FreePort)
		if errors.Is(err, errNoNamespace) {
			t.Fatalf("capmox's network namespace needs root (CAP_SYS_ADMIN): run the tests as root, as CI does: %v", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		p := &testproc.Process{Name: "sleep", Path: "/bin/sleep", Args: []string{"60"}, DieWithTest: true, Launcher: iso.launch}
		err = p.Start()
		iso.close()
		if err != nil {
			t.Fatal(err)
		}
		defer p.Kill()
		procs = append(procs, p)
	}
	time.Sleep(500 * time.Millisecond)
	for i, p := range procs {
		if !p.Running() {
			t.Errorf("process %d, started in a namespace, died when it closed: %v", i, p.Err())
		}
	}
}
