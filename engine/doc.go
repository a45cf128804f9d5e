// Package engine is a small, composable, level-triggered reconcile SDK: the
// loop every pxsubstrate controller is built on. Its core works over any
// controller-runtime client.Client (a real one, a cached one or the fake one)
// and client-go's typed rate-limiting work queue; it needs no
// controller-runtime Manager, although a Runner can be added to one.
//
// # Steps
//
// A Step reconciles one object: it reads the world, compares it with the
// object's spec, acts, and records what it saw in the object's status (in
// memory). It returns a Result (when to look again) and an error.
//
//	mirror := engine.StepFunc[*v1.Thing](func(ctx context.Context, s *engine.State[*v1.Thing]) (engine.Result, error) {
//		s.Object.Status.Seen = s.Object.Spec.Want
//		s.SetCondition(&s.Object.Status.Conditions, "Synced", metav1.ConditionTrue, "Mirrored", "")
//		return engine.Result{}, nil
//	})
//
// Result has controller-runtime's meaning: zero is "done until something
// changes", RequeueAfter > 0 is "look again after this long"; there is no
// Requeue flag (return an error to retry with backoff). Errors wrapped with
// Terminal are reported but never retried. ErrHalt stops a Sequence quietly.
//
// # Composition
//
// Steps compose as values:
//
//	step := engine.Sequence[*v1.Thing]{
//		validate,
//		engine.WithFinalizer[*v1.Thing]{
//			Finalizer:    "example.com/thing",
//			ReadyToClear: externalGone,
//			Step:         engine.Sequence[*v1.Thing]{ensureExternal, mirror},
//		},
//	}
//
// Sequence runs steps in order, stops at the first error and merges results
// (the smallest non-zero RequeueAfter wins). WithFinalizer adds its finalizer
// before the guarded step runs on a live object and removes it, during
// deletion, only when ReadyToClear says so; Live runs its step only on an
// object that is not being deleted. SetCondition and SetReady keep status
// conditions with k8s.io/apimachinery/pkg/api/meta; the steps
// ObserveGeneration and SummarizeReady stamp status.observedGeneration and
// derive Ready from sub-conditions.
//
// Steps of one reconcile that share what they learned do so through a Pass:
// WithPass gives every reconcile a fresh Pass[T, P], the State plus a value
// of the caller's type P, and runs a PassStep (a PassSequence of them,
// typically) on it. Lift puts a plain Step into a pass. Measured records
// each reconcile of a step (duration, failures by reason) in the caller's
// metrics. A step tree is a value: build it once and give it to NewRunner,
// which validates all of it before the first reconcile. docs/engine.md
// walks through the network controller, which is built this way.
//
// # Usage
//
// A Runner drives a step over every object of a kind:
//
//	r, err := engine.NewRunner(c, func() *v1.Thing { return &v1.Thing{} }, step,
//		engine.WithWorkers(4), engine.WithMetrics(registry))
//	...
//	err = r.Run(ctx)
//
// It lists every object at start and every resync period (5 minutes by
// default) and enqueues their keys; Watch adds informer events as hints. For
// each key it reads the object (a missing object is dropped), runs the step
// on a working copy, and writes the status back (Status().Update, so a stale
// copy fails with a Conflict and the key is retried with backoff) only when
// the step changed it; status is written even when the step failed, so error
// conditions reach the object. Then it applies the queue discipline: an error is retried with
// per-key exponential backoff unless terminal; RequeueAfter forgets the
// backoff and adds the key after the delay; success forgets the key. One key
// is never reconciled by two workers at once; panics become errors; on
// context cancel the workers finish the key in hand and Run returns.
//
// Tests and simulators can skip Run: Enqueue or Resync, then Drain
// reconciles until nothing is due on the runner's clock; with a fake clock,
// step the clock to NextDue and Drain again. ReconcileKey reconciles one
// key directly.
//
// RunElected runs runners only while holding a coordination.k8s.io Lease.
// Metrics named pxsubstrate_engine_* are registered on the Registerer given
// with WithMetrics, never on a global one.
//
// The engine never caches objects itself, never writes spec, never retries a
// terminal error, and never releases a lease while a step runs.
package engine
