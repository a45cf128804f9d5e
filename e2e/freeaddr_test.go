package e2e

import "testing"

// TestFreeAddrDistinct: a process's webhook and metrics ports come from
// two calls; among 500 calls the kernel repeats a port almost surely, and
// freeAddr must not.
func TestFreeAddrDistinct(t *testing.T) {
	seen := map[string]bool{}
	for range 500 {
		addr := freeAddr(t)
		if seen[addr] {
			t.Fatalf("freeAddr returned %s twice", addr)
		}
		seen[addr] = true
	}
}
