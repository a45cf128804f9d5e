package ovnlab_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pxsubstrate/pxsubstrate/internal/ovnlab"
	"github.com/pxsubstrate/pxsubstrate/ovngateway"
)

// bfdDeadline bounds the wait for the standby's BFD session to come up, and
// to go down once its peer crashed (three intervals of 1 s).
const bfdDeadline = 15 * time.Second

// waitBFD waits up to bfdDeadline until the BFD session of from's tunnel
// to chassis peer is in state want.
func waitBFD(t *testing.T, from *ovnlab.Chassis, peer, want string) {
	t.Helper()
	tunnel := "ovn-" + peer + "-0"
	bfd := func() string {
		out, err := from.VSCtl("get", "Interface", tunnel, "bfd_status:state")
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out)
	}
	for deadline := time.Now().Add(bfdDeadline); bfd() != want; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("BFD on %s's tunnel %s is %q after %s, want %s", from.Name, tunnel, bfd(), bfdDeadline, want)
		}
	}
}

// TestGatewayTwoChassisNoFailover pins why the data-plane lab has a third
// chassis: when the only two chassis are the group's, OVN 23.03's standby
// does not take the port after the active one crashes, because it then has
// no BFD session up at all and counts itself as cut off.
func TestGatewayTwoChassisNoFailover(t *testing.T) {
	lab := ovnlab.New(t, ovnlab.Options{Chassis: []ovnlab.ChassisSpec{{Name: "ch1", Trunk: true}, {Name: "ch2", Trunk: true}}})
	lab.AddRouter("vpc1")
	sub1 := &ovnlab.Subnet{VPC: "vpc1", Name: "sub1", Gateway: prefix("10.100.0.1/24"), VLAN: 100}
	lab.AddSubnet(sub1)
	vm := lab.AddVM(ovnlab.VM{Name: "vm1", VLAN: 100, Addr: prefix("10.100.0.10/24"), Gateway: addr("10.100.0.1")})

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := ovngateway.Dial(ctx, ovngateway.Config{Address: lab.NBEndpoint()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	gw, err := ovngateway.NewGateway(ovngateway.Network{Namespace: "tenant-a", Name: "sub1", RouterPort: sub1.RouterPort()},
		"vpc1", "provider", []ovngateway.Candidate{{Node: "node-1", Chassis: "ch1"}, {Node: "node-2", Chassis: "ch2"}})
	if err != nil {
		t.Fatal(err)
	}
	if o, err := c.Reconcile(ctx, gw); err != nil || o.Reason != ovngateway.ReasonChassisAssigned {
		t.Fatalf("Reconcile = %+v, %v", o, err)
	}
	lab.SyncHV()
	active := gw.Members[0].Chassis
	lab.WaitBinding("cr-vpc1-sub1", active, 10*time.Second)
	eventuallyPing(t, vm, sub1.Gateway.Addr(), "the gateway with both chassis up")

	var standby *ovnlab.Chassis
	for _, ch := range lab.Chassis {
		if ch.Name != active {
			standby = ch
		}
	}
	waitBFD(t, standby, active, "up")
	for _, ch := range lab.Chassis {
		if ch.Name == active {
			ch.Crash()
		}
	}
	waitBFD(t, standby, active, "down")
	// ovn-controller reacts to a BFD change at once; give it ample time.
	time.Sleep(3 * time.Second)
	if got := lab.Binding("cr-vpc1-sub1"); got != active {
		t.Errorf("with two chassis, cr-vpc1-sub1 moved from the crashed %s to %q; OVN 23.03 was expected to keep it", active, got)
	}
	mustNotPing(t, vm, sub1.Gateway.Addr(), "the gateway of a crashed chassis without a third chassis")
}
