package pveacl_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

func TestSplitList(t *testing.T) {
	cases := map[string]struct {
		in   string
		want []string
	}{
		"Mixed":  {" a, b;c  d,,", []string{"a", "b", "c", "d"}},
		"Empty":  {" ;, ", nil},
		"NUL":    {"a b\x00c,d\x00", []string{"a b", "c,d"}},
		"Tab":    {"a\tb\vc", []string{"a", "b", "c"}},
		"Single": {"VM.Audit", []string{"VM.Audit"}},
	}
	for name, tc := range cases {
		if diff := cmp.Diff(tc.want, pveacl.SplitList(tc.in), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: SplitList(%q): -want +got:\n%s", name, tc.in, diff)
		}
	}
}
