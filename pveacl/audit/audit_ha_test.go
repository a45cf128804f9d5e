package audit

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
	"github.com/pxsubstrate/pxsubstrate/pveacl/usercfg"
)

// haSpec is the golden specification with the pool HA credentials.
func haSpec(t testing.TB) *tenantplan.Tenants {
	t.Helper()
	spec := exampleSpec(t)
	spec.Platform.HA = &tenantplan.Credential{User: "poolha@pve", Token: "ha"}
	return spec
}

var haCodes = []Code{CodeHAIncomplete, CodeHAReach, CodeHABroaderThanRole, CodeHAUserInGroup}

// haFindings are the findings about the pool HA user and its tokens.
func haFindings(rep Report) []Finding {
	return slices.DeleteFunc(slices.Clone(rep.Findings), func(f Finding) bool {
		return !strings.HasPrefix(f.Subject, "poolha@pve")
	})
}

// TestAuditHAClean: the plan's own HA user and token audit clean, as the
// control of every case of TestAuditHAFindings.
func TestAuditHAClean(t *testing.T) {
	spec := haSpec(t)
	rep, err := Run(converged(t, spec), spec)
	if err != nil {
		t.Fatal(err)
	}
	if got := haFindings(rep); len(got) != 0 {
		t.Fatalf("the planned pool HA credentials have findings: %+v", got)
	}
	for _, c := range haCodes {
		if slices.Contains(rep.Codes(), c) {
			t.Fatalf("the planned cluster has %s: %+v", c, rep.Findings)
		}
	}
	if rep.HasErrors() {
		t.Fatalf("the planned cluster has errors: %+v", rep.Findings)
	}
}

// TestAuditHAFindings: each way the pool HA user or token can hold more
// (or less) than CozyHA on / is found, by its own code.
func TestAuditHAFindings(t *testing.T) {
	type want struct {
		code     Code
		severity Severity
		subject  string
		path     string
	}
	const user, token = "poolha@pve", "poolha@pve!ha"
	grant := func(c *pveacl.Config, path string, kind pveacl.SubjectKind, subject, role string, propagate bool) {
		c.ACL[pveacl.ACLKey{Path: path, Kind: kind, Subject: subject, Role: role}] = propagate
	}
	both := func(path, role string, propagate bool) func(c *pveacl.Config) {
		return func(c *pveacl.Config) {
			grant(c, path, pveacl.KindUser, user, role, propagate)
			grant(c, path, pveacl.KindToken, token, role, propagate)
		}
	}
	cases := map[string]struct {
		mutate func(c *pveacl.Config)
		want   []want
		// some: the findings must include these (a broad grant yields
		// one HAReach per path; the case lists those that matter).
		some bool
	}{
		"AdminGroup": {
			mutate: func(c *pveacl.Config) {
				c.Groups["admins"] = pveacl.Group{Members: []string{user}}
				grant(c, "/", pveacl.KindGroup, "admins", "Administrator", true)
				grant(c, "/", pveacl.KindToken, token, "Administrator", true)
			},
			// On / itself the user's own entry (CozyHA) overrides its
			// group's, as in PVE; below /, the group's Administrator
			// propagates.
			want: []want{
				{CodeHAUserInGroup, SeverityWarning, user, "/"},
				{CodePropagatingTopLevelACL, SeverityError, token, "/"},
				{CodeHAReach, SeverityError, token, "/vms"},
				{CodeHAReach, SeverityError, token, "/pool/alpha"},
				{CodeHAReach, SeverityError, user, "/nodes"},
			},
			some: true,
		},
		"AdminOnRoot": {
			mutate: both("/", "Administrator", false),
			want: []want{
				{CodeHABroaderThanRole, SeverityError, user, "/"},
				{CodeHABroaderThanRole, SeverityError, token, "/"},
			},
		},
		"RoleOnTenantPool": {
			mutate: both("/pool/tenant-beta", tenantplan.RoleCSI, false),
			want: []want{
				{CodeHAReach, SeverityError, user, "/pool/tenant-beta"},
				{CodeHAReach, SeverityError, token, "/pool/tenant-beta"},
			},
			some: true,
		},
		"RoleWithExtraPrivileges": {
			mutate: func(c *pveacl.Config) {
				c.Roles[tenantplan.RoleHA] = pveacl.Role{Privs: []string{"Permissions.Modify", "Sys.Audit", "Sys.Console"}}
			},
			want: []want{
				{CodeHABroaderThanRole, SeverityError, user, "/"},
				{CodeHABroaderThanRole, SeverityError, token, "/"},
			},
		},
		"TokenWithoutPrivsep": {
			mutate: func(c *pveacl.Config) {
				c.Users[user].Tokens["ha"] = pveacl.Token{}
			},
			want: []want{{CodeTokenWithoutPrivsep, SeverityError, token, ""}},
		},
		"NoToken": {
			mutate: func(c *pveacl.Config) {
				delete(c.Users[user].Tokens, "ha")
				delete(c.ACL, pveacl.ACLKey{Path: "/", Kind: pveacl.KindToken, Subject: token, Role: tenantplan.RoleHA})
			},
			want: []want{{CodeHAIncomplete, SeverityWarning, token, ""}},
		},
		"ACLOnNodes": {
			mutate: both("/nodes", "PVEAuditor", true),
			want: []want{
				{CodeHAReach, SeverityError, user, "/nodes"},
				{CodeHAReach, SeverityError, user, "/nodes/pxsubstrate-probe"},
				{CodeHAReach, SeverityError, token, "/nodes"},
				{CodeHAReach, SeverityError, token, "/nodes/pxsubstrate-probe"},
			},
		},
		"PropagationOnRoot": {
			mutate: both("/", tenantplan.RoleHA, true),
			want: []want{
				{CodePropagatingTopLevelACL, SeverityError, user, "/"},
				{CodePropagatingTopLevelACL, SeverityError, token, "/"},
				{CodeHAReach, SeverityError, token, "/vms"},
				{CodeHAReach, SeverityError, token, "/storage/alpha-disks"},
				{CodeHAReach, SeverityError, token, "/nodes/pxsubstrate-probe"},
			},
			some: true,
		},
		"MissingACL": {
			mutate: func(c *pveacl.Config) {
				delete(c.ACL, pveacl.ACLKey{Path: "/", Kind: pveacl.KindToken, Subject: token, Role: tenantplan.RoleHA})
			},
			want: []want{{CodeHAIncomplete, SeverityWarning, token, ""}},
		},
	}
	spec := haSpec(t)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := converged(t, spec)
			tc.mutate(cfg)
			rep, err := Run(cfg, spec)
			if err != nil {
				t.Fatal(err)
			}
			var got []want
			for _, f := range haFindings(rep) {
				if f.Message == "" || f.Remedy == "" || f.Tenant != "" {
					t.Errorf("finding without message or remedy, or with a tenant: %+v", f)
				}
				got = append(got, want{f.Code, f.Severity, f.Subject, f.Path})
			}
			if tc.some {
				for _, w := range tc.want {
					if !slices.Contains(got, w) {
						t.Errorf("missing %+v in %+v", w, got)
					}
				}
				return
			}
			less := cmpopts.SortSlices(func(a, b want) bool { return string(a.code)+a.subject+a.path < string(b.code)+b.subject+b.path })
			if diff := cmp.Diff(tc.want, got, less, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("-want +got:\n%s", diff)
			}
		})
	}
}

// TestAuditTemplateOfAnotherTenant: a template a tenant lists (CozyClone
// on /vms/9000 for its capmox token) that sits in another tenant's pool on
// the cluster is that tenant's VM, and the clone grant is CrossTenantReach;
// the control, the same template in no pool, audits clean.
func TestAuditTemplateOfAnotherTenant(t *testing.T) {
	spec, err := tenantplan.LoadTenants([]byte(`tenants:
- {name: alpha, storage: a1}
- {name: beta, storage: b1, tokens: {capmox: capi}, templates: [9000]}
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := converged(t, spec)
	cfg.Resources.VMs = []int{9000}
	rep, err := Run(cfg, spec)
	if err != nil {
		t.Fatal(err)
	}
	if rep.HasErrors() {
		t.Fatalf("control: a template in no pool: %+v", rep.Findings)
	}
	p := cfg.Pools["alpha"]
	p.AddVM(9000)
	cfg.Pools["alpha"] = p
	rep, err = Run(cfg, spec)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range rep.Findings {
		if f.Code == CodeCrossTenantReach && f.Path == "/vms/9000" {
			got = append(got, f.Subject)
			if !strings.Contains(f.Message, "a template tenant beta lists, but tenant alpha's VM, in its pool alpha") || strings.Join(f.Privileges, ",") != "VM.Audit,VM.Clone" {
				t.Errorf("finding %+v", f)
			}
		}
	}
	slices.Sort(got)
	if diff := cmp.Diff([]string{"beta@pve", "beta@pve!capi"}, got); diff != "" {
		t.Errorf("the clone grants on alpha's VM (-want +got):\n%s\n%+v", diff, rep.Findings)
	}
}

// TestAuditHAMatchesBruteForce: with random entries for the pool HA user,
// its token and a group it is in, the audit reports HAReach for a subject
// exactly when it holds a privilege on some path below / (checked over
// every node, VM, storage, pool, SDN and mapping path of the cluster,
// named by an entry or not), and HABroaderThanRole exactly when it holds
// more than CozyHA on / itself.
func TestAuditHAMatchesBruteForce(t *testing.T) {
	const user, token = "poolha@pve", "poolha@pve!ha"
	subjects := []subjectRef{{pveacl.KindUser, user}, {pveacl.KindToken, token}, {pveacl.KindGroup, "ops"}}
	named := []string{"/", "/nodes", "/nodes/pve1", "/vms", "/vms/4000", "/storage", "/storage/iso", "/pool", "/pool/infra",
		"/sdn", "/sdn/zones/z1", "/sdn/zones/z1/vmbr1/100", "/mapping", "/mapping/pci/gpu", "/access", "/access/groups"}
	unnamed := []string{"/nodes/pve2", "/vms/4001", "/vms/4100", "/storage/local", "/storage/infra-disks", "/sdn/zones/z2",
		"/sdn/zones/z1/vmbr2", "/mapping/usb/key", "/access/users", "/access/realm/pve", "/pool/infra/sub"}
	roles := []string{pveacl.RoleNoAccess, pveacl.RoleAuditor, "PVEVMUser", "PVESDNUser", "PVEMappingUser", tenantplan.RoleHA, "Administrator"}
	rapid.Check(t, func(t *rapid.T) {
		spec := drawTenants(t)
		spec.Platform.HA = &tenantplan.Credential{User: "poolha@pve", Token: "ha"}
		cfg := convergedFor(t, spec)
		for n := rapid.IntRange(0, 6).Draw(t, "entries"); n > 0; n-- {
			s := rapid.SampledFrom(subjects).Draw(t, "subject")
			k := pveacl.ACLKey{Path: rapid.SampledFrom(named).Draw(t, "path"), Kind: s.kind, Subject: s.id, Role: rapid.SampledFrom(roles).Draw(t, "role")}
			cfg.ACL[k] = rapid.Bool().Draw(t, "propagate")
		}
		if rapid.Bool().Draw(t, "inGroup") {
			cfg.Groups["ops"] = pveacl.Group{Members: []string{user}}
		}
		rep, err := Run(cfg, spec)
		if err != nil {
			t.Fatal(err)
		}
		ev := pveacl.NewEvaluator(cfg)
		universe := append(append(slices.Clone(named[1:]), unnamed...), haTopPaths...)
		for _, p := range named[1:] {
			universe = append(universe, p+"/later") // a child that may appear later
		}
		for _, tn := range spec.Tenants {
			universe = append(universe, pveacl.PoolPath(tn.Pool), pveacl.StoragePath(tn.Storage), pveacl.VMPath(tn.VMs[0]))
		}
		for _, s := range []string{user, token} {
			var reached []string
			for _, p := range universe {
				if !ev.Permissions(s, p).Empty() {
					reached = append(reached, p)
				}
			}
			reported := slices.ContainsFunc(rep.Findings, func(f Finding) bool { return f.Code == CodeHAReach && f.Subject == s })
			if reported != (len(reached) > 0) {
				t.Fatalf("%s reaches %v below /, HAReach reported: %v\n%+v\n%s", s, reached, reported, rep.Findings, usercfg.Marshal(cfg))
			}
			broader := !ev.Permissions(s, "/").Minus(tenantplan.HAPrivileges(cfg.Version)).Empty()
			if got := slices.ContainsFunc(rep.Findings, func(f Finding) bool { return f.Code == CodeHABroaderThanRole && f.Subject == s }); got != broader {
				t.Fatalf("%s holds %v on /, HABroaderThanRole reported: %v\n%s", s, ev.Permissions(s, "/").Names(), got, usercfg.Marshal(cfg))
			}
		}
	})
}
