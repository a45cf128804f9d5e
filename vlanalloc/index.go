package vlanalloc

import (
	"fmt"
	"sort"
	"sync"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
)

// Vlan is an observed Kube-OVN Vlan, reduced to what allocation needs.
type Vlan struct {
	Name     string
	VID      int
	Provider string
	// Zone is the zone label; empty on Vlans the controller did not create.
	Zone string
	// Network is the holder from the network labels; zero on foreign Vlans.
	Network v1alpha1.NetworkReference
}

// Reservation is a recorded hold of one ID by one network: a
// ProxmoxVLANClaim, or an allocation the Index made that is not persisted
// yet.
type Reservation struct {
	VID     int
	Zone    string
	Network v1alpha1.NetworkReference
	// Vlan is the Kube-OVN Vlan (named after the subnet) that will carry VID.
	Vlan string
}

// Claim asks for a VLAN for one network.
type Claim struct {
	Network v1alpha1.NetworkReference
	// Vlan is the name of the network's Kube-OVN Vlan, which is the name of
	// its subnet.
	Vlan string
	// NamespaceLabels are the labels of the network's namespace, matched
	// against the zone's namespaceSelector before a new ID is handed out.
	NamespaceLabels map[string]string
}

// Counts are the zone's status numbers.
type Counts struct {
	// Total is the number of allocatable IDs (ranges minus reserved).
	Total int `json:"total"`
	// Allocated is the number of IDs held by networks of this zone.
	Allocated int `json:"allocated"`
	// Free is the number of allocatable IDs nobody holds.
	Free int `json:"free"`
	// Networks is the number of networks holding an ID in this zone.
	Networks int `json:"networks"`
}

const idSlots = setWords * 64

// Index is the allocation state of one zone: which IDs of its provider
// network are used, and by whom. It is built once from the observed Vlans
// and reservations (NewIndex), kept current with Observe and Forget calls,
// and answers Allocate in O(1) amortized time without parsing or listing
// anything. Its methods are safe for concurrent use.
type Index struct {
	mu   sync.Mutex
	zone *Zone
	free Set
	// refs counts the holders of each ID: Vlans on the provider network,
	// reservations and static pins. zoneRefs counts those of this zone.
	refs         [idSlots]uint32
	zoneRefs     [idSlots]uint32
	allocated    int
	networks     map[v1alpha1.NetworkReference]int
	vlans        map[string]Vlan
	elsewhere    map[string]string
	reservations map[int]Reservation
	byNetwork    map[v1alpha1.NetworkReference][]int
}

// NewIndex builds the index of zone from everything observed: all Kube-OVN
// Vlans (those on other provider networks are remembered only by name) and
// the reservations on the zone's provider network. It costs O(objects).
func NewIndex(zone *Zone, vlans []Vlan, reservations []Reservation) *Index {
	x := &Index{
		zone:         zone,
		free:         zone.allocatable,
		networks:     make(map[v1alpha1.NetworkReference]int, len(reservations)),
		vlans:        make(map[string]Vlan, len(vlans)),
		elsewhere:    make(map[string]string),
		reservations: make(map[int]Reservation, len(reservations)),
		byNetwork:    make(map[v1alpha1.NetworkReference][]int, len(reservations)),
	}
	for vid := range zone.staticByVID {
		x.hold(vid, false, v1alpha1.NetworkReference{})
	}
	for _, v := range vlans {
		x.observeVlan(v)
	}
	for _, r := range reservations {
		x.observeReservation(r)
	}
	return x
}

// Zone returns the zone the index was built for.
func (x *Index) Zone() *Zone { return x.zone }

func validHold(vid int) bool { return vid > 0 && vid < idSlots }

func (x *Index) hold(vid int, ours bool, network v1alpha1.NetworkReference) {
	if !validHold(vid) {
		return
	}
	if x.refs[vid] == 0 {
		x.free.Remove(vid)
	}
	x.refs[vid]++
	if ours {
		if x.zoneRefs[vid] == 0 {
			x.allocated++
		}
		x.zoneRefs[vid]++
		x.networks[network]++
	}
}

func (x *Index) unhold(vid int, ours bool, network v1alpha1.NetworkReference) {
	if !validHold(vid) {
		return
	}
	x.refs[vid]--
	if x.refs[vid] == 0 && x.zone.allocatable.Has(vid) {
		x.free.Add(vid)
	}
	if ours {
		x.zoneRefs[vid]--
		if x.zoneRefs[vid] == 0 {
			x.allocated--
		}
		if x.networks[network]--; x.networks[network] == 0 {
			delete(x.networks, network)
		}
	}
}

func (x *Index) vlanIsOurs(v Vlan) bool { return v.Zone == x.zone.name && v.Network.Name != "" }

// ObserveVlan records a created or updated Kube-OVN Vlan.
func (x *Index) ObserveVlan(v Vlan) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.observeVlan(v)
}

func (x *Index) observeVlan(v Vlan) {
	if old, ok := x.vlans[v.Name]; ok {
		if old == v {
			return
		}
		x.forgetVlan(v.Name)
	}
	delete(x.elsewhere, v.Name)
	if v.Provider != x.zone.provider {
		x.elsewhere[v.Name] = v.Provider
		return
	}
	x.vlans[v.Name] = v
	x.hold(v.VID, x.vlanIsOurs(v), v.Network)
}

// ForgetVlan records that the Vlan named name is gone.
func (x *Index) ForgetVlan(name string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.forgetVlan(name)
}

func (x *Index) forgetVlan(name string) {
	delete(x.elsewhere, name)
	v, ok := x.vlans[name]
	if !ok {
		return
	}
	delete(x.vlans, name)
	x.unhold(v.VID, x.vlanIsOurs(v), v.Network)
}

// ObserveReservation records a reservation on the zone's provider network,
// replacing any other reservation of the same ID.
func (x *Index) ObserveReservation(r Reservation) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.observeReservation(r)
}

func (x *Index) observeReservation(r Reservation) {
	if !validHold(r.VID) {
		return
	}
	if old, ok := x.reservations[r.VID]; ok {
		if old == r {
			return
		}
		x.forgetReservation(r.VID)
	}
	x.reservations[r.VID] = r
	x.byNetwork[r.Network] = append(x.byNetwork[r.Network], r.VID)
	x.hold(r.VID, r.Zone == x.zone.name, r.Network)
}

// ForgetReservation records that the reservation of vid is gone.
func (x *Index) ForgetReservation(vid int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.forgetReservation(vid)
}

func (x *Index) forgetReservation(vid int) {
	r, ok := x.reservations[vid]
	if !ok {
		return
	}
	delete(x.reservations, vid)
	held := x.byNetwork[r.Network]
	for i, v := range held {
		if v == vid {
			held = append(held[:i], held[i+1:]...)
			break
		}
	}
	if len(held) == 0 {
		delete(x.byNetwork, r.Network)
	} else {
		x.byNetwork[r.Network] = held
	}
	x.unhold(vid, r.Zone == x.zone.name, r.Network)
}

// Reservations returns the reservations of network, lowest ID first.
func (x *Index) Reservations(network v1alpha1.NetworkReference) []Reservation {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := make([]Reservation, 0, len(x.byNetwork[network]))
	for _, vid := range x.byNetwork[network] {
		out = append(out, x.reservations[vid])
	}
	sort.Slice(out, func(i, j int) bool { return out[i].VID < out[j].VID })
	return out
}

// Counts returns the zone's status numbers.
func (x *Index) Counts() Counts {
	x.mu.Lock()
	defer x.mu.Unlock()
	return Counts{
		Total:     x.zone.allocatable.Len(),
		Allocated: x.allocated,
		Free:      x.free.Len(),
		Networks:  len(x.networks),
	}
}

// Free returns a copy of the set of IDs that can still be handed out.
func (x *Index) Free() Set {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.free
}

// Stranded returns, in ascending order, the IDs networks of this zone hold
// that the zone would no longer hand out (its ranges shrank or the ID became
// reserved) and that no static assignment pins. Networks keep them.
func (x *Index) Stranded() []int {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []int
	for vid := 1; vid < idSlots; vid++ {
		if x.zoneRefs[vid] == 0 || x.zone.allocatable.Has(vid) {
			continue
		}
		if _, pinned := x.zone.staticByVID[vid]; !pinned {
			out = append(out, vid)
		}
	}
	return out
}

// holderOf describes who other than claim holds vid, for a ConflictError.
func (x *Index) holderOf(vid int, claim Claim) string {
	if r, ok := x.reservations[vid]; ok && r.Network != claim.Network {
		return "network " + r.Network.String()
	}
	if n, ok := x.zone.staticByVID[vid]; ok && n != claim.Network {
		return "static assignment of " + n.String()
	}
	names := make([]string, 0, 1)
	for name, v := range x.vlans {
		if v.VID == vid && name != claim.Vlan {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	if len(names) > 0 {
		return fmt.Sprintf("Vlan %q", names[0])
	}
	return "another holder"
}
