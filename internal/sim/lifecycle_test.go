package sim_test

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
)

func TestQuickLifecycle(t *testing.T) {
	ctx := context.Background()
	h := sim.NewHarness(sim.Options{})
	c := h.Client()
	mustCreate(t, c, sim.ProviderNetwork("pxtenant", true), sim.Zone("zone-a", "vmbr1", "pxtenant", "100-101"), sim.Namespace("tenant-a", nil))
	objs, err := sim.Network("tenant-a", "subnet-a", "zone-a", "vpc-a", "10.0.0.0/24")
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, c, objs...)
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Converge(ctx); err != nil {
		t.Fatal(err)
	}
	var n v1alpha1.ProxmoxNetwork
	if err := c.Get(ctx, client.ObjectKey{Namespace: "tenant-a", Name: "subnet-a"}, &n); err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", n.Status)
	if !meta.IsStatusConditionTrue(n.Status.Conditions, "Ready") {
		t.Fatalf("not ready: %+v", n.Status.Conditions)
	}
	for _, l := range h.Logs().Lines() {
		t.Log(l)
	}
}

func mustCreate(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
}
