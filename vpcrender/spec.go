package vpcrender

import (
	"errors"
	"fmt"

	"github.com/pxsubstrate/pxsubstrate/strictyaml"
)

// Spec is a tenant VPC as the VPC application describes it, plus what the
// platform knows about the cluster: its ProxmoxNetworkZones and the
// ProxmoxNetworks an earlier render of this VPC left in the namespace.
type Spec struct {
	// Namespace is the tenant namespace the VPC lives in.
	Namespace string `json:"namespace"`
	// Name is the VPC's name without the "virtualprivatecloud-" prefix of its
	// release.
	Name    string      `json:"name"`
	Subnets []VPCSubnet `json:"subnets,omitempty"`
	// Peers are the VPCs this one peers with. Peering needs a declaration on
	// both sides.
	Peers  []Peer  `json:"peers,omitempty"`
	Routes []Route `json:"routes,omitempty"`
	Egress *Egress `json:"egress,omitempty"`

	// Zones are the cluster's ProxmoxNetworkZones.
	Zones []Zone `json:"zones,omitempty"`
	// Previous are the ProxmoxNetworks of the namespace as an earlier render
	// left them; they decide whether a Proxmox-backed subnet may go.
	Previous []Network `json:"previous,omitempty"`
	// API is what a lookup found of the cluster's proxmox.cozystack.io
	// API; a spec file cannot say (APIUnknown).
	API APIState `json:"-"`
}

// APIState is what a render knows of the cluster's proxmox.cozystack.io
// API: a Proxmox-backed subnet with no zone to take needs the
// proxmox-network package installed when the API is absent, and a zone
// created when it is served.
type APIState int

const (
	// APIUnknown is a render whose zones come from the spec or a file, not the cluster.
	APIUnknown APIState = iota
	// APIAbsent is a cluster that does not serve proxmox.cozystack.io/v1alpha1.
	APIAbsent
	// APIServed is a cluster that serves it; Zones are all the zones it has.
	APIServed
)

// APINotInstalled is the refusal of a Proxmox-backed subnet on a cluster
// without the proxmox.cozystack.io API, in the words of Cozystack's vpc
// chart.
const APINotInstalled = "a subnet sets proxmox, but the proxmox.cozystack.io API is not installed; ask the platform administrator to enable the proxmox-network package"

// VPCSubnet is one subnet of the VPC.
type VPCSubnet struct {
	Name string `json:"name"`
	CIDR string `json:"cidr,omitempty"`
	// AllowSubnets admits other source CIDRs into a private overlay subnet.
	// It is refused on a Proxmox-backed subnet, which is not private.
	AllowSubnets []string `json:"allowSubnets,omitempty"`
	// Proxmox, when present (even empty, `proxmox: {}`), makes the subnet a
	// VLAN-backed switch that Proxmox VMs attach to.
	Proxmox *ProxmoxSubnet `json:"proxmox,omitempty"`
}

// ProxmoxSubnet holds the Proxmox options of a subnet. Both may be empty.
type ProxmoxSubnet struct {
	// Zone names the ProxmoxNetworkZone; empty picks the only zone there is.
	Zone string `json:"zone,omitempty"`
	// VMRange is "first-last", the addresses Proxmox VMs get; empty is the
	// middle half of the subnet.
	VMRange string `json:"vmRange,omitempty"`
}

// Peer names a remote VPC by its name and tenant namespace.
type Peer struct {
	VPCName         string `json:"vpcName"`
	TenantNamespace string `json:"tenantNamespace"`
}

// Route is a static route of the VPC router.
type Route struct {
	CIDR      string `json:"cidr"`
	NextHopIP string `json:"nextHopIP"`
}

// Egress gives the Proxmox-backed subnets a way out through a
// VpcEgressGateway on the zone's transit network.
type Egress struct {
	Enabled bool `json:"enabled"`
	// Replicas of the gateway; 0 means 1.
	Replicas int32 `json:"replicas,omitempty"`
	// InternalCIDR, when set, gives the gateway pods their own overlay subnet
	// instead of the first Proxmox-backed subnet.
	InternalCIDR string `json:"internalCidr,omitempty"`
}

// Zone is what a render needs of a ProxmoxNetworkZone.
type Zone struct {
	Name            string      `json:"name"`
	ProviderNetwork string      `json:"providerNetwork,omitempty"`
	MTU             uint32      `json:"mtu,omitempty"`
	Egress          *ZoneEgress `json:"egress,omitempty"`
}

// ZoneEgress is the zone's transit network for egress gateways.
type ZoneEgress struct {
	ExternalSubnet   string `json:"externalSubnet,omitempty"`
	GatewayNamespace string `json:"gatewayNamespace,omitempty"`
}

// Network is a ProxmoxNetwork an earlier render created.
type Network struct {
	// Name is the subnet id the network is named after.
	Name string `json:"name"`
	// VPCID is its cozystack.io/vpcId label.
	VPCID string `json:"vpcId"`
	// SubnetName is its cozystack.io/subnetName label.
	SubnetName string `json:"subnetName,omitempty"`
	// UsedAddresses is status.ipPool.used: VM addresses still allocated.
	UsedAddresses int `json:"usedAddresses,omitempty"`
}

// ErrParse marks input that is not a VPC spec at all (bad YAML, unknown
// fields, wrong types).
var ErrParse = errors.New("not a VPC spec")

// ParseSpec reads a Spec from YAML or JSON. Unknown fields (a declared
// one in another case too) and fields given twice are refused by name, so
// a typo does not silently drop a setting.
func ParseSpec(data []byte) (Spec, error) {
	var s Spec
	if err := strictyaml.Unmarshal(data, &s); err != nil {
		return Spec{}, fmt.Errorf("cannot parse VPC spec: %w: %w", ErrParse, err)
	}
	return s, nil
}
