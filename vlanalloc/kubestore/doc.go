// Package kubestore keeps vlanalloc's shared record in the Kubernetes API:
// one cluster-scoped ProxmoxVLANClaim per (provider network, VLAN ID), named
// "<providerNetwork>.<vid>". The API server refuses a second object of one
// name, so of two controller replicas that both pick an ID from stale caches
// exactly one creates its claim; the other gets AlreadyExists, reads the
// holder and moves on. No lease, lock or cache freshness is assumed.
//
// The package also loads an Index from the API (Load), keeps it current from
// informers (VlanEvents, ClaimEvents), converts observed objects
// (ObservedVlan, ObservedClaim), and creates a network's Kube-OVN
// Vlan only under a claim it holds (BindVlan), which closes the second gap: a
// network whose two replicas reserved different IDs ends up with the Vlan
// one of them created, and the other claim is deleted.
//
// It works with any controller-runtime client.Client, the fake one included.
// Reads that decide ownership should go to the API server, not an informer
// cache: pass an uncached reader with WithReader. It never updates a claim,
// never changes the ID of an existing Vlan, and never deletes a Vlan.
package kubestore
