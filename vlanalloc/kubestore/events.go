package kubestore

import (
	"k8s.io/client-go/tools/cache"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
)

// VlanEvents keeps idx current from a Kube-OVN Vlan informer: adds and
// updates are observed, deletes forgotten (including deletes the informer
// only learns about on a re-list). Objects of other types are ignored.
func VlanEvents(idx *vlanalloc.Index) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { observeVlan(idx, obj) },
		UpdateFunc: func(_, obj any) { observeVlan(idx, obj) },
		DeleteFunc: func(obj any) {
			if v, ok := unwrapDeleted(obj).(*kubeovnv1.Vlan); ok {
				idx.ForgetVlan(v.Name)
			}
		},
	}
}

func observeVlan(idx *vlanalloc.Index, obj any) {
	if v, ok := obj.(*kubeovnv1.Vlan); ok {
		idx.ObserveVlan(ObservedVlan(v))
	}
}

// ClaimEvents keeps idx current from a ProxmoxVLANClaim informer. Claims of
// other provider networks than the index's zone are ignored.
func ClaimEvents(idx *vlanalloc.Index) cache.ResourceEventHandler {
	provider := idx.Zone().ProviderNetwork()
	mine := func(obj any) (*v1alpha1.ProxmoxVLANClaim, bool) {
		c, ok := obj.(*v1alpha1.ProxmoxVLANClaim)
		return c, ok && c.Spec.ProviderNetwork == provider
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if c, ok := mine(obj); ok {
				idx.ObserveReservation(ObservedClaim(c))
			}
		},
		UpdateFunc: func(_, obj any) {
			if c, ok := mine(obj); ok {
				idx.ObserveReservation(ObservedClaim(c))
			}
		},
		DeleteFunc: func(obj any) {
			if c, ok := mine(unwrapDeleted(obj)); ok {
				idx.ForgetReservation(int(c.Spec.VLAN))
			}
		},
	}
}

func unwrapDeleted(obj any) any {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return obj
}
