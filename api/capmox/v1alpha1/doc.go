// Package v1alpha1 mirrors the capmox v0.7.x API (infrastructure.cluster.x-k8s.io/v1alpha1):
// the ProxmoxCluster, ProxmoxMachineTemplate and ProxmoxMachine fields that
// pxsubstrate renders or reads, with the upstream JSON names.
package v1alpha1
