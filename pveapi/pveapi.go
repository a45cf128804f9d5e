// Package pveapi is the one Proxmox VE API client interface of this module:
// the four calls that pveacl's live reader and applier and talostemplate's
// template creation and guest listing make. go-proxmox's *proxmox.Client
// satisfies it; tests pass the same client pointed at pveapi/pveapitest.
// RedactURL keeps a password written into an API URL out of every message.
//
// The package imports only the standard library.
package pveapi

import (
	"context"
	"strings"
)

// Client sends requests relative to the API base URL (which ends in
// /api2/json), decodes answers from PVE's {"data": ...} envelope into v, and
// returns PVE's errors (as go-proxmox's *proxmox.APIError).
type Client interface {
	Get(ctx context.Context, path string, v any) error
	Post(ctx context.Context, path string, data, v any) error
	Put(ctx context.Context, path string, data, v any) error
	Delete(ctx context.Context, path string, v any) error
}

// RedactURL hides the user information of a URL an operator wrote
// (a flag, a Secret's url key) ("https://user:pass@host" becomes "https://REDACTED@host"), even
// when the rest does not parse, so that no message repeats a password.
func RedactURL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		scheme, rest = "", raw
	}
	host, path, _ := strings.Cut(rest, "/")
	if i := strings.LastIndex(host, "@"); i >= 0 {
		host = "REDACTED" + host[i:]
	}
	out := host
	if path != "" || strings.Contains(rest, "/") {
		out += "/" + path
	}
	if ok {
		out = scheme + "://" + out
	}
	return out
}
