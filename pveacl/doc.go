// Package pveacl isolates tenants on a Proxmox VE cluster and proves it,
// with Proxmox VE's own permission semantics.
//
// It models the access-control state (users, tokens, groups, pools, roles,
// ACL entries: the content of /etc/pve/user.cfg), parses and writes
// user.cfg exactly as PVE does (ParseUserCfg, MarshalUserCfg), and computes
// effective permissions the way PVE::AccessControl::roles and
// PVE::RPCEnvironment::permissions do (Evaluator): the role walk where a
// token's entries beat the user's and the user's beat its groups' at each
// level, propagation, NoAccess, pool roles on member VMs and storages,
// privilege-separated tokens intersected with their user, root@pam, and the
// privilege tables of PVE 8 and PVE 9.
//
// The packages below build on this model: tenantplan plans the isolation
// of a set of tenants and simulates the plan, liveacl reads a live cluster
// and applies a plan through its API, and audit proves the isolation.
//
// The state comes in as plain values: ParseUserCfg for a file, or
// liveacl.Read for a live cluster. This package does no I/O, never logs,
// never holds a token secret, and imports no Kubernetes package.
package pveacl
