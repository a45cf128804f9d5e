// Package pvefake is the Proxmox VE API fake, the API's test server beside
// the client (pveapi): for tests of pveacl, talostemplate and any code that
// talks to Proxmox VE through go-proxmox, and for programs that need a
// Proxmox VE without one (the demo, the lab). It is an httptest server
// that speaks /api2/json with PVE's envelopes ({"data": ...}), status
// codes and error texts, and keeps real state.
//
// Its old import path, pveapi/pveapitest, still works: that package names
// this one's types, constants and functions.
//
// The access-control state is a pveacl.Config (users, API tokens with their
// secrets, groups, roles, ACLs, pools with members); next to it sit tables of
// nodes, storages, volumes, guests and tasks. Every request authenticates with
// an "Authorization: PVEAPIToken=USER@REALM!TOKEN=SECRET" header parsed the
// way pve-http-server and PVE::AccessControl::verify_token do, and every
// handler checks permissions with pveacl's Evaluator, so a token that lacks a
// privilege gets PVE's 403 "Permission check failed (<path>, <priv>)".
// Mutations that PVE runs as workers (create, clone, template, resize,
// destroy, download-url, async config) return a UPID and leave a task with a
// status, an exit status and log lines behind.
//
// go-proxmox (github.com/luthermonson/go-proxmox) works against it unchanged:
// pass Server.URL, which ends in /api2/json, to proxmox.NewClient, or take a
// ready client from Server.Client (root) or Server.TokenClient. NewServer
// starts a server for a test and stops it on cleanup; New starts one for a
// program (a demo, a simulation) that closes it itself.
//
// HA resources, groups (PVE 8) and rules (PVE 9) are served as
// pve-ha-manager serves them, a destroy of an HA resource is refused as
// qemu-server refuses it, and SetNodeOnline takes a node out of the
// cluster: its guests stop and, after WithHAFenceDelay, its HA services are
// recovered to other nodes as the HA manager picks them.
//
// PCI resource mappings (/cluster/mapping/pci, mapping/pci.cfg) are served
// as pve-manager serves them over pve-guest-common's PVE::Mapping::PCI, and
// AddPCIMapping seeds them. A guest's hostpciN option is checked on create,
// update and clone as qemu-server checks it: a host device is root@pam's
// alone (not its token's), a mapped one needs Mapping.Use on
// /mapping/pci/<id>. A start takes the guest's devices as vm_start does:
// an item of the mapping for the guest's node, of several the first no
// other running guest holds, and fails as qemu-server fails when the node
// has none or another guest holds the device, or when a PCI Express
// device (pcie=1) sits on a machine that is not q35; a stop, a shutdown or the
// loss of the node frees them. VMPCIDevices reads what a guest holds. The
// server has no hardware: every device exists and matches its mapping.
//
// Faults can be injected per method and path (InjectError), as latency
// (WithLatency) and as failing tasks (FailNextTask). Requests are counted, so
// a test can assert that a second idempotent run sent no mutating request.
//
// The server never talks to the network except for download-url, which
// fetches the given URL with the server's downloader (by default an HTTP GET
// that tests point at another httptest server). Volumes are records with a
// size and a format; only uploaded files keep their bytes (VolumeData). It
// does not implement ticket (password) logins, LXC (its container index
// answers as a node without containers), snapshots, migration, or directory
// and USB mappings; those paths answer 501 "Method '... ' not implemented"
// as PVE does for unknown paths (Server.Unserved lists them).
package pvefake
