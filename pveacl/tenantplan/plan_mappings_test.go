package tenantplan

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// mappingEntries lists the ACL entries on /mapping and below as
// "path kind subject role propagate", sorted.
func mappingEntries(c *pveacl.Config) []string {
	var out []string
	for k, prop := range c.ACL {
		if k.Path == "/mapping" || strings.HasPrefix(k.Path, "/mapping/") {
			out = append(out, fmt.Sprintf("%s %s %s %s %v", k.Path, k.Kind, k.Subject, k.Role, prop))
		}
	}
	slices.Sort(out)
	return out
}

const mappingTenants = `tenants:
- name: a
  storage: s1
  tokens: {capmox: capmox}
  templates: [9000]
  pciMappings: [gpu-a, gpu-a2]
- name: b
  storage: s2
  tokens: {capmox: capmox}
  templates: [9000]
  pciMappings: [gpu-b]
- name: c
  storage: s3
  tokens: {capmox: capmox}
  templates: [9000]
`

// TestPlanPCIMappings: the capmox token that clones a tenant's VMs, and
// its user, get CozyMapping (Mapping.Use alone) on each of the tenant's
// mappings, propagate=0, on PVE 8 and 9; with platform.capmox the
// platform's token gets it on every tenant's mappings too, as it gets
// SDN.Use on every tenant's VLANs. A tenant without mappings gets
// nothing on /mapping, and a plan without mappings creates no role.
func TestPlanPCIMappings(t *testing.T) {
	own := []string{
		"/mapping/pci/gpu-a token a@pve!capmox CozyMapping false", "/mapping/pci/gpu-a user a@pve CozyMapping false",
		"/mapping/pci/gpu-a2 token a@pve!capmox CozyMapping false", "/mapping/pci/gpu-a2 user a@pve CozyMapping false",
		"/mapping/pci/gpu-b token b@pve!capmox CozyMapping false", "/mapping/pci/gpu-b user b@pve CozyMapping false",
	}
	platform := []string{
		"/mapping/pci/gpu-a token capmox@pve!capi CozyMapping false", "/mapping/pci/gpu-a user capmox@pve CozyMapping false",
		"/mapping/pci/gpu-a2 token capmox@pve!capi CozyMapping false", "/mapping/pci/gpu-a2 user capmox@pve CozyMapping false",
		"/mapping/pci/gpu-b token capmox@pve!capi CozyMapping false", "/mapping/pci/gpu-b user capmox@pve CozyMapping false",
	}
	cases := map[string]struct {
		yaml string
		want []string
	}{
		"OwnTokens":     {mappingTenants, own},
		"PlatformToo":   {"platform:\n  capmox: {user: capmox@pve, token: capi}\n" + mappingTenants, slices.Concat(own, platform)},
		"PlatformAlone": {"platform:\n  capmox: {user: capmox@pve, token: capi}\ntenants:\n- {name: a, storage: s1, pciMappings: [gpu-a, gpu-a2]}\n- {name: b, storage: s2, pciMappings: [gpu-b]}\n", platform},
		"NoMappings":    {strings.ReplaceAll(strings.ReplaceAll(mappingTenants, "  pciMappings: [gpu-a, gpu-a2]\n", ""), "  pciMappings: [gpu-b]\n", ""), nil},
	}
	for name, tc := range cases {
		for _, v := range []pveacl.Version{pveacl.PVE8, pveacl.PVE9} {
			t.Run(fmt.Sprintf("%s/PVE%d", name, v), func(t *testing.T) {
				spec, err := LoadTenants([]byte(tc.yaml))
				if err != nil {
					t.Fatal(err)
				}
				changes, err := Plan(spec, pveacl.NewConfig(v), WithVersion(v))
				if err != nil {
					t.Fatal(err)
				}
				after, err := Simulate(pveacl.NewConfig(v), changes)
				if err != nil {
					t.Fatal(err)
				}
				slices.Sort(tc.want)
				if diff := cmp.Diff(tc.want, mappingEntries(after)); diff != "" {
					t.Errorf("entries on /mapping (-want +got):\n%s", diff)
				}
				role, ok := after.Roles[RoleMapping]
				switch {
				case tc.want == nil && ok:
					t.Errorf("a plan without mappings creates %s", RoleMapping)
				case tc.want != nil && !slices.Equal(role.Privs, []string{"Mapping.Use"}):
					t.Errorf("%s holds %v, want Mapping.Use alone", RoleMapping, role.Privs)
				}
				if next, err := Plan(spec, after, WithVersion(v)); err != nil || len(next) != 0 {
					t.Errorf("the plan does not converge: %v %+v", err, next)
				}
			})
		}
	}
}

// TestRenderPCIMappings: the pveum program creates CozyMapping and sets
// each grant without propagation; removing a mapping from a tenant plans
// the removal of exactly its entries, for the tenant's token and user and
// the platform's.
func TestRenderPCIMappings(t *testing.T) {
	spec, changes := planPlatformMappings(t)
	var b bytes.Buffer
	if err := RenderPveum(&b, changes, pveacl.PVE9); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"pveum role add CozyMapping --privs Mapping.Use\n",
		"pveum acl modify /mapping/pci/gpu-a --tokens 'a@pve!capmox' --roles CozyMapping --propagate 0\n",
		"pveum acl modify /mapping/pci/gpu-a --users a@pve --roles CozyMapping --propagate 0\n",
		"pveum acl modify /mapping/pci/gpu-b --tokens 'capmox@pve!capi' --roles CozyMapping --propagate 0\n",
	} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("the program lacks %q:\n%s", line, b.String())
		}
	}
	cfg, err := Simulate(pveacl.NewConfig(pveacl.PVE9), changes)
	if err != nil {
		t.Fatal(err)
	}
	spec.Tenants[0].PCIMappings = []string{"gpu-a2"}
	changes, err = Plan(spec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range changes {
		got = append(got, PveumCommand(c))
	}
	want := []string{
		"pveum acl delete /mapping/pci/gpu-a --tokens 'a@pve!capmox' --roles CozyMapping",
		"pveum acl delete /mapping/pci/gpu-a --tokens 'capmox@pve!capi' --roles CozyMapping",
		"pveum acl delete /mapping/pci/gpu-a --users a@pve --roles CozyMapping",
		"pveum acl delete /mapping/pci/gpu-a --users capmox@pve --roles CozyMapping",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("removing gpu-a from tenant a (-want +got):\n%s", diff)
	}
	after, err := Simulate(cfg, changes)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range mappingEntries(after) {
		if strings.HasPrefix(e, "/mapping/pci/gpu-a ") {
			t.Errorf("an entry on the removed mapping stays: %s", e)
		}
	}
}

// planPlatformMappings loads mappingTenants with a platform capmox token
// and plans them on an empty PVE 9 cluster.
func planPlatformMappings(t *testing.T) (*Tenants, []Change) {
	t.Helper()
	spec, err := LoadTenants([]byte("platform:\n  capmox: {user: capmox@pve, token: capi}\n" + mappingTenants))
	if err != nil {
		t.Fatal(err)
	}
	changes, err := Plan(spec, pveacl.NewConfig(pveacl.PVE9))
	if err != nil {
		t.Fatal(err)
	}
	return spec, changes
}

// TestPrunePCIMappings: pruning a tenant deletes its user and tokens and
// with them their entries on its mappings; the platform token's entries
// on them go with the next plan, which no longer asks for them.
func TestPrunePCIMappings(t *testing.T) {
	spec, changes := planPlatformMappings(t)
	cfg, err := Simulate(pveacl.NewConfig(pveacl.PVE9), changes)
	if err != nil {
		t.Fatal(err)
	}
	spec.Tenants = spec.Tenants[1:]
	prune, _, err := Prune(spec, cfg, []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	pruned, err := Simulate(cfg, prune)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range mappingEntries(pruned) {
		if strings.Contains(e, " a@pve") {
			t.Errorf("an entry of the pruned tenant stays: %s", e)
		}
	}
	changes, err = Plan(spec, pruned)
	if err != nil {
		t.Fatal(err)
	}
	after, err := Simulate(pruned, changes)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"/mapping/pci/gpu-b token b@pve!capmox CozyMapping false", "/mapping/pci/gpu-b token capmox@pve!capi CozyMapping false",
		"/mapping/pci/gpu-b user b@pve CozyMapping false", "/mapping/pci/gpu-b user capmox@pve CozyMapping false",
	}
	if diff := cmp.Diff(want, mappingEntries(after)); diff != "" {
		t.Errorf("after the prune and a plan only tenant b's mapping is granted (-want +got):\n%s", diff)
	}
	if got := slices.Collect(maps.Keys(after.Roles)); !slices.Contains(got, RoleMapping) {
		t.Errorf("the role stays while a tenant uses it: %v", got)
	}
}
