package tenantplan

import (
	"slices"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// Claim says why a VM id is a tenant's: the tenant lists it under vms,
// the id lies inside its vmIDRange (where capmox clones its workers), or
// the VM sits in its pool on the cluster.
type Claim struct {
	// Tenant is the name of the tenant the VM belongs to.
	Tenant string
	// Index is that tenant's position in Tenants.Tenants.
	Index int
	// How is the reason, in words: "listed in its vms", "inside its
	// vmIDRange 9000-9099" or "in its pool alpha".
	How string
	// Range is true when the claim comes from the vmIDRange alone.
	Range bool
}

// OtherTenantsVM is the one rule that keeps a tenant's grants on VM ids
// off the VMs of other tenants: it lists the claims of the tenants other
// than the one named tenant on VM vm, in the order of Tenants.Tenants,
// none when the VM is no other tenant's. A VM is a tenant's when the
// tenant lists it under vms, when its id lies inside the tenant's
// vmIDRange, or, when poolsOf is given (the pools the cluster lists the VM
// in, as pveacl.Config.PoolsOfVM answers), when it sits in the tenant's
// pool or a pool nested in it.
//
// The plan (through Validate), `render nodes --tenants` (which loads the
// same specification) and the audit (with the cluster's pools) ask it of
// every template a tenant lists: a tenant's capmox token holds VM.Clone
// and VM.Audit on each of its templates, and a full clone copies the
// source's disks into the cloning tenant's pool, so a template that is
// another tenant's VM would hand that tenant's data over. Validate also
// asks it of every VM a tenant lists.
func (t *Tenants) OtherTenantsVM(tenant string, vm int, poolsOf func(vm int) []string) []Claim {
	var out []Claim
	for j, o := range t.Tenants {
		if o.Name == tenant {
			continue
		}
		if slices.Contains(o.VMs, vm) {
			out = append(out, Claim{Tenant: o.Name, Index: j, How: "listed in its vms"})
		}
		if r := o.VMIDRange; r != nil && r.Start <= r.End && r.Contains(vm) {
			out = append(out, Claim{Tenant: o.Name, Index: j, How: "inside its vmIDRange " + r.String(), Range: true})
		}
	}
	if poolsOf == nil {
		return out
	}
	for _, pool := range poolsOf(vm) {
		if j, ok := t.poolOwner(pool); ok && t.Tenants[j].Name != tenant {
			out = append(out, Claim{Tenant: t.Tenants[j].Name, Index: j, How: "in its pool " + pool})
		}
	}
	return out
}

// poolOwner returns the tenant whose pool is pool or holds it nested.
func (t *Tenants) poolOwner(pool string) (int, bool) {
	for p := pool; p != ""; p = pveacl.PoolParent(p) {
		for j, o := range t.Tenants {
			if o.Pool == p {
				return j, true
			}
		}
	}
	return 0, false
}
