package network

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	capiipam "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	ipamv1alpha2 "github.com/pxsubstrate/pxsubstrate/api/ipam/v1alpha2"
	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc/kubestore"
)

// ProtectPoolFinalizer is the in-cluster IPAM provider's finalizer: it stays
// on a deleted pool until the provider has seen the pool empty.
const ProtectPoolFinalizer = "ipam.cluster.x-k8s.io/ProtectPool"

// finalize is the delete lifecycle, in the facts' order; it reports true once
// everything the network held is released and its finalizer may go:
//
//  1. held (Ready=False/InUse) while the pool has an address or a
//     ProxmoxMachine, Terminating or not, has a NIC on it;
//  2. the network finalizer leaves the Subnet (SubnetDeleting) and the
//     Subnet must be gone (a live one holds the VLAN: SubnetStillExists);
//  3. the gateway is released (GatewayReleasePending);
//  4. Kube-OVN must prune the subnet from Vlan.status.subnets
//     (SwitchDeleting, SwitchDeleted=False/ListedOnVlan), or the prune
//     timeout runs out; a live subnet listed there holds the VLAN for good
//     (VLANStillReferenced);
//  5. the Vlan is deleted, the namespace annotation stops listing the
//     network, and the VLAN claim is released: the ID is back in the zone.
func (c *Controller) finalize(ctx context.Context, s *netState) (bool, error) {
	n := s.Object
	prevReady := condition(n.Status.Conditions, v1alpha1.ConditionReady)
	removeCondition(&n.Status.Conditions, v1alpha1.ConditionSwitchDeleted)
	wait := func(reason, msg string) (bool, error) {
		s.SetCondition(&n.Status.Conditions, v1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg)
		c.recordNetwork(n, 0, "")
		return false, nil
	}
	if held, msg, err := c.holdForConsumers(ctx, n, prevReady); err != nil || held {
		if err != nil {
			return false, err
		}
		return wait(v1alpha1.ReasonInUse, msg)
	}
	reason, msg, foreign, err := c.releaseSubnet(ctx, n)
	if err != nil || reason != "" {
		if err != nil {
			return false, err
		}
		return wait(reason, msg)
	}
	if reason, msg := c.releaseGateway(ctx, n, prevReady); reason != "" {
		return wait(reason, msg)
	}
	var vid int
	if !foreign { // the Vlan of another namespace's Subnet was never this network's to delete
		reason, msg, vid, err = c.releaseVlan(ctx, s)
	}
	if err != nil || reason != "" {
		if err != nil {
			return false, err
		}
		return wait(reason, msg)
	}
	// The namespace stops listing the VLAN before the claim goes: admission
	// reads the annotation, and once the claim is gone another namespace
	// can get the ID.
	if err := c.syncNamespace(ctx, n.Namespace, n, true); err != nil {
		return false, err
	}
	claimed, err := c.releaseClaims(ctx, v1alpha1.NetworkReference{Namespace: n.Namespace, Name: n.Name})
	if err != nil {
		return false, err
	}
	if vid = cmp.Or(vid, claimed); vid != 0 {
		c.releasedEvent(n, vid)
	}
	c.cfg.Metrics.forgetNetwork(n.Namespace, n.Name)
	c.cfg.Log.Info("released network", "network", n.Namespace+"/"+n.Name, "vlan", n.Status.VLAN, "subnet", n.Spec.Subnet)
	return true, nil
}

// holdForConsumers is the first stage of finalize: held is true, with the
// InUse message, while the pool has consumers or the IPAM provider still
// protects it. It refreshes the pool's counts in the status.
func (c *Controller) holdForConsumers(ctx context.Context, n *v1alpha1.ProxmoxNetwork, prevReady *metav1.Condition) (held bool, msg string, err error) {
	use, protected, err := c.inUse(ctx, n)
	if err != nil {
		return false, "", err
	}
	if p := n.Status.IPPool; p != nil {
		p.Used = int32(use.Addresses)
		p.Free = max(p.Total-p.Used, 0)
	}
	if use.Addresses == 0 && use.Machines == 0 && !protected {
		c.memo.clear(n, memoHeld)
		return false, "", nil
	}
	if err := c.releaseUnpublished(ctx, n); err != nil {
		return false, "", err
	}
	kept := fmt.Sprintf("VLAN %d and subnet %q are kept", n.Status.VLAN, n.Spec.Subnet)
	if n.Status.VLAN == 0 {
		kept = fmt.Sprintf("subnet %q is kept (the network holds no VLAN)", n.Spec.Subnet)
	}
	msg = fmt.Sprintf("%d address(es) of pool %q are allocated and %d ProxmoxMachine(s) reference it; %s until they are gone",
		use.Addresses, n.Spec.IPPool, use.Machines, kept)
	c.heldEvent(n, prevReady, msg)
	return true, msg, nil
}

// releaseUnpublished releases the VLAN claims of a deleted network its
// consumers hold when it never published a VLAN and no Vlan carries its
// subnet's name: nothing uses an ID on its behalf, and a deleted network
// never allocates again. Without this, a claim recorded just before the
// delete, or a reservation whose write failed and that no claim backs,
// would count in the zone for as long as the consumers stay.
func (c *Controller) releaseUnpublished(ctx context.Context, n *v1alpha1.ProxmoxNetwork) error {
	network := v1alpha1.NetworkReference{Namespace: n.Namespace, Name: n.Name}
	if n.Status.VLAN != 0 || !c.cache.reserves(network) {
		return nil
	}
	switch err := c.cfg.APIReader.Get(ctx, client.ObjectKey{Name: n.Spec.Subnet}, &kubeovnv1.Vlan{}); {
	case err == nil:
		return nil // a Vlan of the name exists: the claims wait for the usual release
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("cannot get Kube-OVN Vlan %q: %w", n.Spec.Subnet, err)
	}
	vid, err := c.releaseClaims(ctx, network)
	if err == nil {
		c.cfg.Log.Info("released the VLAN claims of a deleted network that never held a VLAN", "network", network.String(), "vlan", vid)
	}
	return err
}

// releaseGateway releases the network's gateway, when gateways are managed
// and the network got a VLAN; it returns a wait reason until that is done.
func (c *Controller) releaseGateway(ctx context.Context, n *v1alpha1.ProxmoxNetwork, prevReady *metav1.Condition) (reason, msg string) {
	if isDisabled(c.cfg.Gateway) || n.Status.VLAN == 0 {
		return "", ""
	}
	start := time.Now()
	released, err := c.cfg.Gateway.Release(ctx, c.info(n, livePass{}, ""))
	c.cfg.Metrics.gatewayTime(gatewayOpRelease, start)
	if err != nil {
		c.cfg.Metrics.NBErrors.Inc()
		return v1alpha1.ReasonGatewayReleasePending, fmt.Sprintf("cannot delete the network's HA chassis group from OVN NB: %v", err)
	}
	if !released {
		return v1alpha1.ReasonGatewayReleasePending, "the network's HA chassis group is not released yet"
	}
	c.gatewayEvent(n, prevReady)
	return "", ""
}

// inUse counts the pool's consumers. The cache answers first; when it sees
// none, the API reader confirms with a list of the namespace's addresses and
// machines, so a stale cache never releases a network a VM still sits on.
// protected reports a deleted pool the IPAM provider still holds.
func (c *Controller) inUse(ctx context.Context, n *v1alpha1.ProxmoxNetwork) (Usage, bool, error) {
	pool := &ipamv1alpha2.InClusterIPPool{}
	protected := false
	switch err := c.cfg.APIReader.Get(ctx, client.ObjectKey{Namespace: n.Namespace, Name: n.Spec.IPPool}, pool); {
	case err == nil:
		protected = !pool.DeletionTimestamp.IsZero() && controllerutil.ContainsFinalizer(pool, ProtectPoolFinalizer)
	case !apierrors.IsNotFound(err):
		return Usage{}, false, fmt.Errorf("cannot get InClusterIPPool %s/%s: %w", n.Namespace, n.Spec.IPPool, err)
	}
	use := c.cache.PoolUsage(n.Namespace, n.Spec.IPPool)
	if use.Addresses > 0 || use.Machines > 0 {
		return use, protected, nil
	}
	var addrs capiipam.IPAddressList
	if err := c.cfg.APIReader.List(ctx, &addrs, client.InNamespace(n.Namespace)); err != nil && !meta.IsNoMatchError(err) {
		return Usage{}, false, fmt.Errorf("cannot list IPAddresses in %q: %w", n.Namespace, err)
	}
	for i := range addrs.Items {
		if poolRefOf(&addrs.Items[i]) == n.Spec.IPPool {
			use.Addresses++
			c.cache.Observe(&addrs.Items[i])
		}
	}
	machines, err := listMachines(ctx, c.cfg.APIReader, c.cfg.MachineKinds, []client.ListOption{client.InNamespace(n.Namespace)})
	if err != nil {
		return Usage{}, false, err
	}
	for i := range machines {
		for _, p := range machinePools(&machines[i]) {
			if p == n.Spec.IPPool {
				use.Machines++
				c.cache.Observe(&machines[i])
			}
		}
	}
	return use, protected, nil
}

// releaseSubnet lets the subnet go; it returns a wait reason while the
// subnet still exists, and foreign when the Subnet is another namespace's
// (whose finalizer, if an earlier controller left it, goes).
func (c *Controller) releaseSubnet(ctx context.Context, n *v1alpha1.ProxmoxNetwork) (reason, msg string, foreign bool, err error) {
	sub := &kubeovnv1.Subnet{}
	if err := c.cfg.APIReader.Get(ctx, client.ObjectKey{Name: n.Spec.Subnet}, sub); err != nil {
		if apierrors.IsNotFound(err) {
			return "", "", false, nil
		}
		return "", "", false, fmt.Errorf("cannot get Kube-OVN Subnet %q: %w", n.Spec.Subnet, err)
	}
	if r := subnetOwnership(sub, n.Namespace); r.reason != "" {
		// another namespace's Subnet never held this network
		return "", "", true, c.dropForeign(ctx, vlanalloc.NetworkRef{Namespace: n.Namespace, Name: n.Name}, sub, r)
	}
	if sub.DeletionTimestamp.IsZero() {
		return ReasonSubnetStillExists, fmt.Sprintf("Subnet %q still exists; VLAN %d is released after it is deleted", sub.Name, n.Status.VLAN), false, nil
	}
	if controllerutil.ContainsFinalizer(sub, v1alpha1.Finalizer) {
		patch := client.MergeFromWithOptions(sub.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.RemoveFinalizer(sub, v1alpha1.Finalizer)
		if err := c.cfg.Client.Patch(ctx, sub, patch); err != nil && !apierrors.IsNotFound(err) {
			return "", "", false, fmt.Errorf("cannot remove finalizer %q from Kube-OVN Subnet %q: %w", v1alpha1.Finalizer, sub.Name, err)
		}
	}
	return v1alpha1.ReasonSubnetDeleting, fmt.Sprintf("waiting for Kube-OVN to delete Subnet %q before VLAN %d is released", sub.Name, n.Status.VLAN), false, nil
}

// releaseVlan deletes the network's Vlan once Kube-OVN no longer lists a
// subnet on it (or the prune timeout ran out); it returns a wait reason
// until the Vlan is gone, and the Vlan's ID when this pass saw it go.
func (c *Controller) releaseVlan(ctx context.Context, s *netState) (reason, msg string, released int, err error) {
	n := s.Object
	v := &kubeovnv1.Vlan{}
	if err := c.cfg.APIReader.Get(ctx, client.ObjectKey{Name: n.Spec.Subnet}, v); err != nil {
		if apierrors.IsNotFound(err) {
			return "", "", 0, nil
		}
		return "", "", 0, fmt.Errorf("cannot get Kube-OVN Vlan %q: %w", n.Spec.Subnet, err)
	}
	info := observeVlan(v)
	if info.Network != (vlanalloc.NetworkRef{Namespace: n.Namespace, Name: n.Name}) {
		return "", "", 0, nil // not this network's: leave it alone
	}
	var listed []string
	reason, msg, err = c.waitForPrune(ctx, v, n.DeletionTimestamp.Time, func(gone []string) {
		listed = gone
		s.SetCondition(&n.Status.Conditions, v1alpha1.ConditionSwitchDeleted, metav1.ConditionFalse, v1alpha1.ReasonListedOnVlan,
			fmt.Sprintf("Kube-OVN still lists deleted subnets %v on the Vlan", gone))
	})
	if err != nil || reason != "" {
		return reason, msg, 0, err
	}
	if len(listed) > 0 && v.DeletionTimestamp.IsZero() {
		c.pruneTimeoutEvent(n, v.Name, v.Spec.ID, listed) // released although still listed: the timeout ran out
	}
	if err := c.claimBeforeDelete(ctx, n, v); err != nil {
		return "", "", 0, err
	}
	if reason, msg, err = c.deleteVlan(ctx, v); err != nil || reason != "" {
		return reason, msg, 0, err
	}
	return "", "", v.Spec.ID, nil
}

// claimBeforeDelete makes sure a claim holds the ID of the network's Vlan
// before the Vlan goes. The namespace annotation stops listing the network
// only after the Vlan is gone, and the claim is released after that; a
// Vlan whose claim was deleted by hand would otherwise free its ID while
// the namespace still lists it.
func (c *Controller) claimBeforeDelete(ctx context.Context, n *v1alpha1.ProxmoxNetwork, v *kubeovnv1.Vlan) error {
	name := v1alpha1.VLANClaimName(v.Spec.Provider, v.Spec.ID)
	switch err := c.cfg.APIReader.Get(ctx, client.ObjectKey{Name: name}, &v1alpha1.ProxmoxVLANClaim{}); {
	case err == nil:
		return nil // this network's claim, or another's: either holds the ID
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("cannot read ProxmoxVLANClaim %q: %w", name, err)
	}
	r := vlanalloc.Reservation{VID: v.Spec.ID, Zone: n.Spec.Zone, Network: vlanalloc.NetworkRef{Namespace: n.Namespace, Name: n.Name}, Vlan: v.Name}
	if err := c.store.Reserve(ctx, v.Spec.Provider, r); err != nil && !errors.Is(err, vlanalloc.ErrTaken) {
		return fmt.Errorf("cannot hold VLAN %d with a claim while its Vlan is deleted: %w", v.Spec.ID, err)
	}
	return nil
}

// waitForPrune applies the prune rules to a Vlan about to be released: a
// live subnet Kube-OVN lists on it holds it with no time limit; a deleted
// one holds it until pruned or until its timer, kept on the Vlan, runs out.
func (c *Controller) waitForPrune(ctx context.Context, v *kubeovnv1.Vlan, notBefore time.Time, listed func(gone []string)) (reason, msg string, err error) {
	var live, gone []string
	for _, name := range v.Status.Subnets {
		switch err := c.cfg.APIReader.Get(ctx, client.ObjectKey{Name: name}, &kubeovnv1.Subnet{}); {
		case err == nil:
			live = append(live, name)
		case apierrors.IsNotFound(err):
			gone = append(gone, name)
		default:
			return "", "", fmt.Errorf("cannot get Kube-OVN Subnet %q: %w", name, err)
		}
	}
	now := c.now()
	value, newest := PruneTimers(v.Annotations[v1alpha1.AnnotationDeletedSubnets], gone, now, notBefore)
	if err := c.setTimers(ctx, v, value); err != nil {
		return "", "", err
	}
	if len(gone) > 0 && listed != nil {
		listed(gone)
	}
	if len(live) > 0 {
		return v1alpha1.ReasonVLANStillReferenced, fmt.Sprintf("Kube-OVN still lists subnets %v on Vlan %q", live, v.Name), nil
	}
	if len(gone) == 0 {
		return "", "", nil
	}
	deadline := newest.Add(c.cfg.SubnetPruneTimeout)
	if now.Before(deadline) {
		return v1alpha1.ReasonSwitchDeleting, fmt.Sprintf("Kube-OVN still lists deleted subnets %v on Vlan %q until it has deleted their logical switches; VLAN %d is released then, or at %s at the latest",
			gone, v.Name, v.Spec.ID, deadline.UTC().Format(time.RFC3339)), nil
	}
	c.cfg.Log.Info(PruneTimeoutLog, "vlan", v.Spec.ID, "name", v.Name, "subnets", gone, "timeout", c.cfg.SubnetPruneTimeout.String())
	return "", "", nil
}

// setTimers writes the prune timers annotation when it changed.
func (c *Controller) setTimers(ctx context.Context, v *kubeovnv1.Vlan, value string) error {
	if have, ok := v.Annotations[v1alpha1.AnnotationDeletedSubnets]; have == value && ok == (value != "") {
		return nil
	}
	patch := client.MergeFromWithOptions(v.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if value == "" {
		delete(v.Annotations, v1alpha1.AnnotationDeletedSubnets)
	} else {
		if v.Annotations == nil {
			v.Annotations = map[string]string{}
		}
		v.Annotations[v1alpha1.AnnotationDeletedSubnets] = value
	}
	if err := c.cfg.Client.Patch(ctx, v, patch); err != nil {
		return fmt.Errorf("cannot record prune timers on Kube-OVN Vlan %q: %w", v.Name, err)
	}
	c.cache.Observe(v)
	return nil
}

// deleteVlan removes the network finalizer from the Vlan and deletes it.
func (c *Controller) deleteVlan(ctx context.Context, v *kubeovnv1.Vlan) (reason, msg string, err error) {
	if controllerutil.ContainsFinalizer(v, v1alpha1.Finalizer) {
		patch := client.MergeFromWithOptions(v.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.RemoveFinalizer(v, v1alpha1.Finalizer)
		if err := c.cfg.Client.Patch(ctx, v, patch); err != nil && !apierrors.IsNotFound(err) {
			return "", "", fmt.Errorf("cannot remove finalizer %q from Kube-OVN Vlan %q: %w", v1alpha1.Finalizer, v.Name, err)
		}
	}
	if v.DeletionTimestamp.IsZero() {
		if err := c.cfg.Client.Delete(ctx, v); err != nil && !apierrors.IsNotFound(err) {
			return "", "", fmt.Errorf("cannot delete Kube-OVN Vlan %q: %w", v.Name, err)
		}
	}
	left := &kubeovnv1.Vlan{}
	switch err := c.cfg.APIReader.Get(ctx, client.ObjectKey{Name: v.Name}, left); {
	case apierrors.IsNotFound(err):
		c.cache.Forget(v)
		c.cfg.Log.Info("released VLAN", "vlan", v.Spec.ID, "name", v.Name, "provider", v.Spec.Provider)
		return "", "", nil
	case err != nil:
		return "", "", fmt.Errorf("cannot get Kube-OVN Vlan %q: %w", v.Name, err)
	}
	c.cache.Observe(left)
	return v1alpha1.ReasonSwitchDeleting, fmt.Sprintf("waiting for Kube-OVN Vlan %q to be deleted (finalizers %v)", v.Name, left.Finalizers), nil
}

// releaseClaims deletes every VLAN claim of network, read past the cache,
// and returns the VLAN of one it deleted (0 for none). Call it only once
// the network's Vlan is gone.
func (c *Controller) releaseClaims(ctx context.Context, network v1alpha1.NetworkReference) (int, error) {
	var claims v1alpha1.ProxmoxVLANClaimList
	if err := c.cfg.APIReader.List(ctx, &claims, client.MatchingLabels{
		v1alpha1.LabelNetworkNamespace: network.Namespace, v1alpha1.LabelNetworkName: network.Name,
	}); err != nil {
		return 0, fmt.Errorf("cannot list the VLAN claims of %s: %w", network, err)
	}
	released := 0
	for i := range claims.Items {
		cl := &claims.Items[i]
		if cl.Spec.Network != network {
			continue
		}
		if err := c.store.Release(ctx, cl.Spec.ProviderNetwork, kubestore.ObservedClaim(cl)); err != nil {
			return 0, fmt.Errorf("cannot release VLAN %d of %s: %w", cl.Spec.VLAN, network, err)
		}
		c.cache.Forget(cl)
		released = int(cl.Spec.VLAN)
	}
	for _, ci := range c.cache.claimsOf(network) {
		c.cache.Forget(kubestore.ClaimObject(ci.Provider, ci.R))
	}
	c.cache.dropReservations(network)
	return released, nil
}
