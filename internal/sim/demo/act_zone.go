package demo

import (
	"context"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/internal/sim"
)

// Tenants of the demo.
const (
	TenantAlpha = "tenant-alpha"
	TenantBeta  = "tenant-beta"
)

var actZone = Act{
	Name: "an admin creates a zone of three VLANs on a trunk of three nodes; two tenants arrive",
	Play: func(ctx context.Context, s *Stage) error {
		zone := sim.Zone("zone-a", "vmbr1", providerNetwork, "3901-3904")
		zone.Spec.ReservedVLANs = []int32{3902}
		objs := append(trunk(), zone, sim.Namespace(TenantAlpha, nil), sim.Namespace(TenantBeta, nil))
		if err := s.Apply(ctx, objs...); err != nil {
			return err
		}
		if err := s.Settle(ctx); err != nil {
			return err
		}
		s.Say("zone-a: bridge vmbr1, provider network %s ready on %s, VLANs 3901-3904, 3902 reserved", providerNetwork, trunkList())
		return s.Zones(ctx)
	},
}

// trunkList names the trunk nodes and their chassis.
func trunkList() string {
	parts := make([]string, len(trunkNodes))
	for i, t := range trunkNodes {
		parts[i] = t.node + " (" + t.chassis + ")"
	}
	return strings.Join(parts, ", ")
}
