package tenantplan_test

import (
	"fmt"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
)

// Plan the isolation of one tenant on an empty PVE 9 cluster and print the
// first steps as pveum commands.
func ExamplePlan() {
	spec, err := tenantplan.LoadTenants([]byte("tenants:\n- name: alpha\n  storage: alpha-disks\n"))
	if err != nil {
		fmt.Println(err)
		return
	}
	changes, _ := tenantplan.Plan(spec, pveacl.NewConfig(pveacl.PVE9))
	for _, c := range changes[:4] {
		fmt.Println(tenantplan.PveumCommand(c))
	}
	// Output:
	// pveum role add CozyCCM --privs VM.Audit,VM.GuestAgent.Audit
	// pveum role add CozyCSI --privs VM.Audit,VM.Config.Disk
	// pveum role add CozyCSIStorage --privs Datastore.Allocate,Datastore.AllocateSpace,Datastore.Audit
	// pveum pool add alpha --comment 'pxsubstrate tenant alpha'
}
