package controllertest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	ovsclient "github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest/nbmodel"
)

// nbTimeout bounds each round trip to the NB.
const nbTimeout = 5 * time.Second

// KubeOVN plays Kube-OVN for the controller: sim.World's part in the API
// (Vlan.status.subnets listed and pruned, Subnets Ready, the IPAM
// provider's pool finalizer), and, in the northbound database at Endpoint,
// one Logical_Router "<vpc>" per VPC holding the port "<vpc>-<subnet>" of
// every Subnet that exists, the port of a Subnet that is gone removed.
type KubeOVN struct {
	World    sim.World
	Endpoint string

	nb ovsclient.Client
}

// NewKubeOVN returns a player that prunes deleted subnets, as Kube-OVN does.
func NewKubeOVN(endpoint string) *KubeOVN {
	return &KubeOVN{World: sim.World{PruneSubnets: true}, Endpoint: endpoint}
}

// React applies one round through c, then syncs the router ports. It
// reports the NB's error, if any, after the API part is done, so a caller
// may carry on while the NB is down.
func (k *KubeOVN) React(ctx context.Context, c client.Client) error {
	if _, err := k.World.React(ctx, c); err != nil {
		return err
	}
	var subnets kubeovnv1.SubnetList
	if err := c.List(ctx, &subnets); err != nil {
		return fmt.Errorf("cannot list Subnets: %w", err)
	}
	want := map[string]string{}
	for _, s := range subnets.Items {
		if s.Spec.Vpc != "" {
			want[ovngateway.RouterPortName(s.Spec.Vpc, s.Name)] = s.Spec.Vpc
		}
	}
	if err := k.syncPorts(ctx, want); err != nil {
		// Reconnect on the next round: a client whose server died may
		// still say it is connected.
		k.Close()
		return err
	}
	return nil
}

// Close ends the NB connection.
func (k *KubeOVN) Close() {
	if k.nb != nil {
		k.nb.Close()
		k.nb = nil
	}
}

func (k *KubeOVN) connect(ctx context.Context) (ovsclient.Client, error) {
	if k.nb != nil && k.nb.Connected() {
		return k.nb, nil
	}
	k.Close()
	m, err := ovngatewaytest.ClientModel()
	if err != nil {
		return nil, err
	}
	nb, err := ovsclient.NewOVSDBClient(m, ovsclient.WithEndpoint(k.Endpoint))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, nbTimeout)
	defer cancel()
	if err := nb.Connect(ctx); err != nil {
		nb.Close()
		return nil, fmt.Errorf("cannot connect to the NB: %w", err)
	}
	if _, err := nb.MonitorAll(ctx); err != nil {
		nb.Close()
		return nil, fmt.Errorf("cannot monitor the NB: %w", err)
	}
	k.nb = nb
	return nb, nil
}

// syncPorts makes the router ports exactly want (port -> router).
func (k *KubeOVN) syncPorts(ctx context.Context, want map[string]string) error {
	nb, err := k.connect(ctx)
	if err != nil {
		return err
	}
	var routers []nbmodel.LogicalRouter
	var ports []nbmodel.LogicalRouterPort
	if err := nb.List(ctx, &routers); err != nil {
		return err
	}
	if err := nb.List(ctx, &ports); err != nil {
		return err
	}
	have := map[string]string{}
	for _, p := range ports {
		have[p.Name] = p.UUID
	}
	var ops []ovsdb.Operation
	for i := range routers {
		r := &routers[i]
		var drop []string
		for _, p := range ports {
			if _, ok := want[p.Name]; !ok && slices.Contains(r.Ports, p.UUID) {
				drop = append(drop, p.UUID)
			}
		}
		if len(drop) > 0 {
			op, err := nb.Where(r).Mutate(r, model.Mutation{Field: &r.Ports, Mutator: ovsdb.MutateOperationDelete, Value: drop})
			if err != nil {
				return err
			}
			ops = append(ops, op...)
		}
	}
	add, err := k.addPorts(nb, routers, have, want)
	if err != nil {
		return err
	}
	if ops = append(ops, add...); len(ops) == 0 {
		return nil
	}
	_, err = ovngatewaytest.TransactErr(nb, ops...)
	return err
}

func (k *KubeOVN) addPorts(nb ovsclient.Client, routers []nbmodel.LogicalRouter, have map[string]string, want map[string]string) ([]ovsdb.Operation, error) {
	byName := map[string]*nbmodel.LogicalRouter{}
	for i := range routers {
		byName[routers[i].Name] = &routers[i]
	}
	var ops []ovsdb.Operation
	newPorts := map[string][]string{}
	n := 0
	for _, port := range slices.Sorted(maps.Keys(want)) {
		if _, ok := have[port]; ok {
			continue
		}
		n++
		lrp := &nbmodel.LogicalRouterPort{UUID: fmt.Sprintf("newport%d", n), Name: port, MAC: "0a:00:00:00:00:01",
			Networks: []string{"10.0.0.1/24"}, ExternalIDs: map[string]string{"lr": want[port], "vendor": "kube-ovn"}}
		op, err := nb.Create(lrp)
		if err != nil {
			return nil, err
		}
		ops = append(ops, op...)
		newPorts[want[port]] = append(newPorts[want[port]], lrp.UUID)
	}
	for i, name := range slices.Sorted(maps.Keys(newPorts)) {
		var op []ovsdb.Operation
		var err error
		if r, ok := byName[name]; ok {
			op, err = nb.Where(r).Mutate(r, model.Mutation{Field: &r.Ports, Mutator: ovsdb.MutateOperationInsert, Value: newPorts[name]})
		} else {
			op, err = nb.Create(&nbmodel.LogicalRouter{UUID: fmt.Sprintf("newrouter%d", i), Name: name, Ports: newPorts[name]})
		}
		if err != nil {
			return nil, errors.Join(fmt.Errorf("cannot add router ports to %s", name), err)
		}
		ops = append(ops, op...)
	}
	return ops, nil
}

// Dump reads the gateway state from the player's NB connection: the
// HA_Chassis_Groups with their chassis, and the router ports with the
// group they point at.
func (k *KubeOVN) Dump(ctx context.Context) (ovngatewaytest.State, error) {
	st := ovngatewaytest.State{Groups: map[string]ovngatewaytest.Group{}, Ports: map[string]ovngatewaytest.Port{}}
	nb, err := k.connect(ctx)
	if err != nil {
		k.Close()
		return st, err
	}
	var (
		members []nbmodel.HAChassis
		groups  []nbmodel.HAChassisGroup
		ports   []nbmodel.LogicalRouterPort
	)
	for _, l := range []any{&members, &groups, &ports} {
		if err := nb.List(ctx, l); err != nil {
			return st, err
		}
	}
	byUUID := map[string]ovngatewaytest.Chassis{}
	for _, h := range members {
		byUUID[h.UUID] = ovngatewaytest.Chassis{Name: h.ChassisName, Priority: h.Priority}
	}
	names := map[string]string{}
	for _, g := range groups {
		names[g.UUID] = g.Name
		var ch []ovngatewaytest.Chassis
		for _, u := range g.HaChassis {
			ch = append(ch, byUUID[u])
		}
		slices.SortFunc(ch, func(a, b ovngatewaytest.Chassis) int { return b.Priority - a.Priority })
		st.Groups[g.Name] = ovngatewaytest.Group{ExternalIDs: g.ExternalIDs, Chassis: ch}
	}
	for _, p := range ports {
		var port ovngatewaytest.Port
		if p.HaChassisGroup != nil {
			port.Group = names[*p.HaChassisGroup]
		}
		st.Ports[p.Name] = port
	}
	return st, nil
}
