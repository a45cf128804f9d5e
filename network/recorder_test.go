package network_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"pgregory.net/rapid"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	ipamv1alpha2 "github.com/pxsubstrate/pxsubstrate/api/ipam/v1alpha2"
	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/network"
)

// kept is one event as a recorder received it.
type kept struct {
	Regarding, Type, Reason, Action, Note string
}

// keptEvents is an events.EventRecorder that keeps every event, with the
// object it regards.
type keptEvents struct {
	mu  sync.Mutex
	all []kept
}

var _ events.EventRecorder = (*keptEvents)(nil)

func (k *keptEvents) Eventf(regarding, _ runtime.Object, eventType, reason, action, note string, args ...any) {
	who := "?"
	if o, err := meta.Accessor(regarding); err == nil {
		who = fmt.Sprintf("%T %s/%s", regarding, o.GetNamespace(), o.GetName())
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.all = append(k.all, kept{Regarding: who, Type: eventType, Reason: reason, Action: action, Note: fmt.Sprintf(note, args...)})
}

// take returns the events kept since the last take.
func (k *keptEvents) take() []kept {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := k.all
	k.all = nil
	return out
}

// switchTarget feeds the cache of whichever controller runs now.
type switchTarget struct {
	mu sync.Mutex
	c  *network.Cache
}

func (s *switchTarget) set(c *network.Cache) { s.mu.Lock(); s.c = c; s.mu.Unlock() }

func (s *switchTarget) get() *network.Cache { s.mu.Lock(); defer s.mu.Unlock(); return s.c }

func (s *switchTarget) Observe(o client.Object) {
	if c := s.get(); c != nil {
		c.Observe(o)
	}
}

func (s *switchTarget) Forget(o client.Object) {
	if c := s.get(); c != nil {
		c.Forget(o)
	}
}

// eventRig is a simulated cluster (sim's World over an in-memory API) with
// one network controller that records its events.
type eventRig struct {
	t      tb
	client client.WithWatch
	clock  *clocktesting.FakeClock
	world  *sim.World
	target *switchTarget
	gw     *fakeGateway
	ctrl   *network.Controller
}

func newEventRig(t tb, prune bool) *eventRig {
	store := kube.NewClient(kube.ClientOptions{Scheme: sim.Scheme(), WithStatus: []client.Object{
		&v1alpha1.ProxmoxNetwork{}, &v1alpha1.ProxmoxNetworkZone{}, &kubeovnv1.Vlan{}, &kubeovnv1.Subnet{},
		&kubeovnv1.ProviderNetwork{}, &ipamv1alpha2.InClusterIPPool{},
	}})
	target := &switchTarget{}
	return &eventRig{
		t: t, client: interceptor.NewClient(store, network.Feed(target)), clock: clocktesting.NewFakeClock(sim.Epoch),
		world: &sim.World{PruneSubnets: prune}, target: target,
	}
}

// start runs a fresh controller, recording into rec, its client wrapped by
// hooks when given; it keeps nothing of the previous one.
func (r *eventRig) start(rec events.EventRecorder, hooks *interceptor.Funcs) {
	r.t.Helper()
	ctx := context.Background()
	cache := network.NewCache()
	var c client.Client = r.client
	if hooks != nil {
		c = interceptor.NewClient(r.client, *hooks)
	}
	cfg := network.Config{Client: c, Cache: cache, Clock: r.clock, Resync: -1}
	if rec != nil {
		cfg.Recorder = engine.EventsRecorder{Recorder: rec, Actions: network.EventActions}
	}
	if r.gw != nil {
		cfg.Gateway = r.gw
	}
	ctrl, err := network.New(cfg)
	if err != nil {
		r.t.Fatalf("%v", err)
	}
	r.target.set(nil)
	if err := ctrl.Load(ctx); err != nil {
		r.t.Fatalf("%v", err)
	}
	r.target.set(cache)
	r.ctrl = ctrl
	if err := ctrl.Resync(ctx); err != nil {
		r.t.Fatalf("%v", err)
	}
}

// converge lets the world react and the controller reconcile until neither
// has anything left to do now.
func (r *eventRig) converge() {
	r.t.Helper()
	ctx := context.Background()
	for range 1000 {
		changed, err := r.world.React(ctx, r.client)
		if err != nil {
			r.t.Fatalf("%v", err)
		}
		n, err := r.ctrl.Drain(ctx, 10000)
		if err != nil {
			r.t.Fatalf("%v", err)
		}
		if n == 0 && !changed {
			return
		}
	}
	r.t.Fatalf("the simulation did not converge")
}

// advance moves the clock by d, converging at every due reconcile.
func (r *eventRig) advance(d time.Duration) {
	r.t.Helper()
	end := r.clock.Now().Add(d)
	for {
		r.converge()
		next, ok := r.ctrl.NextDue()
		if !ok || next.After(end) {
			break
		}
		if next.After(r.clock.Now()) {
			r.clock.SetTime(next)
		}
	}
	r.clock.SetTime(end)
	r.converge()
}

// resyncAll reconciles every object again, as a periodic resync does.
func (r *eventRig) resyncAll() {
	r.t.Helper()
	if err := r.ctrl.Resync(context.Background()); err != nil {
		r.t.Fatalf("%v", err)
	}
	r.converge()
}

func wantEvents(t *testing.T, step string, rec *keptEvents, want []kept) {
	t.Helper()
	if diff := cmp.Diff(want, rec.take()); diff != "" {
		t.Errorf("%s: events -want +got:\n%s", step, diff)
	}
}

func netEvent(n netID, typ string, reason engine.Reason, action, note string) kept {
	return kept{Regarding: "*v1alpha1.ProxmoxNetwork " + n.key().String(), Type: typ, Reason: string(reason), Action: action, Note: note}
}

const (
	normal  = "Normal"
	warning = "Warning"
)

// TestEventsLifecycle: a network's life as events, each once: allocated,
// its delete held by an address, then, once the address is gone, the
// gateway and the VLAN released. Resyncs and rechecks in between emit
// nothing.
func TestEventsLifecycle(t *testing.T) {
	ctx := context.Background()
	r := newEventRig(t, true)
	r.gw = &fakeGateway{up: map[string]network.NetworkInfo{}}
	rec := &keptEvents{}
	baseWorld(t, r.client, map[string][]string{"zone-a": {"100-101"}})
	createNetwork(t, r.client, 0, "zone-a")
	r.start(rec, nil)
	r.converge()
	wantEvents(t, "allocate", rec, []kept{
		netEvent(0, normal, network.EventVLANAllocated, "Allocate", "allocated VLAN 100 on zone zone-a"),
	})
	wantCond(t, getNet(t, r.client, 0), v1alpha1.ConditionReady, "True/Ready")

	r.resyncAll()
	r.advance(2 * network.Resync)
	wantEvents(t, "resync of the unchanged network", rec, nil)

	addr := sim.IPAddress(netID(0).ns(), "vm-0", netID(0).name(), "10.10.0.70", 24)
	mustCreate(t, r.client, addr.DeepCopy())
	uninstall(t, r.client, 0)
	r.converge()
	wantEvents(t, "held delete", rec, []kept{
		netEvent(0, warning, network.EventDeletionHeld, "Delete",
			`1 address(es) of pool "s-0" are allocated and 0 ProxmoxMachine(s) reference it; VLAN 100 and subnet "s-0" are kept until they are gone`),
	})
	r.advance(3 * network.RetryAfter)
	r.resyncAll()
	wantEvents(t, "rechecks of the held delete", rec, nil)

	if err := r.client.Delete(ctx, addr.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	r.advance(network.RetryAfter)
	wantEvents(t, "release", rec, []kept{
		netEvent(0, normal, network.EventGatewayReleased, "Release", `released the HA chassis group of subnet "s-0" in OVN NB`),
		netEvent(0, normal, network.EventVLANReleased, "Release", "released VLAN 100 to zone zone-a"),
	})
	if err := r.client.Get(ctx, netID(0).key(), &v1alpha1.ProxmoxNetwork{}); err == nil {
		t.Error("the network is still there after its VLAN was released")
	}
	r.advance(network.Resync)
	wantEvents(t, "after the release", rec, nil)
}

// TestEventsZoneExhausted: a network waiting for a VLAN of a full zone is
// told once, with the condition's reason and message; it is told again
// when it gets the VLAN another network released.
func TestEventsZoneExhausted(t *testing.T) {
	r := newEventRig(t, true)
	rec := &keptEvents{}
	baseWorld(t, r.client, map[string][]string{"zone-a": {"100"}})
	createNetwork(t, r.client, 0, "zone-a")
	r.start(rec, nil)
	r.converge()
	createNetwork(t, r.client, 1, "zone-a")
	r.converge()
	cond := meta.FindStatusCondition(getNet(t, r.client, 1).Status.Conditions, v1alpha1.ConditionVLANAllocated)
	if cond == nil || cond.Reason != v1alpha1.ReasonZoneExhausted {
		t.Fatalf("the second network's VLANAllocated is %+v, want False/ZoneExhausted", cond)
	}
	wantEvents(t, "exhausted", rec, []kept{
		netEvent(0, normal, network.EventVLANAllocated, "Allocate", "allocated VLAN 100 on zone zone-a"),
		netEvent(1, warning, network.EventZoneExhausted, "Allocate", cond.Message),
	})
	r.advance(5 * network.RetryAfter)
	r.resyncAll()
	wantEvents(t, "still exhausted", rec, nil)

	uninstall(t, r.client, 0)
	r.advance(network.RetryAfter)
	wantEvents(t, "freed", rec, []kept{
		netEvent(0, normal, network.EventVLANReleased, "Release", "released VLAN 100 to zone zone-a"),
		netEvent(1, normal, network.EventVLANAllocated, "Allocate", "allocated VLAN 100 on zone zone-a"),
	})
}

// TestEventsPruneTimeout: Kube-OVN never prunes the deleted subnet, so the
// VLAN is released on the prune timeout, with a warning first; waiting for
// the timeout emits nothing.
func TestEventsPruneTimeout(t *testing.T) {
	r := newEventRig(t, false)
	rec := &keptEvents{}
	baseWorld(t, r.client, map[string][]string{"zone-a": {"100-101"}})
	createNetwork(t, r.client, 0, "zone-a")
	r.start(rec, nil)
	r.converge()
	wantEvents(t, "allocate", rec, []kept{
		netEvent(0, normal, network.EventVLANAllocated, "Allocate", "allocated VLAN 100 on zone zone-a"),
	})
	uninstall(t, r.client, 0)
	r.advance(network.DefaultSubnetPruneTimeout / 2)
	wantCond(t, getNet(t, r.client, 0), v1alpha1.ConditionReady, "False/SwitchDeleting")
	wantEvents(t, "waiting for the prune", rec, nil)
	r.advance(network.DefaultSubnetPruneTimeout)
	wantEvents(t, "timeout", rec, []kept{
		netEvent(0, warning, network.EventSubnetPruneTimeout, "Release",
			`Kube-OVN did not prune deleted subnets [s-0] from Vlan "s-0" within 10m0s; releasing VLAN 100 anyway`),
		netEvent(0, normal, network.EventVLANReleased, "Release", "released VLAN 100 to zone zone-a"),
	})
}

// TestEventsAdoptedAfterCrash: a controller that created the Vlan but
// crashed before the network's status said so announced the allocation;
// the next one announces that it adopted the Vlan, with the same ID.
func TestEventsAdoptedAfterCrash(t *testing.T) {
	r := newEventRig(t, true)
	baseWorld(t, r.client, map[string][]string{"zone-a": {"100-101"}})
	createNetwork(t, r.client, 0, "zone-a")
	noStatus := interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
		if _, ok := obj.(*v1alpha1.ProxmoxNetwork); ok {
			return fmt.Errorf("the controller crashed before writing the status of %s", obj.GetName())
		}
		return c.SubResource(sub).Update(ctx, obj, opts...)
	}}
	first := &keptEvents{}
	r.start(first, &noStatus)
	if _, err := r.ctrl.Drain(context.Background(), 10); err != nil {
		t.Fatal(err)
	}
	wantEvents(t, "before the crash", first, []kept{
		netEvent(0, normal, network.EventVLANAllocated, "Allocate", "allocated VLAN 100 on zone zone-a"),
	})
	if got := getNet(t, r.client, 0).Status.VLAN; got != 0 {
		t.Fatalf("the crashed controller stored VLAN %d in the status", got)
	}
	second := &keptEvents{}
	r.start(second, nil)
	r.converge()
	wantEvents(t, "after the restart", second, []kept{
		netEvent(0, normal, network.EventVLANAdopted, "Adopt", `adopted VLAN 100 on zone zone-a from the existing Kube-OVN Vlan "s-0"`),
	})
	wantEvents(t, "the crashed controller after the restart", first, nil)
	if got := getNet(t, r.client, 0).Status.VLAN; got != 100 {
		t.Errorf("status VLAN %d after the restart, want 100", got)
	}
	r.resyncAll()
	wantEvents(t, "resync after the restart", second, nil)
}

// TestEventsStaleRead: a pass on a copy of the network older than the
// previous pass's status write (an informer that lags) repeats no event.
func TestEventsStaleRead(t *testing.T) {
	r := newEventRig(t, true)
	baseWorld(t, r.client, map[string][]string{"zone-a": {"100"}})
	createNetwork(t, r.client, 0, "zone-a")
	createNetwork(t, r.client, 1, "zone-a")
	var mu sync.Mutex
	stale := map[client.ObjectKey]*v1alpha1.ProxmoxNetwork{}
	lagging := interceptor.Funcs{
		// The informer keeps the network as the finalizer patch left it,
		// before any status write.
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			if err := c.Patch(ctx, obj, p, opts...); err != nil {
				return err
			}
			if n, ok := obj.(*v1alpha1.ProxmoxNetwork); ok {
				mu.Lock()
				defer mu.Unlock()
				stale[client.ObjectKeyFromObject(n)] = n.DeepCopy()
			}
			return nil
		},
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			if n, ok := obj.(*v1alpha1.ProxmoxNetwork); ok && stale[key] != nil {
				stale[key].DeepCopyInto(n)
			}
			return nil
		},
	}
	rec := &keptEvents{}
	r.start(rec, &lagging)
	for range 3 {
		r.ctrl.EnqueueNetwork(netID(0).key())
		r.ctrl.EnqueueNetwork(netID(1).key())
		r.advance(network.RetryAfter)
	}
	got := map[string][]string{}
	for _, e := range rec.take() {
		got[e.Regarding] = append(got[e.Regarding], e.Reason)
	}
	want := map[string][]string{
		"*v1alpha1.ProxmoxNetwork tenant-0/s-0": {string(network.EventVLANAllocated)},
		"*v1alpha1.ProxmoxNetwork tenant-1/s-1": {string(network.EventZoneExhausted)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("passes on stale copies of the networks: event reasons -want +got:\n%s", diff)
	}
}

// TestEventsStateMachine: whatever resyncs, clock jumps and controller
// restarts come between the steps of a network's life, the events are
// exactly one per transition, in order.
func TestEventsStateMachine(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(rt *rapid.T) {
		ctx := context.Background()
		r := newEventRig(rt, true)
		r.gw = &fakeGateway{up: map[string]network.NetworkInfo{}}
		rec := &keptEvents{}
		baseWorld(rt, r.client, map[string][]string{"zone-a": {"100-101"}})
		r.start(rec, nil)
		addr := sim.IPAddress(netID(0).ns(), "vm-0", netID(0).name(), "10.10.0.70", 24)
		steps := []func(){
			func() { createNetwork(rt, r.client, 0, "zone-a"); mustCreate(rt, r.client, addr.DeepCopy()) },
			func() { uninstall(rt, r.client, 0) },
			func() {
				if err := r.client.Delete(ctx, addr.DeepCopy()); err != nil {
					rt.Fatalf("%v", err)
				}
			},
		}
		// want[i] are the reasons once steps[:i] ran and the world settled.
		want := [][]string{nil, {"VLANAllocated"}, {"VLANAllocated", "DeletionHeld"},
			{"VLANAllocated", "DeletionHeld", "GatewayReleased", "VLANReleased"}}
		done := 0
		var got []string
		rt.Repeat(map[string]func(*rapid.T){
			"step": func(rt *rapid.T) {
				if done == len(steps) {
					return // the network's life is over; the other actions go on
				}
				steps[done]()
				done++
				r.advance(network.RetryAfter)
			},
			"resync":  func(*rapid.T) { r.resyncAll() },
			"restart": func(*rapid.T) { r.start(rec, nil); r.converge() },
			"advance": func(rt *rapid.T) {
				r.advance(time.Duration(rapid.IntRange(1, 20).Draw(rt, "minutes")) * time.Minute)
			},
			"": func(rt *rapid.T) {
				for _, e := range rec.take() {
					got = append(got, e.Reason)
				}
				if diff := cmp.Diff(want[done], got); diff != "" {
					rt.Fatalf("after %d steps: reasons -want +got:\n%s", done, diff)
				}
			},
		})
	})
}
