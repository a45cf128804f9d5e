// Package capmox holds mirror types of the capmox (cluster-api-provider-proxmox)
// API group infrastructure.cluster.x-k8s.io: v1alpha1 as served by capmox
// v0.7.x and v1alpha2 as stored by capmox v0.8 and later. Only the fields that
// pxsubstrate renders or reads are mirrored; the JSON names match the upstream
// CRDs exactly. The packages hold plain data and never talk to a cluster.
//
// It also holds what the renderer, the proxmox-network controller and
// verify share on a tenant cluster's objects (names.go: the labels,
// annotations and hooks they write, select by and read back), and the NIC
// and template tag rules the renderer and admission share.
package capmox

// Group is the API group of every capmox kind.
const Group = "infrastructure.cluster.x-k8s.io"

// Kinds rendered or read by pxsubstrate.
const (
	KindProxmoxCluster         = "ProxmoxCluster"
	KindProxmoxMachineTemplate = "ProxmoxMachineTemplate"
	KindProxmoxMachine         = "ProxmoxMachine"
)

// IPAM pool reference values accepted by both capmox generations.
const (
	IPAMGroup           = "ipam.cluster.x-k8s.io"
	KindInClusterIPPool = "InClusterIPPool"
)

// AnnotationNet0Pool marks the ProxmoxMachines (through their template's
// metadata, which Cluster API copies onto each) of a capmox v0.8+ pool
// whose net0 sits on a Proxmox-backed VPC subnet. Its value is the
// subnet's InClusterIPPool in the machine's namespace. capmox v0.8 and
// later claim net0's address from the ProxmoxCluster's own pool, which in
// VPC mode is a sentinel that never hands one out; the proxmox-network
// controller gives such a claim an address of this pool instead.
const AnnotationNet0Pool = "proxmox.cozystack.io/net0-pool"
