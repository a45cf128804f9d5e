package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/engine/internal/widget"
)

type wgt = *widget.Widget

// seen is the pass data of these tests: the steps that ran, in order.
type seen struct {
	ran   []string
	value string
}

type seenStep = engine.PassFunc[wgt, seen]

// passRecord returns a pass step that appends name to the pass data and
// returns res, err.
func passRecord(name string, res engine.Result, err error) engine.PassStep[wgt, seen] {
	return seenStep(func(_ context.Context, p *engine.Pass[wgt, seen]) (engine.Result, error) {
		p.Data.ran = append(p.Data.ran, name)
		return res, err
	})
}

func TestPassSequence(t *testing.T) {
	minute, second := engine.Result{RequeueAfter: time.Minute}, engine.Result{RequeueAfter: time.Second}
	cases := map[string]struct {
		reason string
		steps  engine.PassSequence[wgt, seen]
		ran    []string
		res    engine.Result
		err    error
	}{
		"AllRun": {
			reason: "Every step runs, in order, on the same data; the smallest requeue wins.",
			steps:  engine.PassSequence[wgt, seen]{passRecord("a", minute, nil), passRecord("b", second, nil), passRecord("c", engine.Result{}, nil)},
			ran:    []string{"a", "b", "c"}, res: second,
		},
		"ErrorStops": {
			reason: "The first error stops the sequence and comes back with the results so far.",
			steps:  engine.PassSequence[wgt, seen]{passRecord("a", minute, nil), passRecord("b", engine.Result{}, errBoom), passRecord("c", second, nil)},
			ran:    []string{"a", "b"}, res: minute, err: errBoom,
		},
		"HaltStops": {
			reason: "ErrHalt stops the sequence like an error.",
			steps:  engine.PassSequence[wgt, seen]{passRecord("a", engine.Result{}, engine.ErrHalt), passRecord("b", second, nil)},
			ran:    []string{"a"}, err: engine.ErrHalt,
		},
		"Empty": {reason: "An empty sequence does nothing.", steps: engine.PassSequence[wgt, seen]{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := &engine.Pass[wgt, seen]{State: engine.NewState(widget.New(ns, "w", "v"), nil)}
			res, err := tc.steps.Reconcile(context.Background(), p)
			if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Errorf("%s\nReconcile(): want error %v, got %v", tc.reason, tc.err, err)
			}
			if diff := cmp.Diff(tc.res, res); diff != "" {
				t.Errorf("%s\nReconcile(): -want, +got result:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.ran, p.Data.ran); diff != "" {
				t.Errorf("%s\nsteps run: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestWithPassFreshData(t *testing.T) {
	var got []seen
	step := engine.WithPass[wgt, seen]{
		Init: func(s *engine.State[wgt]) seen { return seen{value: s.Object.Spec.Value} },
		Step: engine.PassSequence[wgt, seen]{
			passRecord("first", engine.Result{}, nil),
			seenStep(func(_ context.Context, p *engine.Pass[wgt, seen]) (engine.Result, error) {
				got = append(got, p.Data)
				p.Data.value = "changed by the pass"
				return engine.Result{}, nil
			}),
		},
	}
	for _, v := range []string{"red", "blue"} {
		if _, err := step.Reconcile(context.Background(), engine.NewState(widget.New(ns, "w", v), nil)); err != nil {
			t.Fatal(err)
		}
	}
	want := []seen{{ran: []string{"first"}, value: "red"}, {ran: []string{"first"}, value: "blue"}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(seen{})); diff != "" {
		t.Errorf("Every reconcile starts with the data Init makes, never with what the previous pass left.\n-want, +got:\n%s", diff)
	}
}

func TestWithPassZeroData(t *testing.T) {
	step := engine.WithPass[wgt, seen]{Step: seenStep(func(_ context.Context, p *engine.Pass[wgt, seen]) (engine.Result, error) {
		if p.Data.value != "" || p.Data.ran != nil {
			return engine.Result{}, errors.New("data is not P's zero value")
		}
		if p.Object.Name != "w" {
			return engine.Result{}, errors.New("the pass does not carry the reconcile's State")
		}
		p.Object.Status.Mirror = "set through the pass"
		return engine.Result{}, nil
	})}
	s := engine.NewState(widget.New(ns, "w", "v"), nil)
	if _, err := step.Reconcile(context.Background(), s); err != nil {
		t.Fatalf("Without Init, the pass starts from P's zero value over the reconcile's State: %v", err)
	}
	if s.Object.Status.Mirror != "set through the pass" {
		t.Errorf("A pass step changes the State's object: status.mirror = %q", s.Object.Status.Mirror)
	}
}

func TestLift(t *testing.T) {
	p := &engine.Pass[wgt, seen]{State: engine.NewState(widget.New(ns, "w", "red"), nil)}
	res, err := engine.Lift[wgt, seen](mirror).Reconcile(context.Background(), p)
	if err != nil || !res.IsZero() || p.Object.Status.Mirror != "red" {
		t.Errorf("A lifted step runs on the pass's State: got %v, %v, mirror %q", res, err, p.Object.Status.Mirror)
	}
}

func TestLive(t *testing.T) {
	ran := 0
	step := engine.Live[wgt]{Step: engine.StepFunc[wgt](func(context.Context, *engine.State[wgt]) (engine.Result, error) {
		ran++
		return engine.Result{RequeueAfter: time.Minute}, errBoom
	})}
	res, err := step.Reconcile(context.Background(), engine.NewState(deleting("d", "x.io/y"), nil))
	if ran != 0 || err != nil || !res.IsZero() {
		t.Errorf("On an object being deleted, Live runs nothing and succeeds: ran %d, got %v, %v", ran, res, err)
	}
	res, err = step.Reconcile(context.Background(), engine.NewState(widget.New(ns, "w", "v"), nil))
	if ran != 1 || !errors.Is(err, errBoom) || res.RequeueAfter != time.Minute {
		t.Errorf("On a live object, Live returns what its step returns: ran %d, got %v, %v", ran, res, err)
	}
}

func TestMeasured(t *testing.T) {
	reg := prometheus.NewRegistry()
	duration := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "test_duration_seconds"})
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "test_errors_total"}, []string{engine.LabelReason})
	reg.MustRegister(duration, errs)
	var next error
	step := engine.Measured[wgt]{Duration: duration, Errors: errs, Step: engine.StepFunc[wgt](func(context.Context, *engine.State[wgt]) (engine.Result, error) {
		return engine.Result{RequeueAfter: time.Second}, next
	})}
	if err := step.Validate(); err != nil {
		t.Fatalf("Validate(): %v", err)
	}
	for _, e := range []error{nil, engine.WithReason("CannotAllocate", errBoom), engine.ErrHalt, engine.WithReason("CannotAllocate", errBoom), errBoom} {
		next = e
		res, err := step.Reconcile(context.Background(), engine.NewState(widget.New(ns, "w", "v"), nil))
		if err != e || res.RequeueAfter != time.Second {
			t.Errorf("Measured returns its step's result and error unchanged: got %v, %v, want %v", res, err, e)
		}
	}
	if n, _ := metricValue(t, reg, "test_duration_seconds", nil); n != 5 {
		t.Errorf("Every reconcile is timed once: %v observations, want 5", n)
	}
	for reason, want := range map[string]float64{"CannotAllocate": 2, "Unknown": 1} {
		if n, _ := metricValue(t, reg, "test_errors_total", map[string]string{engine.LabelReason: reason}); n != want {
			t.Errorf("Failed reconciles are counted by reason, halts not: %s = %v, want %v", reason, n, want)
		}
	}
}

func TestObserveGeneration(t *testing.T) {
	w := widget.New(ns, "w", "v")
	w.Generation = 7
	step := engine.ObserveGeneration[wgt]{Field: func(w wgt) *int64 { return &w.Status.ObservedGeneration }}
	if _, err := step.Reconcile(context.Background(), engine.NewState(w, nil)); err != nil || w.Status.ObservedGeneration != 7 {
		t.Errorf("ObserveGeneration stamps the generation into the status: got %d, %v", w.Status.ObservedGeneration, err)
	}
}

func TestSummarizeReady(t *testing.T) {
	conds := func(w wgt) *[]metav1.Condition { return &w.Status.Conditions }
	skipOff := func(c metav1.Condition) bool { return c.Reason == "Disabled" }
	cases := map[string]struct {
		reason string
		step   engine.SummarizeReady[wgt]
		have   []metav1.Condition
		want   metav1.Condition
	}{
		"AllTrue": {
			reason: "All sub-conditions True make Ready True, with the step's message.",
			step:   engine.SummarizeReady[wgt]{Conditions: conds, SubTypes: []string{"A", "B"}, Message: "usable"},
			have:   []metav1.Condition{cond("A", metav1.ConditionTrue, 1, t0, "Ok", ""), cond("B", metav1.ConditionTrue, 1, t0, "Ok", "")},
			want:   cond("Ready", metav1.ConditionTrue, 1, t1, engine.ReasonReady, "usable"),
		},
		"FirstNotTrueCopied": {
			reason: "Without NotReady, Ready copies the first sub-condition that is not True.",
			step:   engine.SummarizeReady[wgt]{Conditions: conds, SubTypes: []string{"A", "B"}},
			have:   []metav1.Condition{cond("A", metav1.ConditionTrue, 1, t0, "Ok", ""), cond("B", metav1.ConditionUnknown, 1, t0, "Waiting", "waits")},
			want:   cond("Ready", metav1.ConditionUnknown, 1, t1, "Waiting", "waits"),
		},
		"NotReadyFalse": {
			reason: "NotReady False makes Ready False while a sub-condition is Unknown, with its reason.",
			step:   engine.SummarizeReady[wgt]{Conditions: conds, SubTypes: []string{"A", "B"}, NotReady: metav1.ConditionFalse},
			have:   []metav1.Condition{cond("A", metav1.ConditionUnknown, 1, t0, "Waiting", "waits"), cond("B", metav1.ConditionFalse, 1, t0, "Broken", "")},
			want:   cond("Ready", metav1.ConditionFalse, 1, t1, "Waiting", "waits"),
		},
		"Skipped": {
			reason: "A sub-condition Skip accepts does not hold Ready.",
			step:   engine.SummarizeReady[wgt]{Conditions: conds, SubTypes: []string{"A", "B"}, Skip: skipOff, Message: "usable"},
			have:   []metav1.Condition{cond("A", metav1.ConditionTrue, 1, t0, "Ok", ""), cond("B", metav1.ConditionUnknown, 1, t0, "Disabled", "off")},
			want:   cond("Ready", metav1.ConditionTrue, 1, t1, engine.ReasonReady, "usable"),
		},
		"MissingPending": {
			reason: "A missing sub-condition makes Ready Unknown/Pending, even one Skip would accept.",
			step:   engine.SummarizeReady[wgt]{Conditions: conds, SubTypes: []string{"A", "B"}, Skip: skipOff, NotReady: metav1.ConditionFalse},
			have:   []metav1.Condition{cond("A", metav1.ConditionTrue, 1, t0, "Ok", "")},
			want:   cond("Ready", metav1.ConditionUnknown, 1, t1, engine.ReasonPending, "condition B has not been reported yet"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if err := tc.step.Validate(); err != nil {
				t.Fatalf("Validate(): %v", err)
			}
			s := stateAt(1, t1.Time)
			s.Object.Status.Conditions = tc.have
			if _, err := tc.step.Reconcile(context.Background(), s); err != nil {
				t.Fatal(err)
			}
			var got metav1.Condition
			for _, c := range s.Object.Status.Conditions {
				if c.Type == engine.ConditionReady {
					got = c
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nReady: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestCompositionValidate(t *testing.T) {
	conds := func(w wgt) *[]metav1.Condition { return &w.Status.Conditions }
	good := engine.PassSequence[wgt, seen]{passRecord("a", engine.Result{}, nil)}
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "e"}, []string{"cause"})
	cases := map[string]struct {
		reason string
		step   engine.Step[wgt]
		ok     bool
	}{
		"Good": {reason: "A complete composition validates.", ok: true, step: engine.Measured[wgt]{
			Duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "d"}),
			Step: engine.WithFinalizer[wgt]{Finalizer: "x.io/y", ReadyToClear: func(context.Context, *engine.State[wgt]) (bool, error) { return true, nil },
				Step: engine.Live[wgt]{Step: engine.WithPass[wgt, seen]{Step: append(good,
					engine.Lift[wgt, seen](engine.ObserveGeneration[wgt]{Field: func(w wgt) *int64 { return &w.Status.ObservedGeneration }}),
					engine.Lift[wgt, seen](engine.SummarizeReady[wgt]{Conditions: conds, SubTypes: []string{"A"}}))}}},
		}},
		"PassWithoutStep":      {reason: "A pass needs a step.", step: engine.WithPass[wgt, seen]{}},
		"NilInPass":            {reason: "A nil pass step is refused.", step: engine.WithPass[wgt, seen]{Step: engine.PassSequence[wgt, seen]{passRecord("a", engine.Result{}, nil), nil}}},
		"NestedInPass":         {reason: "Steps inside a pass are validated.", step: engine.WithPass[wgt, seen]{Step: engine.PassSequence[wgt, seen]{engine.Lift[wgt, seen](engine.WithFinalizer[wgt]{Finalizer: "x"})}}},
		"LiftNil":              {reason: "Lifting nothing is refused.", step: engine.WithPass[wgt, seen]{Step: engine.Lift[wgt, seen](nil)}},
		"LiveWithoutStep":      {reason: "Live needs a step.", step: engine.Live[wgt]{}},
		"MeasuredNothing":      {reason: "A Measured without metrics records nothing.", step: engine.Measured[wgt]{Step: mirror}},
		"MeasuredWrongLabel":   {reason: "Errors needs the reason label.", step: engine.Measured[wgt]{Step: mirror, Errors: errs}},
		"MeasuredNested":       {reason: "Measured validates its step.", step: engine.Measured[wgt]{Step: engine.Live[wgt]{}, Duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "d"})}},
		"ObserveNoField":       {reason: "ObserveGeneration needs a field.", step: engine.ObserveGeneration[wgt]{}},
		"SummarizeNoTypes":     {reason: "SummarizeReady needs sub-types.", step: engine.SummarizeReady[wgt]{Conditions: conds}},
		"SummarizeNoConds":     {reason: "SummarizeReady needs the conditions.", step: engine.SummarizeReady[wgt]{SubTypes: []string{"A"}}},
		"SummarizeReadyInside": {reason: "Ready cannot summarize itself.", step: engine.SummarizeReady[wgt]{Conditions: conds, SubTypes: []string{"Ready"}}},
		"SummarizeTwice":       {reason: "A sub-type is named once.", step: engine.SummarizeReady[wgt]{Conditions: conds, SubTypes: []string{"A", "B", "A"}}},
		"SummarizeBadStatus":   {reason: "NotReady cannot be True.", step: engine.SummarizeReady[wgt]{Conditions: conds, SubTypes: []string{"A"}, NotReady: metav1.ConditionTrue}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.step.(engine.Validator).Validate()
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, engine.ErrInvalidStep)) {
				t.Errorf("%s\nValidate() = %v, want ok=%v (errors wrap ErrInvalidStep)", tc.reason, err, tc.ok)
			}
			_, rerr := engine.NewRunner(fakeClient(nil, interceptor.Funcs{}), newWidget, tc.step)
			if (rerr == nil) != tc.ok {
				t.Errorf("%s\nNewRunner validates the whole composition when it is built: got %v", tc.reason, rerr)
			}
		})
	}
}
