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
// On top of that it plans the isolation of a set of tenants (Tenants, Plan,
// Change, RenderPveum): one pool, one dedicated storage, one user and
// privilege-separated CSI and CCM tokens per tenant, plus the platform's
// capmox credentials, as ordered idempotent steps; Apply plays the steps on
// a Config in memory the way the API would. Package audit proves that no
// tenant user or token holds any privilege on another tenant's objects, on
// objects in no pool or on shared storages.
//
// The state comes in as plain values: ParseUserCfg for a file, or
// package liveacl, which reads a live cluster through pveapi.Client and
// applies a plan there. This package decides and does no I/O, never logs,
// never holds a token secret in a Config, Change or Finding, and imports no
// Kubernetes package.
package pveacl
