// Package ovngateway turns the logical router port of a Proxmox-backed
// Kube-OVN subnet into a distributed gateway port, by giving it an OVN
// HA_Chassis_Group of the Nodes that carry the VLAN trunk.
//
// Kube-OVN's OVN drops ARP and ND that arrive from a localnet port for the
// addresses of a router port that has neither gateway_chassis nor
// ha_chassis_group, so a VM outside the cluster never resolves its gateway.
// A group on the port removes the drop and makes one chassis answer.
//
// # Contract
//
//   - Rank orders a chassis set (package kubegateway picks it from Nodes) with
//     rendezvous hashing keyed on the VPC ("vpc/<vpc>") and assigns
//     priorities from max(100, 10·n) down in steps of 10. It is pure.
//   - Client.Reconcile makes the port named in a Gateway use the group
//     "px-<port>" tagged owner=proxmox-network and network=<ns>/<name>, with
//     exactly the wanted HA_Chassis rows. It reads only from a monitored
//     cache; a network that is already right costs no transaction and a
//     change is written in one, whose operation results are checked.
//     Concurrent calls share transactions (up to BatchSize writes each),
//     and each call gets the result of its own operations.
//   - Client.ReconcileAll does the same for many networks, with the writes
//     of up to BatchSize networks in one transaction.
//   - Client.Release deletes a network's own group and clears the ports that
//     point at it; Client.Collect does so for every owned group whose
//     network is gone.
//   - New connects in the background, only to the RAFT leader of a
//     clustered NB, and reconnects with backoff; while it is disconnected
//     every pass fails fast with ErrNBUnavailable.
//   - RequeueAfter says when to pass again; package kubegateway maps
//     outcomes and errors to the GatewayReady condition (Condition, Grace).
//
// # What it never does
//
// It writes only three things: the groups it owns, their HA_Chassis rows,
// and the ha_chassis_group column of a router port that has neither a group
// nor gateway_chassis, guarded by an OVSDB wait in the same transaction. A
// group of another owner or another network, a port with gateway_chassis, a
// port that already uses another group, and groups without the owner tag
// (outside adoption of the network's own name) are left alone. It never
// creates or deletes router ports, never talks to Kubernetes (it imports
// only libovsdb and the standard library), never trusts a server
// certificate it did not verify, and never logs.
package ovngateway
