package network

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// freshVlans remembers when this process created each Vlan, for
// FreshVLANHold: the passes over a network right after its Vlan was created
// (requeued by the controller's own writes, before Kube-OVN can answer)
// hold the network's status while the Subnet is not Ready, and a Ready
// status until the namespace runner's next annotation write lists it. The
// memory is this process's only: after a restart nothing is fresh, and a
// status is written as it stands, which is always safe.
type freshVlans struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	at    map[string]time.Time
	// swept is the number of entries the last sweep left.
	swept int
}

// created records that the Vlan name was created now.
func (f *freshVlans) created(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.clock.Now()
	if len(f.at) > 2*f.swept+64 {
		// Entries of networks never looked at again (deleted at once)
		// would stay; dropping the expired ones when the map has doubled
		// keeps it as large as the Vlans of the last FreshVLANHold.
		for k, t := range f.at {
			if now.Sub(t) >= FreshVLANHold {
				delete(f.at, k)
			}
		}
		f.swept = len(f.at)
	}
	f.at[name] = now
}

// hold returns how much longer a status waiting for Kube-OVN to report on
// the Vlan name should be held: 0 once FreshVLANHold has passed since the
// Vlan was created, or when this process did not create it.
func (f *freshVlans) hold(name string) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.at[name]
	if !ok {
		return 0
	}
	if left := FreshVLANHold - f.clock.Now().Sub(t); left > 0 {
		return left
	}
	delete(f.at, name)
	return 0
}
