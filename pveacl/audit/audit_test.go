package audit

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
)

var tenantNames = []string{"alpha", "beta", "gamma", "delta", "eps"}

// exampleSpec is the specification of the plan's golden files: two
// tenants, one with a VM and a VLAN for capmox, one with every default
// overridden and an extra storage.
func exampleSpec(t testing.TB) *tenantplan.Tenants {
	t.Helper()
	data, err := os.ReadFile("../tenantplan/testdata/tenants.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := tenantplan.LoadTenants(data)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// fataler is what converged needs of a *testing.T or a *rapid.T.
type fataler interface {
	Helper()
	Fatal(args ...any)
}

// converged returns the state after applying the plan of spec to an empty
// cluster.
func converged(t fataler, spec *tenantplan.Tenants) *pveacl.Config {
	t.Helper()
	changes, err := tenantplan.Plan(spec, pveacl.NewConfig(pveacl.PVE9))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := tenantplan.Simulate(pveacl.NewConfig(pveacl.PVE9), changes)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestAuditCleanControl(t *testing.T) {
	spec := exampleSpec(t)
	rep, err := Run(converged(t, spec), spec)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Code{CodePlatformWideToken}, rep.Codes()); diff != "" {
		t.Errorf("a converged cluster has only the informational capmox finding: -want +got:\n%s\n%+v", diff, rep.Findings)
	}
	if rep.HasErrors() || rep.Tenants != 2 || rep.Subjects != 6 {
		t.Errorf("report %+v", rep)
	}
	noCapmox := *spec
	noCapmox.Platform.Capmox = nil
	noCapmox.Tenants = slices.Clone(spec.Tenants)
	for i := range noCapmox.Tenants {
		noCapmox.Tenants[i].Networks = nil
		noCapmox.Tenants[i].PCIMappings = nil
	}
	rep, err = Run(converged(t, &noCapmox), &noCapmox)
	if err != nil || len(rep.Findings) != 0 {
		t.Errorf("without capmox the audit is empty, got %+v (%v)", rep.Findings, err)
	}
}

func TestAuditFindings(t *testing.T) {
	spec := exampleSpec(t)
	type want struct {
		code     Code
		severity Severity
		tenant   string
		subject  string
		path     string
	}
	cases := map[string]struct {
		reason string
		mutate func(c *pveacl.Config)
		want   []want
	}{
		"CrossTenantReach": {
			reason: "alpha's CSI token and user reach a VM of beta's pool",
			mutate: func(c *pveacl.Config) {
				p := c.Pools["tenant-beta"]
				p.VMs = []int{2001}
				c.Pools["tenant-beta"] = p
				for _, s := range []pveacl.ACLKey{{Path: "/vms/2001", Kind: pveacl.KindUser, Subject: "alpha@pve", Role: tenantplan.RoleCSI},
					{Path: "/vms/2001", Kind: pveacl.KindToken, Subject: "alpha@pve!csi", Role: tenantplan.RoleCSI}} {
					c.ACL[s] = false
				}
			},
			want: []want{
				{CodeCrossTenantReach, SeverityError, "alpha", "alpha@pve", "/vms/2001"},
				{CodeCrossTenantReach, SeverityError, "alpha", "alpha@pve!csi", "/vms/2001"},
			},
		},
		"CrossTenantReachUnpooled": {
			reason: "a propagating /vms entry reaches every VM in no pool, and the top-level entry itself is reported",
			mutate: func(c *pveacl.Config) {
				c.Resources.VMs = []int{3000}
				c.ACL[pveacl.ACLKey{Path: "/vms", Kind: pveacl.KindUser, Subject: "k8s-beta@pve", Role: "PVEVMUser"}] = true
			},
			want: []want{
				{CodeCrossTenantReach, SeverityError, "beta", "k8s-beta@pve", "/vms/3000"},
				{CodeCrossTenantReach, SeverityError, "beta", "k8s-beta@pve", "/vms/1001"},
				{CodePropagatingTopLevelACL, SeverityError, "beta", "k8s-beta@pve", "/vms"},
			},
		},
		"SharedTenantStorage": {
			reason: "alpha's storage also sits in beta's pool",
			mutate: func(c *pveacl.Config) {
				p := c.Pools["tenant-beta"]
				p.AddStorage("alpha-disks")
				c.Pools["tenant-beta"] = p
			},
			want: []want{
				{CodeSharedTenantStorage, SeverityError, "", "", "/storage/alpha-disks"},
				// beta's users now reach alpha's storage through their pool role
				{CodeCrossTenantReach, SeverityError, "beta", "k8s-beta@pve", "/storage/alpha-disks"},
				{CodeCrossTenantReach, SeverityError, "beta", "k8s-beta@pve!ccm-beta", "/storage/alpha-disks"},
				{CodeCrossTenantReach, SeverityError, "beta", "k8s-beta@pve!csi-beta", "/storage/alpha-disks"},
			},
		},
		"PropagatingTopLevelACL": {
			reason: "PVEAuditor on / with propagate=1 reaches everything",
			mutate: func(c *pveacl.Config) {
				c.ACL[pveacl.ACLKey{Path: "/", Kind: pveacl.KindToken, Subject: "alpha@pve!ccm", Role: pveacl.RoleAuditor}] = true
				c.ACL[pveacl.ACLKey{Path: "/", Kind: pveacl.KindUser, Subject: "alpha@pve", Role: pveacl.RoleAuditor}] = true
			},
			want: []want{
				{CodeCrossTenantReach, SeverityError, "alpha", "alpha@pve", "/pool/tenant-beta"},
				{CodeCrossTenantReach, SeverityError, "alpha", "alpha@pve", "/vms/1002"},
				{CodeCrossTenantReach, SeverityError, "alpha", "alpha@pve", "/storage/beta-backup"},
				{CodeCrossTenantReach, SeverityError, "alpha", "alpha@pve", "/storage/iso"},
				{CodeCrossTenantReach, SeverityError, "alpha", "alpha@pve!ccm", "/pool/tenant-beta"},
				{CodeCrossTenantReach, SeverityError, "alpha", "alpha@pve!ccm", "/vms/1002"},
				{CodeCrossTenantReach, SeverityError, "alpha", "alpha@pve!ccm", "/storage/beta-backup"},
				{CodeCrossTenantReach, SeverityError, "alpha", "alpha@pve!ccm", "/storage/iso"},
				{CodePropagatingTopLevelACL, SeverityError, "alpha", "alpha@pve", "/"},
				{CodePropagatingTopLevelACL, SeverityError, "alpha", "alpha@pve!ccm", "/"},
			},
		},
		"TokenWithoutPrivsep": {
			reason: "a privsep=0 token holds all of its user's privileges",
			mutate: func(c *pveacl.Config) { c.Users["alpha@pve"].Tokens["csi"] = pveacl.Token{} },
			want: []want{
				{CodeTokenWithoutPrivsep, SeverityError, "alpha", "alpha@pve!csi", ""},
				{CodeTokenBroaderThanRole, SeverityWarning, "alpha", "alpha@pve!csi", "/"},
			},
		},
		"TenantUserInGroup": {
			reason: "a group with entries can widen the user at any time",
			mutate: func(c *pveacl.Config) {
				c.Groups["ops"] = pveacl.Group{Members: []string{"alpha@pve"}}
				c.ACL[pveacl.ACLKey{Path: "/nodes", Kind: pveacl.KindGroup, Subject: "ops", Role: "PVESysAdmin"}] = false
			},
			want: []want{{CodeTenantUserInGroup, SeverityWarning, "alpha", "alpha@pve", "/nodes"}},
		},
		"TokenBroaderThanRole": {
			reason: "the CCM token (and its user) hold VM.PowerMgmt on their own pool",
			mutate: func(c *pveacl.Config) {
				c.ACL[pveacl.ACLKey{Path: "/pool/alpha", Kind: pveacl.KindUser, Subject: "alpha@pve", Role: "PVEVMUser"}] = false
				c.ACL[pveacl.ACLKey{Path: "/pool/alpha", Kind: pveacl.KindToken, Subject: "alpha@pve!ccm", Role: "PVEVMUser"}] = false
			},
			want: []want{{CodeTokenBroaderThanRole, SeverityWarning, "alpha", "alpha@pve!ccm", "/pool/alpha"}},
		},
		"NestedTenantPool": {
			reason: "a pool inside a tenant pool",
			mutate: func(c *pveacl.Config) { c.Pools["alpha/extra"] = pveacl.Pool{} },
			want:   []want{{CodeNestedTenantPool, SeverityWarning, "alpha", "", "/pool/alpha/extra"}},
		},
		"TenantIncomplete": {
			reason: "a missing token and a storage outside the pool",
			mutate: func(c *pveacl.Config) {
				delete(c.Users["k8s-beta@pve"].Tokens, "ccm-beta")
				for k := range c.ACL {
					if k.Subject == "k8s-beta@pve!ccm-beta" {
						delete(c.ACL, k)
					}
				}
				p := c.Pools["tenant-beta"]
				p.Storages = []string{"beta-disks"}
				c.Pools["tenant-beta"] = p
			},
			want: []want{{CodeTenantIncomplete, SeverityWarning, "beta", "", ""}},
		},
	}
	clean, err := Run(converged(t, spec), spec)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for _, w := range tc.want {
				if slices.ContainsFunc(clean.Findings, func(f Finding) bool { return f.Code == w.code }) {
					t.Fatalf("control: the clean cluster already has %s", w.code)
				}
			}
			cfg := converged(t, spec)
			tc.mutate(cfg)
			rep, err := Run(cfg, spec)
			if err != nil {
				t.Fatal(err)
			}
			var got []want
			for _, f := range rep.Findings {
				if f.Code == CodePlatformWideToken {
					continue
				}
				if f.Message == "" || f.Remedy == "" {
					t.Errorf("finding without message or remedy: %+v", f)
				}
				got = append(got, want{f.Code, f.Severity, f.Tenant, f.Subject, f.Path})
			}
			sortWants := cmpopts.SortSlices(func(a, b want) bool {
				return string(a.code)+a.subject+a.path < string(b.code)+b.subject+b.path
			})
			if diff := cmp.Diff(tc.want, got, sortWants, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestAuditTenantIncompleteMessage(t *testing.T) {
	spec := exampleSpec(t)
	rep, err := Run(pveacl.NewConfig(pveacl.PVE9), spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 2 || !strings.Contains(rep.Findings[0].Message, "missing: user alpha@pve, token alpha@pve!csi, token alpha@pve!ccm, pool alpha") {
		t.Errorf("an empty cluster lists what each tenant lacks, got %+v", rep.Findings)
	}
}
