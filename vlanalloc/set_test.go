package vlanalloc

import (
	"slices"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"
)

func TestSetStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var s Set
		model := map[int]bool{}
		vid := rapid.IntRange(-2, 4097)
		t.Repeat(map[string]func(*rapid.T){
			"add": func(t *rapid.T) {
				v := vid.Draw(t, "vid")
				want := v >= 0 && v < 4096 && !model[v]
				if got := s.Add(v); got != want {
					t.Fatalf("Add(%d) = %v, want %v", v, got, want)
				}
				if want {
					model[v] = true
				}
			},
			"remove": func(t *rapid.T) {
				v := vid.Draw(t, "vid")
				if got := s.Remove(v); got != model[v] {
					t.Fatalf("Remove(%d) = %v, want %v", v, got, model[v])
				}
				delete(model, v)
			},
			"": func(t *rapid.T) {
				want := make([]int, 0, len(model))
				for v := range model {
					want = append(want, v)
				}
				sort.Ints(want)
				if diff := cmp.Diff(want, s.IDs()); diff != "" {
					t.Fatalf("IDs: -model +set:\n%s", diff)
				}
				if s.Len() != len(want) {
					t.Fatalf("Len = %d, want %d", s.Len(), len(want))
				}
				m, ok := s.Min()
				if ok != (len(want) > 0) || (ok && m != want[0]) {
					t.Fatalf("Min = %d, %v; want the first of %v", m, ok, want)
				}
			},
		})
	})
}

// TestSetIntersectSubtract: Intersect and Subtract of two sets built by
// random adds and removes hold exactly the model's members, and leave
// both operands as they were.
func TestSetIntersectSubtract(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var a, b Set
		ma, mb := map[int]bool{}, map[int]bool{}
		vid := rapid.IntRange(0, 4095)
		t.Repeat(map[string]func(*rapid.T){
			"add a":    func(t *rapid.T) { v := vid.Draw(t, "vid"); a.Add(v); ma[v] = true },
			"add b":    func(t *rapid.T) { v := vid.Draw(t, "vid"); b.Add(v); mb[v] = true },
			"remove a": func(t *rapid.T) { v := vid.Draw(t, "vid"); a.Remove(v); delete(ma, v) },
			"remove b": func(t *rapid.T) { v := vid.Draw(t, "vid"); b.Remove(v); delete(mb, v) },
			"": func(t *rapid.T) {
				var both, only []int
				for v := range 4096 {
					if ma[v] && mb[v] {
						both = append(both, v)
					}
					if ma[v] && !mb[v] {
						only = append(only, v)
					}
				}
				beforeA, beforeB := a.IDs(), b.IDs()
				for name, got := range map[string]Set{"Intersect": a.Intersect(&b), "Subtract": a.Subtract(&b)} {
					want := map[string][]int{"Intersect": both, "Subtract": only}[name]
					if diff := cmp.Diff(want, got.IDs(), cmpopts.EquateEmpty()); diff != "" {
						t.Fatalf("%s: -model +set:\n%s", name, diff)
					}
					if got.Len() != len(want) {
						t.Fatalf("%s: Len = %d, want %d", name, got.Len(), len(want))
					}
					if m, ok := got.Min(); ok != (len(want) > 0) || (ok && m != want[0]) {
						t.Fatalf("%s: Min = %d, %v; want the first of %v", name, m, ok, want)
					}
				}
				if !slices.Equal(beforeA, a.IDs()) || !slices.Equal(beforeB, b.IDs()) {
					t.Fatal("an operand changed")
				}
			},
		})
	})
}

func TestSetRuns(t *testing.T) {
	var s Set
	for _, v := range []int{1, 2, 3, 7, 9, 10, 4094} {
		s.Add(v)
	}
	if diff := cmp.Diff("1-3,7,9-10,4094", s.String()); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}
}
