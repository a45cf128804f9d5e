package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/pxsubstrate/pxsubstrate/vpcrender"
)

// newRenderVPCCmd is `pxsubstrate render vpc`, a subcommand of render.
func newRenderVPCCmd(app *App) *cobra.Command {
	var file, lookup string
	cmd := &cobra.Command{
		Use:     "vpc -f VPC.yaml [--lookup CLUSTER.yaml]",
		Example: "  pxsubstrate render vpc -f vpc.yaml --lookup cluster.yaml",
		Short:   "Print the Kube-OVN, IPAM and ProxmoxNetwork objects of a tenant VPC",
		Long: `Renders a VPC spec (namespace, name, subnets with cidr and proxmox: {zone,
vmRange}, peers, routes, egress) into the objects that make it: the Kube-OVN
Vpc and Subnets, a NetworkAttachmentDefinition per subnet, and for every
Proxmox-backed subnet its InClusterIPPool and ProxmoxNetwork; with egress the
VpcEgressGateway and its policy routes.

The spec may list the cluster's zones and the namespace's ProxmoxNetworks
itself (zones, previous); --lookup adds ProxmoxNetworkZone and ProxmoxNetwork
objects as kubectl prints them. A refusal exits 1 with the exact message on
stderr. The default output is a YAML stream for kubectl apply -f -; -o yaml
and -o json print a v1 List.`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			spec, err := readVPCSpec(app, file, lookup)
			if err != nil {
				return err
			}
			r, err := vpcrender.Render(spec)
			if err != nil {
				return err
			}
			stream, err := r.YAML()
			if err != nil {
				return err
			}
			return app.Print(newKubeList(r.Objects), func(w io.Writer) { _, _ = w.Write(stream) })
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the VPC spec (YAML or JSON; - for stdin)")
	cmd.Flags().StringVar(&lookup, "lookup", "", "ProxmoxNetworkZone and ProxmoxNetwork objects of the cluster (YAML or JSON)")
	_ = cmd.MarkFlagRequired("file")
	return cmd
}

func readVPCSpec(app *App, file, lookup string) (vpcrender.Spec, error) {
	data, err := readInput(app, file)
	if err != nil {
		return vpcrender.Spec{}, err
	}
	spec, err := vpcrender.ParseSpec(data)
	if err != nil {
		return vpcrender.Spec{}, fmt.Errorf("cannot read %s: %w", file, err)
	}
	if lookup == "" {
		return spec, nil
	}
	data, err = readInput(app, lookup)
	if err != nil {
		return vpcrender.Spec{}, err
	}
	l, err := vpcrender.ParseLookup(data)
	if err != nil {
		return vpcrender.Spec{}, fmt.Errorf("cannot read %s: %w", lookup, err)
	}
	spec.Zones = append(spec.Zones, l.Zones...)
	spec.Previous = append(spec.Previous, l.Networks...)
	return spec, nil
}
