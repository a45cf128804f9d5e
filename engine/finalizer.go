package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// DefaultRecheckAfter is how long WithFinalizer waits before asking
// ReadyToClear again when RecheckAfter is zero.
const DefaultRecheckAfter = 30 * time.Second

// WithFinalizer guards Step with a finalizer, so that Step can clean up after
// the object is deleted and before it disappears.
//
// The contract, for each reconcile:
//
//   - Live object (no deletionTimestamp): if the finalizer is missing it is
//     added and persisted through the client first; Step runs only once the
//     finalizer is stored. If persisting fails, Step does not run and the
//     error is returned, so the key is retried.
//   - Object being deleted that carries the finalizer: Step runs (it sees the
//     deletionTimestamp and cleans up). If Step fails or halts, its error is
//     returned and the finalizer stays. Then ReadyToClear is asked; only when
//     it returns true is the finalizer removed and persisted. Otherwise the
//     result asks to be requeued after RecheckAfter (or sooner, if Step asked).
//   - Object being deleted without the finalizer: nothing runs; the cleanup
//     is complete or never began.
//
// Finalizer changes are merge patches with an optimistic lock: a concurrent
// writer makes the patch fail with a Conflict, which is retried, instead of
// losing either change. The patch touches only the finalizer list; afterwards
// s.Object gets the new finalizers and resourceVersion and keeps the status
// changes earlier steps made in memory.
type WithFinalizer[T client.Object] struct {
	// Finalizer is a domain-qualified name, e.g. "proxmox.cozystack.io/network".
	Finalizer string
	// ReadyToClear says whether the finalizer may go. It is called only while
	// the object is being deleted, after Step succeeded.
	ReadyToClear func(ctx context.Context, s *State[T]) (bool, error)
	// Step is the guarded step; it runs on live objects and during deletion.
	Step Step[T]
	// RecheckAfter is the requeue delay while ReadyToClear says no;
	// 0 means DefaultRecheckAfter.
	RecheckAfter time.Duration
}

// Validate checks the configuration and validates Step.
func (w WithFinalizer[T]) Validate() error {
	var errs []error
	if msgs := validation.IsQualifiedName(w.Finalizer); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("finalizer %q is not a qualified name: %s: %w",
			w.Finalizer, strings.Join(msgs, "; "), ErrInvalidStep))
	} else if !strings.Contains(w.Finalizer, "/") {
		errs = append(errs, fmt.Errorf("finalizer %q needs a domain prefix, e.g. example.com/%s: %w",
			w.Finalizer, w.Finalizer, ErrInvalidStep))
	}
	if w.ReadyToClear == nil {
		errs = append(errs, fmt.Errorf("finalizer %q has no ReadyToClear: %w", w.Finalizer, ErrInvalidStep))
	}
	if w.RecheckAfter < 0 {
		errs = append(errs, fmt.Errorf("finalizer %q has a negative RecheckAfter %s: %w", w.Finalizer, w.RecheckAfter, ErrInvalidStep))
	}
	if w.Step == nil {
		errs = append(errs, fmt.Errorf("finalizer %q guards no Step: %w", w.Finalizer, ErrInvalidStep))
	} else if v, ok := w.Step.(Validator); ok {
		if err := v.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("step guarded by finalizer %q: %w", w.Finalizer, err))
		}
	}
	return errors.Join(errs...)
}

// Reconcile applies the contract described on the type.
func (w WithFinalizer[T]) Reconcile(ctx context.Context, s *State[T]) (Result, error) {
	has := controllerutil.ContainsFinalizer(s.Object, w.Finalizer)
	if s.Object.GetDeletionTimestamp().IsZero() {
		if !has {
			if err := w.patch(ctx, s, true); err != nil {
				return Result{}, err
			}
		}
		return w.Step.Reconcile(ctx, s)
	}
	if !has {
		return Result{}, nil
	}
	res, err := w.Step.Reconcile(ctx, s)
	if err != nil {
		return res, err
	}
	ready, err := w.ReadyToClear(ctx, s)
	if err != nil {
		return res, fmt.Errorf("cannot decide whether finalizer %q can be removed: %w", w.Finalizer, err)
	}
	if !ready {
		recheck := w.RecheckAfter
		if recheck == 0 {
			recheck = DefaultRecheckAfter
		}
		return res.Merge(Result{RequeueAfter: recheck}), nil
	}
	if err := w.patch(ctx, s, false); err != nil {
		return res, err
	}
	return Result{}, nil
}

// patch adds or removes the finalizer and stores the change.
func (w WithFinalizer[T]) patch(ctx context.Context, s *State[T], add bool) error {
	obj, ok := s.Object.DeepCopyObject().(T)
	if !ok {
		return fmt.Errorf("cannot copy %T: DeepCopyObject returned another type", s.Object)
	}
	verb, done, okReason, failReason := "add", "added", ReasonAddedFinalizer, ReasonCannotAddFinalizer
	if add {
		controllerutil.AddFinalizer(obj, w.Finalizer)
	} else {
		verb, done, okReason, failReason = "remove", "removed", ReasonRemovedFinalizer, ReasonCannotRemoveFinalizer
		controllerutil.RemoveFinalizer(obj, w.Finalizer)
	}
	base := client.MergeFromWithOptions(s.Object, client.MergeFromWithOptimisticLock{})
	if err := s.Client.Patch(ctx, obj, base); err != nil {
		err = fmt.Errorf("cannot %s finalizer %q: %w", verb, w.Finalizer, err)
		s.Event(corev1.EventTypeWarning, failReason, err.Error())
		return err
	}
	s.Object.SetFinalizers(obj.GetFinalizers())
	s.Object.SetResourceVersion(obj.GetResourceVersion())
	s.Event(corev1.EventTypeNormal, okReason, done+" finalizer "+w.Finalizer)
	return nil
}
