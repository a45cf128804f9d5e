package network_test

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	ipamv1alpha2 "github.com/pxsubstrate/pxsubstrate/api/ipam/v1alpha2"
	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/network"
	"github.com/samber/lo"
)

// The platform's own Subnets and their Vlans: outside the zone's ranges,
// on a reserved ID, and inside the ranges.
var platformVlans = map[string]int{"infra": 50, "infra-reserved": 104, "infra-inside": 103}

// hostileModel is what the test did: the legitimate networks it created
// and the hostile tenant's networks, each with the Subnet it names.
type hostileModel struct {
	h       *sim.Harness
	c       client.Client
	legit   map[netID]bool
	hostile map[string]string
	// own are the hostile tenant's networks on Subnets of its own VPC.
	own map[string]bool
	// freed: IDs freed while their namespace still listed them.
	freed freedListed
	// limit is zone-a's maxNetworksPerNamespace: 3 never binds (no
	// namespace has more networks), so the zone still runs out.
	limit int
}

const legitNets = 6

// TestHostileStateMachine runs the real reconcilers while a hostile tenant
// (tenant-evil) creates and deletes networks naming the Subnets of other
// tenants, existing or not yet, and the platform's Subnets whose Vlans sit
// outside the zone's ranges, on a reserved ID, or inside the ranges, next to
// networks on Subnets of its own VPC; legitimate tenants create and
// uninstall their networks and the controller restarts. After every step:
// no platform Vlan or Subnet carries the network finalizer, a label or an
// annotation; no other tenant's Subnet or Vlan is labelled for tenant-evil;
// a hostile network holds no VLAN and no claim; no namespace has more
// networks holding a VLAN than the zone's maxNetworksPerNamespace (drawn
// from 1-3); no namespace's annotation
// lists a VLAN that its own networks do not hold, and no delete frees an
// ID a namespace still lists. After every settle every
// legitimate network holds its VLAN or waits for a full zone or for its
// namespace to go under the cap, and every
// hostile network says why it holds none.
func TestHostileStateMachine(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(rt *rapid.T) {
		ctx := context.Background()
		m := &hostileModel{legit: map[netID]bool{}, hostile: map[string]string{}, own: map[string]bool{}}
		hooks, _ := unlistedWhenFreed(interceptor.Funcs{}, m.freed.report)
		h := sim.NewHarness(sim.Options{ControllerHooks: &hooks})
		m.h, m.c = h, h.Client()
		baseWorld(rt, m.c, map[string][]string{"zone-a": {"100-105"}})
		z := &v1alpha1.ProxmoxNetworkZone{}
		if err := m.c.Get(ctx, client.ObjectKey{Name: "zone-a"}, z); err != nil {
			rt.Fatalf("get zone: %v", err)
		}
		z.Spec.ReservedVLANs = []int32{104}
		m.limit = rapid.IntRange(1, 3).Draw(rt, "maxNetworksPerNamespace")
		z.Spec.MaxNetworksPerNamespace = lo.ToPtr(int32(m.limit))
		if err := m.c.Update(ctx, z); err != nil {
			rt.Fatalf("update zone: %v", err)
		}
		mustCreate(rt, m.c, sim.Namespace(evilNS, nil))
		for _, name := range sortedKeys(platformVlans) {
			mustCreate(rt, m.c, platformNetwork(name, platformVlans[name])...)
		}
		if err := h.Start(ctx); err != nil {
			rt.Fatalf("start: %v", err)
		}
		rt.Repeat(map[string]func(*rapid.T){
			"create":        m.create,
			"uninstall":     m.uninstall,
			"hostile":       m.createHostile,
			"hostileOwn":    m.createOwn,
			"hostileDelete": m.deleteHostile,
			"advance": func(t *rapid.T) {
				if _, err := h.Advance(ctx, time.Duration(rapid.IntRange(1, 40).Draw(t, "seconds"))*time.Second); err != nil {
					t.Fatalf("advance: %v", err)
				}
			},
			"restart": func(t *rapid.T) {
				if err := h.Restart(ctx); err != nil {
					t.Fatalf("restart: %v", err)
				}
			},
			"settle": func(t *rapid.T) {
				if _, err := h.Advance(ctx, 70*time.Second); err != nil {
					t.Fatalf("settle: %v", err)
				}
				m.checkSafety(t)
				m.checkSettled(t)
			},
			"": func(t *rapid.T) { m.checkSafety(t) },
		})
	})
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := range keys {
		for j := i + 1; j < len(keys); j++ {
			if keys[j] < keys[i] {
				keys[i], keys[j] = keys[j], keys[i]
			}
		}
	}
	return keys
}

func (m *hostileModel) found(t *rapid.T, key client.ObjectKey, o client.Object) bool {
	err := m.c.Get(context.Background(), key, o)
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("get %s: %v", key, err)
	}
	return err == nil
}

func (m *hostileModel) create(t *rapid.T) {
	n := netID(rapid.IntRange(0, legitNets-1).Draw(t, "legit"))
	if m.found(t, n.key(), &v1alpha1.ProxmoxNetwork{}) || m.found(t, client.ObjectKey{Name: n.name()}, &kubeovnv1.Subnet{}) {
		return // exists, or its Subnet is still being released
	}
	createNetwork(t, m.c, n, "zone-a")
	m.legit[n] = true
}

func (m *hostileModel) uninstall(t *rapid.T) {
	n := netID(rapid.IntRange(0, legitNets-1).Draw(t, "legit"))
	if !m.legit[n] {
		return // not created
	}
	uninstall(t, m.c, n)
	delete(m.legit, n)
}

// createHostile makes tenant-evil name another tenant's Subnet (which may
// not exist yet) or one of the platform's.
func (m *hostileModel) createHostile(t *rapid.T) {
	targets := sortedKeys(platformVlans)
	for i := range legitNets {
		targets = append(targets, netID(i).name())
	}
	target := rapid.SampledFrom(targets).Draw(t, "target")
	name := fmt.Sprintf("evil-%d", rapid.IntRange(0, 3).Draw(t, "evil"))
	if m.found(t, client.ObjectKey{Namespace: evilNS, Name: name}, &v1alpha1.ProxmoxNetwork{}) {
		return // that name is taken
	}
	mustCreate(t, m.c, hostileNetwork(evilNS, name, target))
	m.hostile[name] = target
}

// createOwn gives tenant-evil a network on a Subnet of its own VPC, which
// it may hold.
func (m *hostileModel) createOwn(t *rapid.T) {
	i := rapid.IntRange(0, 1).Draw(t, "own")
	name := fmt.Sprintf("evil-own-%d", i)
	if m.own[name] || m.found(t, client.ObjectKey{Name: name}, &kubeovnv1.Subnet{}) ||
		m.found(t, client.ObjectKey{Namespace: evilNS, Name: name}, &ipamv1alpha2.InClusterIPPool{}) ||
		m.found(t, client.ObjectKey{Namespace: evilNS, Name: name}, &v1alpha1.ProxmoxNetwork{}) {
		return // exists, or is still being released
	}
	objs, err := sim.Network(evilNS, name, "zone-a", "vpc-evil", fmt.Sprintf("10.99.%d.0/24", i))
	if err != nil {
		t.Fatalf("%v", err)
	}
	mustCreate(t, m.c, objs...)
	m.own[name] = true
}

func (m *hostileModel) deleteHostile(t *rapid.T) {
	names := append(sortedKeys(m.hostile), sortedKeys(m.own)...)
	if len(names) == 0 {
		return // no hostile network
	}
	name := rapid.SampledFrom(names).Draw(t, "name")
	n := &v1alpha1.ProxmoxNetwork{}
	if m.found(t, client.ObjectKey{Namespace: evilNS, Name: name}, n) {
		if err := m.c.Delete(context.Background(), n); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("delete %s: %v", name, err)
		}
	}
	if m.own[name] {
		for _, o := range []client.Object{
			&kubeovnv1.Subnet{ObjectMeta: metav1.ObjectMeta{Name: name}},
			&ipamv1alpha2.InClusterIPPool{ObjectMeta: metav1.ObjectMeta{Namespace: evilNS, Name: name}},
		} {
			if err := m.c.Delete(context.Background(), o); err != nil && !apierrors.IsNotFound(err) {
				t.Fatalf("delete %s: %v", name, err)
			}
		}
		delete(m.own, name)
	}
	delete(m.hostile, name)
}

// checkSafety holds after every step.
func (m *hostileModel) checkSafety(t *rapid.T) {
	m.freed.check(t)
	s := read(t, m.c)
	checkUniqueIDs(t, s)
	for name := range platformVlans {
		sub, ok := s.subnets[name]
		if !ok || hasFinalizer(&sub) || len(sub.Labels) != 0 || len(sub.Annotations) != 0 {
			t.Fatalf("the platform's Subnet %q was written (or is gone): %+v", name, sub.ObjectMeta)
		}
	}
	held := map[string]map[int]bool{} // namespace → VLANs its networks hold
	hold := func(ns string, vid int) {
		if held[ns] == nil {
			held[ns] = map[int]bool{}
		}
		held[ns][vid] = true
	}
	for _, v := range s.vlans {
		ns := v.Labels[v1alpha1.LabelNetworkNamespace]
		if _, platform := platformVlans[v.Name]; platform && (hasFinalizer(&v) || len(v.Labels) != 0 || len(v.Annotations) != 0) {
			t.Fatalf("the platform's Vlan %q was written: %+v", v.Name, v.ObjectMeta)
		}
		if ns == evilNS && !strings.HasPrefix(v.Name, "evil-own-") {
			t.Fatalf("Vlan %q (VLAN %d) is labelled for tenant-evil's network %s", v.Name, v.Spec.ID, v.Labels[v1alpha1.LabelNetworkName])
		}
		if ns != "" {
			hold(ns, v.Spec.ID)
		}
	}
	for _, c := range s.claims {
		if c.Spec.Network.Namespace == evilNS && !strings.HasPrefix(c.Spec.Network.Name, "evil-own-") {
			t.Fatalf("claim %q holds VLAN %d for hostile network %s", c.Name, c.Spec.VLAN, c.Spec.Network)
		}
		hold(c.Spec.Network.Namespace, int(c.Spec.VLAN))
	}
	for ns, names := range holdersOf(s) {
		if len(names) > m.limit {
			t.Fatalf("namespace %s has %d networks holding VLANs of zone-a (%v), over its cap %d", ns, len(names), sortedKeys(names), m.limit)
		}
	}
	for i := range legitNets {
		n := netID(i)
		if sub, ok := s.subnets[n.name()]; ok && !maps.Equal(sub.Labels, map[string]string{v1alpha1.LabelTenantName: n.ns()}) {
			t.Fatalf("tenant Subnet %q carries labels %v", sub.Name, sub.Labels)
		}
	}
	for key, n := range s.networks {
		if key.Namespace == evilNS && !m.own[key.Name] && !strings.HasPrefix(key.Name, "evil-own-") && (n.Status.VLAN != 0 || n.Status.Bridge != "") {
			t.Fatalf("hostile network %s naming %q holds VLAN %d", key, n.Spec.Subnet, n.Status.VLAN)
		}
	}
	m.checkAnnotations(t, held)
}

// checkAnnotations: every VLAN a namespace's annotation lists is one its own
// networks hold (through a Vlan labelled for them or a claim).
func (m *hostileModel) checkAnnotations(t *rapid.T, held map[string]map[int]bool) {
	var nss corev1.NamespaceList
	if err := m.c.List(context.Background(), &nss); err != nil {
		t.Fatalf("list namespaces: %v", err)
	}
	for _, ns := range nss.Items {
		a := ns.Annotations[v1alpha1.AnnotationNamespaceNetworks]
		if a == "" {
			continue
		}
		for _, triple := range strings.Split(a, ",") {
			parts := strings.Split(triple, "/")
			vid, err := strconv.Atoi(parts[1])
			if len(parts) != 3 || err != nil {
				t.Fatalf("namespace %s: malformed triple %q", ns.Name, triple)
			}
			if !held[ns.Name][vid] {
				t.Fatalf("namespace %s lists VLAN %d (%q), which none of its networks holds", ns.Name, vid, a)
			}
		}
	}
}

// checkSettled holds after a settle.
func (m *hostileModel) checkSettled(t *rapid.T) {
	s := read(t, m.c)
	for key, n := range s.networks {
		if !n.DeletionTimestamp.IsZero() {
			t.Fatalf("deleted network %s without consumers is still there: %+v", key, n.Status.Conditions)
		}
		cond := findCond(n.Status.Conditions, v1alpha1.ConditionVLANAllocated)
		if cond == nil {
			t.Fatalf("network %s reports no VLANAllocated", key)
		}
		switch target, hostile := m.hostile[key.Name]; {
		case key.Namespace == evilNS && hostile:
			want := network.ReasonSubnetNotOwned
			if _, ok := s.subnets[target]; !ok {
				want = network.ReasonSubnetNotFound
			}
			if cond.Status != metav1.ConditionFalse || cond.Reason != want {
				t.Fatalf("hostile network %s naming %q: VLANAllocated %s/%s, want False/%s", key, target, cond.Status, cond.Reason, want)
			}
		case n.Status.VLAN == 0 && cond.Reason == v1alpha1.ReasonNamespaceCapReached:
			if held := len(holdersOf(s)[key.Namespace]); held < m.limit {
				t.Fatalf("network %s waits on the cap %d while its namespace holds %d VLANs: %+v", key, m.limit, held, n.Status.Conditions)
			}
		case n.Status.VLAN == 0 && cond.Reason != v1alpha1.ReasonZoneExhausted:
			t.Fatalf("network %s has no VLAN and is not ZoneExhausted or NamespaceCapReached: %+v", key, n.Status.Conditions)
		}
	}
}

// holdersOf maps each namespace to its networks that hold a VLAN of
// zone-a: through a Vlan labelled for them or a claim.
func holdersOf(s snapshot) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	add := func(ns, name string) {
		if out[ns] == nil {
			out[ns] = map[string]bool{}
		}
		out[ns][name] = true
	}
	for _, v := range s.vlans {
		if ns := v.Labels[v1alpha1.LabelNetworkNamespace]; ns != "" {
			add(ns, v.Labels[v1alpha1.LabelNetworkName])
		}
	}
	for _, c := range s.claims {
		add(c.Spec.Network.Namespace, c.Spec.Network.Name)
	}
	return out
}
