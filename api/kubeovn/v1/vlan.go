package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Vlan is Kube-OVN's cluster-scoped 802.1Q tag on a provider network. Two
// Vlans with one ID on one provider network conflict (status.conflict); ID 0
// means untagged and never conflicts.
// +kubebuilder:object:root=true
type Vlan struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   VlanSpec   `json:"spec"`
	Status VlanStatus `json:"status,omitempty"`
}

// VlanSpec holds the tag and the provider network. Kube-OVN documents both as
// immutable but does not enforce it: changing id retags live traffic.
type VlanSpec struct {
	// ID is the tag, 0-4095 in the CRD.
	ID int `json:"id"`
	// Provider is the ProviderNetwork name.
	Provider string `json:"provider"`
}

// VlanStatus is written by Kube-OVN.
type VlanStatus struct {
	// Subnets lists the subnets that still use the Vlan; Kube-OVN drops a
	// subnet once its logical switch is gone.
	Subnets []string `json:"subnets,omitempty"`
	// Conflict is true when another Vlan has the same ID on the same
	// provider network.
	Conflict bool `json:"conflict,omitempty"`
}

// VlanList is a list of Vlan.
// +kubebuilder:object:root=true
type VlanList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Vlan `json:"items"`
}
