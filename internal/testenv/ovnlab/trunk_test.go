//go:build linux

package ovnlab_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv/ovnlab"
	"github.com/pxsubstrate/pxsubstrate/ovngateway"
)

// trunkLab is the layout of the failover tests without a worker chassis:
// only trunk chassis ch1..chN, VPC vpc1 with VLAN subnets sub1 (VLAN 100)
// and, optionally, sub2 (VLAN 200), a VM on each, and every subnet's router
// port in a group of all the chassis, written by ovngateway.
type trunkLab struct {
	*ovnlab.Lab
	subs []*ovnlab.Subnet
	vms  []*ovnlab.Host
	// nb is the gateway client; candidates are every chassis, as nodes
	// node-1..node-N.
	nb         *ovngateway.Client
	candidates []ovngateway.Candidate
	// active and standby are the first two members of vpc1's groups.
	active, standby *ovnlab.Chassis
	// members are vpc1's group members in priority order.
	members []ovngateway.Member
}

// newTrunkLab starts a lab of chassis trunk chassis with subnets VLAN
// subnets of vpc1 (1 or 2), writes their groups and waits until the active
// chassis holds every router port.
func newTrunkLab(t *testing.T, chassis, subnets int) *trunkLab {
	t.Helper()
	var specs []ovnlab.ChassisSpec
	g := &trunkLab{}
	for i := 1; i <= chassis; i++ {
		name := fmt.Sprintf("ch%d", i)
		specs = append(specs, ovnlab.ChassisSpec{Name: name, Trunk: true})
		g.candidates = append(g.candidates, ovngateway.Candidate{Node: fmt.Sprintf("node-%d", i), Chassis: name})
	}
	g.Lab = ovnlab.New(t, ovnlab.Options{Chassis: specs})
	g.AddRouter("vpc1")
	for i := 1; i <= subnets; i++ {
		s := &ovnlab.Subnet{VPC: "vpc1", Name: fmt.Sprintf("sub%d", i), Gateway: prefix(fmt.Sprintf("10.%d.0.1/24", i*100)), VLAN: i * 100}
		g.AddSubnet(s)
		g.subs = append(g.subs, s)
		g.vms = append(g.vms, g.AddVM(ovnlab.VM{Name: fmt.Sprintf("vm%d", i), VLAN: s.VLAN,
			Addr: prefix(fmt.Sprintf("10.%d.0.10/24", i*100)), Gateway: s.Gateway.Addr()}))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := ovngateway.Dial(ctx, ovngateway.Config{Address: g.NBEndpoint()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	g.nb = c
	for _, s := range g.subs {
		g.members = g.reconcile(t, "tenant-a", s)
	}
	g.SyncHV()
	g.active, g.standby = g.chassis(t, g.members[0].Chassis), g.chassis(t, g.members[1].Chassis)
	for _, s := range g.subs {
		g.WaitBinding("cr-"+s.RouterPort(), g.active.Name, 10*time.Second)
	}
	return g
}

// reconcile puts s's router port into a group of every chassis, as the
// controller does for the ProxmoxNetwork namespace/<subnet>, and returns
// the group's members.
func (g *trunkLab) reconcile(t *testing.T, namespace string, s *ovnlab.Subnet) []ovngateway.Member {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	gw, err := ovngateway.NewGateway(ovngateway.Network{Namespace: namespace, Name: s.Name, RouterPort: s.RouterPort()}, s.VPC, "provider", g.candidates)
	if err != nil {
		t.Fatal(err)
	}
	if o, err := g.nb.Reconcile(ctx, gw); err != nil || o.Reason != ovngateway.ReasonChassisAssigned {
		t.Fatalf("Reconcile(%s) = %+v, %v; want ChassisAssigned", s.RouterPort(), o, err)
	}
	return gw.Members
}

// chassis returns the lab's chassis of that name.
func (g *trunkLab) chassis(t *testing.T, name string) *ovnlab.Chassis {
	t.Helper()
	for _, ch := range g.Chassis {
		if ch.Name == name {
			return ch
		}
	}
	t.Fatalf("the lab has no chassis %q", name)
	return nil
}
