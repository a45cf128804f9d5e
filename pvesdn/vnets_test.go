package pvesdn_test

import (
	"strings"
	"testing"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pveapi/pveapitest"
	"github.com/pxsubstrate/pxsubstrate/pvesdn"
)

// vnetLab is three nodes with VLAN-aware bridges.
func vnetLab(t *testing.T, release string) *pveapitest.Server {
	t.Helper()
	srv := pveapitest.NewServer(t, pveapitest.WithCluster("lab"), pveapitest.WithNodes("pve1", "pve2", "pve3"),
		pveapitest.WithRelease(release))
	for _, n := range []string{"pve1", "pve2", "pve3"} {
		must(t, srv.SetInterface(n, pveapitest.Interface{Name: "vmbr0", Type: "bridge", Ports: "eno1", VLANAware: true,
			VIDs: "2-4094", MTU: 9000}))
	}
	return srv
}

func puts(srv *pveapitest.Server) int {
	n := 0
	for _, r := range srv.MutatingRequests() {
		if r.Method == "PUT" && strings.TrimSuffix(r.Path, "/") == "/api2/json/cluster/sdn" {
			n++
		}
	}
	return n
}

func TestApplyLockedWithDryRunAndPerNodeResults(t *testing.T) {
	srv := vnetLab(t, "9.2.0")
	c := srv.Client()
	z := zone(t, "100-102")
	plan, err := pvesdn.PlanVNets(ctx, c, z)
	must(t, err)
	if !plan.CreateZone || len(plan.Add) != 3 || plan.Add[0] != (pvesdn.VNet{ID: "pxa0100", Tag: 100}) || plan.Requests != 2 {
		t.Fatalf("plan %+v", plan)
	}
	srv.FailNodeReload("pve2", "command 'ifreload -a' failed: exit code 1")
	srv.SetNodeUnreachable("pve3", true)
	_, err = pvesdn.Apply(ctx, c, plan)
	if err == nil || !strings.Contains(err.Error(), "dry-run on node pve3 failed, nothing applied") {
		t.Fatalf("apply with a node the dry-run cannot reach: %v", err)
	}
	if srv.SDNLockToken() != "" || puts(srv) != 0 {
		t.Fatalf("after the failed dry-run: lock %q, %d applies", srv.SDNLockToken(), puts(srv))
	}
	vnets, err := cluster(t, c).SDNVNets(ctx)
	must(t, err)
	if len(vnets) != 0 {
		t.Fatalf("the rollback left %d VNets", len(vnets))
	}
	srv.SetNodeUnreachable("pve3", false)
	res, err := pvesdn.Apply(ctx, c, plan)
	must(t, err)
	if !res.Locked || res.Risk != "" || res.Applies != 1 || puts(srv) != 1 || srv.SDNLockToken() != "" {
		t.Fatalf("locked apply: %+v, %d PUT /cluster/sdn, lock %q", res, puts(srv), srv.SDNLockToken())
	}
	if d := res.DryRun["pve1"]; !strings.Contains(d, "+auto pxa0102") || !strings.Contains(d, "+\tbridge_ports vmbr0.102") {
		t.Errorf("dry-run of pve1:\n%s", d)
	}
	got := []string{}
	for _, n := range res.Nodes {
		got = append(got, n.Node+"="+n.Status)
	}
	if strings.Join(got, " ") != "pve1=OK pve2=command 'ifreload -a' failed: exit code 1 pve3=OK" || res.OK() {
		t.Errorf("node results %v", got)
	}
	again, err := pvesdn.PlanVNets(ctx, c, z)
	must(t, err)
	if !again.Empty() || again.Present != 3 {
		t.Errorf("the plan after the apply: %+v", again)
	}
}

// nodeCodes lists the NodeZone* drifts as CODE:node.
func nodeCodes(drift []pvesdn.Drift) string {
	var got []string
	for _, d := range drift {
		got = append(got, d.Code+":"+d.Node+":"+d.VNet)
	}
	return strings.Join(got, " ")
}

func TestReapplyRepairsANodeWhoseReloadFailed(t *testing.T) {
	srv := vnetLab(t, "9.2.0")
	c := srv.Client()
	z := zone(t, "100-101")
	plan, err := pvesdn.PlanVNets(ctx, c, z)
	must(t, err)
	srv.FailNodeReload("pve2", "command 'ifreload -a' failed: exit code 1")
	res, err := pvesdn.Apply(ctx, c, plan)
	must(t, err)
	if res.OK() || res.Nodes[1].OK || !res.Nodes[0].OK || !res.Nodes[2].OK {
		t.Fatalf("the failing reload: %+v", res.Nodes)
	}
	drift, err := pvesdn.AuditVNets(ctx, c, z)
	must(t, err)
	if got := nodeCodes(drift); got != "NodeZoneError:pve2:" ||
		!strings.Contains(drift[0].Message, "SDN zone pxz is in error on node pve2: pxa0100: error pxa0100; pxa0101: error pxa0101") {
		t.Fatalf("audit after the failed reload: %s %+v", got, drift)
	}
	// PVEAuditor on /sdn reads the same, as sdn audit's help says.
	if audited, err := pvesdn.AuditVNets(ctx, auditor(t, srv, "/sdn"), z); err != nil || nodeCodes(audited) != "NodeZoneError:pve2:" {
		t.Fatalf("audit with PVEAuditor on /sdn: %+v %v", audited, err)
	}
	// The fault still armed: the empty plan reloads again, once, and pve2
	// fails again.
	empty, err := pvesdn.PlanVNets(ctx, c, z)
	must(t, err)
	res, err = pvesdn.Apply(ctx, c, empty)
	must(t, err)
	if !empty.Empty() || res.Applies != 1 || puts(srv) != 2 || res.OK() || len(res.Reapplied) != 1 ||
		res.Reapplied[0].Node != "pve2" || res.Reapplied[0].Status != pvesdn.ZoneError {
		t.Fatalf("re-apply with the fault armed: %+v, %d PUT /cluster/sdn", res, puts(srv))
	}
	srv.FailNodeReload("pve2", "")
	res, err = pvesdn.Apply(ctx, c, empty)
	must(t, err)
	if res.Applies != 1 || puts(srv) != 3 || !res.OK() || len(res.Nodes) != 3 || srv.SDNLockToken() != "" {
		t.Fatalf("the repairing re-apply: %+v, %d PUT /cluster/sdn", res, puts(srv))
	}
	drift, err = pvesdn.AuditVNets(ctx, c, z)
	if err != nil || len(drift) != 0 {
		t.Fatalf("audit after the repair: %+v %v", drift, err)
	}
	// The control: every node available, an empty plan applies nothing.
	if res, err := pvesdn.Apply(ctx, c, empty); err != nil || res.Applies != 0 || puts(srv) != 3 || len(res.Reapplied) != 0 {
		t.Errorf("an empty plan with every node available applied: %+v %v", res, err)
	}
}

func TestApplyPlainBeforeRelease92(t *testing.T) {
	srv := vnetLab(t, "9.1.1")
	c := srv.Client()
	z := zone(t, "100-101")
	cl := cluster(t, c)
	must(t, cl.NewSDNZone(ctx, &proxmox.SDNZoneOptions{Name: "other", Type: "vlan", Bridge: "vmbr0"}))
	plan, err := pvesdn.PlanVNets(ctx, c, z)
	must(t, err)
	_, err = pvesdn.Apply(ctx, c, plan)
	if err == nil || !strings.Contains(err.Error(), "SDN zone other has a pending change (new)") {
		t.Fatalf("apply over another writer's pending zone: %v", err)
	}
	must(t, cl.DeleteSDNZone(ctx, "other"))
	srv.SetNodeUnreachable("pve3", true)
	res, err := pvesdn.Apply(ctx, c, plan)
	must(t, err)
	if res.Locked || !strings.Contains(res.Risk, "PVE 9.1 has no SDN lock and dry-run") || res.Applies != 1 {
		t.Fatalf("plain apply: %+v", res)
	}
	if n := res.Nodes[2]; n.Node != "pve3" || n.OK || !strings.Contains(n.Status, "not started: command 'pvesh set /nodes/pve3/network") {
		t.Errorf("the unreachable node: %+v", n)
	}
	drift, err := pvesdn.AuditVNets(ctx, c, z)
	must(t, err)
	if got := nodeCodes(drift); got != "NodeZoneUnreadable:pve3:" {
		t.Errorf("audit with pve3 down: %s", got)
	}
	empty, err := pvesdn.PlanVNets(ctx, c, z)
	must(t, err)
	if res, err := pvesdn.Apply(ctx, c, empty); err != nil || res.Applies != 0 || len(res.Unread) != 1 || res.Unread[0].Node != "pve3" {
		t.Errorf("an empty plan with pve3 unreadable: %+v %v", res, err)
	}
	srv.SetNodeUnreachable("pve3", false)
	drift, err = pvesdn.AuditVNets(ctx, c, z)
	must(t, err)
	if got := nodeCodes(drift); got != "NodeZonePending:pve3:" || !strings.Contains(drift[0].Message,
		"pxa0100: local sdn network configuration is not yet generated, please reload") {
		t.Errorf("audit with pve3 back: %s %+v", got, drift)
	}
	res, err = pvesdn.Apply(ctx, c, empty)
	must(t, err)
	if res.Applies != 1 || !res.OK() || len(res.Reapplied) != 1 || res.Reapplied[0].Status != pvesdn.ZonePending {
		t.Errorf("the re-apply for pve3: %+v", res)
	}
	if drift, err := pvesdn.AuditVNets(ctx, c, z); err != nil || len(drift) != 0 {
		t.Errorf("audit after the re-apply: %+v %v", drift, err)
	}
}

func TestPlanRefusalsAndAudit(t *testing.T) {
	srv := vnetLab(t, "9.2.0")
	c := srv.Client()
	cl := cluster(t, c)
	if _, err := pvesdn.PlanVNets(ctx, c, zone(t, "1-1025")); err == nil || !strings.Contains(err.Error(), "at most 1024") {
		t.Errorf("a zone of 1,025 VLANs: %v", err)
	}
	z := zone(t, "100-102")
	must(t, cl.NewSDNZone(ctx, &proxmox.SDNZoneOptions{Name: "oth", Type: "vlan", Bridge: "vmbr0"}))
	must(t, cl.NewSDNVNet(ctx, &proxmox.VNetOptions{Name: "pxa0101", Zone: "oth", Tag: 101}))
	if _, err := pvesdn.PlanVNets(ctx, c, z); err == nil || !strings.Contains(err.Error(), "VNet pxa0101 exists in zone oth") {
		t.Errorf("a VNet of our name in another zone: %v", err)
	}
	must(t, cl.NewSDNZone(ctx, &proxmox.SDNZoneOptions{Name: "pxz", Type: "simple"}))
	if _, err := pvesdn.PlanVNets(ctx, c, z); err == nil || !strings.Contains(err.Error(), "exists as a simple zone") {
		t.Errorf("our SDN zone name taken by a simple zone: %v", err)
	}
	must(t, cl.DeleteSDNVNet(ctx, "pxa0101"))
	must(t, cl.DeleteSDNZone(ctx, "oth"))
	must(t, cl.DeleteSDNZone(ctx, "pxz"))
	plan, err := pvesdn.PlanVNets(ctx, c, z)
	must(t, err)
	_, err = pvesdn.Apply(ctx, c, plan)
	must(t, err)
	drift, err := pvesdn.AuditVNets(ctx, c, z)
	must(t, err)
	if len(drift) != 0 {
		t.Fatalf("drift after the apply: %+v", drift)
	}
	must(t, cl.UpdateSDNVNet(ctx, &proxmox.VNet{Name: "pxa0101", Zone: "pxz", Tag: 999}))
	must(t, cl.DeleteSDNVNet(ctx, "pxa0102"))
	must(t, cl.NewSDNVNet(ctx, &proxmox.VNetOptions{Name: "stray", Zone: "pxz", Tag: 300}))
	drift, err = pvesdn.AuditVNets(ctx, c, z)
	must(t, err)
	var got []string
	for _, d := range drift {
		got = append(got, d.Code+":"+d.VNet)
	}
	want := "VNetOtherTag:pxa0101 VNetMissing:pxa0102 VNetNotOurs:stray VNetUnapplied:pxa0101 VNetUnapplied:pxa0102"
	if strings.Join(got, " ") != want {
		t.Errorf("drift:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}

func cluster(t *testing.T, c *proxmox.Client) *proxmox.Cluster {
	t.Helper()
	cl, err := c.Cluster(ctx)
	must(t, err)
	return cl
}
