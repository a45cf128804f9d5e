package vlanalloc

import "fmt"

// source says where an allocation's ID came from.
type source int

const (
	fromVlan        source = iota + 1 // the network's Vlan already exists
	fromReservation                   // the network already holds a reservation
	fromStatic                        // the zone pins an ID to the network
	fromFree                          // the lowest free ID was picked
)

// Allocate returns the ID of claim's network, recording a reservation for it
// when there was none. In order:
//
//  1. a Vlan named claim.Vlan on the zone's provider network is adopted with
//     its ID, even outside the ranges (a Vlan on another provider network
//     is a *ProviderMismatchError);
//  2. an ID the network already holds a reservation for is returned again;
//  3. a static assignment gives its ID;
//  4. otherwise the lowest free ID, when the zone's namespaceSelector admits
//     the namespace (ErrNamespaceNotAllowed), the namespace holds fewer IDs
//     of the zone than its cap (a *NamespaceCapError) and an ID is free
//     (ErrExhausted).
//
// An ID that someone else also holds is a *ConflictError. The same state
// and claim always give the same answer, so a retry after a crash picks the
// same ID.
func (x *Index) Allocate(claim Claim) (int, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	vid, _, err := x.allocate(claim)
	return vid, err
}

func (x *Index) allocate(claim Claim) (int, source, error) {
	if e, ok := x.vlans[claim.Vlan]; ok {
		if e.provider != x.zone.provider {
			return 0, 0, fmt.Errorf("cannot allocate a VLAN for %s: %w", claim.Network,
				&ProviderMismatchError{Vlan: claim.Vlan, Provider: e.provider, Want: x.zone.provider})
		}
		return x.adopt(claim, e)
	}
	if held := x.reservedBy(claim.Network); len(held) > 0 {
		vid := lowest(held)
		own := uint32(1)
		if n, pinned := x.zone.staticByVID[vid]; pinned && n == claim.Network {
			own++
		}
		if x.refs[vid] > own {
			cause := HeldElsewhere
			if own > 1 {
				cause = StaticInUse
			}
			return 0, 0, x.conflict(vid, claim, cause)
		}
		return vid, fromReservation, nil
	}
	if vid, ok := x.zone.Static(claim.Network); ok {
		if x.refs[vid] > 1 { // the static pin itself is one holder
			return 0, 0, x.conflict(vid, claim, StaticInUse)
		}
		x.reserve(vid, claim)
		return vid, fromStatic, nil
	}
	if !x.zone.Admits(claim.NamespaceLabels) {
		return 0, 0, fmt.Errorf("cannot allocate a VLAN for %s: namespace %q is not selected by zone %q: %w",
			claim.Network, claim.Network.Namespace, x.zone.name, ErrNamespaceNotAllowed)
	}
	if held := x.nsNetworks[claim.Network.Namespace]; x.zone.maxPerNS > 0 && held >= x.zone.maxPerNS {
		return 0, 0, &NamespaceCapError{Network: claim.Network, Zone: x.zone.name, Cap: x.zone.maxPerNS, Held: held}
	}
	vid, ok := x.free.Min()
	if !ok {
		return 0, 0, fmt.Errorf("cannot allocate a VLAN for %s in zone %q: %w", claim.Network, x.zone.name, ErrExhausted)
	}
	x.reserve(vid, claim)
	return vid, fromFree, nil
}

// adopt keeps the ID of the network's existing Vlan when nobody else holds it.
func (x *Index) adopt(claim Claim, e vlanEntry) (int, source, error) {
	if n := e.networkRef(); n.Name != "" && n != claim.Network {
		return 0, 0, fmt.Errorf("cannot allocate a VLAN for %s: %w", claim.Network,
			&ConflictError{VID: e.vid, Provider: x.zone.provider, Network: claim.Network, Holder: "network " + n.String(), Cause: NameTaken})
	}
	vid := e.vid
	if vid < MinVID || vid > MaxVID {
		return 0, 0, fmt.Errorf("cannot allocate a VLAN for %s: Vlan %q carries ID %d: %w", claim.Network, claim.Vlan, vid, ErrUnusableVlan)
	}
	own := uint32(1) // the Vlan itself
	r := x.resAt(vid)
	reserved := r != nil
	if reserved && r.Network == claim.Network {
		own++
	}
	if n, pinned := x.zone.staticByVID[vid]; pinned && n == claim.Network {
		own++
	}
	if x.refs[vid] > own {
		return 0, 0, x.conflict(vid, claim, HeldElsewhere)
	}
	if !reserved {
		x.reserve(vid, claim)
	}
	return vid, fromVlan, nil
}

func (x *Index) conflict(vid int, claim Claim, cause ConflictCause) error {
	return fmt.Errorf("cannot allocate a VLAN for %s: %w", claim.Network,
		&ConflictError{VID: vid, Provider: x.zone.provider, Network: claim.Network, Holder: x.holderOf(vid, claim), Cause: cause})
}

func (x *Index) reserve(vid int, claim Claim) {
	x.observeReservation(Reservation{VID: vid, Zone: x.zone.name, Network: claim.Network, Vlan: claim.Vlan})
}

func (x *Index) reservedBy(n NetworkRef) []int {
	if st, ok := x.nets[n]; ok {
		return st.reserved
	}
	return nil
}

func lowest(vids []int) int {
	m := vids[0]
	for _, v := range vids[1:] {
		m = min(m, v)
	}
	return m
}

// Lookup returns the ID claim's network holds (through its Vlan or a
// reservation) without allocating anything.
func (x *Index) Lookup(claim Claim) (int, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if e, ok := x.vlans[claim.Vlan]; ok && e.provider == x.zone.provider {
		return e.vid, true
	}
	if held := x.reservedBy(claim.Network); len(held) > 0 {
		return lowest(held), true
	}
	return 0, false
}

// Release drops every reservation of network from the index and returns
// them. It does not touch Vlans: an existing Vlan keeps its ID used until it
// is observed gone.
func (x *Index) Release(network NetworkRef) []Reservation {
	x.mu.Lock()
	defer x.mu.Unlock()
	held := append([]int(nil), x.reservedBy(network)...)
	out := make([]Reservation, 0, len(held))
	for _, vid := range held {
		out = append(out, *x.resAt(vid))
		x.forgetReservation(vid)
	}
	return out
}
