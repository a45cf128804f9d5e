package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/engine/internal/widget"
	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
)

const ns = "default"

var errBoom = errors.New("boom")

// epoch is the start time of every fake clock in these tests.
var epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func newScheme() *runtime.Scheme {
	s := kube.Scheme()
	if err := widget.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

func newWidget() *widget.Widget { return &widget.Widget{} }

// fakeClient is the fake API with Widget's status subresource.
func fakeClient(f *kube.Faults, hooks interceptor.Funcs, objs ...client.Object) client.WithWatch {
	return kube.NewClient(kube.ClientOptions{
		Scheme:     newScheme(),
		Objects:    objs,
		WithStatus: []client.Object{&widget.Widget{}},
		Faults:     f,
		Hooks:      hooks,
	})
}

func newClock() *clocktesting.FakeClock { return clocktesting.NewFakeClock(epoch) }

// mirror is the toy step: status.mirror follows spec.value.
var mirror = engine.StepFunc[*widget.Widget](func(_ context.Context, s *engine.State[*widget.Widget]) (engine.Result, error) {
	s.Object.Status.Mirror = s.Object.Spec.Value
	s.Object.Status.ObservedGeneration = s.Object.Generation
	return engine.Result{}, nil
})

func getWidget(t testing.TB, c client.Client, name string) (*widget.Widget, bool) {
	t.Helper()
	w := &widget.Widget{}
	err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, w)
	if err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, false
		}
		t.Fatalf("Get(%s): %v", name, err)
	}
	return w, true
}

// deleting returns a widget that is being deleted and holds finalizers.
func deleting(name string, finalizers ...string) *widget.Widget {
	w := widget.New(ns, name, "v")
	now := metav1.NewTime(epoch)
	w.DeletionTimestamp = &now
	w.Finalizers = finalizers
	return w
}

func key(name string) engine.Key { return client.ObjectKey{Namespace: ns, Name: name} }
