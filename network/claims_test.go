package network_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/network"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc/kubestore"
)

func claimIDs(s snapshot) []int32 {
	var ids []int32
	for _, c := range s.claims {
		ids = append(ids, c.Spec.VLAN)
	}
	return ids
}

// claimFault runs network 0 in zone-a (IDs 100-103) with the first create
// of a VLAN claim failing with kind, after the write when after is set;
// then runs, with the world's client, right after that failure and before
// the controller retries. setup runs before the controller starts. It
// returns the world's client once a minute has passed.
func claimFault(t *testing.T, kind kube.ErrorKind, after bool, setup, then func(c client.WithWatch)) client.WithWatch {
	t.Helper()
	ctx := context.Background()
	faults := kube.NewFaults(1)
	if err := faults.Set(kube.Fault{Verbs: []kube.Verb{kube.VerbCreate}, Err: kind, After: after, Times: 1,
		Match: func(call kube.Call) bool { return call.GVK.Kind == "ProxmoxVLANClaim" }}); err != nil {
		t.Fatal(err)
	}
	hooks := faults.Funcs()
	create := hooks.Create
	fired := false
	hooks.Create = func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		err := create(ctx, c, obj, opts...)
		if faults.Injected() == 1 && !fired {
			fired = true
			then(c)
		}
		return err
	}
	h := sim.NewHarness(sim.Options{ControllerHooks: &hooks})
	c := h.Client()
	baseWorld(t, c, map[string][]string{"zone-a": {"100-103"}})
	setup(c)
	createNetwork(t, c, 0, "zone-a")
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Advance(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if faults.Injected() != 1 {
		t.Fatalf("the fault was injected %d times, want once", faults.Injected())
	}
	return c
}

// TestLostClaimAnswer: the API server records a network's claim but the
// answer is lost, and a lower ID becomes free before the retry. The network
// still gets the ID it claimed, holds one claim, and the zone counts agree
// with the objects.
func TestLostClaimAnswer(t *testing.T) {
	foreign := &kubeovnv1.Vlan{ObjectMeta: metav1.ObjectMeta{Name: "foreign"}, Spec: kubeovnv1.VlanSpec{ID: 100, Provider: provider}}
	c := claimFault(t, kube.Timeout, true,
		func(c client.WithWatch) { mustCreate(t, c, foreign.DeepCopy()) },
		func(c client.WithWatch) {
			// the foreign Vlan goes before the controller retries
			if err := c.Delete(context.Background(), foreign.DeepCopy()); err != nil {
				t.Errorf("delete the foreign Vlan: %v", err)
			}
		})
	holdsOnly(t, c, 101)
}

// holdsOnly checks that network 0 carries vid and holds its claim alone,
// and that the zones' counts equal a recount; it returns the snapshot.
func holdsOnly(t *testing.T, c client.Client, vid int32) snapshot {
	t.Helper()
	s := read(t, c)
	if got := claimIDs(s); len(got) != 1 || got[0] != vid {
		t.Errorf("claims %v, want only the %d the network carries", got, vid)
	}
	if got := getNet(t, c, 0).Status.VLAN; got != vid {
		t.Errorf("network VLAN %d, want %d", got, vid)
	}
	checkZoneCounts(t, s)
	return s
}

// TestSurplusClaimsReleased: a network holds claims for IDs its Vlan does
// not carry (left by a lost answer or by two replicas at once). The
// controller keeps the claim of its Vlan's ID and releases the others.
func TestSurplusClaimsReleased(t *testing.T) {
	ctx := context.Background()
	h := sim.NewHarness(sim.Options{})
	c := h.Client()
	baseWorld(t, c, map[string][]string{"zone-a": {"100-103"}})
	createNetwork(t, c, 0, "zone-a")
	z, err := vlanalloc.NewZone(vlanalloc.ZoneSpec{Name: "zone-a", ProviderNetwork: provider, Ranges: []string{"100-103"}})
	if err != nil {
		t.Fatal(err)
	}
	n := netID(0)
	ref := vlanalloc.NetworkRef{Namespace: n.ns(), Name: n.name()}
	mustCreate(t, c, kubestore.VlanObject(z, vlanalloc.Claim{Network: ref, Vlan: n.name()}, 100))
	for _, vid := range []int{102, 103} {
		mustCreate(t, c, kubestore.ClaimObject(provider, vlanalloc.Reservation{VID: vid, Zone: "zone-a", Network: ref, Vlan: n.name()}))
	}
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	converge(t, h)
	zone := holdsOnly(t, c, 100).zones[0]
	if zone.Status.AllocatedVLANs != 1 || zone.Status.FreeVLANs != 3 {
		t.Errorf("zone allocated/free %d/%d, want 1/3", zone.Status.AllocatedVLANs, zone.Status.FreeVLANs)
	}
}

// TestRefusedClaimThenDelete: a network's claim is refused (nothing is
// written) and the network is uninstalled before the retry. The ID it had
// picked returns to the zone.
func TestRefusedClaimThenDelete(t *testing.T) {
	c := claimFault(t, kube.Unavailable, false, func(client.WithWatch) {},
		func(c client.WithWatch) { uninstall(t, c, 0) }) // the tenant goes before the controller retries
	s := read(t, c)
	if len(s.networks) != 0 || len(s.claims) != 0 || len(s.vlans) != 0 {
		t.Fatalf("left behind: networks %d, claims %d, Vlans %d", len(s.networks), len(s.claims), len(s.vlans))
	}
	checkZoneCounts(t, s)
	if z := s.zones[0]; z.Status.AllocatedVLANs != 0 || z.Status.FreeVLANs != 4 {
		t.Errorf("zone allocated/free %d/%d, want 0/4", z.Status.AllocatedVLANs, z.Status.FreeVLANs)
	}
}

// TestOverlappingZonesCountClaims: two zones on one provider network share
// IDs 102-103. A network of zone-b claims 102 but cannot create its Vlan
// yet, and later goes away; zone-a counts 102 used while the claim exists
// and free once it is gone.
func TestOverlappingZonesCountClaims(t *testing.T) {
	ctx := context.Background()
	faults := kube.NewFaults(1)
	hooks := faults.Funcs()
	h := sim.NewHarness(sim.Options{ControllerHooks: &hooks})
	c := h.Client()
	baseWorld(t, c, map[string][]string{"zone-a": {"100-103"}, "zone-b": {"102-105"}})
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	converge(t, h)
	if err := faults.Set(kube.Fault{Verbs: []kube.Verb{kube.VerbCreate}, Err: kube.Unavailable,
		Match: func(call kube.Call) bool { return call.GVK.Kind == "Vlan" }}); err != nil {
		t.Fatal(err)
	}
	createNetwork(t, c, 0, "zone-b")
	converge(t, h)
	s := read(t, c)
	if got := claimIDs(s); len(got) != 1 || got[0] != 102 || len(s.vlans) != 0 {
		t.Fatalf("claims %v and %d Vlans, want the claim on 102 and no Vlan", got, len(s.vlans))
	}
	checkZoneCounts(t, s)
	faults.Clear()
	uninstall(t, c, 0)
	if _, err := h.Advance(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	s = read(t, c)
	if len(s.claims) != 0 || len(s.networks) != 0 {
		t.Fatalf("left behind: claims %v, networks %d", claimIDs(s), len(s.networks))
	}
	checkZoneCounts(t, s)
}

// TestDisplacedReservation: the first claim of network 0 fails (before or
// after the API server records it) and, before the retry, a Vlan created
// outside the controller takes the ID the network picked. The network
// never published that ID and has no Vlan, so it releases it and takes the
// next free one instead of staying in VLANConflict; the zone counts only
// what the objects hold.
func TestDisplacedReservation(t *testing.T) {
	for _, after := range []bool{false, true} {
		t.Run(map[bool]string{false: "refused", true: "recorded"}[after], func(t *testing.T) {
			foreign := &kubeovnv1.Vlan{ObjectMeta: metav1.ObjectMeta{Name: "foreign"}, Spec: kubeovnv1.VlanSpec{ID: 100, Provider: provider}}
			c := claimFault(t, kube.Unavailable, after, func(client.WithWatch) {},
				func(c client.WithWatch) { mustCreate(t, c, foreign.DeepCopy()) })
			holdsOnly(t, c, 101)
			wantCond(t, getNet(t, c, 0), v1alpha1.ConditionVLANAllocated, "True/"+v1alpha1.ReasonAllocated)
		})
	}
}

// TestPublishedVLANKeepsConflict is the control of
// TestDisplacedReservation: a network that published its VLAN keeps its
// claim when its Vlan goes and a foreign Vlan holds the ID, and reports
// VLANConflict naming that Vlan, because its machines may carry the ID.
func TestPublishedVLANKeepsConflict(t *testing.T) {
	ctx := context.Background()
	h, c := startOne(t, sim.Options{}, "100-103")
	holdsOnly(t, c, 100)
	mustCreate(t, c, &kubeovnv1.Vlan{ObjectMeta: metav1.ObjectMeta{Name: "foreign"}, Spec: kubeovnv1.VlanSpec{ID: 100, Provider: provider}})
	own := &kubeovnv1.Vlan{}
	if err := c.Get(ctx, client.ObjectKey{Name: netID(0).name()}, own); err != nil {
		t.Fatal(err)
	}
	own.Finalizers = nil
	if err := c.Update(ctx, own); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, own); err != nil {
		t.Fatal(err)
	}
	converge(t, h)
	n := getNet(t, c, 0)
	wantCond(t, n, v1alpha1.ConditionVLANAllocated, "False/"+v1alpha1.ReasonVLANConflict)
	if c := meta.FindStatusCondition(n.Status.Conditions, v1alpha1.ConditionVLANAllocated); !strings.Contains(c.Message, `"foreign"`) {
		t.Errorf("VLANAllocated message %q does not name the foreign Vlan", c.Message)
	}
	holdsOnly(t, c, 100)
}

// TestHeldNetworkWithoutVLAN: the first claim of network 0 fails (before
// or after the API server records it) and, before the retry, the network
// gets an address and is deleted. The address holds the network
// (Ready=False/InUse), but it never published a VLAN and has no Vlan, so
// it holds no claim either: the zone counts nothing for it.
func TestHeldNetworkWithoutVLAN(t *testing.T) {
	for _, after := range []bool{false, true} {
		t.Run(map[bool]string{false: "refused", true: "recorded"}[after], func(t *testing.T) {
			n := netID(0)
			c := claimFault(t, kube.Unavailable, after, func(client.WithWatch) {}, func(c client.WithWatch) {
				mustCreate(t, c, sim.IPAddress(n.ns(), "vm-0", n.name(), "10.0.0.70", 24))
				uninstall(t, c, n)
			})
			s := read(t, c)
			if len(s.claims) != 0 || len(s.vlans) != 0 {
				t.Errorf("a held network without a VLAN keeps claims %v and %d Vlans", claimIDs(s), len(s.vlans))
			}
			checkZoneCounts(t, s)
			if z := s.zones[0]; z.Status.AllocatedVLANs != 0 || z.Status.FreeVLANs != 4 {
				t.Errorf("zone allocated/free %d/%d, want 0/4", z.Status.AllocatedVLANs, z.Status.FreeVLANs)
			}
			net := getNet(t, c, n)
			wantCond(t, net, v1alpha1.ConditionReady, "False/"+v1alpha1.ReasonInUse)
			if msg := meta.FindStatusCondition(net.Status.Conditions, v1alpha1.ConditionReady).Message; strings.Contains(msg, "VLAN 0") {
				t.Errorf("Ready message %q speaks of VLAN 0", msg)
			}
		})
	}
}

// unlistedWhenFreed wraps hooks so that, whenever a delete frees an ID (a
// claim's, or a Vlan's that no claim holds), it checks that the namespace
// of the ID's network no longer lists it and calls report when it does:
// admission reads the annotation, and a free ID can go to another
// namespace. frees counts the deletes that free an ID.
func unlistedWhenFreed(hooks interceptor.Funcs, report func(format string, args ...any)) (_ interceptor.Funcs, frees *atomic.Int32) {
	del := hooks.Delete
	if del == nil {
		del = func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			return c.Delete(ctx, obj, opts...)
		}
	}
	frees = new(atomic.Int32)
	check := func(ctx context.Context, c client.Client, what string, vid int32, ref v1alpha1.NetworkReference) {
		if ref.Namespace == "" {
			return // a Vlan no network of ours holds
		}
		frees.Add(1)
		ns := &corev1.Namespace{}
		if err := c.Get(ctx, client.ObjectKey{Name: ref.Namespace}, ns); err != nil {
			if !apierrors.IsNotFound(err) {
				report("get namespace %s: %v", ref.Namespace, err)
			}
			return
		}
		listed := strings.Split(ns.Annotations[v1alpha1.AnnotationNamespaceNetworks], ",")
		if tr := network.Triple("vmbr1", vid, ref.Name); slices.Contains(listed, tr) {
			report("%s deleted while namespace %s still lists %s", what, ns.Name, tr)
		}
	}
	hooks.Delete = func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
		switch o := obj.(type) {
		case *v1alpha1.ProxmoxVLANClaim:
			check(ctx, c, "claim "+o.Name, o.Spec.VLAN, o.Spec.Network)
		case *kubeovnv1.Vlan:
			err := c.Get(ctx, client.ObjectKey{Name: v1alpha1.VLANClaimName(o.Spec.Provider, o.Spec.ID)}, &v1alpha1.ProxmoxVLANClaim{})
			if apierrors.IsNotFound(err) {
				ref := v1alpha1.NetworkReference{Namespace: o.Labels[v1alpha1.LabelNetworkNamespace], Name: o.Labels[v1alpha1.LabelNetworkName]}
				check(ctx, c, "Vlan "+o.Name+" (no claim)", int32(o.Spec.ID), ref)
			}
		}
		return del(ctx, c, obj, opts...)
	}
	return hooks, frees
}

// freedListed collects what unlistedWhenFreed reports from the
// controller's goroutines, for a state machine to check after each step.
type freedListed struct {
	mu   sync.Mutex
	msgs []string
}

func (f *freedListed) report(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}

func (f *freedListed) check(t *rapid.T) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.msgs) > 0 {
		t.Fatalf("IDs freed while listed: %v", f.msgs)
	}
}

// TestReleaseUnlistsBeforeFreeing: a deleted network leaves its
// namespace's annotation before its ID is freed, even when an admin
// deleted its claim; and so does a network whose finalizer an admin
// removed, before the zone collects its claim, or its Vlan when the admin
// deleted the claim too.
func TestReleaseUnlistsBeforeFreeing(t *testing.T) {
	for _, tc := range []string{"finalize", "finalize without claim", "orphan", "orphan without claim"} {
		t.Run(tc, func(t *testing.T) {
			ctx := context.Background()
			hooks, frees := unlistedWhenFreed(kube.NewFaults(1).Funcs(), t.Errorf)
			h, c := startOne(t, sim.Options{ControllerHooks: &hooks}, "100-103")
			if got := namespaceAnnotation(t, c, netID(0).ns()); got != network.Triple("vmbr1", 100, netID(0).name()) {
				t.Fatalf("annotation %q before the delete", got)
			}
			if strings.HasPrefix(tc, "orphan") { // the admin takes the finalizers off the network and its Subnet
				for _, o := range []client.Object{getNet(t, c, 0), getNamed[kubeovnv1.Subnet](t, c, netID(0).name())} {
					o.SetFinalizers(nil)
					if err := c.Update(ctx, o); err != nil {
						t.Fatal(err)
					}
				}
			}
			if strings.HasSuffix(tc, "without claim") { // the admin deletes the claim too
				if err := c.Delete(ctx, &read(t, c).claims[0]); err != nil {
					t.Fatal(err)
				}
			}
			uninstall(t, c, 0)
			if _, err := h.Advance(ctx, time.Minute); err != nil {
				t.Fatal(err)
			}
			if s := read(t, c); len(s.networks) != 0 || len(s.claims) != 0 || len(s.vlans) != 0 || frees.Load() != 1 {
				t.Fatalf("networks %d, claims %v, Vlans %d after the release, %d deletes freed an ID; want none, none, none, 1",
					len(s.networks), claimIDs(s), len(s.vlans), frees.Load())
			}
		})
	}
}
