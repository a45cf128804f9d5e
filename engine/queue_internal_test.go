package engine

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestTrackerTakeDue: the earliest delayed add of a key wins; takeDue
// hands out only the keys whose time has come, earliest first and by name
// at the same time, and each once; next() is the earliest time left.
func TestTrackerTakeDue(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC))
	tr := newTracker(clk)
	a, b, c := Key{Namespace: "ns", Name: "a"}, Key{Namespace: "ns", Name: "b"}, Key{Namespace: "ns", Name: "c"}

	tr.delayed(c, 10*time.Millisecond)
	tr.delayed(c, 5*time.Millisecond)
	tr.delayed(b, 5*time.Millisecond)
	tr.delayed(a, 7*time.Millisecond)
	tr.delayed(a, time.Hour) // later than a's first: a keeps 7ms
	if at, ok := tr.next(); !ok || !at.Equal(clk.Now().Add(5*time.Millisecond)) {
		t.Fatalf("next() = %v, %v; want the earliest delayed add", at, ok)
	}
	if got := tr.takeDue(); len(got) != 0 {
		t.Fatalf("takeDue() = %v before any time, want none", got)
	}
	clk.Step(7 * time.Millisecond)
	if got, want := tr.takeDue(), []Key{b, c, a}; !slices.Equal(got, want) {
		t.Fatalf("takeDue() = %v, want %v", got, want)
	}
	if got := tr.takeDue(); len(got) != 0 {
		t.Fatalf("takeDue() = %v a second time, want none", got)
	}
	if _, ok := tr.next(); ok {
		t.Fatal("next() still reports a key that was taken")
	}
}

// TestDrainMovesDueKeys: a key due on the runner's fake clock is moved
// into the queue by Drain itself, with no timer to fire: it is reconciled
// once and Drain ends with nothing left waiting.
func TestDrainMovesDueKeys(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC))
	c := fake.NewClientBuilder().Build()
	var reconciled []Key
	step := StepFunc[*corev1.ConfigMap](func(_ context.Context, s *State[*corev1.ConfigMap]) (Result, error) {
		reconciled = append(reconciled, Key{Namespace: s.Object.Namespace, Name: s.Object.Name})
		return Result{}, nil
	})
	r, err := NewRunner(c, func() *corev1.ConfigMap { return &corev1.ConfigMap{} }, step, WithClock(clk), WithResync(0), WithWorkers(1))
	if err != nil {
		t.Fatal(err)
	}
	k := Key{Namespace: "ns", Name: "due"}
	if err := c.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}); err != nil {
		t.Fatal(err)
	}
	r.queue.AddAfter(k, 5*time.Millisecond)
	if n, err := r.Drain(context.Background(), 10); err != nil || n != 0 {
		t.Fatalf("Drain = %d, %v before the key is due; want no reconcile", n, err)
	}
	clk.Step(5 * time.Millisecond)
	n, err := r.Drain(context.Background(), 10)
	if err != nil || n != 1 || !slices.Equal(reconciled, []Key{k}) {
		t.Fatalf("Drain = %d, %v; reconciled %v; want the due key reconciled once", n, err, reconciled)
	}
	if at, ok := r.NextDue(); ok {
		t.Errorf("NextDue() = %v after Drain, want nothing waiting", at)
	}
}

// TestRunTakesOverDelayedKeys: a key a Drain left waiting (RequeueAfter) is
// reconciled by Run when its time comes, through client-go's delaying
// queue: the tracker hands it over and records nothing after.
func TestRunTakesOverDelayedKeys(t *testing.T) {
	c := fake.NewClientBuilder().Build()
	var mu sync.Mutex
	reconciled := 0
	step := StepFunc[*corev1.ConfigMap](func(context.Context, *State[*corev1.ConfigMap]) (Result, error) {
		mu.Lock()
		defer mu.Unlock()
		reconciled++
		if reconciled == 1 {
			return Result{RequeueAfter: 20 * time.Millisecond}, nil
		}
		return Result{}, nil
	})
	r, err := NewRunner(c, func() *corev1.ConfigMap { return &corev1.ConfigMap{} }, step, WithResync(0), WithWorkers(1))
	if err != nil {
		t.Fatal(err)
	}
	k := Key{Namespace: "ns", Name: "later"}
	if err := c.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}); err != nil {
		t.Fatal(err)
	}
	r.Enqueue(k)
	if n, err := r.Drain(context.Background(), 10); err != nil || n != 1 {
		t.Fatalf("Drain = %d, %v; want 1 reconcile", n, err)
	}
	if _, ok := r.NextDue(); !ok {
		t.Fatal("Drain left no delayed key")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx) }()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		mu.Lock()
		n := reconciled
		mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Run reconciled the delayed key %d times within a minute, want once", n-1)
		}
	}
	if _, ok := r.NextDue(); ok {
		t.Error("the tracker still holds delayed keys while Run owns them")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
