package audit_test

import (
	"fmt"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/audit"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
)

// Audit a cluster where a tenant's user was given PVEAuditor on / with
// propagation: it now sees every VM, in or out of pools.
func ExampleRun() {
	spec, _ := tenantplan.LoadTenants([]byte("tenants:\n- {name: alpha, storage: alpha-disks}\n- {name: beta, storage: beta-disks}\n"))
	changes, _ := tenantplan.Plan(spec, pveacl.NewConfig(pveacl.PVE9))
	cfg, _ := tenantplan.Simulate(pveacl.NewConfig(pveacl.PVE9), changes)
	cfg.ACL[pveacl.ACLKey{Path: "/", Kind: pveacl.KindUser, Subject: "alpha@pve", Role: "PVEAuditor"}] = true
	rep, _ := audit.Run(cfg, spec)
	for _, f := range rep.Findings {
		fmt.Println(f.Severity, f.Code, f.Subject, f.Path)
	}
	fmt.Println("errors:", rep.HasErrors())
	// Output:
	// error CrossTenantReach alpha@pve /pool/beta
	// error CrossTenantReach alpha@pve /storage/beta-disks
	// error CrossTenantReach alpha@pve /storage/pxsubstrate-probe
	// error CrossTenantReach alpha@pve /vms/100
	// error PropagatingTopLevelACL alpha@pve /
	// errors: true
}
