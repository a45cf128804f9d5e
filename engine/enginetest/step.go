package enginetest

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/pxsubstrate/pxsubstrate/engine"
)

// StepTest is a table test of one engine.Step: each case gives the
// objects the API holds and the object reconciled, and says what the step
// must leave behind: its writes, its events and its result. The API is
// controller-runtime's fake client (real state, not a call recorder); the
// step is called once, directly, as a runner calls it, with a State whose
// Recorder keeps the events.
type StepTest[T client.Object] struct {
	// Scheme knows every kind of the cases' objects.
	Scheme *runtime.Scheme
	// StatusSubresources are the kinds whose status is a subresource, as
	// the API server serves them (fake.ClientBuilder.WithStatusSubresource).
	StatusSubresources []client.Object
	// New builds the step of a case on its Rig. It may build what the
	// case needs beside the API (a Proxmox VE fake), cleaned up with t.
	New func(t *testing.T, r Rig) engine.Step[T]
	// Cases run as subtests, in name order.
	Cases map[string]StepCase[T]
}

// Rig is what a case's step works on: the API, whose writes the case
// counts, and the Recorder the State records into, for a step that also
// records on other objects (a controller's own recorder).
type Rig struct {
	Client   client.Client
	Recorder engine.Recorder
}

// StepCase is one case of a StepTest.
type StepCase[T client.Object] struct {
	// Inputs.

	// Given are the objects the API holds when the case starts.
	Given []client.Object
	// Object names the object reconciled by its type and key (a bare
	// object with a namespace and a name will do): Given holds it, and
	// the step gets it as read from the API after Prepare, as a runner
	// reads it.
	Object T
	// Prepare, when set, changes the world before the step runs (a delete
	// that leaves Object terminating, a state beside the API that New
	// built); it runs after New, and its writes are not counted.
	Prepare func(t *testing.T, c client.Client)
	// Hooks, when set, run instead of the API's own methods, to fail a
	// call or change an answer (controller-runtime's interceptor).
	Hooks *interceptor.Funcs
	// Now is the State's clock; zero is the current time, frozen.
	Now time.Time

	// Side effects.

	// ExpectWrites are the writes the step made, in order.
	ExpectWrites []Write
	// ExpectEvents are the events recorded, in order.
	ExpectEvents []Event

	// Outputs.

	// ExpectResult is the step's result.
	ExpectResult engine.Result
	// ExpectErr is a part of the step's error; "" expects none.
	ExpectErr string
	// Verify, when set, checks the API after the step: the state the
	// writes left, which ExpectWrites does not show.
	Verify func(t *testing.T, c client.Client)
}

// Write is one write a step made that the API accepted: its verb
// (create, update, patch or delete), Subresource ("status" for a status
// update or patch, else ""), the object's kind and key.
type Write struct {
	Verb, Subresource string
	Kind              string
	Key               client.ObjectKey
}

// Run runs every case as a subtest.
func (st StepTest[T]) Run(t *testing.T) {
	t.Helper()
	if st.New == nil || st.Scheme == nil {
		t.Fatal("enginetest.StepTest needs a Scheme and New")
	}
	for _, name := range slices.Sorted(maps.Keys(st.Cases)) {
		t.Run(name, func(t *testing.T) { st.run(t, st.Cases[name]) })
	}
}

func (st StepTest[T]) run(t *testing.T, c StepCase[T]) {
	t.Helper()
	ctx := context.Background()
	api := fake.NewClientBuilder().WithScheme(st.Scheme).WithObjects(c.Given...).WithStatusSubresource(st.StatusSubresources...).Build()
	target := api
	if c.Hooks != nil {
		target = interceptor.NewClient(api, *c.Hooks)
	}
	var writes []Write
	counted := interceptor.NewClient(target, recordWrites(&writes))
	rec := &Recorder{}
	step := st.New(t, Rig{Client: counted, Recorder: rec})
	if c.Prepare != nil {
		c.Prepare(t, api)
	}
	obj, ok := c.Object.DeepCopyObject().(T)
	if !ok {
		t.Fatalf("%T does not copy to itself", c.Object)
	}
	if err := api.Get(ctx, client.ObjectKeyFromObject(c.Object), obj); err != nil {
		t.Fatalf("cannot read the object reconciled (Given must hold it): %v", err)
	}
	now := c.Now
	if now.IsZero() {
		now = time.Now()
	}
	s := &engine.State[T]{Object: obj, Client: counted, Clock: clocktesting.NewFakeClock(now), Log: logr.Discard(), Recorder: rec}
	res, err := step.Reconcile(ctx, s)
	switch {
	case c.ExpectErr == "" && err != nil:
		t.Errorf("the step failed: %v", err)
	case c.ExpectErr != "" && (err == nil || !strings.Contains(err.Error(), c.ExpectErr)):
		t.Errorf("the step returned the error %v, want one with %q", err, c.ExpectErr)
	}
	if diff := cmp.Diff(c.ExpectResult, res); diff != "" {
		t.Errorf("result -want +got:\n%s", diff)
	}
	if diff := cmp.Diff(c.ExpectWrites, writes, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("writes -want +got:\n%s", diff)
	}
	if diff := cmp.Diff(c.ExpectEvents, rec.Events(), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("events -want +got:\n%s", diff)
	}
	if c.Verify != nil {
		c.Verify(t, api)
	}
}

// recordWrites appends each write the API accepts to writes.
func recordWrites(writes *[]Write) interceptor.Funcs {
	note := func(c client.Client, verb, sub string, obj client.Object, err error) error {
		if err == nil {
			*writes = append(*writes, Write{Verb: verb, Subresource: sub, Kind: kindOf(c, obj), Key: client.ObjectKeyFromObject(obj)})
		}
		return err
	}
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			return note(c, "create", "", obj, c.Create(ctx, obj, opts...))
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			return note(c, "update", "", obj, c.Update(ctx, obj, opts...))
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			return note(c, "patch", "", obj, c.Patch(ctx, obj, patch, opts...))
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			return note(c, "delete", "", obj, c.Delete(ctx, obj, opts...))
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			return note(c, "update", sub, obj, c.SubResource(sub).Update(ctx, obj, opts...))
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			return note(c, "patch", sub, obj, c.SubResource(sub).Patch(ctx, obj, patch, opts...))
		},
	}
}

// kindOf is obj's kind as c's scheme names it.
func kindOf(c client.Client, obj client.Object) string {
	if gvk, err := c.GroupVersionKindFor(obj); err == nil {
		return gvk.Kind
	}
	return obj.GetObjectKind().GroupVersionKind().Kind
}
