package network

import (
	"maps"
	"slices"
	"strings"
)

// annotationEntries is what a network contributes to its namespace's
// proxmox.cozystack.io/networks annotation while it holds a VLAN and is live
// or still draining (being deleted while it carries the network finalizer):
// its triple, and its <vnet>/<pool> entry when its zone gives the VLAN a
// Proxmox SDN VNet (status.vnet). Both stay listed, so that NICs on the
// plain bridge keep working while a zone moves to VNets. Otherwise nothing.
func annotationEntries(n networkInfo) []string {
	if n.VLAN == 0 || n.Bridge == "" || (n.Deleting && !n.Held) {
		return nil
	}
	if n.VNet != "" {
		return []string{Triple(n.Bridge, n.VLAN, n.Pool), VNetEntry(n.VNet, n.Pool)}
	}
	return []string{Triple(n.Bridge, n.VLAN, n.Pool)}
}

// countTriple adds delta networks behind each of n's annotation entries
// in its namespace. The memoised annotation is dropped only when an entry
// appears or disappears, so a namespace of n networks costs O(1) per change
// and one sort per changed annotation, instead of a sort of all n per pass.
// Callers hold c.mu.
func (c *Cache) countTriple(n networkInfo, delta int) {
	for _, t := range annotationEntries(n) {
		c.countEntry(n.Key.Namespace, t, delta)
	}
}

// countEntry adds delta networks behind entry t of namespace ns. Callers
// hold c.mu.
func (c *Cache) countEntry(ns, t string, delta int) {
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
	switch {
	case before == 0 && counts[t] > 0:
		delete(c.nsAnnotation, ns)
		c.tripleCame(ns, t)
	case before > 0 && counts[t] == 0:
		delete(c.nsAnnotation, ns)
		c.tripleWent(ns, t)
	}
}

// annotationState compares the annotation have, as the namespace carries
// it, with the entries of the observed networks of namespace: stale when
// have lists an entry no network holds, complete when have lists every
// entry and nothing else, and whether it lists every one of mine (none
// listed when mine is empty). have is parsed once
// and then kept up to date as triples come and go (countTriple), so a pass
// costs O(1) however many networks the namespace has, as long as the
// annotation stays as it is.
func (c *Cache) annotationState(namespace, have string, mine []string) (stale, complete, listsMine bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.nsSeen[namespace]
	if st == nil || st.have != have {
		st = &seenAnnotation{have: have, listed: map[string]struct{}{}}
		for rest := have; rest != ""; {
			var t string
			t, rest, _ = strings.Cut(rest, ",")
			st.listed[t] = struct{}{}
		}
		counts := c.nsTriples[namespace]
		for t := range st.listed {
			if counts[t] == 0 {
				st.stale++
			}
		}
		for t := range counts {
			if _, ok := st.listed[t]; !ok {
				st.missing++
			}
		}
		c.nsSeen[namespace] = st
	}
	listsMine = len(mine) > 0
	for _, t := range mine {
		_, ok := st.listed[t]
		listsMine = listsMine && ok
	}
	return st.stale > 0, st.stale == 0 && st.missing == 0, listsMine
}

// seenAnnotation is an annotation value as a namespace carries it, against
// the cache's triples: stale counts the listed triples no network holds,
// missing the held triples it does not list.
type seenAnnotation struct {
	have           string
	listed         map[string]struct{}
	stale, missing int
}

// tripleCame and tripleWent keep the seen annotation of namespace current
// when a triple appears or disappears. Callers hold c.mu.
func (c *Cache) tripleCame(namespace, t string) {
	if st := c.nsSeen[namespace]; st != nil {
		if _, ok := st.listed[t]; ok {
			st.stale--
		} else {
			st.missing++
		}
	}
}

func (c *Cache) tripleWent(namespace, t string) {
	if st := c.nsSeen[namespace]; st != nil {
		if _, ok := st.listed[t]; ok {
			st.stale++
		} else {
			st.missing--
		}
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
