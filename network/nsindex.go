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
		delete(c.nsDrops, ns)
	}
}

// annotationDrops reports whether the annotation have lists a triple that
// no observed network of namespace holds. The answer is kept until have
// or the namespace's triples change, so a pass costs O(1) while the
// annotation stays as it is.
func (c *Cache) annotationDrops(namespace, have string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.nsDrops[namespace]; ok && m.have == have {
		return m.drops
	}
	counts := c.nsTriples[namespace]
	drops := false
	for rest := have; rest != "" && !drops; {
		var t string
		t, rest, _ = strings.Cut(rest, ",")
		drops = counts[t] == 0
	}
	c.nsDrops[namespace] = dropsMemo{have: have, drops: drops}
	return drops
}

// dropsMemo is annotationDrops' answer for one annotation value.
type dropsMemo struct {
	have  string
	drops bool
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
