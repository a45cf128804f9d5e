// Package pveapi is the one Proxmox VE API client interface of this module:
// the four calls that pveacl's live reader and applier and talostemplate's
// template creation and guest listing make. go-proxmox's *proxmox.Client
// satisfies it; tests pass the same client pointed at pveapi/pveapitest.
// Unescape is PVE's percent decoding, which pveacl's user.cfg reader and
// the fake's cookie reading share; SplitList is PVE's list splitting, which
// the user.cfg reader, the live reader and the fake's parameters share;
// RedactURL keeps a password written into an API URL out of every message.
//
// The package imports only the standard library.
package pveapi

import (
	"context"
	"encoding/hex"
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

// Unescape decodes %XX escapes and leaves every other byte, '+' included, as
// Perl's URI::Escape::uri_unescape does: PVE decodes user.cfg comments and
// cookie values this way. A '%' not followed by two hex digits stays.
func Unescape(s string) string {
	if strings.IndexByte(s, '%') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, err := hex.DecodeString(s[i+1 : i+3]); err == nil {
				b.WriteByte(v[0])
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// SplitList splits a list the way PVE's split_list does: when the text holds
// a NUL byte it is the only separator (trailing empty items dropped, as
// Perl's split does); otherwise commas, semicolons and whitespace all
// separate and empty items vanish.
func SplitList(s string) []string {
	if strings.IndexByte(s, 0) >= 0 {
		items := strings.Split(s, "\x00")
		for len(items) > 0 && items[len(items)-1] == "" {
			items = items[:len(items)-1]
		}
		return items
	}
	return strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(",; \t\n\v\f\r", r) })
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
