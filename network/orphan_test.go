package network_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/network"
)

// TestOrphanedVlan: a network whose finalizer an admin removed by hand
// leaves its Vlan behind. The zone counts it as orphaned while Kube-OVN
// still lists the deleted subnet, collects it when the prune timeout runs
// out, and the VLAN returns to the zone.
func TestOrphanedVlan(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	m, err := network.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	h, c := startOne(t, sim.Options{KubeOVNDoesNotPrune: true, Metrics: m}, "100-101")
	for _, o := range []client.Object{&v1alpha1.ProxmoxNetwork{}, &kubeovnv1.Subnet{}} {
		key := netID(0).key()
		if _, sub := o.(*kubeovnv1.Subnet); sub {
			key.Namespace = ""
		}
		if err := c.Get(ctx, key, o); err != nil {
			t.Fatal(err)
		}
		o.SetFinalizers(nil)
		if err := c.Update(ctx, o); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	converge(t, h)
	if got := gather(t, reg)[`cozy_proxmox_orphaned_vlans{zone="zone-a"}`]; got != 1 {
		t.Errorf("orphaned VLANs %v, want 1", got)
	}
	z := &v1alpha1.ProxmoxNetworkZone{}
	if err := c.Get(ctx, client.ObjectKey{Name: "zone-a"}, z); err != nil {
		t.Fatal(err)
	}
	if msg := z.Status.Conditions[0].Message; !strings.Contains(msg, "1 orphaned Vlan(s)") || z.Status.FreeVLANs != 1 {
		t.Errorf("zone while the orphan waits: free %d, message %q", z.Status.FreeVLANs, msg)
	}
	if _, err := h.Advance(ctx, network.DefaultSubnetPruneTimeout+time.Minute); err != nil {
		t.Fatal(err)
	}
	s := read(t, c)
	if len(s.vlans) != 0 || len(s.claims) != 0 {
		t.Errorf("the orphan was not collected: Vlans %d, claims %d", len(s.vlans), len(s.claims))
	}
	if got := gather(t, reg)[`cozy_proxmox_orphaned_vlans{zone="zone-a"}`]; got != 0 {
		t.Errorf("orphaned VLANs %v after collection, want 0", got)
	}
	checkZoneCounts(t, s)
}
