package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/pxsubstrate/pxsubstrate/internal/sim/demo"
)

func init() { register(newDemoCmd) }

func newDemoCmd(app *App) *cobra.Command {
	return &cobra.Command{
		Use: "demo",
		Example: "  pxsubstrate demo\n" +
			"  pxsubstrate demo -o wide",
		Short: "Play the platform's story in memory and check its invariants",
		Long: "Plays the platform's story on in-memory stand-ins (a Proxmox VE API, libovsdb's OVN\n" +
			"northbound database, a Kubernetes API): two tenants' ACLs planned, applied and audited\n" +
			"clean; a Talos template built through the API; a tenant cluster and pool rendered for\n" +
			"capmox; a zone and the tenants' networks until the zone is exhausted; every router port\n" +
			"given an HA chassis group of the trunk nodes, then one trunk node leaving; one admission\n" +
			"refusal and one admission; a network deleted while a VM address is held, and its release\n" +
			"once the address is freed, through an NB outage (the group goes before the VLAN). Prints\n" +
			"each act as tables and ends with the invariants checked on the final world; exits 1 if\n" +
			"one fails. No flags.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			story := app.Out
			if !app.tableFormat() {
				story = io.Discard
			}
			res, err := demo.RunWith(cmd.Context(), story, demo.Options{Wide: app.Wide()})
			if err != nil {
				return &ExitError{Code: 1, Err: fmt.Errorf("cannot play the demo: %w", err)}
			}
			if !app.tableFormat() {
				if err := app.Print(res, nil); err != nil {
					return err
				}
			}
			if !res.OK() {
				return &ExitError{Code: 1, Err: errors.New("an invariant of the demo does not hold (see the table above)")}
			}
			return nil
		},
	}
}
