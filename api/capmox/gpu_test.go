package capmox_test

import (
	"regexp"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
)

// pveTag is a normalised Proxmox VE tag, the pattern of capmox's matchTags.
var pveTag = regexp.MustCompile(`^[a-z0-9_][a-z0-9_+.-]*$`)

func TestGPUTag(t *testing.T) {
	cases := map[string]struct {
		id    string
		count int
		want  string
	}{
		"Lower":     {id: "a100", count: 1, want: "gpu-1x-a100"},
		"Two":       {id: "l40s", count: 2, want: "gpu-2x-l40s"},
		"Upper":     {id: "RTX_A4000", count: 1, want: "gpu-1x-+r+t+x_+a4000"},
		"Mixed":     {id: "gpu-Delta", count: 16, want: "gpu-16x-gpu-+delta"},
		"CaseApart": {id: "gpu-delta", count: 16, want: "gpu-16x-gpu-delta"},
	}
	for name, tc := range cases {
		got := capmox.GPUTag(tc.id, tc.count)
		if got != tc.want {
			t.Errorf("%s: GPUTag(%q, %d) = %q, want %q", name, tc.id, tc.count, got, tc.want)
		}
		if !pveTag.MatchString(got) {
			t.Errorf("%s: %q is not a normalised Proxmox VE tag", name, got)
		}
		id, count, ok := capmox.ParseGPUTag(got)
		if !ok || id != tc.id || count != tc.count {
			t.Errorf("%s: ParseGPUTag(%q) = %q, %d, %v; want %q, %d", name, got, id, count, ok, tc.id, tc.count)
		}
	}
}

func TestParseGPUTagRefusesOtherSpellings(t *testing.T) {
	for _, tag := range []string{
		"gpu-0x-a100", "gpu-01x-a100", "gpu-17x-a100", "gpu-x-a100", "gpu-1-a100", "gpu-1x-", "gpu-1x-1a",
		"gpu-1x-a", "gpu-1x-+", "gpu-1x-a+", "gpu-1x-a+1", "gpu-1x-a++b", "gpu-1x-A100", "gpu-1x-a.100",
		"gpu-100x-a100", "gpu-+1x-a0", "gpu--1x-a0", "cozystack", "talos-v1.13.6", "gpu-a100",
	} {
		if id, n, ok := capmox.ParseGPUTag(tag); ok {
			t.Errorf("ParseGPUTag(%q) = %q, %d, true; want false", tag, id, n)
		}
	}
}

func TestMismatchedGPUTag(t *testing.T) {
	cases := map[string]struct {
		tags  []string
		id    string
		count int
		at    int
		bad   bool
	}{
		"Same":          {tags: []string{"cozystack", "gpu-1x-a100"}, id: "a100", count: 1},
		"NoGPUNoTag":    {tags: []string{"cozystack", "gpu", "gpu-nodes"}},
		"NoGPUButTag":   {tags: []string{"cozystack", "gpu-1x-a100"}, at: 1, bad: true},
		"OtherCount":    {tags: []string{"gpu-2x-a100"}, id: "a100", count: 1, bad: true},
		"OtherMapping":  {tags: []string{"talos", "gpu-1x-l40s"}, id: "a100", count: 1, at: 1, bad: true},
		"OtherCase":     {tags: []string{"gpu-1x-a100"}, id: "A100", count: 1, bad: true},
		"NotCanonical":  {tags: []string{"gpu-01x-a100"}, id: "a100", count: 1, bad: true},
		"AbsentIsFine":  {tags: []string{"cozystack"}, id: "a100", count: 2},
		"SecondOfTwo":   {tags: []string{"gpu-1x-a100", "gpu-1x-l40s"}, id: "a100", count: 1, at: 1, bad: true},
		"WordNotNumber": {tags: []string{"gpu-workers"}, id: "a100", count: 1},
	}
	for name, tc := range cases {
		at, bad := capmox.MismatchedGPUTag(tc.tags, tc.id, tc.count)
		if at != tc.at || bad != tc.bad {
			t.Errorf("%s: MismatchedGPUTag(%q, %q, %d) = %d, %v; want %d, %v", name, tc.tags, tc.id, tc.count, at, bad, tc.at, tc.bad)
		}
	}
}

// FuzzGPUTag: every valid mapping id and count round-trips through its
// tag, which is a Proxmox VE tag; and every tag ParseGPUTag reads is the
// one GPUTag writes for what it read, so no two mappings or counts share
// a tag.
func FuzzGPUTag(f *testing.F) {
	for _, s := range []string{"a100", "RTX_A4000", "gpu-1x-a100", "gpu-2x-+r+t+x", "gpu-16x-a_b-c", "gpu-1x-a+b"} {
		f.Add(s, 1)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		if capmox.ValidMappingID(s) && n >= 1 && n <= capmox.MaxGPUs {
			tag := capmox.GPUTag(s, n)
			if !pveTag.MatchString(tag) {
				t.Fatalf("GPUTag(%q, %d) = %q, not a Proxmox VE tag", s, n, tag)
			}
			if id, count, ok := capmox.ParseGPUTag(tag); !ok || id != s || count != n {
				t.Fatalf("ParseGPUTag(GPUTag(%q, %d)) = %q, %d, %v", s, n, id, count, ok)
			}
		}
		if id, count, ok := capmox.ParseGPUTag(s); ok {
			if back := capmox.GPUTag(id, count); back != s {
				t.Fatalf("ParseGPUTag(%q) = %q, %d, whose tag is %q", s, id, count, back)
			}
		}
	})
}
