// Package pveapi is the one Proxmox VE API client of this module: the
// Client interface (the four calls that pveacl's live reader and applier,
// pvesdn and talostemplate make), and New, the one constructor of every
// client the module's commands and controller build: TLS verified, no
// redirect followed to another scheme or host, a timeout on every request,
// a cap on every answer (MaxResponseBytes), and token ids and URLs shown
// redacted (RedactTokenID, RedactURL). WaitTask follows a PVE task to its
// end through any Client.
//
// ClusterResources is the one reading of GET /cluster/resources
// (ClusterResource), for pveacl's live reader, talostemplate and
// capmoxrender/verify.
//
// go-proxmox's *proxmox.Client satisfies Client; tests pass the same
// client pointed at the API fake (pvefake). Besides the standard library
// the package imports go-proxmox, pveacl's identifier grammar, termsafe
// (its messages cut what they echo) and pvepath (Path); of pveacl's
// packages only the live reader and applier (pveacl/liveacl) import it
// back, and the model (pveacl, pveacl/usercfg) never does.
package pveapi

import (
	"context"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/pvepath"
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

// Path is the API path of segments, relative to the base URL: "/" and the
// segments joined with "/", each escaped as one path segment, "." and ".."
// included (%2E, %2E%2E). Every path built from a value the code did not
// write (a node, storage, volume, user or UPID from an API answer or the
// input) is built by it, so that no such value can name another path:
//
//	Path("nodes", "pve1", "qemu", "9000")  // /nodes/pve1/qemu/9000
//	Path("nodes", "pve1/../access")        // /nodes/pve1%2F..%2Faccess
//	Path("nodes", "..", "storage")         // /nodes/%2E%2E/storage
//
// A query is appended by the caller. The implementation is
// pvepath's, which pveacl/liveacl (which may not import pveapi)
// uses directly.
func Path(segments ...string) string { return pvepath.Path(segments...) }
