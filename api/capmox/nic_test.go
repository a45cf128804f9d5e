package capmox_test

import (
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
)

const (
	letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	digits  = "0123456789"
)

func TestValidBridge(t *testing.T) {
	for name, want := range map[string]bool{
		"vmbr0": true, "vmbr70": true, "pxa0102": true, "br-trunk.70": true, "a": true, "eth_0": true,
		strings.Repeat("b", capmox.MaxBridgeBytes): true,
		// What capmox would write into net0 as a setting of its own.
		"vmbr70,tag=102": false, "pxa0102,": false, "vmbr0=1": false,
		// Not an interface name.
		"": false, strings.Repeat("b", capmox.MaxBridgeBytes+1): false, "vmbr0 ": false, " vmbr0": false,
		"vmbr0\n": false, "vm/br0": false, "vmbr0:1": false, ".": false, "..": false, "-vmbr0": false, "0vmbr": false,
		"vmbr\u00e9": false,
	} {
		if got := capmox.ValidBridge(name); got != want {
			t.Errorf("ValidBridge(%q) = %t, want %t", name, got, want)
		}
	}
}

func TestValidVLAN(t *testing.T) {
	for id, want := range map[int64]bool{1: true, 102: true, 4094: true, 0: false, -1: false, 4095: false, 1 << 40: false} {
		if got := capmox.ValidVLAN(id); got != want {
			t.Errorf("ValidVLAN(%d) = %t, want %t", id, got, want)
		}
	}
}

// TestValidBridgeProperties: a name passes exactly when it has 1 to 15
// bytes, each a letter, digit, '-', '_' or '.', the first a letter.
func TestValidBridgeProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		name := rapid.OneOf(rapid.String(), rapid.StringMatching(`[a-z0-9,=;: ./_-]{0,18}`)).Draw(t, "name")
		ok := capmox.ValidBridge(name)
		plain := len(name) >= 1 && len(name) <= capmox.MaxBridgeBytes && strings.Trim(name, letters+digits+"-_.") == ""
		letterFirst := len(name) > 0 && strings.ContainsRune(letters, rune(name[0]))
		if ok != (plain && letterFirst) {
			t.Fatalf("ValidBridge(%q) = %t, want %t", name, ok, plain && letterFirst)
		}
	})
}
