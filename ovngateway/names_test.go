package ovngateway_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/ovngateway"
)

func TestParseNetworkID(t *testing.T) {
	cases := map[string]struct {
		id       string
		ns, name string
		ok       bool
	}{
		"Valid":      {id: "tenant-a/net1", ns: "tenant-a", name: "net1", ok: true},
		"NoSlash":    {id: "net1"},
		"Empty":      {id: ""},
		"NoName":     {id: "tenant-a/"},
		"NoNS":       {id: "/net1"},
		"TwoSlashes": {id: "a/b/c"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ns, n, err := ovngateway.ParseNetworkID(tc.id)
			if tc.ok != (err == nil) || ns != tc.ns || n != tc.name {
				t.Errorf("ParseNetworkID(%q) = %q, %q, %v", tc.id, ns, n, err)
			}
			if err != nil && !errors.Is(err, ovngateway.ErrInvalid) {
				t.Errorf("error %v is not ErrInvalid", err)
			}
		})
	}
}

// FuzzParseNetworkID: an accepted tag is exactly "<namespace>/<name>" of
// its parts, and both parts are non-empty without '/'; a Network with those
// parts gives the same tag back.
func FuzzParseNetworkID(f *testing.F) {
	for _, s := range []string{"tenant-a/net1", "", "/", "a//b", "a/b/c", "ns/ünïcode"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		ns, name, err := ovngateway.ParseNetworkID(id)
		if err != nil {
			if !errors.Is(err, ovngateway.ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		if ns == "" || name == "" || strings.Contains(ns, "/") || strings.Contains(name, "/") {
			t.Fatalf("ParseNetworkID(%q) accepted parts %q, %q", id, ns, name)
		}
		if got := (ovngateway.Network{Namespace: ns, Name: name}).ID(); got != id {
			t.Fatalf("round trip: %q became %q", id, got)
		}
	})
}
