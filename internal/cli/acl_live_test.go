package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/liveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
	"github.com/pxsubstrate/pxsubstrate/pveacl/usercfg"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
	"github.com/pxsubstrate/pxsubstrate/verify/credlint"
)

const liveTenants = `tenants:
  - name: alpha
    storage: alpha-disks
  - name: beta
    storage: beta-disks
`

// liveEnv is a TLS fake with the tenants' storages and files for the flags.
type liveEnv struct {
	srv                       *pvefake.Server
	dir, tenants, ca, rootSec string
	bare                      string // https://127.0.0.1:PORT
}

func newLiveEnv(t *testing.T) *liveEnv {
	t.Helper()
	srv := pvefake.NewServer(t, pvefake.WithTLS(), pvefake.WithCluster("eu-west"))
	for _, s := range []string{"alpha-disks", "beta-disks"} {
		if err := srv.AddStorage(pvefake.StorageSpec{ID: s, Type: "lvmthin", Content: []string{"images"}}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	e := &liveEnv{srv: srv, dir: dir, tenants: filepath.Join(dir, "tenants.yaml"), ca: filepath.Join(dir, "ca.pem"),
		rootSec: filepath.Join(dir, "root.secret"), bare: strings.TrimSuffix(srv.URL, "/api2/json")}
	for path, data := range map[string]string{e.tenants: liveTenants, e.ca: string(srv.CertificatePEM()), e.rootSec: srv.RootSecret + "\n"} {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func (e *liveEnv) args(extra ...string) []string {
	return append([]string{"--tenants", e.tenants, "--url", e.bare, "--token-id", e.srv.RootTokenID,
		"--token-secret-file", e.rootSec}, extra...)
}

// runApply executes `acl apply` in-process with the given output format.
func runApply(t *testing.T, format string, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	app := &App{In: strings.NewReader(""), Out: &out, ErrOut: &errOut, Format: format}
	cmd := newACLApplyCmd(app)
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

func TestACLApplyCommand(t *testing.T) {
	e := newLiveEnv(t)
	manifests := filepath.Join(e.dir, "secrets.yaml")
	out, errOut, err := runApply(t, "table", e.args("--ca-file", e.ca, "--secret-manifests", manifests, "--secret-namespace", "tenants")...)
	if err != nil {
		t.Fatalf("apply: %v\n%s", err, errOut)
	}
	if !strings.Contains(out, "create-token") || !strings.Contains(out, "secret of alpha@pve!csi stored in "+manifests+"#proxmox-alpha-40pve-21csi") {
		t.Errorf("the table lists the changes and where secrets went:\n%s", out)
	}
	data, err := os.ReadFile(manifests)
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := credlint.ReadSecrets(bytes.NewReader(data))
	if err != nil || len(secrets) != 4 {
		t.Fatalf("four Secret manifests: %d, %v", len(secrets), err)
	}
	for _, f := range credlint.Lint(secrets) {
		if f.Severity == credlint.Error {
			t.Errorf("a written Secret must pass the credentials lint: %+v", f)
		}
	}
	for _, s := range secrets {
		if s.Data["url"] != e.srv.URL || s.Data["region"] != "eu-west" {
			t.Errorf("url is the API base (with /api2/json) and region the cluster name: %v %v", s.Data["url"], s.Data["region"])
		}
		if v := s.Data["token_secret"]; v == "" || strings.Contains(out+errOut, v) {
			t.Errorf("a token secret must never reach the output (secret of %s)", s.Data["token_id"])
		}
	}
	e.srv.ResetRequests()
	out, _, err = runApply(t, "json", e.args("--ca-file", e.ca, "--secret-manifests", manifests)...)
	if err != nil || !strings.Contains(out, `"applied": null`) || len(e.srv.MutatingRequests()) != 0 {
		t.Errorf("a second run changes nothing: %v, mutating %v\n%s", err, e.srv.MutatingRequests(), out)
	}
}

func TestACLApplyRefusals(t *testing.T) {
	e := newLiveEnv(t)
	cases := map[string]struct {
		reason string
		args   []string
		err    string
		stderr string
	}{
		"NoSink": {reason: "new tokens need a place for their secrets before anything changes",
			args: e.args("--ca-file", e.ca), err: "new API tokens need a place for their secrets: pass a secret sink (--secrets-dir or --secret-manifests)"},
		"UnknownCA": {reason: "TLS is verified by default",
			args: e.args("--secrets-dir", filepath.Join(e.dir, "s")), err: "(pass the cluster's CA with --ca-file"},
		"Insecure": {reason: "skipping verification works but warns",
			args: e.args("--insecure-skip-tls-verify", "--secrets-dir", filepath.Join(e.dir, "s")), stderr: "Warning: TLS verification is off"},
		"BothSinks": {reason: "one sink at a time",
			args: e.args("--secrets-dir", "a", "--secret-manifests", "b"), err: "none of the others can be"},
		"BadToken": {reason: "the token id must be USER@REALM!TOKEN",
			args: []string{"--tenants", e.tenants, "--url", e.bare, "--token-id", "root@pam", "--token-secret", "x"}, err: `--token-id "root@pam" is not a token id`},
		"BadURL": {reason: "only the node address is accepted",
			args: []string{"--tenants", e.tenants, "--url", e.bare + "/pve", "--token-id", "a@pve!tk", "--token-secret", "x"}, err: "use https://HOST:8006 (/api2/json is appended)"},
	}
	for _, name := range []string{"NoSink", "UnknownCA", "Insecure", "BothSinks", "BadToken", "BadURL"} {
		tc := cases[name]
		t.Run(name, func(t *testing.T) {
			before := len(e.srv.MutatingRequests())
			_, errOut, err := runApply(t, "table", tc.args...)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if (tc.err == "") != (err == nil) || !strings.Contains(got, tc.err) {
				t.Errorf("%s: error %q, want %q", tc.reason, got, tc.err)
			}
			if !strings.Contains(errOut, tc.stderr) {
				t.Errorf("%s: stderr %q, want %q", tc.reason, errOut, tc.stderr)
			}
			if tc.err != "" && len(e.srv.MutatingRequests()) != before {
				t.Errorf("%s: a refused apply changes nothing", tc.reason)
			}
		})
	}
}

func TestChangeTargets(t *testing.T) {
	cases := map[string]struct {
		reason string
		change tenantplan.Change
		want   string
	}{
		"ACL":     {reason: "path, kind, subject, roles, flag", change: tenantplan.Change{Op: tenantplan.OpSetACL, Path: "/pool/a", Kind: pveacl.KindToken, Subject: "a@pve!csi", Roles: []string{"CozyCSI"}}, want: "/pool/a token a@pve!csi CozyCSI propagate=0"},
		"Token":   {reason: "the full token id", change: tenantplan.Change{Op: tenantplan.OpCreateToken, User: "a@pve", Token: "csi"}, want: "a@pve!csi"},
		"Members": {reason: "pool and members", change: tenantplan.Change{Op: tenantplan.OpAddPoolMembers, Pool: "a", VMs: []int{100}, Storages: []string{"s"}}, want: "a s,100"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := changeTarget(tc.change); got != tc.want {
				t.Errorf("%s: %q, want %q", tc.reason, got, tc.want)
			}
		})
	}
}

func TestACLApplyAndAuditThroughMain(t *testing.T) {
	e := newLiveEnv(t)
	apiFlags := []string{"--url", e.srv.URL, "--token-id", e.srv.RootTokenID, "--token-secret-file", e.rootSec, "--ca-file", e.ca}
	out, errOut, code := run(t, append([]string{"acl", "apply", "--tenants", e.tenants, "--secrets-dir", filepath.Join(e.dir, "s")}, apiFlags...)...)
	if code != 0 {
		t.Fatalf("acl apply exits 0, got %d: %s", code, errOut)
	}
	if !strings.Contains(out, "Proxmox VE 9:") {
		t.Errorf("the apply table starts with the version and count:\n%s", out)
	}
	out, errOut, code = run(t, append([]string{"acl", "audit", "--tenants", e.tenants}, apiFlags...)...)
	if code != 0 || !strings.Contains(out, "0 error(s), 0 warning(s)") {
		t.Errorf("the live audit of an applied cluster is clean (exit %d):\n%s%s", code, out, errOut)
	}
	if err := e.srv.SetACL("/pool/beta", pveacl.KindUser, "alpha@pve", false, "PVEVMAdmin"); err != nil {
		t.Fatal(err)
	}
	out, _, code = run(t, append([]string{"acl", "audit", "--tenants", e.tenants, "-o", "json"}, apiFlags...)...)
	if code != 1 || !strings.Contains(out, `"code": "CrossTenantReach"`) {
		t.Errorf("a leak found live exits 1 with its finding (exit %d):\n%s", code, out)
	}
	checkRemedyCommand(t, e, out)
}

// checkRemedyCommand runs the command a CrossTenantReach remedy names, on
// the fake's user.cfg, as an operator would paste it: it must run and show
// the reach.
func checkRemedyCommand(t *testing.T, e *liveEnv, auditJSON string) {
	t.Helper()
	var rep struct {
		Findings []struct{ Code, Path, Remedy string }
	}
	if err := json.Unmarshal([]byte(auditJSON), &rep); err != nil {
		t.Fatal(err)
	}
	userCfg := filepath.Join(e.dir, "user.cfg")
	if err := os.WriteFile(userCfg, usercfg.Marshal(e.srv.AccessConfig()), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		_, cmd, ok := strings.Cut(f.Remedy, "pxsubstrate ")
		cmd, _, shows := strings.Cut(cmd, " shows")
		if f.Code != "CrossTenantReach" || !ok || !shows {
			continue
		}
		parsed, err := syntax.NewParser().Parse(strings.NewReader(cmd), "remedy")
		if err != nil || len(parsed.Stmts) != 1 {
			t.Fatalf("the remedy's command %q does not parse as one shell command: %v", cmd, err)
		}
		_, args := words(parsed.Stmts[0])
		for i, a := range args {
			if a == "/etc/pve/user.cfg" {
				args[i] = userCfg
			}
		}
		out, errOut, code := run(t, args...)
		if code != 0 || !strings.Contains(out, f.Path) {
			t.Errorf("the remedy's command %q: exit %d, stdout %q, stderr %q", cmd, code, out, errOut)
		}
		return
	}
	t.Errorf("no CrossTenantReach remedy names a command:\n%s", auditJSON)
}

// TestACLApplyDryRun: a dry run lists the changes apply then makes, one
// for one, sends no changing request and writes no secret; after the
// apply a dry run plans nothing.
func TestACLApplyDryRun(t *testing.T) {
	e := newLiveEnv(t)
	secrets := filepath.Join(e.dir, "s")
	apiFlags := []string{"--url", e.srv.URL, "--token-id", e.srv.RootTokenID, "--token-secret-file", e.rootSec, "--ca-file", e.ca}
	apply := append([]string{"acl", "apply", "--tenants", e.tenants, "--secrets-dir", secrets, "-o", "json"}, apiFlags...)
	var planned, applied liveacl.Result
	out, errOut, code := run(t, append(apply, "--dry-run")...)
	if code != 0 || json.Unmarshal([]byte(out), &planned) != nil {
		t.Fatalf("dry run: exit %d: %s%s", code, out, errOut)
	}
	if m := e.srv.MutatingRequests(); len(m) != 0 {
		t.Errorf("a dry run changes nothing: %v", m)
	}
	if _, err := os.Stat(secrets); !os.IsNotExist(err) {
		t.Errorf("a dry run writes no secret directory: %v", err)
	}
	if len(planned.Applied) == 0 {
		t.Fatal("a fresh cluster needs changes; the dry run planned none")
	}
	out, errOut, code = run(t, apply...)
	if code != 0 || json.Unmarshal([]byte(out), &applied) != nil {
		t.Fatalf("apply: exit %d: %s%s", code, out, errOut)
	}
	// Standard error is a buffer here, not a terminal: progress still shows.
	if n := len(applied.Applied); !strings.Contains(errOut, fmt.Sprintf("[1/%d] ", n)) || !strings.Contains(errOut, fmt.Sprintf("[%d/%d] ", n, n)) {
		t.Errorf("apply reports each change on standard error outside a terminal:\n%s", errOut)
	}
	if len(applied.Applied) != len(planned.Applied) {
		t.Fatalf("the dry run planned %d changes, apply made %d", len(planned.Applied), len(applied.Applied))
	}
	for i := range planned.Applied {
		if p, a := planned.Applied[i], applied.Applied[i]; p.Outcome != liveacl.OutcomePlanned || !reflect.DeepEqual(p.Change, a.Change) {
			t.Errorf("change %d: planned %+v (%s), applied %+v", i+1, p.Change, p.Outcome, a.Change)
		}
	}
	before := len(e.srv.MutatingRequests())
	out, _, code = run(t, append([]string{"acl", "apply", "--tenants", e.tenants, "--dry-run"}, apiFlags...)...)
	if code != 0 || !strings.Contains(out, "0 change(s) planned; dry run, nothing was changed") || len(e.srv.MutatingRequests()) != before {
		t.Errorf("a dry run after the apply plans nothing and changes nothing (exit %d):\n%s", code, out)
	}
}

// TestACLApplyFoldedTenants: tenants a-b and a_b would have shared Secret
// names; the apply refuses them naming both, before any change. Control:
// a-b and ab apply, and each token's secret has its own file.
func TestACLApplyFoldedTenants(t *testing.T) {
	e := newLiveEnv(t)
	for _, s := range []string{"s1", "s2"} {
		if err := e.srv.AddStorage(pvefake.StorageSpec{ID: s, Type: "lvmthin", Content: []string{"images"}}); err != nil {
			t.Fatal(err)
		}
	}
	secrets := filepath.Join(e.dir, "s")
	write := func(spec string) {
		if err := os.WriteFile(e.tenants, []byte(spec), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("tenants:\n- {name: a-b, storage: s1}\n- {name: a_b, storage: s2}\n")
	_, _, err := runApply(t, "table", e.args("--ca-file", e.ca, "--secrets-dir", secrets)...)
	if err == nil || !strings.Contains(err.Error(), `name "a_b" of tenant "a_b" and name "a-b" of tenant "a-b" differ only in case or in '-', '_', '.'`) {
		t.Errorf("tenants a-b and a_b are refused, naming both: %v", err)
	}
	if m := e.srv.MutatingRequests(); len(m) != 0 {
		t.Errorf("a refused apply changes nothing: %v", m)
	}
	write("tenants:\n- {name: a-b, storage: s1}\n- {name: ab, storage: s2}\n")
	out, errOut, err := runApply(t, "table", e.args("--ca-file", e.ca, "--secrets-dir", secrets)...)
	if err != nil {
		t.Fatalf("a-b and ab apply: %v\n%s", err, errOut)
	}
	files, err := filepath.Glob(filepath.Join(secrets, "*.json"))
	if err != nil || len(files) != 4 || strings.Count(out, "secret of ") != 4 {
		t.Errorf("four tokens, four files, four lines: %v %v\n%s", files, err, out)
	}
	for _, id := range []string{"a-b@pve!csi", "a-b@pve!ccm", "ab@pve!csi", "ab@pve!ccm"} {
		b, err := os.ReadFile(filepath.Join(secrets, liveacl.SecretName(id)+".json"))
		if err != nil || !strings.Contains(string(b), `"token_id": "`+id+`"`) {
			t.Errorf("the file of %s holds its own token: %v\n%s", id, err, b)
		}
	}
}

// TestACLApplyPruneNamesWhatGoes: an empty or blank tenants file is an
// error, never "no tenants", and --prune names the tenants that go. The
// control prunes beta by name and keeps alpha.
func TestACLApplyPruneNamesWhatGoes(t *testing.T) {
	e := newLiveEnv(t)
	secrets := filepath.Join(e.dir, "s")
	if _, errOut, err := runApply(t, "table", e.args("--ca-file", e.ca, "--secrets-dir", secrets)...); err != nil {
		t.Fatalf("apply: %v\n%s", err, errOut)
	}
	write := func(spec string) {
		if err := os.WriteFile(e.tenants, []byte(spec), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		reason, spec string
		args         []string
		err          string
	}{
		{"a 0-byte file is not no tenants", "", []string{"--prune", "alpha,beta"}, "tenants.yaml: cannot read the tenant specification: invalid tenant specification: it is empty"},
		{"whitespace is empty too", "\n   \n", []string{"--prune", "alpha"}, "it is empty"},
		{"garbage does not parse", "{[\x00", []string{"--prune", "alpha"}, "cannot read the tenant specification"},
		{"--prune without names", "tenants: []\n", []string{"--prune="}, "--prune names the tenants whose objects go"},
		{"a tenant still listed cannot be pruned", "tenants:\n- {name: alpha, storage: alpha-disks}\n", []string{"--prune", "alpha"}, `tenant "alpha" is still in the specification`},
	}
	for _, tc := range cases {
		write(tc.spec)
		e.srv.ResetRequests()
		_, _, err := runApply(t, "table", e.args(append([]string{"--ca-file", e.ca, "--secrets-dir", secrets}, tc.args...)...)...)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: error %v, want %q", tc.reason, err, tc.err)
		}
		if m := e.srv.MutatingRequests(); len(m) != 0 {
			t.Errorf("%s: a refused apply changes nothing: %v", tc.reason, m)
		}
	}
	write("tenants:\n- {name: alpha, storage: alpha-disks}\n")
	out, errOut, err := runApply(t, "table", e.args("--ca-file", e.ca, "--secrets-dir", secrets, "--prune", "beta")...)
	if err != nil {
		t.Fatalf("prune beta: %v\n%s", err, errOut)
	}
	users := e.srv.AccessConfig().Users
	if _, ok := users["beta@pve"]; ok || users["alpha@pve"].Comment == "" || !regexp.MustCompile(`delete-user +beta@pve`).MatchString(out) {
		t.Errorf("beta's user goes, alpha's stays:\n%s", out)
	}
}

// TestACLApplyTakeover: a tenant naming an existing user (ops@pve, with
// Administrator on /) makes apply stop before any change, listing what it
// would remove; ops@pve keeps its rights. The control confirms the
// takeover with --confirm-removals and the entry goes.
func TestACLApplyTakeover(t *testing.T) {
	e := newLiveEnv(t)
	if err := e.srv.AddUser("ops@pve", pvefake.UserSpec{Comment: "operations"}); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.SetACL("/", pveacl.KindUser, "ops@pve", true, "Administrator"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.tenants, []byte("tenants:\n- {name: b, user: ops@pve, storage: beta-disks}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	secrets := filepath.Join(e.dir, "s")
	admin := pveacl.ACLKey{Path: "/", Kind: pveacl.KindUser, Subject: "ops@pve", Role: "Administrator"}
	_, _, err := runApply(t, "table", e.args("--ca-file", e.ca, "--secrets-dir", secrets)...)
	if err == nil || !strings.Contains(err.Error(), "remove user ops@pve: Administrator on /;") ||
		!strings.Contains(err.Error(), "confirm with --confirm-removals ops@pve") {
		t.Errorf("the takeover is refused, naming the entry and the flag: %v", err)
	}
	if _, ok := e.srv.AccessConfig().ACL[admin]; !ok || len(e.srv.MutatingRequests()) != 0 {
		t.Errorf("a refused apply changes nothing: ops@pve keeps Administrator on /: %v", e.srv.MutatingRequests())
	}
	if _, _, err := runApply(t, "table", e.args("--ca-file", e.ca, "--secrets-dir", secrets, "--confirm-removals", "ops@pve")...); err != nil {
		t.Fatalf("a confirmed takeover applies: %v", err)
	}
	if _, ok := e.srv.AccessConfig().ACL[admin]; ok {
		t.Error("the confirmed takeover removes ops@pve's Administrator on /")
	}
}
