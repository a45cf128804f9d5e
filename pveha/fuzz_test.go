package pveha_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/pveha"
)

// FuzzRuleMembers: a rule's resources read back as a sorted set without
// blanks, and a "vm:" resource's VMID round-trips through SID.
func FuzzRuleMembers(f *testing.F) {
	for _, s := range []string{"vm:101,vm:102", " vm:2 ,,vm:1,vm:1", "", "ct:5", "vm:x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m := pveha.Rule{Resources: s}.Members()
		if !slices.IsSorted(m) || len(slices.Compact(slices.Clone(m))) != len(m) {
			t.Fatalf("members %q of %q", m, s)
		}
		for _, x := range m {
			if x == "" || strings.Contains(x, ",") || strings.TrimSpace(x) != x {
				t.Fatalf("member %q of %q", x, s)
			}
			if id := (pveha.Resource{SID: x}).VMID(); id != 0 && (id < 0 || pveha.SID(id) != x) {
				t.Fatalf("VMID %d of %q", id, x)
			}
		}
	})
}
