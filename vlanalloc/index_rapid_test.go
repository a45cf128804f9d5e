package vlanalloc

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// indexModel is the trivial model of an Index: plain maps, and every answer
// recomputed from scratch by scanning all IDs.
type indexModel struct {
	allocatable map[int]bool
	static      map[NetworkRef]int
	vlans       map[string]Vlan
	res         map[int]Reservation
}

func (m *indexModel) others(vid int, c Claim) int {
	n := 0
	for name, v := range m.vlans {
		if v.Provider == testProvider && v.VID == vid && name != c.Vlan {
			n++
		}
	}
	if r, ok := m.res[vid]; ok && r.Network != c.Network {
		n++
	}
	for nw, s := range m.static {
		if s == vid && nw != c.Network {
			n++
		}
	}
	return n
}

func (m *indexModel) used(vid int) bool {
	return m.others(vid, Claim{Vlan: "\x00"}) > 0 || m.res[vid].Network.Name != ""
}

func (m *indexModel) reservedBy(n NetworkRef) (int, bool) {
	for vid := 1; vid < idSlots; vid++ {
		if r, ok := m.res[vid]; ok && r.Network == n {
			return vid, true
		}
	}
	return 0, false
}

// allocate returns the model's answer: an ID, or the error category.
func (m *indexModel) allocate(c Claim) (int, error) {
	reserve := func(vid int) (int, error) {
		if _, ok := m.res[vid]; !ok && vid > 0 {
			m.res[vid] = Reservation{VID: vid, Zone: "z", Network: c.Network, Vlan: c.Vlan}
		}
		return vid, nil
	}
	if v, ok := m.vlans[c.Vlan]; ok {
		switch {
		case v.Provider != testProvider:
			return 0, ErrProviderMismatch
		case v.Network.Name != "" && v.Network != c.Network:
			return 0, ErrConflict
		case v.VID < MinVID || v.VID > MaxVID:
			return 0, ErrUnusableVlan
		case m.others(v.VID, c) > 0:
			return 0, ErrConflict
		}
		return reserve(v.VID)
	}
	if vid, ok := m.reservedBy(c.Network); ok {
		if m.others(vid, c) > 0 {
			return 0, ErrConflict
		}
		return vid, nil
	}
	if vid, ok := m.static[c.Network]; ok {
		if m.others(vid, c) > 0 {
			return 0, ErrConflict
		}
		return reserve(vid)
	}
	for vid := MinVID; vid <= MaxVID; vid++ {
		if m.allocatable[vid] && !m.used(vid) {
			return reserve(vid)
		}
	}
	return 0, ErrExhausted
}

func (m *indexModel) counts() Counts {
	c := Counts{Total: len(m.allocatable)}
	for vid := range m.allocatable {
		if !m.used(vid) {
			c.Free++
		}
	}
	held := map[int]bool{}
	nets := map[NetworkRef]bool{}
	for _, v := range m.vlans {
		if v.Provider == testProvider && v.Zone == "z" && v.Network.Name != "" && v.VID > 0 {
			held[v.VID], nets[v.Network] = true, true
		}
	}
	for _, r := range m.res {
		if r.Zone == "z" {
			held[r.VID], nets[r.Network] = true, true
		}
	}
	c.Allocated, c.Networks = len(held), len(nets)
	return c
}

var modelNetworks = []string{"a", "b", "c", "d", "e"}

// indexMachine drives an Index and its model through the same steps.
type indexMachine struct {
	zone *Zone
	x    *Index
	m    *indexModel
}

func newIndexMachine(t *rapid.T) *indexMachine {
	lo := rapid.IntRange(1, 8).Draw(t, "lo")
	hi := rapid.IntRange(lo, 12).Draw(t, "hi")
	reserved := rapid.SliceOfN(rapid.IntRange(1, 14), 0, 3).Draw(t, "reserved")
	spec := ZoneSpec{Name: "z", ProviderNetwork: testProvider, Ranges: []string{fmt.Sprintf("%d-%d", lo, hi)}, Reserved: reserved}
	m := &indexModel{allocatable: map[int]bool{}, static: map[NetworkRef]int{}, vlans: map[string]Vlan{}, res: map[int]Reservation{}}
	for vid := lo; vid <= hi; vid++ {
		m.allocatable[vid] = true
	}
	for _, vid := range reserved {
		delete(m.allocatable, vid)
	}
	if rapid.Bool().Draw(t, "static") {
		vid := rapid.IntRange(1, 14).Draw(t, "staticVID")
		if !contains(reserved, vid) {
			spec.Static = []StaticAssignment{{Network: net("e"), VID: vid}}
			m.static[net("e")] = vid
		}
	}
	zone, err := NewZone(spec)
	if err != nil {
		t.Fatalf("NewZone: %v", err)
	}
	return &indexMachine{zone: zone, x: NewIndex(zone, nil, nil), m: m}
}

func (s *indexMachine) Allocate(t *rapid.T) {
	c := claimFor(rapid.SampledFrom(modelNetworks).Draw(t, "network"))
	wantVID, wantErr := s.m.allocate(c)
	vid, err := s.x.Allocate(c)
	if wantErr != nil {
		if !errors.Is(err, wantErr) {
			t.Fatalf("Allocate(%v) = %d, %v; model says %v", c.Network, vid, err, wantErr)
		}
		return
	}
	if err != nil || vid != wantVID {
		t.Fatalf("Allocate(%v) = %d, %v; model says %d", c.Network, vid, err, wantVID)
	}
	if n := s.m.others(vid, c); n != 0 {
		t.Fatalf("VLAN %d given to %v while %d others hold it", vid, c.Network, n)
	}
}

func (s *indexMachine) CreateVlan(t *rapid.T) {
	var reserved []string
	for _, n := range modelNetworks {
		if _, ok := s.m.reservedBy(net(n)); ok {
			reserved = append(reserved, n)
		}
	}
	if len(reserved) == 0 {
		return // no reservation yet
	}
	n := rapid.SampledFrom(reserved).Draw(t, "network")
	vid, _ := s.m.reservedBy(net(n))
	v := ours(n, vid)
	s.m.vlans[v.Name] = v
	s.x.ObserveVlan(v)
}

func (s *indexMachine) ForeignVlan(t *rapid.T) {
	v := Vlan{
		Name:     rapid.SampledFrom([]string{"x", "y", "sub-a", "sub-b"}).Draw(t, "name"),
		VID:      rapid.IntRange(0, 15).Draw(t, "vid"),
		Provider: rapid.SampledFrom([]string{testProvider, "other"}).Draw(t, "provider"),
	}
	s.m.vlans[v.Name] = v
	s.x.ObserveVlan(v)
}

func (s *indexMachine) ForgetVlan(t *rapid.T) {
	name := rapid.SampledFrom([]string{"x", "y", "sub-a", "sub-b", "sub-c"}).Draw(t, "name")
	delete(s.m.vlans, name)
	s.x.ForgetVlan(name)
}

func (s *indexMachine) Release(t *rapid.T) {
	n := net(rapid.SampledFrom(modelNetworks).Draw(t, "network"))
	for vid, r := range s.m.res {
		if r.Network == n {
			delete(s.m.res, vid)
		}
	}
	s.x.Release(n)
}

// Restart rebuilds the index from the observed objects, as a new process.
func (s *indexMachine) Restart(*rapid.T) {
	var vlans []Vlan
	for _, v := range s.m.vlans {
		vlans = append(vlans, v)
	}
	var res []Reservation
	for _, r := range s.m.res {
		res = append(res, r)
	}
	s.x = NewIndex(s.zone, vlans, res)
}

// Check compares counts, the free set and every network's ID with the model.
func (s *indexMachine) Check(t *rapid.T) {
	if diff := cmp.Diff(s.m.counts(), s.x.Counts()); diff != "" {
		t.Fatalf("counts: -model +index:\n%s", diff)
	}
	free := s.x.Free()
	for vid := range s.m.allocatable {
		if free.Has(vid) == s.m.used(vid) {
			t.Fatalf("VLAN %d: free in index %v, used in model %v", vid, free.Has(vid), s.m.used(vid))
		}
	}
	for _, n := range modelNetworks {
		wantVID, wantOK := s.m.reservedBy(net(n))
		if v, ok := s.m.vlans["sub-"+n]; ok && v.Provider == testProvider {
			wantVID, wantOK = v.VID, true
		}
		if vid, ok := s.x.Lookup(claimFor(n)); ok != wantOK || vid != wantVID {
			t.Fatalf("Lookup(%s) = %d, %v; model %d, %v", n, vid, ok, wantVID, wantOK)
		}
	}
}

func TestIndexStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := newIndexMachine(t)
		t.Repeat(map[string]func(*rapid.T){
			"allocate":    s.Allocate,
			"createVlan":  s.CreateVlan,
			"foreignVlan": s.ForeignVlan,
			"forgetVlan":  s.ForgetVlan,
			"release":     s.Release,
			"restart":     s.Restart,
			"":            s.Check,
		})
	})
}

func contains(s []int, v int) bool {
	for _, e := range s {
		if e == v {
			return true
		}
	}
	return false
}
