package widget_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/pxsubstrate/pxsubstrate/engine/internal/widget"
)

func TestDeepCopyIsIndependent(t *testing.T) {
	w := widget.New("ns", "a", "v")
	w.Finalizers = []string{"x.io/y"}
	w.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue}}
	l := &widget.List{Items: []widget.Widget{*w}}
	c := w.DeepCopyObject().(*widget.Widget)
	lc := l.DeepCopyObject().(*widget.List)
	if diff := cmp.Diff(w, c); diff != "" {
		t.Fatalf("copy differs: %s", diff)
	}
	c.Finalizers[0], c.Status.Conditions[0].Status = "changed", metav1.ConditionFalse
	lc.Items[0].Status.Conditions[0].Reason = "changed"
	if w.Finalizers[0] != "x.io/y" || w.Status.Conditions[0].Status != metav1.ConditionTrue ||
		l.Items[0].Status.Conditions[0].Reason != "" {
		t.Error("changing a copy changed the original")
	}
	if (*widget.Widget)(nil).DeepCopy() != nil {
		t.Error("DeepCopy of nil must be nil")
	}
}

func TestScheme(t *testing.T) {
	s := runtime.NewScheme()
	if err := widget.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []runtime.Object{&widget.Widget{}, &widget.List{}} {
		gvks, _, err := s.ObjectKinds(obj)
		if err != nil || len(gvks) != 1 || gvks[0].GroupVersion() != widget.GroupVersion {
			t.Errorf("ObjectKinds(%T) = %v, %v", obj, gvks, err)
		}
	}
}

func ExampleNew() {
	w := widget.New("default", "a", "red")
	fmt.Println(w.Namespace, w.Name, w.Spec.Value)
	// Output: default a red
}
