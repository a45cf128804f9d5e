package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ProxmoxNetworkZoneSpec is one Proxmox transport domain: a VLAN-aware bridge
// present on every PVE node, the Kube-OVN provider network whose trunk carries
// the same VLANs to the cluster nodes, and the VLAN IDs networks may get.
type ProxmoxNetworkZoneSpec struct {
	// Bridge is the VLAN-aware Proxmox bridge the VM NICs of this zone attach
	// to. It must exist under this name on every PVE node.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[a-zA-Z][a-zA-Z0-9_.-]*$`
	Bridge string `json:"bridge"`

	// ProviderNetwork is the Kube-OVN ProviderNetwork that carries the trunk.
	// Every Kube-OVN Vlan on it counts as used, whoever created it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=12
	ProviderNetwork string `json:"providerNetwork"`

	// VLANRanges are the IDs the allocator may hand out: single IDs ("120")
	// or inclusive ranges ("101-199"), each within 1-4094. Shrinking them
	// never takes a VLAN from a network; the zone reports it as stranded.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:items:Pattern=`^[0-9]{1,4}(-[0-9]{1,4})?$`
	VLANRanges []string `json:"vlanRanges"`

	// ReservedVLANs are never handed out, even inside VLANRanges.
	// +optional
	// +kubebuilder:validation:items:Minimum=1
	// +kubebuilder:validation:items:Maximum=4094
	ReservedVLANs []int32 `json:"reservedVLANs,omitempty"`

	// MTU of the VM NICs and of the Kube-OVN subnets of this zone. Unset
	// leaves both at their defaults.
	// +optional
	// +kubebuilder:validation:Minimum=576
	// +kubebuilder:validation:Maximum=65520
	MTU *int32 `json:"mtu,omitempty"`

	// GatewayMTU is the options:gateway_mtu the controller sets on the OVN
	// router port of every network of the zone: a packet routed from the
	// VLAN that is larger than this is answered with ICMP "fragmentation
	// needed" instead of being dropped where the overlay cannot carry it.
	// Unset derives it from MTU (1500 when unset) minus 100 bytes for the
	// Geneve overlay between chassis, so 1400 for 1500; 0 leaves the option
	// unset. See GatewayMTUOf.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:validation:XValidation:rule="self == 0 || self >= 68",message="gatewayMTU must be 0 (no gateway_mtu) or at least 68, IPv4's minimum MTU"
	GatewayMTU *int32 `json:"gatewayMTU,omitempty"`

	// NamespaceSelector limits the namespaces whose networks may use this
	// zone. Unset admits every namespace.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// MaxNetworksPerNamespace caps the VLANs of this zone the networks of
	// one namespace may hold, so that one tenant cannot take a shared zone
	// from the others: a network over it waits without a VLAN
	// (VLANAllocated=False/NamespaceCapReached) and takes one as soon as
	// its namespace is under the cap again. Only new IDs from VLANRanges
	// count against it: a static assignment or an existing Vlan is never
	// refused, and lowering the cap takes no VLAN from a network. Unset
	// means no cap.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxNetworksPerNamespace *int32 `json:"maxNetworksPerNamespace,omitempty"`

	// StaticAssignments give one ProxmoxNetwork a fixed VLAN. The VLAN may lie
	// outside VLANRanges but never on a reserved ID or on an ID another
	// network holds.
	// +optional
	// +listType=map
	// +listMapKey=namespace
	// +listMapKey=name
	StaticAssignments []StaticVLANAssignment `json:"staticAssignments,omitempty"`

	// Egress names the platform transit network used by the VPC egress
	// gateways of this zone.
	// +optional
	Egress *ZoneEgress `json:"egress,omitempty"`

	// SDN declares the Proxmox VE side of the zone: Check reads every
	// Proxmox node before a VLAN is handed out; VNets also gives each VLAN
	// its own Proxmox SDN VNet in a VLAN zone on the bridge.
	// +optional
	SDN *ZoneSDN `json:"sdn,omitempty"`
}

// ZoneSDN is the Proxmox SDN side of a zone.
// +kubebuilder:validation:XValidation:rule="self.mode != 'VNets' || has(self.zone)",message="sdn.zone is required in mode VNets"
type ZoneSDN struct {
	// Mode is Check (read-only checks of every node: the bridge, its VLANs,
	// its MTU, other users of the VLANs) or VNets (the checks, and one VNet
	// per VLAN in the Proxmox SDN VLAN zone Zone).
	// +kubebuilder:validation:Enum=Check;VNets
	Mode string `json:"mode"`
	// Zone is the Proxmox SDN zone ID of the VNets: 2-8 letters and digits,
	// starting with a letter.
	// +optional
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=8
	// +kubebuilder:validation:Pattern=`^[a-zA-Z][a-zA-Z0-9]*[a-zA-Z0-9]$`
	Zone string `json:"zone,omitempty"`
	// VNetPrefix starts every VNet ID: the prefix and the VLAN ID in four
	// digits ("pxa" and 117 give pxa0117). Default: the first four
	// characters of Zone.
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-zA-Z][a-zA-Z0-9]{0,3}$`
	VNetPrefix string `json:"vnetPrefix,omitempty"`
	// CredentialsRef names the Secret (keys url, token_id, token_secret,
	// and root_ca, the PEM of a CA the system does not trust; region may
	// be there, any other key is refused) the controller checks the nodes
	// with; an audit token suffices (PVEAuditor on /sdn). Without it only
	// the CLI checks.
	// +optional
	CredentialsRef *SecretRef `json:"credentialsRef,omitempty"`
}

// SecretRef names a Secret.
type SecretRef struct {
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// GatewayMTUOf is the gateway MTU of a zone: spec.gatewayMTU when set
// (0 means none), else spec.mtu (DefaultZoneMTU when unset) minus
// GeneveOverhead. A zone MTU too small to leave room for the overhead gives
// 0.
func GatewayMTUOf(spec ProxmoxNetworkZoneSpec) int32 {
	if spec.GatewayMTU != nil {
		return *spec.GatewayMTU
	}
	mtu := int32(DefaultZoneMTU)
	if spec.MTU != nil {
		mtu = *spec.MTU
	}
	if mtu-GeneveOverhead < MinGatewayMTU {
		return 0
	}
	return mtu - GeneveOverhead
}

// StaticVLANAssignment pins a VLAN to one ProxmoxNetwork.
type StaticVLANAssignment struct {
	// Namespace of the ProxmoxNetwork.
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`
	// Name of the ProxmoxNetwork.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// VLAN the network gets.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4094
	VLAN int32 `json:"vlan"`
}

// ZoneEgress is the transit network of a zone.
type ZoneEgress struct {
	// ExternalSubnet is the Kube-OVN subnet the egress gateways attach their
	// external side to.
	// +kubebuilder:validation:MinLength=1
	ExternalSubnet string `json:"externalSubnet"`
	// GatewayNamespace is the platform namespace the egress gateway pods run
	// in (they need privileges a tenant namespace refuses).
	// +kubebuilder:validation:MinLength=1
	GatewayNamespace string `json:"gatewayNamespace"`
}

// ProxmoxNetworkZoneStatus reports the zone's allocation counts.
type ProxmoxNetworkZoneStatus struct {
	// ObservedGeneration is the generation these counts were computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready. Ready=False/ProviderNetworkNotReady while the
	// provider network is not ready; its message lists stranded VLANs.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// TotalVLANs is the number of IDs in VLANRanges that are not reserved.
	// +optional
	TotalVLANs int32 `json:"totalVLANs"`
	// AllocatedVLANs counts the VLANs held by networks of this zone.
	// +optional
	AllocatedVLANs int32 `json:"allocatedVLANs"`
	// FreeVLANs counts the IDs that can still be handed out.
	// +optional
	FreeVLANs int32 `json:"freeVLANs"`
	// Networks counts the ProxmoxNetworks bound to this zone.
	// +optional
	Networks int32 `json:"networks"`
	// NoFailoverNetworks names (namespace/name) the networks of this zone
	// whose gateway group cannot fail over: their GatewayFailover condition
	// is False/NoFailover, as with exactly two trunk nodes.
	// +optional
	// +listType=set
	NoFailoverNetworks []string `json:"noFailoverNetworks,omitempty"`
	// SDN is the last check of the zone's Proxmox nodes (spec.sdn with a
	// credentialsRef); its condition is HypervisorReady.
	// +optional
	SDN *ZoneSDNStatus `json:"sdn,omitempty"`
}

// ZoneSDNStatus is what the check of a zone's Proxmox nodes found.
type ZoneSDNStatus struct {
	// CarryableVLANs are the zone VLANs every node carries, as runs
	// ("100-149,151-199"): what the allocator may hand out.
	// +optional
	CarryableVLANs string `json:"carryableVLANs,omitempty"`
	// WithheldVLANs are the zone VLANs the allocator does not hand out
	// because a node cannot carry them; the HypervisorReady message says
	// why. They come back when the nodes are fixed.
	// +optional
	WithheldVLANs string `json:"withheldVLANs,omitempty"`
	// Nodes counts the nodes checked.
	// +optional
	Nodes int32 `json:"nodes,omitempty"`
	// StaleNodes are the nodes that could not be read now, whose last known
	// view is used.
	// +optional
	StaleNodes []string `json:"staleNodes,omitempty"`
	// Requests counts the API requests of the last check.
	// +optional
	Requests int32 `json:"requests,omitempty"`
}

// ProxmoxNetworkZone is an admin-owned Proxmox transport domain.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=pxzone
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Bridge",type=string,JSONPath=`.spec.bridge`
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.spec.providerNetwork`
// +kubebuilder:printcolumn:name="Allocated",type=integer,JSONPath=`.status.allocatedVLANs`
// +kubebuilder:printcolumn:name="Free",type=integer,JSONPath=`.status.freeVLANs`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ProxmoxNetworkZone struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ProxmoxNetworkZoneSpec   `json:"spec,omitempty"`
	Status ProxmoxNetworkZoneStatus `json:"status,omitempty"`
}

// ProxmoxNetworkZoneList is a list of ProxmoxNetworkZone.
// +kubebuilder:object:root=true
type ProxmoxNetworkZoneList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ProxmoxNetworkZone `json:"items"`
}
