package controller

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	capiipam "sigs.k8s.io/cluster-api/api/ipam/v1beta2"

	ipamv1alpha2 "github.com/pxsubstrate/pxsubstrate/api/ipam/v1alpha2"
	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
)

// Scheme returns the kinds the controller reads and writes as typed
// objects: core (Namespace, Node, Secret), coordination (Lease), this
// repository's CRDs, the Kube-OVN and in-cluster IPAM mirrors and Cluster
// API's IPAddress. ProxmoxMachines are read as unstructured objects.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(corev1.AddToScheme(s))
	utilruntime.Must(coordinationv1.AddToScheme(s))
	utilruntime.Must(v1alpha1.AddToScheme(s))
	utilruntime.Must(kubeovnv1.AddToScheme(s))
	utilruntime.Must(ipamv1alpha2.AddToScheme(s))
	utilruntime.Must(capiipam.AddToScheme(s))
	return s
}
