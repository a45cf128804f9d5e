// Package pveha keeps the worker VMs of a Cluster API pool under Proxmox VE
// HA and apart from each other: each worker VM is an HA resource
// ("vm:<vmid>", requested state started), and on Proxmox VE 9 one HA rule
// per pool (type resource-affinity, affinity negative) keeps the pool's
// VMs on different nodes, so that losing a node takes down no more than
// one worker of the pool, and HA recovers that one onto a node none of the
// others uses.
//
// Read takes the cluster's HA configuration (version, node count, HA
// resources and rules); Plan is pure and says what to create, change and
// remove for the pools it is given; Apply sends the plan; Release removes
// one VM's HA resource before the VM is destroyed (qemu-server refuses to
// destroy an HA-managed VM: "unable to remove VM 100 - used in HA
// resources and purge parameter not set.").
//
// What the package writes is marked as its own by the comment: HA
// resources get "pxsubstrate machine <namespace>/<name>" and rules
// "pxsubstrate pool <namespace>/<name>" with an id "pxs-" and twelve hex
// digits of the pool's name. Nothing else is changed, except by Release,
// which removes the HA resource of a VM that is about to be destroyed
// whoever made it.
//
// Proxmox VE 8 has HA groups, which pin services to nodes but cannot keep
// services apart; Plan refuses it by version (ErrUnsupported) and writes
// nothing there.
//
// The calls need, on "/", Sys.Audit (to read the version, the cluster
// status and the HA configuration) and Sys.Console (to change the HA
// configuration); pve-ha-manager checks no narrower path, so the token is
// a platform token of its own (pveacl's platform.ha), never a tenant's.
package pveha
