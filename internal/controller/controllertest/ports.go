package controllertest

import (
	"net"
	"sync"
	"testing"
)

// handedOut holds the addresses FreeAddr has returned in this process. A
// port is free only while nobody listens on it, and the kernel may hand
// the same ephemeral port to two probes in a row, so two servers of one
// process (a controller's webhook and metrics) could otherwise share it.
var handedOut = struct {
	sync.Mutex
	addrs map[string]bool
}{addrs: map[string]bool{}}

// FreeAddr returns "127.0.0.1:<port>" for a port nobody listens on and
// that no earlier call in this process returned. Another process may
// still take it before the caller listens.
func FreeAddr(t testing.TB) string {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		if !handedOut.addrs[addr] {
			handedOut.addrs[addr] = true
			return addr
		}
	}
	t.Fatal("no port this process has not handed out already in 100 tries")
	return ""
}
