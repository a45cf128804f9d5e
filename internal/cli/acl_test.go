package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/audit"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
	"github.com/pxsubstrate/pxsubstrate/pveacl/usercfg"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// aclRun executes the CLI in-process and returns stdout, stderr and the exit code.
func aclRun(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return run(t, args...)
}

const aclTenantsYAML = `platform:
  capmox: {user: capmox@pve, token: capi}
  sharedStorages: [iso]
tenants:
  - name: alpha
    storage: alpha-disks
    vms: [100]
  - name: beta
    storage: beta-disks
    vms: [200]
`

const aclPermsCfg = `user:max@pve:1:
token:max@pve!token2::1:
token:max@pve!full::0:
group:ops:max@pve:
role:customer:VM.Audit,VM.PowerMgmt:
acl:1:/vms:@ops:customer:
acl:0:/vms/300:max@pve:customer:
acl:1:/vms/300:max@pve!token2:PVEVMAdmin:
pool:p::400:
acl:0:/pool/p:max@pve:PVEAuditor:
`

// aclFiles writes the fixtures: the tenants, a user.cfg for perms and the
// user.cfg of a cluster where the tenants' plan was applied.
func aclFiles(t *testing.T) (tenants, permsCfg, converged string) {
	t.Helper()
	dir := t.TempDir()
	tenants, permsCfg, converged = filepath.Join(dir, "tenants.yaml"), filepath.Join(dir, "perms.cfg"), filepath.Join(dir, "user.cfg")
	spec, err := tenantplan.LoadTenants([]byte(aclTenantsYAML))
	if err != nil {
		t.Fatal(err)
	}
	changes, err := tenantplan.Plan(spec, pveacl.NewConfig(pveacl.PVE9))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := tenantplan.Simulate(pveacl.NewConfig(pveacl.PVE9), changes)
	if err != nil {
		t.Fatal(err)
	}
	for path, data := range map[string][]byte{tenants: []byte(aclTenantsYAML), permsCfg: []byte(aclPermsCfg), converged: usercfg.Marshal(cfg)} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return tenants, permsCfg, converged
}

func TestACLPerms(t *testing.T) {
	_, cfg, _ := aclFiles(t)
	cases := map[string]struct {
		reason string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		"TokenIntersection": {
			reason: "a privsep token keeps what its user also holds; the flag is the AND",
			args:   []string{"--authid", "max@pve!token2", "--path", "/vms/300"},
			stdout: `{"/vms/300":{"VM.Audit":0,"VM.PowerMgmt":0}}` + "\n",
		},
		"PrivsepZero": {
			reason: "a privsep=0 token is its user: group role inherited on /vms/301",
			args:   []string{"--authid", "max@pve!full", "--path", "/vms/301"},
			stdout: `{"/vms/301":{"VM.Audit":1,"VM.PowerMgmt":1}}` + "\n",
		},
		"EmptyPath": {
			reason: "an empty answer still names the path, as PVE does",
			args:   []string{"--authid", "max@pve", "--path", "/nodes"},
			stdout: `{"/nodes":{}}` + "\n",
		},
		"PoolMember": {
			reason: "pool roles reach the pool's VM, flag 0, on top of the inherited group role",
			args:   []string{"--authid", "max@pve", "--path", "/vms/400", "-o", "json"},
			stdout: `{"/vms/400":{"Datastore.Audit":0,"Mapping.Audit":0,"Pool.Audit":0,"SDN.Audit":0,"Sys.Audit":0,"VM.Audit":1,"VM.GuestAgent.Audit":0,"VM.PowerMgmt":1}}` + "\n",
		},
		"AllPaths": {
			reason: "without --path every path PVE reports, empty ones left out (the token's own side is empty on /vms)",
			args:   []string{"--authid", "max@pve!token2"},
			stdout: `{"/vms/300":{"VM.Audit":0,"VM.PowerMgmt":0}}` + "\n",
		},
		"YAML": {
			reason: "-o yaml prints the same map",
			args:   []string{"--authid", "max@pve!token2", "--path", "/vms/300", "-o", "yaml"},
			stdout: "/vms/300:\n  VM.Audit: 0\n  VM.PowerMgmt: 0\n",
		},
		"PVE8": {
			reason: "--pve-version 8 uses PVE 8's built-in roles",
			args:   []string{"--authid", "max@pve", "--path", "/pool/p", "--pve-version", "8"},
			stdout: `{"/pool/p":{"Datastore.Audit":0,"Mapping.Audit":0,"Pool.Audit":0,"SDN.Audit":0,"Sys.Audit":0,"VM.Audit":0}}` + "\n",
		},
		"BadAuthID": {
			reason: "a malformed auth id is refused with what is expected",
			args:   []string{"--authid", "max", "--path", "/"},
			code:   1,
			stderr: `--authid "max" is neither a user id (user@realm) nor a token id (user@realm!token)`,
		},
		"BadVersion": {
			reason: "only 8 and 9",
			args:   []string{"--authid", "max@pve", "--pve-version", "7"},
			code:   1,
			stderr: "--pve-version: unsupported Proxmox VE version",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := aclRun(t, append([]string{"acl", "perms", "--user-cfg", cfg}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("%s: exit %d, want %d (stderr %q)", tc.reason, code, tc.code, errOut)
			}
			if tc.stdout != "" {
				if diff := cmp.Diff(tc.stdout, out); diff != "" {
					t.Errorf("%s: -want +got:\n%s", tc.reason, diff)
				}
			}
			if !strings.Contains(errOut, tc.stderr) {
				t.Errorf("%s: stderr %q lacks %q", tc.reason, errOut, tc.stderr)
			}
		})
	}
	if _, errOut, code := aclRun(t, "acl", "perms", "--authid", "max@pve"); code != 2 || !strings.Contains(errOut, "user-cfg") {
		t.Errorf("a missing --user-cfg is a usage error: exit %d, %q", code, errOut)
	}
	if _, errOut, code := aclRun(t, "acl", "perms", "--user-cfg", "/nonexistent", "--authid", "max@pve"); code != 1 || !strings.Contains(errOut, "cannot read /nonexistent") {
		t.Errorf("a missing file: exit %d, %q", code, errOut)
	}
}

func TestACLPlan(t *testing.T) {
	tenants, _, converged := aclFiles(t)
	def, _, code := aclRun(t, "acl", "plan", "--tenants", tenants)
	if code != 0 || !strings.HasPrefix(def, "#!/bin/sh\n") {
		t.Fatalf("default output is a pveum program, exit %d:\n%s", code, def)
	}
	explicit, _, _ := aclRun(t, "acl", "plan", "--tenants", tenants, "-o", "pveum")
	if explicit != def {
		t.Error("-o pveum must equal the default output")
	}
	for _, want := range []string{"pveum role add CozyCCM --privs VM.Audit,VM.GuestAgent.Audit",
		"pveum acl modify / --tokens 'alpha@pve!ccm' --roles PVEAuditor --propagate 0",
		"pveum acl modify /pool/alpha --users alpha@pve --roles CozyCCM,CozyCSI --propagate 0",
		"pveum pool modify alpha --vms 100 --storage alpha-disks"} {
		if !strings.Contains(def, want+"\n") {
			t.Errorf("plan lacks %q", want)
		}
	}
	out, _, code := aclRun(t, "acl", "plan", "--tenants", tenants, "--pve-version", "8", "-o", "json")
	var plan planOutput
	if err := json.Unmarshal([]byte(out), &plan); err != nil || code != 0 {
		t.Fatalf("-o json: exit %d, %v\n%s", code, err, out)
	}
	if plan.PVEVersion != pveacl.PVE8 || plan.Changes[0].Role != tenantplan.RoleCCM || plan.Changes[0].Privs[1] != "VM.Monitor" {
		t.Errorf("--pve-version 8 must plan CozyCCM with VM.Monitor: %+v", plan.Changes[0])
	}
	if n := strings.Count(def, "\npveum "); n != len(plan.Changes) {
		t.Errorf("%d pveum commands for %d changes", n, len(plan.Changes))
	}
	out, _, code = aclRun(t, "acl", "plan", "--tenants", tenants, "--user-cfg", converged)
	if code != 0 || !strings.Contains(out, "# Nothing to do") || strings.Contains(out, "\npveum") {
		t.Errorf("against a converged user.cfg the plan is empty, exit %d:\n%s", code, out)
	}
	out, _, _ = aclRun(t, "acl", "plan", "--tenants", tenants, "--user-cfg", converged, "-o", "json")
	if !strings.Contains(out, `"changes": []`) {
		t.Errorf("an empty JSON plan lists no changes: %s", out)
	}
	if _, errOut, code := aclRun(t, "acl", "plan", "--tenants", tenants, "-o", "xml"); code != 2 || !strings.Contains(errOut, "use -o pveum (the default), -o table") {
		t.Errorf("-o xml: exit %d, %q", code, errOut)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("tenants:\n- name: a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := aclRun(t, "acl", "plan", "--tenants", bad); code != 1 || !strings.Contains(errOut, "tenants[0].storage: a dedicated storage is required") {
		t.Errorf("an invalid specification: exit %d, %q", code, errOut)
	}
}

func TestACLAudit(t *testing.T) {
	tenants, _, converged := aclFiles(t)
	out, errOut, code := aclRun(t, "acl", "audit", "--user-cfg", converged, "--tenants", tenants)
	if code != 0 || !strings.Contains(out, "0 error(s), 0 warning(s), 1 info") || !strings.Contains(out, "PlatformWideToken") {
		t.Fatalf("a converged cluster passes: exit %d\n%s\n%s", code, out, errOut)
	}
	leaky := filepath.Join(t.TempDir(), "leaky.cfg")
	data, err := os.ReadFile(converged)
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, []byte("acl:1:/vms:alpha@pve!csi,alpha@pve:PVEVMUser:\n")...)
	if err := os.WriteFile(leaky, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = aclRun(t, "acl", "audit", "--user-cfg", leaky, "--tenants", tenants)
	if code != 1 || !strings.Contains(errOut, "the audit found") || !strings.Contains(out, "CrossTenantReach") ||
		!strings.Contains(out, "PropagatingTopLevelACL") || !strings.Contains(out, "/vms/200") {
		t.Errorf("a leak exits 1 and names it: exit %d\n%s\n%s", code, out, errOut)
	}
	out, _, code = aclRun(t, "acl", "audit", "--user-cfg", leaky, "--tenants", tenants, "-o", "json")
	var rep audit.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 {
		t.Fatalf("-o json: exit %d, %v", code, err)
	}
	if !rep.HasErrors() || rep.Tenants != 2 || !strings.Contains(out, `"code": "TokenBroaderThanRole"`) {
		t.Errorf("JSON report: %+v", rep)
	}
	for name, args := range map[string][]string{
		"NoSource":   {"acl", "audit", "--tenants", tenants},
		"TwoSources": {"acl", "audit", "--tenants", tenants, "--user-cfg", converged, "--url", "https://pve:8006"},
	} {
		if _, errOut, code := aclRun(t, args...); code != 2 || !strings.Contains(errOut, "--user-cfg FILE or --url") {
			t.Errorf("%s: a usage error exits 2, got %d (%q)", name, code, errOut)
		}
	}
}

// The audit reads a live cluster through the API: before the tenants are
// applied it reports what they lack, after `acl apply` it passes, and a
// leak added through the API fails it.
func TestACLAuditLive(t *testing.T) {
	srv := pvefake.NewServer(t, pvefake.WithTLS())
	for _, s := range []string{"alpha-disks", "beta-disks", "iso"} {
		if err := srv.AddStorage(pvefake.StorageSpec{ID: s, Type: "dir", Content: []string{"images"}}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	tenants, ca, secret := filepath.Join(dir, "tenants.yaml"), filepath.Join(dir, "ca.pem"), filepath.Join(dir, "secret")
	spec := "tenants:\n  - {name: alpha, storage: alpha-disks}\n  - {name: beta, storage: beta-disks}\n"
	for path, data := range map[string]string{tenants: spec, ca: string(srv.CertificatePEM()), secret: srv.RootSecret} {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	apiFlags := []string{"--url", strings.TrimSuffix(srv.URL, "/api2/json"), "--token-id", srv.RootTokenID,
		"--token-secret-file", secret, "--ca-file", ca, "--tenants", tenants}
	out, errOut, code := aclRun(t, append([]string{"acl", "audit", "-o", "json"}, apiFlags...)...)
	if code != 0 || !strings.Contains(out, `"code": "TenantIncomplete"`) {
		t.Fatalf("an empty cluster lacks the tenants (warnings, exit 0): exit %d\n%s\n%s", code, out, errOut)
	}
	if _, errOut, code := aclRun(t, append([]string{"acl", "apply", "--secrets-dir", t.TempDir()}, apiFlags...)...); code != 0 {
		t.Fatalf("apply: exit %d: %s", code, errOut)
	}
	out, errOut, code = aclRun(t, append([]string{"acl", "audit"}, apiFlags...)...)
	if code != 0 || !strings.Contains(out, "0 error(s), 0 warning(s), 0 info: checked 2 tenant(s), 6 user(s) and token(s)") {
		t.Fatalf("after apply the audit passes: exit %d\n%s\n%s", code, out, errOut)
	}
	err := srv.Client().Put(context.Background(), "/access/acl",
		map[string]any{"path": "/storage", "users": "beta@pve", "roles": "PVEDatastoreUser", "propagate": 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, code = aclRun(t, append([]string{"acl", "audit"}, apiFlags...)...)
	if code != 1 || !strings.Contains(out, "/storage/alpha-disks") || !strings.Contains(errOut, "the audit found") {
		t.Errorf("a propagating /storage grant reaches alpha's storage: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestACLAuditLeftoverVolumes: with --clusters, the audit names the CSI
// volumes on a tenant's storage whose controllerVmID is no listed
// cluster's, with the command that frees them; listing the deleted
// cluster too (the control) passes; a file that holds anything but
// Clusters is refused naming the object.
func TestACLAuditLeftoverVolumes(t *testing.T) {
	srv := pvefake.NewServer(t, pvefake.WithTLS())
	for _, s := range []string{"alpha-disks", "beta-disks"} {
		if err := srv.AddStorage(pvefake.StorageSpec{ID: s, Type: "lvmthin", Content: []string{"images"}}); err != nil {
			t.Fatal(err)
		}
	}
	live, gone := capmoxrender.ControllerVMID("tenant-alpha", "kubernetes-a"), capmoxrender.ControllerVMID("tenant-alpha", "kubernetes-old")
	var volids []string
	for _, id := range []int{live, gone} {
		v, err := srv.AddVolume(pvefake.VolumeSpec{Storage: "alpha-disks", Content: "images", Format: "raw", Size: 1 << 30,
			Name: fmt.Sprintf("vm-%d-pvc-0b7e6a52-3f1d-4c6e-9d8a-1e2f3a4b5c6d", id)})
		if err != nil {
			t.Fatal(err)
		}
		volids = append(volids, v)
	}
	dir := t.TempDir()
	cluster := func(ns, name string) string {
		return "---\napiVersion: cluster.x-k8s.io/v1beta1\nkind: Cluster\nmetadata: {namespace: " + ns + ", name: " + name + "}\n"
	}
	files := map[string]string{
		"tenants.yaml":  "tenants:\n  - {name: alpha, storage: alpha-disks}\n  - {name: beta, storage: beta-disks}\n",
		"ca.pem":        string(srv.CertificatePEM()),
		"secret":        srv.RootSecret,
		"live.yaml":     "apiVersion: v1\nkind: List\nitems:\n- apiVersion: cluster.x-k8s.io/v1beta1\n  kind: Cluster\n  metadata: {namespace: tenant-alpha, name: kubernetes-a}\n",
		"both.yaml":     cluster("tenant-alpha", "kubernetes-a") + cluster("tenant-alpha", "kubernetes-old"),
		"notKinds.yaml": cluster("tenant-alpha", "kubernetes-a") + "---\napiVersion: v1\nkind: Service\nmetadata: {namespace: tenant-alpha, name: kubernetes-a}\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	apiFlags := []string{"--url", strings.TrimSuffix(srv.URL, "/api2/json"), "--token-id", srv.RootTokenID,
		"--token-secret-file", filepath.Join(dir, "secret"), "--ca-file", filepath.Join(dir, "ca.pem"), "--tenants", filepath.Join(dir, "tenants.yaml")}
	if _, errOut, code := aclRun(t, append([]string{"acl", "apply", "--secrets-dir", t.TempDir()}, apiFlags...)...); code != 0 {
		t.Fatalf("apply must accept the CSI volumes as the tenant's own: exit %d: %s", code, errOut)
	}
	out, errOut, code := aclRun(t, append([]string{"acl", "audit", "-o", "wide", "--clusters", filepath.Join(dir, "live.yaml")}, apiFlags...)...)
	if code != 0 || !strings.Contains(out, "LeftoverVolume") || !strings.Contains(out, "pvesm free "+volids[1]) || strings.Contains(out, volids[0]) {
		t.Fatalf("the volume of the deleted cluster is a LeftoverVolume warning, the live one's is not: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = aclRun(t, append([]string{"acl", "audit", "--clusters", filepath.Join(dir, "both.yaml")}, apiFlags...)...)
	if code != 0 || strings.Contains(out, "LeftoverVolume") {
		t.Fatalf("control: both clusters exist, no volume is left over: exit %d\n%s%s", code, out, errOut)
	}
	_, errOut, code = aclRun(t, append([]string{"acl", "audit", "--clusters", filepath.Join(dir, "notKinds.yaml")}, apiFlags...)...)
	if code != 2 || !strings.Contains(errOut, "Service tenant-alpha/kubernetes-a is not a namespaced cluster.x-k8s.io Cluster") {
		t.Fatalf("a Service in --clusters is refused by name: exit %d: %s", code, errOut)
	}
}

// TestACLHostileUserCfg: 4 KiB of random bytes is no user.cfg: refused with
// exit 1, naming the file; a user.cfg with thousands of bad lines draws
// usercfg.MaxWarnings warnings and a count, none of them carrying a raw
// control byte, and the audit still runs on the lines that are good.
func TestACLHostileUserCfg(t *testing.T) {
	tenants, _, converged := aclFiles(t)
	dir := t.TempDir()
	random := filepath.Join(dir, "random.cfg")
	noise := make([]byte, 4096)
	rand.New(rand.NewSource(1)).Read(noise) //nolint:gosec // test noise, not a secret
	if err := os.WriteFile(random, noise, 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := aclRun(t, "acl", "audit", "--user-cfg", random, "--tenants", tenants)
	if code != 1 || out != "" || !strings.Contains(errOut, random+": not a user.cfg") || strings.Contains(errOut, "Warning") {
		t.Errorf("random bytes: exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
	good, err := os.ReadFile(converged)
	if err != nil {
		t.Fatal(err)
	}
	var bad strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&bad, "junk %d \x1b]0;owned\x07\x1b[2J\x9b\n", i)
	}
	flooded := filepath.Join(dir, "flooded.cfg")
	if err := os.WriteFile(flooded, append(good, bad.String()...), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = aclRun(t, "acl", "audit", "--user-cfg", flooded, "--tenants", tenants)
	if code != 0 || !strings.Contains(out, "0 error(s)") {
		t.Errorf("the good lines of a flooded file are audited: exit %d\n%s\n%s", code, out, errOut)
	}
	if n := strings.Count(errOut, "\n"); n != usercfg.MaxWarnings+1 {
		t.Errorf("%d warning lines, want %d and a count:\n%s", n, usercfg.MaxWarnings+1, errOut)
	}
	if !strings.Contains(errOut, fmt.Sprintf("%d more warnings not shown (3000 in all)", 3000-usercfg.MaxWarnings)) ||
		!strings.Contains(errOut, `junk 0 \x1b]0;owned\x07\x1b[2J\x9b`) || strings.ContainsAny(errOut, "\x1b\x07\u009b") {
		t.Errorf("warnings are escaped and counted:\n%q", errOut)
	}
}
