package pvesdn_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pvefake"
	"github.com/pxsubstrate/pxsubstrate/pvesdn"
)

// vnetLab is three nodes with VLAN-aware bridges.
func vnetLab(t *testing.T, release string) *pvefake.Server {
	t.Helper()
	srv := pvefake.NewServer(t, pvefake.WithCluster("lab"), pvefake.WithNodes("pve1", "pve2", "pve3"),
		pvefake.WithRelease(release))
	for _, n := range []string{"pve1", "pve2", "pve3"} {
		must(t, srv.SetInterface(n, pvefake.Interface{Name: "vmbr0", Type: "bridge", Ports: "eno1", VLANAware: true,
			VIDs: "2-4094", MTU: 9000}))
	}
	return srv
}

func puts(srv *pvefake.Server) int {
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

// halfWrite plans VLANs 100-105 on a lab of release and applies the plan
// with the fifth VNet create failing; pe is the apply's
// *PartialWriteError, nil when it returned another error.
func halfWrite(t *testing.T, release string) (*pvefake.Server, *proxmox.Client, pvesdn.Zone, *pvesdn.Plan, *pvesdn.PartialWriteError, error) {
	t.Helper()
	srv := vnetLab(t, release)
	c := srv.Client()
	z := zone(t, "100-105")
	plan, err := pvesdn.PlanVNets(ctx, c, z)
	must(t, err)
	must(t, srv.InjectError(pvefake.Fault{Method: "POST", Path: `^/cluster/sdn/vnets$`, Status: 500, Message: "disk full", After: 4, Times: 1}))
	_, err = pvesdn.Apply(ctx, c, plan)
	var pe *pvesdn.PartialWriteError
	errors.As(err, &pe)
	return srv, c, z, plan, pe, err
}

// TestHalfWrittenApplyBeforeRelease92: a VNet create that fails after the
// zone and four VNets were written is a *PartialWriteError naming them
// and the commands that remove them; the next apply takes its own pending
// writes along and finishes (the zone applied with all six VNets), while
// another writer's pending VNet is still refused. The control: once
// finished, the plan is empty and nothing is applied again.
func TestHalfWrittenApplyBeforeRelease92(t *testing.T) {
	srv, c, z, _, pe, err := halfWrite(t, "9.1.1")
	if pe == nil || pe.Zone != "pxz" || len(pe.VNets) != 4 || pe.RolledBack ||
		!strings.Contains(err.Error(), "cannot create VNet pxa0104 (tag 104): 500 disk full") ||
		!strings.Contains(err.Error(), "before it this apply wrote SDN zone pxz and 4 VNet(s) pxa0100, pxa0101, pxa0102, pxa0103 (written, not applied)") ||
		!strings.Contains(err.Error(), "pvesh delete /cluster/sdn/vnets/pxa0103, pvesh delete /cluster/sdn/zones/pxz") {
		t.Fatalf("the half-written apply: %v", err)
	}
	if puts(srv) != 0 {
		t.Fatalf("%d applies after the failed write", puts(srv))
	}
	cl := cluster(t, c)
	must(t, cl.NewSDNVNet(ctx, &proxmox.VNetOptions{Name: "othr0007", Zone: "pxz", Tag: 7, Type: "vnet"}))
	again, err := pvesdn.PlanVNets(ctx, c, z)
	must(t, err)
	if _, err := pvesdn.Apply(ctx, c, again); err == nil || !strings.Contains(err.Error(), "SDN VNet othr0007 has a pending change (new)") {
		t.Fatalf("another writer's pending VNet beside the own: %v", err)
	}
	must(t, cl.DeleteSDNVNet(ctx, "othr0007"))
	again, err = pvesdn.PlanVNets(ctx, c, z)
	must(t, err)
	if again.CreateZone || len(again.Add) != 2 || again.Present != 4 {
		t.Fatalf("the plan after the half-written apply: %+v", again)
	}
	res, err := pvesdn.Apply(ctx, c, again)
	must(t, err)
	if res.Applies != 1 || !res.OK() || len(res.Finished) != 5 {
		t.Fatalf("the apply that finishes its own pending writes: %+v", res)
	}
	if drift, err := pvesdn.AuditVNets(ctx, c, z); err != nil || len(drift) != 0 {
		t.Errorf("audit after the finishing apply: %+v %v", drift, err)
	}
	// The plan is empty now, and nothing is pending: no apply.
	empty, err := pvesdn.PlanVNets(ctx, c, z)
	must(t, err)
	if res, err := pvesdn.Apply(ctx, c, empty); err != nil || res.Applies != 0 {
		t.Errorf("the apply after: %+v %v", res, err)
	}
}

// TestHalfWrittenApplyLocked: on 9.2 the same failure is rolled back
// under the lock, and the error says so: nothing of the apply remains,
// and the lock is released.
func TestHalfWrittenApplyLocked(t *testing.T) {
	srv, c, _, plan, pe, err := halfWrite(t, "9.2.0")
	if pe == nil || !pe.RolledBack || len(pe.Undo) != 0 ||
		!strings.Contains(err.Error(), "and rolled them back under the SDN lock: nothing of this apply remains") {
		t.Fatalf("the half-written locked apply: %v", err)
	}
	vnets, err := cluster(t, c).SDNVNets(ctx)
	must(t, err)
	if len(vnets) != 0 || srv.SDNLockToken() != "" {
		t.Fatalf("after the rollback: %d VNets, lock %q", len(vnets), srv.SDNLockToken())
	}
	res, err := pvesdn.Apply(ctx, c, plan)
	must(t, err)
	if res.Applies != 1 || !res.OK() || len(res.Finished) != 0 {
		t.Fatalf("the control, the same plan again: %+v", res)
	}
}

// TestLockWithoutTokenRefused: a lock answer without a token is no lock:
// the apply stops before writing anything.
func TestLockWithoutTokenRefused(t *testing.T) {
	lab := vnetLab(t, "9.2.0")
	z := zone(t, "100-101")
	c := lab.Client()
	plan, err := pvesdn.PlanVNets(ctx, c, z)
	must(t, err)
	empty := &tokenless{Client: c}
	if _, err := pvesdn.Apply(ctx, empty, plan); err == nil || !strings.Contains(err.Error(), "the SDN lock answer holds no lock token") {
		t.Fatalf("a lock without a token: %v", err)
	}
	if n := len(lab.MutatingRequests()); n != 1 {
		t.Errorf("%d changing requests, want only the lock: %v", n, lab.MutatingRequests())
	}
}

// tokenless answers POST /cluster/sdn/lock with {"data": ""}.
type tokenless struct{ *proxmox.Client }

func (c *tokenless) Post(ctx context.Context, path string, data, v any) error {
	if path == "/cluster/sdn/lock" {
		if err := c.Client.Post(ctx, path, data, nil); err != nil {
			return err
		}
		*(v.(*string)) = ""
		return nil
	}
	return c.Client.Post(ctx, path, data, v)
}

// TestNoNodesIsAFailure: a node list without a node ({"data": null}) is
// a ClusterUnreadable report for check and an error for apply and audit,
// never "carryable VLANs: none" with success.
func TestNoNodesIsAFailure(t *testing.T) {
	srv := vnetLab(t, "9.2.0")
	c := &noNodes{Client: srv.Client()}
	z := zone(t, "100-101")
	rep, err := pvesdn.Check(ctx, c, z)
	must(t, err)
	if rep.Error == "" || codes(rep) != ":ClusterUnreadable:" || !strings.Contains(rep.Error, "GET /nodes listed no node") {
		t.Errorf("check: %+v", rep)
	}
	if _, err := pvesdn.ZoneOnNodes(ctx, c, "pxa"); err == nil || !strings.Contains(err.Error(), "listed no node") {
		t.Errorf("the node audit: %v", err)
	}
	if rep, err := pvesdn.Check(ctx, srv.Client(), z); err != nil || rep.Error != "" || len(rep.Nodes) != 3 {
		t.Errorf("the control: %+v %v", rep, err)
	}
}

// noNodes answers GET /nodes with {"data": null}.
type noNodes struct{ *proxmox.Client }

func (c *noNodes) Get(ctx context.Context, path string, v any) error {
	if path == "/nodes" {
		return nil
	}
	return c.Client.Get(ctx, path, v)
}
