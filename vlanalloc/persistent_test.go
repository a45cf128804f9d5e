package vlanalloc_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc/vlanalloctest"
)

const provider = "pxtenant"

func network(i int) vlanalloc.NetworkRef {
	return vlanalloc.NetworkRef{Namespace: fmt.Sprintf("tenant-%d", i%7), Name: fmt.Sprintf("net-%d", i)}
}

func claim(i int) vlanalloc.Claim {
	return vlanalloc.Claim{Network: network(i), Vlan: fmt.Sprintf("subnet-%d", i)}
}

func zone(t testing.TB, name string, ranges ...string) *vlanalloc.Zone {
	t.Helper()
	z, err := vlanalloc.NewZone(vlanalloc.ZoneSpec{Name: name, ProviderNetwork: provider, Ranges: ranges})
	if err != nil {
		t.Fatal(err)
	}
	return z
}

// assertNoSharedVLAN fails when two different networks were told the same
// ID, or when an ID a network was told is not recorded for it.
func assertNoSharedVLAN(t *testing.T, told map[vlanalloc.NetworkRef]map[int]bool, records []vlanalloc.Reservation, foreign map[int]bool) {
	t.Helper()
	owner := map[int]vlanalloc.NetworkRef{}
	for n, vids := range told {
		for vid := range vids {
			if other, ok := owner[vid]; ok && other != n {
				t.Fatalf("VLAN %d was given to both %s and %s", vid, other, n)
			}
			if foreign[vid] {
				t.Fatalf("VLAN %d was given to %s but a foreign Vlan carries it", vid, n)
			}
			owner[vid] = n
		}
	}
	recorded := map[int]vlanalloc.NetworkRef{}
	for _, r := range records {
		recorded[r.VID] = r.Network
	}
	for vid, n := range owner {
		if recorded[vid] != n {
			t.Fatalf("VLAN %d was given to %s but is recorded for %q", vid, n, recorded[vid])
		}
	}
}

func TestAllocatorSplitBrainInMemory(t *testing.T) {
	z := zone(t, "z", "100-299")
	foreignVlans := []vlanalloc.Vlan{{Name: "legacy-1", VID: 100, Provider: provider}, {Name: "legacy-2", VID: 103, Provider: provider}}
	foreign := map[int]bool{100: true, 103: true}
	store := vlanalloctest.NewReserver()
	// Two replicas, each with its own cache taken at start and never refreshed.
	replicas := []*vlanalloc.Allocator{
		vlanalloc.NewAllocator(vlanalloc.NewIndex(z, foreignVlans, nil), store),
		vlanalloc.NewAllocator(vlanalloc.NewIndex(z, foreignVlans, nil), store),
	}
	var mu sync.Mutex
	told := map[vlanalloc.NetworkRef]map[int]bool{}
	var wg sync.WaitGroup
	for r, a := range replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := r * 40; i < r*40+80; i++ { // networks 40-79 are reconciled by both
				vid, err := a.Allocate(context.Background(), claim(i))
				if err != nil {
					t.Errorf("replica %d: %v", r, err)
					return
				}
				mu.Lock()
				if told[network(i)] == nil {
					told[network(i)] = map[int]bool{}
				}
				told[network(i)][vid] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(told) != 120 {
		t.Fatalf("%d networks got a VLAN, want 120", len(told))
	}
	assertNoSharedVLAN(t, told, store.Records(provider), foreign)
}

func TestAllocatorLearnsTheHolder(t *testing.T) {
	ctx := context.Background()
	z := zone(t, "z", "100-102")
	store := vlanalloctest.NewReserver()
	a := vlanalloc.NewAllocator(vlanalloc.NewIndex(z, nil, nil), store)
	b := vlanalloc.NewAllocator(vlanalloc.NewIndex(z, nil, nil), store)
	if vid, err := a.Allocate(ctx, claim(1)); err != nil || vid != 100 {
		t.Fatalf("a: %d, %v", vid, err)
	}
	if vid, err := b.Allocate(ctx, claim(2)); err != nil || vid != 101 {
		t.Fatalf("b must skip the ID a reserved: %d, %v", vid, err)
	}
	if vid, err := b.Allocate(ctx, claim(1)); err != nil || vid != 100 {
		t.Fatalf("b must find network 1's own reservation: %d, %v", vid, err)
	}
	want := []vlanalloc.Reservation{
		{VID: 100, Zone: "z", Network: network(1), Vlan: "subnet-1"},
		{VID: 101, Zone: "z", Network: network(2), Vlan: "subnet-2"},
	}
	if diff := cmp.Diff(want, store.Records(provider)); diff != "" {
		t.Errorf("records: -want +got:\n%s", diff)
	}
	if diff := cmp.Diff(vlanalloc.Counts{Total: 3, Allocated: 2, Free: 1, Networks: 2}, b.Index().Counts()); diff != "" {
		t.Errorf("b's counts after learning: -want +got:\n%s", diff)
	}
}

func TestAllocatorStaticTakenElsewhere(t *testing.T) {
	ctx := context.Background()
	store := vlanalloctest.NewReserver()
	other := vlanalloc.NewAllocator(vlanalloc.NewIndex(zone(t, "other", "7"), nil, nil), store)
	if _, err := other.Allocate(ctx, claim(1)); err != nil {
		t.Fatal(err)
	}
	z, err := vlanalloc.NewZone(vlanalloc.ZoneSpec{Name: "z", ProviderNetwork: provider, Ranges: []string{"100"},
		Static: []vlanalloc.StaticAssignment{{Network: network(2), VID: 7}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = vlanalloc.NewAllocator(vlanalloc.NewIndex(z, nil, nil), store).Allocate(ctx, claim(2))
	want := `cannot allocate a VLAN for tenant-2/net-2: VLAN 7 on provider network "pxtenant" is held by network tenant-1/net-1, not by network tenant-2/net-2`
	var ce *vlanalloc.ConflictError
	if !errors.As(err, &ce) || err.Error() != want || ce.Cause != vlanalloc.StaticInUse {
		t.Fatalf("got %v, want %s (StaticInUse)", err, want)
	}
}

// TestAllocatorStoreFailure: a reservation whose write failed stays in the
// index, because the allocator cannot tell a refused write from a lost
// answer. Another network gets the next ID; the retry gets the same one.
func TestAllocatorStoreFailure(t *testing.T) {
	ctx := context.Background()
	store := vlanalloctest.NewReserver()
	a := vlanalloc.NewAllocator(vlanalloc.NewIndex(zone(t, "z", "100-102"), nil, nil), store)
	boom := errors.New("etcdserver: request timed out")
	store.FailNext(boom)
	_, err := a.Allocate(ctx, claim(1))
	if !errors.Is(err, boom) || err.Error() != "cannot reserve VLAN 100 for tenant-1/net-1: etcdserver: request timed out" {
		t.Fatalf("got %v", err)
	}
	if vid, held := a.Index().Lookup(claim(1)); !held || vid != 100 {
		t.Fatalf("after a failed write the index must keep 100 for network 1: %d, %v", vid, held)
	}
	if vid, err := a.Allocate(ctx, claim(2)); err != nil || vid != 101 {
		t.Fatalf("another network while 100 is pending: %d, %v", vid, err)
	}
	if vid, err := a.Allocate(ctx, claim(1)); err != nil || vid != 100 {
		t.Fatalf("retry: %d, %v", vid, err)
	}
	store.FailNext(boom)
	if err := a.Release(ctx, network(1)); !errors.Is(err, boom) {
		t.Fatalf("release: %v", err)
	}
	if len(store.Records(provider)) != 2 {
		t.Fatal("a failed release must keep the record")
	}
	if err := a.Release(ctx, network(1)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{101}, recordedIDs(store)); diff != "" {
		t.Fatalf("records -want +got:\n%s", diff)
	}
	if vid, err := a.Allocate(ctx, claim(3)); err != nil || vid != 100 {
		t.Fatalf("a released ID is reused lowest-first: %d, %v", vid, err)
	}
}

// TestAllocatorLostAnswer: the write landed but its answer was lost. The
// index agrees with the record: the ID is not free for another network,
// the retry writes nothing new, and Release deletes the record.
func TestAllocatorLostAnswer(t *testing.T) {
	ctx := context.Background()
	store := vlanalloctest.NewReserver()
	a := vlanalloc.NewAllocator(vlanalloc.NewIndex(zone(t, "z", "100-101"), nil, nil), store)
	boom := errors.New("http2: client connection lost")
	store.LoseNext(boom)
	if _, err := a.Allocate(ctx, claim(1)); !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
	if diff := cmp.Diff([]int{100}, recordedIDs(store)); diff != "" {
		t.Fatalf("records -want +got:\n%s", diff)
	}
	if got := a.Index().Counts(); got.Allocated != 1 || got.Free != 1 {
		t.Fatalf("counts after a lost answer %+v, want 1 allocated and 1 free like the records", got)
	}
	if vid, err := a.Allocate(ctx, claim(2)); err != nil || vid != 101 {
		t.Fatalf("another network: %d, %v", vid, err)
	}
	if vid, err := a.Allocate(ctx, claim(1)); err != nil || vid != 100 {
		t.Fatalf("retry: %d, %v", vid, err)
	}
	store.LoseNext(boom)
	if err := a.Release(ctx, network(1)); !errors.Is(err, boom) {
		t.Fatalf("release: %v", err)
	}
	if err := a.Release(ctx, network(1)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{101}, recordedIDs(store)); diff != "" {
		t.Fatalf("records -want +got:\n%s", diff)
	}
	if got := a.Index().Counts(); got.Allocated != 1 || got.Free != 1 {
		t.Fatalf("counts after release %+v", got)
	}
}

// TestAllocatorReleaseOthers: a network that holds more than one ID keeps
// only the one it names; a failed release keeps the record and the index's
// copy of it.
func TestAllocatorReleaseOthers(t *testing.T) {
	ctx := context.Background()
	store := vlanalloctest.NewReserver()
	var held []vlanalloc.Reservation
	for _, vid := range []int{100, 101, 102} {
		r := vlanalloc.Reservation{VID: vid, Zone: "z", Network: network(1), Vlan: "subnet-1"}
		if err := store.Reserve(ctx, provider, r); err != nil {
			t.Fatal(err)
		}
		held = append(held, r)
	}
	a := vlanalloc.NewAllocator(vlanalloc.NewIndex(zone(t, "z", "100-103"), nil, held), store)
	boom := errors.New("etcdserver: request timed out")
	store.FailNext(boom)
	if n, err := a.ReleaseOthers(ctx, network(1), 101); !errors.Is(err, boom) || n != 0 {
		t.Fatalf("failed release: %d, %v", n, err)
	}
	if got := len(a.Index().Reservations(network(1))); got != 3 || len(store.Records(provider)) != 3 {
		t.Fatalf("a failed release dropped something: index %d, records %d", got, len(store.Records(provider)))
	}
	if n, err := a.ReleaseOthers(ctx, network(1), 101); err != nil || n != 2 {
		t.Fatalf("release: %d, %v", n, err)
	}
	if diff := cmp.Diff([]int{101}, recordedIDs(store)); diff != "" {
		t.Fatalf("records -want +got:\n%s", diff)
	}
	if diff := cmp.Diff([]vlanalloc.Reservation{held[1]}, a.Index().Reservations(network(1))); diff != "" {
		t.Fatalf("index -want +got:\n%s", diff)
	}
	if got := a.Index().Counts(); got.Allocated != 1 || got.Free != 3 {
		t.Fatalf("counts %+v", got)
	}
	if n, err := a.ReleaseOthers(ctx, network(1), 101); err != nil || n != 0 {
		t.Fatalf("nothing left to release: %d, %v", n, err)
	}
}

func recordedIDs(store *vlanalloctest.Reserver) []int {
	var ids []int
	for _, r := range store.Records(provider) {
		ids = append(ids, r.VID)
	}
	return ids
}

func TestAllocatorDropsStaleReservation(t *testing.T) {
	ctx := context.Background()
	z := zone(t, "z", "100-101")
	store := vlanalloctest.NewReserver()
	// Network 2 holds 100 in the shared record; this replica still remembers
	// a reservation of 100 by network 1 that was released since.
	if err := store.Reserve(ctx, provider, vlanalloc.Reservation{VID: 100, Zone: "z", Network: network(2), Vlan: "subnet-2"}); err != nil {
		t.Fatal(err)
	}
	stale := vlanalloc.NewIndex(z, nil, []vlanalloc.Reservation{{VID: 100, Zone: "z", Network: network(1), Vlan: "subnet-1"}})
	vid, err := vlanalloc.NewAllocator(stale, store).Allocate(ctx, claim(1))
	if err != nil || vid != 101 {
		t.Fatalf("got %d, %v; want the next free ID", vid, err)
	}
	if diff := cmp.Diff([]vlanalloc.Reservation{{VID: 101, Zone: "z", Network: network(1), Vlan: "subnet-1"}}, stale.Reservations(network(1))); diff != "" {
		t.Errorf("reservations of network 1: -want +got:\n%s", diff)
	}
}
