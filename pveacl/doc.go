// Package pveacl models the access control of a Proxmox VE cluster and
// computes effective permissions with Proxmox VE's own semantics.
//
// Config holds the access-control state (users, tokens, groups, pools,
// roles, ACL entries: the content of /etc/pve/user.cfg) and the guests and
// storages the cluster knows. Evaluator computes effective permissions the
// way PVE::AccessControl::roles and PVE::RPCEnvironment::permissions do:
// the role walk where a token's entries beat the user's and the user's beat
// its groups' at each level, propagation, NoAccess, pool roles on member
// VMs and storages, privilege-separated tokens intersected with their user,
// root@pam, and the privilege tables of PVE 8 and PVE 9. The identifier
// grammars (ParseUserID, ParseTokenID, NormalizePath, ...) are PVE's, with
// PVE's error texts.
//
// The packages below build on this model and each other, in this order:
// usercfg reads and writes user.cfg; tenantplan plans the isolation of a
// set of tenants and simulates the plan; audit proves the isolation;
// liveacl reads a live cluster and applies a plan through its API. This
// package does no I/O, never logs, never holds a token secret, and imports
// no Kubernetes package.
package pveacl
