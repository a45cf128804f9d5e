package v1alpha2_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	ipamv1alpha2 "github.com/pxsubstrate/pxsubstrate/api/ipam/v1alpha2"
)

func ExampleAddToScheme() {
	s := runtime.NewScheme()
	if err := ipamv1alpha2.AddToScheme(s); err != nil {
		panic(err)
	}
	gvks, _, _ := s.ObjectKinds(&ipamv1alpha2.InClusterIPPool{})
	fmt.Println(gvks[0])
	// Output: ipam.cluster.x-k8s.io/v1alpha2, Kind=InClusterIPPool
}
