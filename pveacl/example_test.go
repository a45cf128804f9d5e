package pveacl_test

import (
	"fmt"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/usercfg"
)

// Effective permissions of a privilege-separated token on a VM of its pool:
// the token's pool role, intersected with what its user holds there.
func ExampleEvaluator_Permissions() {
	cfg, _ := usercfg.Parse([]byte(`user:alpha@pve:1:0::::::
token:alpha@pve!csi:0:1::
pool:alpha::100:alpha-disks:
role:CozyCSI:VM.Audit,VM.Config.Disk:
acl:0:/pool/alpha:alpha@pve,alpha@pve!csi:CozyCSI:
acl:0:/:alpha@pve:PVEAuditor:
`), pveacl.PVE9)
	ev := pveacl.NewEvaluator(cfg)
	fmt.Println(ev.Permissions("alpha@pve!csi", "/vms/100").Map())
	fmt.Println(ev.Permissions("alpha@pve!csi", "/vms/200").Empty())
	// Output:
	// map[VM.Audit:0 VM.Config.Disk:0]
	// true
}
