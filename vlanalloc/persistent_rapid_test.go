package vlanalloc_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
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
	told     map[v1alpha1.NetworkReference]int
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
	owner := map[int]v1alpha1.NetworkReference{}
	recorded := map[int]v1alpha1.NetworkReference{}
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
		s := &replicasMachine{zone: z, store: vlanalloctest.NewReserver(), told: map[v1alpha1.NetworkReference]int{}}
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
