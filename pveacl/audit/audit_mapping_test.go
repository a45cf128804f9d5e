package audit

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
)

// Two tenants with their own capmox tokens and a third that the
// platform's token clones for, each with its own PCI mappings.
const mappingTenants = `platform:
  capmox: {user: capmox@pve, token: capi}
tenants:
  - name: alpha
    storage: alpha-disks
    tokens: {capmox: capi}
    templates: [9000]
    pciMappings: [gpu-a, gpu-a2]
  - name: beta
    storage: beta-disks
    tokens: {capmox: capi}
    templates: [9000]
    pciMappings: [gpu-b]
  - name: gamma
    storage: gamma-disks
    pciMappings: [gpu-c]
`

// mappingFindings lists the mapping findings as "code subject path privs".
func mappingFindings(rep Report) []string {
	var out []string
	for _, f := range rep.Findings {
		if f.Code == CodeForeignMappingReach || f.Code == CodeMissingMappingUse {
			out = append(out, fmt.Sprintf("%s %s %s %s", f.Code, f.Subject, f.Path, strings.Join(f.Privileges, ",")))
		}
	}
	slices.Sort(out)
	return out
}

// TestTenantMappingsGrantedExactly: after the plan, each tenant's capmox
// token holds Mapping.Use on its own mappings and on no other, the
// platform's on every tenant's, and the audit has no error; the
// platform-wide finding names the tenants whose mappings the platform's
// token reaches.
func TestTenantMappingsGrantedExactly(t *testing.T) {
	spec, err := tenantplan.LoadTenants([]byte(mappingTenants))
	if err != nil {
		t.Fatal(err)
	}
	cfg := converged(t, spec)
	ev := pveacl.NewEvaluator(cfg)
	paths := []string{"/mapping/pci/gpu-a", "/mapping/pci/gpu-a2", "/mapping/pci/gpu-b", "/mapping/pci/gpu-c", "/mapping/pci/nic", "/mapping/pci", "/mapping"}
	want := map[string][]string{
		"alpha@pve!capi":  {"/mapping/pci/gpu-a", "/mapping/pci/gpu-a2"},
		"beta@pve!capi":   {"/mapping/pci/gpu-b"},
		"alpha@pve!csi":   nil,
		"gamma@pve!ccm":   nil,
		"capmox@pve!capi": {"/mapping/pci/gpu-a", "/mapping/pci/gpu-a2", "/mapping/pci/gpu-b", "/mapping/pci/gpu-c"},
	}
	for id, paths0 := range want {
		var got []string
		for _, p := range paths {
			if ev.Permissions(id, p).Has("Mapping.Use") {
				got = append(got, p)
			}
			if ev.Permissions(id, p).Has("Mapping.Modify") {
				t.Errorf("%s holds Mapping.Modify on %s", id, p)
			}
		}
		if diff := cmp.Diff(paths0, got); diff != "" {
			t.Errorf("%s: Mapping.Use (-want +got):\n%s", id, diff)
		}
	}
	rep, err := Run(cfg, spec)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Code{CodePlatformWideToken}, rep.Codes()); diff != "" {
		t.Fatalf("the converged tenants have findings (-want +got):\n%s\n%+v", diff, rep.Findings)
	}
	if msg := rep.Findings[0].Message; !strings.Contains(msg, "holds Mapping.Use on the PCI mappings of 3 (alpha, beta, gamma), so it can give a VM of any tenant another tenant's GPU") {
		t.Errorf("the platform-wide finding does not name the mappings: %s", msg)
	}
}

// TestMappingFindings: each grant of a mapping a tenant does not list,
// and each missing Mapping.Use, is named by subject and path; the
// controls next to them are no finding.
func TestMappingFindings(t *testing.T) {
	spec, err := tenantplan.LoadTenants([]byte(mappingTenants))
	if err != nil {
		t.Fatal(err)
	}
	alpha := []string{"alpha@pve", "alpha@pve!capi"}
	grant := func(path string, propagate bool, role string) func(c *pveacl.Config) {
		return func(c *pveacl.Config) {
			c.ACL[pveacl.ACLKey{Path: path, Kind: pveacl.KindUser, Subject: alpha[0], Role: role}] = propagate
			c.ACL[pveacl.ACLKey{Path: path, Kind: pveacl.KindToken, Subject: alpha[1], Role: role}] = propagate
		}
	}
	both := func(code Code, path, privs string) []string {
		return []string{fmt.Sprintf("%s %s %s %s", code, alpha[0], path, privs), fmt.Sprintf("%s %s %s %s", code, alpha[1], path, privs)}
	}
	reach, probe := CodeForeignMappingReach, "/mapping/pci/pxsubstrate-probe"
	cases := map[string]struct {
		reason string
		mutate func(c *pveacl.Config)
		want   []string
	}{
		"OtherTenants": {reason: "Mapping.Use on beta's mapping", mutate: grant("/mapping/pci/gpu-b", false, "PVEMappingUser"),
			want: both(reach, "/mapping/pci/gpu-b", "Mapping.Use")},
		"Unlisted": {reason: "Mapping.Use on a mapping no tenant lists", mutate: grant("/mapping/pci/nic", false, "PVEMappingUser"),
			want: both(reach, "/mapping/pci/nic", "Mapping.Use")},
		"PropagatingMapping": {reason: "a propagating entry on /mapping reaches every mapping, the ones no entry names included",
			mutate: grant("/mapping", true, "PVEMappingUser"),
			want: slices.Concat(both(reach, "/mapping/pci/gpu-b", "Mapping.Use"), both(reach, "/mapping/pci/gpu-c", "Mapping.Use"),
				both(reach, probe, "Mapping.Use"))},
		"PropagatingPCI": {reason: "so does one on /mapping/pci", mutate: grant("/mapping/pci", true, "PVEMappingUser"),
			want: slices.Concat(both(reach, "/mapping/pci/gpu-b", "Mapping.Use"), both(reach, "/mapping/pci/gpu-c", "Mapping.Use"),
				both(reach, probe, "Mapping.Use"))},
		"PCINotPropagating": {reason: "Mapping.Use on /mapping/pci itself reaches no mapping", mutate: grant("/mapping/pci", false, "PVEMappingUser")},
		"AuditOnly":         {reason: "Mapping.Audit reads a mapping, it uses none", mutate: grant("/mapping/pci/gpu-b", false, pveacl.RoleAuditor)},
		"ModifyOwn": {reason: "Mapping.Modify on its own mapping changes which devices it hands out",
			mutate: grant("/mapping/pci/gpu-a", false, "PVEMappingAdmin"), want: both(reach, "/mapping/pci/gpu-a", "Mapping.Modify")},
		"UseOwn": {reason: "the control: Mapping.Use and Mapping.Audit on its own mapping", mutate: grant("/mapping/pci/gpu-a", false, "PVEMappingUser")},
		"ModifyPCI": {reason: "Mapping.Modify on /mapping/pci creates and deletes mappings",
			mutate: grant("/mapping/pci", false, "PVEMappingAdmin"), want: both(reach, "/mapping/pci", "Mapping.Modify")},
		"MissingOwn": {reason: "alpha's capmox token lost Mapping.Use on gpu-a",
			mutate: func(c *pveacl.Config) {
				delete(c.ACL, pveacl.ACLKey{Path: "/mapping/pci/gpu-a", Kind: pveacl.KindToken, Subject: "alpha@pve!capi", Role: tenantplan.RoleMapping})
			},
			want: []string{"MissingMappingUse alpha@pve!capi /mapping/pci/gpu-a "}},
		"MissingPlatform": {reason: "gamma is cloned by the platform's token, whose user lost Mapping.Use on gpu-c",
			mutate: func(c *pveacl.Config) {
				delete(c.ACL, pveacl.ACLKey{Path: "/mapping/pci/gpu-c", Kind: pveacl.KindUser, Subject: "capmox@pve", Role: tenantplan.RoleMapping})
			},
			want: []string{"MissingMappingUse capmox@pve!capi /mapping/pci/gpu-c "}},
		"PlatformForOwnTokenTenant": {reason: "alpha clones with its own token: the platform token's grant there is not checked",
			mutate: func(c *pveacl.Config) {
				delete(c.ACL, pveacl.ACLKey{Path: "/mapping/pci/gpu-a", Kind: pveacl.KindToken, Subject: "capmox@pve!capi", Role: tenantplan.RoleMapping})
			}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := converged(t, spec)
			tc.mutate(cfg)
			rep, err := Run(cfg, spec)
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(tc.want)
			if diff := cmp.Diff(tc.want, mappingFindings(rep)); diff != "" {
				t.Errorf("%s (-want +got):\n%s\n%+v", tc.reason, diff, rep.Findings)
			}
		})
	}
}

// TestMappingFindingText: a finding says whose mapping it is and how to
// remove the grant.
func TestMappingFindingText(t *testing.T) {
	spec, err := tenantplan.LoadTenants([]byte(mappingTenants))
	if err != nil {
		t.Fatal(err)
	}
	cfg := converged(t, spec)
	cfg.ACL[pveacl.ACLKey{Path: "/mapping/pci/gpu-b", Kind: pveacl.KindUser, Subject: "alpha@pve", Role: "PVEMappingUser"}] = false
	rep, err := Run(cfg, spec)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(rep.Findings, func(f Finding) bool { return f.Code == CodeForeignMappingReach })
	if i < 0 {
		t.Fatalf("no finding: %+v", rep.Findings)
	}
	f := rep.Findings[i]
	for _, s := range []string{"alpha@pve holds Mapping.Use on /mapping/pci/gpu-b, tenant beta's PCI mapping: tenant alpha's VMs can take that tenant's devices"} {
		if !strings.Contains(f.Message, s) {
			t.Errorf("message %q lacks %q", f.Message, s)
		}
	}
	if !strings.Contains(f.Remedy, "pveum acl delete /mapping/pci/gpu-b --users 'alpha@pve' --roles <role>") || f.Severity != SeverityError {
		t.Errorf("finding %+v", f)
	}
}
