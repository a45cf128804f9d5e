package network

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	capiipam "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ipamv1alpha2 "github.com/pxsubstrate/pxsubstrate/api/ipam/v1alpha2"
	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
)

// enqueueFor maps an observed change to the keys it may affect: the
// watches of the controller, expressed once for informers and feeds alike.
func (c *Controller) enqueueFor(obj client.Object, gone bool) {
	switch o := obj.(type) {
	case *v1alpha1.ProxmoxNetwork:
		c.networks.Enqueue(keyOf(o))
		c.EnqueueZone(o.Spec.Zone)
		c.namespaces.Enqueue(Key{Name: o.Namespace})
		if gone {
			c.cfg.Metrics.forgetNetwork(o.Namespace, o.Name)
			c.memo.forget(keyOf(o))
		}
	case *v1alpha1.ProxmoxNetworkZone:
		c.EnqueueZone(o.Name)
		if gone || c.cache.zoneSpecChanged(o) {
			c.enqueueNetworks(c.cache.zoneNetworkKeys(o.Name))
		}
		if gone {
			c.throttle.forget("zone/" + o.Name)
			c.cache.dropZone(o.Name)
			c.cfg.Metrics.forgetZone(o.Name)
		}
	case *kubeovnv1.Vlan:
		c.vlanChanged(observeVlan(o), gone)
	case *v1alpha1.ProxmoxVLANClaim:
		// A claim holds its ID in every zone on the provider network, whose
		// ranges may overlap, so each of them counts it.
		c.EnqueueZone(o.Spec.Zone)
		zones := c.cache.zonesOn(o.Spec.ProviderNetwork)
		for _, z := range zones {
			c.EnqueueZone(z)
		}
		if gone {
			c.enqueueNetworks(c.cache.waitingNetworks(zones))
		}
	case *kubeovnv1.Subnet:
		c.enqueueNetworks(c.cache.subnetNetworks(o.Name))
		if o.Spec.Vlan != "" && o.Spec.Vlan != o.Name {
			c.enqueueNetworks(c.cache.subnetNetworks(o.Spec.Vlan))
		}
	case *ipamv1alpha2.InClusterIPPool:
		c.enqueueNetworks(c.cache.poolNetworks(o.Namespace, o.Name))
	case *capiipam.IPAddress:
		c.enqueueNetworks(c.cache.poolNetworks(o.Namespace, poolRefOf(o)))
	case *kubeovnv1.ProviderNetwork:
		for _, z := range c.cache.zonesOn(o.Name) {
			c.EnqueueZone(z)
		}
	case *corev1.Namespace:
		// Labels decide only whether a network may get a new VLAN, so a
		// namespace change concerns the networks still waiting for one.
		c.namespaces.Enqueue(Key{Name: o.Name})
		c.enqueueNetworks(c.cache.waitingIn(o.Name))
		if gone {
			c.throttle.forget("namespace/" + o.Name)
		}
	case *unstructured.Unstructured:
		c.unstructuredChanged(o)
	}
}

func (c *Controller) vlanChanged(v vlanInfo, gone bool) {
	if v.ours() {
		c.networks.Enqueue(Key{Namespace: v.Network.Namespace, Name: v.Network.Name})
	}
	if v.Zone != "" {
		c.EnqueueZone(v.Zone)
	}
	zones := c.cache.zonesOn(v.Provider)
	for _, z := range zones {
		c.EnqueueZone(z)
	}
	if gone {
		c.enqueueNetworks(c.cache.waitingNetworks(zones))
	}
}

func (c *Controller) unstructuredChanged(u *unstructured.Unstructured) {
	switch {
	case isMachine(u):
		for _, p := range machinePools(u) {
			c.enqueueNetworks(c.cache.poolNetworks(u.GetNamespace(), p))
		}
	case isIPAddress(u):
		c.enqueueNetworks(c.cache.poolNetworks(u.GetNamespace(), poolRefOfUnstructured(u)))
	}
}
