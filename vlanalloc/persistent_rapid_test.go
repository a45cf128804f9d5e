package vlanalloc_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc/vlanalloctest"
)

// replicasMachine runs three allocators that share one Reserver but keep
// their own indexes, which are refreshed only when a step says so. The model
// is what each network was last told.
type replicasMachine struct {
	zone     *vlanalloc.Zone
	store    *vlanalloctest.Reserver
	replicas []*vlanalloc.Allocator
	told     map[vlanalloc.NetworkRef]int
}

func (s *replicasMachine) pick(t *rapid.T) (*vlanalloc.Allocator, int) {
	r := rapid.IntRange(0, len(s.replicas)-1).Draw(t, "replica")
	return s.replicas[r], rapid.IntRange(0, 7).Draw(t, "network")
}

func (s *replicasMachine) Allocate(t *rapid.T) {
	a, n := s.pick(t)
	vid, err := a.Allocate(context.Background(), claim(n))
	if errors.Is(err, vlanalloc.ErrExhausted) {
		return
	}
	if err != nil {
		t.Fatalf("Allocate(%d): %v", n, err)
	}
	s.told[network(n)] = vid
}

func (s *replicasMachine) Release(t *rapid.T) {
	a, n := s.pick(t)
	if err := a.Release(context.Background(), network(n)); err != nil {
		t.Fatal(err)
	}
	// The network is gone for good only when no record names it any more;
	// a replica whose index is stale may still hold another record for it.
	for _, r := range s.store.Records(provider) {
		if r.Network == network(n) {
			s.told[network(n)] = r.VID
			return
		}
	}
	delete(s.told, network(n))
}

// Refresh rebuilds one replica's index from the shared record, as a restart.
func (s *replicasMachine) Refresh(t *rapid.T) {
	r := rapid.IntRange(0, len(s.replicas)-1).Draw(t, "replica")
	s.replicas[r] = vlanalloc.NewAllocator(vlanalloc.NewIndex(s.zone, nil, s.store.Records(provider)), s.store)
}

// Check: no two networks were last told the same ID, and each network's ID
// is recorded for it.
func (s *replicasMachine) Check(t *rapid.T) {
	owner := map[int]vlanalloc.NetworkRef{}
	recorded := map[int]vlanalloc.NetworkRef{}
	for _, r := range s.store.Records(provider) {
		recorded[r.VID] = r.Network
	}
	for n, vid := range s.told {
		if other, ok := owner[vid]; ok {
			t.Fatalf("VLAN %d is held by both %s and %s", vid, other, n)
		}
		owner[vid] = n
		if recorded[vid] != n {
			t.Fatalf("%s was told %d, which is recorded for %q", n, vid, recorded[vid])
		}
	}
}

func TestReplicasStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		size := rapid.IntRange(1, 10).Draw(t, "size")
		z, err := vlanalloc.NewZone(vlanalloc.ZoneSpec{Name: "z", ProviderNetwork: provider, Ranges: []string{fmt.Sprintf("1-%d", size)}})
		if err != nil {
			t.Fatal(err)
		}
		s := &replicasMachine{zone: z, store: vlanalloctest.NewReserver(), told: map[vlanalloc.NetworkRef]int{}}
		for range 3 {
			s.replicas = append(s.replicas, vlanalloc.NewAllocator(vlanalloc.NewIndex(s.zone, nil, nil), s.store))
		}
		t.Repeat(map[string]func(*rapid.T){
			"allocate": s.Allocate,
			"release":  s.Release,
			"refresh":  s.Refresh,
			"":         s.Check,
		})
	})
}

// faultsMachine runs one allocator over a Reserver that fails calls either
// before writing (refused) or after (answer lost). The model knows which
// networks' last call failed: only those may hold a reservation in the
// index that the Reserver lacks.
type faultsMachine struct {
	store   *vlanalloctest.Reserver
	a       *vlanalloc.Allocator
	told    map[vlanalloc.NetworkRef]int
	pending map[vlanalloc.NetworkRef]bool
}

var errInjected = errors.New("injected: etcdserver: request timed out")

// inject draws how the next call fails, if at all.
func (s *faultsMachine) inject(t *rapid.T) bool {
	switch rapid.SampledFrom([]string{"none", "refused", "lost"}).Draw(t, "fault") {
	case "refused":
		s.store.FailNext(errInjected)
	case "lost":
		s.store.LoseNext(errInjected)
	default:
		return false
	}
	return true
}

// settle records the outcome of a call for n.
func (s *faultsMachine) settle(t *rapid.T, n vlanalloc.NetworkRef, err error) bool {
	s.store.ClearFaults()
	switch {
	case errors.Is(err, errInjected):
		s.pending[n] = true
		return false
	case err != nil:
		t.Fatalf("%s: %v", n, err)
	}
	s.pending[n] = false
	return true
}

func (s *faultsMachine) Allocate(t *rapid.T) {
	i := rapid.IntRange(0, 5).Draw(t, "network")
	s.inject(t)
	vid, err := s.a.Allocate(context.Background(), claim(i))
	if errors.Is(err, vlanalloc.ErrExhausted) {
		s.store.ClearFaults()
		return
	}
	if s.settle(t, network(i), err) {
		s.told[network(i)] = vid
	}
}

func (s *faultsMachine) Release(t *rapid.T) {
	i := rapid.IntRange(0, 5).Draw(t, "network")
	s.inject(t)
	if s.settle(t, network(i), s.a.Release(context.Background(), network(i))) {
		delete(s.told, network(i))
	}
}

func (s *faultsMachine) ReleaseOthers(t *rapid.T) {
	i := rapid.IntRange(0, 5).Draw(t, "network")
	keep, ok := s.told[network(i)]
	if !ok {
		keep = rapid.IntRange(1, 6).Draw(t, "keep")
	}
	s.inject(t)
	_, err := s.a.ReleaseOthers(context.Background(), network(i), keep)
	// the kept reservation is as pending as it was
	wasPending := s.pending[network(i)]
	if s.settle(t, network(i), err) {
		s.pending[network(i)] = wasPending && len(s.a.Index().Reservations(network(i))) > 0
		if !ok {
			delete(s.told, network(i))
		}
	}
}

// Check: every record is in the index (nothing recorded looks free); the
// index holds more than the records only for networks whose last call
// failed; a network holds at most one ID; what a network was told is
// recorded for it; and the counts are those of the index's holders.
func (s *faultsMachine) Check(t *rapid.T) {
	recorded := map[vlanalloc.NetworkRef][]vlanalloc.Reservation{}
	for _, r := range s.store.Records(provider) {
		recorded[r.Network] = append(recorded[r.Network], r)
	}
	used := 0
	for i := range 6 {
		n := network(i)
		inIndex := s.a.Index().Reservations(n)
		used += len(inIndex)
		if len(inIndex) > 1 || len(recorded[n]) > 1 {
			t.Fatalf("%s holds more than one ID: index %v, records %v", n, inIndex, recorded[n])
		}
		if len(recorded[n]) == 1 && (len(inIndex) == 0 || inIndex[0] != recorded[n][0]) {
			t.Fatalf("%s: the record %v is missing from the index %v", n, recorded[n][0], inIndex)
		}
		if !s.pending[n] && len(inIndex) != len(recorded[n]) {
			t.Fatalf("%s: index %v, records %v after a call that succeeded", n, inIndex, recorded[n])
		}
		if vid, ok := s.told[n]; ok && !s.pending[n] && (len(recorded[n]) == 0 || recorded[n][0].VID != vid) {
			t.Fatalf("%s was told %d, records %v", n, vid, recorded[n])
		}
	}
	if c := s.a.Index().Counts(); c.Allocated != used || c.Free != c.Total-used {
		t.Fatalf("counts %+v, the index holds %d IDs", c, used)
	}
}

func TestAllocatorFaultsStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		size := rapid.IntRange(1, 6).Draw(t, "size")
		z, err := vlanalloc.NewZone(vlanalloc.ZoneSpec{Name: "z", ProviderNetwork: provider, Ranges: []string{fmt.Sprintf("1-%d", size)}})
		if err != nil {
			t.Fatal(err)
		}
		store := vlanalloctest.NewReserver()
		s := &faultsMachine{store: store, a: vlanalloc.NewAllocator(vlanalloc.NewIndex(z, nil, nil), store),
			told: map[vlanalloc.NetworkRef]int{}, pending: map[vlanalloc.NetworkRef]bool{}}
		t.Repeat(map[string]func(*rapid.T){
			"allocate":      s.Allocate,
			"release":       s.Release,
			"releaseOthers": s.ReleaseOthers,
			"":              s.Check,
		})
	})
}
