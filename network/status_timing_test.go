package network_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/network"
)

// TestFreshVLANHold: a network whose Vlan the controller has just created
// gets no SubnetNotReady status while Kube-OVN may still answer; when it
// answers within FreshVLANHold, the network goes from no status to Ready
// in one status write; when it does not, SubnetNotReady is written once the
// hold ends; a restarted controller holds nothing.
func TestFreshVLANHold(t *testing.T) {
	ctx := context.Background()
	store := sim.NewStore(true)
	clk := clocktesting.NewFakeClock(sim.Epoch)
	start := func() (*network.Controller, *kube.Requests, client.Client) {
		reqs := kube.NewRequests()
		ctrl, c := fedController(t, store, reqs.Funcs(), network.Config{Clock: clk, Resync: -1})
		if err := ctrl.Load(ctx); err != nil {
			t.Fatal(err)
		}
		return ctrl, reqs, c
	}
	statusWrites := func(reqs *kube.Requests) int {
		return reqs.Counts()[kube.RequestKey{Verb: kube.VerbStatusUpdate, Kind: "ProxmoxNetwork"}]
	}
	subnetCond := func(name string) *metav1.Condition {
		t.Helper()
		n := &v1alpha1.ProxmoxNetwork{}
		if err := store.Get(ctx, client.ObjectKey{Namespace: "hold", Name: name}, n); err != nil {
			t.Fatal(err)
		}
		return meta.FindStatusCondition(n.Status.Conditions, v1alpha1.ConditionSubnetReady)
	}
	add := func(c client.Client, name, cidr string) {
		t.Helper()
		objs, err := sim.Network("hold", name, "zone-h", "vpc-h", cidr)
		if err != nil {
			t.Fatal(err)
		}
		mustCreate(t, c, objs...)
	}
	mustCreate(t, store, sim.ProviderNetwork("pxh", true), sim.Zone("zone-h", "vmbr1", "pxh", "10-20"), sim.Namespace("hold", nil))
	ctrl, reqs, c := start()

	// Kube-OVN answers within the hold: one status write, Ready.
	add(c, "answered", "10.80.0.0/24")
	resyncAndDrain(t, ctrl, 100)
	resyncAndDrain(t, ctrl, 100) // the passes the controller's own writes queue hold too
	if got := subnetCond("answered"); got != nil {
		t.Fatalf("the status was written before Kube-OVN could answer: SubnetReady %s/%s", got.Status, got.Reason)
	}
	if err := c.Status().Patch(ctx, &kubeovnv1.Subnet{ObjectMeta: metav1.ObjectMeta{Name: "answered"}}, subnetReady); err != nil {
		t.Fatal(err)
	}
	resyncAndDrain(t, ctrl, 100)
	if got := subnetCond("answered"); got == nil || got.Status != metav1.ConditionTrue {
		t.Fatalf("after Kube-OVN's report, SubnetReady %v, want True", got)
	}
	if got := statusWrites(reqs); got != 1 {
		t.Errorf("a network answered within the hold: %d status writes, want 1", got)
	}

	// Kube-OVN does not answer: SubnetNotReady once the hold ends.
	add(c, "silent", "10.80.1.0/24")
	resyncAndDrain(t, ctrl, 100)
	if got := subnetCond("silent"); got != nil {
		t.Fatalf("the status was written during the hold: SubnetReady %s/%s", got.Status, got.Reason)
	}
	next, ok := ctrl.NextDue()
	if !ok || next.After(clk.Now().Add(network.FreshVLANHold)) {
		t.Fatalf("next pass at %v (%v), want within %v", next, ok, network.FreshVLANHold)
	}
	clk.Step(network.FreshVLANHold)
	if _, err := ctrl.Drain(ctx, 100); err != nil {
		t.Fatal(err)
	}
	if got := subnetCond("silent"); got == nil || got.Reason != network.ReasonSubnetNotReady {
		t.Errorf("after the hold, SubnetReady %v, want False/%s", got, network.ReasonSubnetNotReady)
	}

	// A restarted controller did not create the Vlan: nothing is held.
	add(c, "restarted", "10.80.2.0/24")
	resyncAndDrain(t, ctrl, 100)
	ctrl, _, _ = start()
	clk.Step(time.Millisecond)
	resyncAndDrain(t, ctrl, 100)
	if got := subnetCond("restarted"); got == nil || got.Reason != network.ReasonSubnetNotReady {
		t.Errorf("after a restart, SubnetReady %v, want False/%s at once", got, network.ReasonSubnetNotReady)
	}
}

// TestBurstReadyWaitsForAnnotation: a burst of new networks in one
// namespace, whose Subnets Kube-OVN reports Ready at once, costs a few
// namespace annotation writes, not one per network: a network about to
// report Ready whose Vlan is fresh holds its status until the namespace
// runner's next write lists it. No status reports Ready before the
// annotation lists the network, and each network's status is written once.
func TestBurstReadyWaitsForAnnotation(t *testing.T) {
	ctx := context.Background()
	store := sim.NewStore(true)
	clk := clocktesting.NewFakeClock(sim.Epoch)
	reqs := kube.NewRequests()
	hooks := reqs.Funcs()
	checkListedWhenReady(t, store, &hooks)
	reg := prometheus.NewRegistry()
	metrics, err := network.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	ctrl, c := fedController(t, store, hooks, network.Config{Clock: clk, Resync: -1, StatusInterval: time.Second, Metrics: metrics})
	mustCreate(t, store, sim.ProviderNetwork("pxb", true), sim.Zone("zone-b", "vmbr1", "pxb", "100-200"), sim.Namespace("burst", nil))
	if err := ctrl.Load(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 20
	// One network after the other within the interval, each reported
	// Ready by Kube-OVN before the next arrives.
	for i := range n {
		name := fmt.Sprintf("b-%d", i)
		objs, err := sim.Network("burst", name, "zone-b", "vpc-b", fmt.Sprintf("10.81.%d.0/24", i))
		if err != nil {
			t.Fatal(err)
		}
		mustCreate(t, c, objs...)
		resyncAndDrain(t, ctrl, 10*n)
		if err := c.Status().Patch(ctx, &kubeovnv1.Subnet{ObjectMeta: metav1.ObjectMeta{Name: name}}, subnetReady); err != nil {
			t.Fatal(err)
		}
		resyncAndDrain(t, ctrl, 10*n)
	}
	// The networks whose Ready waits for the annotation are not Ready on
	// the gauges either.
	held := 0
	for i := range n {
		net := &v1alpha1.ProxmoxNetwork{}
		if err := store.Get(ctx, client.ObjectKey{Namespace: "burst", Name: fmt.Sprintf("b-%d", i)}, net); err != nil {
			t.Fatal(err)
		}
		apiReady := meta.IsStatusConditionTrue(net.Status.Conditions, v1alpha1.ConditionReady)
		if !apiReady {
			held++
		}
		prefix := fmt.Sprintf(`cozy_proxmox_network_ready{namespace="burst",network="b-%d",`, i)
		for series, gauge := range gather(t, reg) {
			if strings.HasPrefix(series, prefix) && (gauge == 1) != apiReady {
				t.Errorf("%s = %v while the API says Ready %v", series, gauge, apiReady)
			}
		}
	}
	if held == 0 {
		t.Fatal("no network waited for the annotation; the burst does not exercise the hold")
	}
	for range 4 {
		clk.Step(500 * time.Millisecond)
		resyncAndDrain(t, ctrl, 10*n)
	}
	var nets v1alpha1.ProxmoxNetworkList
	if err := store.List(ctx, &nets, client.InNamespace("burst")); err != nil {
		t.Fatal(err)
	}
	for _, net := range nets.Items {
		if !meta.IsStatusConditionTrue(net.Status.Conditions, v1alpha1.ConditionReady) {
			t.Errorf("network %s is not Ready: %+v", net.Name, net.Status.Conditions)
		}
	}
	counts := reqs.Counts()
	if got := counts[kube.RequestKey{Verb: kube.VerbPatch, Kind: "Namespace"}]; got > 3 {
		t.Errorf("a burst of %d networks: %d namespace annotation writes, want at most 3 (one per StatusInterval)", n, got)
	}
	if got := counts[kube.RequestKey{Verb: kube.VerbStatusUpdate, Kind: "ProxmoxNetwork"}]; got != n {
		t.Errorf("a burst of %d networks: %d status writes, want one each", n, got)
	}
}
