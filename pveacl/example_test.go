package pveacl_test

import (
	"fmt"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// Effective permissions of a privilege-separated token on a VM of its pool:
// the token's pool role, intersected with what its user holds there.
func ExampleEvaluator_Permissions() {
	cfg, _ := pveacl.ParseUserCfg([]byte(`user:alpha@pve:1:0::::::
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

// Plan the isolation of one tenant on an empty PVE 9 cluster and print the
// first steps as pveum commands.
func ExamplePlan() {
	spec, err := pveacl.LoadTenants([]byte("tenants:\n- name: alpha\n  storage: alpha-disks\n"))
	if err != nil {
		fmt.Println(err)
		return
	}
	changes, _ := pveacl.Plan(spec, pveacl.NewConfig(pveacl.PVE9))
	for _, c := range changes[:4] {
		fmt.Println(pveacl.PveumCommand(c))
	}
	// Output:
	// pveum role add CozyCCM --privs VM.Audit,VM.GuestAgent.Audit
	// pveum role add CozyCSI --privs VM.Audit,VM.Config.Disk
	// pveum role add CozyCSIStorage --privs Datastore.Allocate,Datastore.AllocateSpace,Datastore.Audit
	// pveum pool add alpha --comment 'pxsubstrate tenant alpha'
}

// Write the canonical user.cfg of a configuration.
func ExampleMarshalUserCfg() {
	cfg := pveacl.NewConfig(pveacl.PVE9)
	cfg.Users["alpha@pve"] = pveacl.User{Enable: true, Comment: "tenant: alpha",
		Tokens: map[string]pveacl.Token{"csi": {Privsep: true}}}
	cfg.ACL[pveacl.ACLKey{Path: "/pool/alpha", Kind: pveacl.KindToken, Subject: "alpha@pve!csi", Role: "PVEVMUser"}] = false
	for _, line := range strings.Split(string(pveacl.MarshalUserCfg(cfg)), "\n") {
		fmt.Printf("|%s\n", line)
	}
	// Output:
	// |user:alpha@pve:1:0::::tenant%3A alpha::
	// |token:alpha@pve!csi:0:1::
	// |user:root@pam:1:0::::::
	// |
	// |
	// |
	// |
	// |acl:0:/pool/alpha:alpha@pve!csi:PVEVMUser:
	// |
}
