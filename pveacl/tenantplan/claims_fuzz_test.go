package tenantplan_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
)

// FuzzTemplatesStayWithinTenant: whatever tenant file with templates,
// VMs and VM id ranges LoadTenants admits, its plan grants a tenant's
// user or capmox token CozyClone only on a VM that no other tenant lists
// under vms and that lies inside no other tenant's vmIDRange (checked here
// from the file itself, not through the rule under test).
func FuzzTemplatesStayWithinTenant(f *testing.F) {
	for _, seed := range []string{
		"tenants:\n- {name: alpha, storage: a1, vms: [9000]}\n- {name: beta, storage: b1, tokens: {capmox: capi}, templates: [9000]}\n",
		"tenants:\n- {name: alpha, storage: a1, vmIDRange: {start: 8000, end: 9999}}\n- {name: beta, storage: b1, tokens: {capmox: capi}, templates: [9000]}\n",
		"tenants:\n- {name: alpha, storage: a1, tokens: {capmox: capi}, templates: [9000], vmIDRange: {start: 100, end: 899}}\n- {name: beta, storage: b1, tokens: {capmox: capi}, templates: [9000, 9001]}\n",
		"tenants:\n- {name: alpha, storage: a1, tokens: {capmox: capi}, templates: [150], vmIDRange: {start: 100, end: 199}}\n",
		"tenants:\n- {name: alpha, storage: a1, tokens: {capmox: capi}, templates: [9000], vms: [9000]}\n",
		"platform: {capmox: {user: capmox@pve, token: capi}}\ntenants:\n- {name: a, storage: a1, vms: [120], tokens: {capmox: c}, templates: [130]}\n- {name: b, storage: b1, vmIDRange: {start: 125, end: 135}}\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := tenantplan.LoadTenants(data)
		if err != nil {
			return
		}
		changes, err := tenantplan.Plan(spec, pveacl.NewConfig(spec.Platform.PVEVersion))
		if err != nil {
			t.Fatalf("a loaded specification is not planned: %v", err)
		}
		for _, c := range changes {
			if c.Op != tenantplan.OpSetACL || !slices.Contains(c.Roles, tenantplan.RoleClone) {
				continue
			}
			holder := tenantOf(spec, c.Subject)
			for _, o := range spec.Tenants {
				if o.Name == holder {
					continue
				}
				for _, vm := range o.VMs {
					if c.Path == pveacl.VMPath(vm) {
						t.Fatalf("%s of tenant %s may clone VM %d, which tenant %s lists", c.Subject, holder, vm, o.Name)
					}
				}
				if r := o.VMIDRange; r != nil {
					var vm int
					if _, err := fmt.Sscanf(c.Path, "/vms/%d", &vm); err == nil && vm >= r.Start && vm <= r.End {
						t.Fatalf("%s of tenant %s may clone VM %d, inside tenant %s's vmIDRange %d-%d", c.Subject, holder, vm, o.Name, r.Start, r.End)
					}
				}
			}
		}
	})
}

// tenantOf names the tenant whose user a subject (a user or token id) is.
func tenantOf(spec *tenantplan.Tenants, subject string) string {
	user, _, _ := strings.Cut(subject, "!")
	for _, tn := range spec.Tenants {
		if tn.User == user {
			return tn.Name
		}
	}
	return ""
}
