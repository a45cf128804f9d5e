//go:build linux

package ovnlab_test

import (
	"testing"
	"time"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv/ovnlab"
)

// failoverDeadline bounds every wait for the gateway to come back.
const failoverDeadline = 45 * time.Second

// stableFor is how long the ping must succeed without a failure before an
// outage counts as over.
const stableFor = 3 * time.Second

// settle waits until both router ports of vpc1 are on chassis and the probe
// has succeeded for stableFor since its last failure, and returns its result.
func settle(t *testing.T, g *ovnlab.Lab, p *ovnlab.Prober, chassis string) ovnlab.ProbeResult {
	t.Helper()
	deadline := time.Now().Add(failoverDeadline)
	for !p.UpFor(stableFor) || g.Binding("cr-vpc1-sub1") != chassis || g.Binding("cr-vpc1-sub2") != chassis {
		if time.Now().After(deadline) {
			r := p.Stop()
			t.Fatalf("the gateway did not come back on %s within %s: probe %+v, cr-vpc1-sub1 on %q",
				chassis, failoverDeadline, r, g.Binding("cr-vpc1-sub1"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	return p.Stop()
}

// checkFailover stops the active chassis in three ways while vm1 pings vm2
// (routed by vpc1's active chassis) and records how long the ping fails.
func checkFailover(t *testing.T, g *gatewayLab, active, standby *ovnlab.Chassis) {
	t.Helper()
	dst := g.vm2.Addr.Addr()

	// SIGTERM to ovn-controller: the chassis stays registered, its
	// ovs-vswitchd keeps the flows and the BFD sessions, nothing moves.
	p := g.vm1.Probe(dst)
	if err := active.StopController(); err != nil {
		t.Error(err)
	}
	time.Sleep(stableFor)
	if got := g.Binding("cr-vpc1-sub1"); got != active.Name {
		t.Errorf("after SIGTERM to ovn-controller of %s, cr-vpc1-sub1 is on %q, want it to stay", active.Name, got)
	}
	up := p.UpFor(time.Second)
	r := p.Stop()
	t.Logf("failover, SIGTERM to ovn-controller of the active chassis: %d of %d probes failed, longest outage %s", r.Failed, r.Sent, r.Outage)
	if !up {
		t.Errorf("with ovs-vswitchd still forwarding, the ping must keep working: %+v", r)
	}
	restart(t, g, active)

	// ovn-appctl exit: the chassis leaves the SB, the standby claims.
	p = g.vm1.Probe(dst)
	if err := active.ExitController(); err != nil {
		t.Fatal(err)
	}
	r = settle(t, g.Lab, p, standby.Name)
	t.Logf("failover, ovn-controller of the active chassis exits: outage %s (%d of %d probes failed)", r.Outage, r.Failed, r.Sent)
	p = g.vm1.Probe(dst)
	restart(t, g, active)
	r = settle(t, g.Lab, p, active.Name)
	t.Logf("failback, ovn-controller of the higher-priority chassis starts again: outage %s (%d of %d probes failed)", r.Outage, r.Failed, r.Sent)

	// The node fails: ovn-controller and ovs-vswitchd die at once; the
	// standby's BFD session to it times out.
	p = g.vm1.Probe(dst)
	active.Crash()
	r = settle(t, g.Lab, p, standby.Name)
	t.Logf("failover, the active chassis crashes (ovn-controller and ovs-vswitchd killed): outage %s (%d of %d probes failed)", r.Outage, r.Failed, r.Sent)
	if r.Failed == 0 {
		t.Errorf("a crashed gateway chassis must interrupt the ping until the standby takes over: %+v", r)
	}
	p = g.vm1.Probe(dst)
	restart(t, g, active)
	r = settle(t, g.Lab, p, active.Name)
	t.Logf("failback after the crash: outage %s (%d of %d probes failed)", r.Outage, r.Failed, r.Sent)
}

func restart(t *testing.T, g *gatewayLab, c *ovnlab.Chassis) {
	t.Helper()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	g.SyncHV()
}
