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
	}
	return strings.Join(slices.Sorted(maps.Keys(seen)), ",")
}

// TestNamespaceAnnotationIndex: whatever networks come, change and go, the
// cache's incremental annotation equals a recount, including networks that
// share a triple and networks that stop contributing (released, no VLAN,
// deleting without the finalizer).
func TestNamespaceAnnotationIndex(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := NewCache()
		namespaces := []string{"tenant-a", "tenant-b"}
		t.Repeat(map[string]func(*rapid.T){
			"put": func(t *rapid.T) {
				n := networkInfo{
					Key:      Key{Namespace: rapid.SampledFrom(namespaces).Draw(t, "ns"), Name: fmt.Sprintf("net%d", rapid.IntRange(0, 5).Draw(t, "name"))},
					VLAN:     int32(rapid.IntRange(0, 3).Draw(t, "vlan")),
					Bridge:   rapid.SampledFrom([]string{"", "vmbr1", "vmbr2"}).Draw(t, "bridge"),
					Pool:     rapid.SampledFrom([]string{"p1", "p2"}).Draw(t, "pool"),
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
					if got, want := c.namespaceAnnotationOf(ns), recountAnnotation(c, ns); got != want {
						t.Fatalf("namespace %s: index says %q, a recount %q", ns, got, want)
					}
				}
			},
		})
	})
}
