// Command pxsubstrate is the operator's CLI: tenant ACLs on Proxmox VE, the
// Talos template, Cluster API renders, VLAN and gateway decisions, the
// simulator and the demo. Every subcommand lives in internal/cli.
package main

import (
	"os"

	"github.com/pxsubstrate/pxsubstrate/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
