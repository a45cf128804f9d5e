// Package pveapi is the one Proxmox VE API client interface of this module:
// the four calls that pveacl's live reader and applier and talostemplate's
// template creation and guest listing make. go-proxmox's *proxmox.Client
// satisfies it; tests pass the same client pointed at pveacl/pveacltest.
//
// The package imports only the standard library.
package pveapi

import "context"

// Client sends requests relative to the API base URL (which ends in
// /api2/json), decodes answers from PVE's {"data": ...} envelope into v, and
// returns PVE's errors (as go-proxmox's *proxmox.APIError).
type Client interface {
	Get(ctx context.Context, path string, v any) error
	Post(ctx context.Context, path string, data, v any) error
	Put(ctx context.Context, path string, data, v any) error
	Delete(ctx context.Context, path string, v any) error
}
