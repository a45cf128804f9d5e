package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/engine/internal/widget"
	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
)

// statusWrites counts status writes per object name.
type statusWrites struct {
	mu sync.Mutex
	n  map[string]int
}

func (w *statusWrites) hooks() interceptor.Funcs {
	w.n = map[string]int{}
	return interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			w.mu.Lock()
			w.n[obj.GetName()]++
			w.mu.Unlock()
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	}
}

func (w *statusWrites) count(name string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n[name]
}

func TestRunnerOutcomes(t *testing.T) {
	type want struct {
		Outcome engine.Outcome
		Reason  engine.Reason // error reason label, "" when no error
		NextDue time.Duration // from epoch; 0 when nothing waits
		Mirror  string        // stored status.mirror
		Writes  int
	}
	cases := map[string]struct {
		reason string
		res    engine.Result
		err    error
		panics bool
		absent bool
		want   want
	}{
		"Success": {
			reason: "Success writes the changed status and forgets the key.",
			want:   want{Outcome: engine.OutcomeSuccess, Mirror: "v", Writes: 1},
		},
		"Requeue": {
			reason: "RequeueAfter adds the key back after the delay.",
			res:    engine.Result{RequeueAfter: 30 * time.Second},
			want:   want{Outcome: engine.OutcomeRequeue, NextDue: 30 * time.Second, Mirror: "v", Writes: 1},
		},
		"Error": {
			reason: "An error retries the key after the first backoff step and still writes status.",
			err:    errBoom,
			want:   want{Outcome: engine.OutcomeError, Reason: engine.ReasonUnknown, NextDue: 5 * time.Millisecond, Mirror: "v", Writes: 1},
		},
		"ErrorWithReason": {
			reason: "The error metric uses the reason given with WithReason.",
			err:    engine.WithReason("CannotAllocateVLAN", errBoom),
			want:   want{Outcome: engine.OutcomeError, Reason: "CannotAllocateVLAN", NextDue: 5 * time.Millisecond, Mirror: "v", Writes: 1},
		},
		"Terminal": {
			reason: "A terminal error is reported but never retried.",
			err:    engine.Terminal(errBoom),
			want:   want{Outcome: engine.OutcomeTerminal, Reason: engine.ReasonUnknown, Mirror: "v", Writes: 1},
		},
		"Halt": {
			reason: "ErrHalt at the root is a success.",
			err:    engine.ErrHalt,
			want:   want{Outcome: engine.OutcomeSuccess, Mirror: "v", Writes: 1},
		},
		"Panic": {
			reason: "A panic becomes an error, is retried, and its half-done status is not written.",
			panics: true,
			want:   want{Outcome: engine.OutcomePanic, Reason: engine.ReasonPanic, NextDue: 5 * time.Millisecond},
		},
		"NotFound": {
			reason: "A key whose object is gone is dropped.",
			absent: true,
			want:   want{Outcome: engine.OutcomeSuccess},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			var objs []client.Object
			if !tc.absent {
				objs = append(objs, widget.New(ns, "w", "v"))
			}
			var writes statusWrites
			c := fakeClient(nil, writes.hooks(), objs...)
			step := engine.StepFunc[*widget.Widget](func(ctx context.Context, s *engine.State[*widget.Widget]) (engine.Result, error) {
				s.Object.Status.Mirror = s.Object.Spec.Value
				if tc.panics {
					panic("step bug")
				}
				return tc.res, tc.err
			})
			reg := prometheus.NewRegistry()
			clk := newClock()
			r, err := engine.NewRunner(c, newWidget, step, engine.WithClock(clk), engine.WithMetrics(reg))
			if err != nil {
				t.Fatal(err)
			}
			r.Enqueue(key("w"))
			if n, err := r.Drain(ctx, 10); err != nil || n != 1 {
				t.Fatalf("Drain() = %d, %v; want 1 reconcile", n, err)
			}
			var got want
			for _, o := range []engine.Outcome{engine.OutcomeSuccess, engine.OutcomeError, engine.OutcomeRequeue, engine.OutcomeTerminal, engine.OutcomePanic} {
				if v, _ := metricValue(t, reg, engine.MetricReconciles, map[string]string{"controller": "widget", "outcome": string(o)}); v == 1 {
					got.Outcome = o
				}
			}
			if tc.want.Reason != "" {
				if v, _ := metricValue(t, reg, engine.MetricErrors, map[string]string{"controller": "widget", "reason": string(tc.want.Reason)}); v == 1 {
					got.Reason = tc.want.Reason
				}
			}
			if at, ok := r.NextDue(); ok {
				got.NextDue = at.Sub(epoch)
			}
			if w, ok := getWidget(t, c, "w"); ok {
				got.Mirror = w.Status.Mirror
			}
			got.Writes = writes.count("w")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
			if n, _ := metricValue(t, reg, engine.MetricDuration, map[string]string{"controller": "widget"}); n != 1 {
				t.Errorf("duration histogram has %v samples, want 1", n)
			}
		})
	}
}

func TestRunnerWritesStatusOnlyWhenChanged(t *testing.T) {
	ctx := context.Background()
	var writes statusWrites
	c := fakeClient(nil, writes.hooks(), widget.New(ns, "a", "1"), widget.New(ns, "b", "2"))
	r, err := engine.NewRunner(c, newWidget, engine.Step[*widget.Widget](mirror), engine.WithClock(newClock()))
	if err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		if err := r.Resync(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Drain(ctx, 10); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"a", "b"} {
			if got := writes.count(name); got != 1 {
				t.Errorf("round %d: %d status writes for %s, want exactly 1 (only the first changed anything)", round, got, name)
			}
		}
	}
	w, _ := getWidget(t, c, "b")
	w.Spec.Value = "3"
	if err := c.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	r.Enqueue(key("b"))
	if _, err := r.Drain(ctx, 10); err != nil {
		t.Fatal(err)
	}
	if got, _ := getWidget(t, c, "b"); got.Status.Mirror != "3" || writes.count("b") != 2 {
		t.Errorf("after a spec change: mirror %q with %d writes, want \"3\" with 2", got.Status.Mirror, writes.count("b"))
	}
}

// TestRunnerHoldStatus: a pass that holds its status writes none and is
// looked at again after the hold (the shorter of the hold and the step's
// own requeue); a failing pass writes its status despite the hold; a pass
// that no longer holds writes the status once.
func TestRunnerHoldStatus(t *testing.T) {
	ctx := context.Background()
	var writes statusWrites
	c := fakeClient(nil, writes.hooks(), widget.New(ns, "a", "1"))
	clk := newClock()
	var hold time.Duration
	var fail error
	step := engine.StepFunc[*widget.Widget](func(ctx context.Context, s *engine.State[*widget.Widget]) (engine.Result, error) {
		if _, err := mirror(ctx, s); err != nil {
			return engine.Result{}, err
		}
		s.HoldStatus(hold)
		s.HoldStatus(hold / 2) // the longest hold of a pass wins
		return engine.Result{RequeueAfter: time.Hour}, fail
	})
	r, err := engine.NewRunner(c, newWidget, engine.Step[*widget.Widget](step), engine.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	hold = 2 * time.Second
	res, err := r.ReconcileKey(ctx, key("a"))
	if err != nil || res.RequeueAfter != hold {
		t.Fatalf("a held pass: %+v, %v; want a requeue after %v", res, err, hold)
	}
	if got, _ := getWidget(t, c, "a"); writes.count("a") != 0 || got.Status.Mirror != "" {
		t.Fatalf("a held pass wrote the status: %d writes, mirror %q", writes.count("a"), got.Status.Mirror)
	}
	fail = errors.New("boom")
	if _, err := r.ReconcileKey(ctx, key("a")); err == nil {
		t.Fatal("the failing pass returned no error")
	}
	if got, _ := getWidget(t, c, "a"); writes.count("a") != 1 || got.Status.Mirror != "1" {
		t.Fatalf("a failing pass that holds: %d writes, mirror %q; want its status written", writes.count("a"), got.Status.Mirror)
	}
	w, _ := getWidget(t, c, "a")
	w.Spec.Value = "2"
	if err := c.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	fail, hold = nil, 0
	if res, err := r.ReconcileKey(ctx, key("a")); err != nil || res.RequeueAfter != time.Hour {
		t.Fatalf("a pass without a hold: %+v, %v; want the step's own requeue", res, err)
	}
	if got, _ := getWidget(t, c, "a"); writes.count("a") != 2 || got.Status.Mirror != "2" {
		t.Errorf("a pass without a hold: %d writes, mirror %q; want 2 and \"2\"", writes.count("a"), got.Status.Mirror)
	}
}

// TestRunnerBackoffConverges fails a status write with conflicts and then
// lets it through: the key is retried with growing backoff on the fake clock
// until it converges.
func TestRunnerBackoffConverges(t *testing.T) {
	ctx := context.Background()
	faults := kube.NewFaults(7)
	if err := faults.Add(kube.Fault{Verbs: []kube.Verb{kube.VerbStatusUpdate}, Err: kube.Conflict, Times: 3}); err != nil {
		t.Fatal(err)
	}
	c := fakeClient(faults, interceptor.Funcs{}, widget.New(ns, "w", "v"))
	clk := newClock()
	r, err := engine.NewRunner(c, newWidget, engine.Step[*widget.Widget](mirror), engine.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	r.Enqueue(key("w"))
	var delays []time.Duration
	for range 10 {
		if _, err := r.Drain(ctx, 10); err != nil {
			t.Fatal(err)
		}
		at, ok := r.NextDue()
		if !ok {
			break
		}
		delays = append(delays, at.Sub(clk.Now()))
		clk.SetTime(at)
	}
	want := []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond}
	if diff := cmp.Diff(want, delays); diff != "" {
		t.Errorf("backoff delays: -want, +got:\n%s", diff)
	}
	if w, _ := getWidget(t, c, "w"); w.Status.Mirror != "v" {
		t.Errorf("status.mirror = %q after the conflicts cleared, want %q", w.Status.Mirror, "v")
	}
}

func TestRunnerDrainLimit(t *testing.T) {
	ctx := context.Background()
	c := fakeClient(nil, interceptor.Funcs{}, widget.New(ns, "w", "v"))
	var r *engine.Runner[*widget.Widget]
	again := engine.StepFunc[*widget.Widget](func(ctx context.Context, s *engine.State[*widget.Widget]) (engine.Result, error) {
		r.Enqueue(client.ObjectKeyFromObject(s.Object)) // never settles
		return engine.Result{}, nil
	})
	r, err := engine.NewRunner(c, newWidget, engine.Step[*widget.Widget](again), engine.WithClock(newClock()))
	if err != nil {
		t.Fatal(err)
	}
	r.Enqueue(key("w"))
	n, err := r.Drain(ctx, 25)
	if !errors.Is(err, engine.ErrNotConverged) || n != 25 {
		t.Errorf("Drain() = %d, %v; want 25 reconciles and ErrNotConverged", n, err)
	}
}

// TestRunnerRun runs three workers over many keys, enqueued again and again
// while they work: every object converges, no key is ever reconciled by two
// workers at once, and cancel stops Run.
func TestRunnerRun(t *testing.T) {
	const n = 40
	var objs []client.Object
	for i := range n {
		objs = append(objs, widget.New(ns, fmt.Sprintf("w%02d", i), fmt.Sprint(i)))
	}
	c := fakeClient(nil, interceptor.Funcs{}, objs...)
	var inflight sync.Map // name -> *atomic.Int32
	var overlap atomic.Int32
	step := engine.StepFunc[*widget.Widget](func(ctx context.Context, s *engine.State[*widget.Widget]) (engine.Result, error) {
		v, _ := inflight.LoadOrStore(s.Object.Name, new(atomic.Int32))
		ctr := v.(*atomic.Int32)
		if ctr.Add(1) > 1 {
			overlap.Add(1)
		}
		defer ctr.Add(-1)
		time.Sleep(200 * time.Microsecond)
		return mirror(ctx, s)
	})
	r, err := engine.NewRunner(c, newWidget, engine.Step[*widget.Widget](step), engine.WithWorkers(3))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	for range 5 {
		for i := range n {
			r.Enqueue(key(fmt.Sprintf("w%02d", i)))
		}
		time.Sleep(2 * time.Millisecond)
	}
	waitFor(t, 10*time.Second, "every widget mirrored", func() bool {
		for i := range n {
			if w, _ := getWidget(t, c, fmt.Sprintf("w%02d", i)); w.Status.Mirror != fmt.Sprint(i) {
				return false
			}
		}
		return true
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run() = %v after cancel, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5s of cancel")
	}
	if got := overlap.Load(); got != 0 {
		t.Errorf("%d reconciles overlapped another of the same key", got)
	}
	if err := r.Run(context.Background()); err == nil {
		t.Error("a second Run must fail: a runner runs once")
	}
}

// TestRunnerShutdownFinishesCurrentKey cancels Run while a step is busy:
// Run waits for that step and reconciles nothing else.
func TestRunnerShutdownFinishesCurrentKey(t *testing.T) {
	var objs []client.Object
	for i := range 10 {
		objs = append(objs, widget.New(ns, fmt.Sprintf("w%d", i), "v"))
	}
	c := fakeClient(nil, interceptor.Funcs{}, objs...)
	started := make(chan struct{}, 10)
	var finished, calls atomic.Int32
	step := engine.StepFunc[*widget.Widget](func(ctx context.Context, s *engine.State[*widget.Widget]) (engine.Result, error) {
		calls.Add(1)
		started <- struct{}{}
		time.Sleep(100 * time.Millisecond)
		finished.Add(1)
		return engine.Result{}, nil
	})
	r, err := engine.NewRunner(c, newWidget, engine.Step[*widget.Widget](step))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	<-started
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run() = %v", err)
	}
	if calls.Load() != 1 || finished.Load() != 1 {
		t.Errorf("after cancel: %d steps started and %d finished, want the one in hand to finish and no other to start",
			calls.Load(), finished.Load())
	}
}

func TestRunnerResyncPeriod(t *testing.T) {
	c := fakeClient(nil, interceptor.Funcs{}, widget.New(ns, "first", "1"))
	clk := newClock()
	r, err := engine.NewRunner(c, newWidget, engine.Step[*widget.Widget](mirror), engine.WithClock(clk), engine.WithResync(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = r.Run(ctx) }()
	waitFor(t, 5*time.Second, "the first widget reconciled by the start-up resync", func() bool {
		w, _ := getWidget(t, c, "first")
		return w.Status.Mirror == "1"
	})
	if err := c.Create(ctx, widget.New(ns, "later", "2")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the later widget reconciled by a periodic resync", func() bool {
		clk.Step(time.Minute)
		w, _ := getWidget(t, c, "later")
		return w.Status.Mirror == "2"
	})
}

func TestNewRunnerErrors(t *testing.T) {
	c := fakeClient(nil, interceptor.Funcs{})
	bare := kube.NewClient(kube.ClientOptions{Scheme: runtime.NewScheme()})
	reg := prometheus.NewRegistry()
	if _, err := engine.NewRunner(c, newWidget, engine.Step[*widget.Widget](mirror), engine.WithMetrics(reg)); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		reason string
		build  func() error
	}{
		"UnknownKind": {reason: "A kind missing from the scheme is refused.", build: func() error {
			_, err := engine.NewRunner(bare, newWidget, engine.Step[*widget.Widget](mirror))
			return err
		}},
		"NilStep": {reason: "A nil step is refused.", build: func() error {
			_, err := engine.NewRunner[*widget.Widget](c, newWidget, nil)
			return err
		}},
		"InvalidStep": {reason: "A step that fails validation is refused.", build: func() error {
			_, err := engine.NewRunner(c, newWidget, engine.Step[*widget.Widget](engine.WithFinalizer[*widget.Widget]{Finalizer: "nope"}))
			return err
		}},
		"ZeroWorkers": {reason: "Zero workers is refused.", build: func() error {
			_, err := engine.NewRunner(c, newWidget, engine.Step[*widget.Widget](mirror), engine.WithWorkers(0))
			return err
		}},
		"DuplicateName": {reason: "Two runners with one name cannot share a registry.", build: func() error {
			_, err := engine.NewRunner(c, newWidget, engine.Step[*widget.Widget](mirror), engine.WithMetrics(reg))
			return err
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if err := tc.build(); err == nil {
				t.Errorf("%s\nNewRunner succeeded", tc.reason)
			}
		})
	}
	other, err := engine.NewRunner(c, func() *corev1.ConfigMap { return &corev1.ConfigMap{} },
		engine.Step[*corev1.ConfigMap](engine.StepFunc[*corev1.ConfigMap](func(context.Context, *engine.State[*corev1.ConfigMap]) (engine.Result, error) {
			return engine.Result{}, nil
		})), engine.WithMetrics(reg))
	if err != nil {
		t.Fatalf("a second runner with another name must share the registry: %v", err)
	}
	other.Enqueue(key("a"))
	other.Enqueue(key("b"))
	if v, ok := metricValue(t, reg, engine.MetricQueueDepth, map[string]string{"controller": "configmap"}); !ok || v != 2 {
		t.Errorf("queue depth of configmap = %v (found %v), want 2", v, ok)
	}
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
