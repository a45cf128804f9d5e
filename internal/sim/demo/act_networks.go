package demo

import (
	"context"

	"github.com/pxsubstrate/pxsubstrate/internal/sim"
)

var actNetworks = Act{
	Name: "tenants add proxmox: {} to their subnets until the zone is exhausted",
	Play: func(ctx context.Context, s *Stage) error {
		for _, n := range []struct{ ns, id, cidr string }{
			{TenantAlpha, "subnet-a1", "10.1.1.0/24"},
			{TenantAlpha, "subnet-a2", "10.1.2.0/24"},
			{TenantBeta, "subnet-b1", "10.2.1.0/24"},
			{TenantAlpha, "subnet-a3", "10.1.3.0/24"},
		} {
			objs, err := sim.Network(n.ns, n.id, "zone-a", "vpc-"+n.ns, n.cidr)
			if err != nil {
				return err
			}
			if err := s.Apply(ctx, objs...); err != nil {
				return err
			}
			if err := s.Settle(ctx); err != nil {
				return err
			}
			s.Say("%s adds %s (%s)", n.ns, n.id, n.cidr)
		}
		if err := s.Networks(ctx); err != nil {
			return err
		}
		if err := s.Zones(ctx); err != nil {
			return err
		}
		return s.Annotations(ctx, TenantAlpha, TenantBeta)
	},
}
