package demo

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/kubegateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
)

// Invariant names of the gateway.
const (
	CheckGatewayGroups   = "every live network's router port uses its own owned group with exactly the ranked trunk chassis"
	CheckGatewayReleased = "no HA chassis group is left for a deleted network"
	CheckGatewayReady    = "GatewayReady is True/ChassisAssigned on every live network"
	CheckGatewayFailover = "a trunk node that leaves moves only the router ports it was active for"
)

// gatewayWorld is what the gateway invariants judge: the API's networks,
// subnets, zones and Nodes, and the NB's rows.
type gatewayWorld struct {
	networks []v1alpha1.ProxmoxNetwork
	subnets  map[string]kubeovnv1.Subnet
	zones    map[string]v1alpha1.ProxmoxNetworkZone
	nodes    []*corev1.Node
	nb       ovngatewaytest.State
}

// readGatewayWorld reads the API through c and the NB rows from the server.
func readGatewayWorld(ctx context.Context, c client.Reader, nb *northbound) (gatewayWorld, error) {
	var nets v1alpha1.ProxmoxNetworkList
	var subs kubeovnv1.SubnetList
	var zones v1alpha1.ProxmoxNetworkZoneList
	var nodes corev1.NodeList
	for _, l := range []client.ObjectList{&nets, &subs, &zones, &nodes} {
		if err := c.List(ctx, l); err != nil {
			return gatewayWorld{}, fmt.Errorf("cannot read the world: %w", err)
		}
	}
	w := gatewayWorld{networks: nets.Items, subnets: map[string]kubeovnv1.Subnet{}, zones: map[string]v1alpha1.ProxmoxNetworkZone{}}
	for _, s := range subs.Items {
		w.subnets[s.Name] = s
	}
	for _, z := range zones.Items {
		w.zones[z.Name] = z
	}
	for i := range nodes.Items {
		w.nodes = append(w.nodes, &nodes.Items[i])
	}
	st, err := nb.state(ctx)
	if err != nil {
		return gatewayWorld{}, err
	}
	w.nb = st
	return w, nil
}

// checks judges the three end-state invariants of the gateway.
func (w gatewayWorld) checks() []sim.Invariant {
	return []sim.Invariant{w.groups(), w.released(), w.ready()}
}

func verdict(name string, problems []string) sim.Invariant {
	return sim.Invariant{Name: name, Holds: len(problems) == 0, Detail: strings.Join(problems, "; ")}
}

func live(n *v1alpha1.ProxmoxNetwork) bool { return n.DeletionTimestamp.IsZero() }

func (w gatewayWorld) groups() sim.Invariant {
	var bad []string
	for i := range w.networks {
		n := &w.networks[i]
		if !live(n) {
			continue
		}
		if problem := w.group(n); problem != "" {
			bad = append(bad, n.Namespace+"/"+n.Name+": "+problem)
		}
	}
	return verdict(CheckGatewayGroups, bad)
}

// group says what is wrong with the NB side of one network, or "".
func (w gatewayWorld) group(n *v1alpha1.ProxmoxNetwork) string {
	sub, ok := w.subnets[n.Spec.Subnet]
	if !ok || sub.Spec.Vpc == "" {
		return fmt.Sprintf("Subnet %q with a VPC does not exist", n.Spec.Subnet)
	}
	port := ovngateway.RouterPortName(sub.Spec.Vpc, sub.Name)
	name := ovngateway.GroupName(port)
	p, ok := w.nb.Ports[port]
	if !ok {
		return fmt.Sprintf("router port %q does not exist", port)
	}
	if p.Group != name {
		return fmt.Sprintf("router port %q uses group %q, want %q", port, p.Group, name)
	}
	g, ok := w.nb.Groups[name]
	if !ok {
		return fmt.Sprintf("group %q does not exist", name)
	}
	id := n.Namespace + "/" + n.Name
	if g.ExternalIDs[ovngateway.OwnerKey] != ovngateway.OwnerValue || g.ExternalIDs[ovngateway.NetworkKey] != id {
		return fmt.Sprintf("group %q is tagged %s=%q %s=%q, want %q and %q", name, ovngateway.OwnerKey, g.ExternalIDs[ovngateway.OwnerKey],
			ovngateway.NetworkKey, g.ExternalIDs[ovngateway.NetworkKey], ovngateway.OwnerValue, id)
	}
	want, err := w.wantChassis(n.Spec.Zone, sub.Spec.Vpc)
	if err != nil {
		return err.Error()
	}
	if !slices.Equal(want, g.Chassis) {
		return fmt.Sprintf("group %q holds %s, want %s", name, chassisList(g.Chassis), chassisList(want))
	}
	return ""
}

// wantChassis ranks the trunk Nodes of the zone's provider network for the
// VPC, as the facts define the chassis set and its priorities.
func (w gatewayWorld) wantChassis(zone, vpc string) ([]ovngatewaytest.Chassis, error) {
	z, ok := w.zones[zone]
	if !ok {
		return nil, fmt.Errorf("zone %q does not exist", zone)
	}
	members, err := ovngateway.Rank(ovngateway.Key(vpc), kubegateway.Candidates(z.Spec.ProviderNetwork, w.nodes))
	if err != nil {
		return nil, fmt.Errorf("cannot rank the trunk Nodes of zone %q: %w", zone, err)
	}
	if len(members) == 0 {
		return nil, fmt.Errorf("provider network %q of zone %q has no trunk Node", z.Spec.ProviderNetwork, zone)
	}
	out := make([]ovngatewaytest.Chassis, len(members))
	for i, m := range members {
		out[i] = ovngatewaytest.Chassis{Name: m.Chassis, Priority: m.Priority}
	}
	return out, nil
}

func (w gatewayWorld) released() sim.Invariant {
	exists := map[string]bool{}
	for _, n := range w.networks {
		exists[n.Namespace+"/"+n.Name] = true
	}
	var bad []string
	for _, name := range sortedGroups(w.nb) {
		g := w.nb.Groups[name]
		if g.ExternalIDs[ovngateway.OwnerKey] != ovngateway.OwnerValue {
			continue
		}
		if id := g.ExternalIDs[ovngateway.NetworkKey]; !exists[id] {
			bad = append(bad, fmt.Sprintf("group %q belongs to network %q, which is gone", name, id))
		}
	}
	return verdict(CheckGatewayReleased, bad)
}

func (w gatewayWorld) ready() sim.Invariant {
	var bad []string
	for i := range w.networks {
		n := &w.networks[i]
		if !live(n) {
			continue
		}
		c := meta.FindStatusCondition(n.Status.Conditions, v1alpha1.ConditionGatewayReady)
		switch {
		case c == nil:
			bad = append(bad, fmt.Sprintf("%s/%s has no %s condition", n.Namespace, n.Name, v1alpha1.ConditionGatewayReady))
		case c.Status != "True" || c.Reason != v1alpha1.ReasonChassisAssigned:
			bad = append(bad, fmt.Sprintf("%s/%s is %s/%s: %s", n.Namespace, n.Name, c.Status, c.Reason, c.Message))
		}
	}
	return verdict(CheckGatewayReady, bad)
}

// failover judges how the groups changed when the trunk node with chassis
// left: it is gone from every group, the others keep their order, and the
// active chassis changed only in the groups it was active in.
func failover(before, after ovngatewaytest.State, chassis string) sim.Invariant {
	var bad []string
	for _, name := range sortedGroups(before) {
		was := before.Groups[name]
		now, ok := after.Groups[name]
		if !ok {
			bad = append(bad, fmt.Sprintf("group %q is gone", name))
			continue
		}
		var rest []ovngatewaytest.Chassis
		for _, c := range was.Chassis {
			if c.Name != chassis {
				rest = append(rest, c)
			}
		}
		if !slices.Equal(chassisNames(rest), chassisNames(now.Chassis)) {
			bad = append(bad, fmt.Sprintf("group %q went from %s to %s", name, chassisList(was.Chassis), chassisList(now.Chassis)))
		}
	}
	return verdict(CheckGatewayFailover, bad)
}

func chassisNames(cs []ovngatewaytest.Chassis) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

// chassisList prints chassis with their priorities, highest first.
func chassisList(cs []ovngatewaytest.Chassis) string {
	if len(cs) == 0 {
		return "(none)"
	}
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%s:%d", c.Name, c.Priority)
	}
	return strings.Join(parts, " ")
}

func sortedGroups(st ovngatewaytest.State) []string {
	out := make([]string, 0, len(st.Groups))
	for name := range st.Groups {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}
