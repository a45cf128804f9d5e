package kubenetgateway_test

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pxsubstrate/pxsubstrate/internal/controller/kubenetgateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/kubegateway"
)

// A Node that becomes ready on one provider network concerns only the
// networks of that provider network.
func ExampleChangedProviders() {
	before := &metav1.ObjectMeta{Name: "node-1", Annotations: map[string]string{kubegateway.ChassisAnnotation: "ch-1"}}
	after := before.DeepCopy()
	after.Labels = map[string]string{kubegateway.ReadyLabel("pxtenant"): "true"}
	fmt.Println(kubenetgateway.ChangedProviders([]string{"pxtenant", "pxother"}, before, after))
	// Output: [pxtenant]
}
