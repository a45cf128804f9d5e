package ovnadapter

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/network"
	"github.com/pxsubstrate/pxsubstrate/ovngateway"
)

// NB is the part of *ovngateway.Client the adapter uses.
type NB interface {
	Reconcile(ctx context.Context, gw ovngateway.Gateway) (ovngateway.Outcome, error)
	Release(ctx context.Context, n ovngateway.Network) (ovngateway.Released, error)
	Collect(ctx context.Context, exists ovngateway.Exists) (ovngateway.Collected, error)
}

// Adapter is a network.Gateway over an OVN northbound database.
type Adapter struct {
	nb    NB
	nodes client.Reader
	grace *ovngateway.Grace
}

var _ network.Gateway = (*Adapter)(nil)

// New returns an adapter that reads Nodes through nodes and times NB
// outages on clk (clock.RealClock{} in production) with ovngateway.NBGrace.
func New(nb NB, nodes client.Reader, clk clock.PassiveClock) *Adapter {
	return &Adapter{nb: nb, nodes: nodes, grace: ovngateway.NewGrace(clk, ovngateway.NBGrace)}
}

// Ensure brings the network's group up to date. An NB error within the
// grace comes back with an empty reason (the network keeps its condition);
// past it, as False/NBUnavailable.
func (a *Adapter) Ensure(ctx context.Context, n network.NetworkInfo) (network.GatewayStatus, error) {
	if n.VPC == "" {
		return network.GatewayStatus{Status: metav1.ConditionFalse, Reason: string(ovngateway.ReasonRouterPortMissing),
			Message: fmt.Sprintf("Subnet %q has no spec.vpc yet, so its router port is unknown", n.Subnet), RequeueAfter: ovngateway.RetryAfter}, nil
	}
	var nodes corev1.NodeList
	if err := a.nodes.List(ctx, &nodes, client.MatchingLabels{ovngateway.ReadyLabel(n.ProviderNetwork): "true"}); err != nil {
		return network.GatewayStatus{}, fmt.Errorf("cannot list the trunk Nodes of provider network %q: %w", n.ProviderNetwork, err)
	}
	ptrs := make([]*corev1.Node, len(nodes.Items))
	for i := range nodes.Items {
		ptrs[i] = &nodes.Items[i]
	}
	gw, err := ovngateway.NewGateway(netOf(n), n.VPC, n.ProviderNetwork, ovngateway.Candidates(n.ProviderNetwork, ptrs))
	if err != nil {
		return network.GatewayStatus{Status: metav1.ConditionFalse, Reason: string(ovngateway.ReasonSubnetUnavailable), Message: err.Error()}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, ovngateway.PassTimeout)
	defer cancel()
	o, err := a.nb.Reconcile(ctx, gw)
	expired := a.grace.Observe(gw.ID(), err)
	cond, ok := ovngateway.Condition(o, err, expired)
	st := network.GatewayStatus{Chassis: o.Chassis, RequeueAfter: ovngateway.RequeueAfter(o, err)}
	if ok {
		st.Status, st.Reason, st.Message = cond.Status, cond.Reason, cond.Message
	}
	return st, err
}

// Release deletes the network's group. With the VPC known it goes by the
// router port; without (the subnet is gone), by the group's network tag.
func (a *Adapter) Release(ctx context.Context, n network.NetworkInfo) (bool, error) {
	defer a.grace.Forget(n.Namespace + "/" + n.Name)
	if n.VPC != "" {
		if _, err := a.nb.Release(ctx, netOf(n)); err != nil {
			return false, err
		}
		return true, nil
	}
	exists := func(_ context.Context, namespace, name string) (bool, error) {
		return namespace != n.Namespace || name != n.Name, nil
	}
	if _, err := a.nb.Collect(ctx, exists); err != nil {
		return false, fmt.Errorf("cannot release the gateway of network %s/%s: %w", n.Namespace, n.Name, err)
	}
	return true, nil
}

func netOf(n network.NetworkInfo) ovngateway.Network {
	return ovngateway.Network{Namespace: n.Namespace, Name: n.Name, RouterPort: ovngateway.RouterPortName(n.VPC, n.Subnet)}
}
