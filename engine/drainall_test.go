package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pxsubstrate/pxsubstrate/engine"
)

// TestDrainAll: rounds go on while any drain reconciles, since one may
// enqueue for another, and the budget is shared; FirstDue is the earliest
// of the due times reported.
func TestDrainAll(t *testing.T) {
	ctx := context.Background()
	pending := map[string]int{"a": 2}
	drain := func(name, next string) func(context.Context, int) (int, error) {
		return func(_ context.Context, budget int) (int, error) {
			n := pending[name]
			if n > budget {
				return budget, engine.ErrNotConverged
			}
			pending[name] = 0
			if n > 0 && next != "" {
				pending[next]++ // each reconcile of name enqueues one of next
			}
			return n, nil
		}
	}
	n, err := engine.DrainAll(ctx, 10, drain("b", ""), drain("a", "b"))
	if err != nil || n != 3 {
		t.Errorf("drained %d (%v), want a's 2 and then b's 1", n, err)
	}
	pending["a"] = 20
	if _, err := engine.DrainAll(ctx, 10, drain("a", "")); !errors.Is(err, engine.ErrNotConverged) {
		t.Errorf("over budget: %v, want ErrNotConverged", err)
	}
	t0 := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	due := func(d time.Duration, ok bool) func() (time.Time, bool) {
		return func() (time.Time, bool) { return t0.Add(d), ok }
	}
	if at, ok := engine.FirstDue(due(time.Minute, true), due(0, false), due(time.Second, true)); !ok || !at.Equal(t0.Add(time.Second)) {
		t.Errorf("FirstDue = %v, %t", at, ok)
	}
	if _, ok := engine.FirstDue(due(0, false)); ok {
		t.Error("FirstDue without a waiting key")
	}
}
