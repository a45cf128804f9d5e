package engine

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// TestTrackerMove: a delayed key that fires counts as due until it is in
// the queue; an immediate add of a key leaves its later delayed add
// waiting; the earliest delayed add of a key wins.
func TestTrackerMove(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC))
	tr := newTracker(clk)
	k := Key{Namespace: "ns", Name: "w"}

	tr.delayed(k, 10*time.Millisecond)
	tr.delayed(k, 5*time.Millisecond)
	if at, ok := tr.next(); !ok || !at.Equal(clk.Now().Add(5*time.Millisecond)) {
		t.Fatalf("next() = %v, %v; want the earliest delayed add", at, ok)
	}
	if n := tr.due(); n != 0 {
		t.Fatalf("due() = %d before the time, want 0", n)
	}
	clk.Step(5 * time.Millisecond)
	if n := tr.due(); n != 1 {
		t.Fatalf("due() = %d at the time, want 1", n)
	}
	tr.arrived(k) // the delaying layer fires k ...
	if n := tr.due(); n != 1 {
		t.Fatalf("due() = %d while k moves into the queue, want 1", n)
	}
	tr.moved() // ... and k is in the queue
	if n := tr.due(); n != 0 {
		t.Fatalf("due() = %d once k is queued, want 0", n)
	}
	if _, ok := tr.next(); ok {
		t.Fatal("next() still reports the entry that fired")
	}

	tr.delayed(k, time.Hour)
	tr.immediate(k)
	tr.arrived(k)
	tr.moved()
	if at, ok := tr.next(); !ok || !at.Equal(clk.Now().Add(time.Hour)) {
		t.Fatalf("next() = %v, %v after an immediate add; want the delayed add an hour away", at, ok)
	}
}
