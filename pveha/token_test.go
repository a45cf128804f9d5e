package pveha_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/pveacl/liveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
	"github.com/pxsubstrate/pxsubstrate/pveha"
)

type keep map[string]string

func (keep) Check([]string) error { return nil }
func (k keep) Store(s liveacl.TokenSecret) (string, error) {
	k[s.TokenID] = s.Secret.Reveal()
	return "memory", nil
}

// TestHAPlatformToken: the token pveacl's plan makes for platform.ha
// (CozyHA: Sys.Audit and Sys.Console on / alone) converges a pool and
// releases a VM, and holds nothing on any node, VM, storage or pool.
func TestHAPlatformToken(t *testing.T) {
	srv, err := pvefake.New(pvefake.WithNodes(nodes...), pvefake.WithCluster("lab"))
	must(t, err)
	t.Cleanup(srv.Close)
	for i := 1; i <= 3; i++ {
		must(t, srv.AddVM(pvefake.VMSpec{VMID: 100 + i, Node: "pve1", Running: true}))
	}
	must(t, srv.AddStorage(pvefake.StorageSpec{ID: "alpha-disks", Type: "dir", Path: "/srv/alpha", Content: []string{"images"}, Nodes: nodes}))
	spec, err := tenantplan.LoadTenants([]byte(`
platform:
  ha: {user: poolha@pve, token: ha}
tenants:
  - {name: alpha, storage: alpha-disks, vms: [101, 102, 103]}
`))
	must(t, err)
	secrets := keep{}
	ctx := context.Background()
	if _, err := liveacl.Apply(ctx, srv.Client(), spec, liveacl.WithSecretSink(secrets)); err != nil {
		t.Fatal(err)
	}
	c := srv.TokenClient("poolha@pve!ha", secrets["poolha@pve!ha"])
	converge(t, c, []pveha.Pool{pool("alpha/md0", 101, 102, 103)}, pveha.Options{Prune: true})
	if ok, err := pveha.Release(ctx, c, 103); err != nil || !ok {
		t.Fatalf("release: %v, %v", ok, err)
	}
	if d := srv.Denied(); len(d) > 0 {
		t.Errorf("denied %v", d)
	}
	for _, path := range []string{"/nodes/pve1", "/vms/101", "/storage/alpha-disks", "/pool/alpha", "/sdn", "/access"} {
		var perms map[string]map[string]int
		must(t, c.Get(ctx, "/access/permissions?path="+path, &perms))
		if len(perms[path]) > 0 {
			t.Errorf("the HA token holds %v on %s", perms[path], path)
		}
	}
	var perms map[string]map[string]int
	must(t, c.Get(ctx, "/access/permissions?path=/", &perms))
	if fmt.Sprint(perms["/"]) != "map[Sys.Audit:0 Sys.Console:0]" {
		t.Errorf("the HA token holds %v on /, want Sys.Audit and Sys.Console without propagation", perms["/"])
	}
}
