// Package network is the lifecycle of Proxmox-backed VPC subnets: the
// reconcilers of ProxmoxNetwork and ProxmoxNetworkZone, built on engine,
// vlanalloc and its API-enforced claims.
//
// # What a network gets
//
// A live ProxmoxNetwork gets the Kube-OVN Vlan named after its subnet, with
// the zone's provider network, the zone and network labels and the network
// finalizer. Its ID is the zone's lowest free one, reserved first as a
// ProxmoxVLANClaim whose name the API server keeps unique, so two
// controllers with stale caches never hand out one ID twice; an existing
// Vlan of that name is adopted with its ID (VLANAllocated Allocated,
// ZoneExhausted, NamespaceCapReached, ZoneNotFound, NamespaceNotAllowed, VLANConflict,
// VLANProviderMismatch). The subnet bound to that Vlan gets the finalizer
// too (SubnetReady), the pool is checked against the subnet's CIDR and
// excludeIps and counted from its IPAddresses (IPPoolReady,
// PoolOverlapsSubnet, PoolExhausted, status ipPool), a Gateway reports
// GatewayReady, and Ready sums them up. The namespace annotation
// proxmox.cozystack.io/networks lists the namespace's networks that hold a
// VLAN, draining ones included, and is written before Ready is.
//
// # Delete lifecycle
//
// A deleted network is held (Ready=False/InUse) while its pool has an
// address or a ProxmoxMachine of either capmox version, Terminating or
// not, has a NIC on it. Then the finalizer leaves the Subnet
// (SubnetDeleting), the gateway is released (GatewayReleasePending), and
// the controller waits for Kube-OVN to prune the subnet from
// Vlan.status.subnets (SwitchDeleting, SwitchDeleted=False/ListedOnVlan) for
// at most the prune timeout, timed per subnet in the Vlan annotation
// proxmox.cozystack.io/deleted-subnets. Then the Vlan is deleted, the claim
// released, and the network's finalizer removed. A zone collects the Vlans
// and claims of networks that vanished otherwise and counts them as
// orphaned while it waits.
//
// # Events
//
// With Config.Recorder set (an engine.Recorder: a process's one
// engine.EventsRecorder, which gives each reason its EventActions action),
// a network gets an events.k8s.io Event for each transition, never for a pass that changes nothing: VLANAllocated or
// VLANAdopted, ZoneExhausted or NamespaceCapReached (Warning) while it
// waits for a VLAN,
// DeletionHeld (Warning) while its delete is held, then GatewayReleased,
// SubnetPruneTimeout (Warning) and VLANReleased. The network's status says
// what changed; the controller also remembers what it announced, so a pass
// on a stale copy of the network or after a failed status write repeats
// nothing.
//
// # Cache
//
// Counting and searching (Vlans per provider network, addresses and
// machines per pool, networks per zone, namespace or subnet) go to a Cache
// fed by informers (Watch) or by the writing client itself (Feed), never to
// a list per reconcile: an allocation reads a constant number of objects
// from the API server however full the zone. The delete path and orphan
// collection confirm through the uncached API reader before they release
// anything.
//
// # What it never does
//
// It never changes the ID of an existing Vlan, never deletes a Vlan or a
// claim of a network that exists (or a Vlan without its labels), never
// writes a Kube-OVN object with a full update (patches only), never
// allocates for a network being deleted, and never talks to OVN itself:
// the Gateway interface does, and Disabled reports GatewayReady
// Unknown/Disabled, which Ready ignores.
package network
