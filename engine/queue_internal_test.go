package engine

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
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

// TestDrainMovesDueKeysTheLayerLost: when the tracker holds a due key that
// client-go's delaying layer no longer has (the state a failed CI run of
// the network state machine ended in), Drain
// moves the key into the queue itself: it is reconciled once and Drain
// ends, instead of waiting for an entry that never fires.
func TestDrainMovesDueKeysTheLayerLost(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC))
	c := fake.NewClientBuilder().Build()
	var reconciled []Key
	step := StepFunc[*corev1.ConfigMap](func(_ context.Context, s *State[*corev1.ConfigMap]) (Result, error) {
		reconciled = append(reconciled, client.ObjectKeyFromObject(s.Object))
		return Result{}, nil
	})
	r, err := NewRunner(c, func() *corev1.ConfigMap { return &corev1.ConfigMap{} }, Step[*corev1.ConfigMap](step), WithClock(clk), WithResync(0), WithWorkers(1))
	if err != nil {
		t.Fatal(err)
	}
	k := Key{Namespace: "ns", Name: "lost"}
	if err := c.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}); err != nil {
		t.Fatal(err)
	}
	r.track.delayed(k, 5*time.Millisecond) // the tracker has it, the layer does not
	clk.Step(5 * time.Millisecond)
	start := time.Now()
	n, err := r.Drain(context.Background(), 10)
	if err != nil || n != 1 || len(reconciled) != 1 || reconciled[0] != k {
		t.Fatalf("Drain = %d, %v; reconciled %v; want the lost key reconciled once", n, err, reconciled)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Drain took %s to move the lost key", took)
	}
	if r.track.due() != 0 {
		t.Errorf("the tracker still counts %d due keys", r.track.due())
	}
}
