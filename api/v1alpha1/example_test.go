package v1alpha1_test

import (
	"fmt"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
)

func ExampleVLANClaimName() {
	fmt.Println(v1alpha1.VLANClaimName("pxtenant", 120))
	// Output: pxtenant.120
}

func ExampleNetworkReference_String() {
	fmt.Println(v1alpha1.NetworkReference{Namespace: "tenant-a", Name: "web"})
	// Output: tenant-a/web
}
