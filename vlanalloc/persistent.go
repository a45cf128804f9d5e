package vlanalloc

import (
	"context"
	"errors"
	"fmt"
)

// Reserver records reservations somewhere every controller replica shares,
// and is the only judge of who holds an ID. An implementation must make the
// record atomic per (provider network, ID): of two concurrent Reserve calls
// for one ID by different networks, exactly one succeeds.
type Reserver interface {
	// Reserve records r on provider. It returns nil when r is recorded now
	// or was already recorded for r.Network, and an error wrapping ErrTaken
	// with a *TakenError naming the holder when another network holds r.VID.
	Reserve(ctx context.Context, provider string, r Reservation) error
	// Release deletes the record of r.VID on provider if it still belongs to
	// r.Network. Releasing a missing record is not an error.
	Release(ctx context.Context, provider string, r Reservation) error
}

// Allocator decorates an Index with a Reserver, so that an ID is handed out
// only once the shared record says so. Two allocators whose indexes are
// stale can each pick the same free ID; the Reserver lets one of them keep it
// and tells the other who holds it, which that allocator learns and then
// picks its next free ID. The Index itself stays pure.
type Allocator struct {
	index *Index
	store Reserver
}

// NewAllocator returns an Allocator over index and store.
func NewAllocator(index *Index, store Reserver) *Allocator {
	return &Allocator{index: index, store: store}
}

// Index returns the decorated index, for observing objects and counts.
func (a *Allocator) Index() *Index { return a.index }

// Allocate is Index.Allocate with the answer recorded by the Reserver before
// it is returned. On ErrTaken it learns the holder and tries again (a stale
// reservation of the network is dropped, a free ID skipped), at most once per
// ID of the zone. An ID the network must have (its Vlan's or its static one)
// that another network reserved is a *ConflictError. Any other error leaves
// the reservation in the index, because the Reserver may have recorded it
// before failing; the ID stays the network's until it allocates again (and
// gets the same ID) or is released.
func (a *Allocator) Allocate(ctx context.Context, claim Claim) (int, error) {
	provider := a.index.zone.provider
	for attempt := 0; attempt <= a.index.zone.allocatable.Len(); attempt++ {
		vid, src, err := a.pick(claim)
		if err != nil {
			return 0, err
		}
		r := Reservation{VID: vid, Zone: a.index.zone.name, Network: claim.Network, Vlan: claim.Vlan}
		err = a.store.Reserve(ctx, provider, r)
		if err == nil {
			return vid, nil
		}
		var taken *TakenError
		if !errors.As(err, &taken) {
			// The record may have been written before the answer was lost
			// (a timeout after commit), so the index keeps the reservation:
			// the network's next Allocate records the same ID again, and
			// Release deletes it if the network goes first.
			return 0, fmt.Errorf("cannot reserve VLAN %d for %s: %w", vid, claim.Network, err)
		}
		a.learn(vid, taken.Holder, claim)
		if src == fromVlan || src == fromStatic {
			cause := HeldElsewhere
			if src == fromStatic {
				cause = StaticInUse
			}
			return 0, fmt.Errorf("cannot allocate a VLAN for %s: %w", claim.Network,
				&ConflictError{VID: vid, Provider: provider, Network: claim.Network, Holder: holderName(taken.Holder), Cause: cause})
		}
	}
	return 0, fmt.Errorf("cannot allocate a VLAN for %s in zone %q: %w", claim.Network, a.index.zone.name, ErrExhausted)
}

func (a *Allocator) pick(claim Claim) (int, source, error) {
	a.index.mu.Lock()
	defer a.index.mu.Unlock()
	return a.index.allocate(claim)
}

// learn replaces the index's own record of vid with the holder the Reserver
// reported; a holder it could not read back stands in as an anonymous one.
func (a *Allocator) learn(vid int, holder Reservation, claim Claim) {
	a.index.mu.Lock()
	defer a.index.mu.Unlock()
	if r := a.index.resAt(vid); r != nil && r.Network == claim.Network {
		a.index.forgetReservation(vid)
	}
	holder.VID = vid
	if holder.Network.Name == "" {
		holder.Network = NetworkRef{Name: "(unknown holder)"}
	}
	a.index.observeReservation(holder)
}

func holderName(r Reservation) string {
	if r.Network.Name == "" {
		return "another network"
	}
	return "network " + r.Network.String()
}

// ReleaseOthers deletes every reservation of network except the one of
// keep, from the Reserver and then from the index. A network that holds its
// Vlan needs no other ID; extra reservations come from answers that were
// lost, or from two replicas that allocated for the same network at once.
// It returns how many it released.
func (a *Allocator) ReleaseOthers(ctx context.Context, network NetworkRef, keep int) (int, error) {
	provider := a.index.zone.provider
	released := 0
	for _, r := range a.index.Reservations(network) {
		if r.VID == keep {
			continue
		}
		if err := a.store.Release(ctx, provider, r); err != nil {
			return released, fmt.Errorf("cannot release VLAN %d of %s: %w", r.VID, network, err)
		}
		a.index.forget(r)
		released++
	}
	return released, nil
}

// Release deletes every reservation of network from the Reserver and then
// from the index. Call it only once the network's Vlan is gone: the Vlan
// keeps its ID used in the index either way, but another replica trusts the
// shared record alone.
func (a *Allocator) Release(ctx context.Context, network NetworkRef) error {
	provider := a.index.zone.provider
	for _, r := range a.index.Reservations(network) {
		if err := a.store.Release(ctx, provider, r); err != nil {
			return fmt.Errorf("cannot release VLAN %d of %s: %w", r.VID, network, err)
		}
		a.index.forget(r)
	}
	return nil
}
