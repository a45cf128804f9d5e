package pveacl_test

import (
	"context"
	"fmt"
	"os"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/pveacltest"
)

// ExampleApplyLive applies a tenant specification to a (fake) cluster,
// stores the new token secrets as Kubernetes Secret manifests, and applies
// again to show that nothing is left to do.
func ExampleApplyLive() {
	t := &exampleT{}
	defer t.cleanup()
	srv := pveacltest.NewServer(t)
	_ = srv.AddStorage(pveacltest.StorageSpec{ID: "alpha-disks", Type: "lvmthin", Content: []string{"images"}})
	spec, _ := pveacl.LoadTenants([]byte("tenants:\n- name: alpha\n  storage: alpha-disks\n"))
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	sink := pveacl.ManifestSink{Path: dir + "/secrets.yaml", Namespace: "tenant-alpha"}

	res, err := pveacl.ApplyLive(context.Background(), srv.Client(), spec,
		pveacl.WithSecretSink(sink), pveacl.WithSecretContext("https://pve.example:8006", "pve-1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("changes:", len(res.Applied))
	for _, s := range res.Secrets {
		fmt.Println("secret of", s.TokenID)
	}
	again, _ := pveacl.ApplyLive(context.Background(), srv.Client(), spec, pveacl.WithSecretSink(sink))
	fmt.Println("second run:", len(again.Applied))
	// Output:
	// changes: 15
	// secret of alpha@pve!ccm
	// secret of alpha@pve!csi
	// second run: 0
}
