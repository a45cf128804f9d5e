package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ProxmoxNetworkSpec binds one Kube-OVN subnet to a zone. The vpc chart
// writes it; tenants may only read it.
// +kubebuilder:validation:XValidation:rule="self.zone == oldSelf.zone",message="zone is immutable"
// +kubebuilder:validation:XValidation:rule="self.subnet == oldSelf.subnet",message="subnet is immutable"
type ProxmoxNetworkSpec struct {
	// Zone is the ProxmoxNetworkZone the VLAN comes from.
	// +kubebuilder:validation:MinLength=1
	Zone string `json:"zone"`

	// Subnet is the Kube-OVN Subnet carried onto Proxmox. Its spec.vlan must
	// name a Vlan of the same name as the subnet; the controller creates it.
	// +kubebuilder:validation:MinLength=1
	Subnet string `json:"subnet"`

	// IPPool is the InClusterIPPool, in the network's namespace, that VM
	// addresses on this subnet come from.
	// +kubebuilder:validation:MinLength=1
	IPPool string `json:"ipPool"`
}

// IPPoolUsage copies the address counts of the network's InClusterIPPool.
type IPPoolUsage struct {
	Total int32 `json:"total"`
	Used  int32 `json:"used"`
	Free  int32 `json:"free"`
}

// ProxmoxNetworkStatus is everything a consumer needs to attach a VM NIC.
type ProxmoxNetworkStatus struct {
	// ObservedGeneration is the generation this status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// VLAN is the 802.1Q ID the network holds.
	// +optional
	VLAN int32 `json:"vlan,omitempty"`
	// VLANName is the Kube-OVN Vlan that carries the ID.
	// +optional
	VLANName string `json:"vlanName,omitempty"`
	// Bridge is the Proxmox bridge the NICs attach to.
	// +optional
	Bridge string `json:"bridge,omitempty"`
	// VNet is the Proxmox SDN VNet of the VLAN when the zone gives each
	// VLAN one (spec.sdn.mode VNets): NICs attach to it with no tag.
	// +optional
	VNet string `json:"vnet,omitempty"`
	// MTU of the NICs, when the zone sets one.
	// +optional
	MTU *int32 `json:"mtu,omitempty"`
	// CIDR of the subnet.
	// +optional
	CIDR string `json:"cidr,omitempty"`
	// Gateway of the subnet.
	// +optional
	Gateway string `json:"gateway,omitempty"`
	// Prefix length of the subnet.
	// +optional
	Prefix int32 `json:"prefix,omitempty"`
	// IPPool reports the pool's address counts.
	// +optional
	IPPool *IPPoolUsage `json:"ipPool,omitempty"`
	// Conditions: VLANAllocated, SubnetReady, IPPoolReady, GatewayReady,
	// Ready, and SwitchDeleted while the network is being deleted.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ProxmoxNetwork carries one VPC subnet onto a Proxmox VLAN.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=pxnet
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Zone",type=string,JSONPath=`.spec.zone`
// +kubebuilder:printcolumn:name="VLAN",type=integer,JSONPath=`.status.vlan`
// +kubebuilder:printcolumn:name="Bridge",type=string,JSONPath=`.status.bridge`
// +kubebuilder:printcolumn:name="CIDR",type=string,JSONPath=`.status.cidr`
// +kubebuilder:printcolumn:name="Used",type=integer,JSONPath=`.status.ipPool.used`
// +kubebuilder:printcolumn:name="Free",type=integer,JSONPath=`.status.ipPool.free`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
type ProxmoxNetwork struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ProxmoxNetworkSpec   `json:"spec,omitempty"`
	Status ProxmoxNetworkStatus `json:"status,omitzero"` // none when empty: a rendered network carries no status
}

// ProxmoxNetworkList is a list of ProxmoxNetwork.
// +kubebuilder:object:root=true
type ProxmoxNetworkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ProxmoxNetwork `json:"items"`
}
