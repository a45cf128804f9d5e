package engine_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/engine/internal/widget"
)

// A Runner can be added to a controller-runtime Manager, which then runs it
// only while it holds the leader lease.
var (
	_ manager.Runnable               = (*engine.Runner[*widget.Widget])(nil)
	_ manager.LeaderElectionRunnable = (*engine.Runner[*widget.Widget])(nil)
	_ engine.Runnable                = (*engine.Runner[*widget.Widget])(nil)
	_ engine.Enqueuer                = (*engine.Runner[*widget.Widget])(nil)
)

// TestWatch feeds informer events to a runner: its own kind by key, and a
// secondary kind (ConfigMaps) mapped to the widgets they name.
func TestWatch(t *testing.T) {
	ctx := context.Background()
	c := fakeClient(nil, interceptor.Funcs{}, widget.New(ns, "a", "1"), widget.New(ns, "b", "2"), widget.New(ns, "c", "3"))
	r, err := engine.NewRunner(c, newWidget, engine.Step[*widget.Widget](mirror), engine.WithClock(newClock()))
	if err != nil {
		t.Fatal(err)
	}
	infs := &informertest.FakeInformers{Scheme: newScheme()}
	if _, err := engine.Watch(ctx, infs, &widget.Widget{}, r, nil); err != nil {
		t.Fatal(err)
	}
	byLabel := func(o client.Object) []engine.Key {
		if name := o.GetLabels()["widget"]; name != "" {
			return []engine.Key{key(name)}
		}
		return nil
	}
	if _, err := engine.Watch(ctx, infs, &corev1.ConfigMap{}, r, byLabel); err != nil {
		t.Fatal(err)
	}
	widgets, err := infs.FakeInformerFor(ctx, &widget.Widget{})
	if err != nil {
		t.Fatal(err)
	}
	configMaps, err := infs.FakeInformerFor(ctx, &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	widgets.Add(widget.New(ns, "a", "1"))
	configMaps.Update(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x", Labels: map[string]string{"widget": "b"}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x"}},
	)
	configMaps.Delete(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "y"}})
	n, err := r.Drain(ctx, 10)
	if err != nil || n != 2 {
		t.Fatalf("Drain() = %d, %v; want the 2 keys the events named", n, err)
	}
	got := map[string]string{}
	for _, name := range []string{"a", "b", "c"} {
		w, _ := getWidget(t, c, name)
		got[name] = w.Status.Mirror
	}
	if diff := cmp.Diff(map[string]string{"a": "1", "b": "2", "c": ""}, got); diff != "" {
		t.Errorf("mirrors after the events: -want, +got:\n%s", diff)
	}
}
