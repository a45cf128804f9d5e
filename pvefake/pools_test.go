package pvefake_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

func poolsOf(srv *pvefake.Server) map[string]pveacl.Pool {
	return srv.AccessConfig().Pools
}

func TestPoolRules(t *testing.T) {
	srv, root := start(t)
	must(t, srv.AddPool("a", "", nil, nil))
	must(t, srv.AddPool("b", "", nil, nil))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 100, Pool: "a"}))
	must(t, srv.SetACL("/pool/b", pveacl.KindUser, "root@pam", true, "PVEAuditor"))
	steps := []struct {
		reason string
		method string
		path   string
		body   map[string]any
		err    string
	}{
		{"a child needs its parent", "POST", "/pools", map[string]any{"poolid": "x/y"}, "create pool failed: parent 'x' of pool 'x/y' does not exist"},
		{"a leaf starts with a letter", "POST", "/pools", map[string]any{"poolid": "a/1b"}, "create pool failed: pool name must start with a letter"},
		{"too deep", "POST", "/pools", map[string]any{"poolid": "a/b/c/d"}, "poolid: invalid format - pool name 'a/b/c/d' nested too deeply (max levels = 3)"},
		{"nested pools exist", "POST", "/pools", map[string]any{"poolid": "a/kids"}, ""},
		{"a guest moves only with allow-move", "PUT", "/pools", map[string]any{"poolid": "b", "vms": "100"}, "update pools failed: VM 100 belongs already to pool 'a' and 'allow-move' is not set"},
		{"allow-move moves it", "PUT", "/pools", map[string]any{"poolid": "b", "vms": "100", "allow-move": 1}, ""},
		{"a member is added once", "PUT", "/pools", map[string]any{"poolid": "b", "vms": "100"}, "update pools failed: VM 100 is already a pool member"},
		{"storages join several pools", "PUT", "/pools", map[string]any{"poolid": "a", "storage": "local"}, ""},
		{"storages join several pools", "PUT", "/pools", map[string]any{"poolid": "b", "storage": "local"}, ""},
		{"a pool with guests cannot go", "DELETE", "/pools?poolid=b", nil, "delete pool failed: pool 'b' is not empty (contains VM 100)"},
		{"removing a non-member fails", "PUT", "/pools", map[string]any{"poolid": "a", "vms": "100", "delete": 1}, "update pools failed: VM 100 is not a pool member"},
		{"members can be removed", "PUT", "/pools", map[string]any{"poolid": "b", "vms": "100", "storage": "local", "delete": 1}, ""},
		{"an empty pool goes, with its ACL entries", "DELETE", "/pools?poolid=b", nil, ""},
		{"a pool with child pools cannot go", "DELETE", "/pools?poolid=a", nil, "delete pool failed: pool 'a' is not empty (contains pool 'a/kids')"},
	}
	for _, s := range steps {
		var err error
		switch s.method {
		case "POST":
			err = root.Post(ctx, s.path, s.body, nil)
		case "PUT":
			err = root.Put(ctx, s.path, s.body, nil)
		case "DELETE":
			err = root.Delete(ctx, s.path, nil)
		}
		wantMessage(t, s.reason, err, s.err)
	}
	want := map[string]pveacl.Pool{"a": {Storages: []string{"local"}}, "a/kids": {}}
	if diff := cmp.Diff(want, poolsOf(srv)); diff != "" {
		t.Errorf("pools after the steps: -want +got:\n%s", diff)
	}
	if got := entries(srv, "/pool/b"); len(got) != 0 {
		t.Errorf("deleting pool b removes the ACL entries under /pool/b, left %v", got)
	}
}

func TestPoolMembersNeedPermModify(t *testing.T) {
	srv, _ := start(t)
	must(t, srv.AddPool("p", "", nil, nil))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 100}))
	c := grantee(t, srv, "u@pve", map[string][]string{"/pool/p": {"PVEPoolAdmin"}})
	err := c.Put(ctx, "/pools", map[string]any{"poolid": "p", "vms": "100"}, nil)
	wantMessage(t, "adding a guest needs VM.Allocate (or Permissions.Modify) on it", err,
		"update pools failed: 403 Permission check failed (/vms/100, Permissions.Modify|VM.Allocate)")
	var list proxmox.Pools
	must(t, c.Get(ctx, "/pools?poolid=p", &list))
	if len(list) != 1 || len(list[0].Members) != 0 {
		t.Errorf("the pool stays empty, got %+v", list)
	}
}

func TestPoolListing(t *testing.T) {
	srv, _ := start(t)
	must(t, srv.AddPool("mine", "m", nil, []string{"local"}))
	must(t, srv.AddPool("theirs", "", nil, nil))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 100, Pool: "mine", Name: "w1"}))
	c := grantee(t, srv, "u@pve", map[string][]string{"/pool/mine": {"PVEPoolUser"}})
	pools, err := c.Pools(ctx)
	must(t, err)
	if len(pools) != 1 || pools[0].PoolID != "mine" || pools[0].Comment != "m" {
		t.Errorf("the list shows pools with Pool.Audit only, got %+v", pools)
	}
	p, err := c.Pool(ctx, "mine")
	must(t, err)
	var members []string
	for _, m := range p.Members {
		members = append(members, m.ID)
	}
	if diff := cmp.Diff([]string{"qemu/100", "storage/pve/local"}, members); diff != "" {
		t.Errorf("pool members: -want +got:\n%s", diff)
	}
}
