package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/engine/enginetest"
	"github.com/pxsubstrate/pxsubstrate/engine/internal/widget"
	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
)

const fin = "test.pxsubstrate.io/cleanup"

func TestWithFinalizer(t *testing.T) {
	type args struct {
		obj      *widget.Widget
		faults   []kube.Fault
		stepErr  error
		ready    bool
		readyErr error
		recheck  time.Duration
	}
	type want struct {
		res        engine.Result
		err        error
		stepRan    bool
		sawStored  bool     // the finalizer was stored when the step ran
		finalizers []string // stored afterwards; nil with gone
		gone       bool
		events     []engine.Reason
	}
	conflictOnPatch := []kube.Fault{{Verbs: []kube.Verb{kube.VerbPatch}, Err: kube.Conflict}}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"LiveAddsFirst": {
			reason: "On a live object the finalizer is stored before the step runs.",
			args:   args{obj: widget.New(ns, "w", "v")},
			want:   want{stepRan: true, sawStored: true, finalizers: []string{fin}, events: []engine.Reason{engine.ReasonAddedFinalizer}},
		},
		"LiveAlreadyThere": {
			reason: "A live object that has the finalizer is not patched again.",
			args:   args{obj: withFinalizers(widget.New(ns, "w", "v"), "other.io/x", fin)},
			want:   want{stepRan: true, sawStored: true, finalizers: []string{"other.io/x", fin}},
		},
		"LivePatchConflict": {
			reason: "When the finalizer cannot be stored, the step does not run and the error is returned.",
			args:   args{obj: widget.New(ns, "w", "v"), faults: conflictOnPatch},
			want:   want{err: errConflict, events: []engine.Reason{engine.ReasonCannotAddFinalizer}},
		},
		"LiveStepError": {
			reason: "A failing step on a live object returns its error; the finalizer stays.",
			args:   args{obj: withFinalizers(widget.New(ns, "w", "v"), fin), stepErr: errBoom},
			want:   want{err: errBoom, stepRan: true, sawStored: true, finalizers: []string{fin}},
		},
		"DeletingNotReady": {
			reason: "While ReadyToClear says no, the step runs, the finalizer stays and the key is requeued after the default delay.",
			args:   args{obj: deleting("w", fin)},
			want: want{res: engine.Result{RequeueAfter: engine.DefaultRecheckAfter}, stepRan: true, sawStored: true,
				finalizers: []string{fin}},
		},
		"DeletingNotReadyRecheck": {
			reason: "RecheckAfter sets the requeue delay while ReadyToClear says no.",
			args:   args{obj: deleting("w", fin), recheck: time.Second},
			want:   want{res: engine.Result{RequeueAfter: time.Second}, stepRan: true, sawStored: true, finalizers: []string{fin}},
		},
		"DeletingReady": {
			reason: "When ReadyToClear says yes the finalizer is removed and the object goes.",
			args:   args{obj: deleting("w", fin), ready: true},
			want:   want{stepRan: true, sawStored: true, gone: true, events: []engine.Reason{engine.ReasonRemovedFinalizer}},
		},
		"DeletingReadyOtherFinalizer": {
			reason: "Only our finalizer is removed; the object waits for the others.",
			args:   args{obj: deleting("w", "other.io/x", fin), ready: true},
			want:   want{stepRan: true, sawStored: true, finalizers: []string{"other.io/x"}, events: []engine.Reason{engine.ReasonRemovedFinalizer}},
		},
		"DeletingStepError": {
			reason: "A failing cleanup keeps the finalizer, whatever ReadyToClear would say.",
			args:   args{obj: deleting("w", fin), stepErr: errBoom, ready: true},
			want:   want{err: errBoom, stepRan: true, sawStored: true, finalizers: []string{fin}},
		},
		"DeletingReadyError": {
			reason: "A ReadyToClear error keeps the finalizer and is returned.",
			args:   args{obj: deleting("w", fin), readyErr: errBoom},
			want:   want{err: errBoom, stepRan: true, sawStored: true, finalizers: []string{fin}},
		},
		"DeletingRemoveConflict": {
			reason: "A conflict while removing the finalizer is returned; the finalizer stays.",
			args:   args{obj: deleting("w", fin), ready: true, faults: conflictOnPatch},
			want: want{err: errConflict, stepRan: true, sawStored: true, finalizers: []string{fin},
				events: []engine.Reason{engine.ReasonCannotRemoveFinalizer}},
		},
		"DeletingWithoutOurs": {
			reason: "An object being deleted without our finalizer needs nothing from us.",
			args:   args{obj: deleting("w", "other.io/x"), ready: true},
			want:   want{finalizers: []string{"other.io/x"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			faults := kube.NewFaults(1)
			c := fakeClient(faults, interceptor.Funcs{}, tc.args.obj)
			if err := faults.Set(tc.args.faults...); err != nil {
				t.Fatal(err)
			}
			var got want
			step := engine.WithFinalizer[*widget.Widget]{
				Finalizer:    fin,
				RecheckAfter: tc.args.recheck,
				ReadyToClear: func(context.Context, *engine.State[*widget.Widget]) (bool, error) {
					return tc.args.ready, tc.args.readyErr
				},
				Step: engine.StepFunc[*widget.Widget](func(ctx context.Context, s *engine.State[*widget.Widget]) (engine.Result, error) {
					got.stepRan = true
					stored := &widget.Widget{}
					if err := s.Client.Get(ctx, client.ObjectKeyFromObject(s.Object), stored); err == nil {
						got.sawStored = hasFinalizer(stored, fin)
					}
					return engine.Result{}, tc.args.stepErr
				}),
			}
			if err := step.Validate(); err != nil {
				t.Fatalf("Validate(): %v", err)
			}
			obj, _ := getWidget(t, c, "w")
			rec := &enginetest.Recorder{}
			s := engine.NewState(obj, c)
			s.Recorder = rec
			var err error
			got.res, err = step.Reconcile(ctx, s)
			got.events = rec.Reasons()
			if stored, ok := getWidget(t, c, "w"); ok {
				got.finalizers = stored.Finalizers
			} else {
				got.gone = true
			}
			checkErr(t, tc.reason, tc.want.err, err)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{}), cmpIgnoreErr, emptyEvents); diff != "" {
				t.Errorf("%s\nReconcile(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestWithFinalizerKeepsStatus(t *testing.T) {
	ctx := context.Background()
	c := fakeClient(nil, interceptor.Funcs{}, widget.New(ns, "w", "v"))
	obj, _ := getWidget(t, c, "w")
	s := engine.NewState(obj, c)
	s.Object.Status.Mirror = "set before the finalizer step"
	step := engine.WithFinalizer[*widget.Widget]{
		Finalizer:    fin,
		ReadyToClear: func(context.Context, *engine.State[*widget.Widget]) (bool, error) { return true, nil },
		Step:         mirror,
	}
	if _, err := step.Reconcile(ctx, s); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	stored, _ := getWidget(t, c, "w")
	if s.Object.ResourceVersion != stored.ResourceVersion || !hasFinalizer(s.Object, fin) {
		t.Errorf("working copy has resourceVersion %q and finalizers %v, want %q and %q",
			s.Object.ResourceVersion, s.Object.Finalizers, stored.ResourceVersion, fin)
	}
	if s.Object.Status.Mirror != "v" {
		t.Errorf("status.mirror = %q after the inner step, want %q", s.Object.Status.Mirror, "v")
	}
	if stored.Status.Mirror != "" {
		t.Errorf("the finalizer patch wrote status.mirror = %q; status is the runner's to write", stored.Status.Mirror)
	}
}

func TestWithFinalizerValidate(t *testing.T) {
	ready := func(context.Context, *engine.State[*widget.Widget]) (bool, error) { return true, nil }
	cases := map[string]struct {
		reason string
		w      engine.WithFinalizer[*widget.Widget]
		ok     bool
	}{
		"Valid":       {reason: "A qualified name, ReadyToClear and a step are enough.", w: engine.WithFinalizer[*widget.Widget]{Finalizer: fin, ReadyToClear: ready, Step: mirror}, ok: true},
		"NoDomain":    {reason: "A finalizer without a domain prefix is refused.", w: engine.WithFinalizer[*widget.Widget]{Finalizer: "cleanup", ReadyToClear: ready, Step: mirror}},
		"BadName":     {reason: "A finalizer that is not a qualified name is refused.", w: engine.WithFinalizer[*widget.Widget]{Finalizer: "a/b/c", ReadyToClear: ready, Step: mirror}},
		"Empty":       {reason: "An empty finalizer is refused.", w: engine.WithFinalizer[*widget.Widget]{ReadyToClear: ready, Step: mirror}},
		"NoReady":     {reason: "ReadyToClear is required.", w: engine.WithFinalizer[*widget.Widget]{Finalizer: fin, Step: mirror}},
		"NoStep":      {reason: "A step is required.", w: engine.WithFinalizer[*widget.Widget]{Finalizer: fin, ReadyToClear: ready}},
		"NegRecheck":  {reason: "A negative RecheckAfter is refused.", w: engine.WithFinalizer[*widget.Widget]{Finalizer: fin, ReadyToClear: ready, Step: mirror, RecheckAfter: -1}},
		"NestedCheck": {reason: "The guarded step is validated.", w: engine.WithFinalizer[*widget.Widget]{Finalizer: fin, ReadyToClear: ready, Step: engine.Sequence[*widget.Widget]{nil}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.w.Validate()
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, engine.ErrInvalidStep)) {
				t.Errorf("%s\nValidate() = %v, want ok=%v (errors wrap ErrInvalidStep)", tc.reason, err, tc.ok)
			}
		})
	}
}

// errConflict stands for "any API Conflict" in want.err.
var errConflict = errors.New("conflict")

func checkErr(t *testing.T, reason string, want, got error) {
	t.Helper()
	switch {
	case want == nil && got != nil:
		t.Errorf("%s\nunexpected error: %v", reason, got)
	case want == errConflict && !apierrors.IsConflict(got):
		t.Errorf("%s\nerror = %v, want a Conflict", reason, got)
	case want != nil && want != errConflict && !errors.Is(got, want):
		t.Errorf("%s\nerror = %v, want %v", reason, got, want)
	}
}

var (
	cmpIgnoreErr = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".err" }, cmp.Ignore())
	emptyEvents  = cmp.FilterValues(func(a, b []engine.Reason) bool { return len(a) == 0 && len(b) == 0 }, cmp.Ignore())
)

func withFinalizers(w *widget.Widget, f ...string) *widget.Widget {
	w.Finalizers = f
	return w
}

func hasFinalizer(w *widget.Widget, f string) bool {
	for _, x := range w.Finalizers {
		if x == f {
			return true
		}
	}
	return false
}
