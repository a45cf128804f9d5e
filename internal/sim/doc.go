// Package sim runs the network controller (package network) on a simulated
// cluster: an in-memory Kubernetes API (or any API given as Options.Store),
// a fake clock, and a World that plays Kube-OVN (Vlan status.subnets and
// conflicts, subnet readiness and, given an OVN northbound database as
// Options.NB, each VPC subnet's logical router port) and the in-cluster IPAM
// provider (its ProtectPool finalizer). Harness starts, restarts (dropping
// every byte of controller memory), converges and advances time; with a
// gateway (Options.Gateway) it also re-reconciles the networks whose trunk
// a Node change concerns, as the controller's Node watch does. Scenario is
// the YAML script of `pxsubstrate sim` (docs/sim.md); CheckInvariants judges
// the world at rest; Zone, Network, IPAddress, Machine and TrunkNode build
// the objects the platform writes.
//
// Every write, the world's and the controller's, reaches the controller's
// cache at once, as an informer without lag would deliver it; tests that
// need stale caches build controllers on network.Feed themselves.
//
// The package never talks to a real cluster or NB unless given one, never
// sleeps on the wall clock, and never changes objects or NB rows behind the
// controller's back beyond what the world's actors do. Without Options.NB
// and Options.Gateway it writes no NB row and watches no Node.
package sim
