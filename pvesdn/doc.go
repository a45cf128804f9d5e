// Package pvesdn checks and manages the Proxmox VE side of a VLAN zone.
//
// Check (Phase 0) reads, with audit privileges only, every node's network
// configuration and the cluster's SDN configuration, and reports by name
// what would drop a zone VLAN: the bridge missing or not VLAN-aware, VLANs
// outside its bridge-vids, an MTU below the zone's, a VLAN already used by
// an SDN VNet or another VLAN interface, a node that cannot be read. Its
// Report gives the VLANs every node can carry, which is what an allocator
// may hand out; WithLastKnown keeps an unreachable node's last view,
// marked stale.
//
// PlanVNets, Apply and Audit (Phase 2) move a zone to one Proxmox SDN VNet
// per VLAN in a VLAN zone on the bridge, so that each tenant is granted
// exactly its VNets: a deterministic plan, one apply per plan (through the
// SDN lock and dry-run on PVE 9.2, plainly with the risk named before), the
// nodes' reload results read back, and the drift named.
//
// The package talks to Proxmox VE through go-proxmox's client and never
// imports the project's Kubernetes wiring. See docs/pvesdn.md.
package pvesdn
