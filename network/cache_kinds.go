package network

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	capiipam "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ipamv1alpha2 "github.com/pxsubstrate/pxsubstrate/api/ipam/v1alpha2"
	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
)

// typedKinds makes the typed object of each kind the cache and the event
// mapping understand.
var typedKinds = map[schema.GroupVersionKind]func() client.Object{
	v1alpha1.GroupVersion.WithKind("ProxmoxNetwork"):     func() client.Object { return &v1alpha1.ProxmoxNetwork{} },
	v1alpha1.GroupVersion.WithKind("ProxmoxNetworkZone"): func() client.Object { return &v1alpha1.ProxmoxNetworkZone{} },
	v1alpha1.GroupVersion.WithKind("ProxmoxVLANClaim"):   func() client.Object { return &v1alpha1.ProxmoxVLANClaim{} },
	kubeovnv1.GroupVersion.WithKind("Vlan"):              func() client.Object { return &kubeovnv1.Vlan{} },
	kubeovnv1.GroupVersion.WithKind("Subnet"):            func() client.Object { return &kubeovnv1.Subnet{} },
	kubeovnv1.GroupVersion.WithKind("ProviderNetwork"):   func() client.Object { return &kubeovnv1.ProviderNetwork{} },
	ipamv1alpha2.GroupVersion.WithKind("InClusterIPPool"): func() client.Object {
		return &ipamv1alpha2.InClusterIPPool{}
	},
	capiipam.GroupVersion.WithKind("IPAddress"):     func() client.Object { return &capiipam.IPAddress{} },
	corev1.SchemeGroupVersion.WithKind("Namespace"): func() client.Object { return &corev1.Namespace{} },
}

// typed converts an unstructured object of a known kind to its typed form;
// other objects come back unchanged.
func typed(obj client.Object) client.Object {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj
	}
	mk, ok := typedKinds[u.GroupVersionKind()]
	if !ok {
		return obj
	}
	out := mk()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return obj
	}
	return out
}
