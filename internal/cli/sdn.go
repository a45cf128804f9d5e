package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	v1alpha1 "github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/texttable"
	"github.com/pxsubstrate/pxsubstrate/pvesdn"
	"github.com/pxsubstrate/pxsubstrate/strictyaml"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
)

func init() { register(newSDNCmd) }

func newSDNCmd(app *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sdn",
		Short: "The Proxmox VE side of a zone: check every node, then VNets per VLAN",
		Long: `Reads a ProxmoxNetworkZone and the Proxmox VE cluster: check reports what
would drop a zone VLAN on a node; plan, apply and audit move the zone to one
Proxmox SDN VNet per VLAN. See docs/pvesdn.md.`,
	}
	cmd.AddCommand(newSDNCheckCmd(app))
	return cmd
}

// readSDNZone reads a ProxmoxNetworkZone file into what pvesdn needs;
// withSDN requires spec.sdn in mode VNets.
func readSDNZone(app *App, file string, withSDN bool) (pvesdn.Zone, *v1alpha1.ProxmoxNetworkZone, error) {
	data, err := readInput(app, file)
	if err != nil {
		return pvesdn.Zone{}, nil, err
	}
	var obj v1alpha1.ProxmoxNetworkZone
	if err := strictyaml.Unmarshal(data, &obj); err != nil {
		return pvesdn.Zone{}, nil, fmt.Errorf("--zone %s: %w", file, err)
	}
	if obj.Kind != "ProxmoxNetworkZone" {
		return pvesdn.Zone{}, nil, fmt.Errorf("--zone %s: kind %q is not ProxmoxNetworkZone", file, obj.Kind)
	}
	z, err := SDNZoneOf(&obj)
	if err != nil {
		return pvesdn.Zone{}, nil, fmt.Errorf("--zone %s: %w", file, err)
	}
	if withSDN && (obj.Spec.SDN == nil || obj.Spec.SDN.Mode != "VNets") {
		return pvesdn.Zone{}, nil, fmt.Errorf("--zone %s: spec.sdn.mode must be VNets to plan, apply or audit VNets", file)
	}
	if err := z.Validate(withSDN); err != nil {
		return pvesdn.Zone{}, nil, fmt.Errorf("--zone %s: %w", file, err)
	}
	return z, &obj, nil
}

// SDNZoneOf turns a ProxmoxNetworkZone into pvesdn's zone: its VLAN ranges
// minus the reserved IDs, bridge, MTU and SDN zone.
func SDNZoneOf(obj *v1alpha1.ProxmoxNetworkZone) (pvesdn.Zone, error) {
	reserved := make([]int, len(obj.Spec.ReservedVLANs))
	for i, r := range obj.Spec.ReservedVLANs {
		reserved[i] = int(r)
	}
	set, err := vlanalloc.Allocatable(obj.Spec.VLANRanges, reserved)
	if err != nil {
		return pvesdn.Zone{}, fmt.Errorf("spec.vlanRanges: %w", err)
	}
	z := pvesdn.Zone{Name: obj.Name, Bridge: obj.Spec.Bridge, VLANs: set}
	if obj.Spec.MTU != nil {
		z.MTU = int(*obj.Spec.MTU)
	}
	if s := obj.Spec.SDN; s != nil {
		if s.Mode != "Check" && s.Mode != "VNets" {
			return pvesdn.Zone{}, fmt.Errorf("spec.sdn.mode %q is neither Check nor VNets", s.Mode)
		}
		z.SDNZone, z.VNetPrefix = s.Zone, s.VNetPrefix
	}
	return z, nil
}

type sdnFlags struct {
	live liveFlags
	zone string
}

func (f *sdnFlags) bind(cmd *cobra.Command) {
	f.live.bind(cmd.Flags())
	cmd.Flags().StringVar(&f.zone, "zone", "", "ProxmoxNetworkZone YAML (its bridge, vlanRanges, reservedVLANs, mtu and sdn)")
	_ = cmd.MarkFlagRequired("zone")
}

func newSDNCheckCmd(app *App) *cobra.Command {
	var f sdnFlags
	cmd := &cobra.Command{
		Use:     "check --zone F --url https://HOST:8006 --token-id ID --token-secret-file F [-o wide|json]",
		Example: "  pxsubstrate sdn check --zone zone.yaml --url https://pve1:8006 --token-id 'sdncheck@pve!audit' --token-secret-file audit.secret",
		Short:   "Check every Proxmox node for what would drop a zone VLAN; exit 1 on a finding",
		Long: `Reads the node list, the SDN zones and VNets, and each node's network
configuration once, and reports by node: the zone bridge missing or not
VLAN-aware, zone VLANs outside its bridge-vids, an MTU below the zone's, a
zone VLAN already used by an SDN VNet or a VLAN interface, a node that cannot
be read. CARRYABLE are the VLANs every node carries: what the controller may
hand out. Changes nothing; the token needs PVEAuditor on /sdn (bridges are
listed only with SDN.Audit on them). Exits 1 when a finding exists.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			z, _, err := readSDNZone(app, f.zone, false)
			if err != nil {
				return err
			}
			c, _, err := f.live.client(app)
			if err != nil {
				return err
			}
			rep, err := pvesdn.Check(cmd.Context(), c, z)
			if err != nil {
				return tlsHint(err)
			}
			if err := app.Print(rep, func(w io.Writer) { sdnCheckTable(w, rep, app.Wide()) }); err != nil {
				return err
			}
			if !rep.OK() {
				return &ExitError{Code: 1, Err: fmt.Errorf("zone %s: %d finding(s) take VLANs away; fix them or reserve those VLANs", z.Name, len(rep.Findings))}
			}
			return nil
		},
	}
	f.bind(cmd)
	return cmd
}

func sdnCheckTable(w io.Writer, rep *pvesdn.Report, wide bool) {
	t := texttable.New(texttable.Main("NODE"), texttable.Main("CODE"), texttable.Main("VLANS"),
		texttable.Note("FINDING"), texttable.Note("WHAT TO DO"))
	for _, f := range rep.Findings {
		node := f.Node
		if node == "" {
			node = "(cluster)"
		}
		t.Add(node, f.Code, f.VLANs, f.Message, f.Action)
	}
	t.Write(w, wide)
	carry := rep.CarryableSet()
	fmt.Fprintf(w, "zone %s: %d node(s) read with %d request(s), %d finding(s); carryable VLANs: %s\n",
		rep.Zone, len(rep.Nodes), rep.Requests, len(rep.Findings), orNone(carry.String()))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
