package kubenetgateway

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/network"
	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/kubegateway"
)

// ConflictRetry is how soon a network is reconciled again after the
// northbound rows changed under its pass (ovngateway.ErrConflict): the next
// pass reads the new rows, so there is no reason to wait long.
const ConflictRetry = time.Second

// NB is the part of *ovngateway.Client the adapter uses.
type NB interface {
	Reconcile(ctx context.Context, gw ovngateway.Gateway) (ovngateway.Outcome, error)
	Collect(ctx context.Context, exists ovngateway.Exists) (ovngateway.Collected, error)
}

var _ NB = (*ovngateway.Client)(nil)

// Gateway implements network.Gateway over an OVN northbound client.
type Gateway struct {
	nb     NB
	reader client.Reader
	grace  *kubegateway.Grace

	mu     sync.Mutex
	groups map[string]group // network ID -> its group after its last good pass
	// waiting maps a router port Kube-OVN has not made yet to the
	// networks whose last pass found it missing.
	waiting map[string]map[network.Key]bool
}

// group is what a good pass left a network's HA_Chassis_Group with: its
// chassis count and its highest-priority chassis.
type group struct {
	chassis int
	primary string
}

var _ network.Gateway = (*Gateway)(nil)

// Option configures a Gateway.
type Option func(*options)

type options struct {
	clock clock.PassiveClock
	grace time.Duration
}

// WithClock sets the clock of the NB grace period (tests pass a fake one).
func WithClock(c clock.PassiveClock) Option { return func(o *options) { o.clock = c } }

// WithGrace sets how long a network keeps its GatewayReady condition while
// the northbound database fails; the default is ovngateway.NBGrace.
func WithGrace(d time.Duration) Option { return func(o *options) { o.grace = d } }

// New returns the Gateway of a controller: nb reaches the northbound
// database and reader (the controller's cached client) lists Nodes, as
// metadata, and reads ProxmoxNetworks.
func New(nb NB, reader client.Reader, opts ...Option) (*Gateway, error) {
	if nb == nil || reader == nil {
		return nil, fmt.Errorf("cannot build the OVN gateway adapter: %w: the NB client and the reader are required", ovngateway.ErrInvalid)
	}
	o := options{clock: clock.RealClock{}, grace: ovngateway.NBGrace}
	for _, opt := range opts {
		opt(&o)
	}
	return &Gateway{nb: nb, reader: reader, grace: kubegateway.NewGrace(o.clock, o.grace), groups: map[string]group{},
		waiting: map[string]map[network.Key]bool{}}, nil
}

// Ensure makes the network's router port use its HA_Chassis_Group with the
// chassis of the Nodes ready on its provider network, and reports
// GatewayReady.
func (g *Gateway) Ensure(ctx context.Context, n network.NetworkInfo) (network.GatewayStatus, error) {
	id := n.Namespace + "/" + n.Name
	switch {
	case n.VLAN == 0:
		return statusOf(ovngateway.WaitingForVLAN()), nil
	case n.VPC == "":
		return statusOf(ovngateway.SubnetUnavailable(n.Subnet, "its spec.vpc is empty")), nil
	}
	nodes, err := g.nodes(ctx)
	if err != nil {
		return network.GatewayStatus{}, err
	}
	port := ovngateway.Network{Namespace: n.Namespace, Name: n.Name, RouterPort: ovngateway.RouterPortName(n.VPC, n.Subnet)}
	gw, err := ovngateway.NewGateway(port, n.VPC, n.ProviderNetwork, kubegateway.Candidates(n.ProviderNetwork, nodes))
	if err != nil {
		return statusOf(ovngateway.SubnetUnavailable(n.Subnet, err.Error())), nil
	}
	gw.GatewayMTU = n.GatewayMTU
	o, err := g.nb.Reconcile(ctx, gw)
	g.wait(port.RouterPort, network.Key{Namespace: n.Namespace, Name: n.Name}, err == nil && o.Reason == ovngateway.ReasonRouterPortMissing)
	if errors.Is(err, ovngateway.ErrInvalid) {
		return statusOf(ovngateway.SubnetUnavailable(n.Subnet, err.Error())), nil
	}
	expired := g.grace.Observe(id, err)
	cond, decided := kubegateway.Condition(o, err, expired)
	st := network.GatewayStatus{
		Status: cond.Status, Reason: cond.Reason, Message: cond.Message,
		Chassis: o.Chassis, Primary: o.Active, RequeueAfter: ovngateway.RequeueAfter(o, err),
	}
	if errors.Is(err, ovngateway.ErrConflict) {
		st.RequeueAfter = ConflictRetry
	}
	if err == nil {
		g.remember(id, group{o.Chassis, o.Active})
		return st, nil
	}
	if !decided {
		st = g.carried(ctx, n, err)
	}
	return st, fmt.Errorf("cannot bring the gateway of network %s up to date: %w", id, err)
}

// carried is the status of a network within its NB grace period: the
// GatewayReady condition it carries now, decided by an earlier pass, or
// False/NBUnavailable for a network whose gateway was never decided (a
// network that never had a gateway does not become Ready without one).
func (g *Gateway) carried(ctx context.Context, n network.NetworkInfo, err error) network.GatewayStatus {
	st := network.GatewayStatus{
		Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonNBUnavailable,
		Message:      fmt.Sprintf("the OVN northbound database does not answer, so the router port's gateway cannot be set up yet: %v", err),
		RequeueAfter: ovngateway.RetryAfter,
	}
	cur := &v1alpha1.ProxmoxNetwork{}
	if gerr := g.reader.Get(ctx, client.ObjectKey{Namespace: n.Namespace, Name: n.Name}, cur); gerr != nil {
		return st
	}
	c := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionGatewayReady)
	if c == nil || c.Reason == "" || c.Reason == v1alpha1.ReasonWaitingForVLAN || c.Reason == v1alpha1.ReasonSubnetUnavailable {
		return st
	}
	st.Status, st.Reason, st.Message = c.Status, c.Reason, c.Message
	g.mu.Lock()
	last := g.groups[n.Namespace+"/"+n.Name]
	g.mu.Unlock()
	st.Chassis, st.Primary = last.chassis, last.primary
	return st
}

// wait records that network k waits for router port port to appear, or
// that it waits no more.
func (g *Gateway) wait(port string, k network.Key, missing bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case missing && g.waiting[port] == nil:
		g.waiting[port] = map[network.Key]bool{k: true}
	case missing:
		g.waiting[port][k] = true
	case g.waiting[port] != nil:
		delete(g.waiting[port], k)
		if len(g.waiting[port]) == 0 {
			delete(g.waiting, port)
		}
	}
}

// RouterPortAppeared returns, and forgets, the networks whose last pass
// found router port name missing: the controller reconciles them again at
// once when the port appears (ovngateway.Config.OnRouterPort) rather than
// after RetryAfter. It returns at once.
func (g *Gateway) RouterPortAppeared(name string) []network.Key {
	g.mu.Lock()
	defer g.mu.Unlock()
	keys := make([]network.Key, 0, len(g.waiting[name]))
	for k := range g.waiting[name] {
		keys = append(keys, k)
	}
	delete(g.waiting, name)
	return keys
}

func (g *Gateway) remember(id string, last group) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.groups[id] = last
}

// nodes lists every Node's metadata: labels, annotations and deletion
// timestamp are all kubegateway.Candidates reads.
func (g *Gateway) nodes(ctx context.Context) ([]*metav1.PartialObjectMetadata, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(NodeListGVK)
	if err := g.reader.List(ctx, list); err != nil {
		return nil, fmt.Errorf("cannot list Nodes: %w", err)
	}
	out := make([]*metav1.PartialObjectMetadata, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// Release deletes the network's HA_Chassis_Groups: every group tagged with
// this package's owner and the network's ID, whatever router port it
// serves. Groups of other networks and other owners are left alone.
func (g *Gateway) Release(ctx context.Context, n network.NetworkInfo) (bool, error) {
	id := n.Namespace + "/" + n.Name
	onlyThis := func(_ context.Context, namespace, name string) (bool, error) {
		return namespace != n.Namespace || name != n.Name, nil
	}
	if _, err := g.nb.Collect(ctx, onlyThis); err != nil {
		return false, fmt.Errorf("cannot release the gateway of network %s: %w", id, err)
	}
	g.grace.Forget(id)
	g.mu.Lock()
	delete(g.groups, id)
	g.mu.Unlock()
	return true, nil
}

// statusOf is the GatewayReady status of an outcome without an error.
func statusOf(o ovngateway.Outcome) network.GatewayStatus {
	c, _ := kubegateway.Condition(o, nil, false)
	return network.GatewayStatus{
		Status: c.Status, Reason: c.Reason, Message: c.Message,
		Chassis: o.Chassis, Primary: o.Active, RequeueAfter: ovngateway.RequeueAfter(o, nil),
	}
}
