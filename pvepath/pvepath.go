// Package pvepath builds Proxmox VE API paths: the one place a path is
// built from values the code did not write. It imports only the standard
// library, so that pveapi (whose Path is this one) and pveacl/liveacl
// (which may not import pveapi) share it.
package pvepath

import (
	"net/url"
	"strings"
)

// Path is the API path of segments, relative to the base URL (which ends
// in /api2/json): "/" followed by the segments joined with "/", each
// escaped as one path segment. Every path this module builds from a value
// it did not write (a node, storage, volume, user, VMID or UPID from an
// API answer or from its input) is built here, so that no such value can
// name another path: a '/' in it is sent as %2F, and a segment that is
// "." or ".." as %2E or %2E%2E (url.PathEscape leaves dots alone, and a
// proxy in front of the API resolves them). An empty segment stays empty
// ("/nodes//storage"), which names no method. A query is appended by the
// caller: Path("nodes", n, "storage") + "?" + url.Values{...}.Encode().
//
//	Path("nodes", "pve1", "qemu", "9000")  // /nodes/pve1/qemu/9000
//	Path("nodes", "pve1/../access")        // /nodes/pve1%2F..%2Faccess
//	Path("nodes", "..", "storage")         // /nodes/%2E%2E/storage
func Path(segments ...string) string {
	var b strings.Builder
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(Segment(s))
	}
	return b.String()
}

// Segment escapes one path segment as Path does.
func Segment(s string) string {
	switch s {
	case ".":
		return "%2E"
	case "..":
		return "%2E%2E"
	}
	return url.PathEscape(s)
}
