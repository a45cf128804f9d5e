package usercfg_test

import (
	"fmt"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/usercfg"
)

// Write the canonical user.cfg of a configuration.
func ExampleMarshal() {
	cfg := pveacl.NewConfig(pveacl.PVE9)
	cfg.Users["alpha@pve"] = pveacl.User{Enable: true, Comment: "tenant: alpha",
		Tokens: map[string]pveacl.Token{"csi": {Privsep: true}}}
	cfg.ACL[pveacl.ACLKey{Path: "/pool/alpha", Kind: pveacl.KindToken, Subject: "alpha@pve!csi", Role: "PVEVMUser"}] = false
	for _, line := range strings.Split(string(usercfg.Marshal(cfg)), "\n") {
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
