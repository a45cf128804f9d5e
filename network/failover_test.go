package network_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/network"
)

// TestGatewayFailover: a group of two trunk nodes is named as unable to
// fail over (condition, one Warning event, metric 0) without costing
// Ready; a third trunk node makes it StandbyReady and the metric 1. The
// group's primary chassis is exported and follows the gateway's report.
func TestGatewayFailover(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := network.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	rec := events.NewFakeRecorder(20)
	gw := &fakeGateway{up: map[string]network.NetworkInfo{}, chassis: 2, primary: "ch-1"}
	h, c := startOne(t, sim.Options{Metrics: m, Recorder: rec, Gateway: func() network.Gateway { return gw }}, "100-101")
	n := getNet(t, c, 0)
	wantCond(t, n, v1alpha1.ConditionGatewayFailover, "False/NoFailover")
	wantCond(t, n, v1alpha1.ConditionReady, "True/Ready")
	msg := meta.FindStatusCondition(n.Status.Conditions, v1alpha1.ConditionGatewayFailover).Message
	if !strings.Contains(msg, "2 chassis") || !strings.Contains(msg, "third node") {
		t.Errorf("the NoFailover message must say how many chassis and what to do: %q", msg)
	}
	series := `cozy_proxmox_network_gateway_failover{namespace="tenant-0",network="s-0"}`
	if v, ok := gather(t, reg)[series]; !ok || v != 0 {
		t.Errorf("%s = %v (present %v), want 0", series, v, ok)
	}
	wantNoFailover(t, c, []string{"tenant-0/s-0"})
	wantPrimary(t, reg, "ch-1")
	h.Controller().EnqueueNetwork(netID(0).key())
	converge(t, h)
	if got := warnings(rec, v1alpha1.ReasonNoFailover); got != 1 {
		t.Errorf("%d NoFailover events after two passes, want 1", got)
	}

	gw.mu.Lock()
	gw.chassis, gw.primary = 3, "ch-3"
	gw.mu.Unlock()
	h.Controller().EnqueueNetwork(netID(0).key())
	converge(t, h)
	wantCond(t, getNet(t, c, 0), v1alpha1.ConditionGatewayFailover, "True/StandbyReady")
	if v := gather(t, reg)[series]; v != 1 {
		t.Errorf("%s = %v with three chassis, want 1", series, v)
	}
	wantNoFailover(t, c, nil)
	wantPrimary(t, reg, "ch-3")
}

// wantPrimary checks that network s-0 has exactly one primary chassis
// series, naming chassis.
func wantPrimary(t *testing.T, reg *prometheus.Registry, chassis string) {
	t.Helper()
	var got []string
	for series, v := range gather(t, reg) {
		if strings.HasPrefix(series, network.MetricNetworkGatewayPrimary+"{") && strings.Contains(series, `network="s-0"`) {
			got = append(got, fmt.Sprintf("%s %v", series, v))
		}
	}
	want := []string{network.MetricNetworkGatewayPrimary + `{chassis="` + chassis + `",namespace="tenant-0",network="s-0"} 1`}
	if !slices.Equal(got, want) {
		t.Errorf("primary chassis series %v, want %v", got, want)
	}
}

// wantNoFailover checks the networks zone-a's status names as unable to
// fail over, and that its Ready message names them too.
func wantNoFailover(t *testing.T, c client.Client, want []string) {
	t.Helper()
	z := &v1alpha1.ProxmoxNetworkZone{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: "zone-a"}, z); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(z.Status.NoFailoverNetworks, want) {
		t.Errorf("zone status noFailoverNetworks = %v, want %v", z.Status.NoFailoverNetworks, want)
	}
	ready := meta.FindStatusCondition(z.Status.Conditions, v1alpha1.ConditionReady)
	if ready == nil {
		t.Fatal("the zone has no Ready condition")
	}
	if named := strings.Contains(ready.Message, "cannot fail over"); named != (len(want) > 0) {
		t.Errorf("zone Ready message %q: names groups without failover = %v, want %v", ready.Message, named, len(want) > 0)
	}
	for _, n := range want {
		if !strings.Contains(ready.Message, n) {
			t.Errorf("zone Ready message %q does not name %s", ready.Message, n)
		}
	}
}

// warnings counts the Warning events of reason rec has seen so far.
func warnings(rec *events.FakeRecorder, reason string) int {
	n := 0
	for {
		select {
		case e := <-rec.Events:
			if strings.HasPrefix(e, "Warning "+reason+" ") {
				n++
			}
		default:
			return n
		}
	}
}
