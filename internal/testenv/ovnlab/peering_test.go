//go:build linux

package ovnlab_test

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	ipamv1alpha2 "github.com/pxsubstrate/pxsubstrate/api/ipam/v1alpha2"
	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/cozyid"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/ovnlab"
	"github.com/pxsubstrate/pxsubstrate/vpcrender"
)

// peeredVPC is a VPC the renderer made and the lab laid out as Kube-OVN
// would: its router, its one Proxmox-backed subnet with a VM on the
// subnet's VLAN, and its peerings and static routes.
type peeredVPC struct {
	id     string
	subnet *ovnlab.Subnet
	// active is the first member of the subnet's gateway group.
	active string
	vm     *ovnlab.Host
	// peerings are the router ports of its peerings.
	peerings []string
}

// renderVPC renders the VPC tenant/name with one Proxmox-backed subnet of
// cidr, peered with peers (each "<namespace>/<name>") and routing each of
// routes (cidr to the peer's end of the link, as a tenant writes it).
func renderVPC(t *testing.T, tenant, name, cidr string, peers []string, routes map[string]string) vpcrender.Rendering {
	t.Helper()
	s := vpcrender.Spec{
		Namespace: tenant, Name: name,
		Subnets: []vpcrender.VPCSubnet{{Name: "vms", CIDR: cidr, Proxmox: &vpcrender.ProxmoxSubnet{}}},
		Zones:   []vpcrender.Zone{{Name: "lab", ProviderNetwork: "provider", MTU: 1500}},
	}
	for _, p := range peers {
		ns, vpc, _ := strings.Cut(p, "/")
		s.Peers = append(s.Peers, vpcrender.Peer{VPCName: vpc, TenantNamespace: ns})
	}
	for dst, hop := range routes {
		s.Routes = append(s.Routes, vpcrender.Route{CIDR: dst, NextHopIP: hop})
	}
	r, err := vpcrender.Render(s)
	if err != nil {
		t.Fatalf("render %s/%s: %v", tenant, name, err)
	}
	return r
}

// layOut builds in the lab's NB what Kube-OVN makes of a rendering: the
// Vpc's router, peerings and static routes, and for the Proxmox-backed
// subnet its switch on VLAN vlan, whose router port the controller puts
// into a gateway group for the ProxmoxNetwork. The VM named vm takes the
// first address of the subnet's InClusterIPPool.
func layOut(t *testing.T, g *trunkLab, r vpcrender.Rendering, vlan int, vm string) *peeredVPC {
	t.Helper()
	v := &peeredVPC{id: r.VPCID}
	var vpc *vpcrender.Vpc
	var sub *kubeovnv1.Subnet
	var pool *ipamv1alpha2.InClusterIPPool
	var network *v1alpha1.ProxmoxNetwork
	for _, o := range r.Objects {
		switch o := o.(type) {
		case *vpcrender.Vpc:
			vpc = o
		case *kubeovnv1.Subnet:
			sub = o
		case *ipamv1alpha2.InClusterIPPool:
			pool = o
		case *v1alpha1.ProxmoxNetwork:
			network = o
		}
	}
	if vpc == nil || sub == nil || pool == nil || network == nil {
		t.Fatalf("rendering of %s lacks the Vpc, Subnet, InClusterIPPool or ProxmoxNetwork: %d objects", r.VPCID, len(r.Objects))
	}
	cidr := prefix(sub.Spec.CIDRBlock)
	v.subnet = &ovnlab.Subnet{VPC: sub.Spec.Vpc, Name: sub.Name, VLAN: vlan,
		Gateway: netip.PrefixFrom(addr(sub.Spec.Gateway), cidr.Bits())}
	g.AddRouter(vpc.Name)
	g.AddSubnet(v.subnet)
	for _, p := range vpc.Spec.VpcPeerings {
		v.peerings = append(v.peerings, g.AddPeering(vpc.Name, p.RemoteVpc, p.LocalConnectIP))
	}
	applyRoutes(g, vpc)
	v.active = g.reconcile(t, network.Namespace, v.subnet)[0].Chassis
	first, _, _ := strings.Cut(pool.Spec.Addresses[0], "-")
	v.vm = g.AddVM(ovnlab.VM{Name: vm, VLAN: vlan, Addr: netip.PrefixFrom(addr(first), pool.Spec.Prefix), Gateway: addr(pool.Spec.Gateway)})
	return v
}

// applyRoutes makes vpc's static routes those of its spec.staticRoutes, as
// Kube-OVN's reconcile of a Vpc does: the dst-ip routes there were go, the
// rendered ones (Kube-OVN's default policy dst-ip) come.
func applyRoutes(g *trunkLab, vpc *vpcrender.Vpc) {
	g.NBCtl("--if-exists", "--policy=dst-ip", "lr-route-del", vpc.Name)
	for _, rt := range vpc.Spec.StaticRoutes {
		g.AddStaticRoute(vpc.Name, rt.CIDR, rt.NextHopIP)
	}
}

// vpcOf returns a rendering's Vpc.
func vpcOf(t *testing.T, r vpcrender.Rendering) *vpcrender.Vpc {
	t.Helper()
	for _, o := range r.Objects {
		if v, ok := o.(*vpcrender.Vpc); ok {
			return v
		}
	}
	t.Fatalf("rendering of %s has no Vpc", r.VPCID)
	return nil
}

// checkPeering peers two VPCs the way Kube-OVN lays a peering out, each
// with a Proxmox-backed subnet, and shows with real packets that their VMs
// reach each other, and that a third, unpeered VPC reaches neither, nor
// they it. Each refused probe follows a probe from the same VM that
// succeeds, so a refusal cannot come from a path broken altogether.
func checkPeering(t *testing.T, g *trunkLab) {
	t.Helper()
	idA, idB := cozyid.VPC("tenant-a", "alpha"), cozyid.VPC("tenant-b", "beta")
	// Each tenant routes to the other's subnet via the other's end of the
	// link, which both derive from the pair of ids.
	hopToB, hopToA := vpcrender.PeeringLink(idB, idA).Addr().String(), vpcrender.PeeringLink(idA, idB).Addr().String()
	a := layOut(t, g, renderVPC(t, "tenant-a", "alpha", "10.61.0.0/24", []string{"tenant-b/beta"}, map[string]string{"10.62.0.0/24": hopToB}), 301, "pa")
	b := layOut(t, g, renderVPC(t, "tenant-b", "beta", "10.62.0.0/24", []string{"tenant-a/alpha"}, map[string]string{"10.61.0.0/24": hopToA}), 302, "pb")
	c := layOut(t, g, renderVPC(t, "tenant-c", "gamma", "10.63.0.0/24", nil, nil), 303, "pc")
	g.SyncHV()
	checkPeeringPorts(t, g, a, b, c)
	for _, v := range []*peeredVPC{a, b, c} {
		g.WaitBinding("cr-"+v.subnet.RouterPort(), v.active, 10*time.Second)
		eventuallyPing(t, v.vm, v.subnet.Gateway.Addr(), "the VPC's own gateway")
	}

	vmA, vmB, vmC := a.vm.Addr.Addr(), b.vm.Addr.Addr(), c.vm.Addr.Addr()
	eventuallyPing(t, a.vm, vmB, "a VM of the peered VPC")
	eventuallyPing(t, b.vm, vmA, "back to the VM of the peered VPC")
	mustNotPing(t, a.vm, vmC, "a VM of the peered VPC must not reach the unpeered VPC")
	mustPing(t, b.vm, vmA, "the peered VPC again, before probing the unpeered one")
	mustNotPing(t, b.vm, vmC, "the other peered VPC must not reach the unpeered VPC")
	mustPing(t, c.vm, c.subnet.Gateway.Addr(), "the unpeered VPC's own gateway")
	mustNotPing(t, c.vm, vmA, "the unpeered VPC must not reach the first peered VPC")
	mustPing(t, c.vm, c.subnet.Gateway.Addr(), "the unpeered VPC's own gateway again")
	mustNotPing(t, c.vm, vmB, "the unpeered VPC must not reach the second peered VPC")
	mustPing(t, a.vm, vmB, "the peered VPC, before probing a VPC it is not peered with")
	mustNotPing(t, a.vm, g.vms[0].Addr.Addr(), "a VPC the peered VPC is not peered with (vpc1)")

	// The routes carry the traffic, not the link alone: rendered without
	// its route, alpha's VM reaches its own gateway but not beta's VM.
	g.SyncHV()
	applyRoutes(g, vpcOf(t, renderVPC(t, "tenant-a", "alpha", "10.61.0.0/24", []string{"tenant-b/beta"}, nil)))
	g.SyncHV()
	mustPing(t, a.vm, a.subnet.Gateway.Addr(), "the VPC's own gateway, with no route to the peer")
	mustNotPing(t, a.vm, vmB, "the peering link alone, without a route to the peer")
	applyRoutes(g, vpcOf(t, renderVPC(t, "tenant-a", "alpha", "10.61.0.0/24", []string{"tenant-b/beta"}, map[string]string{"10.62.0.0/24": hopToB})))
	g.SyncHV()
	eventuallyPing(t, a.vm, vmB, "the peered VPC once the route is back")
	for _, line := range []string{
		fmt.Sprintf("peering: the gateway of %s is on %s, of %s on %s, of the unpeered %s on %s", a.id, a.active, b.id, b.active, c.id, c.active),
		fmt.Sprintf("peering: %s (%s) and %s (%s) reach each other; %s (%s) reaches neither, nor they it", a.id, vmA, b.id, vmB, c.id, vmC),
		fmt.Sprintf("peering: rendered without its route to 10.62.0.0/24, %s reaches its own gateway but not %s; with the route back, it does", a.id, b.id),
	} {
		t.Log(line)
		checkDocLine(t, line)
	}
}

// checkPeeringPorts checks the NB layout of the peering: each side's port
// "<vpc>-<remote>" on its /30 with the other side as peer, and no peering
// port on the unpeered VPC.
func checkPeeringPorts(t *testing.T, g *trunkLab, a, b, c *peeredVPC) {
	t.Helper()
	for _, s := range []struct{ local, remote *peeredVPC }{{a, b}, {b, a}} {
		port := s.local.id + "-" + s.remote.id
		if !slices.Equal(s.local.peerings, []string{port}) {
			t.Errorf("%s's peering ports are %v, want [%s]", s.local.id, s.local.peerings, port)
		}
		want := vpcrender.PeeringLink(cozyid.VPCID(s.local.id), cozyid.VPCID(s.remote.id)).String()
		networks := strings.TrimSpace(g.NBCtl("get", "Logical_Router_Port", port, "networks"))
		peer := strings.Trim(strings.TrimSpace(g.NBCtl("get", "Logical_Router_Port", port, "peer")), `"`)
		if networks != fmt.Sprintf("[%q]", want) || peer != s.remote.id+"-"+s.local.id {
			t.Errorf("router port %s: networks %s and peer %s, want [%q] and %s-%s", port, networks, peer, want, s.remote.id, s.local.id)
		}
	}
	if len(c.peerings) != 0 {
		t.Errorf("the unpeered VPC %s has peering ports %v", c.id, c.peerings)
	}
}
