package sim

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ipamv1alpha2 "github.com/pxsubstrate/pxsubstrate/api/ipam/v1alpha2"
	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
	"github.com/pxsubstrate/pxsubstrate/network"
)

// Scheme returns a scheme with every kind the simulated world holds: core
// Kubernetes, this repository's CRDs, the Kube-OVN and in-cluster IPAM
// mirrors, Cluster API's IPAddress, and capmox ProxmoxMachines of both
// versions as unstructured objects.
func Scheme() *runtime.Scheme {
	s := kube.Scheme()
	utilruntime.Must(network.AddToScheme(s))
	for _, gvk := range network.MachineKinds {
		s.AddKnownTypeWithName(gvk, &unstructured.Unstructured{})
		s.AddKnownTypeWithName(gvk.GroupVersion().WithKind(gvk.Kind+"List"), &unstructured.UnstructuredList{})
	}
	return s
}

// withStatus are the kinds that have a status subresource on a real API server.
func withStatus() []client.Object {
	return []client.Object{
		&v1alpha1.ProxmoxNetwork{}, &v1alpha1.ProxmoxNetworkZone{},
		&kubeovnv1.Vlan{}, &kubeovnv1.Subnet{}, &kubeovnv1.ProviderNetwork{},
		&ipamv1alpha2.InClusterIPPool{},
	}
}
