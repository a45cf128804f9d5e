package network_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"pgregory.net/rapid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
)

// lifecycleModel is what the test did, and what it saw the controller hold.
type lifecycleModel struct {
	h      *sim.Harness
	c      client.Client
	faults *kube.Faults
	// live networks the test created and has not uninstalled.
	live map[netID]bool
	// consumers per network: addresses and machines the test created.
	addrs    map[netID][]string
	machines map[netID][]*unstructured.Unstructured
	// vlan is the first VLAN seen on each existing network.
	vlan map[netID]int32
	// heldVlan / heldSubnet: the network's Vlan / Subnet was seen carrying
	// the finalizer, so it must not go while the network has consumers.
	heldVlan, heldSubnet map[netID]bool
	foreign              int
	serial               int
	// freed: IDs freed while their namespace still listed them.
	freed freedListed
}

var rangeChoices = [][]string{{"100-107"}, {"100-103"}, {"102-110"}, {"100-105", "120"}}

// TestLifecycleStateMachine drives the real reconcilers on the fake client
// through random creates and deletes, addresses, machines of both capmox
// versions, foreign Vlans, zone range changes, restarts and injected API
// faults, and checks after every step: no VLAN shared on the provider
// network, no VLAN change while a network exists (restarts included), no
// Vlan or Subnet of a network released while it has a consumer; and after
// every fault-free settle, zone counts equal a recount, every deleted
// network without consumers is gone, and every live network with a VLAN
// holds exactly the claim of that VLAN. At every delete that frees an ID,
// the namespace annotation must no longer list it.
func TestLifecycleStateMachine(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(rt *rapid.T) {
		ctx := context.Background()
		faults := kube.NewFaults(rapid.Uint64().Draw(rt, "seed"))
		m := &lifecycleModel{faults: faults, live: map[netID]bool{},
			addrs: map[netID][]string{}, machines: map[netID][]*unstructured.Unstructured{},
			vlan: map[netID]int32{}, heldVlan: map[netID]bool{}, heldSubnet: map[netID]bool{},
		}
		hooks, _ := unlistedWhenFreed(faults.Funcs(), m.freed.report)
		h := sim.NewHarness(sim.Options{ControllerHooks: &hooks})
		m.h, m.c = h, h.Client()
		baseWorld(rt, m.c, map[string][]string{"zone-a": {"100-107"}, "zone-b": {"104-111"}})
		if err := h.Start(ctx); err != nil {
			rt.Fatalf("start: %v", err)
		}
		rt.Repeat(map[string]func(*rapid.T){
			"create": func(t *rapid.T) {
				var free []netID
				for n := netID(0); n <= 11; n++ {
					if !m.exists(t, n) {
						free = append(free, n)
					}
				}
				if len(free) == 0 {
					return // every network exists
				}
				n := rapid.SampledFrom(free).Draw(t, "net")
				createNetwork(t, m.c, n, rapid.SampledFrom([]string{"zone-a", "zone-b"}).Draw(t, "zone"))
				m.live[n] = true
			},
			"uninstall": func(t *rapid.T) {
				n, ok := m.pickLive(t)
				if !ok {
					return // no live network
				}
				uninstall(t, m.c, n)
				delete(m.live, n)
			},
			"addAddress": func(t *rapid.T) {
				n, ok := m.pickLive(t)
				if !ok {
					return // no live network
				}
				m.serial++
				name := fmt.Sprintf("%s-ip-%d", n.name(), m.serial)
				mustCreate(t, m.c, sim.IPAddress(n.ns(), name, n.name(), "10.0.0.70", 24))
				m.addrs[n] = append(m.addrs[n], name)
			},
			"removeAddress": func(t *rapid.T) {
				n, ok := m.pickConsumed(t, true)
				if !ok {
					return // no network with an address
				}
				i := rapid.IntRange(0, len(m.addrs[n])-1).Draw(t, "addr")
				a := sim.IPAddress(n.ns(), m.addrs[n][i], n.name(), "10.0.0.70", 24)
				if err := m.c.Get(context.Background(), client.ObjectKeyFromObject(a), a); err != nil {
					t.Fatalf("get address: %v", err)
				}
				if err := m.c.Delete(context.Background(), a); err != nil {
					t.Fatalf("delete address: %v", err)
				}
				m.addrs[n] = append(m.addrs[n][:i], m.addrs[n][i+1:]...)
			},
			"addMachine": func(t *rapid.T) {
				n, ok := m.pickLive(t)
				if !ok {
					return // no live network
				}
				m.serial++
				mc := machine(n, fmt.Sprintf("vm-%d", m.serial), rapid.SampledFrom([]string{"v1alpha1", "v1alpha2"}).Draw(t, "version"), 100)
				mustCreate(t, m.c, mc)
				m.machines[n] = append(m.machines[n], mc)
			},
			"removeMachine": func(t *rapid.T) {
				n, ok := m.pickConsumed(t, false)
				if !ok {
					return // no network with a machine
				}
				i := rapid.IntRange(0, len(m.machines[n])-1).Draw(t, "machine")
				if err := m.c.Delete(context.Background(), m.machines[n][i].DeepCopy()); err != nil {
					t.Fatalf("delete machine: %v", err)
				}
				m.machines[n] = append(m.machines[n][:i], m.machines[n][i+1:]...)
			},
			"foreignVlan": func(t *rapid.T) {
				s := read(t, m.c)
				taken := map[int]bool{}
				for _, v := range s.vlans {
					if v.Spec.Provider == provider {
						taken[v.Spec.ID] = true
					}
				}
				for _, c := range s.claims {
					taken[int(c.Spec.VLAN)] = true
				}
				var free []int
				for vid := 98; vid <= 112; vid++ {
					if !taken[vid] {
						free = append(free, vid)
					}
				}
				if len(free) == 0 {
					return // every ID in use or claimed
				}
				vid := rapid.SampledFrom(free).Draw(t, "vid")
				m.foreign++
				mustCreate(t, m.c, &kubeovnv1.Vlan{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("foreign-%d", m.foreign)},
					Spec: kubeovnv1.VlanSpec{ID: vid, Provider: provider}})
			},
			"changeRanges": func(t *rapid.T) {
				z := &v1alpha1.ProxmoxNetworkZone{}
				if err := m.c.Get(context.Background(), client.ObjectKey{Name: "zone-a"}, z); err != nil {
					t.Fatalf("get zone: %v", err)
				}
				z.Spec.VLANRanges = rapid.SampledFrom(rangeChoices).Draw(t, "ranges")
				if err := m.c.Update(context.Background(), z); err != nil {
					t.Fatalf("update zone: %v", err)
				}
			},
			"restart": func(t *rapid.T) {
				if err := h.Restart(context.Background()); err != nil {
					t.Fatalf("restart: %v", err)
				}
			},
			"faultyConverge": func(t *rapid.T) {
				kind := rapid.SampledFrom([]kube.ErrorKind{kube.Conflict, kube.Timeout, kube.Unavailable}).Draw(t, "fault")
				verbs := rapid.SampledFrom([][]kube.Verb{{kube.VerbCreate}, {kube.VerbPatch}, {kube.VerbDelete}, {kube.VerbStatusUpdate}, nil}).Draw(t, "verbs")
				if err := faults.Set(kube.Fault{Verbs: verbs, Err: kind, Rate: 0.3, After: rapid.Bool().Draw(t, "after")}); err != nil {
					t.Fatalf("faults: %v", err)
				}
				if _, err := h.Advance(context.Background(), time.Second); err != nil {
					t.Fatalf("converge under faults: %v", err)
				}
				faults.Clear()
			},
			"settle": func(t *rapid.T) {
				faults.Clear()
				if _, err := h.Advance(context.Background(), 70*time.Second); err != nil {
					t.Fatalf("settle: %v", err)
				}
				m.checkSettled(t)
			},
			"": func(t *rapid.T) { m.checkSafety(t) },
		})
	})
}

func mustCreate(t tb, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatalf("create %s: %v", o.GetName(), err)
		}
	}
}

func (m *lifecycleModel) exists(t *rapid.T, n netID) bool {
	err := m.c.Get(context.Background(), n.key(), &v1alpha1.ProxmoxNetwork{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("get network: %v", err)
	}
	if err == nil {
		return true
	}
	// the subnet is cluster-scoped and may outlive a network being released
	return m.c.Get(context.Background(), client.ObjectKey{Name: n.name()}, &kubeovnv1.Subnet{}) == nil
}

// pickLive draws a live network; ok is false when there is none.
func (m *lifecycleModel) pickLive(t *rapid.T) (netID, bool) {
	var live []netID
	for n := range m.live {
		live = append(live, n)
	}
	if len(live) == 0 {
		return 0, false
	}
	sortIDs(live)
	return rapid.SampledFrom(live).Draw(t, "live"), true
}

// pickConsumed draws a network with an address (addrs) or a machine; ok is
// false when there is none.
func (m *lifecycleModel) pickConsumed(t *rapid.T, addrs bool) (netID, bool) {
	var ids []netID
	for n := range m.addrs {
		if addrs && len(m.addrs[n]) > 0 {
			ids = append(ids, n)
		}
	}
	for n := range m.machines {
		if !addrs && len(m.machines[n]) > 0 {
			ids = append(ids, n)
		}
	}
	if len(ids) == 0 {
		return 0, false
	}
	sortIDs(ids)
	return rapid.SampledFrom(ids).Draw(t, "consumed"), true
}

func sortIDs(ids []netID) {
	for i := range ids {
		for j := i + 1; j < len(ids); j++ {
			if ids[j] < ids[i] {
				ids[i], ids[j] = ids[j], ids[i]
			}
		}
	}
}

func (m *lifecycleModel) consumed(n netID) bool { return len(m.addrs[n]) > 0 || len(m.machines[n]) > 0 }

// checkSafety holds after every step, faults or not.
func (m *lifecycleModel) checkSafety(t *rapid.T) {
	m.freed.check(t)
	s := read(t, m.c)
	checkUniqueIDs(t, s)
	vlans := map[string]kubeovnv1.Vlan{}
	for _, v := range s.vlans {
		vlans[v.Name] = v
	}
	for i := range 12 {
		n := netID(i)
		net, exists := s.networks[n.key()]
		v, hasVlan := vlans[n.name()]
		sub, hasSubnet := s.subnets[n.name()]
		if m.consumed(n) {
			if m.heldVlan[n] && !hasVlan {
				t.Fatalf("the Vlan of %s went while it has consumers", n.key())
			}
			if m.heldSubnet[n] && !hasSubnet {
				t.Fatalf("the Subnet of %s went while it has consumers", n.key())
			}
		}
		if !exists {
			delete(m.vlan, n)
			if !hasVlan {
				delete(m.heldVlan, n)
			}
			if !hasSubnet {
				delete(m.heldSubnet, n)
			}
			continue
		}
		if net.Status.VLAN != 0 {
			if first, seen := m.vlan[n]; seen && first != net.Status.VLAN {
				t.Fatalf("the VLAN of %s changed from %d to %d", n.key(), first, net.Status.VLAN)
			}
			m.vlan[n] = net.Status.VLAN
		}
		if hasVlan && v.Labels[v1alpha1.LabelNetworkName] == n.name() {
			if first, seen := m.vlan[n]; seen && int(first) != v.Spec.ID {
				t.Fatalf("the Vlan of %s carries %d, the network holds %d", n.key(), v.Spec.ID, first)
			}
			m.heldVlan[n] = m.heldVlan[n] || hasFinalizer(&v)
		}
		if hasSubnet {
			m.heldSubnet[n] = m.heldSubnet[n] || hasFinalizer(&sub)
		}
	}
}

// checkSettled holds once faults are off and the world had time to settle.
func (m *lifecycleModel) checkSettled(t *rapid.T) {
	m.checkSafety(t)
	s := read(t, m.c)
	checkZoneCounts(t, s)
	for key, n := range s.networks {
		id := netIDOf(t, key)
		if !n.DeletionTimestamp.IsZero() && !m.consumed(id) {
			t.Fatalf("deleted network %s without consumers is still there: %+v", key, n.Status.Conditions)
		}
		if n.DeletionTimestamp.IsZero() && n.Status.VLAN == 0 {
			c := findCond(n.Status.Conditions, v1alpha1.ConditionVLANAllocated)
			if c == nil || (c.Reason != v1alpha1.ReasonZoneExhausted) {
				t.Fatalf("live network %s has no VLAN and is not ZoneExhausted: %+v", key, n.Status.Conditions)
			}
		}
	}
	for _, v := range s.vlans {
		ref := client.ObjectKey{Namespace: v.Labels[v1alpha1.LabelNetworkNamespace], Name: v.Labels[v1alpha1.LabelNetworkName]}
		if ref.Name == "" {
			continue
		}
		if _, ok := s.networks[ref]; !ok {
			t.Fatalf("Vlan %q of gone network %s leaked", v.Name, ref)
		}
	}
	claimed := map[client.ObjectKey][]int32{}
	for _, c := range s.claims {
		ref := client.ObjectKey{Namespace: c.Spec.Network.Namespace, Name: c.Spec.Network.Name}
		if _, ok := s.networks[ref]; !ok {
			t.Fatalf("claim %q of gone network %s leaked", c.Name, ref)
		}
		claimed[ref] = append(claimed[ref], c.Spec.VLAN)
	}
	for key, n := range s.networks {
		if n.DeletionTimestamp.IsZero() && n.Status.VLAN != 0 && (len(claimed[key]) != 1 || claimed[key][0] != n.Status.VLAN) {
			t.Fatalf("live network %s carries VLAN %d and holds claims %v, want exactly that one", key, n.Status.VLAN, claimed[key])
		}
	}
}

func netIDOf(t *rapid.T, key client.ObjectKey) netID {
	var i int
	if _, err := fmt.Sscanf(key.Name, "s-%d", &i); err != nil {
		t.Fatalf("unexpected network %s", key)
	}
	return netID(i)
}

func findCond(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}
