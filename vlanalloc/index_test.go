package vlanalloc

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const testProvider = "pxtenant"

func net(name string) NetworkRef {
	return NetworkRef{Namespace: "tenant-" + name, Name: name}
}

func claimFor(name string) Claim { return Claim{Network: net(name), Vlan: "sub-" + name} }

func ours(name string, vid int) Vlan {
	return Vlan{Name: "sub-" + name, VID: vid, Provider: testProvider, Zone: "z", Network: net(name)}
}

func foreign(name string, vid int) Vlan { return Vlan{Name: name, VID: vid, Provider: testProvider} }

func mustZone(t testing.TB, spec ZoneSpec) *Zone {
	t.Helper()
	if spec.Name == "" {
		spec.Name = "z"
	}
	if spec.ProviderNetwork == "" {
		spec.ProviderNetwork = testProvider
	}
	z, err := NewZone(spec)
	if err != nil {
		t.Fatalf("NewZone: %v", err)
	}
	return z
}

func TestIndexAllocate(t *testing.T) {
	gold := func(namespaceLabels map[string]string) bool { return namespaceLabels["tier"] == "gold" }
	type want struct {
		vid   int
		err   string
		is    error
		cause ConflictCause
	}
	cases := map[string]struct {
		reason       string
		zone         ZoneSpec
		vlans        []Vlan
		reservations []Reservation
		claim        Claim
		want         want
	}{
		"LowestFree": {reason: "the lowest allocatable ID comes first",
			zone: ZoneSpec{Ranges: []string{"102", "100-101"}}, claim: claimFor("a"), want: want{vid: 100}},
		"ForeignVlanIsUsed": {reason: "a Vlan the controller did not create still takes its ID",
			zone: ZoneSpec{Ranges: []string{"100-102"}}, vlans: []Vlan{foreign("x", 100)}, claim: claimFor("a"), want: want{vid: 101}},
		"OtherProviderIsIgnored": {reason: "the same ID on another provider network does not conflict",
			zone:  ZoneSpec{Ranges: []string{"100-102"}},
			vlans: []Vlan{{Name: "x", VID: 100, Provider: "other"}}, claim: claimFor("a"), want: want{vid: 100}},
		"UntaggedIsIgnored": {reason: "ID 0 is untagged and never conflicts",
			zone: ZoneSpec{Ranges: []string{"1-2"}}, vlans: []Vlan{foreign("x", 0)}, claim: claimFor("a"), want: want{vid: 1}},
		"ReservedIsSkipped": {reason: "reserved IDs are never handed out",
			zone: ZoneSpec{Ranges: []string{"100-102"}, Reserved: []int{100}}, claim: claimFor("a"), want: want{vid: 101}},
		"StaticOutsideRanges": {reason: "a static assignment may lie outside the ranges",
			zone:  ZoneSpec{Ranges: []string{"100-102"}, Static: []StaticAssignment{{Network: net("a"), VID: 7}}},
			claim: claimFor("a"), want: want{vid: 7}},
		"StaticNotForOthers": {reason: "a statically assigned ID is never given to another network",
			zone:  ZoneSpec{Ranges: []string{"100-102"}, Static: []StaticAssignment{{Network: net("a"), VID: 100}}},
			claim: claimFor("b"), want: want{vid: 101}},
		"StaticTaken": {reason: "a static ID some other Vlan carries is a conflict",
			zone:  ZoneSpec{Ranges: []string{"100-102"}, Static: []StaticAssignment{{Network: net("a"), VID: 100}}},
			vlans: []Vlan{foreign("x", 100)}, claim: claimFor("a"),
			want: want{is: ErrConflict, cause: StaticInUse, err: `cannot allocate a VLAN for tenant-a/a: VLAN 100 on provider network "pxtenant" is held by Vlan "x", not by network tenant-a/a`}},
		"AdoptOwnVlan": {reason: "the network's existing Vlan keeps its ID, even outside the ranges",
			zone: ZoneSpec{Ranges: []string{"100-102"}}, vlans: []Vlan{ours("a", 150)}, claim: claimFor("a"), want: want{vid: 150}},
		"AdoptUnlabelledVlan": {reason: "a Vlan named after the subnet is adopted after a crash",
			zone: ZoneSpec{Ranges: []string{"100-102"}}, vlans: []Vlan{foreign("sub-a", 101)}, claim: claimFor("a"), want: want{vid: 101}},
		"AdoptWhenNamespaceNoLongerSelected": {reason: "the selector gates new IDs only; a held one is kept",
			zone:  ZoneSpec{Ranges: []string{"100-102"}, AdmitNamespace: gold},
			vlans: []Vlan{ours("a", 100)}, claim: claimFor("a"), want: want{vid: 100}},
		"VlanOfAnotherNetwork": {reason: "a Vlan labelled for another network is not adopted",
			zone:  ZoneSpec{Ranges: []string{"100-102"}},
			vlans: []Vlan{{Name: "sub-a", VID: 100, Provider: testProvider, Zone: "z", Network: net("b")}}, claim: claimFor("a"),
			want: want{is: ErrConflict, cause: NameTaken, err: `cannot allocate a VLAN for tenant-a/a: VLAN 100 on provider network "pxtenant" is held by network tenant-b/b, not by network tenant-a/a`}},
		"DuplicateID": {reason: "a Vlan whose ID another Vlan also carries is a conflict",
			zone: ZoneSpec{Ranges: []string{"100-102"}}, vlans: []Vlan{ours("a", 101), foreign("x", 101)}, claim: claimFor("a"),
			want: want{is: ErrConflict, err: `cannot allocate a VLAN for tenant-a/a: VLAN 101 on provider network "pxtenant" is held by Vlan "x", not by network tenant-a/a`}},
		"ProviderMismatch": {reason: "the network's Vlan on another provider network is refused",
			zone:  ZoneSpec{Ranges: []string{"100-102"}},
			vlans: []Vlan{{Name: "sub-a", VID: 100, Provider: "other"}}, claim: claimFor("a"),
			want: want{is: ErrProviderMismatch, err: `cannot allocate a VLAN for tenant-a/a: Vlan "sub-a" is on provider network "other", but the zone uses "pxtenant"`}},
		"ExistingReservation": {reason: "a reservation of the network is returned again",
			zone:         ZoneSpec{Ranges: []string{"100-102"}},
			reservations: []Reservation{{VID: 102, Zone: "z", Network: net("a"), Vlan: "sub-a"}}, claim: claimFor("a"), want: want{vid: 102}},
		"ReservationOfOthers": {reason: "another network's reservation is used",
			zone:         ZoneSpec{Ranges: []string{"100-102"}},
			reservations: []Reservation{{VID: 100, Zone: "other-zone", Network: net("b"), Vlan: "sub-b"}}, claim: claimFor("a"), want: want{vid: 101}},
		"Exhausted": {reason: "a zone without free IDs says so",
			zone: ZoneSpec{Ranges: []string{"100-101"}}, vlans: []Vlan{foreign("x", 100), ours("b", 101)}, claim: claimFor("a"),
			want: want{is: ErrExhausted, err: `cannot allocate a VLAN for tenant-a/a in zone "z": no free VLAN left in the zone`}},
		"NamespaceNotAllowed": {reason: "a namespace the selector does not match gets no new ID",
			zone: ZoneSpec{Ranges: []string{"100-101"}, AdmitNamespace: gold}, claim: claimFor("a"),
			want: want{is: ErrNamespaceNotAllowed, err: `cannot allocate a VLAN for tenant-a/a: namespace "tenant-a" is not selected by zone "z": namespace not allowed in the zone`}},
		"NamespaceAllowed": {reason: "a matching namespace gets an ID",
			zone:  ZoneSpec{Ranges: []string{"100-101"}, AdmitNamespace: gold},
			claim: Claim{Network: net("a"), Vlan: "sub-a", NamespaceLabels: map[string]string{"tier": "gold"}}, want: want{vid: 100}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			x := NewIndex(mustZone(t, tc.zone), tc.vlans, tc.reservations)
			vid, err := x.Allocate(tc.claim)
			got := want{vid: vid}
			if err != nil {
				got = want{err: err.Error(), is: tc.want.is}
				if ce := (*ConflictError)(nil); errors.As(err, &ce) {
					got.cause = ce.Cause
				}
				if !errors.Is(err, tc.want.is) {
					t.Errorf("%s: %v is not %v", tc.reason, err, tc.want.is)
				}
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{}), cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
				t.Fatalf("%s: -want +got:\n%s", tc.reason, diff)
			}
			if err != nil {
				return
			}
			again, err := x.Allocate(tc.claim)
			if err != nil || again != vid {
				t.Errorf("%s: a second Allocate gave %d, %v; want the same %d", tc.reason, again, err, vid)
			}
		})
	}
}

func TestNewZoneErrors(t *testing.T) {
	cases := map[string]struct {
		reason string
		spec   ZoneSpec
		err    string
	}{
		"NoProvider": {reason: "a zone needs its provider network",
			spec: ZoneSpec{Name: "z", Ranges: []string{"1"}},
			err:  `cannot build VLAN zone "z": invalid VLAN zone: no provider network`},
		"BadRange": {reason: "range errors keep their exact text",
			spec: ZoneSpec{Name: "z", ProviderNetwork: "p", Ranges: []string{"9-1"}},
			err:  `cannot build VLAN zone "z": vlan range "9-1" ends before it starts`},
		"StaticReserved": {reason: "a static assignment may not use a reserved ID",
			spec: ZoneSpec{Name: "z", ProviderNetwork: "p", Ranges: []string{"1-9"}, Reserved: []int{5}, Static: []StaticAssignment{{Network: net("a"), VID: 5}}},
			err:  `cannot build VLAN zone "z": invalid VLAN zone: static assignment of tenant-a/a: VLAN 5 is reserved`},
		"StaticTwice": {reason: "two static assignments may not share an ID",
			spec: ZoneSpec{Name: "z", ProviderNetwork: "p", Static: []StaticAssignment{{Network: net("a"), VID: 5}, {Network: net("b"), VID: 5}}},
			err:  `cannot build VLAN zone "z": invalid VLAN zone: static assignment of tenant-b/b: VLAN 5 is already assigned to tenant-a/a`},
		"StaticOutOfBounds": {reason: "a static ID must be a VLAN ID",
			spec: ZoneSpec{Name: "z", ProviderNetwork: "p", Static: []StaticAssignment{{Network: net("a"), VID: 4095}}},
			err:  `cannot build VLAN zone "z": invalid VLAN zone: static assignment of tenant-a/a: VLAN 4095 is outside 1-4094`},
		"NetworkTwice": {reason: "one network gets one static ID",
			spec: ZoneSpec{Name: "z", ProviderNetwork: "p", Static: []StaticAssignment{{Network: net("a"), VID: 5}, {Network: net("a"), VID: 6}}},
			err:  `cannot build VLAN zone "z": invalid VLAN zone: network tenant-a/a has two static assignments`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := NewZone(tc.spec)
			if err == nil {
				t.Fatalf("%s: NewZone succeeded", tc.reason)
			}
			if diff := cmp.Diff(tc.err, err.Error()); diff != "" {
				t.Errorf("%s: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestCountsAndStranded(t *testing.T) {
	spec := ZoneSpec{Ranges: []string{"100-104"}, Reserved: []int{103}, Static: []StaticAssignment{{Network: net("c"), VID: 300}}}
	vlans := []Vlan{ours("a", 100), ours("b", 200), foreign("x", 101), ours("c", 300)}
	reservations := []Reservation{{VID: 102, Zone: "z", Network: net("d"), Vlan: "sub-d"}}
	x := NewIndex(mustZone(t, spec), vlans, reservations)
	if diff := cmp.Diff(Counts{Total: 4, Allocated: 4, Free: 1, Networks: 4}, x.Counts()); diff != "" {
		t.Errorf("counts: -want +got:\n%s", diff)
	}
	if diff := cmp.Diff([]int{200}, x.Stranded()); diff != "" {
		t.Errorf("stranded: -want +got:\n%s", diff)
	}
	spec.Ranges = []string{"100-101"}
	shrunk := NewIndex(mustZone(t, spec), vlans, reservations)
	if diff := cmp.Diff([]int{102, 200}, shrunk.Stranded()); diff != "" {
		t.Errorf("stranded after shrinking: -want +got:\n%s", diff)
	}
	if vid, err := shrunk.Allocate(claimFor("b")); err != nil || vid != 200 {
		t.Errorf("a stranded VLAN must stay with its network: got %d, %v", vid, err)
	}
	x.ForgetVlan("sub-a")
	x.Release(net("d"))
	if diff := cmp.Diff(Counts{Total: 4, Allocated: 2, Free: 3, Networks: 2}, x.Counts()); diff != "" {
		t.Errorf("counts after release: -want +got:\n%s", diff)
	}
}

// TestForeignVlansKeepNoNetworks: Vlans on another provider network,
// labelled for networks of another zone, leave no per-network record in
// the index (an index must not grow with every other zone's networks), yet
// a network whose Vlan sits there is still refused. A Vlan on the zone's
// provider network is the control: it is tracked.
func TestForeignVlansKeepNoNetworks(t *testing.T) {
	zone := mustZone(t, ZoneSpec{Name: "z", ProviderNetwork: testProvider, Ranges: []string{"100-199"}})
	var vlans []Vlan
	for i := range 50 {
		n := NetworkRef{Namespace: "elsewhere", Name: string(rune('a'+i%26)) + string(rune('a'+i/26))}
		vlans = append(vlans, Vlan{Name: "sub-" + n.Name, VID: 10 + i, Provider: "other", Zone: "other-zone", Network: n})
	}
	x := NewIndex(zone, vlans, nil)
	if len(x.nets) != 0 {
		t.Fatalf("the index keeps %d network records for Vlans on another provider network, want none", len(x.nets))
	}
	if _, err := x.Allocate(Claim{Network: NetworkRef{Namespace: "elsewhere", Name: "aa"}, Vlan: "sub-aa"}); !errors.Is(err, ErrProviderMismatch) {
		t.Fatalf("a network whose Vlan is on another provider network: %v, want %v", err, ErrProviderMismatch)
	}
	x.ObserveVlan(ours("b", 150))
	if len(x.nets) != 1 {
		t.Fatalf("after a Vlan on the zone's provider network: %d network records, want 1", len(x.nets))
	}
}
