package pveacl_test

import (
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{
		"plain":         "plain",
		"a%20b":         "a b",
		"a+b":           "a+b", // '+' is no space, as in uri_unescape
		"%3a%3A":        "::",
		"100%":          "100%",
		"%zz%4":         "%zz%4",
		"%C3%A9t%C3%A9": "été",
		"%":             "%",
	} {
		if got := pveacl.Unescape(in); got != want {
			t.Errorf("Unescape(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzUnescape(f *testing.F) {
	for _, s := range []string{"", "%", "%4", "%41", "a%2Bb", "%%41", "%g1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := pveacl.Unescape(s)
		if len(got) > len(s) {
			t.Fatalf("Unescape(%q) = %q grew", s, got)
		}
		if !strings.Contains(s, "%") && got != s {
			t.Fatalf("Unescape(%q) = %q changed a string without escapes", s, got)
		}
	})
}
