package engine

import (
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// Defaults of a Runner.
const (
	// DefaultResync is how often a Runner lists every object and enqueues it.
	DefaultResync = 5 * time.Minute
	// DefaultWorkers is how many keys a Runner reconciles at once.
	DefaultWorkers = 1
)

// Option configures a Runner.
type Option func(*options) error

type options struct {
	name       string
	workers    int
	resync     time.Duration
	limiter    workqueue.TypedRateLimiter[Key]
	clock      clock.WithTicker
	registerer prometheus.Registerer
	log        *logr.Logger
	recorder   Recorder
}

func defaultOptions() options {
	return options{
		workers:  DefaultWorkers,
		resync:   DefaultResync,
		clock:    clock.RealClock{},
		recorder: NopRecorder{},
	}
}

// WithName names the runner in logs and metrics; the default is the
// lower-case kind of the objects.
func WithName(name string) Option {
	return func(o *options) error {
		if name == "" {
			return fmt.Errorf("runner name is empty: %w", ErrInvalidOption)
		}
		o.name = name
		return nil
	}
}

// WithWorkers sets how many keys are reconciled at once (at least 1).
// One key is never reconciled by two workers at the same time.
func WithWorkers(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("runner needs at least 1 worker, not %d: %w", n, ErrInvalidOption)
		}
		o.workers = n
		return nil
	}
}

// WithResync sets the period of the full resync (list every object and
// enqueue it), which Run also does when it starts. 0 turns resync off: keys
// then come only from Enqueue, e.g. from Watch, whose informer's initial
// list enqueues every object.
func WithResync(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("resync period %s is negative: %w", d, ErrInvalidOption)
		}
		o.resync = d
		return nil
	}
}

// WithRateLimiter sets the backoff of failed keys; the default is
// controller-runtime's: per key, 5ms doubling up to 1000s.
func WithRateLimiter(l workqueue.TypedRateLimiter[Key]) Option {
	return func(o *options) error {
		if l == nil {
			return fmt.Errorf("rate limiter is nil: %w", ErrInvalidOption)
		}
		o.limiter = l
		return nil
	}
}

// WithClock sets the clock of the queue, the resync ticker and the steps'
// State; tests pass k8s.io/utils/clock/testing's FakeClock.
func WithClock(c clock.WithTicker) Option {
	return func(o *options) error {
		if c == nil {
			return fmt.Errorf("clock is nil: %w", ErrInvalidOption)
		}
		o.clock = c
		return nil
	}
}

// WithMetrics registers the runner's metrics on r. Without it the metrics
// are kept but registered nowhere (never on the global registry).
func WithMetrics(r prometheus.Registerer) Option {
	return func(o *options) error {
		o.registerer = r
		return nil
	}
}

// WithLogger sets the logger; by default the runner uses the logger of the
// context given to Run, Drain or ReconcileKey.
func WithLogger(l logr.Logger) Option {
	return func(o *options) error {
		o.log = &l
		return nil
	}
}

// WithRecorder sets where events go; the default drops them.
func WithRecorder(r Recorder) Option {
	return func(o *options) error {
		if r == nil {
			return fmt.Errorf("recorder is nil: %w", ErrInvalidOption)
		}
		o.recorder = r
		return nil
	}
}
