package v1alpha2

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// InClusterIPPool is a namespaced pool of addresses that the in-cluster IPAM
// provider hands to IPAddressClaims of the same namespace.
// +kubebuilder:object:root=true
type InClusterIPPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   InClusterIPPoolSpec   `json:"spec,omitempty"`
	Status InClusterIPPoolStatus `json:"status,omitzero"` // none when empty: a rendered pool carries no status
}

// InClusterIPPoolSpec is the pool's address set.
type InClusterIPPoolSpec struct {
	// Addresses are single IPs, hyphen ranges or CIDRs.
	Addresses []string `json:"addresses"`
	// Prefix is the network prefix length handed out with each address.
	Prefix int `json:"prefix"`
	// Gateway is handed out with each address and never allocated.
	Gateway string `json:"gateway,omitempty"`
	// AllocateReservedIPAddresses lets the network and broadcast addresses
	// of the subnet inferred from the first address be handed out.
	AllocateReservedIPAddresses bool `json:"allocateReservedIPAddresses,omitempty"`
	// ExcludedAddresses are never handed out (same syntax as Addresses).
	ExcludedAddresses []string `json:"excludedAddresses,omitempty"`
}

// InClusterIPPoolStatus is written by the provider.
type InClusterIPPoolStatus struct {
	Addresses *InClusterIPPoolStatusIPAddresses `json:"ipAddresses,omitempty"`
}

// InClusterIPPoolStatusIPAddresses are the pool's address counts.
type InClusterIPPoolStatusIPAddresses struct {
	Total      int `json:"total"`
	Used       int `json:"used"`
	Free       int `json:"free"`
	OutOfRange int `json:"outOfRange"`
}

// InClusterIPPoolList is a list of InClusterIPPool.
// +kubebuilder:object:root=true
type InClusterIPPoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []InClusterIPPool `json:"items"`
}
