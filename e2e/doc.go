// Package e2e runs the proxmox-network-controller binary, built with go
// build, as separate processes against a real kube-apiserver (envtest, with
// the Kube-OVN, capmox, in-cluster IPAM, Cluster API and proxmox.cozystack.io
// CRDs and the RBAC of config/) and a real ovsdb-server with the OVN
// northbound schema.
//
// Kube-OVN itself does not run: the tests play its part through
// controllertest.KubeOVN (listing and pruning subnets on their Vlan,
// reporting Subnets Ready, creating each subnet's logical router port in
// the NB and removing it with the Subnet), and the in-cluster IPAM
// provider's pool finalizer.
//
// The TestFault tests (fault_test.go, Linux only) do to these real
// components what production does to them: TestFaultLeaderKill kills the
// leader of two replicas with SIGKILL during the converge of a zone and
// compares the end state with a fault-free run's; TestFaultAPIServer stops
// etcd and restarts the kube-apiserver during one. A sampler
// (sampler_test.go) reads every VLAN holder every 150 ms meanwhile. The
// flags -fault-networks, -fault-kills and -fault-etcd-down set the sweep:
// CI runs 256 networks, 5 kills and 10 s; docs/performance.md gives the
// full run's command and figures.
//
// The processes run as the manifests' ServiceAccount (impersonated through
// their kubeconfig), so every call they make must be granted by config/rbac.
package e2e
