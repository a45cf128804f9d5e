// Package sim runs the network controller (package network) on a simulated
// cluster: an in-memory Kubernetes API (or any API given as Options.Store),
// a fake clock, and a World that plays Kube-OVN (Vlan status.subnets and
// conflicts, subnet readiness) and the in-cluster IPAM provider (its
// ProtectPool finalizer). Harness starts, restarts (dropping every byte of
// controller memory), converges and advances time; Scenario is the YAML
// script of `pxsubstrate sim` (docs/sim.md); CheckInvariants judges the
// world at rest; Zone, Network, IPAddress and Machine build the objects the
// platform writes.
//
// Every write, the world's and the controller's, reaches the controller's
// cache at once, as an informer without lag would deliver it; tests that
// need stale caches build controllers on network.Feed themselves.
//
// The package never talks to a real cluster unless given one, never sleeps
// on the wall clock, and never changes objects behind the controller's back
// beyond what the world's actors do.
package sim
