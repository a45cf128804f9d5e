package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// TestTenantsCrossTenantTemplate: acl plan and render nodes --tenants
// read the tenant file through one reader and one rule: beta's template
// 9000, which tenant alpha lists under vms, is refused by both with the
// same message; the control, a template no tenant owns, is planned and
// rendered.
func TestTenantsCrossTenantTemplate(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cross := write("cross.yaml", "tenants:\n- {name: alpha, storage: a1, vms: [9000]}\n- {name: beta, storage: b1, tokens: {capmox: capi}, templates: [9000]}\n")
	own := write("own.yaml", "tenants:\n- {name: alpha, storage: a1, vms: [8000]}\n- {name: beta, storage: b1, tokens: {capmox: capi}, templates: [9000]}\n")
	pool := filepath.Join("..", "..", "capmoxrender", "testdata", "scenarios", "nodes-raw", "input.yaml")
	const want = `template 9000 of tenant "beta" is tenant "alpha"'s VM (listed in its vms, tenants[0])`
	for _, args := range [][]string{
		{"acl", "plan", "--tenants"},
		{"render", "nodes", "-f", pool, "--tenants"},
	} {
		out, errOut, code := run(t, append(args, cross)...)
		if code != 1 || out != "" || !strings.Contains(errOut, "tenants[1].templates[0]: "+want) {
			t.Errorf("%v cross.yaml: exit %d, stdout %q, stderr %q; want exit 1 and %q", args, code, out, errOut, want)
		}
		if out, errOut, code := run(t, append(args, own)...); code != 0 || out == "" {
			t.Errorf("control %v own.yaml: exit %d, stderr %q", args, code, errOut)
		}
		_, errOut, code = run(t, append(args, "")...)
		if code != 2 || !strings.Contains(errOut, "--tenants is empty: name the tenant specification file") {
			t.Errorf("%v with an empty value: exit %d, stderr %q; want exit 2 and the flag named", args, code, errOut)
		}
	}
}

// TestACLAuditLiveTemplateAndHA: on a live cluster (the API fake) after
// acl apply, the audit passes (the control); a template beta lists that
// sits in alpha's pool is CrossTenantReach, and an entry on /nodes for
// the pool HA token is HAReach, each with exit 1.
func TestACLAuditLiveTemplateAndHA(t *testing.T) {
	srv := pvefake.NewServer(t, pvefake.WithTLS())
	for _, s := range []string{"alpha-disks", "beta-disks"} {
		if err := srv.AddStorage(pvefake.StorageSpec{ID: s, Type: "dir", Content: []string{"images"}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.AddVM(pvefake.VMSpec{VMID: 9000, Name: "talos", Template: true}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tenants, ca, secret := filepath.Join(dir, "tenants.yaml"), filepath.Join(dir, "ca.pem"), filepath.Join(dir, "secret")
	spec := "platform: {ha: {user: poolha@pve, token: ha}}\ntenants:\n  - {name: alpha, storage: alpha-disks}\n" +
		"  - {name: beta, storage: beta-disks, tokens: {capmox: capi}, templates: [9000]}\n"
	for path, data := range map[string]string{tenants: spec, ca: string(srv.CertificatePEM()), secret: srv.RootSecret} {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	api := []string{"--url", strings.TrimSuffix(srv.URL, "/api2/json"), "--token-id", srv.RootTokenID,
		"--token-secret-file", secret, "--ca-file", ca, "--tenants", tenants}
	if _, errOut, code := aclRun(t, append([]string{"acl", "apply", "--secrets-dir", t.TempDir()}, api...)...); code != 0 {
		t.Fatalf("apply: exit %d: %s", code, errOut)
	}
	out, errOut, code := aclRun(t, append([]string{"acl", "audit"}, api...)...)
	if code != 0 || !strings.Contains(out, "0 error(s), 0 warning(s)") {
		t.Fatalf("control: after apply the audit passes: exit %d\n%s\n%s", code, out, errOut)
	}
	ctx := context.Background()
	if err := srv.Client().Put(ctx, "/pools/alpha", map[string]any{"vms": "9000"}, nil); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = aclRun(t, append([]string{"acl", "audit", "-o", "json"}, api...)...)
	if code != 1 || !strings.Contains(out, `"path": "/vms/9000"`) || !strings.Contains(out, "a template tenant beta lists, but tenant alpha's VM, in its pool alpha") {
		t.Errorf("beta's template in alpha's pool: exit %d\n%s\n%s", code, out, errOut)
	}
	if err := srv.Client().Put(ctx, "/pools/alpha", map[string]any{"vms": "9000", "delete": 1}, nil); err != nil {
		t.Fatal(err)
	}
	if err := srv.Client().Put(ctx, "/access/acl", map[string]any{"path": "/nodes", "users": "poolha@pve", "tokens": "poolha@pve!ha", "roles": "PVEAuditor", "propagate": 1}, nil); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = aclRun(t, append([]string{"acl", "audit", "-o", "json"}, api...)...)
	if code != 1 || !strings.Contains(out, `"code": "HAReach"`) || !strings.Contains(out, `"subject": "poolha@pve!ha"`) || strings.Contains(out, "/vms/9000") {
		t.Errorf("the pool HA token on /nodes: exit %d\n%s\n%s", code, out, errOut)
	}
}
