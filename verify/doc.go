// Package verify checks that the workers of a Proxmox-backed tenant
// cluster were initialised by the Proxmox cloud-controller-manager and paired
// with their Cluster API Machines: each tenant Node's providerID equals its
// Machine's (proxmox://<SMBIOS UUID>), it carries
// topology.kubernetes.io/region and zone, and it no longer has the
// node.cloudprovider.kubernetes.io/uninitialized taint.
//
// Judge is pure; Collect reads Nodes and Machines through controller-runtime
// readers and never writes.
package verify
