package vlanalloc

import (
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
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

func TestSetRuns(t *testing.T) {
	var s Set
	for _, v := range []int{1, 2, 3, 7, 9, 10, 4094} {
		s.Add(v)
	}
	if diff := cmp.Diff("1-3,7,9-10,4094", s.String()); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}
}
