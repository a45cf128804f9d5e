package ovngateway

import "fmt"

// Gateway is the wanted state of one network's gateway: which chassis its
// router port's HA_Chassis_Group holds, with which priorities.
type Gateway struct {
	Network
	// ProviderNetwork is the Kube-OVN ProviderNetwork of the network's zone;
	// it only appears in messages.
	ProviderNetwork string
	// Members are the wanted HA_Chassis rows, highest priority first. Empty
	// means no trunk node is ready: nothing is written and an existing group
	// keeps its chassis.
	Members []Member
	// GatewayMTU is the options:gateway_mtu the router port gets while it
	// is in the group. 0 leaves the option alone, and removes a value this
	// package set earlier.
	GatewayMTU int
}

// NewGateway ranks the candidates for the network's VPC and returns the
// wanted gateway.
func NewGateway(n Network, vpc, providerNetwork string, candidates []Candidate) (Gateway, error) {
	if err := n.Validate(); err != nil {
		return Gateway{}, err
	}
	if vpc == "" {
		return Gateway{}, fmt.Errorf("network %q: %w: the subnet's VPC is empty", n.ID(), ErrInvalid)
	}
	members, err := Rank(Key(vpc), candidates)
	if err != nil {
		return Gateway{}, fmt.Errorf("network %q: %w", n.ID(), err)
	}
	return Gateway{Network: n, ProviderNetwork: providerNetwork, Members: members}, nil
}

// Validate says what is wrong with g.
func (g Gateway) Validate() error {
	if err := g.Network.Validate(); err != nil {
		return err
	}
	if g.GatewayMTU != 0 && (g.GatewayMTU < MinGatewayMTU || g.GatewayMTU > MaxGatewayMTU) {
		return fmt.Errorf("network %q: %w: gateway MTU %d is outside %d-%d", g.ID(), ErrInvalid, g.GatewayMTU, MinGatewayMTU, MaxGatewayMTU)
	}
	seen := make(map[string]bool, len(g.Members))
	for _, m := range g.Members {
		switch {
		case m.Chassis == "":
			return fmt.Errorf("network %q: %w: a member has no chassis name", g.ID(), ErrInvalid)
		case seen[m.Chassis]:
			return fmt.Errorf("network %q: %w: chassis %q is listed twice", g.ID(), ErrInvalid, m.Chassis)
		case m.Priority < 0 || m.Priority > maxPriority:
			return fmt.Errorf("network %q: %w: priority %d of chassis %q is outside 0-%d", g.ID(), ErrInvalid, m.Priority, m.Chassis, maxPriority)
		}
		seen[m.Chassis] = true
	}
	return nil
}
