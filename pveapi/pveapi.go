// Package pveapi is the one Proxmox VE API client of this module: the
// Client interface (the four calls that pveacl's live reader and applier,
// pvesdn and talostemplate make), and New, the one constructor of every
// client the module's commands and controller build: TLS verified, no
// redirect followed to another scheme or host, a timeout on every request,
// a cap on every answer (MaxResponseBytes), and token ids and URLs shown
// redacted (RedactTokenID, RedactURL). WaitTask follows a PVE task to its
// end through any Client.
//
// go-proxmox's *proxmox.Client satisfies Client; tests pass the same
// client pointed at pveapi/pveapitest. Besides the standard library the
// package imports go-proxmox and pveacl's identifier grammar; nothing
// under pveacl imports it back.
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
