package network

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// stamps keeps a time per key on a clock: when a zone's or namespace's
// status was last written (throttle), when a Vlan was created
// (freshVlans).
type stamps struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	at    map[string]time.Time
}

func newStamps(c clock.PassiveClock) stamps {
	return stamps{clock: c, at: map[string]time.Time{}}
}

// left returns how much of d is left since key's stamp: 0 when key has
// none or d has passed. Callers hold s.mu.
func (s *stamps) left(key string, d time.Duration) time.Duration {
	t, ok := s.at[key]
	if !ok {
		return 0
	}
	return max(d-s.clock.Now().Sub(t), 0)
}

// forget drops key.
func (s *stamps) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.at, key)
}

// throttle spaces the full passes over one key by at least interval (see
// Config.StatusInterval).
type throttle struct {
	stamps
	interval time.Duration
}

// wait returns how long a pass over key must wait, or 0 when it may run
// now, which it records.
func (t *throttle) wait(key string) time.Duration {
	if t.interval <= 0 {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if left := t.left(key, t.interval); left > 0 {
		return left
	}
	t.at[key] = t.clock.Now()
	return 0
}

// freshVlans remembers when this process created each Vlan, for
// FreshVLANHold: the passes over a network right after its Vlan was created
// (requeued by the controller's own writes, before Kube-OVN can answer)
// hold the network's status while the Subnet is not Ready, and a Ready
// status until the namespace runner's next annotation write lists it. The
// memory is this process's only: after a restart nothing is fresh, and a
// status is written as it stands, which is always safe.
type freshVlans struct {
	stamps
	// swept is the number of entries the last sweep left.
	swept int
}

// created records that the Vlan name was created now.
func (f *freshVlans) created(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.at) > 2*f.swept+64 {
		// Entries of networks never looked at again (deleted at once)
		// would stay; dropping the expired ones when the map has doubled
		// keeps it as large as the Vlans of the last FreshVLANHold.
		for k := range f.at {
			if f.left(k, FreshVLANHold) == 0 {
				delete(f.at, k)
			}
		}
		f.swept = len(f.at)
	}
	f.at[name] = f.clock.Now()
}

// hold returns how much longer a status waiting for Kube-OVN to report on
// the Vlan name should be held: 0 once FreshVLANHold has passed since the
// Vlan was created, or when this process did not create it.
func (f *freshVlans) hold(name string) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	left := f.left(name, FreshVLANHold)
	if left == 0 {
		delete(f.at, name)
	}
	return left
}
