package network

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
)

// Reasons of VLANAllocated (and SubnetReady) when a network names an object
// it cannot prove its own.
const (
	// ReasonSubnetNotOwned: the Subnet the network names is not labelled
	// with the network's namespace (v1alpha1.LabelTenantName).
	ReasonSubnetNotOwned = "SubnetNotOwned"
	// ReasonVLANOutsideZone: a Vlan of the subnet's name exists, carries no
	// network's labels, and its ID is outside the zone's allocatable IDs.
	ReasonVLANOutsideZone = "VLANOutsideZone"
)

// refusal is why a network may not take an object, as a VLANAllocated
// reason and message; the zero value lets it.
type refusal struct{ reason, msg string }

// subnetOwnership says whether sub belongs to namespace ns: the vpc chart
// labels every Subnet it writes with its tenant namespace.
func subnetOwnership(sub *kubeovnv1.Subnet, ns string) refusal {
	owner, labelled := sub.Labels[v1alpha1.LabelTenantName]
	switch {
	case !labelled || owner == "":
		return refusal{ReasonSubnetNotOwned, fmt.Sprintf(
			"Kube-OVN Subnet %q carries no label %s; a ProxmoxNetwork claims only a Subnet its VPC labels with the network's namespace %q",
			sub.Name, v1alpha1.LabelTenantName, ns)}
	case owner != ns:
		return refusal{ReasonSubnetNotOwned, fmt.Sprintf(
			"Kube-OVN Subnet %q belongs to namespace %q (label %s); a ProxmoxNetwork in %q claims only its own namespace's Subnets",
			sub.Name, owner, v1alpha1.LabelTenantName, ns)}
	}
	return refusal{}
}

// checkOwnership proves, before anything is allocated or adopted, that the
// network's Subnet belongs to its namespace and that an existing Vlan of
// the subnet's name is one the network may hold. A missing Subnet stops a
// network that holds nothing yet: a VLAN is never allocated for a Subnet
// whose owner is unknown (another tenant's could appear under that name).
// The Subnet read goes into pass.named for the subnet step.
func (c *Controller) checkOwnership(ctx context.Context, n *v1alpha1.ProxmoxNetwork, zs *zoneState, pass *livePass) (refusal, error) {
	ref := vlanalloc.NetworkRef{Namespace: n.Namespace, Name: n.Name}
	sub := &kubeovnv1.Subnet{}
	if err := c.cfg.Client.Get(ctx, client.ObjectKey{Name: n.Spec.Subnet}, sub); err != nil {
		if !apierrors.IsNotFound(err) {
			return refusal{}, fmt.Errorf("cannot get Kube-OVN Subnet %q: %w", n.Spec.Subnet, err)
		}
		if c.holds(zs, ref, n.Spec.Subnet) {
			return refusal{}, nil // SubnetReady reports the missing Subnet
		}
		return refusal{ReasonSubnetNotFound, fmt.Sprintf(
			"Kube-OVN Subnet %q does not exist; a VLAN is allocated once it exists with label %s=%s",
			n.Spec.Subnet, v1alpha1.LabelTenantName, n.Namespace)}, nil
	}
	pass.named = sub
	if r := subnetOwnership(sub, n.Namespace); r.reason != "" {
		return r, nil
	}
	v, exists := c.cache.vlan(n.Spec.Subnet)
	if !exists {
		return refusal{}, nil
	}
	return vlanOwnership(v, zs.zone, ref), nil
}

// proveOwnership is checkOwnership for a pass: a refused network holds no
// VLAN in its status, so its namespace's annotation drops it, the network
// finalizer an earlier controller left on what it does not own goes, and a
// refusal of ownership is announced once.
func (c *Controller) proveOwnership(ctx context.Context, n *v1alpha1.ProxmoxNetwork, zs *zoneState, pass *livePass, prev *metav1.Condition) (refusal, error) {
	r, err := c.checkOwnership(ctx, n, zs, pass)
	if err != nil || r.reason == "" {
		return r, err
	}
	if err := c.dropForeign(ctx, vlanalloc.NetworkRef{Namespace: n.Namespace, Name: n.Name}, pass.named, r); err != nil {
		return r, err
	}
	n.Status.VLAN, n.Status.VLANName, n.Status.Bridge, n.Status.MTU = 0, "", "", nil
	n.Status.CIDR, n.Status.Gateway, n.Status.Prefix = "", "", 0
	c.ownershipEvent(n, prev, r)
	return r, nil
}

// holds reports whether the network already holds a VLAN: a Vlan of its
// subnet's name labelled for it, or a reservation of its own in the zone.
func (c *Controller) holds(zs *zoneState, ref vlanalloc.NetworkRef, subnet string) bool {
	if v, ok := c.cache.vlan(subnet); ok && v.Network == ref {
		return true
	}
	return len(zs.alloc.Index().Reservations(ref)) > 0
}

// vlanOwnership says whether the network ref may hold the existing Vlan v.
// A Vlan labelled for a network is that network's, inside the ranges or
// not (ranges may shrink under a network that keeps its VLAN); one
// labelled for another network, or on another provider network, is left
// to the allocator, which refuses it. A Vlan without labels is adopted only
// with an ID the zone could hand out (inside vlanRanges, not reserved) or
// the network's static assignment: a Vlan the platform created for itself
// outside the tenant ranges is never a tenant's.
func vlanOwnership(v vlanInfo, zone *vlanalloc.Zone, ref vlanalloc.NetworkRef) refusal {
	if v.ours() || v.Provider != zone.ProviderNetwork() {
		return refusal{}
	}
	if vid, pinned := zone.Static(ref); pinned && vid == v.VID {
		return refusal{}
	}
	if allocatable := zone.Allocatable(); allocatable.Has(v.VID) {
		return refusal{}
	}
	return refusal{ReasonVLANOutsideZone, fmt.Sprintf(
		"Kube-OVN Vlan %q carries VLAN %d, which zone %q does not hand out (outside its vlanRanges, or reserved); the controller adopts only a Vlan with an ID of the zone",
		v.Name, v.VID, zone.Name())}
}
