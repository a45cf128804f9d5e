package lab_test

import (
	"context"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv/capi"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/lab"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/pvelab"
)

// vpcSubnetPool is the network, Subnet and pool id of subnet "workers" of
// VPC "net" in tenant-vpc (testdata/vpc.yaml): cozyid.Subnet.
const vpcSubnetPool = "subnet-fc67fea6"

// TestVPCWorkersFromVPCInput goes the way hack/lab.sh apply does with a
// tenant's VPC input (testdata/vpc.yaml, what `pxsubstrate render vpc`
// reads) and a cluster and pool on its Proxmox-backed subnet
// (testdata/vpc-web.yaml), on both capmox generations. First the same VPC
// with one field wrong (testdata/vpc-bad.yaml: the VM range outside the
// CIDR) is refused by file, document and field, and nothing is made: no
// namespace, Vpc, Subnet, ProxmoxNetwork or Proxmox user. Then the
// admitted VPC: the controller gives the subnet the first VLAN of the
// lab's zone (200 of the trunk bridge vmbr1) and reports its network
// Ready; the tenant's capmox token holds SDN.Use on exactly that VLAN of
// the bridge (the tenant plan reads the VLAN from the ProxmoxNetwork), not
// the next one; both workers run with net0 on vmbr1 tag 200, each with an
// address of the subnet's pool (the one capmox tags the VM with, and its
// Node's), none twice, and the pool holds exactly one address per
// worker; the zone counts the VLAN allocated; no request was denied.
func TestVPCWorkersFromVPCInput(t *testing.T) { eachCapmox(t, vpcWorkersFromInput) }

func vpcWorkersFromInput(t *testing.T, gen capi.Capmox) {
	ctx := context.Background()
	l := startLabWith(t, lab.Options{Capmox: gen, Controller: controller(t)})
	bad, err := lab.ReadTenant(filepath.Join("testdata", "vpc-bad.yaml"), filepath.Join("testdata", "vpc-web.yaml"))
	must(t, err)
	_, err = l.Apply(ctx, bad)
	refusal := filepath.Join("testdata", "vpc-bad.yaml") + `: document 1 (line 1): subnets[workers].proxmox.vmRange: subnet "workers": proxmox.vmRange 10.20.1.20-10.20.1.29 must lie inside 10.20.0.0/24`
	if err == nil || !strings.HasPrefix(err.Error(), refusal) {
		t.Fatalf("the bad VPC: got %v, want the refusal %q", err, refusal)
	}
	checkNothingMade(t, l)

	good, err := lab.ReadTenant(filepath.Join("testdata", "vpc.yaml"), filepath.Join("testdata", "vpc-web.yaml"))
	must(t, err)
	a, err := l.Apply(ctx, good)
	must(t, err)
	want := lab.Network{Namespace: "tenant-vpc", VPC: "net", Subnet: "workers", Name: vpcSubnetPool, Zone: lab.Zone,
		Bridge: pvelab.Bridge, VLAN: 200, CIDR: "10.20.0.0/24"}
	if len(a.Networks) != 1 || a.Networks[0] != want {
		t.Fatalf("the VPC's networks: %+v, want %+v", a.Networks, want)
	}
	for path, holds := range map[string]bool{"/sdn/zones/localnetwork/vmbr1/200": true, "/sdn/zones/localnetwork/vmbr1/201": false} {
		if got := hasSDNUse(t, l, a.TokenID, path); got != holds {
			t.Errorf("the tenant's capmox token %s holds SDN.Use on %s: %v, want %v", a.TokenID, path, got, holds)
		}
	}
	eventually(t, 5*time.Minute, "the two workers on the VPC subnet run", func() (bool, string) {
		running, state := machines(t, l.Client, "tenant-vpc")
		return running == 2, state + "\n" + l.Managers.Capmox.Tail(20)
	})
	checkSubnetWorkers(t, l)
}

// checkNothingMade asserts that a refused apply made nothing of the VPC
// tenant, on the management API server or on Proxmox VE.
func checkNothingMade(t *testing.T, l *lab.Lab) {
	t.Helper()
	ctx := context.Background()
	for _, o := range []struct{ apiVersion, kind, ns, name string }{
		{"v1", "Namespace", "", "tenant-vpc"},
		{"kubeovn.io/v1", "Subnet", "", vpcSubnetPool},
		{"kubeovn.io/v1", "Vpc", "", "vpc-c102ac"},
		{"proxmox.cozystack.io/v1alpha1", "ProxmoxNetwork", "tenant-vpc", vpcSubnetPool},
	} {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(o.apiVersion)
		u.SetKind(o.kind)
		if err := l.Client.Get(ctx, client.ObjectKey{Namespace: o.ns, Name: o.name}, u); !apierrors.IsNotFound(err) {
			t.Errorf("after the refusal, %s %s: %v, want not found", o.kind, o.name, err)
		}
	}
	var users []map[string]any
	must(t, l.PVE.Client().Get(ctx, "/access/users", &users))
	for _, u := range users {
		if u["userid"] == "tenant-vpc@pve" {
			t.Errorf("after the refusal, the Proxmox user tenant-vpc@pve exists")
		}
	}
}

// hasSDNUse reports whether token holds SDN.Use on path, as PVE computes it.
func hasSDNUse(t *testing.T, l *lab.Lab, token, path string) bool {
	t.Helper()
	var perms map[string]map[string]int
	must(t, l.PVE.Client().Get(context.Background(), "/access/permissions?userid="+url.QueryEscape(token)+"&path="+url.QueryEscape(path), &perms))
	_, ok := perms[path]["SDN.Use"]
	return ok
}

// checkSubnetWorkers asserts the VPC workers' NICs and addresses, the
// subnet pool's addresses and the zone's count.
func checkSubnetWorkers(t *testing.T, l *lab.Lab) {
	t.Helper()
	seen := map[string]string{}
	for _, pms := range proxmoxMachinesAll(t, l, "tenant-vpc") {
		for _, pm := range pms {
			conf, _, ok := l.PVE.VMConfig(pm.vmid)
			if !ok {
				t.Errorf("%s: VM %d is not on the fake", pm.name, pm.vmid)
				continue
			}
			addr := taggedAddress(conf["tags"])
			for what, holds := range map[string]bool{
				"net0 on vmbr1 tag 200":           strings.Contains(conf["net0"], "bridge=vmbr1") && strings.Contains(conf["net0"], "tag=200"),
				"an address of the subnet's pool": addressIn(addr, "10.20.0.20", "10.20.0.29"),
				"an address no one else holds":    seen[addr] == "",
			} {
				if !holds {
					t.Errorf("%s (VM %d, address %q): not %s (held by %q): %v", pm.name, pm.vmid, addr, what, seen[addr], conf)
				}
			}
			seen[addr] = pm.name
		}
	}
	if len(seen) != 2 {
		t.Errorf("%d workers with addresses, want 2: %v", len(seen), seen)
	}
	nodeAddrs := tenantNodeAddresses(t, l)
	for addr := range seen {
		if !slices.Contains(nodeAddrs, addr) {
			t.Errorf("no Node has the address %s capmox tagged a VM with (Nodes: %v)", addr, nodeAddrs)
		}
	}
	inPool := 0
	for _, ad := range listOf(t, l, "ipam.cluster.x-k8s.io/v1beta2", "IPAddressList") {
		pool, _, _ := unstructured.NestedString(ad.Object, "spec", "poolRef", "name")
		addr, _, _ := unstructured.NestedString(ad.Object, "spec", "address")
		if pool == vpcSubnetPool {
			inPool++
			if seen[addr] == "" {
				t.Errorf("address %s of the subnet's pool is no worker's", addr)
			}
		}
	}
	if inPool != 2 {
		t.Errorf("the subnet's pool holds %d addresses, want 2", inPool)
	}
	zone := &unstructured.Unstructured{}
	zone.SetAPIVersion("proxmox.cozystack.io/v1alpha1")
	zone.SetKind("ProxmoxNetworkZone")
	must(t, l.Client.Get(context.Background(), client.ObjectKey{Name: lab.Zone}, zone))
	if n, _, _ := unstructured.NestedInt64(zone.Object, "status", "allocatedVLANs"); n != 1 {
		t.Errorf("zone %s counts %d VLANs allocated, want 1", lab.Zone, n)
	}
	if d, u, b := l.PVE.Denied(), l.PVE.Unserved(), l.PVE.BootErrors(); len(d)+len(u)+len(b) > 0 {
		t.Errorf("denied %v, unserved %v, boot errors %v", d, u, b)
	}
}
