package engine

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Step is one piece of level-triggered reconcile logic for objects of type T.
//
// Reconcile reads the world, compares it with s.Object's spec and acts so the
// two converge. It may change s.Object's status in memory (the Runner writes
// it back when it changed); it persists any other change through s.Client
// itself. It must be idempotent: it is called again and again for the same
// object, after restarts, with no memory of earlier calls.
type Step[T client.Object] interface {
	Reconcile(ctx context.Context, s *State[T]) (Result, error)
}

// StepFunc adapts a function to a Step.
type StepFunc[T client.Object] func(ctx context.Context, s *State[T]) (Result, error)

// Reconcile calls f.
func (f StepFunc[T]) Reconcile(ctx context.Context, s *State[T]) (Result, error) {
	return f(ctx, s)
}

// Validator is implemented by steps that can check their own configuration.
// NewRunner calls Validate on its step, which validates the steps it holds.
type Validator interface {
	Validate() error
}

// State is what a Step works on during one reconcile of one object.
type State[T client.Object] struct {
	// Object is the working copy of the object as read at the start of the
	// reconcile. Steps change its status in memory.
	Object T
	// Client reads and writes the API.
	Client client.Client
	// Clock tells the time; a fake clock makes steps deterministic.
	Clock clock.Clock
	// Log carries the controller name and the object key.
	Log logr.Logger
	// Recorder receives events about Object.
	Recorder Recorder

	// hold is what HoldStatus asked for; zero writes the status as usual.
	hold time.Duration
}

// HoldStatus says that the status this pass leaves is a passing one: a step
// has just started something that another controller finishes, and the
// status will change again as soon as it does. The runner then does not
// write the status of this pass and looks at the object again after d at
// the latest, so the next pass writes the settled status once instead of
// the passing one followed by it. A pass that fails writes its status
// anyway, so error conditions still reach the object. The longest d of a
// pass wins; d <= 0 is ignored. A step must hold only on a transition that
// happens once (an object it has just created), or the status of an
// object that never settles would never be written.
func (s *State[T]) HoldStatus(d time.Duration) {
	s.hold = max(s.hold, d)
}

// NewState returns a State for obj with a real clock, a logger that discards
// everything and a NopRecorder; set the fields to change them. Runners build
// their own States; this is for calling steps directly.
func NewState[T client.Object](obj T, c client.Client) *State[T] {
	return &State[T]{Object: obj, Client: c, Clock: clock.RealClock{}, Log: logr.Discard(), Recorder: NopRecorder{}}
}

// Event records an event about the object.
func (s *State[T]) Event(eventType string, reason Reason, message string) {
	s.Recorder.Event(s.Object, eventType, reason, message)
}

// SetCondition is SetCondition with the object's generation and the state's clock.
func (s *State[T]) SetCondition(conds *[]metav1.Condition, typ string, status metav1.ConditionStatus, reason, message string) bool {
	return setCondition(conds, s.Clock.Now(), s.Object.GetGeneration(), typ, status, reason, message)
}

// SetReady is SetReady with the object's generation and the state's clock.
func (s *State[T]) SetReady(conds *[]metav1.Condition, subTypes ...string) bool {
	return setReady(conds, s.Clock.Now(), s.Object.GetGeneration(), subTypes)
}

// Result tells the Runner when to look at an object again, with
// controller-runtime's semantics: a zero Result means "done until something
// changes or the next resync"; RequeueAfter > 0 means "reconcile again after
// this long". There is deliberately no Requeue flag: return an error to retry
// with backoff.
type Result struct {
	RequeueAfter time.Duration
}

// Merge combines two results: the smallest non-zero RequeueAfter wins.
func (r Result) Merge(o Result) Result {
	switch {
	case r.RequeueAfter <= 0:
		return Result{RequeueAfter: max(o.RequeueAfter, 0)}
	case o.RequeueAfter <= 0:
		return r
	default:
		return Result{RequeueAfter: min(r.RequeueAfter, o.RequeueAfter)}
	}
}

// IsZero reports whether r asks for no requeue.
func (r Result) IsZero() bool {
	return r.RequeueAfter <= 0
}
