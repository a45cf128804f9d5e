package engine

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Sequence runs its steps in order on the same State. It stops at the first
// error and returns it with the results merged so far (the smallest non-zero
// RequeueAfter wins). ErrHalt stops it the same way; the Runner treats ErrHalt
// as success.
type Sequence[T client.Object] []Step[T]

// Reconcile runs the steps.
func (q Sequence[T]) Reconcile(ctx context.Context, s *State[T]) (Result, error) {
	var res Result
	for _, step := range q {
		r, err := step.Reconcile(ctx, s)
		res = res.Merge(r)
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// Validate checks that no step is nil and validates the steps that can.
func (q Sequence[T]) Validate() error {
	var errs []error
	for i, step := range q {
		if step == nil {
			errs = append(errs, fmt.Errorf("sequence step %d is nil: %w", i, ErrInvalidStep))
			continue
		}
		if v, ok := step.(Validator); ok {
			if err := v.Validate(); err != nil {
				errs = append(errs, fmt.Errorf("sequence step %d: %w", i, err))
			}
		}
	}
	return errors.Join(errs...)
}
