package ovnadapter_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/fakes/ovnnb"
	"github.com/pxsubstrate/pxsubstrate/network"
	"github.com/pxsubstrate/pxsubstrate/network/ovnadapter"
	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/sim"
)

func node(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        name,
		Labels:      map[string]string{ovngateway.ReadyLabel("pxtenant"): "true"},
		Annotations: map[string]string{ovngateway.ChassisAnnotation: "ch-" + name},
	}}
}

// TestAdapterInMemoryNB runs a network's lifecycle with the adapter over
// libovsdb's in-memory northbound server: the router port gets the group of
// the trunk nodes, GatewayReady is ChassisAssigned, and the group is gone
// once the network is released (by its network tag: the subnet is gone by
// then).
func TestAdapterInMemoryNB(t *testing.T) {
	ctx := context.Background()
	srv := ovnnb.StartInMemory(t)
	admin := ovnnb.Connect(t, srv.Endpoint())
	ovnnb.AddRouterPort(t, admin, "vpc-a", ovngateway.RouterPortName("vpc-a", "subnet-a"))
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	nb, err := ovngateway.Dial(dctx, ovngateway.Config{Address: srv.Endpoint(), InactivityProbe: 10 * time.Second, ReconnectTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nb.Close)
	var h *sim.Harness
	h = sim.NewHarness(sim.Options{Gateway: func() network.Gateway { return ovnadapter.New(nb, h.Client(), h.Clock) }})
	c := h.Client()
	objs, err := sim.Network("tenant-a", "subnet-a", "zone-a", "vpc-a", "10.0.0.0/24")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range append([]client.Object{node("node-1"), node("node-2"), sim.ProviderNetwork("pxtenant", true),
		sim.Zone("zone-a", "vmbr1", "pxtenant", "100-101"), sim.Namespace("tenant-a", nil)}, objs...) {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Converge(ctx); err != nil {
		t.Fatal(err)
	}
	n := &v1alpha1.ProxmoxNetwork{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "tenant-a", Name: "subnet-a"}, n); err != nil {
		t.Fatal(err)
	}
	gw := meta.FindStatusCondition(n.Status.Conditions, v1alpha1.ConditionGatewayReady)
	if gw == nil || gw.Status != metav1.ConditionTrue || gw.Reason != v1alpha1.ReasonChassisAssigned {
		t.Fatalf("GatewayReady = %+v", gw)
	}
	state := ovnnb.Dump(t, admin)
	if len(state.Groups) != 1 {
		t.Fatalf("groups in the NB: %+v", state.Groups)
	}
	for _, g := range state.Groups {
		if diff := cmp.Diff("tenant-a/subnet-a", g.ExternalIDs[ovngateway.NetworkKey]); diff != "" || len(g.Chassis) != 2 {
			t.Errorf("group %+v", g)
		}
	}
	for _, r := range []sim.ObjectRef{
		{APIVersion: "proxmox.cozystack.io/v1alpha1", Kind: "ProxmoxNetwork", Namespace: "tenant-a", Name: "subnet-a"},
		{APIVersion: "kubeovn.io/v1", Kind: "Subnet", Name: "subnet-a"},
	} {
		if err := h.Delete(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.Converge(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(n), &v1alpha1.ProxmoxNetwork{}); err == nil {
		t.Fatal("the network was not released")
	}
	state = ovnnb.Dump(t, admin)
	if len(state.Groups) != 0 {
		t.Errorf("groups left in the NB after the release: %+v", state.Groups)
	}
	if p := state.Ports[ovngateway.RouterPortName("vpc-a", "subnet-a")]; p.Group != "" {
		t.Errorf("the router port still points at %q", p.Group)
	}
}
