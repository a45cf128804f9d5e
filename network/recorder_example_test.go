package network_test

import (
	"context"
	"fmt"

	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/network"
)

// A controller with a Recorder announces each transition of a network
// once; a second pass over the unchanged network announces nothing.
func ExampleConfig_recorder() {
	ctx := context.Background()
	store := kube.NewClient(kube.ClientOptions{Scheme: sim.Scheme(), WithStatus: []client.Object{&v1alpha1.ProxmoxNetwork{}}})
	objs := []client.Object{sim.ProviderNetwork("pxtenant", true), sim.Zone("zone-a", "vmbr1", "pxtenant", "100"), sim.Namespace("tenant-a", nil)}
	for _, id := range []string{"net-1", "net-2"} {
		net, _ := sim.Network("tenant-a", id, "zone-a", "vpc-a", "10.20.0.0/24")
		objs = append(objs, net...)
	}
	for _, o := range objs {
		if err := store.Create(ctx, o); err != nil {
			fmt.Println(err)
			return
		}
	}
	rec := events.NewFakeRecorder(10)
	cache := network.NewCache()
	ctrl, err := network.New(network.Config{
		Client: interceptor.NewClient(store, network.Feed(cache)), Cache: cache, Resync: -1,
		Recorder: engine.EventsRecorder{Recorder: rec, Actions: network.EventActions},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for range 2 {
		if err := ctrl.Load(ctx); err != nil {
			fmt.Println(err)
			return
		}
		if err := ctrl.Resync(ctx); err != nil {
			fmt.Println(err)
			return
		}
		if _, err := ctrl.Drain(ctx, 100); err != nil {
			fmt.Println(err)
			return
		}
	}
	close(rec.Events)
	for e := range rec.Events {
		fmt.Println(e)
	}
	// Output:
	// Normal VLANAllocated allocated VLAN 100 on zone zone-a
	// Warning ZoneExhausted cannot allocate a VLAN for tenant-a/net-2 in zone "zone-a": no free VLAN left in the zone
}
