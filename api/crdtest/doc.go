// Package crdtest holds no code, only tests: against a real kube-apiserver
// they prove that the Kube-OVN and InClusterIPPool mirrors read back
// unchanged through the upstream CRDs (no field pruned or renamed), that the
// Cluster API IPAM types work with the CRD version they target, and that the
// generated proxmox.cozystack.io CRDs enforce their validation rules.
package crdtest
