package v1_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
)

func ExampleAddToScheme() {
	s := runtime.NewScheme()
	if err := kubeovnv1.AddToScheme(s); err != nil {
		panic(err)
	}
	gvks, _, _ := s.ObjectKinds(&kubeovnv1.Vlan{})
	fmt.Println(gvks[0])
	// Output: kubeovn.io/v1, Kind=Vlan
}
