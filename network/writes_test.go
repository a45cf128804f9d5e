package network_test

import (
	"context"
	"fmt"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
)

// writesOf converges perNS new networks in each of two namespaces of one
// zone from an empty controller, restarts the controller over the converged
// networks and converges again. It returns the controller's requests of
// both phases.
func writesOf(t *testing.T, perNS int) (first, restart map[kube.RequestKey]int) {
	t.Helper()
	ctx := context.Background()
	reqs := kube.NewRequests()
	hooks := reqs.Funcs()
	h := sim.NewHarness(sim.Options{ControllerHooks: &hooks})
	c := h.Client()
	objs := []client.Object{sim.ProviderNetwork("pxw", true), sim.Zone("zone-w", "vmbr1", "pxw", "1-4094")}
	for ns := range 2 {
		name := fmt.Sprintf("writes-%d", ns)
		objs = append(objs, sim.Namespace(name, nil))
		for i := range perNS {
			net, err := sim.Network(name, fmt.Sprintf("w%d-%d", ns, i), "zone-w", "vpc-w", fmt.Sprintf("10.%d.%d.0/24", 60+ns, i))
			if err != nil {
				t.Fatal(err)
			}
			objs = append(objs, net...)
		}
	}
	mustCreate(t, c, objs...)
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Converge(ctx); err != nil {
		t.Fatal(err)
	}
	invariantsHold(t, h)
	first = reqs.Counts()
	reqs.Reset()
	if err := h.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Converge(ctx); err != nil {
		t.Fatal(err)
	}
	return first, reqs.Counts()
}

func invariantsHold(t *testing.T, h *sim.Harness) {
	t.Helper()
	if err := sim.VerifyInvariants(context.Background(), h.Store()); err != nil {
		t.Fatal(err)
	}
}

// TestWritesPerNetwork counts the controller's writes from request to
// Ready. A network needs its finalizer, its claim, its Vlan, the finalizer
// on its Subnet and its status, written once: the status waits for
// Kube-OVN's report on the new Vlan (FreshVLANHold) instead of saying
// SubnetNotReady first. Nothing else is written per
// network: no claim create the API server refuses because the claim
// exists, and the namespace annotation is written a bounded number of times
// per namespace, the same for 10 and for 40 networks in it. A restart over
// the converged networks writes nothing at all.
func TestWritesPerNetwork(t *testing.T) {
	nsPatches := map[int]int{}
	for _, perNS := range []int{10, 40} {
		first, restart := writesOf(t, perNS)
		networks := 2 * perNS
		nsPatches[perNS] = checkWrites(t, first, networks)
		for k, c := range restart {
			if kube.IsWrite(k.Verb) {
				t.Errorf("restart over %d converged networks: %s %s %d times, want no write", networks, k.Verb, k.Kind, c)
			}
		}
	}
	if nsPatches[10] != nsPatches[40] || nsPatches[10] > 4 {
		t.Errorf("namespace annotation writes for 2 namespaces: %d with 10 networks each, %d with 40; want the same small number", nsPatches[10], nsPatches[40])
	}
}
