package kubeovn_test

import (
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
)

// TestKubeOVNRestartKeepsOurGroup restarts kube-ovn-controller (SIGTERM,
// then a new process under a new pod name, which takes the lease, runs its
// whole start-up again, the garbage collection of router ports, switches
// and chassis included, and resyncs every Subnet and Vpc) while our group
// is on its router ports. Every change the NB monitor sees on those ports
// and on the groups is recorded: the ports must keep our group throughout,
// and our next pass must find nothing to write.
func TestKubeOVNRestartKeepsOurGroup(t *testing.T) {
	cl := startCluster(t)
	subnets := append(cl.apply(seedSpec, 101), cl.apply(twoSubnetSpec, 102)...)
	var ports []string
	for _, s := range subnets {
		cl.checkKubeOVNMade(s)
		cl.assign(s)
		ports = append(ports, cl.gateway(s).RouterPort)
	}
	before := ovngatewaytest.ReadRows(t, cl.nb).State()
	uuids := cl.portUUIDs(ports)
	w := watchPorts(cl.nb, ports...)
	for i := range 2 {
		start := time.Now()
		if err := cl.k.RestartController(); err != nil {
			t.Fatal(err)
		}
		t.Logf("restart %d: %s took the lease and finished its start-up in %s", i+1, cl.k.PodName(), time.Since(start).Round(time.Millisecond))
		// The new leader resyncs every Subnet and Vpc after its start-up.
		cl.settle()
		for _, e := range w.quiet() {
			t.Errorf("restart %d: the NB changed a gateway row: %s", i+1, e)
		}
		after := ovngatewaytest.ReadRows(t, cl.nb).State()
		if diff := cmp.Diff(before, after); diff != "" {
			t.Errorf("restart %d changed the gateway rows (-before +after):\n%s", i+1, diff)
		}
		if diff := cmp.Diff(uuids, cl.portUUIDs(ports)); diff != "" {
			t.Errorf("restart %d recreated router ports (-before +after):\n%s", i+1, diff)
		}
		for _, s := range subnets {
			cl.assign(s) // fails on any write
		}
	}
	// The control: a reset of the port's ha_chassis_group, the change the
	// restarts did not make, is seen by the same watch, and our next pass
	// puts the group back.
	nbctl(t, cl.k.NB.Unix, "clear", "Logical_Router_Port", ports[0], "ha_chassis_group")
	cl.eventually(10*time.Second, "the watch seeing the reset", func() (bool, string) {
		ev := w.take()
		return len(ev) == 1, fmt.Sprintf("events %q", ev)
	})
	cl.assign(subnets[0])
	if diff := cmp.Diff(before, ovngatewaytest.ReadRows(t, cl.nb).State()); diff != "" {
		t.Errorf("our pass did not restore the group (-before +after):\n%s", diff)
	}
}

// nbctl runs ovn-nbctl against the northbound database at endpoint.
func nbctl(t *testing.T, endpoint string, args ...string) {
	t.Helper()
	out, err := exec.Command("ovn-nbctl", append([]string{"--db=" + endpoint}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ovn-nbctl %v: %v: %s", args, err, out)
	}
}

func (cl *cluster) portUUIDs(ports []string) map[string]string {
	out := map[string]string{}
	for _, p := range ports {
		lrp, ok := cl.routerPort(p)
		if !ok {
			cl.t.Fatalf("no router port %s", p)
		}
		out[p] = lrp.UUID
	}
	return out
}
