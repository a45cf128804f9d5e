package pvesdn_test

import (
	"context"
	"strings"
	"testing"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
	"github.com/pxsubstrate/pxsubstrate/pvesdn"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
)

var ctx = context.Background()

// fataler is what must needs of a *testing.T, *testing.B or *rapid.T.
type fataler interface {
	Helper()
	Fatal(args ...any)
}

func must(t fataler, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func zone(t testing.TB, ranges ...string) pvesdn.Zone {
	t.Helper()
	set, err := vlanalloc.Allocatable(ranges, nil)
	must(t, err)
	return pvesdn.Zone{Name: "zone-a", Bridge: "vmbr0", VLANs: set, MTU: 9000, SDNZone: "pxz", VNetPrefix: "pxa"}
}

// auditor returns a client for a token that holds PVEAuditor on /sdn only.
func auditor(t testing.TB, srv *pvefake.Server, path string) *proxmox.Client {
	t.Helper()
	must(t, srv.AddUser("check@pve", pvefake.UserSpec{}))
	secret, err := srv.AddToken("check@pve", "sdn", pvefake.TokenSpec{Privsep: true})
	must(t, err)
	if path != "" {
		must(t, srv.SetACL(path, pveacl.KindToken, "check@pve!sdn", true, "PVEAuditor"))
		must(t, srv.SetACL(path, pveacl.KindUser, "check@pve", true, "PVEAuditor"))
	}
	return srv.TokenClient("check@pve!sdn", secret)
}

// lab is three nodes with one problem each, and SDN VNets on vmbr0.
func lab(t testing.TB) *pvefake.Server {
	t.Helper()
	srv := pvefake.NewServer(t, pvefake.WithCluster("lab"), pvefake.WithNodes("pve1", "pve2", "pve3"))
	for node, vids := range map[string]string{"pve1": "2-4094", "pve2": "100-140", "pve3": ""} {
		must(t, srv.SetInterface(node, pvefake.Interface{Name: "vmbr0", Type: "bridge", Ports: "eno1",
			VLANAware: node != "pve3", VIDs: vids, MTU: 9000}))
	}
	must(t, srv.SetInterface("pve1", pvefake.Interface{Name: "eno1.150", Type: "vlan"}))
	cl, err := srv.Client().Cluster(ctx)
	must(t, err)
	must(t, cl.NewSDNZone(ctx, &proxmox.SDNZoneOptions{Name: "other", Type: "vlan", Bridge: "vmbr0"}))
	must(t, cl.NewSDNVNet(ctx, &proxmox.VNetOptions{Name: "legacy", Zone: "other", Tag: 120}))
	must(t, cl.NewSDNZone(ctx, &proxmox.SDNZoneOptions{Name: "pxz", Type: "vlan", Bridge: "vmbr0"}))
	must(t, cl.NewSDNVNet(ctx, &proxmox.VNetOptions{Name: "pxa0130", Zone: "pxz", Tag: 130}))
	return srv
}

func codes(r *pvesdn.Report) string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, f.Node+":"+f.Code+":"+f.VLANs)
	}
	return strings.Join(out, " ")
}

func TestCheckNamesEveryProblemAndShrinksTheZone(t *testing.T) {
	srv := lab(t)
	c := auditor(t, srv, "/sdn")
	z := zone(t, "100-160")
	rep, err := pvesdn.Check(ctx, c, z)
	must(t, err)
	want := "pve1:VLANUsedByInterface:150 pve2:VLANsOutsideBridge:141-160 pve3:BridgeNotVLANAware:100-160 :VLANUsedBySDN:120"
	if got := codes(rep); got != want || rep.OK() {
		t.Fatalf("findings:\n got %s\nwant %s", got, want)
	}
	if s := rep.CarryableSet(); s.Len() != 0 || rep.Requests != 6 {
		t.Fatalf("carryable %s with pve3 not VLAN-aware (requests %d)", s.String(), rep.Requests)
	}
	must(t, srv.SetInterface("pve3", pvefake.Interface{Name: "vmbr0", Type: "bridge", Ports: "eno1", VLANAware: true,
		VIDs: "2-4094", MTU: 9000}))
	fixed, err := pvesdn.Check(ctx, c, z)
	must(t, err)
	carry := fixed.CarryableSet()
	if got := carry.String(); got != "100-119,121-140" {
		t.Fatalf("carryable after pve3 is fixed = %s", got)
	}
	srv.SetNodeUnreachable("pve2", true)
	down, err := pvesdn.Check(ctx, c, z)
	must(t, err)
	if s := down.CarryableSet(); s.Len() != 0 || !strings.Contains(codes(down), "pve2:NodeUnreadable:100-160") {
		t.Fatalf("an unreachable node never read: carryable %s, findings %s", s.String(), codes(down))
	}
	kept := down.WithLastKnown(fixed, z)
	carry = kept.CarryableSet()
	if carry.String() != "100-119,121-140" || !kept.Nodes[1].Stale || kept.Nodes[1].Name != "pve2" ||
		!strings.Contains(kept.Nodes[1].Error, "No route to host") {
		t.Fatalf("the last known view: carryable %s, nodes %+v", carry.String(), kept.Nodes)
	}
	if !strings.Contains(codes(kept), "pve2:NodeUnreadable: ") || !strings.Contains(codes(kept), "pve2:VLANsOutsideBridge:141-160") {
		t.Errorf("stale findings %s", codes(kept))
	}
}

func TestCheckNeedsSDNAuditToSeeTheBridge(t *testing.T) {
	srv := pvefake.NewServer(t)
	must(t, srv.SetInterface("pve", pvefake.Interface{Name: "vmbr0", Type: "bridge", VLANAware: true, VIDs: "2-4094"}))
	z := zone(t, "100-101")
	z.MTU = 0
	blind := auditor(t, srv, "/nodes")
	rep, err := pvesdn.Check(ctx, blind, z)
	must(t, err)
	if codes(rep) != "pve:BridgeMissing:100-101" || !strings.Contains(rep.Findings[0].Action, "SDN.Audit on /sdn/zones/localnetwork") {
		t.Fatalf("without SDN.Audit: %s %+v", codes(rep), rep.Findings)
	}
	must(t, srv.SetACL("/sdn", pveacl.KindToken, "check@pve!sdn", true, "PVEAuditor"))
	must(t, srv.SetACL("/sdn", pveacl.KindUser, "check@pve", true, "PVEAuditor"))
	rep, err = pvesdn.Check(ctx, blind, z)
	must(t, err)
	if carry := rep.CarryableSet(); !rep.OK() || carry.String() != "100-101" {
		t.Fatalf("with PVEAuditor on /sdn: %s carryable %s", codes(rep), carry.String())
	}
}

func TestCheckMTUAndClusterFailure(t *testing.T) {
	srv := pvefake.NewServer(t)
	must(t, srv.SetInterface("pve", pvefake.Interface{Name: "vmbr0", Type: "bridge", VLANAware: true, VIDs: "2-4094"}))
	z := zone(t, "100-101")
	rep, err := pvesdn.Check(ctx, srv.Client(), z)
	must(t, err)
	if codes(rep) != "pve:MTUBelowZone:100-101" || !strings.Contains(rep.Findings[0].Message, "MTU 1500, below the zone's 9000") {
		t.Fatalf("MTU: %s %+v", codes(rep), rep.Findings)
	}
	must(t, srv.InjectError(pvefake.Fault{Path: "^/cluster/sdn/vnets$", Status: 500, Message: "cfs down"}))
	failed, err := pvesdn.Check(ctx, srv.Client(), z)
	must(t, err)
	if carry := failed.CarryableSet(); failed.Error == "" || codes(failed) != ":ClusterUnreadable:" || carry.Len() != 0 {
		t.Fatalf("cluster failure: %q %s", failed.Error, codes(failed))
	}
	kept := failed.WithLastKnown(rep, z)
	if len(kept.Nodes) != 1 || !kept.Nodes[0].Stale {
		t.Fatalf("last known nodes %+v", kept.Nodes)
	}
	if _, err := pvesdn.Check(ctx, srv.Client(), pvesdn.Zone{Name: "bad", Bridge: "vmbr0"}); err == nil {
		t.Error("a zone without VLANs was checked")
	}
}
