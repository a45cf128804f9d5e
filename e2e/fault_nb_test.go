//go:build linux

package e2e

import (
	"context"
	"flag"
	"slices"
	"testing"
	"time"

	"github.com/pxsubstrate/pxsubstrate/internal/controller/controllertest"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/ovnlab"
)

// nbLosses is how many times TestFaultNBLost loses the database (CI: 3;
// docs/ovngateway.md's figures: -nb-losses=10).
var nbLosses = flag.Int("nb-losses", 3, "database losses of TestFaultNBLost (docs/ovngateway.md: 10)")

// TestFaultNBLost: the controller runs against a three-member NB RAFT
// cluster given all three endpoints; the whole database is lost (every
// member killed and ovn-central rebuilt empty), Kube-OVN creates its
// router ports again, and the controller recreates every group from the
// Kubernetes state without a restart, long before its 5-minute resync.
func TestFaultNBLost(t *testing.T) {
	const networks = 20
	e := newEnv(t)
	ctx := context.Background()
	cl := cluster("x", 80)
	cl.Setup(t, e.admin, "x-node-1", "x-node-2")
	nb := ovnlab.NewNBCluster(t, 3)
	k := controllertest.NewKubeOVN(nb.Members[0].Endpoint())
	t.Cleanup(k.Close)
	step := func() error { return k.React(ctx, e.admin) }
	p := e.start(t, "solo", append([]string{"--ovn-nb-address=" + nb.Address(), "--ovn-tls-secret=", "--webhook-port=0"}, leaseFlags...)...)
	waitLeader(t, e.admin, "solo")
	var names []string
	for i := range networks {
		names = append(names, cl.AddNetwork(t, e.admin, i))
	}
	chassis := []string{"ch-x-node-1", "ch-x-node-2"}
	controllertest.Eventually(t, 120*time.Second, step, func() (bool, string) { return allReady(ctx, e.admin, cl, names) })
	controllertest.Eventually(t, 30*time.Second, nil, checkGroups(k, cl, names, chassis))

	var took []time.Duration
	for range *nbLosses {
		if err := nb.Rebuild(); err != nil {
			t.Fatal(err)
		}
		lost := time.Now()
		// The player's cache still shows the lost rows: connect again.
		k.Close()
		controllertest.Eventually(t, 2*time.Minute, step, checkGroups(k, cl, names, chassis))
		took = append(took, time.Since(lost))
		st, err := k.Dump(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Groups) != networks {
			t.Errorf("after the database was rebuilt the NB holds %d groups, want %d", len(st.Groups), networks)
		}
	}
	slices.Sort(took)
	t.Logf("NB database lost (ovn-central rebuilt empty), %d networks, loss to the last group recreated by the controller, %d losses: median %s, max %s (all: %v)",
		networks, len(took), took[len(took)/2].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond), took)
	controllertest.Eventually(t, time.Minute, step, func() (bool, string) { return allReady(ctx, e.admin, cl, names) })
	checkVLANs(t, e.admin, cl, names)
	if code := p.stop(t); code != 0 {
		t.Errorf("exit code after SIGTERM = %d, want 0", code)
	}
}
