package pveapi_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/pveapi"
)

func ExampleRedactURL() {
	fmt.Println(pveapi.RedactURL("https://root:hunter2@pve1:8006/api2/json"))
	fmt.Println(pveapi.RedactURL("pve1:8006"))
	// Output:
	// https://REDACTED@pve1:8006/api2/json
	// pve1:8006
}

// FuzzRedactURL: the user information of an authority never survives.
func FuzzRedactURL(f *testing.F) {
	f.Add("https", "root", "hunter2", "pve:8006", "/api2/json")
	f.Add("", "u", "p@ss", "h", "")
	f.Fuzz(func(t *testing.T, scheme, user, pass, host, path string) {
		if len(pass) < 4 || strings.ContainsAny(pass+user, "/") || strings.ContainsAny(host, "@/") || strings.Contains(scheme, "://") ||
			strings.Contains(host+path+scheme, pass) || (path != "" && path[0] != '/') {
			return
		}
		raw := user + ":" + pass + "@" + host + path
		if scheme != "" {
			raw = scheme + "://" + raw
		}
		if got := pveapi.RedactURL(raw); strings.Contains(got, pass) {
			t.Errorf("pveapi.RedactURL(%q) = %q keeps the password", raw, got)
		}
	})
}
