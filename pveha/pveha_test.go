package pveha_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
	"github.com/pxsubstrate/pxsubstrate/pveha"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

var nodes = []string{"pve1", "pve2", "pve3"}

// cluster is a three-node fake with VMs 101-10n all on pve1, and a token
// holding exactly what pveha needs: Sys.Audit and Sys.Console on / alone.
func cluster(t *testing.T, v pveacl.Version, vms int) (*pvefake.Server, *proxmox.Client) {
	t.Helper()
	srv, err := pvefake.New(pvefake.WithVersion(v), pvefake.WithNodes(nodes...), pvefake.WithCluster("lab"))
	must(t, err)
	t.Cleanup(srv.Close)
	for i := 1; i <= vms; i++ {
		must(t, srv.AddVM(pvefake.VMSpec{VMID: 100 + i, Node: "pve1", Running: true, Name: fmt.Sprintf("w%d", i)}))
	}
	must(t, srv.AddRole("CozyHA", "Sys.Audit", "Sys.Console"))
	must(t, srv.AddUser("ha@pve", pvefake.UserSpec{}))
	secret, err := srv.AddToken("ha@pve", "ha", pvefake.TokenSpec{Privsep: true})
	must(t, err)
	must(t, srv.SetACL("/", pveacl.KindToken, "ha@pve!ha", false, "CozyHA"))
	must(t, srv.SetACL("/", pveacl.KindUser, "ha@pve", false, "CozyHA"))
	return srv, srv.TokenClient("ha@pve!ha", secret)
}

func pool(name string, vmids ...int) pveha.Pool {
	p := pveha.Pool{Name: name}
	for _, id := range vmids {
		p.Workers = append(p.Workers, pveha.Worker{Machine: fmt.Sprintf("%s-m%d", name, id), VMID: id})
	}
	return p
}

// converge reads, plans and applies, and checks that a second plan is empty.
func converge(t *testing.T, c *proxmox.Client, pools []pveha.Pool, o pveha.Options) *pveha.Plan {
	t.Helper()
	ctx := context.Background()
	st, err := pveha.Read(ctx, c)
	must(t, err)
	p, err := pveha.NewPlan(st, pools, o)
	must(t, err)
	must(t, pveha.Apply(ctx, c, p))
	st, err = pveha.Read(ctx, c)
	must(t, err)
	again, err := pveha.NewPlan(st, pools, o)
	must(t, err)
	if !again.Empty() {
		t.Fatalf("a second plan changes %v", again.Changes)
	}
	return p
}

// nodesOf reads where VMs run, as root: the HA token sees no VM.
func nodesOf(t *testing.T, srv *pvefake.Server, vmids ...int) map[int]string {
	t.Helper()
	var list []struct {
		VMID int    `json:"vmid"`
		Node string `json:"node"`
	}
	must(t, srv.Client().Get(context.Background(), "/cluster/resources?type=vm", &list))
	out := map[int]string{}
	for _, e := range list {
		if slices.Contains(vmids, e.VMID) {
			out[e.VMID] = e.Node
		}
	}
	return out
}

// TestHAPoolKeptApart: three workers cloned onto one node become HA
// resources in one negative rule, and the HA manager moves them onto
// three nodes; a fourth worker on three nodes is an HA resource outside the
// rule, and the report says so.
func TestHAPoolKeptApart(t *testing.T) {
	srv, c := cluster(t, pveacl.PVE9, 4)
	p := converge(t, c, []pveha.Pool{pool("tenant-a/md0", 101, 102, 103)}, pveha.Options{})
	if len(p.Changes) != 4 || p.Pools[0].Short() {
		t.Errorf("plan %v, report %+v", p.Changes, p.Pools)
	}
	placed := nodesOf(t, srv, 101, 102, 103)
	if got := slices.Sorted(func(yield func(string) bool) {
		for _, n := range placed {
			if !yield(n) {
				return
			}
		}
	}); !slices.Equal(got, nodes) {
		t.Errorf("workers on %v, want one on each of %v", placed, nodes)
	}

	p = converge(t, c, []pveha.Pool{pool("tenant-a/md0", 101, 102, 103, 104)}, pveha.Options{})
	rep := p.Pools[0]
	if !rep.Short() || rep.Apart != 3 || rep.Workers != 4 {
		t.Errorf("report %+v, want 3 of 4 apart", rep)
	}
	if !strings.Contains(rep.String(), "4 workers and the Proxmox cluster 3 nodes: 3 workers are kept on different nodes, 1 may share a node") {
		t.Errorf("report says %q", rep)
	}
	st, err := pveha.Read(context.Background(), c)
	must(t, err)
	if len(st.Rules) != 1 || st.Rules[0].Resources != "vm:101,vm:102,vm:103" || len(st.Rules[0].Errors) > 0 {
		t.Errorf("rules %+v", st.Rules)
	}
	if len(st.Resources) != 4 || st.Resources[3].Machine() != "tenant-a/md0-m104" {
		t.Errorf("resources %+v", st.Resources)
	}
	if d := srv.Denied(); len(d) > 0 {
		t.Errorf("the HA token was denied %v", d)
	}
}

// TestHAReleaseLetsTheVMGo: qemu-server refuses to destroy an HA-managed
// VM; after Release the destroy goes through, and the VM has left the
// pool's rule.
func TestHAReleaseLetsTheVMGo(t *testing.T) {
	srv, c := cluster(t, pveacl.PVE9, 3)
	converge(t, c, []pveha.Pool{pool("tenant-a/md0", 101, 102, 103)}, pveha.Options{})
	ctx := context.Background()
	node := nodesOf(t, srv, 103)[103]
	root := srv.Client()
	stop := func() {
		var upid string
		must(t, root.Post(ctx, "/nodes/"+node+"/qemu/103/status/stop", map[string]string{}, &upid))
	}
	stop()
	err := root.Delete(ctx, "/nodes/"+node+"/qemu/103", nil)
	if err == nil || !strings.Contains(err.Error(), "unable to remove VM 103 - used in HA resources and purge parameter not set.") {
		t.Fatalf("destroying an HA-managed VM: %v", err)
	}
	released, err := pveha.Release(ctx, c, 103)
	must(t, err)
	if !released {
		t.Fatal("Release found no HA resource of VM 103")
	}
	var upid string
	must(t, root.Delete(ctx, "/nodes/"+node+"/qemu/103", &upid))
	st, err := pveha.Read(ctx, c)
	must(t, err)
	if len(st.Rules) != 1 || st.Rules[0].Resources != "vm:101,vm:102" {
		t.Errorf("rules after the release: %+v", st.Rules)
	}
	if again, err := pveha.Release(ctx, c, 103); err != nil || again {
		t.Errorf("a second Release: %v, %v", again, err)
	}
}

// TestHAPruneLeavesForeignConfiguration: pruning removes what the package
// made for pools that are gone, and nothing an operator made.
func TestHAPruneLeavesForeignConfiguration(t *testing.T) {
	srv, c := cluster(t, pveacl.PVE9, 5)
	ctx := context.Background()
	root := srv.Client()
	must(t, root.Post(ctx, "/cluster/ha/resources", map[string]string{"sid": "vm:104"}, nil))
	must(t, root.Post(ctx, "/cluster/ha/resources", map[string]string{"sid": "vm:105"}, nil))
	must(t, root.Post(ctx, "/cluster/ha/rules", map[string]string{"rule": "db", "type": "resource-affinity", "affinity": "negative", "resources": "vm:104,vm:105"}, nil))
	converge(t, c, []pveha.Pool{pool("tenant-a/md0", 101, 102), pool("tenant-b/md0", 103, 104)}, pveha.Options{Prune: true})
	p := converge(t, c, []pveha.Pool{pool("tenant-b/md0", 103, 104)}, pveha.Options{Prune: true})
	var ops []string
	for _, ch := range p.Changes {
		ops = append(ops, string(ch.Op)+" "+ch.SID+ch.Rule)
	}
	want := []string{"delete-rule " + pveha.RuleID("tenant-a/md0"), "remove-resource vm:101", "remove-resource vm:102"}
	if !slices.Equal(ops, want) {
		t.Errorf("prune did %v, want %v", ops, want)
	}
	st, err := pveha.Read(ctx, c)
	must(t, err)
	var sids, rules []string
	for _, r := range st.Resources {
		sids = append(sids, r.SID)
	}
	for _, r := range st.Rules {
		rules = append(rules, r.ID+"="+r.Resources)
	}
	if !slices.Equal(sids, []string{"vm:103", "vm:104", "vm:105"}) || !slices.Contains(rules, "db=vm:104,vm:105") {
		t.Errorf("left: resources %v, rules %v", sids, rules)
	}
	for _, r := range st.Resources {
		if r.SID == "vm:104" && r.Machine() != "" {
			t.Errorf("the operator's resource vm:104 got comment %q", r.Comment)
		}
	}
}

// TestHAPVE8Refused: Proxmox VE 8 has no resource affinity rules; the
// plan is refused by version and nothing is written.
func TestHAPVE8Refused(t *testing.T) {
	srv, c := cluster(t, pveacl.PVE8, 2)
	st, err := pveha.Read(context.Background(), c)
	must(t, err)
	_, err = pveha.NewPlan(st, []pveha.Pool{pool("tenant-a/md0", 101, 102)}, pveha.Options{})
	if !errors.Is(err, pveha.ErrUnsupported) || !strings.Contains(err.Error(), "Proxmox VE 8.") {
		t.Fatalf("plan on PVE 8: %v", err)
	}
	if m := srv.MutatingRequests(); len(m) > 0 {
		t.Errorf("wrote %v", m)
	}
}

// TestHATokenNeedsConsole: a token with Sys.Audit alone reads but cannot
// change, and gets PVE's 403 naming Sys.Console.
func TestHATokenNeedsConsole(t *testing.T) {
	srv, _ := cluster(t, pveacl.PVE9, 2)
	must(t, srv.AddRole("Audit", "Sys.Audit"))
	must(t, srv.AddUser("ro@pve", pvefake.UserSpec{}))
	secret, err := srv.AddToken("ro@pve", "ro", pvefake.TokenSpec{Privsep: true})
	must(t, err)
	must(t, srv.SetACL("/", pveacl.KindToken, "ro@pve!ro", false, "Audit"))
	must(t, srv.SetACL("/", pveacl.KindUser, "ro@pve", false, "Audit"))
	c := srv.TokenClient("ro@pve!ro", secret)
	ctx := context.Background()
	st, err := pveha.Read(ctx, c)
	must(t, err)
	p, err := pveha.NewPlan(st, []pveha.Pool{pool("tenant-a/md0", 101, 102)}, pveha.Options{})
	must(t, err)
	err = pveha.Apply(ctx, c, p)
	if err == nil || !strings.Contains(err.Error(), "Sys.Console") {
		t.Fatalf("apply with an audit token: %v", err)
	}
}
