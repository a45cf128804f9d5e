package demo

import (
	"context"
	"fmt"

	"github.com/pxsubstrate/pxsubstrate/ovngateway"

	"github.com/pxsubstrate/pxsubstrate/internal/sim"
)

var uninstallBeta = []sim.ObjectRef{
	{APIVersion: "proxmox.cozystack.io/v1alpha1", Kind: "ProxmoxNetwork", Namespace: TenantBeta, Name: "subnet-b1"},
	{APIVersion: "kubeovn.io/v1", Kind: "Subnet", Name: "subnet-b1"},
	{APIVersion: "ipam.cluster.x-k8s.io/v1alpha2", Kind: "InClusterIPPool", Namespace: TenantBeta, Name: "subnet-b1"},
}

var vmAddress = sim.ObjectRef{APIVersion: "ipam.cluster.x-k8s.io/v1beta2", Kind: "IPAddress", Namespace: TenantBeta, Name: "worker-0"}

var actHeldDelete = Act{
	Name: "tenant beta uninstalls its VPC while a VM still holds an address",
	Play: func(ctx context.Context, s *Stage) error {
		if err := s.Apply(ctx, sim.IPAddress(TenantBeta, vmAddress.Name, "subnet-b1", "10.2.1.64", 24)); err != nil {
			return err
		}
		for _, r := range uninstallBeta {
			if err := s.H.Delete(ctx, r); err != nil {
				return err
			}
		}
		if err := s.Settle(ctx); err != nil {
			return err
		}
		s.Say("worker-0 holds 10.2.1.64 from subnet-b1; helm uninstall deletes the network, subnet and pool")
		if err := s.Networks(ctx); err != nil {
			return err
		}
		return s.held(ctx)
	},
}

// held prints which of beta's objects the finalizers still hold.
func (s *Stage) held(ctx context.Context) error {
	objs, err := s.H.Objects(ctx)
	if err != nil {
		return err
	}
	s.Table([]string{"KIND", "NAME", "STATE"}, func(row func(...any)) {
		for _, o := range objs {
			md, _ := o["metadata"].(map[string]any)
			if md["name"] != "subnet-b1" {
				continue
			}
			state := "live"
			if _, deleting := md["deletionTimestamp"]; deleting {
				state = fmt.Sprintf("deleting, held by %v", md["finalizers"])
			}
			row(o["kind"], md["name"], state)
		}
	})
	return nil
}

var actRelease = Act{
	Name: "the VM gives its address back during an OVN NB outage; the group is released before the VLAN",
	Play: func(ctx context.Context, s *Stage) error {
		restore := s.nb.outage()
		if err := s.H.Delete(ctx, vmAddress); err != nil {
			return err
		}
		if err := s.Settle(ctx); err != nil {
			return err
		}
		s.Say("worker-0 is gone and Kube-OVN removed beta's router port, but the controller cannot reach the OVN NB:")
		s.Say("beta's network keeps its HA chassis group and VLAN 3904 until the group is released")
		if err := s.Networks(ctx); err != nil {
			return err
		}
		if err := s.Gateways(ctx); err != nil {
			return err
		}
		if err := restore(ctx); err != nil {
			return err
		}
		if _, err := s.H.Advance(ctx, ovngateway.RetryAfter); err != nil {
			return err
		}
		s.Say("the NB is back; %s later the retry deletes beta's group, then its Vlan and claim, and alpha's waiting network takes VLAN 3904", ovngateway.RetryAfter)
		for _, show := range []func(context.Context) error{s.Networks, s.Gateways, s.Zones} {
			if err := show(ctx); err != nil {
				return err
			}
		}
		if err := s.Annotations(ctx, TenantAlpha, TenantBeta); err != nil {
			return err
		}
		s.Say("the Events of the two networks whose story this was (kubectl get events --field-selector regarding.name=...):")
		s.Events([2]string{TenantBeta, "subnet-b1"}, [2]string{TenantAlpha, "subnet-a3"})
		return nil
	},
}
