package capmox_test

import (
	"testing"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
)

func TestMismatchedTalosTag(t *testing.T) {
	cases := map[string]struct {
		tags []string
		at   int
		bad  bool
	}{
		"Same":         {tags: []string{"cozystack", "talos", "talos-v1.13.6"}},
		"None":         {tags: []string{"cozystack", "talos"}},
		"NotARelease":  {tags: []string{"talos-vnext", "talos-v"}},
		"Other":        {tags: []string{"cozystack", "talos-v1.12.0"}, at: 1, bad: true},
		"SameAndOther": {tags: []string{"talos-v1.13.6", "talos-v1.13.5"}, at: 1, bad: true},
		"PreRelease":   {tags: []string{"talos-v1.13.6-beta.0"}, bad: true},
	}
	for name, tc := range cases {
		at, bad := capmox.MismatchedTalosTag(tc.tags, "v1.13.6")
		if at != tc.at || bad != tc.bad {
			t.Errorf("%s: MismatchedTalosTag(%q) = %d, %v; want %d, %v", name, tc.tags, at, bad, tc.at, tc.bad)
		}
	}
}
