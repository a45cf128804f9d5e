package liveacl_test

import (
	"context"
	"fmt"
	"os"

	"github.com/pxsubstrate/pxsubstrate/pveacl/liveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// ExampleApply applies a tenant specification to a (fake) cluster,
// stores the new token secrets as Kubernetes Secret manifests, and applies
// again to show that nothing is left to do.
func ExampleApply() {
	t := &exampleT{}
	defer t.cleanup()
	srv := pvefake.NewServer(t)
	_ = srv.AddStorage(pvefake.StorageSpec{ID: "alpha-disks", Type: "lvmthin", Content: []string{"images"}})
	spec, _ := tenantplan.LoadTenants([]byte("tenants:\n- name: alpha\n  storage: alpha-disks\n"))
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	sink := liveacl.ManifestSink{Path: dir + "/secrets.yaml", Namespace: "tenant-alpha"}

	res, err := liveacl.Apply(context.Background(), srv.Client(), spec,
		liveacl.WithSecretSink(sink), liveacl.WithSecretContext("https://pve.example:8006", "pve-1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("changes:", len(res.Applied))
	for _, s := range res.Secrets {
		fmt.Println("secret of", s.TokenID)
	}
	again, _ := liveacl.Apply(context.Background(), srv.Client(), spec, liveacl.WithSecretSink(sink))
	fmt.Println("second run:", len(again.Applied))
	// Output:
	// changes: 15
	// secret of alpha@pve!ccm
	// secret of alpha@pve!csi
	// second run: 0
}
