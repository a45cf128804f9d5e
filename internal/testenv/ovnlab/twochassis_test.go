//go:build linux

package ovnlab_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv/ovnlab"
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
	g := newTrunkLab(t, 2, 1)
	vm, sub1 := g.vms[0], g.subs[0]
	active, standby := g.active, g.standby
	eventuallyPing(t, vm, sub1.Gateway.Addr(), "the gateway with both chassis up")

	waitBFD(t, standby, active.Name, "up")
	active.Crash()
	waitBFD(t, standby, active.Name, "down")
	// ovn-controller reacts to a BFD change at once; give it ample time.
	time.Sleep(3 * time.Second)
	if got := g.Binding("cr-vpc1-sub1"); got != active.Name {
		t.Errorf("with two chassis, cr-vpc1-sub1 moved from the crashed %s to %q; OVN 23.03 was expected to keep it", active.Name, got)
	}
	mustNotPing(t, vm, sub1.Gateway.Addr(), "the gateway of a crashed chassis without a third chassis")
}
