// Package controllertest holds what the controller's tests and the
// end-to-end tests share: a kube-apiserver with every CRD the controller
// reads (Kube-OVN, capmox, in-cluster IPAM, Cluster API, ours), a small PKI
// for TLS, the objects of a cluster with Proxmox-backed networks, and
// KubeOVN, which plays the parts of Kube-OVN the controller depends on
// while Kube-OVN itself does not run: it lists subnets on their Vlan,
// reports them Ready, prunes deleted ones, and creates and deletes each
// subnet's logical router port in a real OVN northbound database.
//
// It is test support: it never talks to a server it did not start.
package controllertest
