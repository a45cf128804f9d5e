// Package verify checks that the workers of a Proxmox-backed tenant
// cluster were initialised by the Proxmox cloud-controller-manager and paired
// with their Cluster API Machines: each tenant Node's providerID equals its
// Machine's (proxmox://<SMBIOS UUID>), it carries
// topology.kubernetes.io/region and zone, and it no longer has the
// node.cloudprovider.kubernetes.io/uninitialized taint. Before the Nodes it
// checks what keeps a cluster's workers out as a whole: the management
// cluster (the IPAM provider, the ProxmoxCluster, the control plane
// endpoint, the CCM and CSI controllers, the IP pool, the gateways of the
// namespace's networks, pool HA) and, given a Proxmox VE token, Proxmox
// (the HA resources the controller made, the VMs of the namespace's
// pools).
//
// # Contract
//
// Gather reads, once, everything the checks need into a Snapshot: the
// management cluster (every Machine and ProxmoxMachine of the namespace is
// listed once, the Machines in Target.CAPIVersion), the tenant cluster and
// Proxmox VE. Judge then judges the Snapshot with pure code: the same
// Snapshot gives the same Report, and a test builds one by hand. The
// labels, annotations and names verify reads are the ones the renderer
// writes (api/capmox).
//
// # What it never does
//
// It never writes, to Kubernetes or to Proxmox VE. Of a Secret it keeps the
// CCM's region alone, never a credential; text read from the APIs reaches
// a message only cut and escaped (termsafe).
package verify
