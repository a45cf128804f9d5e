package cli

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestEchoesAreCut: a value of megabytes from an input or an API answer is
// echoed cut (termsafe.Quote, Cut, QuoteArgs, CutArgs), with the count of
// the bytes left out, never whole: a lookup ProxmoxNetwork's condition
// message, a pool's proxmox.pool in the --tenants warning, a selector of
// 15,000 tags in template select's error and report. Each control, the
// same value at its usual size, is printed whole.
func TestEchoesAreCut(t *testing.T) {
	scen := func(name, file string) string { return filepath.Join(scenarios, "scenarios", name, file) }
	lookup := mustRead(t, scen("nodes-vpc", "lookup.yaml"))
	pool := mustRead(t, scen("nodes-raw", "input.yaml"))
	notReady := func(msg string) string {
		return strings.Replace(lookup, "    status: \"True\"\n    reason: Ready\n    message: \"\"", "    status: \"False\"\n    reason: NoVLAN\n    message: "+msg, 1)
	}
	huge := strings.Repeat("m", 5<<20)
	dir := writeFiles(t, map[string]string{
		"huge-message.yaml":  notReady(huge),
		"small-message.yaml": notReady("waiting for a VLAN of zone pxnet"),
		"huge-pool.yaml":     strings.Replace(pool, "pool: tenant-e2eproxmox", "pool: p"+strings.Repeat("o", 7<<20), 1),
		"tenants.yaml":       liveTenants,
		"resources.json":     `[{"vmid":9000,"name":"t","node":"pve1","template":1,"tags":"cozystack;talos"}]`,
	})
	f := func(name string) string { return filepath.Join(dir, name) }
	tags := make([]string, 15000)
	for i := range tags {
		tags[i] = fmt.Sprintf("t%d", i)
	}
	cases := map[string]struct {
		args     []string
		code     int
		contains string // in stderr
	}{
		"ConditionMessage": {args: []string{"render", "nodes", "-f", scen("nodes-vpc", "input.yaml"), "--lookup", f("huge-message.yaml"), "--max-input-size", "16Mi"},
			code: 1, contains: "is not Ready: NoVLAN: mmmm"},
		"ConditionControl": {args: []string{"render", "nodes", "-f", scen("nodes-vpc", "input.yaml"), "--lookup", f("small-message.yaml")},
			code: 1, contains: "is not Ready: NoVLAN: waiting for a VLAN of zone pxnet\n"},
		"TenantsPool": {args: []string{"render", "nodes", "-f", f("huge-pool.yaml"), "--tenants", f("tenants.yaml"), "--max-input-size", "16Mi"},
			contains: `Warning: proxmox.pool "poooo`},
		"TenantsControl": {args: []string{"render", "nodes", "-f", scen("nodes-raw", "input.yaml"), "--tenants", f("tenants.yaml")},
			contains: `Warning: proxmox.pool "tenant-e2eproxmox" is no tenant's pool with a vmIDRange`},
		"Selector": {args: []string{"template", "select", "--tags", strings.Join(tags, ","), "--resources", f("resources.json")},
			code: 1, contains: `Error: VM template not found: found 0 VM templates with tags "t0;t1;t2;`},
		"SelectorControl": {args: []string{"template", "select", "--tags", "cozystack,talos,talos-v1.13.6", "--resources", f("resources.json")},
			code: 1, contains: `Error: VM template not found: found 0 VM templates with tags "cozystack;talos;talos-v1.13.6"` + "\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := run(t, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.contains) {
				t.Fatalf("exit %d, stderr %.400q; want %d and %q", code, errOut, tc.code, tc.contains)
			}
			control := strings.HasSuffix(name, "Control")
			if cut := strings.Contains(errOut+out, "more bytes)"); cut == control {
				t.Errorf("cut %v in %.400q", cut, errOut)
			}
			// stdout is the command's data (render's objects hold the pool
			// whole); template select's report is for people.
			if !control && (len(errOut) > 2048 || tc.args[0] == "template" && len(out) > 4096) {
				t.Errorf("%d bytes of stderr and %d of stdout: %.400q", len(errOut), len(out), errOut)
			}
		})
	}
}

// TestAPIErrorBodyCut: an API that answers with an error of 600 KB
// (its message and a parameter error) is quoted cut in the error every
// command prints: pvesdn cuts the API's words itself, and every line the
// CLI prints is cut at termsafe.MaxLine for the text no caller could cut.
// The control, a short error, is printed whole.
func TestAPIErrorBodyCut(t *testing.T) {
	for name, size := range map[string]int{"Huge": 300 << 10, "Control": 40} {
		t.Run(name, func(t *testing.T) {
			body := fmt.Sprintf(`{"data":null,"message":"%s","errors":{"node":"%s"}}`, strings.Repeat("e", size), strings.Repeat("f", size))
			h := newNodeNameAPI(t, "pve1")
			h.tls.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusInternalServerError)
				fmt.Fprint(w, body)
			})
			for caller, call := range map[string]proxmoxCaller{"sdn check": proxmoxCallers["sdn check"], "template create": proxmoxCallers["template create"], "acl audit": proxmoxCallers["acl audit"]} {
				out, err := call(t, h.tls.URL, "root@pam!pxsubstrate", hostileSecret, h.ca)
				if err == nil || !strings.Contains(out, "eeee") {
					t.Errorf("%s: %v, the API's error is not reported: %.300q", caller, err, out)
				}
				if cut := strings.Contains(out, "more bytes)"); cut != (name == "Huge") || len(out) > 16<<10 {
					t.Errorf("%s: %d bytes printed, cut %v: %.300q", caller, len(out), cut, out)
				}
			}
		})
	}
}
