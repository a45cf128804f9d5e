package engine_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/engine/internal/widget"
	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
)

func ExampleSequence() {
	type cm = *corev1.ConfigMap
	say := func(word string, res engine.Result, err error) engine.Step[cm] {
		return engine.StepFunc[cm](func(_ context.Context, s *engine.State[cm]) (engine.Result, error) {
			s.Object.Data["said"] += word + " "
			return res, err
		})
	}
	seq := engine.Sequence[cm]{
		say("check", engine.Result{RequeueAfter: time.Minute}, nil),
		say("allocate", engine.Result{RequeueAfter: 30 * time.Second}, nil),
		say("wait", engine.Result{}, engine.ErrHalt), // stop here, quietly
		say("never", engine.Result{}, nil),
	}
	s := engine.NewState(&corev1.ConfigMap{Data: map[string]string{}}, nil)
	res, err := seq.Reconcile(context.Background(), s)
	fmt.Println(strings.TrimSpace(s.Object.Data["said"]))
	fmt.Println(res.RequeueAfter, err)
	// Output:
	// check allocate wait
	// 30s halt the remaining steps
}

func ExampleWithFinalizer() {
	ctx := context.Background()
	c := kube.NewClient(kube.ClientOptions{Objects: []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "net"}},
	}})
	externalGone := false
	step := engine.WithFinalizer[*corev1.ConfigMap]{
		Finalizer: "example.com/cleanup",
		ReadyToClear: func(context.Context, *engine.State[*corev1.ConfigMap]) (bool, error) {
			return externalGone, nil
		},
		Step: engine.StepFunc[*corev1.ConfigMap](func(context.Context, *engine.State[*corev1.ConfigMap]) (engine.Result, error) {
			return engine.Result{}, nil // create or release the external thing here
		}),
	}
	reconcile := func() {
		obj := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "tenant", Name: "net"}, obj); err != nil {
			fmt.Println("object gone")
			return
		}
		res, err := step.Reconcile(ctx, engine.NewState(obj, client.Client(c)))
		stored := &corev1.ConfigMap{}
		if getErr := c.Get(ctx, client.ObjectKeyFromObject(obj), stored); getErr != nil {
			fmt.Println("deleted", res.RequeueAfter, err)
			return
		}
		fmt.Println(stored.Finalizers, res.RequeueAfter, err)
	}
	reconcile() // live: the finalizer is stored first
	_ = c.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "net"}})
	reconcile() // deleting, external thing still there: keep it, look again later
	externalGone = true
	reconcile() // ready: the finalizer goes, and so does the object
	reconcile()
	// Output:
	// [example.com/cleanup] 0s <nil>
	// [example.com/cleanup] 30s <nil>
	// deleted 0s <nil>
	// object gone
}

func ExampleRunner() {
	ctx := context.Background()
	c := kube.NewClient(kube.ClientOptions{
		Scheme:     newScheme(),
		WithStatus: []client.Object{&widget.Widget{}},
		Objects:    []client.Object{widget.New("default", "a", "red"), widget.New("default", "b", "blue")},
	})
	mirror := engine.StepFunc[*widget.Widget](func(_ context.Context, s *engine.State[*widget.Widget]) (engine.Result, error) {
		s.Object.Status.Mirror = s.Object.Spec.Value
		return engine.Result{}, nil
	})
	r, err := engine.NewRunner(c, func() *widget.Widget { return &widget.Widget{} }, engine.Step[*widget.Widget](mirror))
	if err != nil {
		fmt.Println(err)
		return
	}
	// A test or simulator drives the queue itself; a controller calls r.Run(ctx).
	if err := r.Resync(ctx); err != nil {
		fmt.Println(err)
		return
	}
	n, err := r.Drain(ctx, 100)
	fmt.Println("reconciles:", n, err)
	list := &widget.List{}
	_ = c.List(ctx, list)
	for _, w := range list.Items {
		fmt.Println(w.Name, w.Status.Mirror)
	}
	// Output:
	// reconciles: 2 <nil>
	// a red
	// b blue
}
