package demo

import (
	"context"

	"github.com/pxsubstrate/pxsubstrate/sim"
)

// Tenants of the demo.
const (
	TenantAlpha = "tenant-alpha"
	TenantBeta  = "tenant-beta"
)

var actZone = Act{
	Name: "an admin creates a zone of three VLANs; two tenants arrive",
	Play: func(ctx context.Context, s *Stage) error {
		zone := sim.Zone("zone-a", "vmbr1", "pxtenant", "3901-3904")
		zone.Spec.ReservedVLANs = []int32{3902}
		if err := s.Apply(ctx, sim.ProviderNetwork("pxtenant", true), zone,
			sim.Namespace(TenantAlpha, nil), sim.Namespace(TenantBeta, nil)); err != nil {
			return err
		}
		if err := s.Settle(ctx); err != nil {
			return err
		}
		s.Say("zone-a: bridge vmbr1, provider network pxtenant, VLANs 3901-3904, 3902 reserved")
		return s.Zones(ctx)
	},
}
