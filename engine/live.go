package engine

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Live runs Step only on an object that is not being deleted; on an object
// with a deletionTimestamp it does nothing and succeeds. Inside
// WithFinalizer it keeps the live pass apart from the cleanup, which
// ReadyToClear does:
//
//	engine.WithFinalizer[T]{Finalizer: f, ReadyToClear: cleanup, Step: engine.Live[T]{Step: livePass}}
type Live[T client.Object] struct {
	Step Step[T]
}

// Reconcile runs Step unless the object is being deleted.
func (l Live[T]) Reconcile(ctx context.Context, s *State[T]) (Result, error) {
	if !s.Object.GetDeletionTimestamp().IsZero() {
		return Result{}, nil
	}
	return l.Step.Reconcile(ctx, s)
}

// Validate checks that there is a Step and validates it.
func (l Live[T]) Validate() error {
	if l.Step == nil {
		return fmt.Errorf("live step is nil: %w", ErrInvalidStep)
	}
	return validateStep(l.Step)
}
