package ovngateway

import (
	"fmt"
	"strings"
)

// Ownership tags the controller writes into a group's external_ids.
const (
	// OwnerKey marks who manages an HA_Chassis_Group.
	OwnerKey = "owner"
	// OwnerValue is the owner this package writes and recognises as its own.
	OwnerValue = "proxmox-network"
	// NetworkKey names the ProxmoxNetwork ("<namespace>/<name>") a group
	// belongs to.
	NetworkKey = "network"
	// GroupPrefix starts the name of every group this package creates.
	GroupPrefix = "px-"
	// KeyPrefix starts the rendezvous key of a VPC.
	KeyPrefix = "vpc/"
	// GatewayMTUOption is the router port option that makes OVN answer a
	// packet larger than its value with ICMP "fragmentation needed" (IPv4)
	// or "packet too big" (IPv6) instead of dropping it on the way.
	GatewayMTUOption = "gateway_mtu"
	// GatewayMTUOwnerKey, in a router port's external_ids, names the network
	// ("<namespace>/<name>") whose gateway set the port's gateway_mtu. Only
	// a value marked so is ever changed or removed.
	GatewayMTUOwnerKey = "proxmox-network.gateway_mtu"
	// MaxGatewayMTU is the largest gateway_mtu accepted; MinGatewayMTU is
	// IPv4's minimum MTU.
	MaxGatewayMTU = 65535
	MinGatewayMTU = 68
)

// RouterPortName is Kube-OVN's name for the logical router port of a subnet
// in a VPC: "<vpc>-<subnet>".
func RouterPortName(vpc, subnet string) string { return vpc + "-" + subnet }

// GroupName is the HA_Chassis_Group that serves routerPort: "px-<port>".
func GroupName(routerPort string) string { return GroupPrefix + routerPort }

// Key is the rendezvous key of a VPC, "vpc/<Subnet.spec.vpc>". Every subnet
// of a VPC gets the same chassis order, so its router ports are active on the
// same node.
func Key(vpc string) string { return KeyPrefix + vpc }

// Network names one Proxmox-backed network and the router port that carries
// its gateway.
type Network struct {
	// Namespace and Name identify the ProxmoxNetwork.
	Namespace string
	Name      string
	// RouterPort is the Logical_Router_Port of the network's subnet, usually
	// RouterPortName(Subnet.spec.vpc, subnet).
	RouterPort string
}

// ID is "<namespace>/<name>", the value of the group's network tag.
func (n Network) ID() string { return n.Namespace + "/" + n.Name }

// Group is the name of the network's HA_Chassis_Group.
func (n Network) Group() string { return GroupName(n.RouterPort) }

// Validate says what is missing from n.
func (n Network) Validate() error {
	switch {
	case n.Namespace == "" || n.Name == "":
		return fmt.Errorf("network %q: %w: namespace and name are both required", n.ID(), ErrInvalid)
	case strings.Contains(n.Namespace, "/") || strings.Contains(n.Name, "/"):
		return fmt.Errorf("network %q: %w: namespace and name cannot contain '/'", n.ID(), ErrInvalid)
	case n.RouterPort == "":
		return fmt.Errorf("network %q: %w: the router port name is empty", n.ID(), ErrInvalid)
	}
	return nil
}

// ParseNetworkID splits a network tag "<namespace>/<name>" into its parts.
func ParseNetworkID(id string) (namespace, name string, err error) {
	ns, n, ok := strings.Cut(id, "/")
	if !ok || ns == "" || n == "" || strings.Contains(n, "/") {
		return "", "", fmt.Errorf("network tag %q: %w: want <namespace>/<name>", id, ErrInvalid)
	}
	return ns, n, nil
}
