package capmox_test

import (
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
)

func TestNodeTag(t *testing.T) {
	cases := map[string]struct{ node, tag string }{
		"Plain":      {"pve1", "node-pve1"},
		"UpperCase":  {"PVE-East-1", "node-pve-east-1"},
		"Digits":     {"1", "node-1"},
		"LongestDNS": {strings.Repeat("a", 63), "node-" + strings.Repeat("a", 63)},
	}
	for name, tc := range cases {
		if !capmox.ValidNodeName(tc.node) {
			t.Fatalf("%s: %q must be a node name", name, tc.node)
		}
		got := capmox.NodeTag(tc.node)
		if got != tc.tag || !pveTag.MatchString(got) {
			t.Errorf("%s: NodeTag(%q) = %q, want %q (a Proxmox VE tag)", name, tc.node, got, tc.tag)
		}
		if back, ok := capmox.ParseNodeTag(got); !ok || back != strings.ToLower(tc.node) {
			t.Errorf("%s: ParseNodeTag(%q) = %q, %v", name, got, back, ok)
		}
	}
}

func TestParseNodeTagRefuses(t *testing.T) {
	for _, tag := range []string{"node", "node-", "node-PVE1", "node--a", "node-a-", "node-a_b", "nodes-pve1", "pve1", "node-" + strings.Repeat("a", 64), "talos-v1.13.6"} {
		if node, ok := capmox.ParseNodeTag(tag); ok {
			t.Errorf("ParseNodeTag(%q) = %q, true; want false", tag, node)
		}
	}
	for _, node := range []string{"", "-a", "a-", "a_b", "a.b", strings.Repeat("a", 64)} {
		if capmox.ValidNodeName(node) {
			t.Errorf("ValidNodeName(%q) = true", node)
		}
	}
}

func TestMismatchedNodeTag(t *testing.T) {
	cases := map[string]struct {
		tags []string
		node string
		at   int
		bad  bool
	}{
		"NoneWithout":   {tags: []string{"cozystack", "talos"}},
		"OwnNode":       {tags: []string{"cozystack", "node-pve1"}, node: "pve1"},
		"OwnNodeUpper":  {tags: []string{"node-pve1"}, node: "PVE1"},
		"OtherNode":     {tags: []string{"cozystack", "node-pve2"}, node: "pve1", at: 1, bad: true},
		"AnyWithout":    {tags: []string{"talos", "cozystack", "node-pve2"}, at: 2, bad: true},
		"NotANodeTag":   {tags: []string{"node-", "nodes-x", "node-A"}},
		"SecondOfTwo":   {tags: []string{"node-pve1", "node-pve2"}, node: "pve1", at: 1, bad: true},
		"AbsentIsFine":  {tags: []string{"cozystack"}, node: "pve1"},
		"WordLikeANode": {tags: []string{"node-workers"}, at: 0, bad: true},
	}
	for name, tc := range cases {
		at, bad := capmox.MismatchedNodeTag(tc.tags, tc.node)
		if at != tc.at || bad != tc.bad {
			t.Errorf("%s: MismatchedNodeTag(%q, %q) = %d, %v; want %d, %v", name, tc.tags, tc.node, at, bad, tc.at, tc.bad)
		}
	}
}

// FuzzNodeTag: every node name round-trips through its tag, which is a
// Proxmox VE tag; and every tag ParseNodeTag reads is the one NodeTag
// writes for what it read, so no two nodes share a tag.
func FuzzNodeTag(f *testing.F) {
	for _, s := range []string{"pve1", "PVE-1", "node-pve1", "node-", "node-a-", "node-A"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if capmox.ValidNodeName(s) {
			tag := capmox.NodeTag(s)
			if !pveTag.MatchString(tag) {
				t.Fatalf("NodeTag(%q) = %q, not a Proxmox VE tag", s, tag)
			}
			if node, ok := capmox.ParseNodeTag(tag); !ok || node != strings.ToLower(s) {
				t.Fatalf("ParseNodeTag(NodeTag(%q)) = %q, %v", s, node, ok)
			}
		}
		if node, ok := capmox.ParseNodeTag(s); ok {
			if !capmox.ValidNodeName(node) || capmox.NodeTag(node) != s {
				t.Fatalf("ParseNodeTag(%q) = %q, whose tag is %q", s, node, capmox.NodeTag(node))
			}
		}
	})
}
