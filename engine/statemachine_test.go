package engine_test

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"pgregory.net/rapid"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/engine/internal/widget"
	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
)

// toyWorld is the state machine under test: widgets in a fake API with
// injected faults, a runner that is restarted from scratch at random, and an
// external system whose "released" flag gates the finalizer.
type toyWorld struct {
	ctx    context.Context
	clock  *clocktesting.FakeClock
	faults *kube.Faults
	api    client.WithWatch // with faults and hooks: the runner's client
	direct client.WithWatch // the same store without faults: the test's client
	runner *engine.Runner[*widget.Widget]

	mu       sync.Mutex
	released map[string]bool
	inflight map[string]int

	// Violations seen by hooks and steps.
	overlaps      atomic.Int32
	earlyRemovals atomic.Int32
	noopWrites    atomic.Int32

	model map[string]*toyModel // names that exist in the API
}

type toyModel struct {
	value    string
	deleting bool
}

var toyNames = []string{"w0", "w1", "w2", "w3"}

func newToyWorld(t *rapid.T) *toyWorld {
	w := &toyWorld{
		ctx:      context.Background(),
		clock:    newClock(),
		faults:   kube.NewFaults(rapid.Uint64().Draw(t, "seed")),
		released: map[string]bool{},
		inflight: map[string]int{},
		model:    map[string]*toyModel{},
	}
	w.api = fakeClient(w.faults, w.hooks())
	w.direct = kube.Direct(w.api)
	w.restart(t)
	return w
}

func (w *toyWorld) isReleased(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.released[name]
}

// hooks see every call the runner makes, before faults apply.
func (w *toyWorld) hooks() interceptor.Funcs {
	return interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			had := w.storedHasFinalizer(obj.GetName())
			err := c.Patch(ctx, obj, p, opts...)
			if had && !w.storedHasFinalizer(obj.GetName()) && !w.isReleased(obj.GetName()) {
				w.earlyRemovals.Add(1)
			}
			return err
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			stored := &widget.Widget{}
			if err := w.direct.Get(ctx, client.ObjectKeyFromObject(obj), stored); err == nil &&
				equality.Semantic.DeepEqual(stored.Status, obj.(*widget.Widget).Status) {
				w.noopWrites.Add(1)
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	}
}

func (w *toyWorld) storedHasFinalizer(name string) bool {
	stored := &widget.Widget{}
	if err := w.direct.Get(w.ctx, key(name), stored); err != nil {
		return false
	}
	return hasFinalizer(stored, fin)
}

// step is the toy controller: a finalizer guarding "mirror spec.value into
// status with a Synced condition and Ready", with a per-key in-flight counter.
func (w *toyWorld) step() engine.Step[*widget.Widget] {
	sync := engine.StepFunc[*widget.Widget](func(ctx context.Context, s *engine.State[*widget.Widget]) (engine.Result, error) {
		s.Object.Status.Mirror = s.Object.Spec.Value
		s.Object.Status.ObservedGeneration = s.Object.Generation
		s.SetCondition(&s.Object.Status.Conditions, "Synced", metav1.ConditionTrue, "Mirrored", "value "+s.Object.Spec.Value)
		s.SetReady(&s.Object.Status.Conditions, "Synced")
		return engine.Result{}, nil
	})
	guarded := engine.WithFinalizer[*widget.Widget]{
		Finalizer:    fin,
		RecheckAfter: 10 * time.Second,
		ReadyToClear: func(_ context.Context, s *engine.State[*widget.Widget]) (bool, error) {
			return w.isReleased(s.Object.Name), nil
		},
		Step: sync,
	}
	return engine.StepFunc[*widget.Widget](func(ctx context.Context, s *engine.State[*widget.Widget]) (engine.Result, error) {
		w.mu.Lock()
		w.inflight[s.Object.Name]++
		if w.inflight[s.Object.Name] > 1 {
			w.overlaps.Add(1)
		}
		w.mu.Unlock()
		defer func() {
			w.mu.Lock()
			w.inflight[s.Object.Name]--
			w.mu.Unlock()
		}()
		runtime.Gosched()
		return guarded.Reconcile(ctx, s)
	})
}

// restart drops every bit of runner memory: a new runner, a new queue.
func (w *toyWorld) restart(t *rapid.T) {
	workers := rapid.SampledFrom([]int{1, 3}).Draw(t, "workers")
	r, err := engine.NewRunner(w.api, newWidget, w.step(), engine.WithClock(w.clock), engine.WithWorkers(workers))
	if err != nil {
		t.Fatalf("NewRunner: %v", err)
	}
	w.runner = r
	_ = r.Resync(w.ctx) // may hit an injected fault; the next resync covers it
}

// hint enqueues name unless the event is lost.
func (w *toyWorld) hint(t *rapid.T, name string) {
	if rapid.Bool().Draw(t, "event delivered") {
		w.runner.Enqueue(key(name))
	}
}

func (w *toyWorld) create(t *rapid.T) {
	var free []string
	for _, n := range toyNames {
		if _, ok := w.model[n]; !ok {
			free = append(free, n)
		}
	}
	if len(free) == 0 {
		return // every name exists
	}
	name := rapid.SampledFrom(free).Draw(t, "name")
	value := rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "value")
	if err := w.direct.Create(w.ctx, widget.New(ns, name, value)); err != nil {
		t.Fatalf("Create: %v", err)
	}
	w.mu.Lock()
	w.released[name] = false
	w.mu.Unlock()
	w.model[name] = &toyModel{value: value}
	w.hint(t, name)
}

// pick draws a modelled name (only those not being deleted if live); ok is
// false when there is none.
func (w *toyWorld) pick(t *rapid.T, live bool) (string, bool) {
	var names []string
	for n, m := range w.model {
		if !live || !m.deleting {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "", false
	}
	sort.Strings(names)
	return rapid.SampledFrom(names).Draw(t, "name"), true
}

func (w *toyWorld) update(t *rapid.T) {
	name, ok := w.pick(t, true)
	if !ok {
		return // no live widget
	}
	value := rapid.SampledFrom([]string{"a", "b", "c", "d"}).Draw(t, "value")
	obj := &widget.Widget{}
	if err := w.direct.Get(w.ctx, key(name), obj); err != nil {
		t.Fatalf("Get: %v", err)
	}
	obj.Spec.Value = value
	if err := w.direct.Update(w.ctx, obj); err != nil {
		t.Fatalf("Update: %v", err)
	}
	w.model[name].value = value
	w.hint(t, name)
}

func (w *toyWorld) delete(t *rapid.T) {
	name, ok := w.pick(t, true)
	if !ok {
		return // no live widget
	}
	if err := w.direct.Delete(w.ctx, widget.New(ns, name, "")); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	w.model[name].deleting = true
	w.syncGone(name)
	w.hint(t, name)
}

func (w *toyWorld) release(t *rapid.T) {
	name, ok := w.pick(t, false)
	if !ok {
		return // no widget
	}
	w.mu.Lock()
	w.released[name] = true
	w.mu.Unlock()
	w.hint(t, name)
}

// syncGone drops name from the model when the API no longer has it.
func (w *toyWorld) syncGone(name string) {
	if _, ok := getWidgetQuiet(w.ctx, w.direct, name); !ok {
		delete(w.model, name)
	}
}

func (w *toyWorld) setFaults(t *rapid.T) {
	rate := rapid.SampledFrom([]float64{0, 0.1, 0.3, 0.6}).Draw(t, "rate")
	if rate == 0 {
		w.faults.Clear()
		return
	}
	after := rapid.Bool().Draw(t, "after")
	err := w.faults.Set(
		kube.Fault{Verbs: []kube.Verb{kube.VerbPatch, kube.VerbStatusUpdate}, Err: kube.Conflict, Rate: rate},
		kube.Fault{Verbs: []kube.Verb{kube.VerbPatch, kube.VerbStatusUpdate}, Err: kube.Timeout, Rate: rate, After: after},
		kube.Fault{Verbs: []kube.Verb{kube.VerbGet}, Err: rapid.SampledFrom([]kube.ErrorKind{kube.NotFound, kube.Unavailable}).Draw(t, "get fault"), Rate: rate / 2},
		kube.Fault{Verbs: []kube.Verb{kube.VerbList}, Err: kube.Unavailable, Rate: rate},
	)
	if err != nil {
		t.Fatalf("faults: %v", err)
	}
}

func (w *toyWorld) drain(t *rapid.T) {
	if _, err := w.runner.Drain(w.ctx, 1000); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	for _, n := range toyNames {
		w.syncGone(n)
	}
}

// tick moves the clock to the next due key (or a little) and drains.
func (w *toyWorld) tick(t *rapid.T) {
	if at, ok := w.runner.NextDue(); ok && rapid.Bool().Draw(t, "to next due") {
		w.clock.SetTime(at)
	} else {
		w.clock.Step(time.Duration(rapid.IntRange(1, 20).Draw(t, "seconds")) * time.Second)
	}
	w.drain(t)
}

func (w *toyWorld) resync(t *rapid.T) {
	_ = w.runner.Resync(w.ctx)
	w.drain(t)
}

// check holds after every action.
func (w *toyWorld) check(t *rapid.T) {
	if n := w.overlaps.Load(); n > 0 {
		t.Fatalf("%d reconciles of a key overlapped another of the same key", n)
	}
	if n := w.earlyRemovals.Load(); n > 0 {
		t.Fatalf("the finalizer was removed %d times before ReadyToClear allowed it", n)
	}
	if n := w.noopWrites.Load(); n > 0 {
		t.Fatalf("%d status writes changed nothing", n)
	}
}

// converge heals the API, restarts the runner and lets it settle; then the
// world must match the model exactly.
func (w *toyWorld) converge(t *rapid.T) {
	w.faults.Clear()
	w.restart(t)
	for range 3 {
		w.drain(t)
		if at, ok := w.runner.NextDue(); ok {
			w.clock.SetTime(at)
		}
	}
	w.check(t)
	want, got := map[string]string{}, map[string]string{}
	for name, m := range w.model {
		if m.deleting && w.isReleased(name) {
			continue // must be gone
		}
		want[name] = fmt.Sprintf("value=%s mirror=%s finalizer=true ready=True deleting=%v", m.value, m.value, m.deleting)
	}
	for _, name := range toyNames {
		obj, ok := getWidgetQuiet(w.ctx, w.direct, name)
		if !ok {
			continue
		}
		ready := metav1.ConditionUnknown
		for _, c := range obj.Status.Conditions {
			if c.Type == engine.ConditionReady {
				ready = c.Status
			}
		}
		got[name] = fmt.Sprintf("value=%s mirror=%s finalizer=%v ready=%s deleting=%v",
			obj.Spec.Value, obj.Status.Mirror, hasFinalizer(obj, fin), ready, !obj.DeletionTimestamp.IsZero())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("after convergence the world differs from the model: -want, +got:\n%s", diff)
	}
}

func getWidgetQuiet(ctx context.Context, c client.Client, name string) (*widget.Widget, bool) {
	w := &widget.Widget{}
	if err := c.Get(ctx, key(name), w); err != nil {
		return nil, false
	}
	return w, true
}

// TestRunnerStateMachine drives random creates, updates, deletes, releases,
// API faults, resyncs, clock ticks and runner restarts. After every action:
// no key is reconciled twice at once, no finalizer leaves early, no status
// write is a no-op. At the end, with faults off, the world converges to the
// model.
func TestRunnerStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := newToyWorld(t)
		t.Repeat(map[string]func(*rapid.T){
			"create":  w.create,
			"update":  w.update,
			"delete":  w.delete,
			"release": w.release,
			"faults":  w.setFaults,
			"restart": w.restart,
			"drain":   w.drain,
			"tick":    w.tick,
			"resync":  w.resync,
			"":        w.check,
		})
		w.converge(t)
	})
}
