package lab_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/capi"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/lab"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/pvelab"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// TestVPCWorkers: two clusters of the tenant in VPC mode on the subnet
// "backend" (VLAN 200 of vmbr2), with pools of two workers and one worker
// whose net0 is on that subnet, come up on both capmox generations with
// the proxmox-network controller running under its manifests' RBAC: every
// worker's net0 on vmbr2 with tag 200, every worker's address (its Node's,
// and the one capmox tags the VM with) from the subnet's pool, none handed
// out twice, and the subnet's pool holding exactly one address per worker.
// On capmox v0.7.2 net0's pool reference does it; on v0.9.0, whose net0
// claims from the cluster's sentinel pool, the controller answers that
// claim with an address it claims from the subnet's pool.
func TestVPCWorkers(t *testing.T) { eachCapmox(t, vpcWorkers) }

func vpcWorkers(t *testing.T, gen capi.Capmox) {
	ctx := context.Background()
	l := startLabWith(t, lab.Options{Capmox: gen, Controller: controller(t)})
	for _, n := range pvelab.Nodes {
		must(t, l.PVE.SetInterface(n, pvefake.Interface{Name: "vmbr2", Type: "bridge", Ports: "eno3", VLANAware: true, VIDs: "2-4094"}))
	}
	network := readObjects(t, filepath.Join("testdata", "shapes-network.yaml"))
	must(t, l.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-demo"}}))
	must(t, l.Client.Create(ctx, network[1].DeepCopy()))
	for _, files := range [][2]string{{"vpc-kubernetes.yaml", "vpc-nodes.yaml"}, {"vpc-second-kubernetes.yaml", "vpc-second-nodes.yaml"}} {
		tn, err := lab.ReadTenant(filepath.Join("testdata", files[0]), filepath.Join("testdata", files[1]))
		must(t, err)
		tn.Lookup = network[:1]
		tn.Plan = func(p *tenantplan.Tenant) {
			p.Networks = append(p.Networks, tenantplan.Network{Bridge: "vmbr2", VLANs: []int{200}})
		}
		_, err = l.Apply(ctx, tn)
		must(t, err)
	}
	eventually(t, 5*time.Minute, "the three workers of the two VPC clusters run", func() (bool, string) {
		running, state := machines(t, l.Client, "tenant-demo")
		return running == 3, state + "\n" + l.Managers.Capmox.Tail(20)
	})
	checkVPCWorkers(t, l, gen)
}

// checkVPCWorkers asserts each worker's NIC and address, and the IPAM
// objects behind them.
func checkVPCWorkers(t *testing.T, l *lab.Lab, gen capi.Capmox) {
	t.Helper()
	seen := map[string]string{}
	for _, pm := range proxmoxMachinesList(t, l) {
		conf, _, ok := l.PVE.VMConfig(pm.vmid)
		if !ok {
			t.Errorf("%s: VM %d is not on the fake", pm.name, pm.vmid)
			continue
		}
		addr := taggedAddress(conf["tags"])
		want := map[string]bool{
			"net0 on vmbr2 tag 200":        strings.Contains(conf["net0"], "bridge=vmbr2") && strings.Contains(conf["net0"], "tag=200"),
			"no net1":                      conf["net1"] == "",
			"an address of the subnet":     addressIn(addr, "10.0.200.20", "10.0.200.29"),
			"an address no one else holds": seen[addr] == "",
		}
		for what, holds := range want {
			if !holds {
				t.Errorf("%s (VM %d, address %q): not %s (held by %q): %v", pm.name, pm.vmid, addr, what, seen[addr], conf)
			}
		}
		seen[addr] = pm.name
	}
	nodeAddrs := tenantNodeAddresses(t, l)
	for addr := range seen {
		if !slices.Contains(nodeAddrs, addr) {
			t.Errorf("no Node has the address %s capmox tagged a VM with (Nodes: %v)", addr, nodeAddrs)
		}
	}
	subnet, sentinel, subnetClaims := 0, 0, 0
	for _, ad := range listOf(t, l, "ipam.cluster.x-k8s.io/v1beta2", "IPAddressList") {
		pool, _, _ := unstructured.NestedString(ad.Object, "spec", "poolRef", "name")
		addr, _, _ := unstructured.NestedString(ad.Object, "spec", "address")
		switch {
		case pool == backendPool:
			subnet++
			if seen[addr] == "" {
				t.Errorf("address %s of the subnet's pool is no worker's", addr)
			}
		case strings.HasSuffix(pool, "-v4-icip"):
			sentinel++
			if seen[addr] == "" {
				t.Errorf("address %s of the cluster's pool %s is no worker's", addr, pool)
			}
		}
	}
	for _, c := range listOf(t, l, "ipam.cluster.x-k8s.io/v1beta2", "IPAddressClaimList") {
		if strings.HasSuffix(c.GetName(), "-subnet") {
			subnetClaims++
		}
	}
	// v0.7.2 takes net0's address from the subnet's pool itself; v0.9.0
	// claims from the cluster's pool, which the controller answers.
	wantSentinel := 0
	if gen != capi.CapmoxV07 {
		wantSentinel = 3
	}
	if subnet != 3 || sentinel != wantSentinel || subnetClaims != wantSentinel {
		t.Errorf("the subnet's pool holds %d addresses, the clusters' pools %d, with %d subnet claims: want 3, %d and %d",
			subnet, sentinel, subnetClaims, wantSentinel, wantSentinel)
	}
	if gen != capi.CapmoxV07 {
		for _, pm := range listOf(t, l, l.InfrastructureAPIVersion(), "ProxmoxMachineList") {
			if pm.GetAnnotations()[capmox.AnnotationNet0Pool] != backendPool {
				t.Errorf("ProxmoxMachine %s lacks %s: %s", pm.GetName(), capmox.AnnotationNet0Pool, backendPool)
			}
		}
	}
	if d, u, b := l.PVE.Denied(), l.PVE.Unserved(), l.PVE.BootErrors(); len(d)+len(u)+len(b) > 0 {
		t.Errorf("denied %v, unserved %v, boot errors %v", d, u, b)
	}
}

// taggedAddress is the net0 address capmox tags a VM with (ip_net0_<addr>).
func taggedAddress(tags string) string {
	for _, tag := range strings.Split(tags, ";") {
		if a, ok := strings.CutPrefix(tag, "ip_net0_"); ok {
			return a
		}
	}
	return ""
}

// tenantNodeAddresses lists the InternalIP of every tenant Node.
func tenantNodeAddresses(t *testing.T, l *lab.Lab) []string {
	t.Helper()
	var out []string
	for _, n := range listOfClient(t, l.TenantClient, "v1", "NodeList") {
		addrs, _, _ := unstructured.NestedSlice(n.Object, "status", "addresses")
		for _, a := range addrs {
			m, _ := a.(map[string]any)
			if m["type"] == "InternalIP" {
				out = append(out, m["address"].(string))
			}
		}
	}
	return out
}

func listOf(t *testing.T, l *lab.Lab, apiVersion, kind string) []unstructured.Unstructured {
	t.Helper()
	return listOfClient(t, l.Client, apiVersion, kind)
}

func listOfClient(t *testing.T, c client.Client, apiVersion, kind string) []unstructured.Unstructured {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(apiVersion)
	list.SetKind(kind)
	must(t, c.List(context.Background(), list))
	return list.Items
}

// TestDualStackWorkers: a cluster with an IPv4 and an IPv6 pool
// (proxmox.ipv6Config) brings its two workers up on both capmox
// generations, each worker's Node with an address of each pool, none
// handed out twice.
func TestDualStackWorkers(t *testing.T) { eachCapmox(t, dualStackWorkers) }

// dualStackWorkers applies a tenant of its own in the shared lab of gen:
// its Nodes are the tenant API server's Nodes of its VMs, and no address
// of any Node there is handed out twice.
func dualStackWorkers(t *testing.T, gen capi.Capmox) {
	ctx := context.Background()
	l, tn, sc := sharedTenant(t, gen, "dual", "dual-kubernetes.yaml", "nodes.yaml")
	a, err := l.Apply(ctx, tn)
	must(t, err)
	eventually(t, 4*time.Minute, "the two dual-stack workers run", func() (bool, string) {
		running, state := machines(t, l.Client, sc.NS)
		return running == 2, state
	})
	mine := nodesOfTenant(t, l, sc.NS)
	if len(mine) != 2 {
		t.Errorf("%d Nodes of %s's VMs, want 2: %v", len(mine), sc.NS, mine)
	}
	seen := map[string]string{}
	for _, n := range listOfClient(t, l.TenantClient, "v1", "NodeList") {
		addrs, _, _ := unstructured.NestedSlice(n.Object, "status", "addresses")
		v4, v6, internal := 0, 0, 0
		for _, a := range addrs {
			m, _ := a.(map[string]any)
			addr, _ := m["address"].(string)
			if m["type"] != "InternalIP" {
				continue
			}
			internal++
			if other, ok := seen[addr]; ok {
				t.Errorf("address %s is handed out twice: Nodes %s and %s", addr, other, n.GetName())
			}
			seen[addr] = n.GetName()
			switch {
			case addressIn(addr, sc.First, sc.Last):
				v4++
			case addressIn(addr, sc.First6, sc.Last6):
				v6++
			}
		}
		if !slices.Contains(mine, n.GetName()) {
			continue
		}
		if v4 != 1 || v6 != 1 || internal != 2 {
			t.Errorf("Node %s has %d IPv4 and %d IPv6 addresses of the pools among %d InternalIPs, want one each and no other: %v", n.GetName(), v4, v6, internal, addrs)
		}
	}
	checkTenantRequests(t, l, a)
}
