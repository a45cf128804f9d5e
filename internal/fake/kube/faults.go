package kube

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// Verb names an API call as Faults sees it.
type Verb string

// The verbs Faults can fail. A subresource call is "<verb>/<subresource>".
const (
	VerbGet          Verb = "get"
	VerbList         Verb = "list"
	VerbCreate       Verb = "create"
	VerbUpdate       Verb = "update"
	VerbPatch        Verb = "patch"
	VerbDelete       Verb = "delete"
	VerbDeleteAllOf  Verb = "deletecollection"
	VerbStatusUpdate Verb = "update/status"
	VerbStatusPatch  Verb = "patch/status"
)

// ErrorKind is the API error an injected fault returns.
type ErrorKind string

// The errors Faults can inject, each a real *apierrors.StatusError.
const (
	// Conflict is 409 Conflict, as for a stale resourceVersion.
	Conflict ErrorKind = "Conflict"
	// Timeout is 504 Timeout.
	Timeout ErrorKind = "Timeout"
	// NotFound is 404 NotFound, even if the object exists.
	NotFound ErrorKind = "NotFound"
	// Unavailable is 503 ServiceUnavailable.
	Unavailable ErrorKind = "ServiceUnavailable"
)

// ErrInvalidFault says a Fault cannot be used as given.
var ErrInvalidFault = errors.New("invalid fault")

// Call is one API call as Fault.Match sees it.
type Call struct {
	Verb Verb
	// GVK is the kind of the object; for list and deletecollection it is the
	// kind of the items.
	GVK schema.GroupVersionKind
	// Key is the object's namespace and name; empty for list and
	// deletecollection.
	Key client.ObjectKey
	// Object is the object the caller passed; nil for list.
	Object client.Object
}

// Fault describes which calls fail and how.
type Fault struct {
	// Verbs the fault applies to; empty means every verb.
	Verbs []Verb
	// Match narrows the calls the fault applies to; nil means every call.
	// It must not call methods of the Faults it belongs to.
	Match func(Call) bool
	// Err is the error returned.
	Err ErrorKind
	// Rate is the chance, in [0, 1], that a matching call fails;
	// 0 means every matching call fails.
	Rate float64
	// After lets the call reach the store before the error is returned, as
	// when the API server applied a write but its answer was lost.
	After bool
	// Times caps how often the fault fires; 0 means no cap.
	Times int
}

type entry struct {
	Fault
	fired int
}

// Faults decides, call by call, which API calls fail. It is safe for
// concurrent use; rules can be changed while clients use it. Its random
// choices come from a seeded generator, so a single-threaded run repeats
// exactly for the same seed.
type Faults struct {
	mu       sync.Mutex
	rng      *rand.Rand
	entries  []*entry
	injected int
}

// NewFaults returns a Faults with no rules whose random choices derive from seed.
func NewFaults(seed uint64) *Faults {
	return &Faults{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Add appends a rule; the first matching rule whose dice roll fails a call wins.
func (f *Faults) Add(fault Fault) error {
	if fault.Rate < 0 || fault.Rate > 1 {
		return fmt.Errorf("cannot add fault: rate %v is outside [0, 1]: %w", fault.Rate, ErrInvalidFault)
	}
	if fault.Times < 0 {
		return fmt.Errorf("cannot add fault: times %d is negative: %w", fault.Times, ErrInvalidFault)
	}
	switch fault.Err {
	case Conflict, Timeout, NotFound, Unavailable:
	default:
		return fmt.Errorf("cannot add fault: unknown error kind %q (use Conflict, Timeout, NotFound or Unavailable): %w",
			fault.Err, ErrInvalidFault)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.entries = append(f.entries, &entry{Fault: fault})
	return nil
}

// Set replaces every rule with faults.
func (f *Faults) Set(faults ...Fault) error {
	f.Clear()
	for _, fault := range faults {
		if err := f.Add(fault); err != nil {
			f.Clear()
			return err
		}
	}
	return nil
}

// Clear removes every rule; later calls all succeed.
func (f *Faults) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.entries = nil
}

// Injected returns how many calls have been failed so far.
func (f *Faults) Injected() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.injected
}

// decide returns the error to inject into c, if any, and whether the call
// must run first.
func (f *Faults) decide(c Call) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.entries {
		if !e.applies(c) {
			continue
		}
		if e.Rate > 0 && f.rng.Float64() >= e.Rate {
			continue
		}
		e.fired++
		f.injected++
		return e.After, newError(e.Err, c)
	}
	return false, nil
}

func (e *entry) applies(c Call) bool {
	if e.Times > 0 && e.fired >= e.Times {
		return false
	}
	if len(e.Verbs) > 0 && !containsVerb(e.Verbs, c.Verb) {
		return false
	}
	return e.Match == nil || e.Match(c)
}

func containsVerb(vs []Verb, v Verb) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

func newError(kind ErrorKind, c Call) error {
	plural, _ := meta.UnsafeGuessKindToResource(c.GVK)
	gr := plural.GroupResource()
	switch kind {
	case Conflict:
		return apierrors.NewConflict(gr, c.Key.Name, errors.New("injected fault: the object has been modified"))
	case NotFound:
		return apierrors.NewNotFound(gr, c.Key.Name)
	case Timeout:
		return apierrors.NewTimeoutError(fmt.Sprintf("injected fault: %s %s %s timed out", c.Verb, gr, c.Key), 0)
	default:
		return apierrors.NewServiceUnavailable(fmt.Sprintf("injected fault: %s %s %s", c.Verb, gr, c.Key))
	}
}

type kindResolver interface {
	GroupVersionKindFor(obj runtime.Object) (schema.GroupVersionKind, error)
}

// run fails or performs one call.
func (f *Faults) run(r kindResolver, verb Verb, obj client.Object, do func() error) error {
	c := Call{Verb: verb, Object: obj}
	if obj != nil {
		c.Key = client.ObjectKeyFromObject(obj)
		c.GVK, _ = r.GroupVersionKindFor(obj)
	}
	return f.finish(c, do)
}

func (f *Faults) finish(c Call, do func() error) error {
	after, injected := f.decide(c)
	if injected == nil {
		return do()
	}
	if after {
		if err := do(); err != nil {
			return err
		}
	}
	return injected
}

func listCall(r kindResolver, verb Verb, list runtime.Object) Call {
	gvk, _ := r.GroupVersionKindFor(list)
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	return Call{Verb: verb, GVK: gvk}
}

// Funcs returns interceptor hooks that apply the rules to every call of the
// client they wrap.
func (f *Faults) Funcs() interceptor.Funcs {
	return interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			gvk, _ := c.GroupVersionKindFor(obj)
			return f.finish(Call{Verb: VerbGet, GVK: gvk, Key: key, Object: obj}, func() error { return c.Get(ctx, key, obj, opts...) })
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			return f.finish(listCall(c, VerbList, list), func() error { return c.List(ctx, list, opts...) })
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			return f.run(c, VerbCreate, obj, func() error { return c.Create(ctx, obj, opts...) })
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			return f.run(c, VerbUpdate, obj, func() error { return c.Update(ctx, obj, opts...) })
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			return f.run(c, VerbPatch, obj, func() error { return c.Patch(ctx, obj, p, opts...) })
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			return f.run(c, VerbDelete, obj, func() error { return c.Delete(ctx, obj, opts...) })
		},
		DeleteAllOf: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteAllOfOption) error {
			call := Call{Verb: VerbDeleteAllOf, Object: obj}
			call.GVK, _ = c.GroupVersionKindFor(obj)
			return f.finish(call, func() error { return c.DeleteAllOf(ctx, obj, opts...) })
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			return f.run(c, Verb("update/"+sub), obj, func() error { return c.SubResource(sub).Update(ctx, obj, opts...) })
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			return f.run(c, Verb("patch/"+sub), obj, func() error { return c.SubResource(sub).Patch(ctx, obj, p, opts...) })
		},
	}
}
