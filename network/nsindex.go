package network

import (
	"maps"
	"slices"
	"strings"
)

// annotationTriple is what a network contributes to its namespace's
// proxmox.cozystack.io/networks annotation: its triple while it holds a VLAN
// and is live or still draining (being deleted while it carries the network
// finalizer), otherwise nothing ("").
func annotationTriple(n networkInfo) string {
	if n.VLAN == 0 || n.Bridge == "" || (n.Deleting && !n.Held) {
		return ""
	}
	return Triple(n.Bridge, n.VLAN, n.Pool)
}

// countTriple adds delta networks behind n's triple in its namespace. The
// memoised annotation is dropped only when a triple appears or disappears,
// so a namespace of n networks costs O(1) per change and one sort per
// changed annotation, instead of a sort of all n per pass. Callers hold c.mu.
func (c *Cache) countTriple(n networkInfo, delta int) {
	t := annotationTriple(n)
	if t == "" {
		return
	}
	ns := n.Key.Namespace
	counts := c.nsTriples[ns]
	if counts == nil {
		counts = map[string]int{}
		c.nsTriples[ns] = counts
	}
	before := counts[t]
	counts[t] = before + delta
	if counts[t] <= 0 {
		delete(counts, t)
		if len(counts) == 0 {
			delete(c.nsTriples, ns)
		}
	}
	if (before == 0) != (counts[t] == 0) {
		delete(c.nsAnnotation, ns)
	}
}

// namespaceAnnotationOf is the annotation the observed networks of namespace
// make: their distinct triples, sorted and comma-separated.
func (c *Cache) namespaceAnnotationOf(namespace string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a, ok := c.nsAnnotation[namespace]; ok {
		return a
	}
	a := strings.Join(slices.Sorted(maps.Keys(c.nsTriples[namespace])), ",")
	c.nsAnnotation[namespace] = a
	return a
}
