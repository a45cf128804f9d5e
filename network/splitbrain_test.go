package network_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/network"
)

// replica is one controller process: its own cache, fed only by its own
// writes and by a load at start, so it never sees the other's allocations.
func replica(t tb, store client.WithWatch, clk *clocktesting.FakeClock) *network.Controller {
	t.Helper()
	cache := network.NewCache()
	ctrl, err := network.New(network.Config{
		Client: interceptor.NewClient(store, network.Feed(cache)),
		Cache:  cache, Clock: clk, Resync: -1,
	})
	if err != nil {
		t.Fatalf("new controller: %v", err)
	}
	if err := ctrl.Load(context.Background()); err != nil {
		t.Fatalf("load: %v", err)
	}
	return ctrl
}

// splitBrain creates nets networks on a zone with room for all of them,
// starts two replicas whose caches were loaded before any Vlan existed, and
// lets both reconcile every network at the same time, again and again.
func splitBrain(t *testing.T, store client.WithWatch, nets int) {
	ctx := context.Background()
	baseWorld(t, store, map[string][]string{"zone-a": {fmt.Sprintf("100-%d", 100+nets+10)}})
	for i := range nets {
		createNetwork(t, store, netID(i), "zone-a")
	}
	clk := clocktesting.NewFakeClock(sim.Epoch)
	a, b := replica(t, store, clk), replica(t, store, clk)
	for round := range 3 {
		var wg sync.WaitGroup
		for _, r := range []*network.Controller{a, b} {
			wg.Go(func() {
				for i := range nets {
					// each replica visits the networks in its own order
					n := i
					if r == b {
						n = (nets - 1 - i + round) % nets
					}
					r.EnqueueNetwork(netID(n).key())
				}
				if _, err := r.Drain(ctx, 100000); err != nil {
					t.Errorf("drain: %v", err)
				}
			})
		}
		wg.Wait()
		clk.Step(time.Minute)
	}
	s := read(t, store)
	checkUniqueIDs(t, s)
	claims := map[int]v1alpha1.NetworkReference{}
	for _, c := range s.claims {
		claims[int(c.Spec.VLAN)] = c.Spec.Network
	}
	held := map[int32]string{}
	for key, n := range s.networks {
		if n.Status.VLAN == 0 {
			t.Errorf("network %s got no VLAN: %+v", key, n.Status.Conditions)
			continue
		}
		if other, dup := held[n.Status.VLAN]; dup {
			t.Errorf("VLAN %d given to %s and %s", n.Status.VLAN, other, key)
		}
		held[n.Status.VLAN] = key.String()
		if owner := claims[int(n.Status.VLAN)]; owner.Namespace != key.Namespace || owner.Name != key.Name {
			t.Errorf("network %s holds VLAN %d whose claim names %s", key, n.Status.VLAN, owner)
		}
	}
	vlans := 0
	for _, v := range s.vlans {
		if v.Labels[v1alpha1.LabelNetworkName] != "" {
			vlans++
		}
	}
	if vlans != nets || len(s.claims) != nets {
		t.Errorf("%d networks ended with %d Vlans and %d claims", nets, vlans, len(s.claims))
	}
}

// TestSplitBrainFake: two replicas with stale caches on one fake API never
// give one VLAN twice.
func TestSplitBrainFake(t *testing.T) {
	store := kube.NewClient(kube.ClientOptions{Scheme: sim.Scheme(), WithStatus: []client.Object{
		&v1alpha1.ProxmoxNetwork{}, &v1alpha1.ProxmoxNetworkZone{},
	}})
	splitBrain(t, store, 40)
}
