package ovngateway_test

import (
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/pxsubstrate/pxsubstrate/ovngateway"
)

func TestScoreBitForBit(t *testing.T) {
	// Computed with an independent implementation of FNV-1a 64 and the
	// splitmix64 finisher.
	cases := map[string]struct {
		key, node string
		want      uint64
	}{
		"Node1":      {"vpc/tenant-a", "node-1", 0xa7551d8e9a789d80},
		"Node2":      {"vpc/tenant-a", "node-2", 0x67ebefc06f76a42a},
		"Node3":      {"vpc/tenant-a", "node-3", 0x46b5c9bdc52b960a},
		"DefaultVPC": {"vpc/ovn-cluster", "worker-a", 0x9046820f01f8f7fe},
		"Empty":      {"", "", 0x25fc6dd36ce04b20},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := ovngateway.Score(tc.key, tc.node); got != tc.want {
				t.Errorf("Score(%q, %q) = %#x, want %#x", tc.key, tc.node, got, tc.want)
			}
		})
	}
}

// TestScoreMatchesHashFNV checks Score against hash/fnv's FNV-1a 64 and the
// splitmix64 finisher written out step by step.
func TestScoreMatchesHashFNV(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		key, node := rapid.String().Draw(t, "key"), rapid.String().Draw(t, "node")
		h := fnv.New64a()
		_, _ = h.Write([]byte(key))
		_, _ = h.Write([]byte{0})
		_, _ = h.Write([]byte(node))
		z := h.Sum64()
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		z ^= z >> 31
		if got := ovngateway.Score(key, node); got != z {
			t.Fatalf("Score(%q, %q) = %#x, want %#x", key, node, got, z)
		}
	})
}

func nodeNames(t *rapid.T, min, max int) []string {
	return rapid.SliceOfNDistinct(rapid.StringMatching(`[a-z][a-z0-9-]{0,15}`), min, max, rapid.ID[string]).Draw(t, "nodes")
}

func candidates(nodes []string) []ovngateway.Candidate {
	out := make([]ovngateway.Candidate, len(nodes))
	for i, n := range nodes {
		out[i] = ovngateway.Candidate{Node: n, Chassis: "ch-" + n}
	}
	return out
}

// fataler is what both *testing.T and *rapid.T offer.
type fataler interface{ Fatal(args ...any) }

func rank(t fataler, key string, nodes []string) []ovngateway.Member {
	m, err := ovngateway.Rank(key, candidates(nodes))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func order(ms []ovngateway.Member) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Node
	}
	return out
}

func TestRankGolden(t *testing.T) {
	cases := map[string]struct {
		key   string
		nodes []string
		want  []string
	}{
		"ThreeNodes": {"vpc/tenant-a", []string{"node-3", "node-1", "node-2"}, []string{"node-1 100", "node-2 90", "node-3 80"}},
		"FourNodes":  {"vpc/tenant-b", []string{"node-1", "node-2", "node-3", "node-4"}, []string{"node-4 100", "node-2 90", "node-1 80", "node-3 70"}},
		"TwelveNodes": {"vpc/x", []string{"n00", "n01", "n02", "n03", "n04", "n05", "n06", "n07", "n08", "n09", "n10", "n11"},
			[]string{"n09 120", "n01 110", "n03 100", "n11 90", "n04 80", "n00 70", "n07 60", "n08 50", "n10 40", "n05 30", "n02 20", "n06 10"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, m := range rank(t, tc.key, tc.nodes) {
				got = append(got, fmt.Sprintf("%s %d", m.Node, m.Priority))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Rank: -want +got:\n%s", diff)
			}
		})
	}
}

func TestRankRefusesBadInput(t *testing.T) {
	cases := map[string]struct {
		reason string
		in     []ovngateway.Candidate
	}{
		"DuplicateNode":    {"a node listed twice", []ovngateway.Candidate{{Node: "a", Chassis: "1"}, {Node: "a", Chassis: "2"}}},
		"DuplicateChassis": {"a chassis listed twice", []ovngateway.Candidate{{Node: "a", Chassis: "1"}, {Node: "b", Chassis: "1"}}},
		"EmptyName":        {"an empty node name", []ovngateway.Candidate{{Node: "", Chassis: "1"}}},
		"TooMany":          {"more chassis than priorities fit", candidates(make3277())},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := ovngateway.Rank("vpc/x", tc.in); !errors.Is(err, ovngateway.ErrInvalid) {
				t.Errorf("%s: want ErrInvalid, got %v", tc.reason, err)
			}
		})
	}
}

func make3277() []string {
	out := make([]string, ovngateway.MaxChassis+1)
	for i := range out {
		out[i] = fmt.Sprintf("n%d", i)
	}
	return out
}

func TestRankIgnoresInputOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes := nodeNames(t, 0, 20)
		key := rapid.String().Draw(t, "key")
		shuffled := rapid.Permutation(nodes).Draw(t, "shuffled")
		if diff := cmp.Diff(rank(t, key, nodes), rank(t, key, shuffled)); diff != "" {
			t.Fatalf("Rank depends on input order: -sorted +shuffled:\n%s", diff)
		}
	})
}

func TestRankPrioritiesDistinctAndPositive(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes := nodeNames(t, 1, 12)
		if rapid.Bool().Draw(t, "twelve") {
			nodes = nodeNames(t, 12, 12)
		}
		ms := rank(t, rapid.String().Draw(t, "key"), nodes)
		top := max(100, 10*len(nodes))
		for i, m := range ms {
			if m.Priority != top-10*i || m.Priority <= 0 {
				t.Fatalf("member %d has priority %d, want %d (positive, distinct, step 10)", i, m.Priority, top-10*i)
			}
		}
	})
}

func vpcKeys(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("vpc/tenant-%d", i)
	}
	return out
}

func leaders(keys, nodes []string) map[string]string {
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		ms, _ := ovngateway.Rank(k, candidates(nodes))
		out[k] = ms[0].Node
	}
	return out
}

func TestRankFairShare(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes := nodeNames(t, 4, 4)
		counts := map[string]int{}
		for _, leader := range leaders(vpcKeys(400), nodes) {
			counts[leader]++
		}
		for _, n := range nodes {
			// 100 expected, standard deviation about 8.7.
			if c := counts[n]; c < 50 || c > 150 {
				t.Fatalf("node %q leads %d of 400 keys, want a fair share near 100: %v", n, c, counts)
			}
		}
	})
}

// without returns a copy of s without x.
func without(s []string, x string) []string {
	return slices.DeleteFunc(slices.Clone(s), func(v string) bool { return v == x })
}

func TestRankFifthNodeTakesOnlyWhatItWins(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		five := nodeNames(t, 5, 5)
		four, newcomer := five[:4], five[4]
		moved := 0
		for _, k := range vpcKeys(400) {
			before, after := order(rank(t, k, four)), order(rank(t, k, five))
			if before[0] != after[0] {
				if after[0] != newcomer {
					t.Fatalf("key %q moved from %q to %q, not to the new node %q", k, before[0], after[0], newcomer)
				}
				moved++
			}
			if diff := cmp.Diff(before, without(after, newcomer)); diff != "" {
				t.Fatalf("key %q: the new node changed the others' order: -before +after:\n%s", k, diff)
			}
		}
		// About a fifth: 80 expected, standard deviation 8.
		if moved < 40 || moved > 130 {
			t.Fatalf("the fifth node took %d of 400 keys, want about a fifth", moved)
		}
	})
}

func TestRankLeavingNodeMovesOnlyItsKeys(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes := nodeNames(t, 2, 8)
		gone := rapid.SampledFrom(nodes).Draw(t, "gone")
		rest := without(nodes, gone)
		for _, k := range vpcKeys(200) {
			before, after := order(rank(t, k, nodes)), order(rank(t, k, rest))
			if before[0] != gone && before[0] != after[0] {
				t.Fatalf("key %q led by %q moved to %q when %q left", k, before[0], after[0], gone)
			}
			if diff := cmp.Diff(without(before, gone), after); diff != "" {
				t.Fatalf("key %q: the others' order changed when %q left: -want +got:\n%s", k, gone, diff)
			}
		}
	})
}
