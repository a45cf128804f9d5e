package network

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
)

// NetworkInfo is what a Gateway needs to know about one network: who it is,
// where its VLAN lives and which VPC router port serves it.
type NetworkInfo struct {
	// Namespace and Name identify the ProxmoxNetwork.
	Namespace, Name string
	// Zone and ProviderNetwork are the network's zone and the zone's
	// Kube-OVN provider network (its trunk nodes carry the VLAN).
	Zone, ProviderNetwork string
	// VPC is the Kube-OVN Subnet's spec.vpc; Subnet is the subnet's name.
	// The router port is "<VPC>-<Subnet>".
	VPC, Subnet string
	// VLAN is the 802.1Q ID the network holds.
	VLAN int
	// GatewayMTU is the zone's gateway MTU (v1alpha1.GatewayMTUOf): the
	// options:gateway_mtu of the router port; 0 leaves it unset.
	GatewayMTU int
}

// GatewayStatus is the GatewayReady condition a Gateway reports for one
// network, with how soon it wants to be asked again.
type GatewayStatus struct {
	Status  metav1.ConditionStatus
	Reason  string
	Message string
	// Chassis is the number of chassis serving the network's router port;
	// it becomes cozy_proxmox_network_gateway_chassis.
	Chassis int
	// Primary is the group's highest-priority chassis: the one OVN makes
	// active while it keeps a BFD session up. Which chassis holds the port
	// at this moment is in the OVN southbound database, which the gateway
	// does not read. It becomes cozy_proxmox_network_gateway_primary_chassis;
	// empty unless the reason is ChassisAssigned.
	Primary string
	// RequeueAfter asks for the network to be reconciled again sooner than
	// the resync (an unreachable NB, a router port not created yet).
	RequeueAfter time.Duration
}

// Gateway keeps the OVN side of a network's router port. The network
// reconciler calls Ensure on every pass of a live network whose subnet is
// bound, and Release during deletion once the subnet is gone and before the
// VLAN is released.
type Gateway interface {
	// Ensure brings the gateway of n up to date and reports its condition.
	// An error means the gateway could not be brought up to date: a status
	// with a reason is still recorded; one without keeps the condition the
	// network carries (a grace period over NB outages). Either way the
	// network is looked at again after RetryAfter.
	Ensure(ctx context.Context, n NetworkInfo) (GatewayStatus, error)
	// Release removes what Ensure created for n. released is false while
	// something still holds the release back.
	Release(ctx context.Context, n NetworkInfo) (released bool, err error)
}

// Disabled is the Gateway of a controller that does not manage gateways:
// GatewayReady is Unknown/Disabled, which Ready ignores, and Release has
// nothing to do.
type Disabled struct{}

var _ Gateway = Disabled{}

// Ensure reports GatewayReady=Unknown/Disabled.
func (Disabled) Ensure(context.Context, NetworkInfo) (GatewayStatus, error) {
	return disabledStatus(), nil
}

// disabledStatus is GatewayReady=Unknown/Disabled, what every network of a
// controller that does not manage gateways reports.
func disabledStatus() GatewayStatus {
	return GatewayStatus{
		Status:  metav1.ConditionUnknown,
		Reason:  v1alpha1.ReasonDisabled,
		Message: "the controller does not manage the router port's HA chassis group (--manage-gateway-chassis=false)",
	}
}

// Release has nothing to release.
func (Disabled) Release(context.Context, NetworkInfo) (bool, error) { return true, nil }

// isDisabled reports whether g is the Disabled gateway.
func isDisabled(g Gateway) bool {
	_, ok := g.(Disabled)
	return ok
}
