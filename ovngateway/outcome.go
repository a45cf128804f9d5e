package ovngateway

import (
	"fmt"
	"time"
)

// Reason is the reason of the GatewayReady condition.
type Reason string

// The reasons of GatewayReady, spelled as Cozystack's proxmox-network
// controller spells them.
const (
	// ReasonChassisAssigned: the router port uses the network's group, which
	// holds the wanted chassis.
	ReasonChassisAssigned Reason = "ChassisAssigned"
	// ReasonNoTrunkNodes: no Node is ready on the provider network with a
	// chassis; nothing was written.
	ReasonNoTrunkNodes Reason = "NoTrunkNodes"
	// ReasonRouterPortMissing: Kube-OVN has not created the router port yet.
	ReasonRouterPortMissing Reason = "RouterPortMissing"
	// ReasonNBUnavailable: the northbound database has failed for longer
	// than the grace period.
	ReasonNBUnavailable Reason = "NBUnavailable"
	// ReasonForeignGroup: the group or the port belongs to someone else and
	// is left alone.
	ReasonForeignGroup Reason = "ForeignGroup"
	// ReasonForeignGatewayMTU: the router port's options:gateway_mtu was set
	// by someone else and is left alone; nothing was written.
	ReasonForeignGatewayMTU Reason = "ForeignGatewayMTU"
	// ReasonDisabled: gateway management is turned off.
	ReasonDisabled Reason = "Disabled"
	// ReasonWaitingForVLAN: the network has no VLAN yet.
	ReasonWaitingForVLAN Reason = "WaitingForVLAN"
	// ReasonSubnetUnavailable: the Kube-OVN Subnet is missing or not ready.
	ReasonSubnetUnavailable Reason = "SubnetUnavailable"
	// ReasonGatewayReleasePending is the Ready reason of a deleting network
	// whose group has not been released yet; its VLAN is held meanwhile.
	ReasonGatewayReleasePending Reason = "GatewayReleasePending"
)

// Timing of the gateway loop.
const (
	// PassTimeout bounds the northbound work of one pass.
	PassTimeout = 5 * time.Second
	// RetryAfter is when a pass that hit an NB error or a missing router
	// port runs again.
	RetryAfter = 30 * time.Second
	// ResyncPeriod is when a settled network is checked again, and how often
	// garbage collection runs. Node changes trigger a resync earlier.
	ResyncPeriod = 5 * time.Minute
	// NBGrace is how long a network whose gateway was up stays ready while
	// the northbound database fails.
	NBGrace = 10 * time.Minute
)

// Outcome is what a pass found and did for one network.
type Outcome struct {
	Reason  Reason
	Message string
	// Group is the HA_Chassis_Group's name.
	Group string
	// Chassis is how many chassis the group holds after the pass (0 unless
	// Reason is ChassisAssigned).
	Chassis int
	// Active is the chassis with the highest priority (ChassisAssigned only).
	Active string
	// GatewayMTU is the port's gateway_mtu after the pass (ChassisAssigned
	// only; 0 when the option is not managed).
	GatewayMTU int
	// Changed reports that the pass committed a write transaction.
	Changed bool
}

// Disabled is the outcome when gateway management is turned off.
func Disabled() Outcome {
	return Outcome{Reason: ReasonDisabled, Message: "OVN gateway management is disabled; the router port is left as Kube-OVN made it"}
}

// WaitingForVLAN is the outcome while the network has no VLAN yet.
func WaitingForVLAN() Outcome {
	return Outcome{Reason: ReasonWaitingForVLAN, Message: "waiting for a VLAN to be allocated before managing the gateway"}
}

// SubnetUnavailable is the outcome while the Kube-OVN Subnet is missing or
// not ready; why says which.
func SubnetUnavailable(subnet, why string) Outcome {
	return Outcome{Reason: ReasonSubnetUnavailable, Message: fmt.Sprintf("Kube-OVN Subnet %q is not available: %s", subnet, why)}
}

// RequeueAfter is when the network should be reconciled again after a pass
// that ended with o and err: RetryAfter after an error or a missing router
// port, ResyncPeriod otherwise.
func RequeueAfter(o Outcome, err error) time.Duration {
	if err != nil || o.Reason == ReasonRouterPortMissing {
		return RetryAfter
	}
	return ResyncPeriod
}
