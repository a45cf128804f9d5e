package ovnlab_test

import (
	"context"
	"testing"
	"time"

	"github.com/pxsubstrate/pxsubstrate/internal/ovnlab"
	"github.com/pxsubstrate/pxsubstrate/ovngateway"
)

// TestGatewayThreeTrunkFailover measures the failover of a group of three
// trunk nodes with no other chassis: after the active chassis crashes, the
// standby still has a BFD session up, to the third member, so it does not
// count itself as cut off (unlike TestGatewayTwoChassisNoFailover) and
// takes the port.
func TestGatewayThreeTrunkFailover(t *testing.T) {
	lab := ovnlab.New(t, ovnlab.Options{Chassis: []ovnlab.ChassisSpec{
		{Name: "ch1", Trunk: true}, {Name: "ch2", Trunk: true}, {Name: "ch3", Trunk: true},
	}})
	lab.AddRouter("vpc1")
	sub1 := &ovnlab.Subnet{VPC: "vpc1", Name: "sub1", Gateway: prefix("10.100.0.1/24"), VLAN: 100}
	sub2 := &ovnlab.Subnet{VPC: "vpc1", Name: "sub2", Gateway: prefix("10.200.0.1/24"), VLAN: 200}
	lab.AddSubnet(sub1)
	lab.AddSubnet(sub2)
	vm1 := lab.AddVM(ovnlab.VM{Name: "vm1", VLAN: 100, Addr: prefix("10.100.0.10/24"), Gateway: addr("10.100.0.1")})
	vm2 := lab.AddVM(ovnlab.VM{Name: "vm2", VLAN: 200, Addr: prefix("10.200.0.10/24"), Gateway: addr("10.200.0.1")})

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := ovngateway.Dial(ctx, ovngateway.Config{Address: lab.NBEndpoint()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cands := []ovngateway.Candidate{{Node: "node-1", Chassis: "ch1"}, {Node: "node-2", Chassis: "ch2"}, {Node: "node-3", Chassis: "ch3"}}
	var members []ovngateway.Member
	for _, s := range []*ovnlab.Subnet{sub1, sub2} {
		gw, err := ovngateway.NewGateway(ovngateway.Network{Namespace: "tenant-a", Name: s.Name, RouterPort: s.RouterPort()}, "vpc1", "provider", cands)
		if err != nil {
			t.Fatal(err)
		}
		if o, err := c.Reconcile(ctx, gw); err != nil || o.Reason != ovngateway.ReasonChassisAssigned {
			t.Fatalf("Reconcile(%s) = %+v, %v", s.RouterPort(), o, err)
		}
		members = gw.Members
	}
	lab.SyncHV()
	byName := map[string]*ovnlab.Chassis{}
	for _, ch := range lab.Chassis {
		byName[ch.Name] = ch
	}
	active, standby := byName[members[0].Chassis], byName[members[1].Chassis]
	lab.WaitBinding("cr-vpc1-sub1", active.Name, 10*time.Second)
	lab.WaitBinding("cr-vpc1-sub2", active.Name, 10*time.Second)
	eventuallyPing(t, vm1, vm2.Addr.Addr(), "a VM on the other VLAN subnet, routed by the active chassis")
	waitBFD(t, standby, active.Name, "up")
	waitBFD(t, standby, members[2].Chassis, "up")

	p := vm1.Probe(vm2.Addr.Addr())
	active.Crash()
	r := settle(t, lab, p, standby.Name)
	t.Logf("failover, three trunk nodes and no other chassis, the active chassis crashes: outage %s (%d of %d probes failed)", r.Outage, r.Failed, r.Sent)
	if r.Failed == 0 {
		t.Errorf("a crashed gateway chassis must interrupt the ping until the standby takes over: %+v", r)
	}
}
