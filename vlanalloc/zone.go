package vlanalloc

import (
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
)

// StaticAssignment pins VID to one network.
type StaticAssignment struct {
	Network v1alpha1.NetworkReference
	VID     int
}

// ZoneSpec is what a zone is built from: the allocation-relevant part of a
// ProxmoxNetworkZone, as plain values.
type ZoneSpec struct {
	// Name of the zone; holders labelled with it count as its allocations.
	Name string
	// ProviderNetwork is the Kube-OVN ProviderNetwork; every Vlan on it is
	// used, whoever created it.
	ProviderNetwork string
	// Ranges are vlanRanges entries.
	Ranges []string
	// Reserved IDs are never handed out.
	Reserved []int
	// Static assignments may lie outside Ranges but not on a reserved ID,
	// and no two may share an ID.
	Static []StaticAssignment
	// NamespaceSelector selects the namespaces whose networks may get a
	// new VLAN; nil selects every namespace.
	NamespaceSelector labels.Selector
}

// Zone is a parsed, validated ZoneSpec. It is immutable and safe to share;
// build a new one when the ProxmoxNetworkZone changes.
type Zone struct {
	name        string
	provider    string
	allocatable Set
	reserved    Set
	static      map[v1alpha1.NetworkReference]int
	staticByVID map[int]v1alpha1.NetworkReference
	selector    labels.Selector
}

// NewZone parses and validates spec once; allocations never parse again.
func NewZone(spec ZoneSpec) (*Zone, error) {
	if spec.ProviderNetwork == "" {
		return nil, fmt.Errorf("cannot build VLAN zone %q: %w: no provider network", spec.Name, ErrInvalidZone)
	}
	allocatable, err := Allocatable(spec.Ranges, spec.Reserved)
	if err != nil {
		return nil, fmt.Errorf("cannot build VLAN zone %q: %w", spec.Name, err)
	}
	z := &Zone{
		name:        spec.Name,
		provider:    spec.ProviderNetwork,
		allocatable: allocatable,
		static:      make(map[v1alpha1.NetworkReference]int, len(spec.Static)),
		staticByVID: make(map[int]v1alpha1.NetworkReference, len(spec.Static)),
		selector:    spec.NamespaceSelector,
	}
	for _, vid := range spec.Reserved {
		z.reserved.Add(vid)
	}
	for _, s := range spec.Static {
		if err := z.addStatic(s); err != nil {
			return nil, fmt.Errorf("cannot build VLAN zone %q: %w", spec.Name, err)
		}
	}
	return z, nil
}

func (z *Zone) addStatic(s StaticAssignment) error {
	switch other, taken := z.staticByVID[s.VID]; {
	case s.VID < MinVID || s.VID > MaxVID:
		return fmt.Errorf("%w: static assignment of %s: VLAN %d is outside %d-%d", ErrInvalidZone, s.Network, s.VID, MinVID, MaxVID)
	case z.reserved.Has(s.VID):
		return fmt.Errorf("%w: static assignment of %s: VLAN %d is reserved", ErrInvalidZone, s.Network, s.VID)
	case taken:
		return fmt.Errorf("%w: static assignment of %s: VLAN %d is already assigned to %s", ErrInvalidZone, s.Network, s.VID, other)
	}
	if _, dup := z.static[s.Network]; dup {
		return fmt.Errorf("%w: network %s has two static assignments", ErrInvalidZone, s.Network)
	}
	z.static[s.Network] = s.VID
	z.staticByVID[s.VID] = s.Network
	return nil
}

// ZoneFromAPI builds the Zone of a ProxmoxNetworkZone.
func ZoneFromAPI(obj *v1alpha1.ProxmoxNetworkZone) (*Zone, error) {
	spec := ZoneSpec{
		Name:            obj.Name,
		ProviderNetwork: obj.Spec.ProviderNetwork,
		Ranges:          obj.Spec.VLANRanges,
	}
	for _, vid := range obj.Spec.ReservedVLANs {
		spec.Reserved = append(spec.Reserved, int(vid))
	}
	for _, s := range obj.Spec.StaticAssignments {
		spec.Static = append(spec.Static, StaticAssignment{
			Network: v1alpha1.NetworkReference{Namespace: s.Namespace, Name: s.Name},
			VID:     int(s.VLAN),
		})
	}
	if obj.Spec.NamespaceSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(obj.Spec.NamespaceSelector)
		if err != nil {
			return nil, fmt.Errorf("cannot build VLAN zone %q: %w: namespaceSelector: %w", obj.Name, ErrInvalidZone, err)
		}
		spec.NamespaceSelector = sel
	}
	return NewZone(spec)
}

// Name is the zone's name.
func (z *Zone) Name() string { return z.name }

// ProviderNetwork is the zone's Kube-OVN provider network.
func (z *Zone) ProviderNetwork() string { return z.provider }

// Allocatable returns a copy of the IDs the zone may hand out: the ranges
// minus the reserved IDs.
func (z *Zone) Allocatable() Set { return z.allocatable }

// Static returns the ID pinned to network, if any.
func (z *Zone) Static(network v1alpha1.NetworkReference) (int, bool) {
	if len(z.static) == 0 {
		return 0, false
	}
	vid, ok := z.static[network]
	return vid, ok
}

// StaticAssignments returns the static assignments ordered by ID.
func (z *Zone) StaticAssignments() []StaticAssignment {
	out := make([]StaticAssignment, 0, len(z.static))
	for n, vid := range z.static {
		out = append(out, StaticAssignment{Network: n, VID: vid})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].VID < out[j].VID })
	return out
}

// Admits reports whether a network in a namespace with these labels may get
// a new VLAN from the zone.
func (z *Zone) Admits(namespaceLabels map[string]string) bool {
	return z.selector == nil || z.selector.Matches(labels.Set(namespaceLabels))
}
