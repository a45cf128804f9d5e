// Package testenv holds the environments of the project's tests that start
// real processes, and what they share. This package starts a real
// kube-apiserver and etcd through envtest with the CRDs a test needs
// (StartAPIServer), finds the binaries hack/*-assets.sh build into the
// cache folder, pins the versions of every upstream component those scripts
// build (versions.go, which they read), and finds this repository's root
// and the CRDs of upstream modules.
//
// Its subpackages are the environments: capi (the real Cluster API, IPAM,
// capmox and CABPT managers), kubeovn (Kube-OVN's own controller and
// webhook on real OVN databases), ovnlab (a real OVN data plane), pvelab
// (the lab's Proxmox VE: the API fake with nodes and VMs that boot) and
// lab (a whole tenant on the real providers), with pki (a throwaway
// certificate authority) as a building block. The in-memory fakes, which
// start nothing, live under internal/fake.
//
// StartAPIServer never downloads binaries and never skips: when
// kube-apiserver or etcd is missing it fails the test and says how to build
// them. CRDs shipped inside Go modules come from the module cache (`go mod
// download` fetches them through the module proxy when absent).
package testenv
