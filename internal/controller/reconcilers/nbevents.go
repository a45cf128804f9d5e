package reconcilers

import "k8s.io/client-go/util/workqueue"

// NBEvents carries what the OVN northbound client reports to the Set,
// which is built after the client (its gateway needs it): a reconnect (a
// new RAFT leader, or a database rebuilt empty: every network, zone and
// namespace is reconciled again), and each router port that appears (the
// networks whose last pass found theirs missing are reconciled at once,
// rather than after network.RetryAfter). Give Reconnected and RouterPort to
// ovngateway.Config's OnReconnect and OnRouterPort; neither blocks. What
// arrives before the Set runs waits in NBEvents.
type NBEvents struct {
	reconnected chan struct{}
	ports       workqueue.TypedInterface[string]
}

// NewNBEvents returns NBEvents with nothing pending.
func NewNBEvents() *NBEvents {
	return &NBEvents{reconnected: make(chan struct{}, 1), ports: workqueue.NewTyped[string]()}
}

// Reconnected notes that the NB client connected again; reconnects that
// arrive while one is pending count once.
func (e *NBEvents) Reconnected() {
	select {
	case e.reconnected <- struct{}{}:
	default:
	}
}

// RouterPort notes that the router port name appeared.
func (e *NBEvents) RouterPort(name string) { e.ports.Add(name) }

// pending takes the reconnect and the router ports noted so far, without
// waiting.
func (e *NBEvents) pending() (reconnected bool, ports []string) {
	select {
	case <-e.reconnected:
		reconnected = true
	default:
	}
	for e.ports.Len() > 0 {
		name, _ := e.ports.Get()
		ports = append(ports, name)
		e.ports.Done(name)
	}
	return reconnected, ports
}
