package vlanalloc

import (
	"fmt"
	"sort"
)

// NetworkRef names the network an ID is allocated for: in the controller,
// the namespace and name of a ProxmoxNetwork.
type NetworkRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// String returns "<namespace>/<name>".
func (r NetworkRef) String() string { return r.Namespace + "/" + r.Name }

// AdmitFunc reports whether a network in a namespace with these labels may
// get a new VLAN. It must be safe for concurrent use and must not modify the
// map.
type AdmitFunc func(namespaceLabels map[string]string) bool

// StaticAssignment pins VID to one network.
type StaticAssignment struct {
	Network NetworkRef
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
	// AdmitNamespace decides which namespaces' networks may get a new
	// VLAN; nil admits every namespace. Package kubestore builds it from a
	// zone's namespaceSelector.
	AdmitNamespace AdmitFunc
	// MaxPerNamespace caps the networks of one namespace that may hold an
	// ID of the zone when a new ID is handed out; 0 means no cap. Static
	// assignments and existing Vlans are never refused by it.
	MaxPerNamespace int
}

// Zone is a parsed, validated ZoneSpec. It is immutable and safe to share;
// build a new one when the ProxmoxNetworkZone changes.
type Zone struct {
	name        string
	provider    string
	allocatable Set
	reserved    Set
	static      map[NetworkRef]int
	staticByVID map[int]NetworkRef
	admit       AdmitFunc
	maxPerNS    int
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
		static:      make(map[NetworkRef]int, len(spec.Static)),
		staticByVID: make(map[int]NetworkRef, len(spec.Static)),
		admit:       spec.AdmitNamespace,
		maxPerNS:    spec.MaxPerNamespace,
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

// Name is the zone's name.
func (z *Zone) Name() string { return z.name }

// ProviderNetwork is the zone's Kube-OVN provider network.
func (z *Zone) ProviderNetwork() string { return z.provider }

// Allocatable returns a copy of the IDs the zone may hand out: the ranges
// minus the reserved IDs.
func (z *Zone) Allocatable() Set { return z.allocatable }

// Static returns the ID pinned to network, if any.
func (z *Zone) Static(network NetworkRef) (int, bool) {
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
	return z.admit == nil || z.admit(namespaceLabels)
}
