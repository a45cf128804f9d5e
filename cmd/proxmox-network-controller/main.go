// Command proxmox-network-controller runs the ProxmoxNetwork and
// ProxmoxNetworkZone reconcilers, the OVN gateway of each network and the
// admission webhook. Its flags and wiring live in internal/controller; run
// it with --help for the flags.
package main

import (
	"os"

	"github.com/pxsubstrate/pxsubstrate/internal/controller"
)

func main() {
	os.Exit(controller.Main(os.Args[1:], os.Stdout, os.Stderr))
}
