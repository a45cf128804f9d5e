package vlanalloc

import (
	"fmt"
	"sort"
	"sync"
)

// Vlan is an observed Kube-OVN Vlan, reduced to what allocation needs.
type Vlan struct {
	Name     string
	VID      int
	Provider string
	// Zone is the zone label; empty on Vlans the controller did not create.
	Zone string
	// Network is the holder from the network labels; zero on foreign Vlans.
	Network NetworkRef
}

// Reservation is a recorded hold of one ID by one network: a
// ProxmoxVLANClaim, or an allocation the Index made that is not persisted
// yet.
type Reservation struct {
	VID     int
	Zone    string
	Network NetworkRef
	// Vlan is the Kube-OVN Vlan (named after the subnet) that will carry VID.
	Vlan string
}

// Claim asks for a VLAN for one network.
type Claim struct {
	Network NetworkRef
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
	zoneNetworks int
	// nsNetworks counts, per namespace, the networks holding an ID of this
	// zone (those counted in zoneNetworks).
	nsNetworks map[string]int
	nets       map[NetworkRef]*netState
	// vlans holds every observed Vlan by name, on any provider network; only
	// those on the zone's provider network hold an ID.
	vlans map[string]vlanEntry
	// res[vid] is 1 + the position of vid's reservation in resSlab, 0 where
	// there is none; resFree lists slab positions to reuse.
	res     [idSlots]int32
	resSlab []Reservation
	resFree []int32
	// netChunk hands out netStates a chunk at a time.
	netChunk []netState
}

// netState is what the index knows of one network: how many of its holders
// belong to this zone, the IDs it holds reservations for, and how many Vlans
// are labelled for it.
type netState struct {
	ref       NetworkRef
	zoneHolds int
	reserved  []int
	vlans     int
	// first backs reserved while the network holds one reservation, which
	// is nearly always.
	first [1]int
}

// vlanEntry is an observed Vlan as the index keeps it.
type vlanEntry struct {
	vid      int
	provider string
	// ours: labelled for this zone and a network.
	ours bool
	// network is the labelled network; nil on a Vlan without labels.
	network *netState
}

func (e vlanEntry) networkRef() NetworkRef {
	if e.network == nil {
		return NetworkRef{}
	}
	return e.network.ref
}

// zoneState is the network to count the Vlan for in this zone, or nil.
func (e vlanEntry) zoneState() *netState {
	if e.ours {
		return e.network
	}
	return nil
}

// NewIndex builds the index of zone from everything observed: all Kube-OVN
// Vlans (those on other provider networks are kept only to refuse a network
// whose Vlan sits there) and the reservations on the zone's provider
// network. It costs O(objects).
func NewIndex(zone *Zone, vlans []Vlan, reservations []Reservation) *Index {
	// Sized for a full zone, so that filling it never grows a map.
	size := max(zone.allocatable.Len(), len(vlans), len(reservations))
	x := &Index{
		zone:       zone,
		free:       zone.allocatable,
		nets:       make(map[NetworkRef]*netState, size),
		nsNetworks: map[string]int{},
		vlans:      make(map[string]vlanEntry, size),
		resSlab:    make([]Reservation, 0, size),
	}
	for vid := range zone.staticByVID {
		x.hold(vid, nil)
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

func (x *Index) netFor(n NetworkRef) *netState {
	st, ok := x.nets[n]
	if !ok {
		if len(x.netChunk) == 0 {
			x.netChunk = make([]netState, 64)
		}
		st = &x.netChunk[0]
		x.netChunk = x.netChunk[1:]
		st.ref = n
		st.reserved = st.first[:0]
		x.nets[n] = st
	}
	return st
}

func (x *Index) dropIfIdle(st *netState) {
	if st.zoneHolds == 0 && len(st.reserved) == 0 && st.vlans == 0 {
		delete(x.nets, st.ref)
	}
}

// hold adds a holder of vid; ours is the state of the holding network when
// the holder belongs to this zone, nil otherwise.
func (x *Index) hold(vid int, ours *netState) {
	if !validHold(vid) {
		return
	}
	if x.refs[vid] == 0 {
		x.free.Remove(vid)
	}
	x.refs[vid]++
	if ours == nil {
		return
	}
	if x.zoneRefs[vid] == 0 {
		x.allocated++
	}
	x.zoneRefs[vid]++
	if ours.zoneHolds == 0 {
		x.zoneNetworks++
		x.nsNetworks[ours.ref.Namespace]++
	}
	ours.zoneHolds++
}

func (x *Index) unhold(vid int, ours *netState) {
	if !validHold(vid) {
		return
	}
	x.refs[vid]--
	if x.refs[vid] == 0 && x.zone.allocatable.Has(vid) {
		x.free.Add(vid)
	}
	if ours == nil {
		return
	}
	x.zoneRefs[vid]--
	if x.zoneRefs[vid] == 0 {
		x.allocated--
	}
	ours.zoneHolds--
	if ours.zoneHolds == 0 {
		x.zoneNetworks--
		if x.nsNetworks[ours.ref.Namespace]--; x.nsNetworks[ours.ref.Namespace] == 0 {
			delete(x.nsNetworks, ours.ref.Namespace)
		}
	}
}

// ObserveVlan records a created or updated Kube-OVN Vlan.
func (x *Index) ObserveVlan(v Vlan) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.observeVlan(v)
}

func (x *Index) observeVlan(v Vlan) {
	// A Vlan on another provider network holds no ID here; it is kept only
	// to refuse a network whose Vlan sits there, so its network is not
	// tracked: an index does not grow a record per network of every other
	// zone.
	local, network := v.Provider == x.zone.provider, v.Network
	if !local {
		network = NetworkRef{}
	}
	e := vlanEntry{vid: v.VID, provider: v.Provider, ours: local && v.Zone == x.zone.name && network.Name != ""}
	if old, ok := x.vlans[v.Name]; ok {
		if old.vid == e.vid && old.provider == e.provider && old.ours == e.ours && old.networkRef() == network {
			return
		}
		x.forgetVlan(v.Name)
	}
	if network.Name != "" {
		e.network = x.netFor(network)
		e.network.vlans++
	}
	x.vlans[v.Name] = e
	if e.provider == x.zone.provider {
		x.hold(e.vid, e.zoneState())
	}
}

// ForgetVlan records that the Vlan named name is gone.
func (x *Index) ForgetVlan(name string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.forgetVlan(name)
}

func (x *Index) forgetVlan(name string) {
	e, ok := x.vlans[name]
	if !ok {
		return
	}
	delete(x.vlans, name)
	if e.provider == x.zone.provider {
		x.unhold(e.vid, e.zoneState())
	}
	if e.network != nil {
		e.network.vlans--
		x.dropIfIdle(e.network)
	}
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
	if old := x.resAt(r.VID); old != nil {
		if *old == r {
			return
		}
		x.forgetReservation(r.VID)
	}
	x.setRes(r)
	st := x.netFor(r.Network)
	st.reserved = append(st.reserved, r.VID)
	if r.Zone == x.zone.name {
		x.hold(r.VID, st)
	} else {
		x.hold(r.VID, nil)
	}
}

// ForgetReservation records that the reservation of vid is gone.
func (x *Index) ForgetReservation(vid int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.forgetReservation(vid)
}

func (x *Index) forgetReservation(vid int) {
	if !validHold(vid) || x.res[vid] == 0 {
		return
	}
	r := *x.resAt(vid)
	x.clearRes(vid)
	st := x.nets[r.Network]
	for i, v := range st.reserved {
		if v == vid {
			st.reserved = append(st.reserved[:i], st.reserved[i+1:]...)
			break
		}
	}
	if r.Zone == x.zone.name {
		x.unhold(vid, st)
	} else {
		x.unhold(vid, nil)
	}
	x.dropIfIdle(st)
}

// forget drops the reservation of r.VID if it is still r (a replica may
// have learned another holder meanwhile).
func (x *Index) forget(r Reservation) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if cur := x.resAt(r.VID); cur != nil && *cur == r {
		x.forgetReservation(r.VID)
	}
}

// Reservations returns the reservations of network, lowest ID first.
func (x *Index) Reservations(network NetworkRef) []Reservation {
	x.mu.Lock()
	defer x.mu.Unlock()
	var held []int
	if st, ok := x.nets[network]; ok {
		held = st.reserved
	}
	out := make([]Reservation, 0, len(held))
	for _, vid := range held {
		out = append(out, *x.resAt(vid))
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
		Networks:  x.zoneNetworks,
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
	if r := x.resAt(vid); r != nil && r.Network != claim.Network {
		return "network " + r.Network.String()
	}
	if n, ok := x.zone.staticByVID[vid]; ok && n != claim.Network {
		return "static assignment of " + n.String()
	}
	names := make([]string, 0, 1)
	for name, e := range x.vlans {
		if e.provider == x.zone.provider && e.vid == vid && name != claim.Vlan {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	if len(names) > 0 {
		return fmt.Sprintf("Vlan %q", names[0])
	}
	return "another holder"
}

// resAt returns the reservation of vid, or nil. The pointer is valid only
// until the next reservation is recorded.
func (x *Index) resAt(vid int) *Reservation {
	if !validHold(vid) || x.res[vid] == 0 {
		return nil
	}
	return &x.resSlab[x.res[vid]-1]
}

func (x *Index) setRes(r Reservation) {
	if n := len(x.resFree); n > 0 {
		pos := x.resFree[n-1]
		x.resFree = x.resFree[:n-1]
		x.resSlab[pos] = r
		x.res[r.VID] = pos + 1
		return
	}
	x.resSlab = append(x.resSlab, r)
	x.res[r.VID] = int32(len(x.resSlab))
}

func (x *Index) clearRes(vid int) {
	pos := x.res[vid] - 1
	x.resSlab[pos] = Reservation{}
	x.resFree = append(x.resFree, pos)
	x.res[vid] = 0
}
