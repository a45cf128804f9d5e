// Package vlanalloc decides which 802.1Q ID (1-4094) a Proxmox-backed VPC
// subnet gets from its ProxmoxNetworkZone, and when the ID counts as used.
// It imports only the standard library: the zone, the network and the
// observed objects are plain values (ZoneSpec, NetworkRef, Vlan,
// Reservation), and package kubestore converts the Kubernetes objects.
//
// A Zone is a ZoneSpec parsed once: its ranges minus reserved IDs, its
// static assignments and which namespaces it admits. An Index is the zone's
// allocation state, rebuilt on start from the observed Kube-OVN Vlans and
// reservations (NewIndex) and then kept current by Observe and Forget calls.
// "Used" means every Vlan on the zone's provider network, foreign ones
// included, every reservation and every static assignment. Allocate adopts
// the network's existing Vlan, returns its reservation or static ID, or
// hands out the lowest free ID, so a retry after a crash picks the same ID.
// It costs O(1) amortized: it never parses ranges or lists objects.
//
// The Index alone is pure and trusts what it was told. Allocator decorates it
// with a Reserver, a shared record that accepts only one network per
// (provider network, ID): two replicas with stale caches may pick the same
// ID, but only one reservation succeeds, and the other learns the holder and
// moves on. Package kubestore implements the Reserver with
// ProxmoxVLANClaim objects whose names the API server keeps unique;
// vlanalloctest has an in-memory one.
//
// Errors wrap one of ErrInvalidRange, ErrInvalidZone, ErrExhausted,
// ErrNamespaceNotAllowed, ErrConflict, ErrProviderMismatch, ErrUnusableVlan
// or ErrTaken, which a caller maps to its own condition reasons with
// errors.Is; range errors read exactly `vlan range "<r>": <n> is outside
// 1-4094`, `vlan range "<r>": "<x>" is not a number` or
// `vlan range "<r>" ends before it starts`.
//
// The package does no I/O itself, never blocks on anything but its own
// mutex, and never revokes an ID a network holds: when ranges shrink, the ID
// is reported by Stranded and kept.
package vlanalloc
