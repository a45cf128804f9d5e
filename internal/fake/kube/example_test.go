package kube_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
)

// A write whose answer is lost: the update reaches the store, the caller
// sees a timeout, and a retry finds the change already made.
func ExampleFaults() {
	ctx := context.Background()
	faults := kube.NewFaults(1)
	_ = faults.Add(kube.Fault{Verbs: []kube.Verb{kube.VerbUpdate}, Err: kube.Timeout, After: true, Times: 1})
	c := kube.NewClient(kube.ClientOptions{
		Objects: []client.Object{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}},
		Faults:  faults,
	})
	obj := &corev1.ConfigMap{}
	_ = c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "cm"}, obj)
	obj.Data = map[string]string{"vlan": "100"}
	err := c.Update(ctx, obj)
	fmt.Println("timeout:", apierrors.IsTimeout(err))
	stored := &corev1.ConfigMap{}
	_ = c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "cm"}, stored)
	fmt.Println("stored:", stored.Data["vlan"], "injected:", faults.Injected())
	// Output:
	// timeout: true
	// stored: 100 injected: 1
}
