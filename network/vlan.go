package network

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc/kubestore"
)

// ensureVLAN gives the network its Kube-OVN Vlan: it adopts the Vlan named
// after the subnet (keeping its ID), or allocates the zone's lowest free ID
// under a claim the API server keeps unique and creates the Vlan. When the
// network cannot have a VLAN now, VLANAllocated is False and the pass goes
// on with allocated unset; an error only for API failures worth a retry.
func (c *Controller) ensureVLAN(ctx context.Context, p *netPass) (engine.Result, error) {
	n := p.Object
	prevCond := condition(n.Status.Conditions, v1alpha1.ConditionVLANAllocated)
	zone, zs, err := c.ownedZone(ctx, p, prevCond)
	if err != nil || zs == nil {
		return engine.Result{}, err
	}
	claim, err := c.claimOf(ctx, n, zs, zone)
	if err != nil {
		return engine.Result{}, err
	}
	p.Data.allocated, err = c.holdVLAN(ctx, p, zs, zone, claim, prevCond)
	return engine.Result{}, err
}

// refuseVLAN sets VLANAllocated False with reason and msg, and reports that
// the network holds no VLAN.
func refuseVLAN(p *netPass, reason, msg string) bool {
	p.SetCondition(&p.Object.Status.Conditions, v1alpha1.ConditionVLANAllocated, metav1.ConditionFalse, reason, msg)
	return false
}

// ownedZone returns the network's zone and its allocator once the network
// has proved it may take the Vlan it names there; a nil zoneState, with
// VLANAllocated False, when the zone is missing or invalid or the network
// is refused.
func (c *Controller) ownedZone(ctx context.Context, p *netPass, prevCond *metav1.Condition) (*v1alpha1.ProxmoxNetworkZone, *zoneState, error) {
	n := p.Object
	zone := &v1alpha1.ProxmoxNetworkZone{}
	if err := c.cfg.Client.Get(ctx, client.ObjectKey{Name: n.Spec.Zone}, zone); err != nil {
		if apierrors.IsNotFound(err) {
			refuseVLAN(p, v1alpha1.ReasonZoneNotFound, fmt.Sprintf("ProxmoxNetworkZone %q does not exist", n.Spec.Zone))
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("cannot get ProxmoxNetworkZone %q: %w", n.Spec.Zone, err)
	}
	zs, err := c.cache.allocator(zone, c.store)
	if err != nil {
		refuseVLAN(p, ReasonZoneInvalid, fmt.Sprintf("zone %q cannot allocate: %v", zone.Name, err))
		return nil, nil, nil
	}
	p.Data.zoneProvider, p.Data.zoneGatewayMTU = zone.Spec.ProviderNetwork, int(v1alpha1.GatewayMTUOf(zone.Spec))
	r, err := c.proveOwnership(ctx, n, zs, &p.Data, prevCond)
	if err != nil {
		return nil, nil, err
	}
	if r.reason != "" {
		refuseVLAN(p, r.reason, r.msg)
		return nil, nil, nil
	}
	return zone, zs, nil
}

// holdVLAN allocates or adopts claim's Vlan in zone and records it in the
// network's status. It reports whether the network holds its VLAN: false,
// with VLANAllocated False, when the zone refuses it or Kube-OVN reports
// the VLAN in conflict.
func (c *Controller) holdVLAN(ctx context.Context, p *netPass, zs *zoneState, zone *v1alpha1.ProxmoxNetworkZone,
	claim vlanalloc.Claim, prevCond *metav1.Condition,
) (bool, error) {
	n := p.Object
	prevVLAN := n.Status.VLAN
	vid, created, err := c.allocateOrYield(ctx, zs, claim, prevVLAN)
	if reason, msg, ok := allocationRefusal(err); ok {
		c.countAllocation(zone.Name, reason)
		c.refusalEvent(n, prevCond, reason, msg)
		return refuseVLAN(p, reason, msg), nil
	}
	if err != nil {
		return false, err
	}
	v, ok := c.cache.vlan(claim.Vlan)
	if !ok {
		return false, fmt.Errorf("cannot find Kube-OVN Vlan %q after binding it", claim.Vlan)
	}
	if err := c.adoptVlan(ctx, v); err != nil {
		return false, err
	}
	if released, err := zs.alloc.ReleaseOthers(ctx, claim.Network, vid); err != nil {
		return false, err
	} else if released > 0 {
		c.cfg.Log.Info("released surplus VLAN claims", "zone", zone.Name, "vlan", vid, "released", released, "network", claim.Network.String())
	}
	n.Status.VLAN, n.Status.VLANName, n.Status.Bridge, n.Status.MTU = int32(vid), v.Name, zone.Spec.Bridge, zone.Spec.MTU
	n.Status.VNet = vnetOf(zone, vid)
	c.vlanEvent(n, created, prevVLAN, vid)
	if v.Conflict {
		return refuseVLAN(p, v1alpha1.ReasonVLANConflict, fmt.Sprintf("Kube-OVN reports VLAN %d on provider network %q as used by another Vlan too", vid, v.Provider)), nil
	}
	msg := fmt.Sprintf("VLAN %d on bridge %s", vid, zone.Spec.Bridge)
	if want, pinned := zs.zone.Static(claim.Network); pinned && want != vid {
		msg += fmt.Sprintf("; the static assignment asks for VLAN %d, which applies only when the network is recreated", want)
	}
	p.SetCondition(&n.Status.Conditions, v1alpha1.ConditionVLANAllocated, metav1.ConditionTrue, v1alpha1.ReasonAllocated, msg)
	return true, nil
}

// claimOf is network n's claim in zone. The namespace's labels are read
// only when the zone selects namespaces and the network holds no VLAN yet.
func (c *Controller) claimOf(ctx context.Context, n *v1alpha1.ProxmoxNetwork, zs *zoneState, zone *v1alpha1.ProxmoxNetworkZone) (vlanalloc.Claim, error) {
	claim := vlanalloc.Claim{Network: vlanalloc.NetworkRef{Namespace: n.Namespace, Name: n.Name}, Vlan: n.Spec.Subnet}
	if _, held := zs.alloc.Index().Lookup(claim); held || zone.Spec.NamespaceSelector == nil {
		return claim, nil
	}
	ns := &corev1.Namespace{}
	if err := c.cfg.Client.Get(ctx, client.ObjectKey{Name: n.Namespace}, ns); err != nil {
		return claim, fmt.Errorf("cannot get namespace %q: %w", n.Namespace, err)
	}
	claim.NamespaceLabels = ns.Labels
	return claim, nil
}

// allocate returns the ID of the network's Vlan, creating the Vlan under a
// fresh claim when it does not exist yet (created reports that it did).
func (c *Controller) allocate(ctx context.Context, zs *zoneState, claim vlanalloc.Claim) (vid int, created bool, err error) {
	if vid, ok, err := c.held(zs, claim); ok || err != nil {
		return vid, false, err
	}
	for range 3 {
		vid, err := zs.alloc.Allocate(ctx, claim)
		if err != nil {
			return 0, false, err
		}
		if _, exists := c.cache.vlan(claim.Vlan); exists {
			return vid, false, nil
		}
		got, err := c.store.BindVlan(ctx, zs.zone, claim, vid)
		if err != nil {
			return 0, false, err
		}
		if got == vid {
			c.fresh.created(claim.Vlan)
			c.countAllocation(zs.zone.Name(), v1alpha1.ReasonAllocated)
			c.cfg.Log.Info("allocated VLAN", "zone", zs.zone.Name(), "vlan", vid, "network", claim.Network.String(), "subnet", claim.Vlan)
			if _, exists := c.cache.vlan(claim.Vlan); !exists {
				c.cache.Observe(kubestore.VlanObject(zs.zone, claim, vid))
			}
			return vid, true, nil
		}
		// Another pass created the Vlan first, with its own ID: learn it,
		// and adopt it on the next turn.
		if err := c.observeFresh(ctx, claim.Vlan); err != nil {
			return 0, false, err
		}
	}
	return 0, false, fmt.Errorf("cannot bind Kube-OVN Vlan %q: it keeps changing under the controller", claim.Vlan)
}

// allocateOrYield is allocate, once more after releaseDisplaced gave up a
// reserved ID someone else took.
func (c *Controller) allocateOrYield(ctx context.Context, zs *zoneState, claim vlanalloc.Claim, published int32) (vid int, created bool, err error) {
	vid, created, err = c.allocate(ctx, zs, claim)
	if yielded, yerr := c.releaseDisplaced(ctx, zs, claim, published, err); yerr != nil {
		return 0, false, yerr
	} else if yielded {
		return c.allocate(ctx, zs, claim)
	}
	return vid, created, err
}

// releaseDisplaced releases the network's reservations when err is a
// conflict over an ID the network only reserved and someone else took: a
// Vlan created outside the controller, or a static pin, after the claim's
// answer was lost or before the network's Vlan was created. The network
// never published a VLAN and has no Vlan, so nothing uses the ID on its
// behalf, and it yields the ID instead of staying in VLANConflict (its
// next allocation picks another one). A network that published its VLAN
// keeps the conflict: its machines may carry the ID already.
func (c *Controller) releaseDisplaced(ctx context.Context, zs *zoneState, claim vlanalloc.Claim, published int32, err error) (bool, error) {
	var conflict *vlanalloc.ConflictError
	if published != 0 || !errors.As(err, &conflict) {
		return false, nil
	}
	if _, exists := c.cache.vlan(claim.Vlan); exists {
		return false, nil
	}
	reserved := slices.ContainsFunc(zs.alloc.Index().Reservations(claim.Network), func(r vlanalloc.Reservation) bool { return r.VID == conflict.VID })
	if !reserved {
		return false, nil
	}
	if err := zs.alloc.Release(ctx, claim.Network); err != nil {
		return false, err
	}
	c.cfg.Log.Info("released a reserved VLAN another holder took", "zone", zs.zone.Name(), "vlan", conflict.VID, "holder", conflict.Holder, "network", claim.Network.String())
	return true, nil
}

// held answers allocate from the cache alone when the API already records
// everything the network needs: its Vlan exists with the ID the index gives
// it, and the claim on that ID names the network. A converged network then
// costs no write, not even a claim create that the API server refuses as
// already there. ok is false when anything is missing, and allocate goes
// through the Reserver as for a new network.
func (c *Controller) held(zs *zoneState, claim vlanalloc.Claim) (vid int, ok bool, err error) {
	vid, err = zs.alloc.Index().Allocate(claim)
	if err != nil {
		return 0, false, err
	}
	v, exists := c.cache.vlan(claim.Vlan)
	if !exists || v.VID != vid || v.Network != claim.Network {
		return 0, false, nil
	}
	return vid, c.cache.claimHeld(zs.zone.ProviderNetwork(), vid, claim.Network), nil
}

// observeFresh reads a Vlan past any cache and records it.
func (c *Controller) observeFresh(ctx context.Context, name string) error {
	v := &kubeovnv1.Vlan{}
	if err := c.cfg.APIReader.Get(ctx, client.ObjectKey{Name: name}, v); err != nil {
		return fmt.Errorf("cannot read Kube-OVN Vlan %q: %w", name, err)
	}
	c.cache.Observe(v)
	return nil
}

// allocationRefusal maps an allocation error to a VLANAllocated reason; ok
// is false for errors that are not refusals (API failures).
func allocationRefusal(err error) (reason, msg string, ok bool) {
	switch {
	case err == nil:
		return "", "", false
	case errors.Is(err, vlanalloc.ErrExhausted):
		reason = v1alpha1.ReasonZoneExhausted
	case errors.Is(err, vlanalloc.ErrNamespaceNotAllowed):
		reason = v1alpha1.ReasonNamespaceNotAllowed
	case errors.Is(err, vlanalloc.ErrNamespaceCap):
		return v1alpha1.ReasonNamespaceCapReached, capMessage(err), true
	case errors.Is(err, vlanalloc.ErrConflict), errors.Is(err, vlanalloc.ErrUnusableVlan):
		reason = conflictReason(err)
	case errors.Is(err, vlanalloc.ErrProviderMismatch):
		reason = v1alpha1.ReasonVLANProviderMismatch
	default:
		return "", "", false
	}
	return reason, err.Error(), true
}

// capMessage says which cap the network's namespace reached and what frees
// it.
func capMessage(err error) string {
	var ce *vlanalloc.NamespaceCapError
	if !errors.As(err, &ce) {
		return err.Error()
	}
	return fmt.Sprintf("namespace %q holds %d VLANs of zone %q, the zone's maxNetworksPerNamespace is %d; "+
		"the network gets its VLAN when another network of the namespace in the zone is deleted or the cap is raised",
		ce.Network.Namespace, ce.Held, ce.Zone, ce.Cap)
}

// conflictReason spells a conflict as Cozystack's controller does: a Vlan
// of the subnet's name labelled for another network is VLANNameTaken, a
// static assignment's ID held by another is StaticVLANInUse, anything else
// (an ID the network keeps that another holds too, an unusable ID) is
// VLANConflict.
func conflictReason(err error) string {
	var ce *vlanalloc.ConflictError
	if !errors.As(err, &ce) {
		return v1alpha1.ReasonVLANConflict
	}
	switch ce.Cause {
	case vlanalloc.NameTaken:
		return v1alpha1.ReasonVLANNameTaken
	case vlanalloc.StaticInUse:
		return v1alpha1.ReasonStaticVLANInUse
	default:
		return v1alpha1.ReasonVLANConflict
	}
}

func (c *Controller) countAllocation(zone, reason string) {
	result := ""
	switch reason {
	case v1alpha1.ReasonAllocated:
		result = AllocationAllocated
	case v1alpha1.ReasonZoneExhausted:
		result = AllocationExhausted
	case v1alpha1.ReasonNamespaceCapReached:
		result = AllocationNamespaceCap
	case v1alpha1.ReasonVLANConflict, v1alpha1.ReasonVLANNameTaken, v1alpha1.ReasonStaticVLANInUse, v1alpha1.ReasonVLANProviderMismatch:
		result = AllocationConflict
	default:
		return
	}
	c.cfg.Metrics.allocations.WithLabelValues(zone, result).Inc()
}

// adoptVlan puts the network finalizer on the network's Vlan (unless the Vlan
// is being deleted) and drops prune timers an earlier network of the same
// name left on it: a live network waits for no prune.
func (c *Controller) adoptVlan(ctx context.Context, v vlanInfo) error {
	if (v.Finalizer || v.Deleting) && !v.Timers {
		return nil
	}
	cur := &kubeovnv1.Vlan{}
	if err := c.cfg.Client.Get(ctx, client.ObjectKey{Name: v.Name}, cur); err != nil {
		return fmt.Errorf("cannot get Kube-OVN Vlan %q: %w", v.Name, err)
	}
	if err := adoptPatch(ctx, c.cfg.Client, cur); err != nil {
		return fmt.Errorf("cannot adopt Kube-OVN Vlan %q: %w", v.Name, err)
	}
	c.cache.Observe(cur)
	return nil
}

// adoptPatch is adoptVlan's write. Kube-OVN writes the Vlan's status, often
// between the copy v and this patch, so the patch tests only what it
// changes (guardedPatch): the finalizers and the prune timers. v becomes
// the object the server stored; nothing is written when v needs nothing.
func adoptPatch(ctx context.Context, c client.Writer, v *kubeovnv1.Vlan) error {
	var ops []jsonPatchOp
	if v.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(v, v1alpha1.Finalizer) {
		ops = finalizerOps(v, v1alpha1.Finalizer)
	}
	if _, ok := v.Annotations[v1alpha1.AnnotationDeletedSubnets]; ok {
		ops = append(ops, annotationRemovalOps(v, v1alpha1.AnnotationDeletedSubnets)...)
	}
	if len(ops) == 0 {
		return nil
	}
	return guardedPatch(ctx, c, v, ops)
}
