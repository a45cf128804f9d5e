package engine

import (
	"fmt"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
	"pgregory.net/rapid"
)

// TestTrackerTimes: whatever keys are delayed, fire, are taken as due and
// whatever the clock does, next() is the earliest time of a waiting key and
// due() is zero exactly when no add is moving and no waiting key's time has
// come, as a scan of every waiting key says.
func TestTrackerTimes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		clk := clocktesting.NewFakeClock(time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC))
		tr := newTracker(clk)
		key := func(t *rapid.T) Key {
			return Key{Namespace: "ns", Name: fmt.Sprintf("k%d", rapid.IntRange(0, 6).Draw(t, "key"))}
		}
		t.Repeat(map[string]func(*rapid.T){
			"delay": func(t *rapid.T) {
				tr.delayed(key(t), time.Duration(rapid.IntRange(1, 50).Draw(t, "ms"))*time.Millisecond)
			},
			"fire": func(t *rapid.T) {
				k := key(t)
				tr.arrived(k)
				tr.moved()
			},
			"takeDue": func(_ *rapid.T) { tr.takeDue() },
			"tick": func(t *rapid.T) {
				clk.Step(time.Duration(rapid.IntRange(1, 30).Draw(t, "step")) * time.Millisecond)
			},
			"": func(t *rapid.T) {
				tr.mu.Lock()
				var first time.Time
				anyDue := tr.moving > 0
				for _, at := range tr.waiting {
					if first.IsZero() || at.Before(first) {
						first = at
					}
					anyDue = anyDue || !at.After(clk.Now())
				}
				tr.mu.Unlock()
				if at, ok := tr.next(); ok != !first.IsZero() || !at.Equal(first) {
					t.Fatalf("next() = %v, %t; a scan says %v", at, ok, first)
				}
				if n := tr.due(); (n > 0) != anyDue {
					t.Fatalf("due() = %d; a scan says due: %t", n, anyDue)
				}
			},
		})
	})
}
