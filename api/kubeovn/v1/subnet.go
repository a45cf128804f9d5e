package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Subnet is Kube-OVN's cluster-scoped logical switch of a VPC.
// +kubebuilder:object:root=true
type Subnet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SubnetSpec   `json:"spec,omitempty"`
	Status SubnetStatus `json:"status,omitzero"` // none when empty: a rendered Subnet carries no status
}

// SubnetSpec holds the fields a Proxmox-backed subnet sets or is checked on.
type SubnetSpec struct {
	// Vpc is the VPC the subnet belongs to.
	Vpc string `json:"vpc,omitempty"`
	// CIDRBlock is the subnet's CIDR.
	CIDRBlock string `json:"cidrBlock,omitempty"`
	// Gateway is the gateway address.
	Gateway string `json:"gateway,omitempty"`
	// Protocol is IPv4, IPv6 or Dual.
	Protocol string `json:"protocol,omitempty"`
	// Provider is the NAD provider string (default "ovn"); it is not the
	// ProviderNetwork.
	Provider string `json:"provider,omitempty"`
	// Vlan names the Vlan that makes the subnet an underlay subnet.
	Vlan string `json:"vlan,omitempty"`
	// ExcludeIps are addresses Kube-OVN never gives to pods.
	ExcludeIps []string `json:"excludeIps,omitempty"`
	// MTU of the subnet.
	MTU uint32 `json:"mtu,omitempty"`
	// LogicalGateway keeps the VPC router port for an underlay subnet.
	LogicalGateway bool `json:"logicalGateway,omitempty"`
	// U2OInterconnection also keeps the router port, for underlay-to-overlay
	// traffic.
	U2OInterconnection bool `json:"u2oInterconnection,omitempty"`
	// EnableLb turns the subnet's load balancer on or off (nil leaves
	// Kube-OVN's default).
	EnableLb *bool `json:"enableLb,omitempty"`
	// Private limits traffic to AllowSubnets (nil is false); a pointer, so
	// that a rendered subnet can say false.
	Private *bool `json:"private,omitempty"`
	// AllowSubnets are the CIDRs a private subnet accepts traffic from.
	AllowSubnets []string `json:"allowSubnets,omitempty"`
}

// SubnetStatus is written by Kube-OVN.
type SubnetStatus struct {
	Conditions []SubnetCondition `json:"conditions,omitempty"`
}

// SubnetCondition is Kube-OVN's condition shape, which differs from
// metav1.Condition: it has lastUpdateTime and no observedGeneration.
type SubnetCondition struct {
	Type               string      `json:"type"`
	Status             string      `json:"status"`
	Reason             string      `json:"reason,omitempty"`
	Message            string      `json:"message,omitempty"`
	LastUpdateTime     metav1.Time `json:"lastUpdateTime,omitempty"`
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
}

// SubnetList is a list of Subnet.
// +kubebuilder:object:root=true
type SubnetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Subnet `json:"items"`
}
