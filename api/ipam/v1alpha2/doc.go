// Package v1alpha2 mirrors InClusterIPPool of ipam.cluster.x-k8s.io/v1alpha2,
// the version the cluster-api-ipam-provider-in-cluster v1.0.3 CRD stores. The
// provider's own Go module cannot be imported next to the Cluster API version
// this module uses, so the fields pxsubstrate reads and writes are copied
// here with the CRD's json tags; tests prove them against the real CRD.
//
// IPAddress and IPAddressClaim come from sigs.k8s.io/cluster-api/api/ipam/v1beta2
// and are not mirrored.
//
// +kubebuilder:object:generate=true
// +groupName=ipam.cluster.x-k8s.io
package v1alpha2
