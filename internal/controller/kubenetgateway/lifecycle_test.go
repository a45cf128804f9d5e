package kubenetgateway_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/go-logr/logr"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/kubenetgateway"
	"github.com/pxsubstrate/pxsubstrate/network"
	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
)

// pxnet is a ProxmoxNetwork carrying a GatewayReady condition (none when
// reason is "").
func pxnet(name string, status metav1.ConditionStatus, reason string) *v1alpha1.ProxmoxNetwork {
	n := &v1alpha1.ProxmoxNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: name},
		Spec: v1alpha1.ProxmoxNetworkSpec{Zone: "z", Subnet: name, IPPool: name}}
	if reason != "" {
		meta.SetStatusCondition(&n.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionGatewayReady, Status: status, Reason: reason, Message: "carried"})
	}
	return n
}

// TestGrace: while the NB is down a network keeps the GatewayReady it
// carries, one whose gateway was never decided is False/NBUnavailable at
// once, and past the grace both are False/NBUnavailable.
func TestGrace(t *testing.T) {
	s, gc, k := start(t, node("n1", true),
		pxnet("up", metav1.ConditionTrue, v1alpha1.ReasonChassisAssigned), pxnet("fresh", "", ""))
	admin := ovngatewaytest.Connect(t, s.Endpoint())
	ovngatewaytest.AddRouterPort(t, admin, "vpc-a", "vpc-a-up")
	clk := clocktesting.NewFakeClock(time.Now())
	gw, err := kubenetgateway.New(gc, k, kubenetgateway.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if st, err := gw.Ensure(ctx, info("up")); err != nil || st.Reason != v1alpha1.ReasonChassisAssigned {
		t.Fatalf("Ensure(up) before the outage = %+v, %v; want ChassisAssigned", st, err)
	}
	down(t, s, gc)
	type got struct {
		Status  metav1.ConditionStatus
		Reason  string
		Chassis int
		Primary string
		Err     bool
	}
	ensure := func(name string) got {
		st, err := gw.Ensure(ctx, info(name))
		if err != nil && !errors.Is(err, ovngateway.ErrNBUnavailable) {
			t.Fatalf("Ensure(%s) while the NB is down: %v, want ErrNBUnavailable", name, err)
		}
		return got{st.Status, st.Reason, st.Chassis, st.Primary, err != nil}
	}
	within := map[string]got{"up": ensure("up"), "fresh": ensure("fresh")}
	wantWithin := map[string]got{
		"up":    {metav1.ConditionTrue, v1alpha1.ReasonChassisAssigned, 1, "ch-n1", true},
		"fresh": {metav1.ConditionFalse, v1alpha1.ReasonNBUnavailable, 0, "", true},
	}
	if diff := cmp.Diff(wantWithin, within); diff != "" {
		t.Errorf("within the grace: -want +got:\n%s", diff)
	}
	clk.Step(ovngateway.NBGrace + time.Second)
	past := map[string]got{"up": ensure("up"), "fresh": ensure("fresh")}
	wantPast := map[string]got{
		"up":    {metav1.ConditionFalse, v1alpha1.ReasonNBUnavailable, 0, "", true},
		"fresh": {metav1.ConditionFalse, v1alpha1.ReasonNBUnavailable, 0, "", true},
	}
	if diff := cmp.Diff(wantPast, past); diff != "" {
		t.Errorf("past the grace: -want +got:\n%s", diff)
	}
}

// TestRelease deletes the network's own groups, whatever port they serve,
// and clears the port; another network's group and a foreign one stay.
func TestRelease(t *testing.T) {
	s, gc, k := start(t, node("n1", true))
	admin := ovngatewaytest.Connect(t, s.Endpoint())
	for _, p := range []string{"vpc-a-net1", "vpc-a-net2"} {
		ovngatewaytest.AddRouterPort(t, admin, "vpc-a", p)
	}
	foreign := map[string]string{ovngateway.OwnerKey: "someone-else", ovngateway.NetworkKey: "tenant-a/net1"}
	ovngatewaytest.AddGroup(t, admin, "other", foreign, ovngatewaytest.Chassis{Name: "ch-x", Priority: 1})
	gw, err := kubenetgateway.New(gc, k)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, n := range []string{"net1", "net2"} {
		if st, err := gw.Ensure(ctx, info(n)); err != nil || st.Reason != v1alpha1.ReasonChassisAssigned {
			t.Fatalf("Ensure(%s) = %+v, %v", n, st, err)
		}
	}
	// Release knows neither VPC nor subnet, as during deletion.
	released, err := gw.Release(ctx, network.NetworkInfo{Namespace: "tenant-a", Name: "net1"})
	if err != nil || !released {
		t.Fatalf("Release(net1) = %v, %v; want true, nil", released, err)
	}
	st := ovngatewaytest.Dump(t, admin)
	want := ovngatewaytest.State{
		Groups: map[string]ovngatewaytest.Group{
			"other":         {ExternalIDs: foreign, Chassis: []ovngatewaytest.Chassis{{Name: "ch-x", Priority: 1}}},
			"px-vpc-a-net2": st.Groups["px-vpc-a-net2"],
		},
		Ports: map[string]ovngatewaytest.Port{"vpc-a-net1": {}, "vpc-a-net2": {Group: "px-vpc-a-net2"}},
	}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("NB after Release(net1): -want +got:\n%s", diff)
	}
	if _, ok := st.Groups["px-vpc-a-net2"]; !ok {
		t.Errorf("Release(net1) deleted the group of net2")
	}
	down(t, s, gc)
	if released, err := gw.Release(ctx, network.NetworkInfo{Namespace: "tenant-a", Name: "net2"}); released || !errors.Is(err, ovngateway.ErrNBUnavailable) {
		t.Errorf("Release while the NB is down = %v, %v; want false and ErrNBUnavailable (the VLAN is held)", released, err)
	}
}

// TestCollector deletes the groups whose ProxmoxNetwork the API no longer
// has and counts them.
func TestCollector(t *testing.T) {
	s, gc, k := start(t, node("n1", true), pxnet("live", "", ""))
	admin := ovngatewaytest.Connect(t, s.Endpoint())
	for _, p := range []string{"vpc-a-live", "vpc-a-gone"} {
		ovngatewaytest.AddRouterPort(t, admin, "vpc-a", p)
	}
	gw, err := kubenetgateway.New(gc, k)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, n := range []string{"live", "gone"} {
		if _, err := gw.Ensure(ctx, info(n)); err != nil {
			t.Fatal(err)
		}
	}
	collected := prometheus.NewCounter(prometheus.CounterOpts{Name: "collected"})
	c := &kubenetgateway.Collector{NB: gc, Reader: k, Collected: collected, Log: logr.Discard()}
	out, err := c.Once(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ovngateway.Collected{Deleted: []string{"px-vpc-a-gone"}, Kept: 1}, out); diff != "" {
		t.Errorf("Once: -want +got:\n%s", diff)
	}
	var m dto.Metric
	if err := collected.Write(&m); err != nil {
		t.Fatal(err)
	}
	if got := m.GetCounter().GetValue(); got != 1 {
		t.Errorf("collected counter = %v, want 1", got)
	}
	if _, ok := ovngatewaytest.Dump(t, admin).Groups["px-vpc-a-live"]; !ok {
		t.Errorf("the group of the live network was deleted")
	}
}

// down takes the NB down and waits until the gateway client has noticed.
func down(t *testing.T, s *ovngatewaytest.InMemory, gc *ovngateway.Client) {
	t.Helper()
	s.Down()
	deadline := time.Now().Add(10 * time.Second)
	for gc.Endpoint() != "" {
		if time.Now().After(deadline) {
			t.Fatal("the gateway client did not notice that the NB went down")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
