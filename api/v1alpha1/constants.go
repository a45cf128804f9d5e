package v1alpha1

// Finalizer, labels and annotations. The spellings are shared with the
// Cozystack proxmox-network controller so that either can take over objects
// the other wrote.
const (
	// Finalizer holds a ProxmoxNetwork, its Kube-OVN Subnet and its Kube-OVN
	// Vlan until the network's last consumer is gone.
	Finalizer = "proxmox.cozystack.io/network"

	// LabelZone names the ProxmoxNetworkZone a Kube-OVN Vlan (or a
	// ProxmoxVLANClaim) was allocated from.
	LabelZone = "proxmox.cozystack.io/zone"
	// LabelNetworkNamespace is the namespace of the ProxmoxNetwork holding a
	// Vlan or claim.
	LabelNetworkNamespace = "proxmox.cozystack.io/network-namespace"
	// LabelNetworkName is the name of the ProxmoxNetwork holding a Vlan or
	// claim.
	LabelNetworkName = "proxmox.cozystack.io/network-name"
	// LabelProviderNetwork is set on every ProxmoxVLANClaim so that the claims
	// of one Kube-OVN provider network can be listed with a label selector.
	LabelProviderNetwork = "proxmox.cozystack.io/provider-network"
	// LabelTenantName is the tenant namespace the vpc chart writes on every
	// object of a VPC, the cluster-scoped Kube-OVN Subnet included. A
	// ProxmoxNetwork may claim only a Subnet whose label names the
	// network's own namespace.
	LabelTenantName = "cozystack.io/tenantName"

	// AnnotationNamespaceNetworks is kept on a namespace that owns ready
	// networks: a sorted, comma-separated list of "<bridge>/<vlan>/<pool>"
	// triples and, for each network whose status names a Proxmox SDN VNet,
	// a "<vnet>/<pool>" entry as well. Networks being deleted stay listed
	// until they are gone.
	AnnotationNamespaceNetworks = "proxmox.cozystack.io/networks"
	// AnnotationDeletedSubnets is kept on a Kube-OVN Vlan while Kube-OVN still
	// lists deleted subnets in its status: a JSON object mapping each such
	// subnet name to the RFC 3339 UTC time the controller first saw it gone.
	AnnotationDeletedSubnets = "proxmox.cozystack.io/deleted-subnets"
)

// Modes of a zone's spec.sdn.
const (
	// SDNModeCheck runs the read-only checks of every Proxmox node.
	SDNModeCheck = "Check"
	// SDNModeVNets runs the checks and keeps one Proxmox SDN VNet per VLAN
	// in the zone's VLAN zone.
	SDNModeVNets = "VNets"
)

// Condition types of a ProxmoxNetwork.
const (
	ConditionVLANAllocated = "VLANAllocated"
	ConditionSubnetReady   = "SubnetReady"
	ConditionIPPoolReady   = "IPPoolReady"
	ConditionGatewayReady  = "GatewayReady"
	// ConditionGatewayFailover says whether the network's gateway group can
	// fail over; it does not count for Ready.
	ConditionGatewayFailover = "GatewayFailover"
	ConditionReady           = "Ready"
	// ConditionHypervisorReady is a zone's check of its Proxmox nodes
	// (spec.sdn with a credentialsRef).
	ConditionHypervisorReady = "HypervisorReady"
	// ConditionSwitchDeleted is present only while the network is being
	// deleted: False while Kube-OVN still lists a deleted subnet on the
	// network's Vlan.
	ConditionSwitchDeleted = "SwitchDeleted"
)

// Reasons of ConditionVLANAllocated (and of the zone's Ready condition where
// noted).
const (
	ReasonAllocated            = "Allocated"
	ReasonZoneExhausted        = "ZoneExhausted"
	ReasonZoneNotFound         = "ZoneNotFound"
	ReasonNamespaceNotAllowed  = "NamespaceNotAllowed"
	ReasonVLANConflict         = "VLANConflict"
	ReasonVLANProviderMismatch = "VLANProviderMismatch"
	ReasonVLANStillReferenced  = "VLANStillReferenced"
	// ReasonVLANNameTaken: a Kube-OVN Vlan of the subnet's name exists,
	// labelled for another network.
	ReasonVLANNameTaken = "VLANNameTaken"
	// ReasonStaticVLANInUse: the VLAN a static assignment pins the network
	// to is held by another Vlan, network or claim.
	ReasonStaticVLANInUse = "StaticVLANInUse"
	// ReasonNamespaceCapReached: the network's namespace holds as many
	// VLANs of the zone as its maxNetworksPerNamespace allows.
	ReasonNamespaceCapReached = "NamespaceCapReached"
	// ReasonProviderNetworkNotReady is the zone's Ready=False reason while its
	// Kube-OVN ProviderNetwork is not ready.
	ReasonProviderNetworkNotReady = "ProviderNetworkNotReady"
)

// Reasons of ConditionIPPoolReady. PoolExhausted keeps the condition True:
// the VMs already on the network keep working.
const (
	// ReasonPoolOverlapsSubnet: pool addresses Kube-OVN may give to pods
	// (outside the subnet's excludeIps), or the subnet's gateway.
	ReasonPoolOverlapsSubnet = "PoolOverlapsSubnet"
	ReasonPoolExhausted      = "PoolExhausted"
	// ReasonPoolOutsideSubnet: pool addresses outside the subnet's CIDR.
	ReasonPoolOutsideSubnet = "PoolOutsideSubnet"
	// ReasonPoolGatewayMismatch: the pool's gateway is not the subnet's.
	ReasonPoolGatewayMismatch = "PoolGatewayMismatch"
	// ReasonPoolPrefixMismatch: the pool's prefix is not the subnet's.
	ReasonPoolPrefixMismatch = "PoolPrefixMismatch"
	// ReasonPoolAddressInvalid: a pool address that does not parse.
	ReasonPoolAddressInvalid = "PoolAddressInvalid"
	// ReasonSubnetCIDRInvalid: the subnet's cidrBlock does not parse.
	ReasonSubnetCIDRInvalid = "SubnetCIDRInvalid"
	// ReasonSubnetExcludeIPsInvalid: an excludeIps entry that does not parse.
	ReasonSubnetExcludeIPsInvalid = "SubnetExcludeIPsInvalid"
)

// Reasons of ConditionGatewayReady.
const (
	ReasonChassisAssigned   = "ChassisAssigned"
	ReasonNoTrunkNodes      = "NoTrunkNodes"
	ReasonRouterPortMissing = "RouterPortMissing"
	ReasonNBUnavailable     = "NBUnavailable"
	ReasonForeignGroup      = "ForeignGroup"
	ReasonForeignGatewayMTU = "ForeignGatewayMTU"
	ReasonDisabled          = "Disabled"
	ReasonWaitingForVLAN    = "WaitingForVLAN"
	ReasonSubnetUnavailable = "SubnetUnavailable"
)

// Reasons of ConditionGatewayFailover: True/StandbyReady, False/NoFailover,
// Unknown/GatewayNotAssigned.
const (
	ReasonStandbyReady       = "StandbyReady"
	ReasonNoFailover         = "NoFailover"
	ReasonGatewayNotAssigned = "GatewayNotAssigned"
)

// Reasons on the delete path: Ready=False/InUse, SubnetDeleting,
// GatewayReleasePending, SwitchDeleting, and SwitchDeleted=False/ListedOnVlan.
const (
	ReasonInUse                 = "InUse"
	ReasonSubnetDeleting        = "SubnetDeleting"
	ReasonGatewayReleasePending = "GatewayReleasePending"
	ReasonSwitchDeleting        = "SwitchDeleting"
	ReasonListedOnVlan          = "ListedOnVlan"
)

// MTU defaults of a zone (see GatewayMTUOf).
const (
	// DefaultZoneMTU is the MTU of a zone without spec.mtu: Ethernet's.
	DefaultZoneMTU = 1500
	// GeneveOverhead is what the gateway MTU leaves for the Geneve overlay
	// between chassis: Geneve over IPv4 takes 58 bytes with OVN's option
	// (measured in internal/testenv/ovnlab), over IPv6 78, and 100 leaves room for
	// both.
	GeneveOverhead = 100
	// MinGatewayMTU is IPv4's minimum MTU.
	MinGatewayMTU = 68
)

// VLAN ID bounds: 802.1Q reserves 0 and 4095, and capmox accepts 1-4094 on a
// NIC, so every ID this API hands out lies in [MinVLAN, MaxVLAN].
const (
	MinVLAN = 1
	MaxVLAN = 4094
)
