package network_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/network"
)

// fakeGateway keeps which networks have a gateway, and can fail.
type fakeGateway struct {
	mu       sync.Mutex
	up       map[string]network.NetworkInfo
	failNB   bool
	holdBack bool
	// chassis is the group size Ensure reports; 3 (a group that fails
	// over) when 0.
	chassis int
	// primary is the highest-priority chassis Ensure reports.
	primary string
}

func (g *fakeGateway) Ensure(_ context.Context, n network.NetworkInfo) (network.GatewayStatus, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.failNB {
		return network.GatewayStatus{}, errors.New("connection refused")
	}
	g.up[n.Namespace+"/"+n.Name] = n
	chassis := g.chassis
	if chassis == 0 {
		chassis = 3
	}
	return network.GatewayStatus{Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonChassisAssigned, Message: "assigned", Chassis: chassis, Primary: g.primary}, nil
}

func (g *fakeGateway) Release(_ context.Context, n network.NetworkInfo) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.failNB {
		return false, errors.New("connection refused")
	}
	if g.holdBack {
		return false, nil
	}
	delete(g.up, n.Namespace+"/"+n.Name)
	return true, nil
}

// TestGateway: a managed gateway is part of Ready, an NB outage keeps the
// condition it had, and the VLAN is held until the gateway is released.
func TestGateway(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	m, err := network.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	gw := &fakeGateway{up: map[string]network.NetworkInfo{}}
	h, c := startOne(t, sim.Options{Metrics: m, Gateway: func() network.Gateway { return gw }}, "100-101")
	n := getNet(t, c, 0)
	wantCond(t, n, v1alpha1.ConditionGatewayReady, "True/ChassisAssigned")
	wantCond(t, n, v1alpha1.ConditionReady, "True/Ready")
	if info := gw.up[netID(0).key().String()]; info.VPC != "vpc-tenant-0" || info.VLAN != 100 || info.ProviderNetwork != provider || info.GatewayMTU != 1400 {
		t.Errorf("the gateway was asked for %+v", info)
	}

	gw.failNB = true
	h.Controller().EnqueueNetwork(netID(0).key())
	converge(t, h)
	wantCond(t, getNet(t, c, 0), v1alpha1.ConditionReady, "True/Ready")

	gw.failNB, gw.holdBack = false, true
	uninstall(t, c, 0)
	converge(t, h)
	wantCond(t, getNet(t, c, 0), v1alpha1.ConditionReady, "False/GatewayReleasePending")
	gw.holdBack = false
	if _, err := h.Advance(ctx, network.RetryAfter); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, netID(0).key(), &v1alpha1.ProxmoxNetwork{}); err == nil {
		t.Fatal("the network was not released after its gateway")
	}
	if len(gw.up) != 0 {
		t.Errorf("gateways left: %v", gw.up)
	}
	// Every call to the gateway is timed: the passes before and during the
	// outage, the held release and the release.
	got := gather(t, reg)
	for op, least := range map[string]float64{"ensure": 2, "release": 2} {
		if n := got[network.MetricGatewayPassSeconds+`{op="`+op+`"}`]; n < least {
			t.Errorf("%s observed %v %s calls, want at least %v", network.MetricGatewayPassSeconds, n, op, least)
		}
	}
}

// startOne starts a harness with opts on zone-a of ranges and network 0
// in it, and converges; it returns the harness and the world's client.
func startOne(t *testing.T, opts sim.Options, ranges ...string) (*sim.Harness, client.WithWatch) {
	t.Helper()
	h := sim.NewHarness(opts)
	c := h.Client()
	baseWorld(t, c, map[string][]string{"zone-a": ranges})
	createNetwork(t, c, 0, "zone-a")
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	converge(t, h)
	return h, c
}

func converge(t *testing.T, h *sim.Harness) {
	t.Helper()
	if _, err := h.Converge(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func getNet(t *testing.T, c client.Client, n netID) *v1alpha1.ProxmoxNetwork {
	t.Helper()
	net := &v1alpha1.ProxmoxNetwork{}
	if err := c.Get(context.Background(), n.key(), net); err != nil {
		t.Fatalf("get %s: %v", n.key(), err)
	}
	return net
}

func wantCond(t *testing.T, n *v1alpha1.ProxmoxNetwork, typ, want string) {
	t.Helper()
	got := "(absent)"
	if c := meta.FindStatusCondition(n.Status.Conditions, typ); c != nil {
		got = string(c.Status) + "/" + c.Reason
	}
	if got != want {
		t.Errorf("%s/%s: %s is %s, want %s", n.Namespace, n.Name, typ, got, want)
	}
}
