package demo

import (
	"context"
	"fmt"
	"io"
	"sort"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/internal/texttable"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// Act is one chapter of the demo.
type Act struct {
	// Name is printed as the act's title.
	Name string
	// Play acts on the stage and prints what happened.
	Play func(ctx context.Context, s *Stage) error
}

// Acts are played in order.
var Acts = []Act{actACLs, actTemplate, actRender, actZone, actNetworks, actGateways, actAdmission, actHeldDelete, actRelease}

// Stage is what acts share: the simulated cluster and the output.
type Stage struct {
	H   *sim.Harness
	Out io.Writer
	// PVE is the Proxmox VE API the platform acts share; Run closes it.
	PVE *pvefake.Server
	// Checks are the invariants the acts add to the final table.
	Checks []sim.Invariant
	// nb is the OVN northbound database; Run closes it.
	nb *northbound
	// events keeps the Events the controller emits.
	events *eventLog
	// wide prints tables and sentences unwrapped.
	wide bool
}

// Result is the outcome of a demo run.
type Result struct {
	Acts       []string        `json:"acts"`
	Invariants []sim.Invariant `json:"invariants"`
}

// OK reports whether every invariant holds.
func (r Result) OK() bool {
	for _, inv := range r.Invariants {
		if !inv.Holds {
			return false
		}
	}
	return true
}

// Options change how the story is printed.
type Options struct {
	// Wide prints every table row on one line, however long; by default
	// lines keep to 120 columns (long cells and sentences wrap).
	Wide bool
}

// Run plays every act, printing to out, then checks the invariants and
// prints them as a table.
func Run(ctx context.Context, out io.Writer) (Result, error) { return RunWith(ctx, out, Options{}) }

// RunWith is Run with options.
func RunWith(ctx context.Context, out io.Writer, opts Options) (Result, error) {
	return play(ctx, out, Acts, opts)
}

// play runs acts on a new stage: an in-memory API and OVN NB, and the
// controller with gateways over that NB.
func play(ctx context.Context, out io.Writer, acts []Act, opts Options) (Result, error) {
	nb, err := openNB(ctx)
	if err != nil {
		return Result{}, err
	}
	defer nb.close()
	s := &Stage{Out: out, wide: opts.Wide, nb: nb, events: &eventLog{}}
	// The controller's gateway is the daemon's (kubenetgateway) over the
	// NB, with what the NB client reports.
	s.H = sim.NewHarness(sim.Options{GatewayNB: synced{nb.client}, NBEvents: nb.events, NB: sim.NewOVNNB(nb.admin), Recorder: s.events})
	if err := s.H.Start(ctx); err != nil {
		return Result{}, err
	}
	defer s.closePVE()
	fmt.Fprintln(out, "pxsubstrate demo: the whole system on in-memory stand-ins (a Proxmox VE API, OVN's northbound database,")
	fmt.Fprintln(out, "a Kubernetes API) with the real controller, planners and admission; nothing outside this process is touched.")
	var res Result
	for i, act := range acts {
		fmt.Fprintf(out, "\n== Act %d: %s ==\n", i+1, act.Name)
		if err := act.Play(ctx, s); err != nil {
			return res, fmt.Errorf("act %q: %w", act.Name, err)
		}
		res.Acts = append(res.Acts, act.Name)
	}
	invs, err := s.invariants(ctx)
	if err != nil {
		return res, err
	}
	res.Invariants = invs
	fmt.Fprintf(out, "\n== Invariants ==\n")
	s.Table([]string{"CHECK", "RESULT"}, func(row func(...any)) {
		for _, inv := range invs {
			result := "ok"
			if !inv.Holds {
				result = "FAILED: " + inv.Detail
			}
			row(inv.Name, result)
		}
	})
	fmt.Fprintf(out, "\n%s\n", res.Verdict())
	return res, nil
}

// Verdict is the demo's last line: whether every invariant holds.
func (r Result) Verdict() string {
	failed := 0
	for _, inv := range r.Invariants {
		if !inv.Holds {
			failed++
		}
	}
	if failed == 0 {
		return fmt.Sprintf("verdict: all %d invariants hold", len(r.Invariants))
	}
	return fmt.Sprintf("verdict: %d of %d invariants FAILED", failed, len(r.Invariants))
}

// invariants judges the final world: the simulator's invariants, the
// gateway's, then those the acts recorded.
func (s *Stage) invariants(ctx context.Context) ([]sim.Invariant, error) {
	invs, err := sim.CheckInvariants(ctx, s.H.Store())
	if err != nil {
		return nil, err
	}
	w, err := readGatewayWorld(ctx, s.H.Store(), s.nb)
	if err != nil {
		return nil, err
	}
	invs = append(invs, w.checks()...)
	return append(invs, s.Checks...), nil
}

// Apply writes objects as a tenant or an admin would.
func (s *Stage) Apply(ctx context.Context, objs ...client.Object) error {
	for _, o := range objs {
		if err := s.H.Client().Create(ctx, o); err != nil {
			return fmt.Errorf("cannot create %s %s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
		}
	}
	return nil
}

// Settle lets the controller and the world converge.
func (s *Stage) Settle(ctx context.Context) error {
	_, err := s.H.Converge(ctx)
	return err
}

// Say prints one sentence, wrapped at 120 columns unless the stage is wide.
func (s *Stage) Say(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if s.wide || utf8.RuneCountInString(line) <= texttable.MaxWidth {
		fmt.Fprintln(s.Out, line)
		return
	}
	for i, piece := range texttable.Wrap(line, texttable.MaxWidth-2) {
		if i > 0 && utf8.RuneCountInString(piece) <= texttable.MaxWidth-2 {
			piece = "  " + piece // a longer piece is one word, a URL: never cut
		}
		fmt.Fprintln(s.Out, piece)
	}
}

// Table prints an aligned table within 120 columns (long cells wrap in
// their column) unless the stage is wide.
func (s *Stage) Table(header []string, rows func(row func(...any))) {
	cols := make([]texttable.Column, len(header))
	for i, h := range header {
		cols[i] = texttable.Main(h)
	}
	t := texttable.New(cols...)
	rows(func(cells ...any) {
		parts := make([]string, len(cells))
		for i, c := range cells {
			parts[i] = fmt.Sprint(c)
		}
		t.Add(parts...)
	})
	t.Write(s.Out, s.wide)
}

// Networks prints every ProxmoxNetwork.
func (s *Stage) Networks(ctx context.Context) error {
	var list v1alpha1.ProxmoxNetworkList
	if err := s.H.Store().List(ctx, &list); err != nil {
		return err
	}
	sort.Slice(list.Items, func(i, j int) bool {
		a, b := list.Items[i], list.Items[j]
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	s.Table([]string{"NAMESPACE", "NETWORK", "VLAN", "CIDR", "POOL USED/TOTAL", "READY", "REASON"}, func(row func(...any)) {
		for _, n := range list.Items {
			vlan, pool, ready, reason := "-", "-", "Unknown", ""
			if n.Status.VLAN != 0 {
				vlan = fmt.Sprint(n.Status.VLAN)
			}
			if p := n.Status.IPPool; p != nil {
				pool = fmt.Sprintf("%d/%d", p.Used, p.Total)
			}
			if c := meta.FindStatusCondition(n.Status.Conditions, v1alpha1.ConditionReady); c != nil {
				ready, reason = string(c.Status), c.Reason
			}
			if !n.DeletionTimestamp.IsZero() {
				reason += " (deleting)"
			}
			row(n.Namespace, n.Name, vlan, orDash(n.Status.CIDR), pool, ready, reason)
		}
	})
	return nil
}

// Zones prints every zone's counts.
func (s *Stage) Zones(ctx context.Context) error {
	var list v1alpha1.ProxmoxNetworkZoneList
	if err := s.H.Store().List(ctx, &list); err != nil {
		return err
	}
	s.Table([]string{"ZONE", "BRIDGE", "TOTAL", "ALLOCATED", "FREE", "NETWORKS", "READY"}, func(row func(...any)) {
		for _, z := range list.Items {
			ready := "Unknown"
			if c := meta.FindStatusCondition(z.Status.Conditions, v1alpha1.ConditionReady); c != nil {
				ready = string(c.Status) + "/" + c.Reason
			}
			row(z.Name, z.Spec.Bridge, z.Status.TotalVLANs, z.Status.AllocatedVLANs, z.Status.FreeVLANs, z.Status.Networks, ready)
		}
	})
	return nil
}

// Annotations prints each tenant namespace's proxmox.cozystack.io/networks.
func (s *Stage) Annotations(ctx context.Context, namespaces ...string) error {
	s.Table([]string{"NAMESPACE", v1alpha1.AnnotationNamespaceNetworks}, func(row func(...any)) {
		for _, name := range namespaces {
			ns := &corev1.Namespace{}
			if err := s.H.Store().Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
				row(name, "(cannot read: "+err.Error()+")")
				continue
			}
			row(name, orDash(ns.Annotations[v1alpha1.AnnotationNamespaceNetworks]))
		}
	})
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
