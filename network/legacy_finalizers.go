package network

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
)

// A controller from before the ownership rules put the network finalizer on
// whatever Subnet a network named and on that Subnet's Vlan. Such objects
// are only reachable from a network that still names them (the old
// controller's own release took its finalizer off the rest), so each
// refused network's pass, and its release, takes the finalizer off again
// where no network owns the object.

// subnetHeld reports whether a network owns sub: one in the namespace the
// Subnet is labelled for names it.
func (c *Controller) subnetHeld(sub *kubeovnv1.Subnet) bool {
	owner := sub.Labels[v1alpha1.LabelTenantName]
	if owner == "" {
		return false
	}
	for _, k := range c.cache.subnetNetworks(sub.Name) {
		if k.Namespace == owner {
			return true
		}
	}
	return false
}

// dropForeign removes the network finalizer from what network ref was
// refused (r) and does not own: for SubnetNotOwned the Subnet, unless
// another network owns it, and the Vlan of its name when it carries no
// network's labels or ref's own; for VLANOutsideZone the unlabelled Vlan.
func (c *Controller) dropForeign(ctx context.Context, ref vlanalloc.NetworkRef, sub *kubeovnv1.Subnet, r refusal) error {
	switch r.reason {
	case ReasonSubnetNotOwned:
		if sub == nil || c.subnetHeld(sub) {
			return nil
		}
		if err := c.dropFinalizer(ctx, sub); err != nil {
			return err
		}
	case ReasonVLANOutsideZone:
	default:
		return nil
	}
	name := ""
	if sub != nil {
		name = sub.Name
	}
	v, ok := c.cache.vlan(name)
	if !ok || !v.Finalizer || (v.ours() && v.Network != ref) {
		return nil
	}
	cur := &kubeovnv1.Vlan{}
	if err := c.cfg.Client.Get(ctx, client.ObjectKey{Name: v.Name}, cur); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("cannot get Kube-OVN Vlan %q: %w", v.Name, err)
	}
	if err := c.dropFinalizer(ctx, cur); err != nil {
		return err
	}
	c.cache.Observe(cur)
	return nil
}

// dropFinalizer takes the network finalizer off o, if it is there.
func (c *Controller) dropFinalizer(ctx context.Context, o client.Object) error {
	if !controllerutil.ContainsFinalizer(o, v1alpha1.Finalizer) {
		return nil
	}
	patch := client.MergeFromWithOptions(o.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(o, v1alpha1.Finalizer)
	if err := c.cfg.Client.Patch(ctx, o, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("cannot remove finalizer %q from %s %q, which no network owns: %w", v1alpha1.Finalizer, kindOf(o), o.GetName(), err)
	}
	c.cfg.Log.Info("removed the network finalizer from an object no network owns", "kind", kindOf(o), "name", o.GetName())
	return nil
}

func kindOf(o client.Object) string {
	if _, ok := o.(*kubeovnv1.Subnet); ok {
		return "Kube-OVN Subnet"
	}
	return "Kube-OVN Vlan"
}
