package engine

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Sequence runs its steps in order on the same State. It stops at the first
// error and returns it with the results merged so far (the smallest non-zero
// RequeueAfter wins). ErrHalt stops it the same way; the Runner treats ErrHalt
// as success.
type Sequence[T client.Object] []Step[T]

// Reconcile runs the steps.
func (q Sequence[T]) Reconcile(ctx context.Context, s *State[T]) (Result, error) {
	return runInOrder(ctx, q, s)
}

// Validate checks that no step is nil and validates the steps that can.
func (q Sequence[T]) Validate() error {
	return validateInOrder("sequence", q)
}
