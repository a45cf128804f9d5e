package network

import (
	"context"
	"time"

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
	ReasonPoolInvalid       = "PoolInvalid"
	ReasonSubnetStillExists = "SubnetStillExists"
	ReasonReady             = "Ready"
)

type netState = engine.State[*v1alpha1.ProxmoxNetwork]

// networkStep is the whole reconcile of one ProxmoxNetwork: the finalizer
// guards both the live pass and the delete lifecycle (finalize).
func (c *Controller) networkStep() engine.Step[*v1alpha1.ProxmoxNetwork] {
	return engine.StepFunc[*v1alpha1.ProxmoxNetwork](func(ctx context.Context, s *netState) (engine.Result, error) {
		start := time.Now()
		defer func() { c.cfg.Metrics.duration.Observe(time.Since(start).Seconds()) }()
		res, err := engine.WithFinalizer[*v1alpha1.ProxmoxNetwork]{
			Finalizer:    v1alpha1.Finalizer,
			ReadyToClear: c.finalize,
			RecheckAfter: RetryAfter,
			Step:         engine.StepFunc[*v1alpha1.ProxmoxNetwork](c.reconcileLive),
		}.Reconcile(ctx, s)
		if err != nil {
			c.cfg.Metrics.reconcileErrors.WithLabelValues(string(engine.ReasonOf(err))).Inc()
		}
		return res, err
	})
}

// reconcileLive runs on a network that is not being deleted: VLAN, subnet,
// pool, gateway, Ready, the namespace annotation and the metrics.
func (c *Controller) reconcileLive(ctx context.Context, s *netState) (engine.Result, error) {
	if !s.Object.DeletionTimestamp.IsZero() {
		return engine.Result{}, nil // finalize does the work
	}
	st := &s.Object.Status
	st.ObservedGeneration = s.Object.Generation
	meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionSwitchDeleted)
	if isDisabled(c.cfg.Gateway) {
		gw, _ := Disabled{}.Ensure(ctx, NetworkInfo{})
		s.SetCondition(&st.Conditions, v1alpha1.ConditionGatewayReady, gw.Status, gw.Reason, gw.Message)
	}
	pass := &livePass{}
	ok, err := c.ensureVLAN(ctx, s, pass)
	if err != nil {
		return engine.Result{}, err
	}
	if ok {
		if err := c.checkSubnet(ctx, s, pass); err != nil {
			return engine.Result{}, err
		}
		if err := c.checkPool(ctx, s, pass); err != nil {
			return engine.Result{}, err
		}
		c.ensureGateway(ctx, s, pass)
	} else {
		c.waitForVLAN(s)
	}
	c.summarize(s)
	if err := c.syncNamespace(ctx, s.Object.Namespace, s.Object); err != nil {
		return engine.Result{}, err
	}
	c.recordNetwork(s.Object, pass.chassis)
	return c.liveRequeue(s, pass), nil
}

// livePass carries what one live pass learned for its later steps.
type livePass struct {
	zoneProvider string
	subnetBound  bool
	vpc          string
	subnet       *kubeovnv1.Subnet
	chassis      int
	requeue      time.Duration
}

func (c *Controller) liveRequeue(s *netState, pass *livePass) engine.Result {
	after := Resync
	if !meta.IsStatusConditionTrue(s.Object.Status.Conditions, v1alpha1.ConditionReady) {
		after = RetryAfter
	}
	if pass.requeue > 0 {
		after = min(after, pass.requeue)
	}
	return engine.Result{RequeueAfter: after}
}

// waitForVLAN marks every condition after VLANAllocated as waiting.
func (c *Controller) waitForVLAN(s *netState) {
	conds := []string{v1alpha1.ConditionSubnetReady, v1alpha1.ConditionIPPoolReady}
	if !isDisabled(c.cfg.Gateway) {
		conds = append(conds, v1alpha1.ConditionGatewayReady)
	}
	for _, t := range conds {
		s.SetCondition(&s.Object.Status.Conditions, t, metav1.ConditionUnknown, v1alpha1.ReasonWaitingForVLAN, "waits for a VLAN to be allocated")
	}
}

// summarize sets Ready from VLANAllocated, SubnetReady, IPPoolReady and,
// while gateways are managed, GatewayReady: True when all are True, else the
// first that is not. GatewayReady Unknown/Disabled never holds Ready, and
// neither does Unknown/NBUnavailable (a gateway in its NB grace period).
func (c *Controller) summarize(s *netState) {
	conds := &s.Object.Status.Conditions
	for _, t := range []string{v1alpha1.ConditionVLANAllocated, v1alpha1.ConditionSubnetReady,
		v1alpha1.ConditionIPPoolReady, v1alpha1.ConditionGatewayReady} {
		cond := meta.FindStatusCondition(*conds, t)
		if t == v1alpha1.ConditionGatewayReady && cond != nil && cond.Status == metav1.ConditionUnknown &&
			(cond.Reason == v1alpha1.ReasonDisabled || cond.Reason == v1alpha1.ReasonNBUnavailable) {
			continue
		}
		if cond == nil {
			s.SetCondition(conds, v1alpha1.ConditionReady, metav1.ConditionUnknown, engine.ReasonPending, "condition "+t+" has not been reported yet")
			return
		}
		if cond.Status != metav1.ConditionTrue {
			s.SetCondition(conds, v1alpha1.ConditionReady, metav1.ConditionFalse, cond.Reason, cond.Message)
			return
		}
	}
	s.SetCondition(conds, v1alpha1.ConditionReady, metav1.ConditionTrue, ReasonReady, "the subnet is usable from Proxmox")
}

// recordNetwork updates the network gauges from its status.
func (c *Controller) recordNetwork(n *v1alpha1.ProxmoxNetwork, chassis int) {
	st := n.Status
	sample := networkSample{
		namespace: n.Namespace, name: n.Name, zone: n.Spec.Zone, vlan: st.VLAN,
		ready:    meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionReady),
		deleting: !n.DeletionTimestamp.IsZero(),
		chassis:  chassis,
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
