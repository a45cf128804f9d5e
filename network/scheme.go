package network

import (
	"k8s.io/apimachinery/pkg/runtime"
	capiipam "sigs.k8s.io/cluster-api/api/ipam/v1beta2"

	ipamv1alpha2 "github.com/pxsubstrate/pxsubstrate/api/ipam/v1alpha2"
	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
)

// AddToScheme registers the typed kinds the network controller reads and
// writes besides core Kubernetes: this repository's CRDs, the Kube-OVN and
// in-cluster IPAM mirrors and Cluster API's IPAddress. ProxmoxMachines are
// read as unstructured objects (MachineKinds) and are not registered here.
func AddToScheme(s *runtime.Scheme) error {
	for _, add := range []func(*runtime.Scheme) error{
		v1alpha1.AddToScheme, kubeovnv1.AddToScheme, ipamv1alpha2.AddToScheme, capiipam.AddToScheme,
	} {
		if err := add(s); err != nil {
			return err
		}
	}
	return nil
}
