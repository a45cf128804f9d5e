package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ProviderNetwork is Kube-OVN's cluster-scoped underlay trunk. Its resource
// name is "provider-networks" and object names are at most 12 characters.
// +kubebuilder:object:root=true
type ProviderNetwork struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ProviderNetworkSpec   `json:"spec"`
	Status ProviderNetworkStatus `json:"status,omitempty"`
}

// ProviderNetworkSpec holds the one required field.
type ProviderNetworkSpec struct {
	// DefaultInterface is the node interface that carries the trunk.
	DefaultInterface string `json:"defaultInterface"`
}

// ProviderNetworkStatus is written by Kube-OVN.
type ProviderNetworkStatus struct {
	// Ready is true once every selected node has the trunk up.
	Ready bool `json:"ready,omitempty"`
	// ReadyNodes and NotReadyNodes list nodes by name.
	ReadyNodes    []string `json:"readyNodes,omitempty"`
	NotReadyNodes []string `json:"notReadyNodes,omitempty"`
	// Vlans lists the Vlans Kube-OVN has set up on the trunk (since v1.16 a
	// subnet waits until its Vlan is listed here).
	Vlans []string `json:"vlans,omitempty"`
}

// ProviderNetworkList is a list of ProviderNetwork.
// +kubebuilder:object:root=true
type ProviderNetworkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ProviderNetwork `json:"items"`
}
