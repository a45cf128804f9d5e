package network_test

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
)

// capZone sets zone-a's maxNetworksPerNamespace.
func capZone(t tb, c client.Client, limit int32) {
	t.Helper()
	z := &v1alpha1.ProxmoxNetworkZone{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: "zone-a"}, z); err != nil {
		t.Fatalf("get zone: %v", err)
	}
	z.Spec.MaxNetworksPerNamespace = &limit
	if err := c.Update(context.Background(), z); err != nil {
		t.Fatalf("update zone: %v", err)
	}
}

// TestNamespaceCapWaitsAndResumes: with maxNetworksPerNamespace 2, the third
// network of tenant-0 waits without a VLAN (NamespaceCapReached, with a
// Warning event) while tenant-1 still gets one; once one of tenant-0's
// networks is deleted, the waiting network takes its VLAN.
func TestNamespaceCapWaitsAndResumes(t *testing.T) {
	t.Parallel()
	h, rec := hostileRig(t, func(c client.Client) {
		capZone(t, c, 2)
		createNetwork(t, c, 0, "zone-a")
		createNetwork(t, c, 3, "zone-a")
	})
	c := h.Client()
	for _, n := range []netID{0, 3} {
		if got := getNetwork(t, c, n.ns(), n.name()); got.Status.VLAN == 0 {
			t.Fatalf("network %s under the cap holds no VLAN: %+v", n.key(), got.Status.Conditions)
		}
	}
	createNetwork(t, c, 6, "zone-a")
	createNetwork(t, c, 1, "zone-a")
	advance(t, h)
	wantRefused(t, c, "tenant-0", "s-6", v1alpha1.ReasonNamespaceCapReached,
		`namespace "tenant-0" holds 2 VLANs of zone "zone-a", the zone's maxNetworksPerNamespace is 2`)
	wantEvent(t, rec, v1alpha1.ReasonNamespaceCapReached, "tenant-0/s-6")
	if got := getNetwork(t, c, "tenant-1", "s-1"); got.Status.VLAN == 0 {
		t.Fatalf("tenant-1's network holds no VLAN while tenant-0 is at its cap: %+v", got.Status.Conditions)
	}
	uninstall(t, c, 0)
	advance(t, h)
	advance(t, h)
	got := getNetwork(t, c, "tenant-0", "s-6")
	if cond := findCond(got.Status.Conditions, v1alpha1.ConditionVLANAllocated); got.Status.VLAN == 0 || cond == nil || cond.Reason != v1alpha1.ReasonAllocated {
		t.Fatalf("s-6 did not take a VLAN once tenant-0 was under its cap: VLAN %d, %+v", got.Status.VLAN, got.Status.Conditions)
	}
}
