package kubegateway_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/kubegateway"
)

func ExampleCandidates() {
	ready := map[string]string{kubegateway.ReadyLabel("pxtenant"): "true"}
	nodes := []*corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "b", Labels: ready, Annotations: map[string]string{kubegateway.ChassisAnnotation: "ch-shared"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: ready, Annotations: map[string]string{kubegateway.ChassisAnnotation: "ch-shared"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "c", Annotations: map[string]string{kubegateway.ChassisAnnotation: "ch-c"}}},
	}
	fmt.Println(kubegateway.Candidates("pxtenant", nodes))
	// Output:
	// [{a ch-shared}]
}

func ExampleCondition() {
	nbDown := fmt.Errorf("dial: %w", ovngateway.ErrNBUnavailable)
	if _, ok := kubegateway.Condition(ovngateway.Outcome{}, nbDown, false); !ok {
		fmt.Println("within the grace: keep the condition the object carries")
	}
	c, _ := kubegateway.Condition(ovngateway.Outcome{}, nbDown, true)
	fmt.Println(c.Status, c.Reason)
	// Output:
	// within the grace: keep the condition the object carries
	// False NBUnavailable
}
