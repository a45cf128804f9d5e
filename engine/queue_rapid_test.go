package engine

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
	"pgregory.net/rapid"
)

// TestTrackerTimes: whatever keys are delayed, taken as due and whatever
// the clock does, the tracker keeps the earliest time of each key; next()
// is the earliest time of a waiting key and takeDue returns exactly the
// keys whose time has come, earliest first and by name at the same time,
// as a model of every key's time says.
func TestTrackerTimes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		clk := clocktesting.NewFakeClock(time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC))
		tr := newTracker(clk)
		model := map[Key]time.Time{}
		key := func(t *rapid.T) Key {
			return Key{Namespace: "ns", Name: fmt.Sprintf("k%d", rapid.IntRange(0, 6).Draw(t, "key"))}
		}
		t.Repeat(map[string]func(*rapid.T){
			"delay": func(t *rapid.T) {
				k, d := key(t), time.Duration(rapid.IntRange(1, 50).Draw(t, "ms"))*time.Millisecond
				if !tr.delayed(k, d) {
					t.Fatal("delayed() refused a key before Run")
				}
				if at, ok := model[k]; !ok || clk.Now().Add(d).Before(at) {
					model[k] = clk.Now().Add(d)
				}
			},
			"takeDue": func(t *rapid.T) {
				var want []Key
				for k, at := range model {
					if !at.After(clk.Now()) {
						want = append(want, k)
					}
				}
				slices.SortFunc(want, func(a, b Key) int {
					if c := model[a].Compare(model[b]); c != 0 {
						return c
					}
					return compareKeys(a, b)
				})
				if got := tr.takeDue(); !slices.Equal(got, want) {
					t.Fatalf("takeDue() = %v, the model says %v", got, want)
				}
				for _, k := range want {
					delete(model, k)
				}
			},
			"tick": func(t *rapid.T) {
				clk.Step(time.Duration(rapid.IntRange(1, 30).Draw(t, "step")) * time.Millisecond)
			},
			"": func(t *rapid.T) {
				var first time.Time
				for _, at := range model {
					if first.IsZero() || at.Before(first) {
						first = at
					}
				}
				if at, ok := tr.next(); ok != !first.IsZero() || !at.Equal(first) {
					t.Fatalf("next() = %v, %t; the model says %v", at, ok, first)
				}
			},
		})
	})
}

func compareKeys(a, b Key) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}
