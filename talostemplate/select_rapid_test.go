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

// TestSelectStateMachine drives a cluster through adding, removing,
// retagging and converting guests and reordering the listing, and checks
// Select (capmox v0.8, exact) and CheckTagSetFree against the model.
func TestSelectStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		selector := drawSet(t, "selector")
		model := map[int]guestModel{}
		var listing []VMResource
		next := 100
		put := func(vmid int, g guestModel, tags string) {
			model[vmid] = g
			r := VMResource{VMID: vmid, Node: "pve1", Tags: tags}
			if g.template {
				r.Template = 1
			}
			if i := slices.IndexFunc(listing, func(r VMResource) bool { return r.VMID == vmid }); i >= 0 {
				listing[i] = r
			} else {
				listing = append(listing, r)
			}
		}
		draw := func(t *rapid.T, template bool) (guestModel, string) {
			set := drawSet(t, "set")
			if rapid.IntRange(0, 2).Draw(t, "useSelector") == 0 {
				set = slices.Clone(selector)
			}
			tags := renderTags(t, set, true)
			return guestModel{template: template, set: set, emptyEntry: slices.Contains(strings.Split(tags, ";"), "") ||
				slices.ContainsFunc(strings.Split(tags, ";"), func(p string) bool { return strings.TrimSpace(p) == "" })}, tags
		}
		pick := func(t *rapid.T) (int, bool) {
			if len(listing) == 0 {
				return 0, false
			}
			return rapid.SampledFrom(listing).Draw(t, "guest").VMID, true
		}
		t.Repeat(map[string]func(*rapid.T){
			"add": func(t *rapid.T) {
				g, tags := draw(t, rapid.Bool().Draw(t, "template"))
				put(next, g, tags)
				next++
			},
			"remove": func(t *rapid.T) {
				id, ok := pick(t)
				if !ok {
					t.Skip("empty cluster")
				}
				delete(model, id)
				listing = slices.DeleteFunc(listing, func(r VMResource) bool { return r.VMID == id })
			},
			"retag": func(t *rapid.T) {
				id, ok := pick(t)
				if !ok {
					t.Skip("empty cluster")
				}
				g, tags := draw(t, model[id].template)
				put(id, g, tags)
			},
			"convert": func(t *rapid.T) {
				id, ok := pick(t)
				if !ok {
					t.Skip("empty cluster")
				}
				i := slices.IndexFunc(listing, func(r VMResource) bool { return r.VMID == id })
				g := model[id]
				g.template = true
				put(id, g, listing[i].Tags)
			},
			"reorder": func(t *rapid.T) {
				listing = rapid.Permutation(listing).Draw(t, "listing")
			},
			"": func(t *rapid.T) {
				var exact, loose []int
				for id, g := range model {
					if g.template && slices.Equal(g.set, selector) {
						loose = append(loose, id)
						if !g.emptyEntry {
							exact = append(exact, id)
						}
					}
				}
				sel, err := Select(listing, selector, SelectOptions{Capmox: CapmoxV08})
				if sel.Count != len(exact) {
					t.Fatalf("capmox counted %d, model says %v", sel.Count, exact)
				}
				if len(exact) == 1 && (err != nil || sel.Template.VMID != exact[0]) {
					t.Fatalf("want template %d, got %v (%v)", exact[0], sel.Template, err)
				}
				if len(exact) != 1 && !errors.Is(err, ErrTemplateNotFound) {
					t.Fatalf("want ErrTemplateNotFound for %d matches, got %v", len(exact), err)
				}
				taken := CheckTagSetFree(listing, selector)
				if (taken != nil) != (len(loose) > 0) {
					t.Fatalf("CheckTagSetFree = %v, model holders %v", taken, loose)
				}
				if len(exact) > 0 && taken == nil {
					t.Fatal("a tag set capmox matches must count as taken")
				}
			},
		})
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
