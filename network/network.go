package network

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/engine"
)

// Reasons this package adds to those of v1alpha1 (which are Cozystack's).
const (
	ReasonZoneInvalid       = "ZoneInvalid"
	ReasonSubnetNotFound    = "SubnetNotFound"
	ReasonSubnetNotBound    = "SubnetNotBound"
	ReasonSubnetNotReady    = "SubnetNotReady"
	ReasonSubnetInvalid     = "SubnetInvalid"
	ReasonPoolNotFound      = "PoolNotFound"
	ReasonSubnetStillExists = "SubnetStillExists"
	ReasonReady             = "Ready"
)

type netState = engine.State[*v1alpha1.ProxmoxNetwork]

// livePass is what one live pass over a network learned for its later
// steps; the engine hands a fresh one to every pass.
type livePass struct {
	// allocated reports that the network holds its VLAN.
	allocated bool
	// zoneProvider is the zone's Kube-OVN provider network.
	zoneProvider string
	// zoneGatewayMTU is the zone's gateway MTU (v1alpha1.GatewayMTUOf).
	zoneGatewayMTU int
	// named is the Kube-OVN Subnet the network names, as the ownership
	// check read it; nil when it does not exist.
	named *kubeovnv1.Subnet
	// subnet is the Kube-OVN Subnet bound to the network's Vlan; nil while
	// it is missing or bound to another Vlan.
	subnet *kubeovnv1.Subnet
	// chassis is the number of chassis the gateway reported, and primary
	// its group's highest-priority chassis.
	chassis int
	primary string
}

type (
	netPass = engine.Pass[*v1alpha1.ProxmoxNetwork, livePass]
	netStep = engine.PassFunc[*v1alpha1.ProxmoxNetwork, livePass]
)

// networkReconciler is the whole reconcile of one ProxmoxNetwork, built
// once: the finalizer guards the live pass and the delete lifecycle
// (finalize), and Measured records each reconcile in the cozy_proxmox
// metrics.
func (c *Controller) networkReconciler() engine.Step[*v1alpha1.ProxmoxNetwork] {
	type netObj = *v1alpha1.ProxmoxNetwork
	return engine.Measured[netObj]{
		Duration: c.cfg.Metrics.duration,
		Errors:   c.cfg.Metrics.reconcileErrors,
		Step: engine.WithFinalizer[netObj]{
			Finalizer:    v1alpha1.Finalizer,
			ReadyToClear: c.finalize,
			RecheckAfter: RetryAfter,
			Step: engine.Live[netObj]{Step: engine.WithPass[netObj, livePass]{Step: engine.PassSequence[netObj, livePass]{
				engine.Lift[netObj, livePass](engine.ObserveGeneration[netObj]{Field: func(o netObj) *int64 { return &o.Status.ObservedGeneration }}),
				netStep(c.startLive),
				netStep(c.ensureVLAN),
				netStep(c.checkSubnet),
				netStep(c.checkPool),
				netStep(c.ensureGateway),
				engine.Lift[netObj, livePass](engine.SummarizeReady[netObj]{
					Conditions: func(o netObj) *[]metav1.Condition { return &o.Status.Conditions },
					SubTypes: []string{v1alpha1.ConditionVLANAllocated, v1alpha1.ConditionSubnetReady,
						v1alpha1.ConditionIPPoolReady, v1alpha1.ConditionGatewayReady},
					Skip:     gatewayNotManaged,
					NotReady: metav1.ConditionFalse,
					Message:  "the subnet is usable from Proxmox",
				}),
				netStep(c.publish),
			}}},
		},
	}
}

// startLive drops SwitchDeleted, which only a deleting network carries, and
// reports a gateway the controller does not manage.
func (c *Controller) startLive(_ context.Context, p *netPass) (engine.Result, error) {
	conds := &p.Object.Status.Conditions
	removeCondition(conds, v1alpha1.ConditionSwitchDeleted)
	if isDisabled(c.cfg.Gateway) {
		gw := disabledStatus()
		p.SetCondition(conds, v1alpha1.ConditionGatewayReady, gw.Status, gw.Reason, gw.Message)
	}
	return engine.Result{}, nil
}

// removeCondition removes the condition of type t if there is one. Unlike
// meta.RemoveStatusCondition it leaves the slice alone when there is none:
// that one rebuilds it on every call, one element short of the room it
// needs, so every pass of a live network grew and replaced its conditions.
func removeCondition(conds *[]metav1.Condition, t string) {
	if meta.FindStatusCondition(*conds, t) != nil {
		meta.RemoveStatusCondition(conds, t)
	}
}

// gatewayNotManaged says that GatewayReady does not hold Ready: Unknown
// because gateways are not managed (Disabled) or because the OVN NB is out
// of reach within the gateway's grace period (NBUnavailable).
func gatewayNotManaged(cond metav1.Condition) bool {
	return cond.Type == v1alpha1.ConditionGatewayReady && cond.Status == metav1.ConditionUnknown &&
		(cond.Reason == v1alpha1.ReasonDisabled || cond.Reason == v1alpha1.ReasonNBUnavailable)
}

// publish brings the namespace annotation up to date (at once when Ready
// must wait for it, otherwise through the namespace runner, holding a
// fresh network's Ready status until then) and records the network's
// gauges unless its status is held for the annotation, and says when to
// look again: after the resync, or after RetryAfter while the network is
// not Ready.
func (c *Controller) publish(ctx context.Context, p *netPass) (engine.Result, error) {
	ready := meta.IsStatusConditionTrue(p.Object.Status.Conditions, v1alpha1.ConditionReady)
	hold, err := c.publishNamespace(ctx, p.Object, ready)
	if err != nil {
		return engine.Result{}, err
	}
	p.HoldStatus(hold)
	if hold == 0 {
		// A Ready held for the annotation is not Ready yet for anyone
		// reading the API; the gauges wait with it.
		c.recordNetwork(p.Object, p.Data.chassis, p.Data.primary)
	}
	if !ready {
		return engine.Result{RequeueAfter: RetryAfter}, nil
	}
	return engine.Result{RequeueAfter: Resync}, nil
}

// waitingForVLAN sets cond Unknown/WaitingForVLAN when the network holds no
// VLAN yet, and reports whether it did.
func waitingForVLAN(p *netPass, cond string) bool {
	if p.Data.allocated {
		return false
	}
	p.SetCondition(&p.Object.Status.Conditions, cond, metav1.ConditionUnknown, v1alpha1.ReasonWaitingForVLAN, "waits for a VLAN to be allocated")
	return true
}

// recordNetwork updates the network gauges from its status and the
// gateway's chassis count and primary chassis.
func (c *Controller) recordNetwork(n *v1alpha1.ProxmoxNetwork, chassis int, primary string) {
	st := n.Status
	sample := networkSample{
		namespace: n.Namespace, name: n.Name, zone: n.Spec.Zone, vlan: st.VLAN,
		ready:       meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionReady),
		readyReason: NoReadyCondition,
		deleting:    !n.DeletionTimestamp.IsZero(),
		chassis:     chassis,
		primary:     primary,
	}
	if r := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); r != nil && r.Reason != "" {
		sample.readyReason = r.Reason
	}
	if p := st.IPPool; p != nil {
		sample.pool = &[3]int32{p.Total, p.Used, p.Free}
	}
	if gw := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionGatewayReady); gw != nil && gw.Reason != v1alpha1.ReasonDisabled {
		up := gw.Status == metav1.ConditionTrue
		sample.gateway = &up
	}
	c.cfg.Metrics.network(sample)
	if ready := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); ready != nil && ready.Status != metav1.ConditionTrue {
		c.cfg.Metrics.reconcileErrors.WithLabelValues(ready.Reason).Inc()
	}
}
