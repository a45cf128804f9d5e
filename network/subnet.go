package network

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	ipamv1alpha2 "github.com/pxsubstrate/pxsubstrate/api/ipam/v1alpha2"
	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/engine"
)

// checkSubnet reports SubnetReady and copies the subnet's addressing into
// the status. A subnet bound to the network's Vlan gets the network
// finalizer, so it outlives the network's last VM.
func (c *Controller) checkSubnet(ctx context.Context, p *netPass) (engine.Result, error) {
	if waitingForVLAN(p, v1alpha1.ConditionSubnetReady) {
		return engine.Result{}, nil
	}
	n := p.Object
	set := func(status metav1.ConditionStatus, reason, msg string) {
		p.SetCondition(&n.Status.Conditions, v1alpha1.ConditionSubnetReady, status, reason, msg)
	}
	// The VLAN step read the Subnet for its ownership check in this pass.
	sub := p.Data.named
	if sub == nil {
		set(metav1.ConditionFalse, ReasonSubnetNotFound, fmt.Sprintf("Kube-OVN Subnet %q does not exist", n.Spec.Subnet))
		return engine.Result{}, nil
	}
	if sub.Spec.Vlan != n.Status.VLANName {
		set(metav1.ConditionFalse, ReasonSubnetNotBound, fmt.Sprintf("Subnet %q has spec.vlan %q, expected %q", sub.Name, sub.Spec.Vlan, n.Status.VLANName))
		return engine.Result{}, nil
	}
	if r := subnetOwnership(sub, n.Namespace); r.reason != "" {
		set(metav1.ConditionFalse, r.reason, r.msg)
		return engine.Result{}, nil
	}
	p.Data.subnet = sub
	if err := c.holdSubnet(ctx, sub); err != nil {
		return engine.Result{}, err
	}
	n.Status.CIDR = sub.Spec.CIDRBlock
	n.Status.Gateway = sub.Spec.Gateway
	n.Status.Prefix = 0
	if cidrs, err := SubnetCIDRs(sub.Spec.CIDRBlock); err == nil {
		n.Status.Prefix = int32(cidrs[0].Bits())
	}
	ready, validated := subnetCondition(sub, "Ready"), subnetCondition(sub, "Validated")
	switch {
	case validated != nil && validated.Status == string(metav1.ConditionFalse):
		set(metav1.ConditionFalse, ReasonSubnetInvalid, validated.Message)
	case ready != nil && ready.Status == string(metav1.ConditionTrue):
		set(metav1.ConditionTrue, ReasonReady, "Kube-OVN reports the subnet Ready")
	default:
		msg := "Kube-OVN has not reported the subnet Ready yet"
		if ready != nil && ready.Message != "" {
			msg = ready.Message
		}
		set(metav1.ConditionFalse, ReasonSubnetNotReady, msg)
		// Kube-OVN may not have seen a Vlan created moments ago: the
		// status waits for its report instead of saying so first.
		p.HoldStatus(c.fresh.hold(sub.Spec.Vlan))
	}
	return engine.Result{}, nil
}

func subnetCondition(sub *kubeovnv1.Subnet, typ string) *kubeovnv1.SubnetCondition {
	for i := range sub.Status.Conditions {
		if sub.Status.Conditions[i].Type == typ {
			return &sub.Status.Conditions[i]
		}
	}
	return nil
}

// holdSubnet puts the network finalizer on a live subnet. The Subnet is
// Kube-OVN's: it writes the status, often between the informer's copy and
// this patch, so the patch tests the finalizers alone (addFinalizer) rather
// than the whole object's resourceVersion.
func (c *Controller) holdSubnet(ctx context.Context, sub *kubeovnv1.Subnet) error {
	if !sub.DeletionTimestamp.IsZero() || controllerutil.ContainsFinalizer(sub, v1alpha1.Finalizer) {
		return nil
	}
	if err := addFinalizer(ctx, c.cfg.Client, sub, v1alpha1.Finalizer); err != nil {
		return fmt.Errorf("cannot add finalizer %q to Kube-OVN Subnet %q: %w", v1alpha1.Finalizer, sub.Name, err)
	}
	return nil
}

// checkPool reports IPPoolReady and the pool's address counts: total from
// the pool's spec, used from the IPAddresses of the pool in the cache.
func (c *Controller) checkPool(ctx context.Context, p *netPass) (engine.Result, error) {
	if waitingForVLAN(p, v1alpha1.ConditionIPPoolReady) {
		return engine.Result{}, nil
	}
	n := p.Object
	set := func(status metav1.ConditionStatus, reason, msg string) {
		p.SetCondition(&n.Status.Conditions, v1alpha1.ConditionIPPoolReady, status, reason, msg)
	}
	pool := &ipamv1alpha2.InClusterIPPool{}
	if err := c.cfg.Client.Get(ctx, client.ObjectKey{Namespace: n.Namespace, Name: n.Spec.IPPool}, pool); err != nil {
		if !apierrors.IsNotFound(err) {
			return engine.Result{}, fmt.Errorf("cannot get InClusterIPPool %s/%s: %w", n.Namespace, n.Spec.IPPool, err)
		}
		n.Status.IPPool = nil
		set(metav1.ConditionFalse, ReasonPoolNotFound, fmt.Sprintf("InClusterIPPool %q does not exist in this namespace", n.Spec.IPPool))
		return engine.Result{}, nil
	}
	total, err := PoolTotal(pool.Spec)
	if err != nil {
		n.Status.IPPool = nil
		set(metav1.ConditionFalse, v1alpha1.ReasonPoolAddressInvalid, err.Error())
		return engine.Result{}, nil
	}
	used := int32(c.cache.PoolUsage(n.Namespace, n.Spec.IPPool).Addresses)
	n.Status.IPPool = &v1alpha1.IPPoolUsage{Total: total, Used: used, Free: max(total-used, 0)}
	sub := p.Data.subnet
	if sub == nil {
		set(metav1.ConditionUnknown, v1alpha1.ReasonSubnetUnavailable, "the pool is checked against the subnet once the subnet is bound")
		return engine.Result{}, nil
	}
	reason, msg := CheckPoolSplit(sub.Spec.CIDRBlock, sub.Spec.Gateway, sub.Spec.ExcludeIps, pool.Spec)
	switch {
	case reason != "":
		set(metav1.ConditionFalse, reason, msg)
	case total > 0 && n.Status.IPPool.Free == 0:
		set(metav1.ConditionTrue, v1alpha1.ReasonPoolExhausted, fmt.Sprintf("all %d addresses of the pool are allocated; new machines will wait", total))
	default:
		set(metav1.ConditionTrue, ReasonReady, "the pool lies inside the subnet's excludeIps")
	}
	return engine.Result{}, nil
}

// ensureGateway reports GatewayReady from the Gateway, and looks again as
// soon as the gateway asks (RetryAfter when it failed).
func (c *Controller) ensureGateway(ctx context.Context, p *netPass) (engine.Result, error) {
	if isDisabled(c.cfg.Gateway) || waitingForVLAN(p, v1alpha1.ConditionGatewayReady) {
		return engine.Result{}, nil
	}
	n := p.Object
	set := func(status metav1.ConditionStatus, reason, msg string) {
		p.SetCondition(&n.Status.Conditions, v1alpha1.ConditionGatewayReady, status, reason, msg)
	}
	sub := p.Data.subnet
	if sub == nil {
		set(metav1.ConditionUnknown, v1alpha1.ReasonSubnetUnavailable, "the router port is looked up once the subnet is bound")
		return engine.Result{}, nil
	}
	start := time.Now()
	gs, err := c.cfg.Gateway.Ensure(ctx, c.info(n, p.Data, sub.Spec.Vpc))
	c.cfg.Metrics.gatewayTime(gatewayOpEnsure, start)
	p.Data.chassis, p.Data.primary = gs.Chassis, gs.Primary
	if err != nil {
		c.cfg.Metrics.NBErrors.Inc()
		if gs.Reason == "" {
			// Within the gateway's grace: the condition the network carries
			// stands; with none yet, the gateway is not known.
			if meta.FindStatusCondition(n.Status.Conditions, v1alpha1.ConditionGatewayReady) == nil {
				set(metav1.ConditionUnknown, v1alpha1.ReasonNBUnavailable, fmt.Sprintf("cannot bring the gateway up to date yet: %v", err))
			}
			return engine.Result{RequeueAfter: RetryAfter}, nil
		}
		set(gs.Status, gs.Reason, gs.Message)
		c.setFailover(p, gs)
		return engine.Result{RequeueAfter: RetryAfter}, nil
	}
	set(gs.Status, gs.Reason, gs.Message)
	c.setFailover(p, gs)
	return engine.Result{RequeueAfter: gs.RequeueAfter}, nil
}

// MinFailoverChassis is the smallest gateway group that fails over by
// itself. ovn-controller lets a standby chassis claim a gateway port only
// while at least one of its BFD sessions to the other chassis is up
// (ha_chassis_group_is_active in OVN's controller/ha-chassis.c): a
// chassis that sees no peer counts itself as cut off. In a group of two whose active
// chassis fails, the standby's only peer is gone, so it takes over only if
// a third chassis carrying the VPC keeps a session up; a group of three
// keeps one.
const MinFailoverChassis = 3

// setFailover sets GatewayFailover from the gateway's status, and warns
// once per chassis count when the group cannot fail over.
func (c *Controller) setFailover(p *netPass, gs GatewayStatus) {
	n := p.Object
	set := func(status metav1.ConditionStatus, reason, msg string) {
		p.SetCondition(&n.Status.Conditions, v1alpha1.ConditionGatewayFailover, status, reason, msg)
	}
	switch {
	case gs.Reason != v1alpha1.ReasonChassisAssigned:
		c.memo.clear(n, memoFailover)
		set(metav1.ConditionUnknown, v1alpha1.ReasonGatewayNotAssigned, "the router port has no gateway group yet, so there is nothing to fail over")
	case gs.Chassis >= MinFailoverChassis:
		c.memo.clear(n, memoFailover)
		set(metav1.ConditionTrue, v1alpha1.ReasonStandbyReady,
			fmt.Sprintf("the gateway group has %d chassis: when the active one fails, a standby still sees another over BFD and takes over", gs.Chassis))
	default:
		msg := noFailoverMessage(gs.Chassis, p.Data.zoneProvider)
		set(metav1.ConditionFalse, v1alpha1.ReasonNoFailover, msg)
		if c.memo.first(n, memoFailover, strconv.Itoa(gs.Chassis)) {
			c.event(n, corev1.EventTypeWarning, EventNoFailover, msg)
		}
	}
}

// noFailoverMessage says why a group of chassis trunk nodes cannot fail
// over and what to do.
func noFailoverMessage(chassis int, provider string) string {
	if chassis < 2 {
		return fmt.Sprintf("the gateway group has %d chassis (the trunk nodes ready on provider network %q): there is no standby, "+
			"so if that chassis fails the gateway stays down; make at least two more nodes trunk nodes of the provider network", chassis, provider)
	}
	return fmt.Sprintf("the gateway group has %d chassis (the trunk nodes ready on provider network %q): "+
		"OVN's standby takes over only while it still sees another chassis over BFD, so if the active chassis fails the gateway stays down "+
		"unless another node with a workload of the VPC keeps a BFD session up; "+
		"make a third node a trunk node of the provider network", chassis, provider)
}

func (c *Controller) info(n *v1alpha1.ProxmoxNetwork, pass livePass, vpc string) NetworkInfo {
	return NetworkInfo{
		Namespace: n.Namespace, Name: n.Name, Zone: n.Spec.Zone, ProviderNetwork: pass.zoneProvider,
		VPC: vpc, Subnet: n.Spec.Subnet, VLAN: int(n.Status.VLAN), GatewayMTU: pass.zoneGatewayMTU,
	}
}
