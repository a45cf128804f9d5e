// Package v1alpha2 mirrors the capmox v0.8+ API (infrastructure.cluster.x-k8s.io/v1alpha2,
// the storage version from v0.8): the ProxmoxCluster, ProxmoxMachineTemplate
// and ProxmoxMachine fields that pxsubstrate renders or reads, with the
// upstream JSON names.
package v1alpha2
