// Package reconcilers assembles what the proxmox-network controller
// reconciles with, in one place, for the daemon (internal/controller, on
// the replica holding the Lease) and the simulator (internal/sim) alike: the
// network controller on a client whose writes reach its cache at once, its
// OVN gateway (kubenetgateway) with the router ports and reconnects the NB
// client reports, the networks to reconcile again on a Node change, pool
// HA over Machines and the VPC address runner over IPAddressClaims (each
// built when the API server serves its kind), and one events.k8s.io
// recorder adapted once (engine.EventsRecorder) for all of them.
//
// # Contract
//
// New builds a Set and starts nothing. The caller brings what the API holds
// to it: the daemon through its informers (network.Watch over Watched, to
// the Set as the target, and NodeChanged from the Node informer), the
// simulator from every write of its world. The daemon then runs the Set
// (Load, Run); the simulator drives it on its fake clock (Load, Resync,
// Drain, NextDue), which handles the NB client's reports too, so that both
// exercise the same wiring.
//
// # What it never does
//
// It never starts a goroutine before Run, never dials the OVN NB (the
// caller builds its client, with NBEvents' methods as the callbacks) and
// never decides which kinds the API server serves otherwise than by asking
// the client's RESTMapper.
package reconcilers
