// Package audit proves or disproves the isolation of tenants on a Proxmox
// VE cluster, with the permissions computed as Proxmox VE computes them
// (pveacl.Evaluator).
//
// Run checks every tenant user and every token of that user: each must
// hold no privilege on any object foreign to its tenant (other tenants'
// pools, guests and storages, objects in no pool, the shared storages).
// Objects that none of a subject's entries single out hold the same
// privileges, so the audit checks each singled-out object and one object
// of every remaining class, an id no object has yet standing in for an
// empty class; its cost grows with the number of tenants, not with the
// number of objects. PCI resource mappings are checked the same way: no
// Mapping.Use or Mapping.Modify on a mapping the tenant does not list (a
// never-named id stands for the mappings no entry names), no
// Mapping.Modify on its own, and Mapping.Use on each of its own for the
// token that clones its VMs. The Report also lists configurations that leak or
// are one step from leaking (a shared tenant storage, a propagating entry
// on a top-level path, a token without privilege separation, a tenant user
// in a group with entries, ...), each Finding with its Code, Severity and
// remedy.
package audit
