package engine

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ErrHalt stops a Sequence without an error: the steps after the one that
// returned it do not run, enclosing Sequences stop too, and the Runner treats
// the reconcile as a success (status is still written). Return it wrapped or
// bare: `return engine.Result{}, engine.ErrHalt`.
var ErrHalt = errors.New("halt the remaining steps")

// ErrNotConverged says Drain hit its reconcile limit with work still queued.
var ErrNotConverged = errors.New("queue did not converge")

// ErrInvalidOption says a Runner option cannot be used as given.
var ErrInvalidOption = errors.New("invalid runner option")

// ErrInvalidStep says a step's configuration cannot work.
var ErrInvalidStep = errors.New("invalid step")

// Terminal marks err as permanent: the Runner reports it (log, metrics,
// status written) but never retries the key until something enqueues it
// again. Terminal(nil) is nil.
func Terminal(err error) error {
	if err == nil {
		return nil
	}
	return &terminalError{err: err}
}

// IsTerminal reports whether err, or an error it wraps, was marked Terminal.
func IsTerminal(err error) bool {
	var t *terminalError
	return errors.As(err, &t)
}

type terminalError struct{ err error }

func (e *terminalError) Error() string { return "terminal error: " + e.err.Error() }
func (e *terminalError) Unwrap() error { return e.err }

// WithReason attaches a reason to err; the Runner uses it as the "reason"
// label of its error metric. WithReason(r, nil) is nil.
func WithReason(reason Reason, err error) error {
	if err == nil {
		return nil
	}
	return &reasonError{reason: reason, err: err}
}

type reasonError struct {
	reason Reason
	err    error
}

func (e *reasonError) Error() string { return e.err.Error() }
func (e *reasonError) Unwrap() error { return e.err }

// ReasonOf returns the reason of err: the one given to WithReason, else the
// API status reason (Conflict, NotFound, Timeout, ...), else "Panic" for a
// recovered panic, else "Unknown".
func ReasonOf(err error) Reason {
	var r *reasonError
	if errors.As(err, &r) {
		return r.reason
	}
	var p *PanicError
	if errors.As(err, &p) {
		return ReasonPanic
	}
	if api := apierrors.ReasonForError(err); api != "" {
		return Reason(api)
	}
	return ReasonUnknown
}

// PanicError is what a panicking step turns into.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("step panicked: %v", e.Value) }

// Unwrap returns the panic value when it was an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
