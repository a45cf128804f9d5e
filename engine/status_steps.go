package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ObserveGeneration is a step that stamps the object's generation into its
// status (status.observedGeneration), so readers know which spec the rest
// of the status describes. Put it first in the pass that owns the status.
type ObserveGeneration[T client.Object] struct {
	// Field points at the status field that holds the observed generation.
	Field func(obj T) *int64
}

// Reconcile sets the field to the object's generation.
func (o ObserveGeneration[T]) Reconcile(_ context.Context, s *State[T]) (Result, error) {
	*o.Field(s.Object) = s.Object.GetGeneration()
	return Result{}, nil
}

// Validate checks that there is a Field.
func (o ObserveGeneration[T]) Validate() error {
	if o.Field == nil {
		return fmt.Errorf("ObserveGeneration has no Field: %w", ErrInvalidStep)
	}
	return nil
}

// SummarizeReady is a step that sets the Ready condition from the
// sub-conditions SubTypes, with SetReady's rules: True (reason Ready) when
// all are True; otherwise the reason and message of the first one, in the
// given order, that is not True; a missing one makes Ready Unknown with
// reason Pending. Skip, NotReady and Message adjust the rules. Put it after
// the steps that set the sub-conditions.
type SummarizeReady[T client.Object] struct {
	// Conditions points at the object's status conditions.
	Conditions func(obj T) *[]metav1.Condition
	// SubTypes are the sub-condition types, in the order they are looked at.
	SubTypes []string
	// Skip, when set, says that a sub-condition which is not True does not
	// hold Ready back (a feature turned off, a grace period).
	Skip func(c metav1.Condition) bool
	// NotReady is Ready's status while a sub-condition is not True: False
	// or Unknown; empty copies the sub-condition's status.
	NotReady metav1.ConditionStatus
	// Message is Ready's message when it is True.
	Message string
}

// Reconcile sets Ready.
func (r SummarizeReady[T]) Reconcile(_ context.Context, s *State[T]) (Result, error) {
	summarize(r.Conditions(s.Object), s.Clock.Now(), s.Object.GetGeneration(),
		summary{subTypes: r.SubTypes, skip: r.Skip, notReady: r.NotReady, message: r.Message})
	return Result{}, nil
}

// Validate checks that Conditions is set and that SubTypes names at least
// one condition, each once, and never Ready itself.
func (r SummarizeReady[T]) Validate() error {
	var errs []error
	if r.Conditions == nil {
		errs = append(errs, fmt.Errorf("SummarizeReady has no Conditions: %w", ErrInvalidStep))
	}
	if len(r.SubTypes) == 0 {
		errs = append(errs, fmt.Errorf("SummarizeReady has no SubTypes to summarize: %w", ErrInvalidStep))
	}
	for i, typ := range r.SubTypes {
		switch {
		case typ == "":
			errs = append(errs, fmt.Errorf("SummarizeReady sub-type %d is empty: %w", i, ErrInvalidStep))
		case typ == ConditionReady:
			errs = append(errs, fmt.Errorf("SummarizeReady cannot summarize %s into itself: %w", ConditionReady, ErrInvalidStep))
		case slices.Index(r.SubTypes, typ) < i:
			errs = append(errs, fmt.Errorf("SummarizeReady names sub-type %s twice: %w", typ, ErrInvalidStep))
		}
	}
	switch r.NotReady {
	case "", metav1.ConditionFalse, metav1.ConditionUnknown:
	default:
		errs = append(errs, fmt.Errorf("SummarizeReady's NotReady is %q; use False, Unknown or leave it empty: %w", r.NotReady, ErrInvalidStep))
	}
	return errors.Join(errs...)
}
