package tenantplan_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
)

// TestTenantPCIMappings: each refusal of pciMappings next to the admitted
// specification it differs from. The id is PVE's pve-configid (a letter,
// then one or more letters, digits, '-' or '_', of either case), a mapping
// is one tenant's, and Mapping.Use needs a capmox token to go to.
func TestTenantPCIMappings(t *testing.T) {
	const platform = "platform:\n  capmox: {user: capmox@pve, token: capi}\n"
	tenants := func(a, b string) string {
		return "tenants:\n- name: a\n  storage: s1\n" + a + "- name: b\n  storage: s2\n" + b
	}
	cases := map[string]struct {
		reason string
		yaml   string
		want   string // "" admits
	}{
		"Admitted": {reason: "two tenants, each with its own mappings",
			yaml: platform + tenants("  pciMappings: [gpu-a, GPU_a2]\n", "  pciMappings: [gpu-b]\n")},
		"BadID": {reason: "an id starts with a letter",
			yaml: platform + tenants("  pciMappings: [1gpu]\n", ""),
			want: `tenants[0].pciMappings[0]: PCI mapping "1gpu" is not a Proxmox VE mapping ID: a letter, then one or more letters, digits, '-' or '_'`},
		"BadIDDot": {reason: "a dot is no configid character", yaml: platform + tenants("  pciMappings: [gpu.a]\n", ""),
			want: `tenants[0].pciMappings[0]: PCI mapping "gpu.a" is not a Proxmox VE mapping ID`},
		"BadIDShort": {reason: "an id has two characters at least", yaml: platform + tenants("  pciMappings: [g]\n", ""),
			want: `tenants[0].pciMappings[0]: PCI mapping "g" is not a Proxmox VE mapping ID`},
		"ShortAdmitted": {reason: "two characters are enough", yaml: platform + tenants("  pciMappings: [g0]\n", "")},
		"Twice": {reason: "a mapping listed twice by one tenant",
			yaml: platform + tenants("  pciMappings: [gpu-a, gpu-a]\n", ""),
			want: `tenants[0].pciMappings[1]: PCI mapping "gpu-a" is listed twice`},
		"TwoTenants": {reason: "a mapping's devices would be shared between tenants",
			yaml: platform + tenants("  pciMappings: [gpu-a]\n", "  pciMappings: [gpu-b, gpu-a]\n"),
			want: `tenants[1].pciMappings[1]: PCI mapping "gpu-a" of tenant "b" is also tenant "a"'s (tenants[0]): both tenants' VMs could take its devices`},
		"CaseDiffers": {reason: "mapping ids differ by case: PVE keeps them apart, and so do the ACL paths",
			yaml: platform + tenants("  pciMappings: [gpu]\n", "  pciMappings: [GPU]\n")},
		"NoCapmox": {reason: "Mapping.Use goes to the capmox token that clones",
			yaml: tenants("  pciMappings: [gpu-a]\n", ""),
			want: "tenants[0].pciMappings: pciMappings need platform.capmox or tokens.capmox"},
		"OwnCapmox": {reason: "the tenant's own capmox token is enough",
			yaml: tenants("  tokens: {capmox: capmox}\n  templates: [9000]\n  pciMappings: [gpu-a]\n", "")},
		"PVE8": {reason: "PVE 8.0 introduced the mappings", yaml: "platform:\n  pveVersion: 8\n  capmox: {user: capmox@pve, token: capi}\n" + tenants("  pciMappings: [gpu-a]\n", "")},
		"PVE7": {reason: "PVE 7 has no mappings, nor Mapping.Use",
			yaml: "platform:\n  pveVersion: 7\n  capmox: {user: capmox@pve, token: capi}\n" + tenants("  pciMappings: [gpu-a]\n", ""),
			want: "tenants[0].pciMappings: PCI resource mappings and their Mapping.Use exist since Proxmox VE 8.0, not in Proxmox VE 7"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec, err := tenantplan.LoadTenants([]byte(tc.yaml))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("%s: refused: %v", tc.reason, err)
				}
				return
			}
			if err == nil || !errors.Is(err, tenantplan.ErrInvalidSpec) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%s: error %v, want %q", tc.reason, err, tc.want)
			}
			if spec != nil {
				t.Errorf("%s: a refused specification is returned", tc.reason)
			}
		})
	}
	_, err := tenantplan.LoadTenants([]byte(platform + tenants("  pciMappings: [1gpu, gpu.a, g]\n", "")))
	if n := strings.Count(err.Error(), "is not a Proxmox VE mapping ID"); n != 3 {
		t.Errorf("every bad id is named, got %d in %v", n, err)
	}
}

// TestPCIMappingsDefaulted: Defaulted copies the list, so a change to the
// copy leaves the specification as it was.
func TestPCIMappingsDefaulted(t *testing.T) {
	spec := &tenantplan.Tenants{Tenants: []tenantplan.Tenant{{Name: "a", Storage: "s1", PCIMappings: []string{"gpu-a"}}}}
	d := spec.Defaulted()
	d.Tenants[0].PCIMappings[0] = "gpu-x"
	if diff := cmp.Diff([]string{"gpu-a"}, spec.Tenants[0].PCIMappings); diff != "" {
		t.Errorf("Defaulted shares the list (-want +got):\n%s", diff)
	}
}
