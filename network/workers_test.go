package network_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/network"
)

// writesPerNetwork are the controller's writes per network from request to
// Ready in the simulator, whatever the number of workers: see
// TestWritesPerNetwork.
var writesPerNetwork = map[kube.RequestKey]int{
	{Verb: kube.VerbPatch, Kind: "ProxmoxNetwork"}:        1,
	{Verb: kube.VerbCreate, Kind: "ProxmoxVLANClaim"}:     1,
	{Verb: kube.VerbCreate, Kind: "Vlan"}:                 1,
	{Verb: kube.VerbPatch, Kind: "Subnet"}:                1,
	{Verb: kube.VerbStatusUpdate, Kind: "ProxmoxNetwork"}: 1,
}

// concurrentWorld is n networks in three namespaces, in two zones whose
// ranges overlap on one provider network: the two zones' allocators pick
// from the same IDs and only the claims on the provider network keep them
// apart.
func concurrentWorld(n int) ([]client.Object, error) {
	objs := []client.Object{
		sim.ProviderNetwork("pxw", true),
		sim.Zone("zone-a", "vmbr1", "pxw", "100-2099"),
		sim.Zone("zone-b", "vmbr1", "pxw", "1100-3099"),
	}
	for ns := range 3 {
		objs = append(objs, sim.Namespace(fmt.Sprintf("workers-%d", ns), nil))
	}
	for i := range n {
		zone := []string{"zone-a", "zone-b"}[i%2]
		net, err := sim.Network(fmt.Sprintf("workers-%d", i%3), fmt.Sprintf("w-%d", i), zone, "vpc-w", fmt.Sprintf("10.%d.%d.0/24", 60+i/256, i%256))
		if err != nil {
			return nil, err
		}
		objs = append(objs, net...)
	}
	return objs, nil
}

// convergeWithWorkers converges the networks of concurrentWorld with the
// given workers per runner on store, and checks the end state: every
// network Ready, the invariants of the lifecycle (among them no VLAN ID
// twice on the provider network and every network's VLAN carried by its
// own Vlan under its own claim), one claim per Vlan and the same writes
// per network as with one worker.
func convergeWithWorkers(t *testing.T, store client.WithWatch, n, workers int) {
	t.Helper()
	ctx := context.Background()
	reqs := kube.NewRequests()
	hooks := reqs.Funcs()
	checkReadyListed(t, store, &hooks)
	h := sim.NewHarness(sim.Options{Store: store, ControllerHooks: &hooks, Workers: workers})
	objs, err := concurrentWorld(n)
	if err != nil {
		t.Fatal(err)
	}
	createMany(t, h.Client(), objs)
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// A write that lost a race is retried after a backoff on the
	// simulated clock: a second is far more than any backoff here.
	if _, err := h.Advance(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	invariantsHold(t, h)
	s := read(t, store)
	if len(s.networks) != n {
		t.Fatalf("%d networks, want %d", len(s.networks), n)
	}
	ids := map[int32]string{}
	for k, net := range s.networks {
		if !meta.IsStatusConditionTrue(net.Status.Conditions, v1alpha1.ConditionReady) {
			t.Errorf("network %s is not Ready: %v", k, net.Status.Conditions)
		}
		if other, dup := ids[net.Status.VLAN]; dup {
			t.Errorf("VLAN %d is held by %s and %s", net.Status.VLAN, other, k)
		}
		ids[net.Status.VLAN] = k.String()
	}
	if len(s.vlans) != n || len(s.claims) != n {
		t.Errorf("%d Vlans and %d claims for %d networks, want one of each per network", len(s.vlans), len(s.claims), n)
	}
	byVlan := map[string]int{}
	for _, c := range s.claims {
		byVlan[c.Spec.VLANName]++
	}
	for _, v := range s.vlans {
		if byVlan[v.Name] != 1 {
			t.Errorf("Vlan %s (ID %d) has %d claims, want 1", v.Name, v.Spec.ID, byVlan[v.Name])
		}
	}
	if ns := checkWrites(t, reqs.Counts(), n); ns > 4*3 {
		t.Errorf("%d networks in 3 namespaces: %d namespace patches, want a few per namespace", n, ns)
	}
}

// checkWrites compares the writes of converging n networks with
// writesPerNetwork and returns the namespace annotation patches, which are
// counted per namespace, not per network.
func checkWrites(t *testing.T, counts map[kube.RequestKey]int, n int) (nsPatches int) {
	t.Helper()
	for k, c := range counts {
		if !kube.IsWrite(k.Verb) {
			continue
		}
		switch want, ok := writesPerNetwork[k]; {
		case ok && c != want*n:
			t.Errorf("%d networks: %s %s %d times, want %d per network", n, k.Verb, k.Kind, c, want)
		case !ok && k.Kind == "Namespace":
			nsPatches = c
		case !ok && k.Kind != "ProxmoxNetworkZone":
			t.Errorf("%d networks: %s %s %d times; no such write is needed", n, k.Verb, k.Kind, c)
		}
	}
	return nsPatches
}

// TestWorkersFake converges 600 networks with 8 workers per runner on the
// simulator's API.
func TestWorkersFake(t *testing.T) {
	convergeWithWorkers(t, sim.NewStore(true), 600, 8)
}

// TestWorkersAPIServer converges 200 networks with 8 workers per runner
// on a real kube-apiserver.
func TestWorkersAPIServer(t *testing.T) {
	_, store := startAPIServer(t)
	convergeWithWorkers(t, store, 200, 8)
}

// TestStatusInterval: with a StatusInterval, a burst of networks costs one
// zone status write and one namespace annotation write per interval, not
// one per network, and the write after the interval has the final counts.
// The clock stands still during the burst, so every pass over the zone and
// the namespace after the first falls inside the interval.
func TestStatusInterval(t *testing.T) {
	ctx := context.Background()
	store := sim.NewStore(true)
	reqs := kube.NewRequests()
	clk := clocktesting.NewFakeClock(sim.Epoch)
	ctrl, c := fedController(t, store, reqs.Funcs(), network.Config{Clock: clk, Resync: -1, StatusInterval: time.Minute})
	objs, err := concurrentWorld(0)
	if err != nil {
		t.Fatal(err)
	}
	createMany(t, store, objs)
	if err := ctrl.Load(ctx); err != nil {
		t.Fatal(err)
	}
	resyncAndDrain(t, ctrl, 1000)
	writes := func(kind string, verb kube.Verb) int { return reqs.Counts()[kube.RequestKey{Verb: verb, Kind: kind}] }
	zoneWrites := writes("ProxmoxNetworkZone", kube.VerbStatusUpdate)
	const n = 30
	for i := range n {
		net, err := sim.Network("workers-0", fmt.Sprintf("w-%d", i), "zone-a", "vpc-w", fmt.Sprintf("10.70.%d.0/24", i))
		if err != nil {
			t.Fatal(err)
		}
		createMany(t, c, net)
		if _, err := ctrl.Drain(ctx, 1000); err != nil {
			t.Fatal(err)
		}
	}
	if got := writes("ProxmoxNetworkZone", kube.VerbStatusUpdate) - zoneWrites; got > 1 {
		t.Errorf("%d networks allocated one by one within the interval: %d zone status writes, want at most 1", n, got)
	}
	if got := writes("Namespace", kube.VerbPatch); got > 1 {
		t.Errorf("%d networks within the interval: %d namespace annotation writes, want at most 1", n, got)
	}
	next, ok := ctrl.NextDue()
	if !ok {
		t.Fatal("nothing waits for the interval to end")
	}
	clk.SetTime(next.Add(time.Minute))
	if _, err := ctrl.Drain(ctx, 1000); err != nil {
		t.Fatal(err)
	}
	z := &v1alpha1.ProxmoxNetworkZone{}
	if err := store.Get(ctx, client.ObjectKey{Name: "zone-a"}, z); err != nil {
		t.Fatal(err)
	}
	if z.Status.AllocatedVLANs != n || z.Status.Networks != n {
		t.Errorf("after the interval, zone-a reports %d VLANs allocated and %d networks, want %d", z.Status.AllocatedVLANs, z.Status.Networks, n)
	}
	ns := &corev1.Namespace{}
	if err := store.Get(ctx, client.ObjectKey{Name: "workers-0"}, ns); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(ns.Annotations[v1alpha1.AnnotationNamespaceNetworks], ",") + 1; got != n {
		t.Errorf("after the interval, the annotation lists %d networks, want %d", got, n)
	}
}

// checkListedWhenReady makes f check, after every status write through the
// client it wraps that reports a network Ready, that its namespace's
// annotation (read from store) lists the network's triple: Ready never
// reaches the API before the annotation.
func checkListedWhenReady(t testing.TB, store client.Reader, f *interceptor.Funcs) {
	next := f.SubResourceUpdate
	f.SubResourceUpdate = func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
		var err error
		if next != nil {
			err = next(ctx, c, sub, obj, opts...)
		} else {
			err = c.SubResource(sub).Update(ctx, obj, opts...)
		}
		n, ok := obj.(*v1alpha1.ProxmoxNetwork)
		if err != nil || !ok || !meta.IsStatusConditionTrue(n.Status.Conditions, v1alpha1.ConditionReady) {
			return err
		}
		ns := &corev1.Namespace{}
		if err := store.Get(ctx, client.ObjectKey{Name: n.Namespace}, ns); err != nil {
			t.Errorf("get namespace %s: %v", n.Namespace, err)
			return nil
		}
		tr := network.Triple(n.Status.Bridge, n.Status.VLAN, n.Spec.IPPool)
		if !slices.Contains(strings.Split(ns.Annotations[v1alpha1.AnnotationNamespaceNetworks], ","), tr) {
			t.Errorf("network %s/%s reports Ready while the annotation of its namespace does not list %s", n.Namespace, n.Name, tr)
		}
		return nil
	}
}

// checkReadyListed makes f check, after every namespace patch made through
// the client it wraps, that the new annotation lists every network of the
// namespace that reports Ready (read from store): a write computed before a
// network became Ready must never land after it and drop it.
func checkReadyListed(t testing.TB, store client.Reader, f *interceptor.Funcs) {
	next := f.Patch
	f.Patch = func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
		var err error
		if next != nil {
			err = next(ctx, c, obj, p, opts...)
		} else {
			err = c.Patch(ctx, obj, p, opts...)
		}
		if err != nil {
			return err
		}
		ns, ok := obj.(*corev1.Namespace)
		if !ok {
			return nil
		}
		listed := map[string]bool{}
		for _, tr := range strings.Split(ns.Annotations[v1alpha1.AnnotationNamespaceNetworks], ",") {
			listed[tr] = true
		}
		var nets v1alpha1.ProxmoxNetworkList
		if err := store.List(ctx, &nets, client.InNamespace(ns.Name)); err != nil {
			t.Errorf("list the networks of %s: %v", ns.Name, err)
			return nil
		}
		for _, n := range nets.Items {
			if !meta.IsStatusConditionTrue(n.Status.Conditions, v1alpha1.ConditionReady) {
				continue
			}
			pool := n.Spec.IPPool
			if tr := network.Triple(n.Status.Bridge, n.Status.VLAN, pool); !listed[tr] {
				t.Errorf("namespace %s: an annotation write drops %s of Ready network %s", ns.Name, tr, n.Name)
			}
		}
		return nil
	}
}
