package vnetid_test

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/pxsubstrate/pxsubstrate/pvesdn/vnetid"
)

func TestPrefix(t *testing.T) {
	for _, c := range []struct{ zone, prefix, want string }{
		{"pxtenant", "", "pxte"}, {"pxa", "", "pxa"}, {"pxtenant", "t", "t"},
	} {
		if got := vnetid.Prefix(c.zone, c.prefix); got != c.want {
			t.Errorf("Prefix(%q, %q) = %q, want %q", c.zone, c.prefix, got, c.want)
		}
	}
	for p, want := range map[string]bool{"pxa": true, "a": true, "abcd": true, "abcde": false, "0ab": false, "": false, "p-a": false} {
		if got := vnetid.ValidPrefix(p); got != want {
			t.Errorf("ValidPrefix(%q) = %t, want %t", p, got, want)
		}
	}
}

// TestMatchIsID: Match accepts exactly the names ID makes under the prefix.
func TestMatchIsID(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		prefix := rapid.StringMatching(`[a-zA-Z][a-zA-Z0-9]{0,3}`).Draw(t, "prefix")
		vlan := rapid.IntRange(0, 9999).Draw(t, "vlan")
		id := vnetid.ID(prefix, vlan)
		if len(id) > 8 || !vnetid.Match(prefix, id) {
			t.Fatalf("ID(%q, %d) = %q does not match its prefix, or is longer than 8", prefix, vlan, id)
		}
		other := rapid.OneOf(rapid.StringMatching(`[a-zA-Z0-9]{0,9}`),
			rapid.Map(rapid.StringMatching(`[0-9a]{3,5}`), func(s string) string { return prefix + s })).Draw(t, "other")
		want := len(other) == len(prefix)+4 && strings.HasPrefix(other, prefix) && isDigits(other[len(prefix):])
		if got := vnetid.Match(prefix, other); got != want {
			t.Fatalf("Match(%q, %q) = %t, want %t", prefix, other, got, want)
		}
	})
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func ExampleID() {
	fmt.Println(vnetid.ID("pxa", 117), vnetid.Match("pxa", "pxa0117"), vnetid.Match("pxa", "pxa117"))
	// Output: pxa0117 true false
}
