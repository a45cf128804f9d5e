package network

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc/kubestore"
)

// ReasonProviderNetworkNotFound is the zone's Ready=False reason while its
// Kube-OVN ProviderNetwork does not exist.
const ReasonProviderNetworkNotFound = "ProviderNetworkNotFound"

// zonePass is what one pass over a zone learned for its later steps.
type zonePass struct {
	// zs is the zone's allocator, built from its spec and the cache.
	zs *zoneState
	// orphans counts the orphaned Vlans that wait for Kube-OVN.
	orphans int
	// counts are the zone's VLAN counts once the orphans are collected.
	counts vlanalloc.Counts
	// notes are added to the Ready condition's message.
	notes []string
}

type (
	zonePassState = engine.Pass[*v1alpha1.ProxmoxNetworkZone, zonePass]
	zoneStep      = engine.PassFunc[*v1alpha1.ProxmoxNetworkZone, zonePass]
)

// zoneReconciler is the whole reconcile of one ProxmoxNetworkZone: it
// reports the zone's counts and readiness, and collects the Vlans and
// claims of networks that are gone (orphans).
func (c *Controller) zoneReconciler() engine.Step[*v1alpha1.ProxmoxNetworkZone] {
	type zoneObj = *v1alpha1.ProxmoxNetworkZone
	return engine.WithPass[zoneObj, zonePass]{Step: engine.PassSequence[zoneObj, zonePass]{
		zoneStep(c.zoneThrottle),
		engine.Lift[zoneObj, zonePass](engine.ObserveGeneration[zoneObj]{Field: func(o zoneObj) *int64 { return &o.Status.ObservedGeneration }}),
		zoneStep(c.zoneHypervisor),
		zoneStep(c.zoneAllocator),
		zoneStep(c.zoneOrphans),
		zoneStep(c.zoneCounts),
		zoneStep(c.zoneReady),
	}}
}

// zoneThrottle lets the zone's full pass run at most once per
// Config.StatusInterval; a pass in between changes nothing and comes back
// when the interval is over.
func (c *Controller) zoneThrottle(_ context.Context, p *zonePassState) (engine.Result, error) {
	if wait := c.throttle.wait("zone/" + p.Object.Name); wait > 0 {
		return engine.Result{RequeueAfter: wait}, engine.ErrHalt
	}
	return engine.Result{}, nil
}

// zoneAllocator builds the zone's allocator; a zone that cannot allocate is
// Ready=False/ZoneInvalid and the pass stops there.
func (c *Controller) zoneAllocator(_ context.Context, p *zonePassState) (engine.Result, error) {
	zs, err := c.cache.allocator(p.Object, c.store)
	if err != nil {
		p.SetCondition(&p.Object.Status.Conditions, v1alpha1.ConditionReady, metav1.ConditionFalse, ReasonZoneInvalid, err.Error())
		return engine.Result{RequeueAfter: Resync}, engine.ErrHalt
	}
	p.Data.zs = zs
	return engine.Result{}, nil
}

// zoneOrphans collects the zone's orphans and looks again soon while some
// wait for Kube-OVN.
func (c *Controller) zoneOrphans(ctx context.Context, p *zonePassState) (engine.Result, error) {
	orphans, recheck, err := c.collectOrphans(ctx, p.Object.Name)
	if err != nil {
		return engine.Result{}, err
	}
	p.Data.orphans = orphans
	return engine.Result{RequeueAfter: recheck}, nil
}

// zoneCounts writes the zone's VLAN and network counts to its status and
// metrics, and notes stranded VLANs and waiting orphans.
func (c *Controller) zoneCounts(_ context.Context, p *zonePassState) (engine.Result, error) {
	z, st, index := p.Object, &p.Object.Status, p.Data.zs.alloc.Index()
	counts := index.Counts()
	p.Data.counts = counts
	st.TotalVLANs, st.AllocatedVLANs, st.FreeVLANs = int32(counts.Total), int32(counts.Allocated), int32(counts.Free)
	st.Networks = int32(c.cache.ZoneNetworks(z.Name))
	st.NoFailoverNetworks = c.cache.zoneNoFailover(z.Name)
	c.cfg.Metrics.zone(z.Name, counts.Total, counts.Allocated, counts.Free, int(st.Networks), p.Data.orphans)
	if stranded := index.Stranded(); len(stranded) > 0 {
		ids := make([]string, len(stranded))
		for i, vid := range stranded {
			ids[i] = strconv.Itoa(vid)
		}
		p.Data.notes = append(p.Data.notes, "networks keep VLANs outside the zone's ranges: "+strings.Join(ids, ", "))
	}
	if nf := st.NoFailoverNetworks; len(nf) > 0 {
		p.Data.notes = append(p.Data.notes, fmt.Sprintf("%d gateway group(s) cannot fail over (make a third node a trunk node of the provider network): %s", len(nf), strings.Join(nf, ", ")))
	}
	if p.Data.orphans > 0 {
		p.Data.notes = append(p.Data.notes, fmt.Sprintf("%d orphaned Vlan(s) wait for Kube-OVN before they are collected", p.Data.orphans))
	}
	return engine.Result{}, nil
}

// zoneReady sets Ready from the zone's Kube-OVN ProviderNetwork.
func (c *Controller) zoneReady(ctx context.Context, p *zonePassState) (engine.Result, error) {
	z := p.Object
	ready := func(status metav1.ConditionStatus, reason, msg string) {
		p.SetCondition(&z.Status.Conditions, v1alpha1.ConditionReady, status, reason, msg)
	}
	suffix := ""
	if len(p.Data.notes) > 0 {
		suffix = "; " + strings.Join(p.Data.notes, "; ")
	}
	pn := &kubeovnv1.ProviderNetwork{}
	switch err := c.cfg.Client.Get(ctx, client.ObjectKey{Name: z.Spec.ProviderNetwork}, pn); {
	case apierrors.IsNotFound(err):
		ready(metav1.ConditionFalse, ReasonProviderNetworkNotFound, fmt.Sprintf("Kube-OVN ProviderNetwork %q does not exist%s", z.Spec.ProviderNetwork, suffix))
	case err != nil:
		return engine.Result{}, fmt.Errorf("cannot get Kube-OVN ProviderNetwork %q: %w", z.Spec.ProviderNetwork, err)
	case !pn.Status.Ready:
		ready(metav1.ConditionFalse, v1alpha1.ReasonProviderNetworkNotReady, fmt.Sprintf("Kube-OVN ProviderNetwork %q is not ready on every node it selects%s", z.Spec.ProviderNetwork, suffix))
	default:
		ready(metav1.ConditionTrue, ReasonReady, fmt.Sprintf("%d of %d VLANs free; trunk ready on %d node(s)%s", p.Data.counts.Free, p.Data.counts.Total, len(pn.Status.ReadyNodes), suffix))
	}
	return engine.Result{RequeueAfter: Resync}, nil
}

// collectOrphans deletes the Vlans and claims of the zone whose network is
// gone, once no subnet holds the Vlan (the same prune rules as a deleting
// network, without a deletion time). It returns how many orphaned Vlans are
// still held, and when the earliest prune timer runs out.
func (c *Controller) collectOrphans(ctx context.Context, zone string) (held int, recheck time.Duration, err error) {
	for _, vi := range c.cache.zoneVlans(zone) {
		kept, err := c.collectOrphanVlan(ctx, vi)
		if err != nil {
			return 0, 0, err
		}
		if kept {
			held++
			recheck = RetryAfter
		}
	}
	return held, recheck, c.collectOrphanClaims(ctx, zone)
}

// collectOrphanVlan deletes one Vlan of the zone when its network is gone
// and nothing holds it; kept reports that it is orphaned but still held.
func (c *Controller) collectOrphanVlan(ctx context.Context, vi vlanInfo) (kept bool, err error) {
	gone, err := c.networkGone(ctx, vi.Network)
	if err != nil || !gone {
		return false, err
	}
	v := &kubeovnv1.Vlan{}
	if err := c.cfg.APIReader.Get(ctx, client.ObjectKey{Name: vi.Name}, v); err != nil {
		if apierrors.IsNotFound(err) {
			c.cache.Forget(&kubeovnv1.Vlan{ObjectMeta: metav1.ObjectMeta{Name: vi.Name}})
			return false, nil
		}
		return false, fmt.Errorf("cannot get Kube-OVN Vlan %q: %w", vi.Name, err)
	}
	reason, _, err := c.waitForPrune(ctx, v, time.Time{}, nil)
	if err == nil && reason == "" && c.subnetNames(ctx, v.Name) {
		reason = v1alpha1.ReasonVLANStillReferenced
	}
	if err == nil && reason == "" {
		// the namespace stops listing the VLAN before it can be handed out
		err = c.syncNamespace(ctx, vi.Network.Namespace, nil)
	}
	if err == nil && reason == "" {
		reason, _, err = c.deleteVlan(ctx, v)
	}
	if err != nil || reason != "" {
		return reason != "", err
	}
	c.cfg.Log.Info("collected orphaned VLAN", "vlan", v.Spec.ID, "name", v.Name, "network", vi.Network.String())
	return false, nil
}

// collectOrphanClaims releases the zone's claims that have no Vlan and
// whose network is gone.
func (c *Controller) collectOrphanClaims(ctx context.Context, zone string) error {
	for _, ci := range c.cache.zoneClaims(zone) {
		if _, hasVlan := c.cache.vlan(ci.R.Vlan); hasVlan {
			continue
		}
		gone, err := c.networkGone(ctx, ci.R.Network)
		if err != nil {
			return err
		}
		if !gone {
			continue
		}
		// the namespace stops listing the VLAN before it can be handed out
		if err := c.syncNamespace(ctx, ci.R.Network.Namespace, nil); err != nil {
			return err
		}
		if err := c.store.Release(ctx, ci.Provider, ci.R); err != nil {
			return fmt.Errorf("cannot release the orphaned claim of VLAN %d: %w", ci.R.VID, err)
		}
		c.cache.Forget(kubestore.ClaimObject(ci.Provider, ci.R))
	}
	return nil
}

// networkGone reports whether network no longer exists, asking the API
// reader when the cache does not know it (the cache may lag).
func (c *Controller) networkGone(ctx context.Context, network vlanalloc.NetworkRef) (bool, error) {
	if network.Name == "" || network.Namespace == "" {
		return false, nil // not ours: a hand-made Vlan is never collected
	}
	key := Key{Namespace: network.Namespace, Name: network.Name}
	if _, ok := c.cache.network(key); ok {
		return false, nil
	}
	err := c.cfg.APIReader.Get(ctx, key, &v1alpha1.ProxmoxNetwork{})
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("cannot get ProxmoxNetwork %s: %w", key, err)
	}
	return false, nil
}

// subnetNames reports whether a live subnet's spec.vlan names the Vlan.
func (c *Controller) subnetNames(ctx context.Context, vlan string) bool {
	sub := &kubeovnv1.Subnet{}
	err := c.cfg.APIReader.Get(ctx, client.ObjectKey{Name: vlan}, sub)
	return err == nil && sub.Spec.Vlan == vlan
}
