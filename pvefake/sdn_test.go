package pvefake_test

import (
	"fmt"
	"strings"
	"testing"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

func cluster(t *testing.T, c *proxmox.Client) *proxmox.Cluster {
	t.Helper()
	cl, err := c.Cluster(ctx)
	must(t, err)
	return cl
}

// vlanZone creates VLAN zone "pxz" on vmbr0 with two VNets.
func vlanZone(t *testing.T, cl *proxmox.Cluster) {
	t.Helper()
	must(t, cl.NewSDNZone(ctx, &proxmox.SDNZoneOptions{Name: "pxz", Type: "vlan", Bridge: "vmbr0", MTU: 9000}))
	must(t, cl.NewSDNVNet(ctx, &proxmox.VNetOptions{Name: "pxz100", Zone: "pxz", Tag: 100}))
	must(t, cl.NewSDNVNet(ctx, &proxmox.VNetOptions{Name: "pxz101", Zone: "pxz", Tag: 101}))
}

func TestSDNZonesAndVNetsValidation(t *testing.T) {
	_, c := start(t)
	cl := cluster(t, c)
	vlanZone(t, cl)
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"zone without bridge", cl.NewSDNZone(ctx, &proxmox.SDNZoneOptions{Name: "z2", Type: "vlan"}),
			"missing value for required option 'bridge'"},
		{"tag on a vlan zone", cl.NewSDNZone(ctx, &proxmox.SDNZoneOptions{Name: "z2", Type: "vlan", Bridge: "vmbr0", Tag: 5}),
			"unexpected property 'tag'"},
		{"zone ID too long", cl.NewSDNZone(ctx, &proxmox.SDNZoneOptions{Name: "zonezone9", Type: "simple"}),
			"zone: value may only be 8 characters long"},
		{"existing zone", cl.NewSDNZone(ctx, &proxmox.SDNZoneOptions{Name: "pxz", Type: "simple"}),
			"create sdn zone object failed: sdn zone object ID 'pxz' already defined"},
		{"VNet ID starting with a digit", cl.NewSDNVNet(ctx, &proxmox.VNetOptions{Name: "1pxz", Zone: "pxz", Tag: 7}),
			"vnet: value does not match the regex pattern"},
		{"VNet without tag", cl.NewSDNVNet(ctx, &proxmox.VNetOptions{Name: "pxz7", Zone: "pxz"}),
			"create sdn vnet object failed: 400 Parameter verification failed.\ntag: missing vlan tag"},
		{"tag taken", cl.NewSDNVNet(ctx, &proxmox.VNetOptions{Name: "other", Zone: "pxz", Tag: 100}),
			"tag 100 already exist in vnet pxz100"},
		{"tag above 4096", cl.NewSDNVNet(ctx, &proxmox.VNetOptions{Name: "big", Zone: "pxz", Tag: 5000}),
			"vlan tag max value is 4096"},
		{"unknown zone", cl.NewSDNVNet(ctx, &proxmox.VNetOptions{Name: "lost", Zone: "nozone", Tag: 5}),
			"create sdn vnet object failed: unknown section type ''"},
		{"zone in use", cl.DeleteSDNZone(ctx, "pxz"), "delete sdn zone object failed: zone pxz is used by vnet pxz100"},
	}
	for _, tc := range cases {
		wantMessage(t, tc.name, tc.err, tc.want)
	}
	// The admitted controls: a simple zone and a tagless VNet in it.
	must(t, cl.NewSDNZone(ctx, &proxmox.SDNZoneOptions{Name: "simple1", Type: "simple"}))
	wantMessage(t, "tag on a simple zone", cl.NewSDNVNet(ctx, &proxmox.VNetOptions{Name: "s1", Zone: "simple1", Tag: 3}),
		"vlan tag is not allowed on simple zone")
	must(t, cl.NewSDNVNet(ctx, &proxmox.VNetOptions{Name: "s1", Zone: "simple1"}))
	vnets, err := cl.SDNVNets(ctx)
	must(t, err)
	var got []string
	for _, v := range vnets {
		got = append(got, v.Name+":"+v.Zone)
	}
	if strings.Join(got, " ") != "pxz100:pxz pxz101:pxz s1:simple1" {
		t.Errorf("VNets = %v", got)
	}
}

func TestSDNPendingApplyAndReloadPerNode(t *testing.T) {
	srv, c := start(t, pvefake.WithCluster("lab"), pvefake.WithNodes("pve1", "pve2", "pve3"))
	cl := cluster(t, c)
	vlanZone(t, cl)
	var pending []map[string]any
	must(t, c.Get(ctx, "/cluster/sdn/vnets?pending=1", &pending))
	if len(pending) != 2 || pending[0]["state"] != "new" {
		t.Fatalf("pending VNets before the apply = %v", pending)
	}
	var running []map[string]any
	must(t, c.Get(ctx, "/cluster/sdn/vnets?running=1", &running))
	if len(running) != 0 {
		t.Fatalf("running VNets before the apply = %v", running)
	}
	srv.FailNodeReload("pve2", "command 'ifreload -a' failed: exit code 1")
	srv.SetNodeUnreachable("pve3", true)
	task, err := cl.SDNApply(ctx)
	must(t, wait(task, err))
	must(t, c.Get(ctx, "/cluster/sdn/vnets?running=1", &running))
	if len(running) != 2 || srv.SDNVersion() != 1 {
		t.Fatalf("running VNets after the apply = %v (version %d)", running, srv.SDNVersion())
	}
	log, err := task.Log(ctx, 0, 0)
	must(t, err)
	var lines []string
	for i := range len(log) {
		lines = append(lines, log[i])
	}
	if !strings.Contains(strings.Join(lines, "\n"), "command 'pvesh set /nodes/pve3/network --regenerate-frr 0' failed") {
		t.Errorf("apply log does not name the unreachable node: %v", log)
	}
	want := map[string]string{"pve1": "OK", "pve2": "command 'ifreload -a' failed: exit code 1", "pve3": "unreachable"}
	for node, status := range want {
		var tasks []map[string]any
		err := c.Get(ctx, "/nodes/"+node+"/tasks?typefilter=srvreload", &tasks)
		switch {
		case status == "unreachable":
			wantMessage(t, node, err, "No route to host")
		case err != nil || len(tasks) != 1 || tasks[0]["status"] != status || tasks[0]["user"] != "root@pam":
			t.Errorf("%s: reload tasks %v, %v; want one with status %q", node, tasks, err, status)
		}
	}
}

func TestSDNPermissions(t *testing.T) {
	srv, c := start(t)
	vlanZone(t, cluster(t, c))
	auditor := grantee(t, srv, "audit@pve", map[string][]string{"/sdn": {"PVEAuditor"}})
	admin := grantee(t, srv, "sdnadm@pve", map[string][]string{"/sdn/zones/pxz": {"PVESDNAdmin"}})
	acl := cluster(t, auditor)
	zones, err := acl.SDNZones(ctx)
	must(t, err)
	if len(zones) != 1 || zones[0].Name != "pxz" || zones[0].Type != "vlan" {
		t.Errorf("the auditor sees zones %v", zones)
	}
	wantMessage(t, "auditor creates a VNet", acl.NewSDNVNet(ctx, &proxmox.VNetOptions{Name: "a1", Zone: "pxz", Tag: 9}),
		"Permission check failed (/sdn/zones/pxz, SDN.Allocate)")
	_, err = acl.SDNApply(ctx)
	wantMessage(t, "auditor applies", err, "Permission check failed (/sdn, SDN.Allocate)")
	adm := cluster(t, admin)
	must(t, adm.NewSDNVNet(ctx, &proxmox.VNetOptions{Name: "a1", Zone: "pxz", Tag: 9}))
	wantMessage(t, "zone admin creates a zone", adm.NewSDNZone(ctx, &proxmox.SDNZoneOptions{Name: "z9", Type: "simple"}),
		"Permission check failed (/sdn/zones, SDN.Allocate)")
	// Bridges are listed only to callers with SDN.Audit or SDN.Use on them.
	user := grantee(t, srv, "nobody@pve", map[string][]string{"/nodes": {"PVEAuditor"}})
	nets, err := user.NodeRef("pve").Networks(ctx)
	must(t, err)
	if len(nets) != 1 || nets[0].Iface != "eno1" {
		t.Errorf("a user without SDN rights sees %v", nets)
	}
	must(t, srv.SetACL("/sdn/zones/localnetwork/vmbr0/100", pveacl.KindToken, "nobody@pve!tk", false, "PVESDNUser"))
	must(t, srv.SetACL("/sdn/zones/localnetwork/vmbr0/100", pveacl.KindUser, "nobody@pve", false, "PVESDNUser"))
	nets, err = user.NodeRef("pve").Networks(ctx)
	must(t, err)
	if len(nets) != 2 || nets[1].Iface != "vmbr0" {
		t.Errorf("a user with SDN.Use on one VLAN of vmbr0 sees %v", nets)
	}
}

func TestSDNLockRollbackAndDryRun(t *testing.T) {
	_, c := start(t, pvefake.WithRelease("9.2.0"))
	cl := cluster(t, c)
	vlanZone(t, cl)
	_, err := cl.SDNLock(ctx, false)
	wantMessage(t, "lock with pending changes", err, "could not acquire lock for SDN config: configuration has pending changes")
	task, err := cl.SDNApply(ctx)
	must(t, wait(task, err))
	token, err := cl.SDNLock(ctx, false)
	must(t, err)
	wantMessage(t, "VNet without the token", cl.NewSDNVNet(ctx, &proxmox.VNetOptions{Name: "pxz102", Zone: "pxz", Tag: 102}),
		"create sdn vnet object failed: invalid lock token provided!")
	must(t, c.Post(ctx, "/cluster/sdn/vnets", map[string]any{"vnet": "pxz102", "zone": "pxz", "tag": 102, "lock-token": string(token)}, nil))
	diff, err := cl.SDNDryRun(ctx, "pve")
	must(t, err)
	if !strings.Contains(diff.InterfacesDiff, "+auto pxz102") || !strings.Contains(diff.InterfacesDiff, "+\tbridge_ports ln_pxz102") ||
		strings.Contains(diff.InterfacesDiff, "+auto pxz100") {
		t.Errorf("dry-run diff does not add pxz102:\n%s", diff.InterfacesDiff)
	}
	must(t, cl.SDNRollback(ctx, token, true))
	vnets, err := cl.SDNVNets(ctx)
	must(t, err)
	if len(vnets) != 2 {
		t.Errorf("after the rollback the VNets are %v", vnets)
	}
	must(t, cl.NewSDNVNet(ctx, &proxmox.VNetOptions{Name: "pxz103", Zone: "pxz", Tag: 103}))
}

func TestSDNFeaturesFollowTheRelease(t *testing.T) {
	_, c91 := start(t)
	_, err := cluster(t, c91).SDNDryRun(ctx, "pve")
	wantMessage(t, "dry-run on 9.1", err, "Method 'GET /cluster/sdn/dry-run' not implemented")
	_, c8 := start(t, pvefake.WithVersion(pveacl.PVE8))
	_, err = cluster(t, c8).SDNLock(ctx, false)
	wantMessage(t, "lock on PVE 8", err, "Method 'POST /cluster/sdn/lock' not implemented")
	if _, err := pvefake.New(pvefake.WithRelease("8.4.1")); err == nil || !strings.Contains(err.Error(), "not a release of PVE 9") {
		t.Errorf("a PVE 8 release on a PVE 9 server: %v", err)
	}
}

func TestSDNVNetNICNeedsSDNUseOnTheVNet(t *testing.T) {
	srv, c := start(t)
	vlanZone(t, cluster(t, c))
	tenant := grantee(t, srv, "tenant@pve", map[string][]string{"/vms": {"PVEVMAdmin"}, "/storage": {"PVEDatastoreUser"}})
	must(t, srv.SetACL("/sdn/zones/pxz/pxz100", pveacl.KindUser, "tenant@pve", false, "PVESDNUser"))
	must(t, srv.SetACL("/sdn/zones/pxz/pxz100", pveacl.KindToken, "tenant@pve!tk", false, "PVESDNUser"))
	node := tenant.NodeRef("pve")
	err := wait(node.NewVirtualMachine(ctx, 101, proxmox.VirtualMachineOption{Name: "net0", Value: "virtio,bridge=pxz101"}))
	wantMessage(t, "NIC on another VNet", err, "Permission check failed (/sdn/zones/pxz/pxz101, SDN.Use)")
	must(t, wait(node.NewVirtualMachine(ctx, 101, proxmox.VirtualMachineOption{Name: "net0", Value: "virtio,bridge=pxz100"})))
}

// zoneStatus is each node's status of SDN zone pxz and, where it is not
// available, the statusmsg of its VNets, read through go-proxmox.
func zoneStatus(t *testing.T, c *proxmox.Client, nodes ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range nodes {
		node := c.NodeRef(name)
		zones, err := node.SDNZones(ctx)
		if err != nil {
			out[name] = message(err)
			continue
		}
		for _, z := range zones {
			if z.Zone != "pxz" {
				continue
			}
			out[name] = z.Status
			if z.Status == "available" {
				continue
			}
			content, err := node.SDNZoneContent(ctx, "pxz")
			must(t, err)
			for _, v := range content {
				out[name] += " " + v.VNet + ":" + v.Status + ":" + v.StatusMsg
			}
		}
	}
	return out
}

func TestSDNNodeZoneStatusAfterAFailedReload(t *testing.T) {
	srv, c := start(t, pvefake.WithNodes("pve1", "pve2", "pve3"))
	cl := cluster(t, c)
	must(t, cl.NewSDNZone(ctx, &proxmox.SDNZoneOptions{Name: "pxz", Type: "vlan", Bridge: "vmbr0"}))
	must(t, cl.NewSDNVNet(ctx, &proxmox.VNetOptions{Name: "pxz100", Zone: "pxz", Tag: 100}))
	zones, err := c.NodeRef("pve1").SDNZones(ctx)
	if err != nil || len(zones) != 0 {
		t.Fatalf("zones before the first apply: %v, %v", zones, err)
	}
	srv.FailNodeReload("pve2", "command 'ifreload -a' failed: exit code 1")
	srv.SetNodeUnreachable("pve3", true)
	task, err := cl.SDNApply(ctx)
	must(t, wait(task, err))
	srv.SetNodeUnreachable("pve3", false)
	got := zoneStatus(t, c, "pve1", "pve2", "pve3")
	want := map[string]string{
		"pve1": "available",
		"pve2": "error pxz100:error:error pxz100,error vmbr0v100,error ln_pxz100,error pr_pxz100",
		"pve3": "pending pxz100:pending:local sdn network configuration is not yet generated, please reload",
	}
	for node, w := range want {
		if got[node] != w {
			t.Errorf("%s after an apply it failed: %q, want %q", node, got[node], w)
		}
	}
	auditor := grantee(t, srv, "audit@pve", map[string][]string{"/nodes": {"PVEAuditor"}})
	_, err = auditor.NodeRef("pve2").SDNZoneContent(ctx, "pxz")
	wantMessage(t, "content without SDN.Audit", err, "Permission check failed (/sdn/zones/pxz, SDN.Audit)")
	srv.FailNodeReload("pve2", "")
	task, err = cl.SDNApply(ctx)
	must(t, wait(task, err))
	for node, status := range zoneStatus(t, c, "pve1", "pve2", "pve3") {
		if status != "available" {
			t.Errorf("%s after the second apply: %q", node, status)
		}
	}
}

// sdnResourceIDs lists the SDN and network entries of /cluster/resources.
func sdnResourceIDs(t *testing.T, c *proxmox.Client, query string) string {
	t.Helper()
	var rs []map[string]any
	must(t, c.Get(ctx, "/cluster/resources"+query, &rs))
	var got []string
	for _, r := range rs {
		if r["type"] == "sdn" || r["type"] == "network" {
			got = append(got, fmt.Sprintf("%s=%v", r["id"], r["status"]))
		}
	}
	return strings.Join(got, " ")
}

func TestSDNClusterResourcesFollowTheRelease(t *testing.T) {
	for _, tc := range []struct {
		release, sdn, all string
	}{
		{"8.4.1", "sdn/pve/pxz=error", "sdn/pve/pxz=error"},
		{"9.0.11", "sdn/pve/pxz=error", "sdn/pve/pxz=error"},
		{"9.0.12", "", "network/pve/zone/localnetwork=ok network/pve/zone/pxz=error"},
	} {
		opts := []pvefake.Option{pvefake.WithRelease(tc.release)}
		if strings.HasPrefix(tc.release, "8.") {
			opts = append(opts, pvefake.WithVersion(pveacl.PVE8))
		}
		srv, c := start(t, opts...)
		cl := cluster(t, c)
		vlanZone(t, cl)
		srv.FailNodeReload("pve", "command 'ifreload -a' failed: exit code 1")
		task, err := cl.SDNApply(ctx)
		must(t, wait(task, err))
		if got := sdnResourceIDs(t, c, "?type=sdn"); got != tc.sdn {
			t.Errorf("%s: type=sdn lists %q, want %q", tc.release, got, tc.sdn)
		}
		if got := sdnResourceIDs(t, c, ""); got != tc.all {
			t.Errorf("%s: all resources list %q, want %q", tc.release, got, tc.all)
		}
		nobody := grantee(t, srv, "nobody@pve", map[string][]string{"/vms": {"PVEAuditor"}})
		if got := sdnResourceIDs(t, nobody, ""); got != "" {
			t.Errorf("%s: a user without SDN.Audit sees %q", tc.release, got)
		}
	}
}
