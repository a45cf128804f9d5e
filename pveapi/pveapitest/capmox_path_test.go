package pveapitest_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pveapi/pveapitest"
)

// TestClusterResourcesOrder: guests are listed in Perl's string order of
// their VMIDs, as pve-manager's resources method sorts the keys of the
// VM list, so capmox's bestSubset template choice (which depends on the
// order) meets the same list it meets on PVE.
func TestClusterResourcesOrder(t *testing.T) {
	srv, root := start(t)
	for _, id := range []int{9000, 101, 10000, 100, 1000} {
		must(t, srv.AddVM(pveapitest.VMSpec{VMID: id}))
	}
	for _, path := range []string{"/cluster/resources?type=vm", "/cluster/resources"} {
		var list proxmox.ClusterResources
		must(t, root.Get(ctx, path, &list))
		var got []uint64
		for _, r := range list {
			if r.Type == "qemu" {
				got = append(got, r.VMID)
			}
		}
		if diff := cmp.Diff([]uint64{100, 1000, 10000, 101, 9000}, got); diff != "" {
			t.Errorf("%s: guests in string order of their VMIDs: -want +got:\n%s", path, diff)
		}
	}
}

// TestContainerIndex: GET /nodes/{node}/lxc answers every user, as
// pve-container's vmlist does (user => 'all', filtered by VM.Audit); the
// server keeps no containers, so the list is empty, and go-proxmox's
// Containers (capmox's reservable-memory walk) decodes it.
func TestContainerIndex(t *testing.T) {
	srv, root := start(t, pveapitest.WithNodes("pve", "pve2"))
	nobody := grantee(t, srv, "nobody@pve", nil)
	for name, c := range map[string]*proxmox.Client{"root": root, "a user without privileges": nobody} {
		cts, err := c.NodeRef("pve2").Containers(ctx)
		if err != nil || len(cts) != 0 {
			t.Errorf("%s: containers of a node without any: %v, %v", name, cts, err)
		}
	}
	var list []map[string]any
	must(t, root.Get(ctx, "/nodes/pve/lxc", &list))
	if list == nil {
		t.Error("the answer is an empty JSON array, not null")
	}
	wantMessage(t, "an unknown node", root.Get(ctx, "/nodes/nope/lxc", &list), "no such cluster node 'nope'")
	if got := srv.Unserved(); len(got) != 0 {
		t.Errorf("the container index is served: %v", got)
	}
}
