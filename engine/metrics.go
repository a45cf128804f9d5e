package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Outcome is how one reconcile ended; it is the "outcome" metric label.
type Outcome string

// The outcomes of a reconcile.
const (
	OutcomeSuccess  Outcome = "success"
	OutcomeError    Outcome = "error"
	OutcomeRequeue  Outcome = "requeue"
	OutcomeTerminal Outcome = "terminal"
	OutcomePanic    Outcome = "panic"
)

var outcomes = []Outcome{OutcomeSuccess, OutcomeError, OutcomeRequeue, OutcomeTerminal, OutcomePanic}

// Metric names. Every series carries the label controller=<runner name>.
const (
	MetricReconciles = "pxsubstrate_engine_reconciles_total"
	MetricErrors     = "pxsubstrate_engine_reconcile_errors_total"
	MetricDuration   = "pxsubstrate_engine_reconcile_duration_seconds"
	MetricQueueDepth = "pxsubstrate_engine_queue_depth"
)

type metrics struct {
	byOutcome map[Outcome]prometheus.Counter
	errors    *prometheus.CounterVec
	duration  prometheus.Histogram
}

func newMetrics(name string, reg prometheus.Registerer, depth func() float64) (*metrics, error) {
	labels := prometheus.Labels{"controller": name}
	reconciles := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name:        MetricReconciles,
		Help:        "Reconciles by outcome (success, error, requeue, terminal, panic).",
		ConstLabels: labels,
	}, []string{"outcome"})
	m := &metrics{
		byOutcome: make(map[Outcome]prometheus.Counter, len(outcomes)),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        MetricErrors,
			Help:        "Failed reconciles by reason.",
			ConstLabels: labels,
		}, []string{"reason"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:        MetricDuration,
			Help:        "Time spent in one reconcile, status write included.",
			ConstLabels: labels,
			Buckets:     prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
	}
	for _, o := range outcomes {
		m.byOutcome[o] = reconciles.WithLabelValues(string(o))
	}
	gauge := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        MetricQueueDepth,
		Help:        "Keys waiting in the queue, ready to be reconciled.",
		ConstLabels: labels,
	}, depth)
	if reg == nil {
		return m, nil
	}
	var errs []error
	for _, c := range []prometheus.Collector{reconciles, m.errors, m.duration, gauge} {
		if err := reg.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("cannot register metrics of controller %q (is the name used twice?): %w", name, err)
	}
	return m, nil
}

func (m *metrics) observe(o Outcome, reason Reason, took time.Duration) {
	m.byOutcome[o].Inc()
	if o == OutcomeError || o == OutcomeTerminal || o == OutcomePanic {
		m.errors.WithLabelValues(string(reason)).Inc()
	}
	m.duration.Observe(took.Seconds())
}
