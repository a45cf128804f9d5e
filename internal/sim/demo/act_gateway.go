package demo

import (
	"context"
	"fmt"
	"slices"
	"sort"

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

// Trunk nodes of the demo's provider network and their OVN chassis.
var trunkNodes = []struct{ node, chassis string }{
	{"node-a", "chassis-a"}, {"node-b", "chassis-b"}, {"node-c", "chassis-c"},
}

// providerNetwork is the zone's Kube-OVN provider network.
const providerNetwork = "pxtenant"

var actGateways = Act{
	Name: "every router port gets an HA chassis group of the trunk nodes; then one node loses its trunk",
	Play: func(ctx context.Context, s *Stage) error {
		if err := s.Gateways(ctx); err != nil {
			return err
		}
		before, err := s.nb.state(ctx)
		if err != nil {
			return err
		}
		node, chassis, err := s.activeFor(ctx, before, TenantAlpha, "subnet-a1")
		if err != nil {
			return err
		}
		if err := s.dropTrunk(ctx, node); err != nil {
			return err
		}
		if err := s.Settle(ctx); err != nil {
			return err
		}
		after, err := s.nb.state(ctx)
		if err != nil {
			return err
		}
		s.Say("%s (%s), active for tenant alpha's VPC, loses its trunk: Kube-OVN removes its ready label", node, chassis)
		s.changedGroups(before, after, chassis)
		s.Checks = append(s.Checks, failover(before, after, chassis))
		return nil
	},
}

// Gateways prints, per network, its router port, the HA_Chassis_Group the
// NB holds for it with its chassis and priorities (read back from the NB),
// and its GatewayReady condition.
func (s *Stage) Gateways(ctx context.Context) error {
	w, err := readGatewayWorld(ctx, s.H.Store(), s.nb)
	if err != nil {
		return err
	}
	sort.Slice(w.networks, func(i, j int) bool {
		a, b := w.networks[i], w.networks[j]
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	s.Table([]string{"NETWORK", "ROUTER PORT", "HA_CHASSIS_GROUP", "CHASSIS", "GATEWAYREADY"}, func(row func(...any)) {
		for _, n := range w.networks {
			port, group := routerPortOf(w, n), "-"
			if _, ok := w.nb.Ports[port]; !ok {
				port = "-"
			}
			name, g, ok := groupOf(w.nb, n.Namespace+"/"+n.Name)
			chassis := "-"
			if ok {
				group, chassis = name, chassisList(g.Chassis)
			}
			ready := "Unknown"
			if c := meta.FindStatusCondition(n.Status.Conditions, v1alpha1.ConditionGatewayReady); c != nil {
				ready = string(c.Status) + "/" + c.Reason
			}
			row(n.Namespace+"/"+n.Name, port, group, chassis, ready)
		}
	})
	return nil
}

// routerPortOf is the router port name of a network's subnet, or "-".
func routerPortOf(w gatewayWorld, n v1alpha1.ProxmoxNetwork) string {
	sub, ok := w.subnets[n.Spec.Subnet]
	if !ok || sub.Spec.Vpc == "" {
		return "-"
	}
	return ovngateway.RouterPortName(sub.Spec.Vpc, sub.Name)
}

// groupOf finds the owned group tagged with the network id.
func groupOf(st ovngatewaytest.State, id string) (string, ovngatewaytest.Group, bool) {
	for _, name := range sortedGroups(st) {
		g := st.Groups[name]
		if g.ExternalIDs[ovngateway.OwnerKey] == ovngateway.OwnerValue && g.ExternalIDs[ovngateway.NetworkKey] == id {
			return name, g, true
		}
	}
	return "", ovngatewaytest.Group{}, false
}

// activeFor returns the Node and chassis active for a network's group.
func (s *Stage) activeFor(ctx context.Context, st ovngatewaytest.State, namespace, name string) (node, chassis string, err error) {
	group, g, ok := groupOf(st, namespace+"/"+name)
	if !ok || len(g.Chassis) == 0 {
		return "", "", fmt.Errorf("network %s/%s has no HA chassis group with a chassis in the OVN NB", namespace, name)
	}
	chassis = g.Chassis[0].Name
	var nodes corev1.NodeList
	if err := s.H.Store().List(ctx, &nodes); err != nil {
		return "", "", fmt.Errorf("cannot list Nodes: %w", err)
	}
	for _, n := range nodes.Items {
		if n.Annotations[kubegateway.ChassisAnnotation] == chassis {
			return n.Name, chassis, nil
		}
	}
	return "", "", fmt.Errorf("no Node carries chassis %q, the active one of group %q", chassis, group)
}

// dropTrunk does what Kube-OVN does when a Node's provider interface goes
// away: it removes the Node's ready label and drops it from the provider
// network's ready nodes.
func (s *Stage) dropTrunk(ctx context.Context, name string) error {
	node := &corev1.Node{}
	if err := s.H.Client().Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		return fmt.Errorf("cannot read Node %s: %w", name, err)
	}
	delete(node.Labels, kubegateway.ReadyLabel(providerNetwork))
	if err := s.H.Client().Update(ctx, node); err != nil {
		return fmt.Errorf("cannot remove the trunk label of Node %s: %w", name, err)
	}
	pn := &kubeovnv1.ProviderNetwork{}
	if err := s.H.Client().Get(ctx, client.ObjectKey{Name: providerNetwork}, pn); err != nil {
		return fmt.Errorf("cannot read provider network %s: %w", providerNetwork, err)
	}
	pn.Status.ReadyNodes = slices.DeleteFunc(pn.Status.ReadyNodes, func(n string) bool { return n == name })
	if err := s.H.Client().Status().Update(ctx, pn); err != nil {
		return fmt.Errorf("cannot update the ready nodes of provider network %s: %w", providerNetwork, err)
	}
	return nil
}

// changedGroups prints the groups whose chassis changed, with the active
// chassis before and after.
func (s *Stage) changedGroups(before, after ovngatewaytest.State, leaving string) {
	changed := 0
	s.Table([]string{"HA_CHASSIS_GROUP", "BEFORE", "AFTER", "ACTIVE"}, func(row func(...any)) {
		for _, name := range sortedGroups(before) {
			was, now := before.Groups[name].Chassis, after.Groups[name].Chassis
			if slices.Equal(was, now) {
				continue
			}
			changed++
			row(name, chassisList(was), chassisList(now), activeChange(was, now))
		}
	})
	active := 0
	for _, name := range sortedGroups(before) {
		if g := before.Groups[name].Chassis; len(g) > 0 && g[0].Name == leaving {
			active++
		}
	}
	s.Say("%s left %d of %d groups; only the %d it was active in moved to their next chassis", leaving, changed, len(before.Groups), active)
}

func activeChange(was, now []ovngatewaytest.Chassis) string {
	first := func(cs []ovngatewaytest.Chassis) string {
		if len(cs) == 0 {
			return "(none)"
		}
		return cs[0].Name
	}
	if first(was) == first(now) {
		return first(now) + " (kept)"
	}
	return first(was) + " -> " + first(now)
}

// trunk returns the demo's trunk Nodes and its provider network, ready on
// them, as Kube-OVN reports them.
func trunk() []client.Object {
	pn := sim.ProviderNetwork(providerNetwork, true)
	pn.Status.ReadyNodes = nil
	objs := []client.Object{pn}
	for _, t := range trunkNodes {
		objs = append(objs, sim.TrunkNode(t.node, providerNetwork, t.chassis))
		pn.Status.ReadyNodes = append(pn.Status.ReadyNodes, t.node)
	}
	return objs
}
