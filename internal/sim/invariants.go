package sim

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	capiipam "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/network"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc/kubestore"
)

// Invariant is one property of the world and whether it holds.
type Invariant struct {
	Name   string `json:"name"`
	Holds  bool   `json:"holds"`
	Detail string `json:"detail,omitempty"`
}

// world is everything the invariants look at, read in one go.
type world struct {
	vlans    []kubeovnv1.Vlan
	claims   []v1alpha1.ProxmoxVLANClaim
	networks []v1alpha1.ProxmoxNetwork
	zones    []v1alpha1.ProxmoxNetworkZone
	addrs    []capiipam.IPAddress
	ns       []corev1.Namespace
}

func readWorld(ctx context.Context, c client.Reader) (world, error) {
	var w world
	var vl kubeovnv1.VlanList
	var cl v1alpha1.ProxmoxVLANClaimList
	var nl v1alpha1.ProxmoxNetworkList
	var zl v1alpha1.ProxmoxNetworkZoneList
	var al capiipam.IPAddressList
	var nsl corev1.NamespaceList
	for _, l := range []client.ObjectList{&vl, &cl, &nl, &zl, &al, &nsl} {
		if err := c.List(ctx, l); err != nil {
			return w, fmt.Errorf("cannot read the world: %w", err)
		}
	}
	w.vlans, w.claims, w.networks, w.zones, w.addrs, w.ns = vl.Items, cl.Items, nl.Items, zl.Items, al.Items, nsl.Items
	return w, nil
}

// CheckInvariants reads the world through c and judges the properties the
// network lifecycle promises at rest: no VLAN on two Vlans of one provider
// network, every network's status VLAN carried by its own Vlan under its own
// claim, zone counts equal to a recount, namespace annotations equal to the
// networks that hold a VLAN, and no Vlan or claim of a network that is gone.
func CheckInvariants(ctx context.Context, c client.Reader) ([]Invariant, error) {
	w, err := readWorld(ctx, c)
	if err != nil {
		return nil, err
	}
	return []Invariant{
		w.uniqueIDs(), w.networksMatchVlans(), w.zoneCounts(), w.annotations(), w.noLeaks(),
	}, nil
}

// VerifyInvariants is CheckInvariants as one error: nil when every
// invariant holds, else one line per invariant that does not, with its
// detail.
func VerifyInvariants(ctx context.Context, c client.Reader) error {
	invs, err := CheckInvariants(ctx, c)
	if err != nil {
		return err
	}
	return joinFailed(invs)
}

func joinFailed(invs []Invariant) error {
	var failed []error
	for _, inv := range invs {
		if !inv.Holds {
			failed = append(failed, fmt.Errorf("invariant %q: %s", inv.Name, inv.Detail))
		}
	}
	return errors.Join(failed...)
}

func verdict(name string, problems []string) Invariant {
	if len(problems) == 0 {
		return Invariant{Name: name, Holds: true}
	}
	return Invariant{Name: name, Detail: strings.Join(problems, "; ")}
}

func (w world) uniqueIDs() Invariant {
	seen := map[string]string{}
	var bad []string
	for _, v := range w.vlans {
		k := v.Spec.Provider + "/" + strconv.Itoa(v.Spec.ID)
		if other, dup := seen[k]; dup && v.Spec.ID != 0 {
			bad = append(bad, fmt.Sprintf("Vlans %s and %s share %s", other, v.Name, k))
		}
		seen[k] = v.Name
	}
	return verdict("no VLAN ID on two Vlans of one provider network", bad)
}

func (w world) networksMatchVlans() Invariant {
	vlans := map[string]kubeovnv1.Vlan{}
	for _, v := range w.vlans {
		vlans[v.Name] = v
	}
	claims := map[string]v1alpha1.NetworkReference{}
	for _, c := range w.claims {
		claims[c.Name] = c.Spec.Network
	}
	var bad []string
	for _, n := range w.networks {
		if n.Status.VLAN == 0 {
			continue
		}
		ref := v1alpha1.NetworkReference{Namespace: n.Namespace, Name: n.Name}
		v, ok := vlans[n.Status.VLANName]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("%s holds VLAN %d but its Vlan %q is gone", ref, n.Status.VLAN, n.Status.VLANName))
		case v.Spec.ID != int(n.Status.VLAN):
			bad = append(bad, fmt.Sprintf("%s holds VLAN %d but its Vlan carries %d", ref, n.Status.VLAN, v.Spec.ID))
		case claims[v1alpha1.VLANClaimName(v.Spec.Provider, v.Spec.ID)] != ref:
			bad = append(bad, fmt.Sprintf("%s holds VLAN %d without the claim on it", ref, n.Status.VLAN))
		}
	}
	return verdict("every network's VLAN is carried by its own Vlan under its own claim", bad)
}

func (w world) zoneCounts() Invariant {
	var bad []string
	for _, z := range w.zones {
		zone, err := kubestore.ZoneFromAPI(&z)
		if err != nil {
			continue
		}
		used, ours := w.vlansOf(z)
		for _, sa := range zone.StaticAssignments() {
			used[sa.VID] = true
		}
		alloc := zone.Allocatable()
		free := 0
		for _, vid := range alloc.IDs() {
			if !used[vid] {
				free++
			}
		}
		nets := 0
		for _, n := range w.networks {
			if n.Spec.Zone == z.Name {
				nets++
			}
		}
		st := z.Status
		if int(st.TotalVLANs) != alloc.Len() || int(st.AllocatedVLANs) != len(ours) || int(st.FreeVLANs) != free || int(st.Networks) != nets {
			bad = append(bad, fmt.Sprintf("zone %s reports %d/%d/%d/%d (total/allocated/free/networks), a recount gives %d/%d/%d/%d",
				z.Name, st.TotalVLANs, st.AllocatedVLANs, st.FreeVLANs, st.Networks, alloc.Len(), len(ours), free, nets))
		}
	}
	return verdict("zone counts equal a recount", bad)
}

// vlansOf recounts zone z's VLANs from the Vlans and claims: used holds
// every VLAN taken on its provider network, ours those held by the zone's
// networks.
func (w world) vlansOf(z v1alpha1.ProxmoxNetworkZone) (used, ours map[int]bool) {
	used, ours = map[int]bool{}, map[int]bool{}
	for _, v := range w.vlans {
		if v.Spec.Provider != z.Spec.ProviderNetwork || v.Spec.ID == 0 {
			continue
		}
		used[v.Spec.ID] = true
		if v.Labels[v1alpha1.LabelZone] == z.Name && v.Labels[v1alpha1.LabelNetworkName] != "" {
			ours[v.Spec.ID] = true
		}
	}
	for _, c := range w.claims {
		if c.Spec.ProviderNetwork != z.Spec.ProviderNetwork {
			continue
		}
		used[int(c.Spec.VLAN)] = true
		if c.Spec.Zone == z.Name {
			ours[int(c.Spec.VLAN)] = true
		}
	}
	return used, ours
}

func (w world) annotations() Invariant {
	want := map[string][]string{}
	for _, n := range w.networks {
		if n.Status.VLAN != 0 && n.Status.Bridge != "" {
			want[n.Namespace] = append(want[n.Namespace], network.Triple(n.Status.Bridge, n.Status.VLAN, n.Spec.IPPool))
			if n.Status.VNet != "" {
				want[n.Namespace] = append(want[n.Namespace], network.VNetEntry(n.Status.VNet, n.Spec.IPPool))
			}
		}
	}
	var bad []string
	for _, ns := range w.ns {
		sort.Strings(want[ns.Name])
		if got, exp := ns.Annotations[v1alpha1.AnnotationNamespaceNetworks], strings.Join(want[ns.Name], ","); got != exp {
			bad = append(bad, fmt.Sprintf("namespace %s lists %q, its networks hold %q", ns.Name, got, exp))
		}
	}
	return verdict("namespace annotations list exactly the networks holding a VLAN", bad)
}

func (w world) noLeaks() Invariant {
	exists := map[v1alpha1.NetworkReference]bool{}
	for _, n := range w.networks {
		exists[v1alpha1.NetworkReference{Namespace: n.Namespace, Name: n.Name}] = true
	}
	var bad []string
	for _, v := range w.vlans {
		ref := v1alpha1.NetworkReference{Namespace: v.Labels[v1alpha1.LabelNetworkNamespace], Name: v.Labels[v1alpha1.LabelNetworkName]}
		if ref.Name != "" && !exists[ref] {
			bad = append(bad, fmt.Sprintf("Vlan %s of gone network %s", v.Name, ref))
		}
	}
	for _, c := range w.claims {
		if !exists[c.Spec.Network] {
			bad = append(bad, fmt.Sprintf("claim %s of gone network %s", c.Name, c.Spec.Network))
		}
	}
	return verdict("no Vlan or claim outlives its network", bad)
}
