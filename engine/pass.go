package engine

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Pass is the State of one reconcile together with Data, a value of type P
// that the steps of the reconcile share: what an early step learned (the
// zone it read, the subnet it found) for the steps after it. WithPass makes
// a fresh Pass for every reconcile, so nothing one reconcile learned leaks
// into the next, and two workers never share one.
type Pass[T client.Object, P any] struct {
	*State[T]
	// Data is the reconcile's own value; it starts as WithPass.Init made
	// it, or as P's zero value.
	Data P
}

// PassStep is a Step that also reads and writes the pass data. The contract
// of Step holds: it is idempotent and remembers nothing between reconciles
// except through the world and the object's status.
type PassStep[T client.Object, P any] interface {
	Reconcile(ctx context.Context, p *Pass[T, P]) (Result, error)
}

// PassFunc adapts a function to a PassStep.
type PassFunc[T client.Object, P any] func(ctx context.Context, p *Pass[T, P]) (Result, error)

// Reconcile calls f.
func (f PassFunc[T, P]) Reconcile(ctx context.Context, p *Pass[T, P]) (Result, error) {
	return f(ctx, p)
}

// PassSequence is Sequence for pass steps: it runs them in order on one
// Pass, stops at the first error (ErrHalt included) and merges the results
// so far (the smallest non-zero RequeueAfter wins).
type PassSequence[T client.Object, P any] []PassStep[T, P]

// Reconcile runs the steps.
func (q PassSequence[T, P]) Reconcile(ctx context.Context, p *Pass[T, P]) (Result, error) {
	return runInOrder(ctx, q, p)
}

// Validate checks that no step is nil and validates the steps that can.
func (q PassSequence[T, P]) Validate() error {
	return validateInOrder("pass sequence", q)
}

// WithPass runs a PassStep as a Step: for every reconcile it makes a fresh
// Pass over the State, with Data from Init (P's zero value without Init),
// and runs Step on it. The data lives exactly as long as the reconcile.
type WithPass[T client.Object, P any] struct {
	// Init, when set, makes the pass data from the State before Step runs.
	Init func(s *State[T]) P
	// Step runs with the pass.
	Step PassStep[T, P]
}

// Reconcile runs Step on a fresh Pass.
func (w WithPass[T, P]) Reconcile(ctx context.Context, s *State[T]) (Result, error) {
	p := &Pass[T, P]{State: s}
	if w.Init != nil {
		p.Data = w.Init(s)
	}
	return w.Step.Reconcile(ctx, p)
}

// Validate checks that there is a Step and validates it.
func (w WithPass[T, P]) Validate() error {
	if w.Step == nil {
		var zero P
		return fmt.Errorf("pass of %T has no Step: %w", zero, ErrInvalidStep)
	}
	return validateStep(w.Step)
}

// Lift runs a Step inside a pass: it sees the pass's State and not its
// data. Use it to put the engine's own steps (ObserveGeneration,
// SummarizeReady, ...) into a PassSequence.
func Lift[T client.Object, P any](step Step[T]) PassStep[T, P] {
	return lifted[T, P]{step: step}
}

type lifted[T client.Object, P any] struct{ step Step[T] }

func (l lifted[T, P]) Reconcile(ctx context.Context, p *Pass[T, P]) (Result, error) {
	return l.step.Reconcile(ctx, p.State)
}

func (l lifted[T, P]) Validate() error {
	if l.step == nil {
		return fmt.Errorf("lifted step is nil: %w", ErrInvalidStep)
	}
	return validateStep(l.step)
}

// runInOrder is the loop of Sequence and PassSequence: it runs steps in
// order on s, stops at the first error and merges the results so far.
func runInOrder[S any, St interface {
	Reconcile(context.Context, S) (Result, error)
}](ctx context.Context, steps []St, s S) (Result, error) {
	var res Result
	for _, step := range steps {
		r, err := step.Reconcile(ctx, s)
		res = res.Merge(r)
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// validateInOrder checks that no step of a sequence is nil and validates
// the steps that can; what names the sequence in the messages.
func validateInOrder[St comparable](what string, steps []St) error {
	var errs []error
	var none St
	for i, step := range steps {
		if step == none {
			errs = append(errs, fmt.Errorf("%s step %d is nil: %w", what, i, ErrInvalidStep))
			continue
		}
		if err := validateStep(step); err != nil {
			errs = append(errs, fmt.Errorf("%s step %d: %w", what, i, err))
		}
	}
	return errors.Join(errs...)
}

// validateStep validates step when it is a Validator.
func validateStep(step any) error {
	if v, ok := step.(Validator); ok {
		return v.Validate()
	}
	return nil
}
