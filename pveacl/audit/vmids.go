package audit

import (
	"fmt"
	"slices"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// Finding codes of the VM id ranges.
const (
	// CodeVMOutsideRange: a VM of a tenant's pool has an id outside the
	// tenant's vmIDRange.
	CodeVMOutsideRange Code = "VMOutsideRange"
	// CodeForeignVMInRange: a VM that is not the tenant's (another
	// tenant's, or in no tenant pool) has an id inside the tenant's
	// vmIDRange, so capmox cannot take that id for the tenant.
	CodeForeignVMInRange Code = "ForeignVMInRange"
)

// vmIDRanges checks every VM id against the tenants' vmIDRange: the
// tenant's own VMs inside it, no one else's.
func (a *auditor) vmIDRanges() {
	owner := map[int]int{} // VM id -> tenant index
	for name, p := range a.cfg.Pools {
		if i, ok := a.tenantOfPool(name); ok {
			for _, vm := range p.VMs {
				owner[vm] = i
			}
		}
	}
	vms := slices.Clone(a.cfg.Resources.VMs)
	for vm := range owner {
		vms = append(vms, vm)
	}
	slices.Sort(vms)
	for _, vm := range slices.Compact(vms) {
		o, owned := owner[vm]
		for i, tn := range a.tenants {
			r := tn.VMIDRange
			switch {
			case r == nil:
			case owned && o == i && !r.Contains(vm):
				a.add(Finding{Severity: SeverityWarning, Code: CodeVMOutsideRange, Tenant: tn.Name, Path: pveacl.VMPath(vm),
					Message: fmt.Sprintf("VM %d of tenant %s's pool %s is outside its vmIDRange %s", vm, tn.Name, tn.Pool, r),
					Remedy:  fmt.Sprintf("replace the worker (kubectl delete machine) so capmox clones it inside %s, or widen the range", r)})
			case (!owned || o != i) && r.Contains(vm) && !slices.Contains(tn.Templates, vm):
				a.add(Finding{Severity: SeverityWarning, Code: CodeForeignVMInRange, Tenant: tn.Name, Path: pveacl.VMPath(vm),
					Message: fmt.Sprintf("VM %d, %s, is inside tenant %s's vmIDRange %s", vm, a.vmOwner(vm, owner), tn.Name, r),
					Remedy:  fmt.Sprintf("move the VM to an id outside %s (qm clone, then destroy), or put it in pool %s if it is the tenant's", r, tn.Pool)})
			}
		}
	}
}

func (a *auditor) vmOwner(vm int, owner map[int]int) string {
	if i, ok := owner[vm]; ok {
		return "of tenant " + a.tenants[i].Name
	}
	if pools := a.cfg.PoolsOfVM(vm); len(pools) > 0 {
		return "in pool " + pools[0]
	}
	return "in no pool"
}
