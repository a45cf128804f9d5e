package network

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// recountAnnotation is the annotation rule over every observed network of
// namespace, computed from scratch.
func recountAnnotation(c *Cache, namespace string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[string]bool{}
	for k, n := range c.networks {
		if k.Namespace != namespace {
			continue
		}
		if n.VLAN == 0 || n.Bridge == "" || (n.Deleting && !n.Held) {
			continue
		}
		seen[Triple(n.Bridge, n.VLAN, n.Pool)] = true
		if n.VNet != "" {
			seen[VNetEntry(n.VNet, n.Pool)] = true
		}
	}
	return strings.Join(slices.Sorted(maps.Keys(seen)), ",")
}

// TestNamespaceAnnotationIndex: whatever networks come, change and go, the
// cache's incremental annotation equals a recount, including networks that
// share a triple and networks that stop contributing (released, no VLAN,
// deleting without the finalizer), and networks whose status names a VNet,
// which add a <vnet>/<pool> entry next to their triple. The comparison with the annotation a
// namespace carries (annotationState), kept up to date as triples come and
// go, equals a comparison of the two lists from scratch.
func TestNamespaceAnnotationIndex(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := NewCache()
		namespaces := []string{"tenant-a", "tenant-b"}
		carried := map[string]string{}
		triples := []string{Triple("vmbr1", 1, "p1"), Triple("vmbr1", 2, "p2"), Triple("vmbr2", 3, "p1"), Triple("vmbr2", 1, "p2"),
			VNetEntry("pxa0001", "p1"), VNetEntry("pxa0002", "p2")}
		// What a network may contribute: nothing, its triple, or its
		// triple and its VNet entry.
		mines := [][]string{nil, {triples[0]}, {triples[1]}, {triples[2]}, {triples[3]},
			{triples[0], triples[4]}, {triples[1], triples[5]}, {triples[3], triples[4]}}
		t.Repeat(map[string]func(*rapid.T){
			"carry": func(t *rapid.T) {
				ns := rapid.SampledFrom(namespaces).Draw(t, "ns")
				if rapid.Bool().Draw(t, "current") {
					carried[ns] = c.namespaceAnnotationOf(ns)
					return
				}
				list := rapid.SliceOfDistinct(rapid.SampledFrom(triples), func(s string) string { return s }).Draw(t, "listed")
				carried[ns] = strings.Join(list, ",")
			},
			"put": func(t *rapid.T) {
				n := networkInfo{
					Key:      Key{Namespace: rapid.SampledFrom(namespaces).Draw(t, "ns"), Name: fmt.Sprintf("net%d", rapid.IntRange(0, 5).Draw(t, "name"))},
					VLAN:     int32(rapid.IntRange(0, 3).Draw(t, "vlan")),
					Bridge:   rapid.SampledFrom([]string{"", "vmbr1", "vmbr2"}).Draw(t, "bridge"),
					Pool:     rapid.SampledFrom([]string{"p1", "p2"}).Draw(t, "pool"),
					VNet:     rapid.SampledFrom([]string{"", "", "pxa0001", "pxa0002"}).Draw(t, "vnet"),
					Deleting: rapid.Bool().Draw(t, "deleting"),
					Held:     rapid.Bool().Draw(t, "held"),
				}
				c.mu.Lock()
				c.dropNetwork(n.Key)
				c.putNetwork(n)
				c.mu.Unlock()
			},
			"drop": func(t *rapid.T) {
				k := Key{Namespace: rapid.SampledFrom(namespaces).Draw(t, "ns"), Name: fmt.Sprintf("net%d", rapid.IntRange(0, 5).Draw(t, "name"))}
				c.mu.Lock()
				c.dropNetwork(k)
				c.mu.Unlock()
			},
			"": func(t *rapid.T) {
				for _, ns := range namespaces {
					want := recountAnnotation(c, ns)
					if got := c.namespaceAnnotationOf(ns); got != want {
						t.Fatalf("namespace %s: index says %q, a recount %q", ns, got, want)
					}
					have := carried[ns]
					listed, held := splitSet(have), splitSet(want)
					wantStale, wantComplete := false, maps.Equal(listed, held)
					for tr := range listed {
						wantStale = wantStale || !held[tr]
					}
					for _, mine := range mines {
						wantLists := len(mine) > 0
						for _, tr := range mine {
							wantLists = wantLists && listed[tr]
						}
						stale, complete, lists := c.annotationState(ns, have, mine)
						if stale != wantStale || complete != wantComplete || lists != wantLists {
							t.Fatalf("namespace %s carrying %q, holding %q, mine %q: stale %t complete %t lists %t; want %t %t %t",
								ns, have, want, mine, stale, complete, lists, wantStale, wantComplete, wantLists)
						}
					}
				}
			},
		})
	})
}

// splitSet is the set of a comma-separated list.
func splitSet(list string) map[string]bool {
	out := map[string]bool{}
	if list == "" {
		return out
	}
	for _, t := range strings.Split(list, ",") {
		out[t] = true
	}
	return out
}
