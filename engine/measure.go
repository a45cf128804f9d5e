package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LabelReason is the label Measured gives a failed reconcile's reason.
const LabelReason = "reason"

// Measured records every reconcile of Step in the caller's metrics: its
// duration, and for one that fails its reason (ReasonOf), once. It returns
// what Step returned, unchanged. ErrHalt is not a failure, as for the
// Runner. A panic in Step is not recorded here; the Runner reports it.
//
// The Runner's own pxsubstrate_engine_* metrics cover the whole reconcile of
// every runner; Measured is for the metrics a controller promises under its
// own names, around the steps it chooses.
type Measured[T client.Object] struct {
	// Step is the measured step.
	Step Step[T]
	// Duration observes the seconds each reconcile of Step took; nil
	// observes nothing.
	Duration prometheus.Observer
	// Errors counts failed reconciles by the label LabelReason, its only
	// label; nil counts nothing.
	Errors *prometheus.CounterVec
}

// Reconcile runs Step and records it.
func (m Measured[T]) Reconcile(ctx context.Context, s *State[T]) (Result, error) {
	start := time.Now()
	res, err := m.Step.Reconcile(ctx, s)
	if m.Duration != nil {
		m.Duration.Observe(time.Since(start).Seconds())
	}
	if err != nil && m.Errors != nil && !errors.Is(err, ErrHalt) {
		c, cerr := m.Errors.GetMetricWith(prometheus.Labels{LabelReason: string(ReasonOf(err))})
		if cerr != nil {
			s.Log.Error(cerr, "cannot count a failed reconcile")
		} else {
			c.Inc()
		}
	}
	return res, err
}

// Validate checks that there is a Step and something to record, that
// Errors has the label LabelReason, and validates Step.
func (m Measured[T]) Validate() error {
	var errs []error
	if m.Step == nil {
		errs = append(errs, fmt.Errorf("measured step is nil: %w", ErrInvalidStep))
	} else if err := validateStep(m.Step); err != nil {
		errs = append(errs, fmt.Errorf("measured step: %w", err))
	}
	if m.Duration == nil && m.Errors == nil {
		errs = append(errs, fmt.Errorf("measured step records nothing: set Duration, Errors or both: %w", ErrInvalidStep))
	}
	if m.Errors != nil {
		if _, err := m.Errors.CurryWith(prometheus.Labels{LabelReason: string(ReasonUnknown)}); err != nil {
			errs = append(errs, fmt.Errorf("measured step's Errors needs the label %q: %v: %w", LabelReason, err, ErrInvalidStep))
		}
	}
	return errors.Join(errs...)
}
