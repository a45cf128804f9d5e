package pveapi_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/pveapi"
)

func TestEndpoint(t *testing.T) {
	cases := map[string]struct {
		reason string
		in     string
		want   string
		err    bool
	}{
		"Bare":     {reason: "the node address gets /api2/json", in: "https://pve:8006", want: "https://pve:8006/api2/json"},
		"Slash":    {reason: "a trailing slash is fine", in: "https://pve:8006/", want: "https://pve:8006/api2/json"},
		"HasAPI":   {reason: "/api2/json is accepted, not doubled", in: "https://pve:8006/api2/json", want: "https://pve:8006/api2/json"},
		"HasAPI2":  {reason: "with a trailing slash too", in: "https://pve:8006/api2/json/", want: "https://pve:8006/api2/json"},
		"OtherDir": {reason: "another path is a mistake", in: "https://pve:8006/pve", err: true},
		"NoScheme": {reason: "a scheme is needed", in: "pve:8006", err: true},
		"Query":    {reason: "queries are mistakes", in: "https://pve:8006?x=1", err: true},
		"UserInfo": {reason: "credentials do not belong in the URL", in: "https://root:pw@pve:8006", err: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := pveapi.Config{URL: tc.in}.Endpoint()
			if got != tc.want || (err != nil) != tc.err {
				t.Errorf("%s: Endpoint(%q) = %q, %v", tc.reason, tc.in, got, err)
			}
		})
	}
}

func FuzzEndpoint(f *testing.F) {
	for _, s := range []string{"https://pve:8006", "https://pve:8006/api2/json", "http://[::1]:8006/", "https://pve/api2/json/api2/json", "ftp://x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := pveapi.Config{URL: raw}.Endpoint()
		if err != nil {
			return
		}
		u, perr := url.Parse(got)
		if perr != nil || u.Path != "/api2/json" || strings.Count(got, "/api2/json") != 1 {
			t.Fatalf("Endpoint(%q) = %q: not one /api2/json path", raw, got)
		}
		if again, err := (pveapi.Config{URL: got}).Endpoint(); err != nil || again != got {
			t.Fatalf("Endpoint is not idempotent on %q: %q, %v", got, again, err)
		}
	})
}
