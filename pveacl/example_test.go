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
