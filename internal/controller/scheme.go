package controller

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/pxsubstrate/pxsubstrate/network"
)

// Scheme returns the kinds the controller reads and writes as typed
// objects: core (Namespace, Node, Secret), coordination (Lease), this
// repository's CRDs, the Kube-OVN and in-cluster IPAM mirrors and Cluster
// API's IPAddress, Machine and MachineDeployment (pool HA).
// ProxmoxMachines are read as unstructured objects.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(corev1.AddToScheme(s))
	utilruntime.Must(coordinationv1.AddToScheme(s))
	utilruntime.Must(network.AddToScheme(s))
	utilruntime.Must(clusterv1.AddToScheme(s))
	return s
}
