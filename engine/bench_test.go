package engine_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/engine/internal/widget"
)

const (
	benchObjects = 10000
	benchWorkers = 2
)

// benchWorld is a fresh fake API holding benchObjects widgets whose status is
// not yet mirrored; done closes when every one has had its status written.
type benchWorld struct {
	c       client.Client
	objs    []*widget.Widget
	written atomic.Int32
	done    chan struct{}
}

func newBenchWorld(b *testing.B) *benchWorld {
	w := &benchWorld{done: make(chan struct{})}
	objs := w.fill()
	w.c = fakeClient(nil, interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			err := c.SubResource(sub).Update(ctx, obj, opts...)
			if err == nil && w.written.Add(1) == benchObjects {
				close(w.done)
			}
			return err
		},
	}, objs...)
	return w
}

func (w *benchWorld) fill() []client.Object {
	objs := make([]client.Object, benchObjects)
	for i := range objs {
		o := widget.New(ns, fmt.Sprintf("w%05d", i), fmt.Sprint(i))
		w.objs = append(w.objs, o)
		objs[i] = o
	}
	return objs
}

// newCheapWorld serves Get and status updates from a map instead of the fake
// client's tracker, so that the loop machinery, not the store, dominates.
func newCheapWorld(b *testing.B) *benchWorld {
	w := &benchWorld{done: make(chan struct{})}
	var store sync.Map
	for _, o := range w.fill() {
		store.Store(client.ObjectKeyFromObject(o), o.(*widget.Widget))
	}
	w.c = fakeClient(nil, interceptor.Funcs{
		Get: func(_ context.Context, _ client.WithWatch, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
			v, ok := store.Load(key)
			if !ok {
				return apierrors.NewNotFound(schema.GroupResource{Resource: "widgets"}, key.Name)
			}
			v.(*widget.Widget).DeepCopyInto(obj.(*widget.Widget))
			return nil
		},
		SubResourceUpdate: func(_ context.Context, _ client.Client, _ string, obj client.Object, _ ...client.SubResourceUpdateOption) error {
			store.Store(client.ObjectKeyFromObject(obj), obj.(*widget.Widget).DeepCopy())
			if w.written.Add(1) == benchObjects {
				close(w.done)
			}
			return nil
		},
	})
	return w
}

func (w *benchWorld) wait(b *testing.B) {
	select {
	case <-w.done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("only %d of %d statuses written", w.written.Load(), benchObjects)
	}
}

// runEngine reconciles every widget with an engine Runner running step.
func runEngine(b *testing.B, w *benchWorld, step engine.Step[*widget.Widget]) time.Duration {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	r, err := engine.NewRunner(w.c, newWidget, step,
		engine.WithWorkers(benchWorkers), engine.WithResync(0))
	if err != nil {
		b.Fatal(err)
	}
	stopped := make(chan struct{})
	go func() { _ = r.Run(ctx); close(stopped) }()
	for _, o := range w.objs {
		r.Enqueue(client.ObjectKeyFromObject(o))
	}
	w.wait(b)
	took := time.Since(start)
	cancel()
	<-stopped
	return took
}

// runControllerRuntime reconciles every widget with the same step inside a
// controller-runtime controller fed by a channel source, written the way a
// hand-made reconciler would be: get, copy, run, update status if changed.
func runControllerRuntime(b *testing.B, w *benchWorld, name string) time.Duration {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	rec := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		obj := &widget.Widget{}
		if err := w.c.Get(ctx, req.NamespacedName, obj); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		before := obj.DeepCopy()
		res, err := mirror.Reconcile(ctx, engine.NewState(obj, w.c))
		if !equality.Semantic.DeepEqual(before.Status, obj.Status) {
			if uerr := w.c.Status().Update(ctx, obj); uerr != nil {
				return reconcile.Result{}, uerr
			}
		}
		return reconcile.Result{RequeueAfter: res.RequeueAfter}, err
	})
	ctrl, err := controller.NewTypedUnmanaged(name, controller.TypedOptions[reconcile.Request]{
		Reconciler:              rec,
		MaxConcurrentReconciles: benchWorkers,
		SkipNameValidation:      ptr.To(true),
	})
	if err != nil {
		b.Fatal(err)
	}
	events := make(chan event.GenericEvent, benchObjects)
	if err := ctrl.Watch(source.Channel(events, &handler.EnqueueRequestForObject{})); err != nil {
		b.Fatal(err)
	}
	stopped := make(chan struct{})
	go func() { _ = ctrl.Start(ctx); close(stopped) }()
	for _, o := range w.objs {
		events <- event.GenericEvent{Object: o}
	}
	w.wait(b)
	took := time.Since(start)
	cancel()
	<-stopped
	return took
}

// BenchmarkRunner reconciles 10,000 widgets (status mirrors spec) on the fake
// client, with 2 workers, through an engine Runner and through a
// controller-runtime controller running the same step, in the same run.
func BenchmarkRunner(b *testing.B) {
	compare(b, newBenchWorld, mirror)
}

// BenchmarkRunnerOverhead is BenchmarkRunner over a map-backed client, so
// that the queue, metrics and bookkeeping of each loop dominate.
func BenchmarkRunnerOverhead(b *testing.B) {
	compare(b, newCheapWorld, mirror)
}

// BenchmarkRunnerComposed is BenchmarkRunnerOverhead with the step composed
// the way the network controller composes its own (Measured, WithFinalizer,
// Live, WithPass, a PassSequence with lifted steps), against
// controller-runtime running the bare step: the price of the composition.
func BenchmarkRunnerComposed(b *testing.B) {
	type w = *widget.Widget
	duration := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "bench_duration_seconds"})
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bench_errors_total"}, []string{engine.LabelReason})
	step := engine.Measured[w]{Duration: duration, Errors: errs, Step: engine.WithFinalizer[w]{
		Finalizer:    "test.pxsubstrate.io/bench",
		ReadyToClear: func(context.Context, *engine.State[w]) (bool, error) { return true, nil },
		Step: engine.Live[w]{Step: engine.WithPass[w, string]{
			Init: func(s *engine.State[w]) string { return s.Object.Spec.Value },
			Step: engine.PassSequence[w, string]{
				engine.Lift[w, string](engine.ObserveGeneration[w]{Field: func(o w) *int64 { return &o.Status.ObservedGeneration }}),
				engine.PassFunc[w, string](func(_ context.Context, p *engine.Pass[w, string]) (engine.Result, error) {
					p.Object.Status.Mirror = p.Data
					return engine.Result{}, nil
				}),
			},
		}},
	}}
	// The widgets already hold the finalizer, as live objects do after
	// their first pass.
	withFinalizer := func(b *testing.B) *benchWorld {
		w := newCheapWorld(b)
		for _, o := range w.objs {
			o.Finalizers = []string{"test.pxsubstrate.io/bench"}
		}
		return w
	}
	compare(b, withFinalizer, step)
}

func compare(b *testing.B, world func(*testing.B) *benchWorld, step engine.Step[*widget.Widget]) {
	var ours, theirs time.Duration
	for i := range b.N {
		b.StopTimer()
		w := world(b)
		b.StartTimer()
		ours += runEngine(b, w, step)
		b.StopTimer()
		w = world(b)
		b.StartTimer()
		theirs += runControllerRuntime(b, w, fmt.Sprintf("bench-%d", i))
	}
	n := float64(b.N * benchObjects)
	b.ReportMetric(float64(ours.Nanoseconds())/n, "engine-ns/reconcile")
	b.ReportMetric(float64(theirs.Nanoseconds())/n, "cr-ns/reconcile")
	b.ReportMetric(n/ours.Seconds(), "engine-objects/s")
	b.ReportMetric(n/theirs.Seconds(), "cr-objects/s")
	b.ReportMetric(ours.Seconds()/theirs.Seconds(), "engine/cr")
}
