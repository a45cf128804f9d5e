package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"pgregory.net/rapid"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/engine/internal/widget"
)

// What a phase of the composed reconcile does, chosen by the state machine.
const (
	phaseOK      = "ok"
	phaseRequeue = "requeue"
	phaseFail    = "fail"
	phaseHalt    = "halt"
	phasePanic   = "panic"
)

const (
	passPhases    = 3
	passFinalizer = "test.pxsubstrate.io/pass"
)

// trail is the pass data of the composed reconcile: the spec value Init
// read and the phases that ran so far in this reconcile.
type trail struct {
	value string
	ran   []int
}

// passWorld runs a composition of engine steps, as a controller builds it
// (Measured around WithFinalizer around Live around WithPass around a
// PassSequence of phases), over widgets with a runner of several workers.
type passWorld struct {
	ctx    context.Context
	clock  interface{ SetTime(time.Time) }
	api    client.WithWatch
	runner *engine.Runner[*widget.Widget]
	reg    *prometheus.Registry
	step   engine.Step[*widget.Widget]

	mu        sync.Mutex
	behaviour [passPhases]string // read by phases, written between drains
	// What the step inside Measured returned, counted when it returned.
	returned int
	failures map[string]int
	// Violations.
	dirty    []string // a phase saw data another reconcile left, or out of order
	overruns []string // a phase ran after one that failed or halted

	model map[string]string // live widget name -> spec value
}

func newPassWorld(t *rapid.T) *passWorld {
	w := &passWorld{ctx: context.Background(), failures: map[string]int{}, model: map[string]string{}}
	for i := range w.behaviour {
		w.behaviour[i] = phaseOK
	}
	w.step = w.compose()
	w.api = fakeClient(nil, interceptor.Funcs{})
	w.restart(t)
	return w
}

// compose builds the reconcile once; every runner of the world reuses it.
func (w *passWorld) compose() engine.Step[*widget.Widget] {
	phases := engine.PassSequence[wgt, trail]{}
	for i := range passPhases {
		phases = append(phases, engine.PassFunc[wgt, trail](func(_ context.Context, p *engine.Pass[wgt, trail]) (engine.Result, error) {
			return w.phase(i, p)
		}))
	}
	phases = append(phases,
		engine.PassFunc[wgt, trail](func(_ context.Context, p *engine.Pass[wgt, trail]) (engine.Result, error) {
			if !slices.Equal(p.Data.ran, []int{0, 1, 2}) {
				w.violation(&w.overruns, fmt.Sprintf("last step ran after %v", p.Data.ran))
			}
			p.Object.Status.Mirror = p.Data.value
			return engine.Result{}, nil
		}),
		engine.Lift[wgt, trail](engine.ObserveGeneration[wgt]{Field: func(o wgt) *int64 { return &o.Status.ObservedGeneration }}),
	)
	observed := engine.StepFunc[wgt](func(ctx context.Context, s *engine.State[wgt]) (engine.Result, error) {
		res, err := engine.WithFinalizer[wgt]{
			Finalizer:    passFinalizer,
			ReadyToClear: func(context.Context, *engine.State[wgt]) (bool, error) { return true, nil },
			Step: engine.Live[wgt]{Step: engine.WithPass[wgt, trail]{
				Init: func(s *engine.State[wgt]) trail { return trail{value: s.Object.Spec.Value} },
				Step: phases,
			}},
		}.Reconcile(ctx, s)
		w.mu.Lock()
		w.returned++
		if err != nil && !errors.Is(err, engine.ErrHalt) {
			w.failures[string(engine.ReasonOf(err))]++
		}
		w.mu.Unlock()
		return res, err
	})
	w.reg = prometheus.NewRegistry()
	duration := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "pass_duration_seconds"})
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pass_errors_total"}, []string{engine.LabelReason})
	w.reg.MustRegister(duration, errs)
	return engine.Measured[wgt]{Step: observed, Duration: duration, Errors: errs}
}

// phase i checks the pass data it was handed and does what the state
// machine chose.
func (w *passWorld) phase(i int, p *engine.Pass[wgt, trail]) (engine.Result, error) {
	want := make([]int, i)
	for j := range want {
		want[j] = j
	}
	if !slices.Equal(p.Data.ran, want) || p.Data.value != p.Object.Spec.Value {
		w.violation(&w.dirty, fmt.Sprintf("phase %d of %s got data %+v", i, p.Object.Name, p.Data))
	}
	w.mu.Lock()
	b := w.behaviour[i]
	w.mu.Unlock()
	for j := range i {
		if w.behaviourOf(j) != phaseOK && w.behaviourOf(j) != phaseRequeue {
			w.violation(&w.overruns, fmt.Sprintf("phase %d ran after phase %d did %s", i, j, w.behaviourOf(j)))
		}
	}
	p.Data.ran = append(p.Data.ran, i)
	switch b {
	case phaseRequeue:
		return engine.Result{RequeueAfter: time.Duration(i+1) * time.Second}, nil
	case phaseFail:
		return engine.Result{}, engine.WithReason(engine.Reason(fmt.Sprintf("CannotPhase%d", i)), errBoom)
	case phaseHalt:
		return engine.Result{}, engine.ErrHalt
	case phasePanic:
		panic(fmt.Sprintf("phase %d", i))
	}
	return engine.Result{}, nil
}

func (w *passWorld) behaviourOf(i int) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.behaviour[i]
}

func (w *passWorld) violation(to *[]string, what string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	*to = append(*to, what)
}

func (w *passWorld) restart(t *rapid.T) {
	clock := newClock()
	w.clock = clock
	workers := rapid.SampledFrom([]int{1, 4}).Draw(t, "workers")
	r, err := engine.NewRunner(w.api, newWidget, w.step, engine.WithClock(clock), engine.WithWorkers(workers))
	if err != nil {
		t.Fatalf("NewRunner: %v", err)
	}
	w.runner = r
	if err := r.Resync(w.ctx); err != nil {
		t.Fatalf("Resync: %v", err)
	}
}

func (w *passWorld) names() []string {
	var names []string
	for n := range w.model {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (w *passWorld) create(t *rapid.T) {
	name := rapid.SampledFrom(toyNames).Draw(t, "name")
	if _, ok := w.model[name]; ok {
		return
	}
	if _, exists := getWidgetQuiet(w.ctx, w.api, name); exists {
		return // still being deleted
	}
	value := rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "value")
	if err := w.api.Create(w.ctx, widget.New(ns, name, value)); err != nil {
		t.Fatalf("Create: %v", err)
	}
	w.model[name] = value
	w.runner.Enqueue(key(name))
}

func (w *passWorld) update(t *rapid.T) {
	names := w.names()
	if len(names) == 0 {
		return
	}
	name := rapid.SampledFrom(names).Draw(t, "name")
	obj, _ := getWidgetQuiet(w.ctx, w.api, name)
	obj.Spec.Value = rapid.SampledFrom([]string{"a", "b", "c", "d"}).Draw(t, "value")
	if err := w.api.Update(w.ctx, obj); err != nil {
		t.Fatalf("Update: %v", err)
	}
	w.model[name] = obj.Spec.Value
	w.runner.Enqueue(key(name))
}

func (w *passWorld) delete(t *rapid.T) {
	names := w.names()
	if len(names) == 0 {
		return
	}
	name := rapid.SampledFrom(names).Draw(t, "name")
	if err := w.api.Delete(w.ctx, widget.New(ns, name, "")); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	delete(w.model, name)
	w.runner.Enqueue(key(name))
}

func (w *passWorld) behave(t *rapid.T) {
	i := rapid.IntRange(0, passPhases-1).Draw(t, "phase")
	b := rapid.SampledFrom([]string{phaseOK, phaseRequeue, phaseFail, phaseHalt, phasePanic}).Draw(t, "behaviour")
	w.mu.Lock()
	w.behaviour[i] = b
	w.mu.Unlock()
}

func (w *passWorld) drain(t *rapid.T) {
	if _, err := w.runner.Drain(w.ctx, 1000); err != nil {
		t.Fatalf("Drain: %v", err)
	}
}

func (w *passWorld) tick(t *rapid.T) {
	if at, ok := w.runner.NextDue(); ok {
		w.clock.SetTime(at)
	}
	w.drain(t)
}

// check holds after every action: every phase got fresh data in order, no
// phase ran after a failed or halted one, and Measured recorded exactly
// what its step returned.
func (w *passWorld) check(t *rapid.T) {
	w.mu.Lock()
	dirty, overruns, returned := slices.Clone(w.dirty), slices.Clone(w.overruns), w.returned
	failures := map[string]int{}
	for k, v := range w.failures {
		failures[k] = v
	}
	w.mu.Unlock()
	if len(dirty) > 0 {
		t.Fatalf("pass data leaked between reconciles or steps ran out of order: %v", dirty)
	}
	if len(overruns) > 0 {
		t.Fatalf("steps ran after a failed or halted one: %v", overruns)
	}
	if n, _ := metricValue(t, w.reg, "pass_duration_seconds", nil); int(n) != returned {
		t.Fatalf("Measured timed %v reconciles, its step returned %d times", n, returned)
	}
	got := map[string]int{}
	families, err := w.reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	for _, f := range families {
		if f.GetName() != "pass_errors_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			got[m.GetLabel()[0].GetValue()] = int(m.GetCounter().GetValue())
		}
	}
	if diff := cmp.Diff(failures, got); diff != "" {
		t.Fatalf("Measured's error counts differ from the failures its step returned: -returned, +counted:\n%s", diff)
	}
}

// converge lets every phase succeed and settles: each live widget mirrors
// its value through the pass data and keeps the finalizer; deleted ones
// are gone.
func (w *passWorld) converge(t *rapid.T) {
	w.mu.Lock()
	for i := range w.behaviour {
		w.behaviour[i] = phaseOK
	}
	w.mu.Unlock()
	w.restart(t)
	for range 4 {
		w.tick(t)
	}
	w.check(t)
	want, got := map[string]string{}, map[string]string{}
	for name, value := range w.model {
		want[name] = "mirror=" + value + " finalizer=true"
	}
	for _, name := range toyNames {
		if obj, ok := getWidgetQuiet(w.ctx, w.api, name); ok {
			got[name] = fmt.Sprintf("mirror=%s finalizer=%v", obj.Status.Mirror, hasFinalizer(obj, passFinalizer))
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("after convergence the world differs from the model: -want, +got:\n%s", diff)
	}
}

// TestPassCompositionStateMachine drives a controller-shaped composition
// (Measured, WithFinalizer, Live, WithPass, PassSequence, ObserveGeneration)
// through random creates, updates, deletes, phase behaviours (requeue,
// failure, halt, panic), clock ticks and restarts with one or four workers.
// After every action: each phase is handed fresh pass data holding exactly
// the phases before it, nothing runs after a failure or a halt, and the
// Measured metrics equal what the measured step returned. At the end the
// world converges to the model.
func TestPassCompositionStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := newPassWorld(t)
		t.Repeat(map[string]func(*rapid.T){
			"create":  w.create,
			"update":  w.update,
			"delete":  w.delete,
			"behave":  w.behave,
			"restart": w.restart,
			"drain":   w.drain,
			"tick":    w.tick,
			"":        w.check,
		})
		w.converge(t)
	})
}
