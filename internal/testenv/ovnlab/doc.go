// Package ovnlab runs a real OVN data plane for tests: northbound and
// southbound ovsdb-servers, ovn-northd, and chassis that each have their own
// ovsdb-server, ovs-vswitchd on the userspace datapath (datapath_type=netdev)
// and ovn-controller, inside their own network namespace. A hypervisor
// bridge (an Open vSwitch bridge of its own, standing in for a Proxmox
// VLAN-aware bridge) carries the trunk to the chassis' provider bridges, and
// "VMs" are network namespaces whose NIC is an access port of that bridge
// with the subnet's VLAN tag, as a Proxmox VM NIC with tag=<vlan> is.
//
// A lab creates its own databases from Debian's schemas, or runs on
// databases someone else serves (Options.NB and SB), such as Kube-OVN's in
// internal/testenv/kubeovn: then the logical topology is that someone's, and
// Lab.PlugPort plugs a workload into a port it made.
//
// Everything a lab starts lives in one temporary directory (databases,
// sockets, pid files, logs) and in network namespaces named with a random
// prefix, so parallel test binaries never collide. Processes are started in
// the foreground, stopped by pid on cleanup, and a daemon that fails to
// start is named with the tail of its log. No address is ever configured
// outside the lab's namespaces, and the host's routing is never touched.
//
// The package needs root (network namespaces and veth pairs) and Debian's
// ovn-central, ovn-host, openvswitch-switch, iproute2, iputils-ping and ethtool;
// hack/test.sh installs the packages. A missing binary or
// capability fails the test with what to install; nothing is skipped.
package ovnlab
