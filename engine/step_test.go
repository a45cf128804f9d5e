package engine_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/engine/internal/widget"
)

func TestResultMerge(t *testing.T) {
	cases := map[string]struct {
		reason string
		a, b   engine.Result
		want   engine.Result
	}{
		"BothZero":        {reason: "Two zero results merge to zero.", want: engine.Result{}},
		"LeftOnly":        {reason: "A zero result does not hide a requeue.", a: engine.Result{RequeueAfter: time.Second}, want: engine.Result{RequeueAfter: time.Second}},
		"RightOnly":       {reason: "Merging is symmetric for a single requeue.", b: engine.Result{RequeueAfter: time.Minute}, want: engine.Result{RequeueAfter: time.Minute}},
		"SmallestWins":    {reason: "The smallest non-zero RequeueAfter wins.", a: engine.Result{RequeueAfter: time.Minute}, b: engine.Result{RequeueAfter: time.Second}, want: engine.Result{RequeueAfter: time.Second}},
		"SmallestWinsRev": {reason: "Order does not matter.", a: engine.Result{RequeueAfter: time.Second}, b: engine.Result{RequeueAfter: time.Minute}, want: engine.Result{RequeueAfter: time.Second}},
		"NegativeIgnored": {reason: "A negative delay means no requeue.", a: engine.Result{RequeueAfter: -time.Second}, b: engine.Result{RequeueAfter: time.Minute}, want: engine.Result{RequeueAfter: time.Minute}},
		"NegativeAlone":   {reason: "A negative delay alone merges to zero.", a: engine.Result{RequeueAfter: -time.Second}, want: engine.Result{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.a.Merge(tc.b)); diff != "" {
				t.Errorf("%s\nMerge(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// recordStep returns a step that appends name to *log and returns res, err.
func recordStep(log *[]string, name string, res engine.Result, err error) engine.Step[*widget.Widget] {
	return engine.StepFunc[*widget.Widget](func(context.Context, *engine.State[*widget.Widget]) (engine.Result, error) {
		*log = append(*log, name)
		return res, err
	})
}

func TestSequence(t *testing.T) {
	type step struct {
		res engine.Result
		err error
	}
	type want struct {
		ran []string
		res engine.Result
		err error
	}
	cases := map[string]struct {
		reason string
		steps  []step
		nested bool
		want   want
	}{
		"Empty": {
			reason: "An empty sequence succeeds with a zero result.",
			want:   want{res: engine.Result{}},
		},
		"AllRunMerged": {
			reason: "Every step runs in order and results merge to the smallest requeue.",
			steps:  []step{{res: engine.Result{RequeueAfter: time.Minute}}, {}, {res: engine.Result{RequeueAfter: time.Second}}},
			want:   want{ran: []string{"0", "1", "2"}, res: engine.Result{RequeueAfter: time.Second}},
		},
		"StopsAtError": {
			reason: "The first error stops the sequence and keeps the results so far.",
			steps:  []step{{res: engine.Result{RequeueAfter: time.Minute}}, {err: errBoom}, {}},
			want:   want{ran: []string{"0", "1"}, res: engine.Result{RequeueAfter: time.Minute}, err: errBoom},
		},
		"Halt": {
			reason: "ErrHalt stops the sequence and is returned for the root to swallow.",
			steps:  []step{{}, {err: engine.ErrHalt}, {}},
			want:   want{ran: []string{"0", "1"}, err: engine.ErrHalt},
		},
		"HaltNested": {
			reason: "ErrHalt in a nested sequence stops the outer one too.",
			steps:  []step{{}, {err: fmt.Errorf("wrapped: %w", engine.ErrHalt)}, {}},
			nested: true,
			want:   want{ran: []string{"0", "1"}, err: engine.ErrHalt},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var ran []string
			seq := engine.Sequence[*widget.Widget]{}
			for i, s := range tc.steps {
				seq = append(seq, recordStep(&ran, fmt.Sprint(i), s.res, s.err))
			}
			var root engine.Step[*widget.Widget] = seq
			if tc.nested {
				root = engine.Sequence[*widget.Widget]{seq, recordStep(&ran, "after", engine.Result{}, nil)}
			}
			res, err := root.Reconcile(context.Background(), engine.NewState(widget.New(ns, "w", "v"), nil))
			if diff := cmp.Diff(tc.want.ran, ran); diff != "" {
				t.Errorf("%s\nsteps run: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.res, res); diff != "" {
				t.Errorf("%s\nresult: -want, +got:\n%s", tc.reason, diff)
			}
			if !errors.Is(err, tc.want.err) || (tc.want.err == nil) != (err == nil) {
				t.Errorf("%s\nerror: want %v, got %v", tc.reason, tc.want.err, err)
			}
		})
	}
}

func TestSequenceValidate(t *testing.T) {
	cases := map[string]struct {
		reason string
		seq    engine.Sequence[*widget.Widget]
		want   error
	}{
		"Valid":      {reason: "Non-nil steps are valid.", seq: engine.Sequence[*widget.Widget]{mirror}},
		"NilStep":    {reason: "A nil step is refused.", seq: engine.Sequence[*widget.Widget]{mirror, nil}, want: engine.ErrInvalidStep},
		"NestedFail": {reason: "Nested steps are validated.", seq: engine.Sequence[*widget.Widget]{engine.WithFinalizer[*widget.Widget]{Finalizer: "x"}}, want: engine.ErrInvalidStep},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.seq.Validate()
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("%s\nValidate(): want %v, got %v", tc.reason, tc.want, err)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "widgets"}, "w", errBoom)
	cases := map[string]struct {
		reason   string
		err      error
		terminal bool
		why      engine.Reason
	}{
		"Plain":        {reason: "A plain error is retriable with an unknown reason.", err: errBoom, why: engine.ReasonUnknown},
		"Terminal":     {reason: "Terminal marks an error as permanent.", err: engine.Terminal(errBoom), terminal: true, why: engine.ReasonUnknown},
		"WrappedTerm":  {reason: "Wrapping keeps the mark.", err: fmt.Errorf("cannot x: %w", engine.Terminal(errBoom)), terminal: true, why: engine.ReasonUnknown},
		"APIReason":    {reason: "API errors give their status reason.", err: fmt.Errorf("cannot get: %w", conflict), why: "Conflict"},
		"GivenReason":  {reason: "WithReason wins over the API reason.", err: engine.WithReason("CannotAllocateVLAN", conflict), why: "CannotAllocateVLAN"},
		"TerminalNil":  {reason: "Terminal(nil) is nil.", err: engine.Terminal(nil), why: engine.ReasonUnknown},
		"PanicReason":  {reason: "A recovered panic has reason Panic.", err: &engine.PanicError{Value: "x"}, why: engine.ReasonPanic},
		"ReasonNilErr": {reason: "WithReason(nil) is nil.", err: engine.WithReason("X", nil), why: engine.ReasonUnknown},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := engine.IsTerminal(tc.err); got != tc.terminal {
				t.Errorf("%s\nIsTerminal(%v) = %v, want %v", tc.reason, tc.err, got, tc.terminal)
			}
			if got := engine.ReasonOf(tc.err); got != tc.why {
				t.Errorf("%s\nReasonOf(%v) = %q, want %q", tc.reason, tc.err, got, tc.why)
			}
		})
	}
	if !errors.Is(engine.Terminal(errBoom), errBoom) {
		t.Error("Terminal(err) must still match err with errors.Is")
	}
}
