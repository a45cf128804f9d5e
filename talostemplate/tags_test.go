package talostemplate

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseTags(t *testing.T) {
	cases := map[string]struct {
		reason string
		list   string
		want   []string
		err    string
	}{
		"Default":        {reason: "the reference default set, sorted", list: "cozystack,talos,talos-v1.13.6,schematic-ce4c9805", want: []string{"cozystack", "schematic-ce4c9805", "talos", "talos-v1.13.6"}},
		"LowerCased":     {reason: "capmox lower-cases the selector, so the template's tags are lower-cased too", list: "Cozystack,TALOS", want: []string{"cozystack", "talos"}},
		"EmptiesDropped": {reason: "empty entries vanish", list: ",a,,b,", want: []string{"a", "b"}},
		"Deduplicated":   {reason: "a set has no duplicates, case-insensitively", list: "a,A,a", want: []string{"a"}},
		"ByteOrder":      {reason: "sorted in the C locale", list: "b,_x,9,a+b,a-b,a.b", want: []string{"9", "_x", "a+b", "a-b", "a.b", "b"}},
		"Nothing":        {reason: "a template needs a tag", list: ",,", err: "the template needs at least one tag"},
		"Newline":        {reason: "a newline would split a tag the operator meant whole", list: "a\nb", err: "template tags are comma-separated and may not contain a newline"},
		"Space":          {reason: "nothing is trimmed", list: "a, b", err: `not a valid Proxmox tag: " b"`},
		"Semicolon":      {reason: "';' is PVE's separator and never part of a tag", list: "a;b", err: "not a valid Proxmox tag: a;b"},
		"LeadingDash":    {reason: "the first character is a letter, digit or _", list: "-a,+b", err: "not a valid Proxmox tag: +b -a"},
		"Kelvin":         {reason: "only ASCII letters are lower-cased: U+212A stays and is refused", list: "\u212a8s", err: "not a valid Proxmox tag: \u212a8s"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseTags(tc.list)
			if tc.err != "" {
				var ie *InvalidError
				if !errors.As(err, &ie) || !errors.Is(err, ErrInvalidSpec) || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("%s: got %v, want an *InvalidError starting with %q", tc.reason, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestDefaultTags(t *testing.T) {
	got, err := DefaultTags("v1.14.0-beta.1", idGuestAgent)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"cozystack", "schematic-ce4c9805", "talos", "talos-v1.14.0-beta.1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}
	if PVETags(got) != "cozystack;schematic-ce4c9805;talos;talos-v1.14.0-beta.1" {
		t.Errorf("PVE joins tags with ';', got %q", PVETags(got))
	}
}

// FuzzParseTags: an accepted list gives a sorted set of valid tags, each the
// ASCII lower-casing of an input entry, and normalising again changes nothing.
func FuzzParseTags(f *testing.F) {
	for _, s := range []string{"cozystack,talos", "A,a,,b", "a, b", "x\ny", "", ",", "\u212a", "talos-v1.13.6,schematic-ce4c9805", "_+.-", "a;b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, list string) {
		got, err := ParseTags(list)
		if err != nil {
			if !errors.Is(err, ErrInvalidSpec) {
				t.Fatalf("refusal must wrap ErrInvalidSpec: %v", err)
			}
			return
		}
		if len(got) == 0 || !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Fatalf("not a sorted non-empty set: %q", got)
		}
		entries := strings.Split(list, ",")
		for _, tag := range got {
			if !ValidTag(tag) {
				t.Fatalf("invalid tag %q accepted", tag)
			}
			if !slices.ContainsFunc(entries, func(e string) bool { return lowerASCII(e) == tag }) {
				t.Fatalf("tag %q comes from no entry of %q", tag, list)
			}
		}
		again, err := ParseTags(strings.Join(got, ","))
		if err != nil || !slices.Equal(again, got) {
			t.Fatalf("not idempotent: %q then %q (%v)", got, again, err)
		}
	})
}

func TestValidSelectorTag(t *testing.T) {
	for tag, want := range map[string]bool{"talos": true, "Talos": true, "talos-v1.13.6": true, "_a+b": true, "": false, " a": false, "a,b": false, "a;b": false, "-a": false} {
		if got := ValidSelectorTag(tag); got != want {
			t.Errorf("ValidSelectorTag(%q) = %v, want %v (the CRD pattern is case-insensitive)", tag, got, want)
		}
	}
}
