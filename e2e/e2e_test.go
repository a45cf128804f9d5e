package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/internal/controller/controllertest"
	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/kubegateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
)

// TestE2E shares one API server between its parts; each part has a zone,
// provider network, VPC and tenant of its own, its own ovsdb-server and
// its own controller processes, stopped before the next part starts.
func TestE2E(t *testing.T) {
	e := newEnv(t)
	t.Run("Lifecycle", func(t *testing.T) { testLifecycle(t, e) })
	t.Run("Failover", func(t *testing.T) { testFailover(t, e) })
	t.Run("NBCrash", func(t *testing.T) { testNBCrash(t, e) })
}

// nbArgs points a controller at nb without TLS, reconnecting fast.
func nbArgs(nb *ovngatewaytest.Real) []string {
	return []string{"--ovn-nb-address=" + nb.Endpoint(), "--ovn-tls-secret=", "--ovn-nb-max-backoff=1s"}
}

// waitLeader waits until one of the replicas holds the Lease and returns
// its name.
func waitLeader(t testing.TB, c client.Client, among ...string) string {
	t.Helper()
	var leader string
	controllertest.Eventually(t, 60*time.Second, nil, func() (bool, string) {
		leader = holder(context.Background(), c)
		for _, a := range among {
			if leader == a {
				return true, ""
			}
		}
		return false, "lease held by " + leader
	})
	return leader
}

// testLifecycle: one replica, probes and metrics, networks Ready with
// their gateways, a Node leaving the trunk, the webhook's answers, a
// network deleted and its VLAN handed out again, and a graceful stop that
// releases the Lease.
func testLifecycle(t *testing.T, e *env) {
	ctx := context.Background()
	cl := cluster("l", 50)
	cl.Setup(t, e.admin, "l-node-1", "l-node-2")
	nb := ovngatewaytest.StartReal(t)
	k := controllertest.NewKubeOVN(nb.Endpoint())
	t.Cleanup(k.Close)
	step := func() error { return k.React(ctx, e.admin) }
	hook := newWebhook(t, cl)
	p := e.start(t, "solo", append(append(nbArgs(nb), leaseFlags...), hook.args...)...)

	controllertest.Eventually(t, 60*time.Second, nil, func() (bool, string) {
		for _, path := range []string{"/healthz", "/readyz"} {
			if code, body, err := p.get(path, false); err != nil || code != 200 {
				return false, path + ": " + body
			}
		}
		return true, ""
	})
	waitLeader(t, e.admin, "solo")

	var names []string
	for i := range 3 {
		names = append(names, cl.AddNetwork(t, e.admin, i))
	}
	controllertest.Eventually(t, 90*time.Second, step, func() (bool, string) { return allReady(ctx, e.admin, cl, names) })
	if diff := cmp.Diff([]int{100, 101, 102}, checkVLANs(t, e.admin, cl, names)); diff != "" {
		t.Errorf("VLANs: -want +got:\n%s", diff)
	}
	controllertest.Eventually(t, 30*time.Second, nil, checkGroups(k, cl, names, []string{"ch-l-node-1", "ch-l-node-2"}))

	// l-node-2 leaves the trunk: every group drops its chassis at once.
	leaveTrunk(t, e.admin, cl, "l-node-2")
	controllertest.Eventually(t, 30*time.Second, nil, checkGroups(k, cl, names, []string{"ch-l-node-1"}))

	hook.check(t, e.admin, cl)
	checkMetric(t, p, `cozy_proxmox_zone_vlans_allocated{zone="zone-l"}`, 3)
	checkMetric(t, p, `pxsubstrate_controller_leader`, 1)

	// A deleted network gives its VLAN back: the next network gets it.
	cl.DeleteNetwork(t, e.admin, names[0])
	waitGone(t, e.admin, cl, names[0], step)
	names = append(names[1:], cl.AddNetwork(t, e.admin, 3))
	controllertest.Eventually(t, 60*time.Second, step, func() (bool, string) { return allReady(ctx, e.admin, cl, names) })
	if diff := cmp.Diff([]int{100, 101, 102}, checkVLANs(t, e.admin, cl, names)); diff != "" {
		t.Errorf("VLANs after the first network was replaced: -want +got:\n%s", diff)
	}
	if st, err := k.Dump(ctx); err != nil {
		t.Error(err)
	} else if _, ok := st.Groups[ovngateway.GroupName(ovngateway.RouterPortName(cl.VPC, cl.NetworkName(0)))]; ok {
		t.Errorf("the deleted network's group is still in the NB")
	}

	if code := p.stop(t); code != 0 {
		t.Errorf("exit code after SIGTERM = %d, want 0", code)
	}
	if h := holder(ctx, e.admin); h != "" {
		t.Errorf("the Lease is still held by %q after a graceful stop", h)
	}
	if strings.Contains(p.logs(), "BEGIN") {
		t.Errorf("the log holds PEM material")
	}
}

func checkMetric(t *testing.T, p *proc, series string, want float64) {
	t.Helper()
	controllertest.Eventually(t, 30*time.Second, nil, func() (bool, string) {
		got, err := p.metric(series)
		if err != nil {
			return false, err.Error()
		}
		return got == want, fmt.Sprintf("%s is %v", series, got)
	})
}

// testFailover: two replicas; the leader is killed with SIGKILL while
// networks are being created; the other takes the Lease and finishes, with
// no VLAN handed out twice and no network lost.
func testFailover(t *testing.T, e *env) {
	ctx := context.Background()
	cl := cluster("f", 60)
	cl.Setup(t, e.admin, "f-node-1")
	nb := ovngatewaytest.StartReal(t)
	k := controllertest.NewKubeOVN(nb.Endpoint())
	t.Cleanup(k.Close)
	step := func() error { return k.React(ctx, e.admin) }
	args := append(append(nbArgs(nb), leaseFlags...), "--webhook-port=0")
	procs := map[string]*proc{"alpha": e.start(t, "alpha", args...), "beta": e.start(t, "beta", args...)}
	leader := waitLeader(t, e.admin, "alpha", "beta")
	other := map[string]string{"alpha": "beta", "beta": "alpha"}[leader]

	var names []string
	for i := range 10 {
		names = append(names, cl.AddNetwork(t, e.admin, i))
	}
	controllertest.Eventually(t, 60*time.Second, step, func() (bool, string) {
		ok, msg := allReady(ctx, e.admin, cl, names[:3])
		return ok, msg
	})
	procs[leader].kill()
	for i := 10; i < 20; i++ {
		names = append(names, cl.AddNetwork(t, e.admin, i))
	}
	waitLeader(t, e.admin, other)
	controllertest.Eventually(t, 120*time.Second, step, func() (bool, string) { return allReady(ctx, e.admin, cl, names) })
	vids := checkVLANs(t, e.admin, cl, names)
	if len(vids) != 20 || vids[0] != 100 || vids[19] != 119 {
		t.Errorf("VLANs after failover = %v, want 100-119", vids)
	}
	controllertest.Eventually(t, 30*time.Second, nil, checkGroups(k, cl, names, []string{"ch-f-node-1"}))
	checkMetric(t, procs[other], `pxsubstrate_controller_leader`, 1)
	if code := procs[other].stop(t); code != 0 {
		t.Errorf("exit code of %s after SIGTERM = %d, want 0", other, code)
	}
}

// testNBCrash: ovsdb-server is killed with SIGKILL while networks are
// created and a Node leaves the trunk; the networks that were up stay
// Ready through the outage; after a restart on the same database
// everything converges.
func testNBCrash(t *testing.T, e *env) {
	ctx := context.Background()
	cl := cluster("n", 70)
	cl.Setup(t, e.admin, "n-node-1", "n-node-2")
	nb := ovngatewaytest.StartReal(t)
	k := controllertest.NewKubeOVN(nb.Endpoint())
	t.Cleanup(k.Close)
	step := func() error { return k.React(ctx, e.admin) }
	p := e.start(t, "solo", append(append(nbArgs(nb), leaseFlags...), "--webhook-port=0")...)
	waitLeader(t, e.admin, "solo")
	var before []string
	for i := range 5 {
		before = append(before, cl.AddNetwork(t, e.admin, i))
	}
	controllertest.Eventually(t, 90*time.Second, step, func() (bool, string) { return allReady(ctx, e.admin, cl, before) })

	nb.Kill()
	var after []string
	for i := 5; i < 10; i++ {
		after = append(after, cl.AddNetwork(t, e.admin, i))
	}
	leaveTrunk(t, e.admin, cl, "n-node-2")
	// Let the controller meet the outage: the Node change makes it try.
	controllertest.Eventually(t, 60*time.Second, step, func() (bool, string) {
		got, err := p.metric("cozy_proxmox_gateway_nb_errors_total")
		return err == nil && got > 0, "no NB error counted yet"
	})
	if ok, msg := allReady(ctx, e.admin, cl, before); !ok {
		t.Errorf("a network that was up lost Ready during a short NB outage: %s", msg)
	}
	if err := nb.Restart(); err != nil {
		t.Fatal(err)
	}
	all := append(before, after...)
	controllertest.Eventually(t, 120*time.Second, step, func() (bool, string) {
		if ok, msg := allReady(ctx, e.admin, cl, all); !ok {
			return false, msg
		}
		return checkGroups(k, cl, all, []string{"ch-n-node-1"})()
	})
	checkVLANs(t, e.admin, cl, all)
	if code := p.stop(t); code != 0 {
		t.Errorf("exit code after SIGTERM = %d, want 0", code)
	}
}

// leaveTrunk removes the provider network's ready label from a Node, as
// Kube-OVN does when the Node's trunk interface goes down.
func leaveTrunk(t *testing.T, c client.Client, cl controllertest.Cluster, name string) {
	t.Helper()
	ctx := context.Background()
	node := cl.Node(name)
	if err := c.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
		t.Fatal(err)
	}
	delete(node.Labels, kubegateway.ReadyLabel(cl.ProviderNetwork))
	if err := c.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
}
