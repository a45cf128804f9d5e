package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/pxsubstrate/pxsubstrate/ovngateway"
)

func init() { register(newGatewayCmd) }

func newGatewayCmd(app *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gateway",
		Short: "OVN gateways: which chassis carries each Proxmox-backed VPC",
	}
	cmd.AddCommand(newGatewayPrioritiesCmd(app))
	return cmd
}

// gatewayPriority is one line of `pxsubstrate gateway priorities`.
type gatewayPriority struct {
	Node     string `json:"node"`
	Priority int    `json:"priority"`
}

func newGatewayPrioritiesCmd(app *App) *cobra.Command {
	var key string
	cmd := &cobra.Command{
		Use:   "priorities --key KEY NODE...",
		Short: "Print the HA_Chassis order and priorities the controller gives a VPC",
		Long: "Ranks the nodes for KEY with the controller's rendezvous hashing and prints\n" +
			"one line \"<node> <priority>\" per chassis, the active gateway first. The\n" +
			"controller's key for a subnet is \"vpc/<Subnet.spec.vpc>\"; each NODE stands\n" +
			"for a Node with a ready trunk and its own chassis.",
		Example: "  pxsubstrate gateway priorities --key vpc/tenant-a node-1 node-2 node-3\n" +
			"  pxsubstrate gateway priorities --key vpc/ovn-cluster worker-a worker-b -o json",
		Args: cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, nodes []string) error {
			cands := make([]ovngateway.Candidate, len(nodes))
			for i, n := range nodes {
				cands[i] = ovngateway.Candidate{Node: n, Chassis: n}
			}
			members, err := ovngateway.Rank(key, cands)
			if err != nil {
				return err
			}
			out := make([]gatewayPriority, len(members))
			for i, m := range members {
				out[i] = gatewayPriority{Node: m.Node, Priority: m.Priority}
			}
			return app.Print(out, func(w io.Writer) {
				for _, p := range out {
					fmt.Fprintf(w, "%s %d\n", p.Node, p.Priority)
				}
			})
		},
	}
	cmd.Flags().Var(nonEmpty{&key}, "key", `rendezvous key, "vpc/<Subnet.spec.vpc>" for the controller`)
	_ = cmd.MarkFlagRequired("key")
	return cmd
}
