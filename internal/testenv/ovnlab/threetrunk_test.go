//go:build linux

package ovnlab_test

import (
	"testing"
)

// TestThreeTrunkNodes runs on a lab of three trunk chassis and no other,
// with vpc1's two VLAN subnets in groups of the three. First VPC peering
// (checkPeering): two VPCs the renderer peered reach each other, a third
// reaches neither. Then the failover of the group: after the active chassis
// crashes, the standby still has a BFD session up, to the third member, so
// it does not count itself as cut off (unlike
// TestGatewayTwoChassisNoFailover) and takes the port.
func TestThreeTrunkNodes(t *testing.T) {
	g := newTrunkLab(t, 3, 2)
	checkPeering(t, g)

	vm1, vm2 := g.vms[0], g.vms[1]
	eventuallyPing(t, vm1, vm2.Addr.Addr(), "a VM on the other VLAN subnet, routed by the active chassis")
	waitBFD(t, g.standby, g.active.Name, "up")
	waitBFD(t, g.standby, g.members[2].Chassis, "up")

	p := vm1.Probe(vm2.Addr.Addr())
	g.active.Crash()
	r := settle(t, g.Lab, p, g.standby.Name)
	t.Logf("failover, three trunk nodes and no other chassis, the active chassis crashes: outage %s (%d of %d probes failed)", r.Outage, r.Failed, r.Sent)
	if r.Failed == 0 {
		t.Errorf("a crashed gateway chassis must interrupt the ping until the standby takes over: %+v", r)
	}
}
