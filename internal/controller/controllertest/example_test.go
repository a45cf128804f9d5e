package controllertest_test

import (
	"fmt"

	"github.com/pxsubstrate/pxsubstrate/internal/controller/controllertest"
)

// Tests sharing one API server give each part a cluster of its own names.
func ExampleCluster_NetworkName() {
	fmt.Println(controllertest.Default.NetworkName(1))
	cl := controllertest.Cluster{Tenant: "tenant-f"}
	fmt.Println(cl.NetworkName(1))
	// Output:
	// net-1
	// tenant-f-net-1
}
