package liveacl_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/audit"
	"github.com/pxsubstrate/pxsubstrate/pveacl/liveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
	"github.com/pxsubstrate/pxsubstrate/pveacl/usercfg"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

var ctx = context.Background()

const twoTenants = `platform:
  capmox:
    user: capmox@pve
    token: capi
  sharedStorages: [local]
tenants:
  - name: alpha
    storage: alpha-disks
    networks:
      - bridge: vmbr1
        vlans: [100]
  - name: beta
    pool: tenant-beta
    user: k8s-beta@pve
    storage: beta-disks
    tokens: {csi: csi-beta, ccm: ccm-beta}
`

func mustTenants(t testing.TB, y string) *tenantplan.Tenants {
	t.Helper()
	spec, err := tenantplan.LoadTenants([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// auditLive audits what srv holds now against spec.
func auditLive(t *testing.T, srv *pvefake.Server, spec *tenantplan.Tenants) audit.Report {
	t.Helper()
	state, err := liveacl.Read(ctx, srv.Client())
	must(t, err)
	rep, err := audit.Run(state, spec)
	must(t, err)
	return rep
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// cluster starts a fake with the tenants' storages.
func cluster(t *testing.T, opts ...pvefake.Option) *pvefake.Server {
	t.Helper()
	srv := pvefake.NewServer(t, opts...)
	for _, s := range []string{"alpha-disks", "beta-disks"} {
		must(t, srv.AddStorage(pvefake.StorageSpec{ID: s, Type: "lvmthin", Content: []string{"images"}}))
	}
	return srv
}

func dirSink(t *testing.T) liveacl.DirSink {
	return liveacl.DirSink{Dir: filepath.Join(t.TempDir(), "secrets")}
}

// storedSecret reads a token's secret back from a DirSink.
func storedSecret(t *testing.T, sink liveacl.DirSink, tokenID string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(sink.Dir, liveacl.SecretName(tokenID)+".json"))
	must(t, err)
	var m map[string]string
	must(t, json.Unmarshal(b, &m))
	return m["token_secret"]
}

func TestApplyThenAuditIsClean(t *testing.T) {
	srv := cluster(t)
	spec := mustTenants(t, twoTenants)
	sink := dirSink(t)
	res, err := liveacl.Apply(ctx, srv.Client(), spec, liveacl.WithSecretSink(sink), liveacl.WithSecretContext("https://pve:8006", "eu-1"))
	must(t, err)
	if len(res.Applied) == 0 || len(res.Secrets) != 5 {
		t.Fatalf("the first apply creates everything and five tokens: %d changes, secrets %v", len(res.Applied), res.Secrets)
	}
	state, err := liveacl.Read(ctx, srv.Client())
	must(t, err)
	rep, err := audit.Run(state, spec)
	must(t, err)
	if diff := cmp.Diff([]audit.Code{audit.CodePlatformWideToken}, rep.Codes()); diff != "" {
		t.Errorf("after apply the audit finds only the capmox token's reach (info): -want +got:\n%s\n%+v", diff, rep.Findings)
	}
	if next, err := tenantplan.Plan(spec, state); err != nil || len(next) != 0 {
		t.Errorf("after apply the plan is empty: %v, %v", next, err)
	}
	srv.ResetRequests()
	again, err := liveacl.Apply(ctx, srv.Client(), spec, liveacl.WithSecretSink(sink))
	must(t, err)
	if len(again.Applied) != 0 || len(srv.MutatingRequests()) != 0 {
		t.Errorf("a second apply changes nothing: %d changes, mutating requests %v", len(again.Applied), srv.MutatingRequests())
	}
}

func TestApplyOutputsCarryNoSecret(t *testing.T) {
	srv := cluster(t)
	sink := dirSink(t)
	var seen strings.Builder
	res, err := liveacl.Apply(ctx, srv.Client(), mustTenants(t, twoTenants), liveacl.WithSecretSink(sink),
		liveacl.WithProgress(func(p liveacl.Progress) { fmt.Fprintf(&seen, "%+v\n", p) }))
	must(t, err)
	b, err := json.Marshal(res)
	must(t, err)
	fmt.Fprintf(&seen, "%s\n%+v\n", b, res)
	for _, s := range res.Secrets {
		secret := storedSecret(t, sink, s.TokenID)
		if secret == "" || strings.Contains(seen.String(), secret) {
			t.Errorf("the secret of %s must appear in the sink only", s.TokenID)
		}
	}
}

func TestTenantTokenIsolation(t *testing.T) {
	srv := cluster(t)
	spec := mustTenants(t, twoTenants)
	sink := dirSink(t)
	_, err := liveacl.Apply(ctx, srv.Client(), spec, liveacl.WithSecretSink(sink))
	must(t, err)
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 100, Pool: "alpha", Disks: map[string]string{"scsi0": "alpha-disks:4"}}))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 200, Pool: "tenant-beta", Disks: map[string]string{"scsi0": "beta-disks:4"}}))
	csiA := srv.TokenClient("alpha@pve!csi", storedSecret(t, sink, "alpha@pve!csi"))
	ccmB := srv.TokenClient("k8s-beta@pve!ccm-beta", storedSecret(t, sink, "k8s-beta@pve!ccm-beta"))
	node := csiA.NodeRef("pve")
	checkAPI(t, []apiCheck{
		{"alpha's CSI token reads its own VM", get(csiA, "/nodes/pve/qemu/100/config"), ""},
		{"but not beta's", get(csiA, "/nodes/pve/qemu/200/config"), "403 Permission check failed (/vms/200, VM.Audit)"},
		{"it may touch its own VM's disks", node.VirtualMachineRef(100).ConfigSync(ctx, opt("bootdisk", "scsi0")), ""},
		{"not beta's", node.VirtualMachineRef(200).ConfigSync(ctx, opt("bootdisk", "scsi0")),
			"403 Permission check failed (/vms/200, VM.Config.Disk|VM.Config.CDROM|VM.Config.CPU|VM.Config.Memory|VM.Config.Network|VM.Config.HWType|VM.Config.Options|VM.Config.Cloudinit)"},
		{"a privilege outside its role is named", node.VirtualMachineRef(100).ConfigSync(ctx, opt("memory", "4096")),
			"403 Permission check failed (/vms/100, VM.Config.Memory)"},
		{"beta's CCM token reads beta's VM status", get(ccmB, "/nodes/pve/qemu/200/status/current"), ""},
		{"not alpha's", get(ccmB, "/nodes/pve/qemu/100/status/current"), "403 Permission check failed (/vms/100, VM.Audit)"},
		{"alpha's CSI token allocates on its storage", get(csiA, "/nodes/pve/storage/alpha-disks/status"), ""},
		{"not on beta's", get(csiA, "/nodes/pve/storage/beta-disks/status"), "403 Permission check failed (/storage/beta-disks, Datastore.Audit|Datastore.AllocateSpace)"},
	})
	var seen proxmox.ClusterResources
	must(t, csiA.Get(ctx, "/cluster/resources?type=vm", &seen))
	if len(seen) != 1 || seen[0].VMID != 100 {
		t.Errorf("alpha's token lists alpha's VMs only: %+v", seen)
	}
}

func get(c *proxmox.Client, path string) error { return c.Get(ctx, path, nil) }

func opt(name string, value any) proxmox.VirtualMachineOption {
	return proxmox.VirtualMachineOption{Name: name, Value: value}
}

func TestReadNeedsTheWholeView(t *testing.T) {
	srv := cluster(t)
	must(t, srv.AddUser("peek@pve", pvefake.UserSpec{}))
	secret, err := srv.AddToken("peek@pve", "tk", pvefake.TokenSpec{})
	must(t, err)
	must(t, srv.SetACL("/", "user", "peek@pve", false, "PVEAuditor"))
	_, err = liveacl.Read(ctx, srv.TokenClient("peek@pve!tk", secret))
	var ve *liveacl.ViewError
	if !errors.Is(err, liveacl.ErrIncompleteView) || !errors.As(err, &ve) ||
		!cmp.Equal(ve.Missing, []string{"Datastore.Audit", "Pool.Audit", "Sys.Audit", "VM.Audit"}) {
		t.Fatalf("PVEAuditor without propagation is not enough to read everything: %v", err)
	}
	must(t, srv.SetACL("/", "user", "peek@pve", true, "PVEAuditor"))
	if _, err := liveacl.Read(ctx, srv.TokenClient("peek@pve!tk", secret)); err != nil {
		t.Errorf("PVEAuditor on / with propagation reads everything: %v", err)
	}
}

func TestReadMatchesServerState(t *testing.T) {
	srv := cluster(t)
	cfg, rep := usercfg.Parse([]byte(userCfg), pveacl.PVE9)
	if rep.Total() > 0 {
		t.Fatalf("fixture warnings: %v", rep.Warnings)
	}
	must(t, srv.SetAccessConfig(cfg))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 100}))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 300}))
	state, err := liveacl.Read(ctx, srv.Client())
	must(t, err)
	want := srv.AccessConfig()
	opts := []cmp.Option{cmpopts.EquateEmpty(), cmpopts.IgnoreFields(pveacl.Config{}, "Resources")}
	if diff := cmp.Diff(want, state, opts...); diff != "" {
		t.Errorf("Read must rebuild the server's access state: -want +got:\n%s", diff)
	}
	if diff := cmp.Diff([]int{100, 300}, state.Resources.VMs); diff != "" {
		t.Errorf("guests come from /cluster/resources: -want +got:\n%s", diff)
	}
}

const userCfg = `user:root@pam:1:0:::root@example.com:::
user:alice@pve:1:0:Alice:Doe:alice@example.com:a%3Acomment::
token:alice@pve!ci:0:1:ci token:
user:bob@pve:0:1900000000:::::
group:ops:alice@pve,bob@pve:the operators:
pool:web:web pool:100:local-lvm:
pool:web/edge::::
role:Deployer:VM.Allocate,VM.Audit,VM.Clone:
acl:1:/:@ops:PVEAuditor:
acl:0:/pool/web:alice@pve,alice@pve!ci:Deployer:
acl:1:/vms/300:bob@pve:NoAccess:
`

func TestApplyNeedsTheTenantsObjects(t *testing.T) {
	srv := pvefake.NewServer(t)
	must(t, srv.AddStorage(pvefake.StorageSpec{ID: "alpha-disks", Type: "lvmthin", Content: []string{"images"}}))
	spec := mustTenants(t, "tenants:\n- name: alpha\n  storage: alpha-disks\n  vms: [100]\n- name: beta\n  storage: beta-disks\n")
	srv.ResetRequests()
	_, err := liveacl.Apply(ctx, srv.Client(), spec, liveacl.WithSecretSink(dirSink(t)))
	if !errors.Is(err, liveacl.ErrNotOnCluster) || !strings.Contains(err.Error(), "VM 100 (tenant alpha), storage beta-disks (tenant beta)") {
		t.Fatalf("PVE would accept but never list missing members, so apply refuses them: %v", err)
	}
	if m := srv.MutatingRequests(); len(m) != 0 {
		t.Errorf("nothing changes: %v", m)
	}
}

func TestApplyWithoutSecretSinkChangesNothing(t *testing.T) {
	srv := cluster(t)
	srv.ResetRequests()
	_, err := liveacl.Apply(ctx, srv.Client(), mustTenants(t, twoTenants))
	if !errors.Is(err, liveacl.ErrNoSecretSink) {
		t.Fatalf("new tokens without a sink must be refused: %v", err)
	}
	if m := srv.MutatingRequests(); len(m) != 0 {
		t.Errorf("nothing may change before the sink is known: %v", m)
	}
}

func TestApplyChangesIsIdempotent(t *testing.T) {
	srv := cluster(t)
	must(t, srv.AddUser("k8s@pve", pvefake.UserSpec{}))
	must(t, srv.AddPool("p1", "", nil, []string{"alpha-disks"}))
	must(t, srv.AddRole("R1", "VM.Audit"))
	changes := []tenantplan.Change{
		{Op: tenantplan.OpCreateRole, Role: "R1", Privs: []string{"VM.Audit", "VM.Console"}},
		{Op: tenantplan.OpCreateUser, User: "k8s@pve", Comment: "pxsubstrate tenant x"},
		{Op: tenantplan.OpCreatePool, Pool: "p1"},
		{Op: tenantplan.OpAddPoolMembers, Pool: "p1", Storages: []string{"alpha-disks", "beta-disks"}},
		{Op: tenantplan.OpDeleteToken, User: "k8s@pve", Token: "gone"},
	}
	res, err := liveacl.ApplyChanges(ctx, srv.Client(), changes)
	must(t, err)
	var outcomes []liveacl.Outcome
	for _, a := range res.Applied {
		outcomes = append(outcomes, a.Outcome)
	}
	want := []liveacl.Outcome{liveacl.OutcomeApplied, liveacl.OutcomePresent, liveacl.OutcomePresent, liveacl.OutcomeApplied, liveacl.OutcomePresent}
	if diff := cmp.Diff(want, outcomes); diff != "" {
		t.Errorf("creates of existing objects are present, the role is updated, missing members added: -want +got:\n%s", diff)
	}
	cfg := srv.AccessConfig()
	if !cmp.Equal(cfg.Roles["R1"].Privs, []string{"VM.Audit", "VM.Console"}) || !cmp.Equal(cfg.Pools["p1"].Storages, []string{"alpha-disks", "beta-disks"}) {
		t.Errorf("end state: role %v, pool %v", cfg.Roles["R1"], cfg.Pools["p1"])
	}
}

func TestApplyStopsAtTheFirstError(t *testing.T) {
	srv := cluster(t)
	must(t, srv.InjectError(pvefake.Fault{Method: "POST", Path: "^/pools$", Status: 500, Message: "create pool failed: cfs-lock 'file-user_cfg' error: got lock request timeout"}))
	_, err := liveacl.Apply(ctx, srv.Client(), mustTenants(t, twoTenants), liveacl.WithSecretSink(dirSink(t)))
	if err == nil || !strings.Contains(err.Error(), "cannot create pool (change 5 of") || !strings.Contains(err.Error(), "got lock request timeout") {
		t.Fatalf("the error names the change and carries PVE's message: %v", err)
	}
	srv.ClearFaults()
	_, err = liveacl.Apply(ctx, srv.Client(), mustTenants(t, twoTenants), liveacl.WithSecretSink(dirSink(t)))
	must(t, err)
	state, err := liveacl.Read(ctx, srv.Client())
	must(t, err)
	if next, _ := tenantplan.Plan(mustTenants(t, twoTenants), state); len(next) != 0 {
		t.Errorf("a rerun after a failure converges: %v", next)
	}
}

func TestApplyPlansForTheLiveVersion(t *testing.T) {
	srv := cluster(t, pvefake.WithVersion(pveacl.PVE8))
	res, err := liveacl.Apply(ctx, srv.Client(), mustTenants(t, twoTenants), liveacl.WithSecretSink(dirSink(t)))
	must(t, err)
	if res.Version != pveacl.PVE8 {
		t.Errorf("the version comes from GET /version: %d", res.Version)
	}
	if got := srv.AccessConfig().Roles[tenantplan.RoleCCM].Privs; !cmp.Equal(got, []string{"VM.Audit", "VM.Monitor"}) {
		t.Errorf("on PVE 8 CozyCCM uses VM.Monitor: %v", got)
	}
}

func TestVersionParsing(t *testing.T) {
	cases := map[string]struct {
		reason string
		in     string
		want   pveacl.Version
		err    bool
	}{
		"Nine":    {reason: "a PVE 9 version string", in: "9.1.1", want: pveacl.PVE9},
		"Eight":   {reason: "a release string", in: "8.4", want: pveacl.PVE8},
		"Seven":   {reason: "unsupported majors are errors", in: "7.4-3", err: true},
		"Garbage": {reason: "no major number", in: "pve", err: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := liveacl.ParseVersion(tc.in)
			if got != tc.want || (err != nil) != tc.err {
				t.Errorf("%s: parseVersion(%q) = %d, %v", tc.reason, tc.in, got, err)
			}
		})
	}
}

func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"9.1.1", "8.4", "10", "", "9", "09.0", " 8.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := liveacl.ParseVersion(s)
		if err != nil {
			return
		}
		if v.Validate() != nil {
			t.Fatalf("parseVersion(%q) = %d, an unsupported version without error", s, v)
		}
		if again, err := liveacl.ParseVersion(strconv.Itoa(int(v))); err != nil || again != v {
			t.Fatalf("the major %d does not parse back: %d, %v", v, again, err)
		}
	})
}
