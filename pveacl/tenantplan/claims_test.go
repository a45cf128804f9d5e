package tenantplan

import (
	"errors"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// TestForeignTemplateRefused: a template that another tenant lists under
// vms, or that lies inside another tenant's vmIDRange, is refused, since
// the tenant's capmox token would hold VM.Clone on that tenant's VM; the
// control, a template two tenants share and neither owns, is planned with
// CozyClone for both.
func TestForeignTemplateRefused(t *testing.T) {
	const head = "tenants:\n- name: alpha\n  storage: a1\n"
	const beta = "- name: beta\n  storage: b1\n  tokens: {capmox: capi}\n  templates: [9000]\n"
	for name, tc := range map[string]struct{ yaml, want string }{
		"ListedVM": {head + "  vms: [9000]\n" + beta,
			`tenants[1].templates[0]: template 9000 of tenant "beta" is tenant "alpha"'s VM (listed in its vms, tenants[0]): its capmox token would hold VM.Clone there, and a full clone copies that tenant's disks into pool "beta"`},
		"InsideRange": {head + "  vmIDRange: {start: 8000, end: 9999}\n" + beta,
			`tenants[1].templates[0]: template 9000 of tenant "beta" is tenant "alpha"'s VM (inside its vmIDRange 8000-9999, tenants[0])`},
		"ListedAfter": {"tenants:\n" + beta[0:] + "- name: alpha\n  storage: a1\n  vms: [9000]\n",
			`tenants[0].templates[0]: template 9000 of tenant "beta" is tenant "alpha"'s VM (listed in its vms, tenants[1])`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := LoadTenants([]byte(tc.yaml))
			if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v\nwant an ErrInvalidSpec containing %q", err, tc.want)
			}
			if _, perr := Plan(mustParse(t, tc.yaml), pveacl.NewConfig(pveacl.PVE9)); perr == nil {
				t.Fatal("Plan accepted the specification that LoadTenants refuses")
			}
		})
	}
	shared := head + "  tokens: {capmox: capi}\n  templates: [9000]\n  vmIDRange: {start: 100, end: 899}\n" + beta
	spec, err := LoadTenants([]byte(shared))
	if err != nil {
		t.Fatalf("control: a template no tenant owns, shared by two: %v", err)
	}
	changes, err := Plan(spec, pveacl.NewConfig(pveacl.PVE9))
	if err != nil {
		t.Fatal(err)
	}
	clones := 0
	for _, c := range changes {
		if c.Path == "/vms/9000" && strings.Contains(strings.Join(c.Roles, ","), RoleClone) {
			clones++
		}
	}
	if clones != 4 { // each tenant's user and capmox token
		t.Errorf("control: want CozyClone on /vms/9000 for two users and two tokens, got %d entries", clones)
	}
}

// mustParse reads a specification without validating it, as a program
// that builds Tenants itself hands it to Plan.
func mustParse(t *testing.T, data string) *Tenants {
	t.Helper()
	var spec Tenants
	if err := yaml.UnmarshalStrict([]byte(data), &spec); err != nil {
		t.Fatal(err)
	}
	return &spec
}

// TestOtherTenantsVMByPool: with the cluster's pools, a VM in another
// tenant's pool (or a pool nested in it) is that tenant's; in the asking
// tenant's own pool, or in a pool of no tenant, it is no one else's.
func TestOtherTenantsVMByPool(t *testing.T) {
	spec, err := LoadTenants([]byte("tenants:\n- {name: alpha, storage: a1}\n- {name: beta, pool: tenant-beta, storage: b1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	pools := map[int][]string{1: {"alpha"}, 2: {"alpha/sub"}, 3: {"tenant-beta"}, 4: {"templates"}}
	poolsOf := func(vm int) []string { return pools[vm] }
	for vm, want := range map[int]string{1: "alpha", 2: "alpha", 3: "", 4: "", 5: ""} {
		got := ""
		if c := spec.OtherTenantsVM("beta", vm, poolsOf); len(c) > 0 {
			got = c[0].Tenant
		}
		if got != want {
			t.Errorf("VM %d: owner other than beta %q, want %q", vm, got, want)
		}
	}
	if c := spec.OtherTenantsVM("beta", 1, nil); len(c) != 0 {
		t.Errorf("without the cluster's pools the specification alone decides: %+v", c)
	}
}
