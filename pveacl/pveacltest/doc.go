// Package pveacltest starts an in-memory Proxmox VE API for tests of code
// that talks to Proxmox VE through go-proxmox, such as pveacl's live reader
// and applier.
//
// The server speaks /api2/json with PVE's envelopes, status codes and error
// texts, keeps real state (users, tokens, groups, roles, ACLs, pools,
// guests, storages, tasks) and checks every request's permissions with
// pveacl's own evaluator, so a token that lacks a privilege gets PVE's 403.
// NewServer registers its shutdown with t.Cleanup.
//
// It never reaches the network, except for download-url requests, which
// fetch the given URL. It is not a Proxmox VE: tickets (password logins),
// containers, snapshots, migration and HA are not implemented and answer
// 501 like an unknown PVE path.
package pveacltest
