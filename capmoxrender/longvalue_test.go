package capmoxrender_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
)

// TestLongValueIsCut: a 64 KiB value in a pool's field is refused in a
// short message that still names the field, and shows the value's start
// and how many bytes were left out, never the whole value.
func TestLongValueIsCut(t *testing.T) {
	base, err := os.ReadFile("testdata/scenarios/nodes-raw/input.yaml")
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 64<<10)
	cases := map[string]struct{ from, to, field string }{
		"InstanceType": {`instanceType: ""`, "instanceType: " + long, "instanceType"},
		"Kind":         {"kind: KubernetesNodes", "kind: " + long, "kind"},
		"APIVersion":   {"apiVersion: apps.cozystack.io/v1alpha1", "apiVersion: " + long, "apiVersion"},
		"Name":         {"name: k8s-e2e-md0", "name: k8s-e2e-" + long, "pool name"},
		"TemplateTag":  {"talos-v1.13.6]", "talos-v1." + long + "]", "proxmox.templateTags[3]"},
		"DNSServer":    {"dnsServers: [8.8.8.8,", "dnsServers: [" + long + ",", "proxmox.dnsServers[0]"},
		"UnknownKey":   {"  cluster: k8s-e2e\n", "  cluster: k8s-e2e\n  ? " + long + "\n  : 1\n", "unknown field spec.xxx"},
		"DiskSize":     {"  cluster: k8s-e2e\n", "  cluster: k8s-e2e\n  diskSize: 1" + long + "\n", "disk quantity"},
		"Ephemeral":    {"  cluster: k8s-e2e\n", "  cluster: k8s-e2e\n  ephemeralStorage: " + long + "\n", "ephemeralStorage"},
		"Version":      {"version: v1.35.2", "version: v" + long, "version"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := strings.Replace(string(base), tc.from, tc.to, 1)
			if in == string(base) {
				t.Fatalf("the edit %q did not apply", tc.from)
			}
			n, err := capmoxrender.ParseKubernetesNodes([]byte(in))
			if err == nil {
				_, err = capmoxrender.RenderNodes(context.Background(), n, capmoxrender.Options{})
			}
			if err == nil {
				t.Fatal("a 64 KiB value was accepted")
			}
			msg := err.Error()
			if len(msg) > 1024 || !strings.Contains(msg, tc.field) || !strings.Contains(msg, "more bytes)") {
				t.Errorf("%d bytes, want at most 1024 naming %s and the bytes left out: %.600s", len(msg), tc.field, msg)
			}
		})
	}
}
