package controllertest

import (
	"context"
	"fmt"
	"slices"
	"time"

	ovsclient "github.com/ovn-kubernetes/libovsdb/client"
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

// syncPorts makes Kube-OVN's router ports exactly want (port -> router),
// as sim.World does.
func (k *KubeOVN) syncPorts(ctx context.Context, want map[string]string) error {
	nb, err := k.connect(ctx)
	if err != nil {
		return err
	}
	_, err = sim.SyncRouterPorts(ctx, sim.NewOVNNB(nb), want)
	return err
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
