// Command lab runs a lab (internal/testenv/lab) on this machine for people:
// hack/lab.sh builds it and calls it.
//
//	lab up --dir DIR --proxmox-program PVELAB --controller CONTROLLER [--capmox v0.9|v0.7]
//	lab apply --dir DIR FILE...
//	lab status --dir DIR [--wait DURATION]
//	lab env --dir DIR
//	lab down --dir DIR
//
// up starts a supervisor (lab serve) in a session of its own, which
// starts the lab and keeps it until down; up returns once the lab runs and
// prints where it is, one KEY=value a line. apply does for the tenant in
// FILE... (a Kubernetes, its KubernetesNodes, and the tenant's VPCs as
// `pxsubstrate render vpc` reads them) what Cozystack and the controller
// would; status lists the lab's processes and Machines with their
// addresses; down stops the supervisor, which stops
// everything it started, and kills by pid whatever is left.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "lab:", err)
		os.Exit(1)
	}
}

// usage is the synopsis every refusal of the command line ends with.
const usage = `usage: hack/lab.sh up [--capmox v0.9|v0.7]
       hack/lab.sh apply FILE...   (a Kubernetes and its KubernetesNodes, and the tenant's VPCs)
       hack/lab.sh status [--wait DURATION]
       hack/lab.sh env
       hack/lab.sh down`

func run(ctx context.Context, args []string, out, errOut io.Writer) error {
	if len(args) == 0 {
		return errors.New("no command\n" + usage)
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "up":
		return up(ctx, rest, out, errOut)
	case "serve":
		return serve(rest, errOut)
	case "apply":
		return apply(ctx, rest, out, errOut)
	case "status":
		return status(ctx, rest, out)
	case "env":
		return env(rest, out)
	case "down":
		return down(rest, out)
	}
	return fmt.Errorf("unknown command %q\n%s", cmd, usage)
}
