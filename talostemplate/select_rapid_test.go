package talostemplate

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

var tagAlphabet = []string{"cozystack", "talos", "talos-v1.13.6", "x", "capmox"}

// renderTags writes a tag set the way operators and PVE do: any order,
// sometimes upper case, surrounding spaces or a duplicate, and, when
// allowEmpty, sometimes an empty entry.
func renderTags(t *rapid.T, set []string, allowEmpty bool) string {
	parts := slices.Clone(set)
	for i := range parts {
		switch rapid.IntRange(0, 5).Draw(t, "style") {
		case 0:
			parts[i] = strings.ToUpper(parts[i])
		case 1:
			parts[i] = " " + parts[i] + " "
		case 2:
			parts = append(parts, parts[i])
		}
	}
	if allowEmpty && rapid.IntRange(0, 4).Draw(t, "empty") == 0 {
		parts = append(parts, "")
	}
	perm := rapid.Permutation(parts).Draw(t, "order")
	return strings.Join(perm, ";")
}

func drawSet(t *rapid.T, label string) []string {
	set := rapid.SliceOfNDistinct(rapid.SampledFrom(tagAlphabet), 1, len(tagAlphabet), rapid.ID[string]).Draw(t, label)
	slices.Sort(set)
	return set
}

// TestSelectExactIgnoresOrder: with the exact policy the template capmox
// picks, and its error, do not depend on the order PVE lists the guests in.
func TestSelectExactIgnoresOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 8).Draw(t, "guests")
		rs := make([]VMResource, n)
		for i := range rs {
			rs[i] = VMResource{VMID: 100 + i, Node: fmt.Sprintf("pve%d", i%3), Template: Flag(rapid.IntRange(0, 1).Draw(t, "template"))}
			if rapid.Bool().Draw(t, "tagged") {
				rs[i].Tags = renderTags(t, drawSet(t, "set"), true)
			}
		}
		sel := drawSet(t, "selector")
		opts := SelectOptions{Capmox: rapid.SampledFrom([]CapmoxVersion{CapmoxV07, CapmoxV08}).Draw(t, "capmox"), Policy: MatchExact}
		a, errA := Select(rs, sel, opts)
		b, errB := Select(rapid.Permutation(rs).Draw(t, "shuffled"), sel, opts)
		if fmt.Sprint(errA) != fmt.Sprint(errB) {
			t.Fatalf("error depends on order: %v vs %v", errA, errB)
		}
		if (a.Template == nil) != (b.Template == nil) || (a.Template != nil && a.Template.VMID != b.Template.VMID) {
			t.Fatalf("chosen template depends on order: %v vs %v", a.Template, b.Template)
		}
	})
}

// guestModel is the trivial model: a guest's tag set and the facts that
// decide capmox v0.8's exact match and the builder's uniqueness check.
type guestModel struct {
	template   bool
	set        []string // normalised set
	emptyEntry bool     // the rendered tag string holds an empty entry
}

// clusterMachine is a cluster whose guests are added, removed, retagged,
// converted to templates and listed in a changing order.
type clusterMachine struct {
	selector []string
	model    map[int]guestModel
	listing  []VMResource
	next     int
}

func (m *clusterMachine) put(vmid int, g guestModel, tags string) {
	m.model[vmid] = g
	r := VMResource{VMID: vmid, Node: "pve1", Tags: tags}
	if g.template {
		r.Template = 1
	}
	if i := slices.IndexFunc(m.listing, func(r VMResource) bool { return r.VMID == vmid }); i >= 0 {
		m.listing[i] = r
	} else {
		m.listing = append(m.listing, r)
	}
}

// draw makes a guest whose set is often the selector's, rendered loosely.
func (m *clusterMachine) draw(t *rapid.T, template bool) (guestModel, string) {
	set := drawSet(t, "set")
	if rapid.IntRange(0, 2).Draw(t, "useSelector") == 0 {
		set = slices.Clone(m.selector)
	}
	tags := renderTags(t, set, true)
	empty := slices.ContainsFunc(strings.Split(tags, ";"), func(p string) bool { return strings.TrimSpace(p) == "" })
	return guestModel{template: template, set: set, emptyEntry: empty}, tags
}

// pick draws a listed guest; ok is false when the cluster is empty.
func (m *clusterMachine) pick(t *rapid.T) (int, bool) {
	if len(m.listing) == 0 {
		return 0, false
	}
	return rapid.SampledFrom(m.listing).Draw(t, "guest").VMID, true
}

func (m *clusterMachine) Add(t *rapid.T) {
	g, tags := m.draw(t, rapid.Bool().Draw(t, "template"))
	m.put(m.next, g, tags)
	m.next++
}

func (m *clusterMachine) Remove(t *rapid.T) {
	id, ok := m.pick(t)
	if !ok {
		return // empty cluster
	}
	delete(m.model, id)
	m.listing = slices.DeleteFunc(m.listing, func(r VMResource) bool { return r.VMID == id })
}

func (m *clusterMachine) Retag(t *rapid.T) {
	id, ok := m.pick(t)
	if !ok {
		return // empty cluster
	}
	g, tags := m.draw(t, m.model[id].template)
	m.put(id, g, tags)
}

func (m *clusterMachine) Convert(t *rapid.T) {
	id, ok := m.pick(t)
	if !ok {
		return // empty cluster
	}
	i := slices.IndexFunc(m.listing, func(r VMResource) bool { return r.VMID == id })
	g := m.model[id]
	g.template = true
	m.put(id, g, m.listing[i].Tags)
}

func (m *clusterMachine) Reorder(t *rapid.T) {
	m.listing = rapid.Permutation(m.listing).Draw(t, "listing")
}

// Check compares Select (capmox v0.8, exact) and CheckTagSetFree with the model.
func (m *clusterMachine) Check(t *rapid.T) {
	var exact, loose []int
	for id, g := range m.model {
		if g.template && slices.Equal(g.set, m.selector) {
			loose = append(loose, id)
			if !g.emptyEntry {
				exact = append(exact, id)
			}
		}
	}
	sel, err := Select(m.listing, m.selector, SelectOptions{Capmox: CapmoxV08})
	if sel.Count != len(exact) {
		t.Fatalf("capmox counted %d, model says %v", sel.Count, exact)
	}
	if len(exact) == 1 && (err != nil || sel.Template.VMID != exact[0]) {
		t.Fatalf("want template %d, got %v (%v)", exact[0], sel.Template, err)
	}
	if len(exact) != 1 && !errors.Is(err, ErrTemplateNotFound) {
		t.Fatalf("want ErrTemplateNotFound for %d matches, got %v", len(exact), err)
	}
	if taken := CheckTagSetFree(m.listing, m.selector); (taken != nil) != (len(loose) > 0) {
		t.Fatalf("CheckTagSetFree = %v, model holders %v", taken, loose)
	}
}

// TestSelectStateMachine drives a cluster through its life and checks, after
// every step, that capmox's choice and the uniqueness check match the model.
// Every set capmox matches is also taken (exact is a subset of loose).
func TestSelectStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &clusterMachine{selector: drawSet(t, "selector"), model: map[int]guestModel{}, next: 100}
		t.Repeat(rapid.StateMachineActions(m))
	})
}

// naiveSameTagSet is the straightforward reading the fast path must agree
// with: normalise the whole tag string into a sorted set and compare.
func naiveSameTagSet(pve string, want []string) bool {
	return strings.Join(looseTagSet(strings.Split(pve, ";")), ";") == strings.Join(want, ";")
}

// FuzzSameTagSet: the allocation-free comparison agrees with the naive one.
func FuzzSameTagSet(f *testing.F) {
	f.Add("cozystack;talos", "talos,cozystack")
	f.Add(" Talos ;;cozystack;talos", "cozystack,talos")
	f.Add("a;b;c", "a,b")
	f.Add("\u212a;k", "k")
	f.Add("", "")
	f.Add(strings.Repeat("t;", 70), strings.Repeat("t,", 70))
	f.Fuzz(func(t *testing.T, pve, wantList string) {
		want := looseTagSet(strings.Split(wantList, ","))
		if got, naive := sameTagSet(pve, want), naiveSameTagSet(pve, want); got != naive {
			t.Fatalf("sameTagSet(%q, %q) = %v, naive %v", pve, want, got, naive)
		}
	})
}

func TestSameTagSetLargeSets(t *testing.T) {
	var want []string
	for i := range 100 {
		want = append(want, fmt.Sprintf("t%03d", i))
	}
	if !sameTagSet(strings.Join(want, ";"), want) || sameTagSet(strings.Join(want[1:], ";"), want) {
		t.Error("sets beyond 64 tags must compare like small ones")
	}
}
