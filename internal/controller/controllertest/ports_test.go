package controllertest_test

import (
	"testing"

	"github.com/pxsubstrate/pxsubstrate/internal/controller/controllertest"
)

// TestFreeAddrDistinct: a controller's webhook and metrics ports come from
// two calls; among 500 calls the kernel repeats a port almost surely, and
// FreeAddr must not.
func TestFreeAddrDistinct(t *testing.T) {
	seen := map[string]bool{}
	for range 500 {
		addr := controllertest.FreeAddr(t)
		if seen[addr] {
			t.Fatalf("FreeAddr returned %s twice", addr)
		}
		seen[addr] = true
	}
}
