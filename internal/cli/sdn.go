package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/samber/lo"
	"github.com/spf13/cobra"

	v1alpha1 "github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/texttable"
	"github.com/pxsubstrate/pxsubstrate/network"
	"github.com/pxsubstrate/pxsubstrate/pveapi"
	"github.com/pxsubstrate/pxsubstrate/pvesdn"
	"github.com/pxsubstrate/pxsubstrate/strictyaml"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
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
	cmd.AddCommand(newSDNCheckCmd(app), newSDNPlanCmd(app), newSDNApplyCmd(app), newSDNAuditCmd(app))
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
		return pvesdn.Zone{}, nil, fmt.Errorf("--zone %s: %w", file, oneDocument(err, "give each ProxmoxNetworkZone a file of its own"))
	}
	if obj.Kind != "ProxmoxNetworkZone" {
		return pvesdn.Zone{}, nil, errorf("--zone %s: kind %q is not ProxmoxNetworkZone", file, obj.Kind)
	}
	z, err := network.SDNZone(&obj)
	if err != nil {
		return pvesdn.Zone{}, nil, fmt.Errorf("--zone %s: %w", file, err)
	}
	if withSDN && (obj.Spec.SDN == nil || obj.Spec.SDN.Mode != v1alpha1.SDNModeVNets) {
		return pvesdn.Zone{}, nil, fmt.Errorf("--zone %s: spec.sdn.mode must be VNets to plan, apply or audit VNets", file)
	}
	if err := z.Validate(withSDN); err != nil {
		return pvesdn.Zone{}, nil, fmt.Errorf("--zone %s: %w", file, err)
	}
	return z, &obj, nil
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

// sdnSpec is one sdn subcommand: its help, whether the zone must be in
// mode VNets, the pvesdn call, and how the result is printed (an error
// from report, such as an ExitError, is the command's).
type sdnSpec[T any] struct {
	use, example, short, long string
	withSDN                   bool
	call                      func(context.Context, pveapi.Client, pvesdn.Zone) (T, error)
	report                    func(pvesdn.Zone, T) error
}

// newSDNSubCmd builds an sdn subcommand on the shared runner: read the
// zone file, build the client from the live flags, make the pvesdn call
// (a TLS failure names --ca-file), then report.
func newSDNSubCmd[T any](app *App, s sdnSpec[T]) *cobra.Command {
	var f sdnFlags
	cmd := &cobra.Command{
		Use:     s.use,
		Example: s.example,
		Short:   s.short,
		Long:    s.long,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			z, _, err := readSDNZone(app, f.zone, s.withSDN)
			if err != nil {
				return err
			}
			c, _, err := f.live.client(app)
			if err != nil {
				return err
			}
			res, err := s.call(cmd.Context(), c, z)
			if err != nil {
				return tlsHint(err)
			}
			return s.report(z, res)
		},
	}
	f.bind(cmd)
	return cmd
}

func newSDNCheckCmd(app *App) *cobra.Command {
	return newSDNSubCmd(app, sdnSpec[*pvesdn.Report]{
		use:     "check --zone F --url https://HOST:8006 --token-id ID --token-secret-file F [-o wide|json]",
		example: "  pxsubstrate sdn check --zone zone.yaml --url https://pve1:8006 --token-id 'sdncheck@pve!audit' --token-secret-file audit.secret",
		short:   "Check every Proxmox node for what would drop a zone VLAN; exit 1 on a finding",
		long: `Reads the node list, the SDN zones and VNets, and each node's network
configuration once, and reports by node: the zone bridge missing or not
VLAN-aware, zone VLANs outside its bridge-vids, an MTU below the zone's, a
zone VLAN already used by an SDN VNet or a VLAN interface, a node that cannot
be read. CARRYABLE are the VLANs every node carries: what the controller may
hand out. Changes nothing; the token needs PVEAuditor on /sdn (bridges are
listed only with SDN.Audit on them). Exits 1 when a finding exists.`,
		call: pvesdn.Check,
		report: func(z pvesdn.Zone, rep *pvesdn.Report) error {
			if err := app.Print(rep, func(w io.Writer) { sdnCheckTable(w, rep, app.Wide()) }); err != nil {
				return err
			}
			if !rep.OK() {
				return &ExitError{Code: 1, Err: fmt.Errorf("zone %s: %d finding(s) take VLANs away; fix them or reserve those VLANs", z.Name, len(rep.Findings))}
			}
			return nil
		},
	})
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

func newSDNPlanCmd(app *App) *cobra.Command {
	return newSDNSubCmd(app, sdnSpec[*pvesdn.Plan]{
		use:     "plan --zone F --url https://HOST:8006 --token-id ID --token-secret-file F [-o json]",
		example: "  pxsubstrate sdn plan --zone zone.yaml --url https://pve1:8006 --token-id 'root@pam!sdn' --token-secret-file sdn.secret",
		short:   "List the Proxmox SDN zone and VNets the zone still needs (one VNet per VLAN)",
		long: `Reads the SDN zones and VNets and lists what apply would create: the VLAN zone
spec.sdn.zone on the bridge, and VNet <vnetPrefix><VLAN in 4 digits> with the
VLAN as tag for every zone VLAN that has none. Refuses a zone of more than
1,024 VLANs, an SDN zone of that name that is not a VLAN zone on the bridge,
and a VNet of a planned name with another tag or zone. Changes nothing.`,
		withSDN: true,
		call:    pvesdn.PlanVNets,
		report: func(_ pvesdn.Zone, plan *pvesdn.Plan) error {
			return app.Print(plan, func(w io.Writer) { sdnPlanTable(w, plan) })
		},
	})
}

func sdnPlanTable(w io.Writer, plan *pvesdn.Plan) {
	t := texttable.New(texttable.Main("OBJECT"), texttable.Main("ID"), texttable.Main("SETTINGS"))
	if plan.CreateZone {
		settings := "type=vlan bridge=" + plan.Bridge
		if plan.MTU > 0 {
			settings += fmt.Sprintf(" mtu=%d", plan.MTU)
		}
		t.Add("zone", plan.Zone, settings)
	}
	for _, v := range plan.Add {
		t.Add("vnet", v.ID, fmt.Sprintf("zone=%s tag=%d", plan.Zone, v.Tag))
	}
	t.Write(w, false)
	fmt.Fprintf(w, "%d VNet(s) to create, %d present; one apply\n", len(plan.Add), plan.Present)
}

// sdnApplied is what sdn apply prints: the plan and what applying it did.
type sdnApplied struct {
	plan *pvesdn.Plan
	res  *pvesdn.ApplyResult
}

// planAndApply plans the zone and applies the plan.
func planAndApply(ctx context.Context, c pveapi.Client, z pvesdn.Zone) (sdnApplied, error) {
	plan, err := pvesdn.PlanVNets(ctx, c, z)
	if err != nil {
		return sdnApplied{}, err
	}
	res, err := pvesdn.Apply(ctx, c, plan)
	return sdnApplied{plan: plan, res: res}, err
}

func newSDNApplyCmd(app *App) *cobra.Command {
	return newSDNSubCmd(app, sdnSpec[sdnApplied]{
		use:     "apply --zone F --url https://HOST:8006 --token-id ID --token-secret-file F [-o json]",
		example: "  pxsubstrate sdn apply --zone zone.yaml --url https://pve1:8006 --token-id 'root@pam!sdn' --token-secret-file sdn.secret",
		short:   "Create the planned SDN zone and VNets and apply them once; exit 1 when a node fails its reload",
		long: `Plans as sdn plan does, then writes the plan and applies the SDN configuration
once, however many VNets it adds. On PVE 9.2 and later it works under the SDN
lock, dry-runs every node before the apply and rolls back when a write or a
dry-run fails; before 9.2 it applies plainly and names the risk. Either way
it refuses while other SDN changes are pending, since the apply would take
them along. Proxmox applies on every node and only logs a node that fails:
apply reads each node's reload back and exits 1 when one did not reload.
With nothing to create, it reads the SDN zone's state on every node and
applies once more when a node has it pending or in error (a reload that
failed before), reloading every node. When a write fails after others, it
names what this apply wrote: on 9.2 they are rolled back under the lock;
before 9.2 they stay pending, and the error prints the pvesh commands that
remove them. The next apply finishes its own pending writes (its SDN zone
and VNets with their planned tags) rather than refusing them; another
writer's pending change is still refused. A lock answer without a token is
refused before anything is written. The token needs PVESDNAdmin on /sdn
and Sys.Audit on /nodes.`,
		withSDN: true,
		call:    planAndApply,
		report: func(z pvesdn.Zone, a sdnApplied) error {
			if a.res.Risk != "" {
				fmt.Fprintln(app.ErrOut, "Warning: "+escapeControl(a.res.Risk))
			}
			for _, n := range a.res.Unread {
				fmt.Fprintf(app.ErrOut, "Warning: the SDN state of node %s could not be read (%s): run pxsubstrate sdn audit once it is back\n",
					escapeControl(termsafe.Cut(n.Node)), escapeControl(termsafe.Cut(n.Err)))
			}
			if err := app.Print(a.res, func(w io.Writer) { sdnApplyTable(w, a.plan, a.res) }); err != nil {
				return err
			}
			if !a.res.OK() {
				return &ExitError{Code: 1, Err: fmt.Errorf("zone %s: the SDN configuration is applied, but not every node reloaded it; fix those nodes, then run sdn apply again: it reloads every node", z.Name)}
			}
			return nil
		},
	})
}

func sdnApplyTable(w io.Writer, plan *pvesdn.Plan, res *pvesdn.ApplyResult) {
	if res.Applies == 0 {
		fmt.Fprintf(w, "nothing to apply: %d VNet(s) present\n", plan.Present)
		return
	}
	how := "plainly (no SDN lock before PVE 9.2)"
	if res.Locked {
		how = "under the SDN lock, after a dry-run on every node"
	}
	if len(res.Reapplied) == 0 {
		t := texttable.New(texttable.Main("NODE"), texttable.Main("RELOAD"))
		for _, n := range res.Nodes {
			t.Add(n.Node, n.Status)
		}
		t.Write(w, false)
		if len(res.Finished) > 0 {
			fmt.Fprintf(w, "finished %d write(s) an earlier apply left pending: %s\n", len(res.Finished), strings.Join(res.Finished, ", "))
		}
		fmt.Fprintf(w, "%d VNet(s) created, applied once %s\n", len(plan.Add), how)
		return
	}
	before := lo.SliceToMap(res.Reapplied, func(n pvesdn.NodeZone) (string, string) { return n.Node, n.Status })
	t := texttable.New(texttable.Main("NODE"), texttable.Main("BEFORE"), texttable.Main("RELOAD"))
	for _, n := range res.Nodes {
		t.Add(n.Node, lo.ValueOr(before, n.Node, pvesdn.ZoneAvailable), n.Status)
	}
	t.Write(w, false)
	fmt.Fprintf(w, "nothing to create; SDN zone %s was not available on %d node(s)\napplied once %s to reload every node\n",
		plan.Zone, len(res.Reapplied), how)
}

func newSDNAuditCmd(app *App) *cobra.Command {
	return newSDNSubCmd(app, sdnSpec[[]pvesdn.Drift]{
		use:     "audit --zone F --url https://HOST:8006 --token-id ID --token-secret-file F [-o json]",
		example: "  pxsubstrate sdn audit --zone zone.yaml --url https://pve1:8006 --token-id 'sdncheck@pve!audit' --token-secret-file audit.secret",
		short:   "Name the drift between the zone and its Proxmox SDN VNets; exit 1 on any",
		long: `Reads the SDN configuration and names: the SDN zone missing, a zone VLAN
without its VNet (VNetMissing), a VNet of the zone's with another tag or zone
(VNetOtherTag), a VNet in the SDN zone no zone VLAN accounts for
(VNetNotOurs), VNets written but not applied (VNetUnapplied), and by name
each node where the SDN zone is pending (NodeZonePending: it missed a
reload) or in error (NodeZoneError: its reload failed), or whose SDN state
cannot be read (NodeZoneUnreadable). Changes nothing; PVEAuditor on /sdn
suffices.`,
		withSDN: true,
		call:    pvesdn.AuditVNets,
		report: func(z pvesdn.Zone, drift []pvesdn.Drift) error {
			if err := app.Print(drift, func(w io.Writer) { sdnAuditTable(w, z, drift) }); err != nil {
				return err
			}
			if len(drift) > 0 {
				return &ExitError{Code: 1, Err: fmt.Errorf("zone %s: %d difference(s) from its Proxmox SDN VNets", z.Name, len(drift))}
			}
			return nil
		},
	})
}

func sdnAuditTable(w io.Writer, z pvesdn.Zone, drift []pvesdn.Drift) {
	t := texttable.New(texttable.Main("CODE"), texttable.Main("VNET"), texttable.Main("NODE"), texttable.Note("FINDING"),
		texttable.Note("WHAT TO DO"))
	for _, d := range drift {
		t.Add(d.Code, d.VNet, d.Node, d.Message, d.Action)
	}
	t.Write(w, false)
	fmt.Fprintf(w, "zone %s: %d VLAN(s), %d difference(s) in SDN zone %s\n", z.Name, z.VLANs.Len(), len(drift), z.SDNZone)
}
